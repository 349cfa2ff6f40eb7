#!/bin/bash
# Integration tests on this machine (one node): the differential checker
# through coll/adaptx and coll/hanx (with a synthetic node grouping), the
# communicator lifecycle test, and bad MCA parameter handling.
. "$(dirname "$0")/common.sh"

# --- what the components carry: the core and the glue, not the simulator or
# the tuner (separate libraries that only the tools and tests link)
no_tools_inside() {
    local so found=0
    for so in "$COLLX_BUILDDIR"/.libs/mca_coll_adaptx.so "$COLLX_BUILDDIR"/.libs/mca_coll_hanx.so; do
        [ -f "$so" ] || { echo "missing $so"; return 1; }
        if strings "$so" | grep -E "simulator:|collx::sim::|collx::tune" | head -3 | grep .; then
            echo "$so carries simulator or tuner code"; found=1
        fi
    done
    [ $found = 0 ]
}
step "the components carry no simulator or tuner code" no_tools_inside

# --- adaptx
for coll in bcast reduce allreduce ibcast ireduce iallreduce; do
    step "adaptx serves MPI_${coll^}" served_by adaptx $coll local_run 60 4
done
# --- the checker's halves (the full matrix is split between this script and
# check-2nodes): disjoint parts that add up to the whole, each not empty
passed_of() { "$@" | sed -n 's/^collx_check: \([0-9]*\) passed, 0 failed$/\1/p'; }
halves_add_up() {
    local args="--quick --colls bcast,allgather" whole a b
    whole=$(passed_of local_run 120 4 "$CHECKER" $args)
    a=$(passed_of local_run 120 4 "$CHECKER" $args --part 0/2)
    b=$(passed_of local_run 120 4 "$CHECKER" $args --part 1/2)
    echo "whole $whole, halves $a + $b"
    [ -n "$whole" ] && [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] && [ $((a + b)) = "$whole" ]
}
step "the checker's --part 0/2 and 1/2 add up to its whole matrix" halves_add_up
step "adaptx checker, 4 ranks, every collective, $HALF1_NAME + big counts" \
    local_run 600 4 --mca coll_adaptx_priority 100 "$CHECKER" --colls "$ALL_ADAPTX" $HALF1 --big
for tree in $ADAPTX_TREES; do
    step "adaptx $tree tree, 5 ranks, every collective" adaptx_tree $tree local_run 300 5
done
step "adaptx checker, 3 ranks, tiny segments, 1 outstanding send" \
    local_run 300 3 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_segment_size 40 \
    --mca coll_adaptx_reduce_segment_size 24 --mca coll_adaptx_allreduce_segment_size 16 \
    --mca coll_adaptx_max_send_requests 1 --mca coll_adaptx_max_recv_requests 1 \
    "$CHECKER" --quick --colls "$ALL_ADAPTX" --seed 3
step "adaptx LP (pipeline) with the automatic segment size, 6 ranks" \
    local_run 300 6 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm pipeline \
    --mca coll_adaptx_reduce_algorithm pipeline --mca coll_adaptx_allreduce_algorithm pipeline \
    "$CHECKER" --quick --colls "$ALL_ADAPTX" --seed 5
topo_synthetic() {  # the topo tree on the glue's node map with synthetic nodes (as hanx's)
    local out  # (each rank's log from its own file: mpirun may splice lines)
    out=$(logged local_run 300 7 --mca coll_adaptx_priority 100 --mca coll_adaptx_ranks_per_node 3 \
        --mca coll_adaptx_round_robin 1 --mca coll_adaptx_verbose 1 \
        --mca coll_adaptx_bcast_algorithm topo --mca coll_adaptx_reduce_algorithm topo \
        --mca coll_adaptx_allreduce_algorithm topo "$CHECKER" --quick --seed 43 2>&1) || {
        echo "$out"; return 1; }
    echo "$out" | grep "passed"
    echo "$out" | grep -q "coll:adaptx: MPI_COMM_WORLD: 7 ranks on 3 nodes (topo tree)" ||
        { echo "the topo tree did not see 3 synthetic nodes"; return 1; }
}
step "adaptx topo tree on 3 synthetic round-robin nodes (the node map hanx uses), every collective" \
    topo_synthetic
persistent_served() {  # adaptx itself starts the persistent bcast, reduce and allreduce
    local out
    out=$(local_run 60 4 --mca coll_adaptx_priority 100 --mca coll_adaptx_verbose 10 "$CHECKER" \
          --quick --colls persistent --max-count 1 2>&1)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" && ! echo "$out" | grep -q " 0 passed" &&
        for c in bcast_init reduce_init allreduce_init; do
            echo "$out" | grep -q "coll:adaptx: $c count" || { echo "adaptx did not serve $c"; return 1; }
        done
}
step "adaptx serves MPI_Bcast_init, MPI_Reduce_init, MPI_Allreduce_init" persistent_served
step "adaptx: persistent collectives (bcast/reduce/allreduce/allgather *_init), each started 3 times with new data, 4 ranks" \
    local_run 300 4 --mca coll_adaptx_priority 100 "$CHECKER" --quick --colls persistent,overlap
step "adaptx with more than 2^31 bytes per buffer (bcast, allreduce, reduce), 3 ranks" \
    local_run 300 3 --mca coll_adaptx_priority 100 "$COLLX_BUILDDIR/test/mpi/huge_count"
# datatypes of zero or negative extent, which the core does not take: the
# broadcast right (blocking and not, every root) and the hand-over said on
# every rank for each of odd_extent's 16 calls (the ranks' stderr in files:
# mpirun's forwarded lines may splice)
odd_extent() {  # odd_extent PATTERN MPIRUN-ARGS...
    local pattern=$1 dir n rc
    shift
    dir=$(mktemp -d) || return 1
    local_run 120 4 "$@" "$COLLX_BUILDDIR/test/mpi/odd_extent" --stderr "$dir" 2>/dev/null
    rc=$?
    n=$(cat "$dir"/rank.* 2>/dev/null | grep -c "$pattern")
    rm -rf "$dir"
    echo "$n lines: $pattern"
    [ $rc = 0 ] && [ "$n" = 64 ]
}
step "adaptx hands bcast and ibcast of datatypes of zero or negative extent to the previous module, 4 ranks" \
    odd_extent "coll:adaptx: bcast case not handled (datatype of zero or negative extent); falling back" \
    --mca coll_adaptx_priority 100 --mca coll_adaptx_verbose 1

# --- hanx: one real node has no hierarchy, so impose synthetic nodes
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node"
for coll in $HANX_COLLS; do
    step "hanx serves MPI_${coll^} (synthetic 2-rank nodes)" \
        served_by hanx $coll local_run 60 4 --mca coll_hanx_ranks_per_node 2
done
step "hanx checker, 4 ranks as 2x2, every blocking collective, $HALF1_NAME" \
    local_run 900 4 $HANX 2 "$CHECKER" --colls blocking $HALF1
step "hanx checker, 4 ranks as 2x2, big counts (pipelined bcast/reduce/allreduce), $MATRIX_NAME" \
    local_run 900 4 $HANX 2 "$CHECKER" --colls bcast,reduce,allreduce $MATRIX --big-only
step "hanx checker, 5 ranks as 2+2+1 (imbalanced)" \
    local_run 300 5 $HANX 2 "$CHECKER" --quick --colls blocking --seed 3
step "hanx checker, 7 ranks round-robin on 3 nodes (3+2+2)" \
    local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1 "$CHECKER" --quick --colls blocking --seed 5
step "hanx checker, 3 levels: 8 ranks as 2 nodes x 2 sockets x 2" \
    local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 "$CHECKER" --quick --colls blocking --seed 7
step "hanx checker, 3 levels, imbalanced: 7 ranks as (3+1) + 3" \
    local_run 300 7 $HANX 4 --mca coll_hanx_ranks_per_socket 3 "$CHECKER" --quick --colls blocking --seed 9
step "hanx checker, pipelined: tiny segments, 6 ranks as 3x2" \
    local_run 300 6 $HANX 2 --mca coll_hanx_bcast_segment_size 64 --mca coll_hanx_reduce_segment_size 40 \
    --mca coll_hanx_allreduce_segment_size 24 "$CHECKER" --quick --seed 11
step "hanx checker, pipelined over 3 levels with tiny segments" \
    local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 --mca coll_hanx_bcast_segment_size 100 \
    --mca coll_hanx_reduce_segment_size 56 --mca coll_hanx_allreduce_segment_size 16 \
    "$CHECKER" --quick --seed 13
# collx trees run by hanx itself on its levels (coll_hanx_low/up_algorithm),
# and blocking calls on the schedules (coll_hanx_blocking_schedule)
HANX_TREES="--mca coll_hanx_low_algorithm pipeline --mca coll_hanx_up_algorithm binomial"
hanx_level_algorithm() {  # hanx_level_algorithm TREE: verbose names it for the node level
    local_run 60 4 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 \
        --mca coll_hanx_socket_level 0 --mca coll_hanx_low_algorithm "$1" --mca coll_hanx_verbose 10 \
        "$CHECKER" --quick --colls bcast --max-count 1 2>&1 |
        grep -q "coll:hanx: bcast levels (innermost first): $1, module"
}
step "hanx runs the collx tree asked for on the node level (verbose names it)" \
    hanx_level_algorithm knomial
step "hanx with collx trees on its levels, 4 ranks as 2x2, blocking and non-blocking" \
    local_run 300 4 $HANX 2 $HANX_TREES "$CHECKER" --quick --colls "blocking,$HANX_NB" --seed 3
step "hanx with in-order trees on 3 levels, tiny segments (non-commutative ops in rank order)" \
    local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 --mca coll_hanx_low_algorithm in_order_binomial \
    --mca coll_hanx_up_algorithm knomial --mca coll_hanx_bcast_segment_size 100 \
    --mca coll_hanx_reduce_segment_size 56 --mca coll_hanx_allreduce_segment_size 16 \
    "$CHECKER" --quick --seed 13
step "hanx with collx trees on its levels, 7 ranks round-robin on 3 nodes" \
    local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1 $HANX_TREES "$CHECKER" --quick \
    --colls "blocking,$HANX_NB" --seed 5
step "hanx with recursive doubling on both levels, 6 ranks as 3 nodes of 2 (3 leaders pair up first)" \
    local_run 300 6 $HANX 2 --mca coll_hanx_low_algorithm recursive_doubling \
    --mca coll_hanx_up_algorithm recursive_doubling "$CHECKER" --quick \
    --colls "bcast,reduce,allreduce,$HANX_NB" --seed 5
# a tuning file's rules name the levels' algorithms (test/mpi/tuning/trees.json),
# over the MCA parameters' (binomial for both levels here: what a rule that
# names one level keeps on the other)
rule_trees() {  # rule_trees LEVELS NP NODE-SIZE [mpirun args]: results right, each rule's trees ran
    local levels=$1 np=$2 per=$3 out; shift 3
    out=$(logged local_run 300 "$np" $HANX "$per" "$@" --mca coll_hanx_verbose 10 \
          --mca coll_hanx_low_algorithm binomial --mca coll_hanx_up_algorithm binomial \
          --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/trees.json" \
          "$CHECKER" --quick --colls "bcast,reduce,allreduce,barrier,ibcast,ireduce,iallreduce,overlap" --seed 21)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    low() { [ "$levels" = 3 ] && echo "$1, $1" || echo "$1"; }  # the low algorithm on each level below the leaders
    local want ok=0
    for want in "bcast levels (innermost first): $(low pipeline), knomial" \
                "bcast levels (innermost first): $(low binomial), chain" \
                "reduce levels (innermost first): $(low binomial), pipeline" \
                "allreduce levels (innermost first): $(low in_order_binomial), topo" \
                "barrier levels (innermost first): $(low module), binary"; do
        echo "$out" | grep -q "coll:hanx: $want\$" || { echo "never ran: $want"; ok=1; }
    done
    # the MCA parameters' binomial on every level: a rule ignored
    echo "$out" | grep -Eq "levels \(innermost first\): binomial(, binomial)+\$" && { echo "a rule was ignored"; ok=1; }
    return $ok
}
step "a tuning file's rules choose the collx trees on hanx's levels (2x2, blocking and non-blocking)" \
    rule_trees 2 4 2 --mca coll_hanx_socket_level 0
step "... and on 3 levels, 7 ranks round-robin" \
    rule_trees 3 7 4 --mca coll_hanx_ranks_per_socket 2 --mca coll_hanx_round_robin 1
flat_mca() {  # coll_hanx_flat_algorithm topo: every bcast, reduce, allreduce one topo tree
    local out c ok=0
    out=$(logged local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1 --mca coll_hanx_verbose 10 \
          --mca coll_hanx_flat_algorithm topo "$CHECKER" --quick \
          --colls "bcast,reduce,allreduce,ibcast,ireduce,iallreduce" --seed 29)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    for c in bcast reduce allreduce ibcast ireduce iallreduce; do
        echo "$out" | grep -q "coll:hanx: $c count .*: one collx topo tree over all ranks" || { echo "no flat $c"; ok=1; }
    done
    echo "$out" | grep -q "levels (innermost first)" && { echo "a call ran on the levels"; ok=1; }
    return $ok
}
step "coll_hanx_flat_algorithm: every bcast, reduce, allreduce one collx tree (topo, 3 nodes round-robin)" \
    flat_mca
default_mca() (  # coll_hanx_default_algorithm 1: every call hierarchical; 2: every call the previous module
    local out1 out2 ok=0
    # no tuning file (the harness's forces allgather/alltoall hierarchical): the parameter decides
    unset OMPI_MCA_coll_hanx_tuning_file
    out1=$(logged local_run 300 5 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 1 \
           "$CHECKER" --quick --colls "allgather,alltoall,bcast,iallgather" --seed 31)
    echo "$out1" | grep "collx_check:" | tail -1
    echo "$out1" | grep -q " 0 failed" || return 1
    # allgather/alltoall of large blocks: hierarchical, not the built-in previous module
    echo "$out1" | grep -qE "coll:hanx: allgather count [0-9]{3,} on" || { echo "no large hierarchical allgather"; ok=1; }
    echo "$out1" | grep -qE "coll:hanx: alltoall count [0-9]{3,} on" || { echo "no large hierarchical alltoall"; ok=1; }
    echo "$out1" | grep -q "previous module (tuning)" && { echo "a call went to the previous module"; ok=1; }
    out2=$(logged local_run 300 5 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 2 \
           --mca coll_hanx_flat_algorithm pipeline "$CHECKER" --quick --colls "bcast,allreduce,allgather,barrier" --seed 31)
    echo "$out2" | grep "collx_check:" | tail -1
    echo "$out2" | grep -q " 0 failed" || return 1
    for c in bcast allreduce allgather barrier; do
        echo "$out2" | grep -q "coll:hanx: $c of [0-9]* bytes on .*previous module (tuning)" || { echo "$c not previous"; ok=1; }
    done
    echo "$out2" | grep -qE "levels \(innermost first\)|collx pipeline tree over all ranks" && { echo "hanx ran a call"; ok=1; }
    return $ok
)
step "coll_hanx_default_algorithm: 1 every call hierarchical, 2 every call the previous module (over a flat tree too)" \
    default_mca
step "the front door runs flat collx trees a tuning file names (5 ranks as 2+2+1, blocking and non-blocking)" \
    flat_trees local_run 300 5 $HANX 2
step "... and on 3 nodes round-robin (the topo tree on hanx's node map)" \
    flat_trees local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1
step "hanx runs bcast and ibcast of datatypes of zero or negative extent on its levels, not a flat tree (4 ranks as 2x2)" \
    odd_extent "datatype the core does not take: hierarchical, not a flat knomial tree over all ranks" \
    $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/flat.json" --mca coll_hanx_verbose 10
step "... nor the levels' collx trees (coll_hanx_low/up_algorithm pipeline): results right" \
    odd_extent "coll:hanx: bcast levels (innermost first): pipeline, pipeline" \
    $HANX 2 --mca coll_hanx_low_algorithm pipeline --mca coll_hanx_up_algorithm pipeline \
    --mca coll_hanx_verbose 10
step "split-rail allreduce (tuning file), 4 ranks as 2x2, blocking and non-blocking" \
    split_rails ran local_run 300 4 $HANX 2
step "... 6 ranks as 2x3 round-robin, small segments (chunks of one element, last segments shorter than a node)" \
    split_rails ran local_run 300 6 $HANX 3 --mca coll_hanx_round_robin 1 --mca coll_hanx_allreduce_segment_size 24
step "... 3 levels, 8 ranks as 2 nodes x 2 sockets x 2, collx trees on the levels and the rail, on the schedules" \
    split_rails ran local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 $HANX_TREES \
    --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_allreduce_segment_size 56
step "... 5 ranks as 2+2+1: nodes of different sizes, the levels' allreduce serves" \
    split_rails levels local_run 300 5 $HANX 2
step "the node ring allgather (tuning file), 4 ranks as 2x2, blocking and non-blocking, 256-byte segments" \
    node_ring local_run 300 4 $HANX 2
step "... 7 ranks on 3 nodes round-robin (3+2+2: nodes of different sizes, blocks not in node order)" \
    node_ring local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1
step "... 3 levels, 8 ranks as 2 nodes x 2 sockets x 2 (the ring round the nodes, not the sockets)" \
    node_ring local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2
split_default() (  # coll_hanx_default_algorithm 3, no tuning file: allreduce and reduce_scatter(_block) split, the rest hierarchical
    local out ok=0
    unset OMPI_MCA_coll_hanx_tuning_file
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 3 \
          "$CHECKER" --quick --colls "barrier,allreduce,iallreduce,bcast,reduce_scatter_block" --seed 33)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -Eq "coll:hanx: allreduce count [0-9]+ on .*: split rails$" || { echo "no split allreduce"; ok=1; }
    echo "$out" | grep -Eq "coll:hanx: reduce_scatter_block count [0-9]+ on .*: split rails$" ||
        { echo "no split reduce_scatter_block"; ok=1; }
    # on the levels only where split rails cannot: a datatype tuned's reduce_scatter mishandles
    local levels cannot
    levels=$(echo "$out" | grep -Ec "coll:hanx: allreduce count [0-9]+ on [^:]*$")
    cannot=$(echo "$out" | grep -c "coll:hanx: allreduce on .*: split rails cannot run (datatype with true lower bound")
    [ "$levels" = "$cannot" ] || { echo "$levels allreduces on the levels, $cannot of them said why"; ok=1; }
    echo "$out" | grep -q "coll:hanx: bcast levels (innermost first)" || { echo "no hierarchical bcast"; ok=1; }
    return $ok
)
step "coll_hanx_default_algorithm 3: every allreduce and reduce_scatter_block split rails, the other collectives hierarchical" \
    split_default
root_rail() (  # bcast/reduce from roots that do not lead their node: on the root's rail, blocking and not
    local out ok=0 c
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --colls "bcast,reduce,barrier,ibcast,ireduce,overlap" --seed 35)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    for c in bcast reduce ibcast ireduce; do
        echo "$out" | grep -Eq "coll:hanx: $c count [0-9]+ root [13] on MPI_COMM_WORLD: on the root's rail$" ||
            { echo "no $c on the root's rail"; ok=1; }
    done
    echo "$out" | grep -Eq "coll:hanx: i?(bcast|reduce) count [0-9]+ root [02] on MPI_COMM_WORLD: on the root's rail" &&
        { echo "a node leader's call on the rail"; ok=1; }
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_root_rail 0 \
          "$CHECKER" --quick --colls "bcast,reduce" --max-count 1 --seed 35)
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "on the root's rail" && { echo "coll_hanx_root_rail 0 not followed"; ok=1; }
    return $ok
)
step "bcast and reduce from roots that do not lead their node run on the root's rail (2x2, blocking and not); coll_hanx_root_rail 0 turns it off" \
    root_rail
one_call() {  # one_call NP PER_NODE COLL BYTES [mpirun args]: one collx-bench call of COLL at BYTES under hanx, its verbose-10 output
    local np=$1 per=$2 coll=$3 b=$4; shift 4
    local_run 120 "$np" $HANX "$per" --mca coll_hanx_verbose 10 "$@" "$COLLX_BUILDDIR/collx-bench" \
        --coll "$coll" --min "$b" --max "$b" --reps 1 --warmup 0 --time-per-rep 0.000001 2>&1
}
level_trees_default() (  # the built-in collx trees on the levels, where coll_hanx_low/up_algorithm are left at their defaults
    # (their results: the checker's steps with big counts, "hanx checker, 4 ranks as 2x2,
    # big counts" and "hanx non-blocking, pipelined: 8 KiB segments, big counts", and every
    # hanx checker step with reduce, ireduce or iallreduce, run with them)
    local ok=0
    unset OMPI_MCA_coll_hanx_tuning_file
    levels() {  # levels TAIL COLL BYTES [mpirun args]: the distinct "low, up" algorithms of COLL's calls on 2 x 2 (TAIL: split rails' "; rails: R" too)
        local tail=$1 coll=$2 b=$3; shift 3
        one_call 4 2 "$coll" "$b" --mca coll_hanx_socket_level 0 "$@" |
            sed -nE "s/.*coll:hanx: ${coll#i} levels \(innermost first\): ([a-z_]+, [a-z_]+$tail)\$/\1/p" |
            sort -u | tr '\n' ';'
    }
    expect() {  # expect WANT COLL BYTES [mpirun args]
        local want=$1 got tail=""; shift
        case $want in *"; rails: "*) tail="; rails: [a-z_]+" ;; esac
        got=$(levels "$tail" "$@")
        [ "$got" = "$want;" ] || { echo "$*: levels \"$got\", not \"$want\""; ok=1; }
    }
    # blocking reduce: the tree between the leaders from 64 KiB (two of its segments)
    expect "module, module" reduce 32768
    expect "module, binomial" reduce 65536
    expect "module, binomial" reduce 131072
    # ... and on the schedules (coll_hanx_blocking_schedule 1: more than one segment, 64 KiB
    # from 512 KiB) the non-blocking calls' trees: the node's stages are i-collectives there too;
    # one segment runs its stages one after the other, with the blocking calls' trees
    expect "module, binomial" reduce 1048576
    expect "binomial, binomial" reduce 1048576 --mca coll_hanx_blocking_schedule 1
    expect "module, binomial" reduce 131072 --mca coll_hanx_blocking_schedule 1
    expect "module, binomial" reduce 1048576 --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_reduce_segment_size 2097152
    expect "binomial, binomial" reduce 131072 --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_reduce_segment_size 65536
    # blocking allreduce of at most 1 KiB on two nodes, 16 KiB on more: one collx topo tree
    # over all ranks (since stop 38), where neither level's algorithm is set; above, the levels
    topo() {  # topo NP BYTES [mpirun args]: how many of the calls of BYTES ran on the topo tree
        local np=$1 b=$2; shift 2
        one_call "$np" 2 allreduce "$b" --mca coll_hanx_socket_level 0 "$@" |
            grep -c "coll:hanx: allreduce count $((b / 4)) on .*: one collx topo tree over all ranks$"
    }
    [ "$(topo 4 1024)" -gt 0 ] && [ "$(topo 4 2048)" = 0 ] && [ "$(topo 8 16384)" -gt 0 ] &&
        [ "$(topo 8 32768)" = 0 ] || { echo "allreduce on the topo tree: 2x2 $(topo 4 1024) at 1 KiB," \
                                            "$(topo 4 2048) at 2 KiB; 4x2 $(topo 8 16384) at 16 KiB, $(topo 8 32768) at 32 KiB"; ok=1; }
    expect "module, module" allreduce 2048
    [ "$(topo 4 1024 --mca coll_hanx_low_algorithm module)" = 0 ] || { echo "the topo tree with a level set"; ok=1; }
    expect "module, module" allreduce 1024 --mca coll_hanx_low_algorithm module
    # blocking allreduce between two leaders from 4 KiB: recursive doubling
    expect "module, recursive_doubling" allreduce 4096
    expect "module, recursive_doubling" allreduce 65536
    # non-blocking: the tree on both levels, ireduce at every size, iallreduce below 128 KiB
    # (from there split rails on the collx ring, which the node's trees do not run), between
    # two leaders on recursive doubling
    expect "binomial, binomial" ireduce 1024
    expect "binomial, binomial" ireduce 131072
    expect "binomial, recursive_doubling" iallreduce 1024
    expect "binomial, recursive_doubling" iallreduce 65536
    n4() { one_call 8 2 iallreduce "$1" --mca coll_hanx_socket_level 0 |
           sed -nE "s/.*coll:hanx: allreduce levels \(innermost first\): ([a-z_]+, [a-z_]+)\$/\1/p" | sort -u | tr '\n' ';'; }
    [ "$(n4 1024)" = "binomial, binomial;" ] || { echo "4x2 iallreduce 1024: $(n4 1024)"; ok=1; }
    expect "binomial, ring; rails: ring" iallreduce 131072
    expect "module, ring; rails: ring" iallreduce 262144
    # set, even to the default's own value, a parameter decides its level
    expect "module, module" reduce 131072 --mca coll_hanx_up_algorithm module
    expect "module, module" allreduce 65536 --mca coll_hanx_up_algorithm module
    expect "binomial, module" ireduce 1024 --mca coll_hanx_up_algorithm module
    expect "module, module" ireduce 1024 --mca coll_hanx_up_algorithm module --mca coll_hanx_low_algorithm module
    OMPI_MCA_coll_hanx_up_algorithm=knomial expect "module, knomial" reduce 131072 -x OMPI_MCA_coll_hanx_up_algorithm
    # ... except auto (since stop 37): hanx's built-in choice, as left at the default, taken
    # without a start-up complaint
    expect "module, binomial" reduce 131072 --mca coll_hanx_up_algorithm auto
    expect "binomial, recursive_doubling" iallreduce 1024 --mca coll_hanx_up_algorithm auto --mca coll_hanx_low_algorithm AUTO
    ! one_call 4 2 reduce 131072 --mca coll_hanx_socket_level 0 --mca coll_hanx_up_algorithm auto | grep -q "is used instead" ||
        { echo "auto: a start-up complaint"; ok=1; }
    return $ok
)
step "built-in collx trees on the levels: reduce from 64 KiB between the leaders, small allreduce on one topo tree, allreduce from 4 KiB between two leaders, ireduce and iallreduce below 128 KiB on both (iallreduce between two leaders on recursive doubling); a set coll_hanx_low/up_algorithm decides, auto leaves it to hanx" \
    level_trees_default
reduce_scatter_default() (  # the built-in reduce_scatter(_block) from 64 KiB of the vector: split rails on the collx ring's reduce-scatter half, node and rails
    local ok=0 out n
    unset OMPI_MCA_coll_hanx_tuning_file
    levels() {  # levels NP PER_NODE BLOCK [mpirun args]: the distinct "node, rail" algorithms of one reduce_scatter_block (collx-bench's: MPI_INT, MPI_SUM), or "levels"
        local np=$1 per=$2 b=$3; shift 3
        one_call "$np" "$per" reduce_scatter "$b" --mca coll_hanx_socket_level 0 "$@" |
            sed -nE "s/.*coll:hanx: reduce_scatter_block count [0-9]+ on MPI_COMM_WORLD(: split rails)?\$/\1/p;
                     s/.*: split rails, the node's on the ([a-z ]+), the rail's on the ([a-z ]+)\$/\1, \2/p" |
            sort -u | tr '\n' ';'
    }
    expect() {  # expect WANT NP PER_NODE BLOCK [mpirun args]
        local want=$1 got; shift
        got=$(levels "$@")
        [ "$got" = "$want" ] || { echo "$*: \"$got\", not \"$want\""; ok=1; }
    }
    # 2 x 2: from blocks of 16 KiB (64 KiB of vector); 4 x 2: from 8 KiB
    expect ": split rails;collx ring, collx ring;" 4 2 16384
    expect ";" 4 2 16380
    expect ": split rails;collx ring, collx ring;" 8 2 8192
    expect ";" 8 2 4096
    # a set parameter decides its level; nodes of different sizes: the levels
    expect ": split rails;collx ring, module;" 4 2 65536 --mca coll_hanx_up_algorithm module
    expect ": split rails;module, collx ring;" 4 2 65536 --mca coll_hanx_low_algorithm module
    expect ";" 5 2 65536
    # the cost model (coll_hanx_default_algorithm 4, its default machine) covers reduce_scatter:
    # of hanx's two forms split rails predicted at 0.69 of the levels' time for 8 KiB blocks on
    # 2 x 2, where the built-in choice takes the levels; run on the rings
    expect ";" 4 2 8192
    expect ": split rails;collx ring, collx ring;" 4 2 8192 --mca coll_hanx_default_algorithm 4 \
        --mca coll_hanx_model_measure 0
    # results: every datatype, op and count of the checker on 2 x 2 and 2 x 3 round-robin, the
    # rings for commutative ops, the modules (rank order) for the others
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 "$CHECKER" --quick --big \
          --colls "reduce_scatter,reduce_scatter_block,barrier,ireduce_scatter,ireduce_scatter_block" --seed 43)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    for c in reduce_scatter reduce_scatter_block; do
        n=$(echo "$out" | grep -c "coll:hanx: $c on .*: split rails, the node's on the collx ring, the rail's on the collx ring")
        [ "$n" -gt 0 ] || { echo "the checker's big ${c}s not on the rings"; ok=1; }
        n=$(echo "$out" | grep -c "coll:hanx: $c on .*: split rails, the node's on the module, the rail's on the module")
        [ "$n" -gt 0 ] || { echo "the checker's non-commutative ${c}s not on the modules"; ok=1; }
        # non-blocking: the same rings on the schedules; the rest to the previous module
        n=$(echo "$out" | grep -c "coll:hanx: i$c on .*: split rails, the node's and the rail's on the collx ring")
        [ "$n" -gt 0 ] || { echo "the checker's big i${c}s not on the rings"; ok=1; }
        n=$(echo "$out" | grep -c "coll:hanx: i$c on .*: previous module (not split rails)")
        [ "$n" -gt 0 ] || { echo "the checker's small i${c}s not handed to the previous module"; ok=1; }
    done
    out=$(logged local_run 300 6 $HANX 3 --mca coll_hanx_round_robin 1 --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --colls "reduce_scatter,reduce_scatter_block" --seed 45)
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "the node's on the collx ring, the rail's on the collx ring" ||
        { echo "2 x 3 round-robin: not on the rings"; ok=1; }
    # ... and split rails on the modules, both levels named
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_low_algorithm module --mca coll_hanx_up_algorithm module \
          --mca coll_hanx_verbose 10 "$CHECKER" --quick --big --colls "reduce_scatter,reduce_scatter_block" --seed 47)
    echo "$out" | grep -q " 0 failed" || return 1
    ! echo "$out" | grep -q "on the collx ring" || { echo "a ring where both levels say module"; ok=1; }
    echo "$out" | grep -q "split rails, the node's on the module, the rail's on the module" ||
        { echo "not on split rails over the modules"; ok=1; }
    return $ok
)
step "built-in reduce_scatter(_block) from 64 KiB of vector: split rails on the collx ring (node and rails), commutative ops, blocking and not; a set coll_hanx_low/up_algorithm decides" \
    reduce_scatter_default
allgather_default() (  # the built-in allgather: the node ring from blocks of 32 KiB; below, the levels (the leaders' collx ring on slow links)
    local ok=0 out n
    unset OMPI_MCA_coll_hanx_tuning_file
    # the machine as the model's parameters say (not measured): links between nodes at 1 Gbit/s,
    # 80x the time per byte within a node; or the shipped default, 4x
    local slow="--mca coll_hanx_model_measure 0 --mca coll_hanx_model_inter_beta_ps_per_byte 8000"
    calls() {  # calls WHAT COLL BLOCK NP PER_NODE MACHINE: how many of the ranks' calls said WHAT
        local what=$1; shift
        one_call "$3" "$4" "$1" "$2" $5 | grep -c "$what"
    }
    for c in allgather iallgather; do
        for mach in "$slow" "--mca coll_hanx_model_measure 0"; do
            [ "$(calls "node ring" $c 32768 4 2 "$mach")" -gt 0 ] || { echo "$c of 32 KiB blocks ($mach): not the node ring"; ok=1; }
            [ "$(calls "node ring" $c 32760 4 2 "$mach")" = 0 ] || { echo "$c below 32 KiB blocks ($mach) on the node ring"; ok=1; }
        done
        # any placement: nodes of 3+1
        [ "$(calls "node ring" $c 65536 4 3 "$slow")" -gt 0 ] || { echo "$c on nodes of 3+1: not the node ring"; ok=1; }
        # one node: the levels' hand-over, no ring
        [ "$(calls "node ring" $c 65536 4 4 "$slow")" = 0 ] || { echo "$c on one node on the node ring"; ok=1; }
        # below the node ring on slow links: the levels, the leaders on the collx ring only from 32 KiB
        [ "$(calls "leaders' allgather on the collx ring" $c 32760 4 2 "$slow")" = 0 ] ||
            { echo "$c below 32 KiB blocks: the leaders' ring"; ok=1; }
    done
    # the leaders' collx ring as a rule names it (the one flag takes it where the node ring
    # does not run: above 64 ranks), results on every datatype and count, and on 3+1 the
    # hand-over to their module
    local rule=$COLLX_SRCDIR/test/mpi/tuning/leaders-ring.json
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_tuning_file "$rule" --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --big --colls "allgather,iallgather" --seed 39)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    n=$(echo "$out" | grep -c "leaders' allgather on the collx ring")
    [ "$n" -gt 0 ] || { echo "the checker's allgathers not on the leaders' ring"; ok=1; }
    out=$(logged local_run 300 4 $HANX 3 --mca coll_hanx_tuning_file "$rule" --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --big --colls "allgather,iallgather" --seed 41)
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "leaders' allgather on their module (nodes of different sizes)" ||
        { echo "3+1: no hand-over to the leaders' module said"; ok=1; }
    # the one flag's node ring on every datatype and count, blocking and not (the checker's
    # big counts reach 32 KiB blocks)
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 "$CHECKER" --quick --big \
          --colls "allgather,allgatherv,iallgather" --seed 43)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    node_ring_ran "$out" || ok=1
    return $ok
)
step "built-in allgather(v): the node ring from blocks of 32 KiB on 2 nodes or more, blocking or not, any placement; below, the levels; the leaders' collx ring as a rule names it (3+1: their module)" \
    allgather_default
fast_links_default() (  # measured links between nodes that are not slow: large blocking bcast and allgather to the previous module
    # (one node as 2 x 2: hanx measures both links in shared memory, far below 6x apart)
    local ok=0
    unset OMPI_MCA_coll_hanx_tuning_file
    said() {  # said COLL BYTES [mpirun args]: how many of the ranks' calls went to the previous module for fast links
        local coll=$1 b=$2; shift 2
        one_call 4 2 "$coll" "$b" "$@" | grep -c "coll:hanx: $coll of $b bytes on 2 nodes: previous module (links between nodes"
    }
    [ "$(said bcast 65536)" -gt 0 ] || { echo "bcast of 64 KiB: not the previous module"; ok=1; }
    [ "$(said bcast 65532)" = 0 ] || { echo "bcast below 64 KiB: the previous module"; ok=1; }
    [ "$(said allgather 131072)" -gt 0 ] || { echo "allgather of 128 KiB blocks: not the previous module"; ok=1; }
    [ "$(said allgather 131068)" = 0 ] || { echo "allgather below 128 KiB blocks: the previous module"; ok=1; }
    [ "$(one_call 4 2 allgather 131068 | grep -c "node ring")" -gt 0 ] || { echo "allgather below 128 KiB blocks: not the node ring"; ok=1; }
    # measured only: the machine of the model's parameters keeps the levels; non-blocking calls too
    [ "$(said bcast 1048576 --mca coll_hanx_model_measure 0)" = 0 ] || { echo "an unmeasured machine's bcast: the previous module"; ok=1; }
    [ "$(one_call 4 2 bcast 1048576 --mca coll_hanx_model_measure 0 | grep -c "bcast levels")" -gt 0 ] ||
        { echo "an unmeasured machine's bcast: not on the levels"; ok=1; }
    # non-blocking: ibcast from 512 KiB, iallgather from 256 KiB blocks; below, hanx's own (the
    # levels' schedules or the model's LP chain; the node ring's allgather); an unmeasured machine
    # keeps them
    [ "$(said ibcast 524288)" -gt 0 ] || { echo "ibcast of 512 KiB: not the previous module"; ok=1; }
    [ "$(said iallgather 262144)" -gt 0 ] || { echo "iallgather of 256 KiB blocks: not the previous module"; ok=1; }
    local ib
    ib=$(one_call 4 2 ibcast 524284)
    echo "$ib" | grep -Eq "coll:hanx: ibcast count [0-9]+ " || { echo "no ibcast below 512 KiB run by hanx"; ok=1; }
    ! echo "$ib" | grep -q "links between nodes" || { echo "an ibcast below 512 KiB handed to the previous module"; ok=1; }
    ib=$(one_call 4 2 iallgather 262140)
    echo "$ib" | grep -q "node ring" || { echo "no iallgather below 256 KiB blocks on the node ring"; ok=1; }
    ! echo "$ib" | grep -q "links between nodes" || { echo "an iallgather below 256 KiB blocks handed to the previous module"; ok=1; }
    ib=$(one_call 4 2 ibcast 1048576 --mca coll_hanx_model_measure 0)
    echo "$ib" | grep -Eq "coll:hanx: ibcast count [0-9]+ root" || { echo "an unmeasured machine's ibcast: not on hanx's schedules"; ok=1; }
    ! echo "$ib" | grep -q "links between nodes" || { echo "an unmeasured machine's ibcast handed to the previous module"; ok=1; }
    return $ok
)
step "built-in bcast from 64 KiB and allgather from 128 KiB blocks (non-blocking: 512 KiB, 256 KiB): the previous module where the measured links between nodes are not slow (not unmeasured)" \
    fast_links_default
model_cache() (  # coll_hanx_model_cache: the first run keeps its nodes' machine, later runs take it; only then does a large allreduce follow it
    # (one node as 2 x 2: both links in shared memory, far below 6x apart: fast links)
    local ok=0 dir out f
    unset OMPI_MCA_coll_hanx_tuning_file
    dir=$(mktemp -d) || return 1
    f=$dir/cache/machines
    call() {  # call FILE NP BYTES: allreduce of BYTES on NP ranks as NP/2 x 2, the cache in FILE
        one_call "$2" 2 allreduce "$3" --mca coll_hanx_model_cache "$1"
    }
    handed() { grep -c "coll:hanx: allreduce of $1 bytes on [0-9]* nodes: previous module (links between nodes .*; machine kept)"; }
    out=$(call "$f" 4 1048576)
    echo "$out" | grep -q "machine measured, kept in $f:" || { echo "the first run did not keep its machine"; ok=1; }
    [ "$(grep -c "^[0-9a-f]\{16\} 2x2 " "$f" 2>/dev/null)" = 1 ] || { echo "no 2x2 line in the file"; ok=1; }
    [ "$(echo "$out" | handed 1048576)" -gt 0 ] || { echo "the first run's 1 MiB allreduce: not the previous module"; ok=1; }
    out=$(call "$f" 4 1048576)
    echo "$out" | grep -q "machine found in $f:" || { echo "the second run did not take the kept machine"; ok=1; }
    ! echo "$out" | grep -q "latencies with the other ranks asleep" || { echo "the second run measured"; ok=1; }
    [ "$(echo "$out" | handed 1048576)" -gt 0 ] || { echo "the second run's 1 MiB allreduce: not the previous module"; ok=1; }
    [ "$(call "$f" 4 1048572 | grep -c "previous module (links")" = 0 ] || { echo "an allreduce below 1 MiB: the previous module"; ok=1; }
    # non-blocking: from 512 KiB
    [ "$(one_call 4 2 iallreduce 524288 --mca coll_hanx_model_cache "$f" |
         grep -c "coll:hanx: iallreduce of 524288 bytes on [0-9]* nodes: previous module (links between nodes .*; machine kept)")" -gt 0 ] ||
        { echo "an iallreduce of 512 KiB: not the previous module"; ok=1; }
    [ "$(one_call 4 2 iallreduce 524284 --mca coll_hanx_model_cache "$f" | grep -c "previous module (links")" = 0 ] ||
        { echo "an iallreduce below 512 KiB: the previous module"; ok=1; }
    [ "$(one_call 4 2 iallreduce 524288 --mca coll_hanx_model_cache none | grep -c "previous module (links")" = 0 ] ||
        { echo "no cache: an iallreduce of 512 KiB to the previous module"; ok=1; }
    # other nodes (3 x 2): a line of their own
    call "$f" 6 8 | grep -q "machine measured, kept in $f:" || { echo "3 x 2 did not measure"; ok=1; }
    [ "$(grep -c "^[0-9a-f]\{16\} " "$f")" = 2 ] || { echo "not two machines in the file"; ok=1; }
    # nothing kept (none; a file that cannot be written): the allreduce does not follow the measurement
    [ "$(call none 4 1048576 | grep -c "previous module (links")" = 0 ] || { echo "no cache: the previous module"; ok=1; }
    out=$(call "$f/x/machines" 4 1048576)  # (a directory where a file is)
    echo "$out" | grep -q "could not keep the measured machine (cannot make $f/x" || { echo "no word of a cache that cannot be written"; ok=1; }
    [ "$(echo "$out" | grep -c "previous module (links")" = 0 ] || { echo "an unwritable cache: the previous module"; ok=1; }
    # a damaged file: measured again, its lines replaced by good ones
    printf 'junk\n0000000000000001 2x2 1 2\n' > "$dir/bad"
    call "$dir/bad" 4 8 | grep -q "machine measured, kept in $dir/bad:" || { echo "a damaged file: not measured and kept"; ok=1; }
    [ "$(grep -vc "^#" "$dir/bad")" = 1 ] || { echo "a damaged file's bad lines stayed"; ok=1; }
    # the results with the kept machine (large allreduces on the previous module)
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_model_cache "$f" "$CHECKER" --quick --big --colls allreduce,iallreduce --seed 41)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || ok=1
    rm -rf "$dir"
    return $ok
)
step "coll_hanx_model_cache: the first run keeps its nodes' measured machine, later runs take it; on a kept machine with fast links an allreduce from 1 MiB (non-blocking: 512 KiB) goes to the previous module, on none or an unwritable file not" \
    model_cache
ring_default() (  # the built-in large allreduce: split rails on the collx ring, blocking or not
    local out ok=0 small
    unset OMPI_MCA_coll_hanx_tuning_file
    # (the built-in rule itself: no measured model refining it)
    out=$(logged local_run 300 8 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_model_measure 0 \
          "$CHECKER" --quick --big --colls "allreduce,iallreduce" --seed 37)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    # every big blocking call (300007 elements of 1 byte or more: >= 128 KiB) on split rails
    # with the collx ring on the rails, no smaller one (4099 elements of at most 16 bytes)
    [ "$(echo "$out" | grep -Ec "coll:hanx: allreduce count 300007 on .*: split rails$")" -gt 0 ] ||
        { echo "no big allreduce on split rails"; ok=1; }
    small=$(echo "$out" | grep -E "coll:hanx: allreduce count [0-9]+ on .*: split rails$" | grep -vc "count 300007 ")
    [ "$small" = 0 ] || { echo "$small small allreduces on split rails"; ok=1; }
    echo "$out" | grep -q "coll:hanx: allreduce levels (innermost first): module, .*; rails: ring$" ||
        { echo "the rails not on the collx ring (or the node not on its module)"; ok=1; }
    # the same for the non-blocking ones (the rail made with the hierarchy), none on the flat ring
    [ "$(echo "$out" | grep -Ec "coll:hanx: iallreduce count 300007 on .*: split rails$")" -gt 0 ] ||
        { echo "no big iallreduce on split rails"; ok=1; }
    small=$(echo "$out" | grep -E "coll:hanx: iallreduce count [0-9]+ on .*: split rails$" | grep -vc "count 300007 ")
    [ "$small" = 0 ] || { echo "$small small iallreduces on split rails"; ok=1; }
    ! echo "$out" | grep -q "ring tree over all ranks" || { echo "a call on the flat ring"; ok=1; }
    # 2 x 2 with the leaders' level set to its module: split rails on the module (a set
    # coll_hanx_up_algorithm decides), no flat ring; an iallreduce's leaders' allreduce of
    # 64 KiB or more on the module: the collx ring, not libnbc's in-place binomial; the
    # node's level set to the ring: split rails' reduce-scatter and allgather on its halves
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_model_measure 0 \
          --mca coll_hanx_up_algorithm module --mca coll_hanx_low_algorithm ring \
          "$CHECKER" --quick --big --colls "allreduce,iallreduce" --seed 37)
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "ring tree" && { echo "2 x 2 took the ring"; ok=1; }
    echo "$out" | grep -q "coll:hanx: iallreduce on MPI_COMM_WORLD: the leaders' allreduce on the collx ring" ||
        { echo "no iallreduce with the leaders' allreduce on the ring"; ok=1; }
    echo "$out" | grep -Eq "coll:hanx: allreduce count 300007 on MPI_COMM_WORLD: split rails$" ||
        { echo "2 x 2: no big allreduce on split rails"; ok=1; }
    echo "$out" | grep -q "coll:hanx: allreduce levels (innermost first): ring, .*; rails: module$" ||
        { echo "2 x 2: the rails not on their module, or the node not on the ring, though set so"; ok=1; }
    return $ok
)
step "built-in large allreduce: split rails on the collx ring, blocking or not; on 2 x 2 set coll_hanx_up/low_algorithm decide the rails and the node (the ring's halves)" \
    ring_default
model_default() (  # coll_hanx_default_algorithm 4: the cost model chooses, and what it chose runs
    local out ok=0 a
    unset OMPI_MCA_coll_hanx_tuning_file
    # slow links (1 Gbit/s between nodes, 2.5 GB/s within) so that every
    # choice comes up among the checker's sizes
    out=$(logged local_run 300 6 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 4 \
          --mca coll_hanx_model_measure 0 --mca coll_hanx_model_inter_beta_ps_per_byte 8000 --mca coll_hanx_model_intra_beta_ps_per_byte 4000 \
          "$CHECKER" --quick --big --max-count 300000 --colls "bcast,allreduce,iallreduce,alltoall" --seed 34)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    count() { echo "$out" | grep -Ec "$1"; }
    for a in hierarchical previous split flat:pipeline; do
        [ "$(count "coll:hanx: model: .*: $a$")" -gt 0 ] || { echo "the model never chose $a"; ok=1; }
    done
    [ "$(count "coll:hanx: model: .*: flat:pipeline$")" = "$(count "one collx pipeline tree over all ranks")" ] ||
        { echo "flat choices and flat runs differ"; ok=1; }
    [ "$(count "coll:hanx: model: .*: flat:ring$")" = "$(count "one collx ring tree over all ranks")" ] ||
        { echo "ring choices and ring runs differ"; ok=1; }
    [ "$(count "coll:hanx: model: .*: previous$")" = "$(count "previous module \(tuning\)")" ] ||
        { echo "previous choices and previous runs differ"; ok=1; }
    [ "$(count "coll:hanx: model: .*: split$")" = "$(count "split rails$|split rails cannot run")" ] ||
        { echo "split choices and split runs differ"; ok=1; }
    # split as the one flag runs it: the collx ring on the rails (coll_hanx_up_algorithm unset)
    [ "$(count "allreduce levels \(innermost first\): .*; rails: ")" -gt 0 ] &&
        [ "$(count "allreduce levels \(innermost first\): .*; rails: ring$")" = \
          "$(count "allreduce levels \(innermost first\): .*; rails: ")" ] ||
        { echo "the model's split rails not on the collx ring"; ok=1; }
    return $ok
)
step "coll_hanx_default_algorithm 4: the cost model chooses per call (levels, previous, split, LP chain) and that runs" \
    model_default
model_measure() (  # coll_hanx_model_measure 1: the machine measured per communicator, the same on every rank
    local out ok=0 lines
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 1 --mca coll_hanx_default_algorithm 4 \
          --mca coll_hanx_model_measure 1 "$CHECKER" --quick --colls "bcast,allreduce,alltoall" --seed 37)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    lines=$(echo "$out" | grep "coll:hanx: MPI_COMM_WORLD: machine measured: " | sed 's/^\[[^]]*\] //')
    [ "$(echo "$lines" | grep -c .)" = 4 ] || { echo "not measured on every rank of MPI_COMM_WORLD"; ok=1; }
    [ "$(echo "$lines" | sort -u | grep -c .)" = 1 ] || { echo "ranks measured differently:"; echo "$lines"; ok=1; }
    echo "$lines" | head -1
    echo "$lines" | head -1 | grep -Eq "within a node [0-9.]+ us \+ [0-9.]+ ns/B, between nodes [0-9.]+ us \+ [0-9.]+ ns/B, a sum [0-9.]+ ns/B" ||
        { echo "no values"; ok=1; }
    echo "$out" | grep -q "machine measured: within a node 0.00 us" && { echo "a zero latency"; ok=1; }
    # the latencies taken again with the other ranks asleep, on both links,
    # and the model's alpha is the quiet one
    lines=$(echo "$out" | grep "coll:hanx: MPI_COMM_WORLD: latencies with the other ranks asleep: " | sed 's/^\[[^]]*\] //')
    echo "$lines" | head -1
    [ "$(echo "$lines" | grep -c .)" = 4 ] && [ "$(echo "$lines" | sort -u | grep -c .)" = 1 ] ||
        { echo "quiet latencies not on every rank alike"; ok=1; }
    local within quiet
    within=$(echo "$lines" | head -1 | sed -n 's/.*within a node \([-0-9.]*\) us, .*/\1/p')
    quiet=$(echo "$lines" | head -1 | sed -n 's/.*between nodes \([-0-9.]*\) us (busy.*/\1/p')
    awk -v a="$within" -v b="$quiet" 'BEGIN { exit !(a > 0 && b > 0) }' ||
        { echo "a quiet latency not measured ($within, $quiet us)"; ok=1; }
    echo "$out" | grep -q "machine measured: .*between nodes $quiet us + " ||
        { echo "the model's latency between nodes is not the quiet one ($quiet us)"; ok=1; }
    # the streams again with the other ranks asleep, whose ratio decides slow links: both
    # measured, and the verdict follows it (one node's shared memory both ways: fast)
    local a b verdict
    lines=$(echo "$out" | grep "coll:hanx: MPI_COMM_WORLD: machine measured: " | head -1)
    a=$(echo "$lines" | sed -n 's/.*asleep: within a node \([-0-9.]*\) ns\/B, .*/\1/p')
    b=$(echo "$lines" | sed -n 's/.*asleep: .*between nodes \([-0-9.]*\) ns\/B (links .*/\1/p')
    verdict=$(echo "$lines" | sed -n 's/.* (links \(slow\|fast\))$/\1/p')
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b > 0) }' ||
        { echo "a stream with the others asleep not measured ($a, $b ns/B)"; ok=1; }
    [ "$verdict" = "$(awk -v a="$a" -v b="$b" -v r="$(sed -n 's/^#define COLLX_SLOW_LINK_RATIO \([0-9]*\).*/\1/p' \
                        "$COLLX_SRCDIR/opal/collx/include/collx/collx.h")" \
                        'BEGIN { print (b >= r * a ? "slow" : "fast") }')" ] && [ "$verdict" = fast ] ||
        { echo "links said '$verdict' for $b against $a ns/B"; ok=1; }
    return $ok
)
step "coll_hanx_model_measure 1: the cost model's machine measured on each communicator, one result on every rank" \
    model_measure
model_one_flag() (  # the one flag: the measured model refines the built-in choice for bandwidth-bound calls, reductions aside
    local out ok=0 machine c
    unset OMPI_MCA_coll_hanx_tuning_file
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --big --colls "bcast,reduce,allreduce,allgather,ibcast,iallreduce" --seed 38)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    # measured by default, once: the communicators after the first take that result
    machine=$(echo "$out" | grep "coll:hanx: MPI_COMM_WORLD: machine \(measured\|as measured before\): " |
              sed 's/^\[[^]]*\] //; s/.*: machine [a-z ]*: //' | sort -u)
    [ "$(echo "$machine" | grep -c .)" = 1 ] || { echo "MPI_COMM_WORLD's ranks hold different machines:"; echo "$machine"; ok=1; }
    [ "$(echo "$out" | grep -c "machine as measured before")" -gt 0 ] ||
        { echo "no communicator took the measured machine of an earlier one"; ok=1; }
    # every call the model decided carries data of at least 16 latencies of the link between nodes
    # (allgather: one rank's block times the ranks) on the machine of its communicator: one of the
    # machines measured (the checker's communicators over some of the ranks, made after others,
    # may hold different last results and measure again; the model's lines do not name their
    # communicator, so a call is latency-bound where it is so on every machine); the printed
    # values are rounded: 1% slack
    local bad
    bad=$( { echo "$out" | grep "coll:hanx: .*: machine \(measured\|as measured before\): " |
               sed 's/^\[[^]]*\] //; s/.*: machine [a-z ]*: /M /' | sort -u
             echo "$out" | grep "coll:hanx: model: "; } | awk '
        $1 == "M" { for (i = 1; i <= NF; ++i) if ($i == "nodes") { ++k; a[k] = $(i + 1); b[k] = $(i + 4) / 1000 } next }
        { for (i = 1; i <= NF; ++i) {
              if ($i == "model:") c = $(i + 1)
              if ($i == "of" && $(i + 2) == "bytes") n = $(i + 1)
              if ($i == "up" && $(i + 1) == "to") p = $(i - 3) * ($(i + 2) + 0) }
          d = n * (c ~ /allgather|alltoall/ ? p : 1)
          latency = 1
          for (j = 1; j <= k; ++j) if (d * b[j] >= 0.99 * 16 * a[j]) latency = 0
          if (latency) print }' | head -3)
    [ -z "$bad" ] || { echo "the model decided latency-bound calls:"; echo "$bad"; ok=1; }
    [ "$(echo "$out" | grep -c "coll:hanx: model: ")" -gt 0 ] || { echo "the model decided no big call"; ok=1; }
    # never a reduction: a measured choice may change from run to run, and with it the bits
    echo "$out" | grep -Eq "coll:hanx: model: (reduce|allreduce) " && { echo "the model decided a reduction"; ok=1; }
    # what it chose ran: its LP chains are the only ones here, and the previous module's calls are
    # its choices and the fast links' hand-overs (one node: both links in shared memory)
    local chains model_prev fast runs
    chains=$(echo "$out" | grep -Ec "coll:hanx: model: .*: flat:pipeline$")
    [ "$chains" = "$(echo "$out" | grep -c "one collx pipeline tree over all ranks")" ] ||
        { echo "the model's LP chains and the runs differ"; ok=1; }
    model_prev=$(echo "$out" | grep -Ec "coll:hanx: model: .*: previous$")
    fast=$(echo "$out" | grep -c "previous module (links between nodes")
    runs=$(echo "$out" | grep -c "previous module (tuning)")
    [ $((model_prev + fast)) = "$runs" ] ||
        { echo "previous module: $model_prev model choices + $fast fast-link hand-overs, $runs runs"; ok=1; }
    [ "$fast" -gt 0 ] || { echo "no fast-link hand-over on one node"; ok=1; }
    # coll_hanx_model_measure 0: the built-in rules alone
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_model_measure 0 \
          "$CHECKER" --quick --big --colls "bcast,allreduce" --seed 38)
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "coll:hanx: model: \|machine measured" && { echo "coll_hanx_model_measure 0 not followed"; ok=1; }
    return $ok
)
step "the one flag: the machine measured once, the model deciding only bandwidth-bound calls that do not reduce, and what it chose runs" \
    model_one_flag
model_rules() (  # default_algorithm 4 with a tuning file: a rule's algorithm wins, a rule's segment feeds the model
    local out ok=0 f
    f=$(mktemp /tmp/collx-model-rules.XXXXXX.json)
    printf '%s\n' '{ "format": "collx-tuning", "version": 1, "rules": [' \
        '  { "collective": "bcast", "algorithm": "previous" },' \
        '  { "collective": "allreduce", "segment_bytes": 4096 } ] }' > "$f"
    out=$(logged local_run 300 4 $HANX 2 --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 4 \
          --mca coll_hanx_tuning_file "$f" "$CHECKER" --quick --colls "bcast,allreduce" --seed 36)
    rm -f "$f"
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "coll:hanx: model: bcast" && { echo "the model asked where a rule names the algorithm"; ok=1; }
    echo "$out" | grep -q "coll:hanx: bcast of [0-9]* bytes on .*: previous module (tuning)" || { echo "the rule's previous module did not run"; ok=1; }
    echo "$out" | grep -Eq "coll:hanx: model: allreduce of [0-9]+ bytes on .*, segments of 4096 bytes:" ||
        { echo "the model did not predict with the rule's segment"; ok=1; }
    return $ok
)
step "coll_hanx_default_algorithm 4 with a tuning file: a rule's algorithm is followed (no model), a rule's segment is the model's" \
    model_rules
# (pipelined: a call of one segment runs its stages one after the other either way)
HANX_SMALL_SEGS="--mca coll_hanx_bcast_segment_size 64 --mca coll_hanx_reduce_segment_size 40 --mca coll_hanx_allreduce_segment_size 24"
step "hanx blocking calls, small segments (serial schedules, the node's steps blocking): 2x2, 3 levels with collx trees" \
    eval 'local_run 300 4 $HANX 2 $HANX_SMALL_SEGS "$CHECKER" --quick --colls blocking --seed 9 &&
          local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 $HANX_TREES $HANX_SMALL_SEGS \
              "$CHECKER" --quick --colls blocking --seed 11'
step "hanx blocking calls with every step an i-collective (coll_hanx_blocking_schedule 1), small segments: 2x2 with the levels' modules and with the built-in trees, 3 levels with collx trees" \
    eval 'local_run 300 4 $HANX 2 --mca coll_hanx_blocking_schedule 1 $HANX_SMALL_SEGS \
              --mca coll_hanx_low_algorithm module --mca coll_hanx_up_algorithm module "$CHECKER" \
              --quick --colls blocking --seed 3 &&
          local_run 300 4 $HANX 2 --mca coll_hanx_blocking_schedule 1 $HANX_SMALL_SEGS "$CHECKER" --quick \
              --colls blocking --seed 5 &&
          local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 --mca coll_hanx_blocking_schedule 1 \
              $HANX_TREES $HANX_SMALL_SEGS "$CHECKER" --quick --seed 7'
# non-blocking hierarchical collectives (the core's schedules)
hanx_serves_nb() {  # hanx_serves_nb COLL: served once the hierarchy is built
    local_run 60 4 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 \
        --mca coll_hanx_verbose 10 "$CHECKER" --quick --colls "barrier,$1" --max-count 1 2>&1 |
        grep -q "coll:hanx: $1 "
}
for coll in ibcast ireduce iallreduce iallgather; do
    step "hanx serves MPI_${coll^} (synthetic 2-rank nodes)" hanx_serves_nb $coll
done
step "hanx non-blocking (ibcast, ireduce, iallreduce, iallgather, overlapped), 4 ranks as 2x2, $HALF1_NAME" \
    local_run 900 4 $HANX 2 "$CHECKER" --colls "$HANX_NB" $HALF1
step "hanx non-blocking, 5 ranks as 2+2+1 (imbalanced)" \
    local_run 300 5 $HANX 2 "$CHECKER" --quick --colls "$HANX_NB" --seed 3
step "hanx non-blocking, 7 ranks round-robin on 3 nodes" \
    local_run 300 7 $HANX 3 --mca coll_hanx_round_robin 1 "$CHECKER" --quick --colls "$HANX_NB" --seed 5
step "hanx non-blocking, 3 levels: 8 ranks as 2 nodes x 2 sockets x 2" \
    local_run 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 "$CHECKER" --quick --colls "$HANX_NB" --seed 7
step "hanx non-blocking, 3 levels, imbalanced: 7 ranks as (3+1) + 3" \
    local_run 300 7 $HANX 4 --mca coll_hanx_ranks_per_socket 3 "$CHECKER" --quick --colls "$HANX_NB" --seed 9
step "hanx non-blocking, pipelined: tiny segments, 6 ranks as 3x2" \
    local_run 300 6 $HANX 2 --mca coll_hanx_bcast_segment_size 64 --mca coll_hanx_reduce_segment_size 40 \
    --mca coll_hanx_allreduce_segment_size 24 "$CHECKER" --quick --colls "$HANX_NB" --seed 11
# (counts of 40,000 elements: 20 to 200 segments, many times the window in
# flight; the default 300,007 took 140 s of CI for no other path)
step "hanx non-blocking, pipelined: 8 KiB segments, counts of 40,000 elements, 6 ranks as 3x2" \
    local_run 600 6 $HANX 2 --mca coll_hanx_bcast_segment_size 8192 --mca coll_hanx_reduce_segment_size 8000 \
    --mca coll_hanx_allreduce_segment_size 8192 "$CHECKER" --quick --colls "$HANX_NB" --big --big-count 40000 --seed 11
step "hanx: persistent collectives, each started 3 times with new data, 4 ranks as 2x2" \
    local_run 300 4 $HANX 2 "$CHECKER" --quick --colls persistent
step "hanx over adaptx sub-communicators, 6 ranks as 3x2" \
    local_run 300 6 $HANX 2 --mca coll_adaptx_priority 90 "$CHECKER" --quick --colls blocking --seed 15
step "hanx on a single node falls back cleanly" \
    local_run 300 3 --mca coll_hanx_priority 100 "$CHECKER" --quick --colls blocking
for layout in "4 2" "4 2 --mca coll_hanx_round_robin 1" "4 3" "7 3 --mca coll_hanx_round_robin 1"; do
    set -- $layout
    np=$1 rpn=$2
    shift 2
    step "upstream han bug regressions (ompi #8248 ... #13398), $np ranks, nodes of $rpn${1:+ round-robin}" \
        local_run 300 $np $HANX $rpn "$@" "$REGRESS"
done
step "communicator lifecycle and finalize (hanx + adaptx)" \
    local_run 300 4 $HANX 2 --mca coll_adaptx_priority 90 "$LIFECYCLE" 200

# --- tuning files: rules are followed, a bad file is reported and ignored
TUNING_OK=$(mktemp) TUNING_BAD=$(mktemp)
cat >"$TUNING_OK" <<'JSON'
{ "format": "collx-tuning", "version": 1,
  "rules": [
    { "collective": "allreduce", "bytes": [0, 1023], "algorithm": "previous" },
    { "collective": "allreduce", "segment_bytes": 512 },
    { "collective": "bcast", "nodes": [2, null], "segment_bytes": 100 } ] }
JSON
printf '{ "format": "collx-tuning", "version": 1,\n  "rules": [\n    { "collective": "allreduce", "segment_bytes": "64k" } ] }\n' >"$TUNING_BAD"
tuning_followed() {
    local out
    out=$(local_run 120 4 $HANX 2 --mca coll_hanx_tuning_file "$TUNING_OK" --mca coll_hanx_verbose 20 \
          "$CHECKER" --quick --colls allreduce,bcast --seed 2 2>&1)
    echo "$out" | tail -1
    echo "$out" | grep -q " 0 failed" &&
    echo "$out" | grep -q "allreduce of [0-9]* bytes on .*: previous module (tuning)" &&
    echo "$out" | grep -q "allreduce of [0-9]* bytes: rule 2 (line 4): default, segments of 512 bytes" &&
    echo "$out" | grep -q "bcast of [0-9]* bytes: rule 3 (line 5): default, segments of 100 bytes"
}
step "hanx follows a tuning file (previous module, segment sizes), results right" tuning_followed
tuning_bad() {
    local out
    out=$(local_run 120 4 $HANX 2 --mca coll_hanx_tuning_file "$TUNING_BAD" \
          "$CHECKER" --quick --colls allreduce --seed 2 2>&1)
    echo "$out" | tail -1
    echo "$out" | grep -q " 0 failed" &&
    echo "$out" | grep -q "File: *$TUNING_BAD" &&
    echo "$out" | grep -q "$(basename "$TUNING_BAD"):3: rule 1: \"segment_bytes\" must be an integer"
}
step "a bad tuning file is reported with file and line, then defaults" tuning_bad
builtin_defaults() {  # no tuning file: large alltoall blocks go to the previous module
    local out
    out=$(OMPI_MCA_coll_hanx_tuning_file= local_run 120 4 $HANX 2 --mca coll_hanx_verbose 10 \
          --mca coll_hanx_model_measure 0 "$CHECKER" --quick --colls alltoall,allgather --seed 4 2>&1)
    echo "$out" | tail -1
    echo "$out" | grep -q " 0 failed" &&
    echo "$out" | grep -q "alltoall of 508 bytes on .*: previous module (tuning)" &&
    echo "$out" | grep -q "coll:hanx: alltoall count 1 " &&
    echo "$out" | grep -q "coll:hanx: allgather count 1 " &&
    echo "$out" | grep -q "coll:hanx: allgather count [0-9]\{3,\} "
}
step "built-in defaults: small alltoall blocks hierarchical, large ones to the previous module; allgather hanx's at every size (the levels, the node ring from 32 KiB blocks)" builtin_defaults
rm -f "$TUNING_OK" "$TUNING_BAD"

# --- bad MCA values: a clear message naming the parameter, then defaults
bad_params() {
    local out
    out=$(OMPI_MCA_coll_adaptx_bcast_segment_size=-5 OMPI_MCA_coll_adaptx_bcast_algorithm=nonsense \
          OMPI_MCA_coll_hanx_ranks_per_node=-1 ompi_info --param coll all --level 9 2>&1)
    echo "$out" | grep -q "Parameter: coll_adaptx_bcast_segment_size" &&
    echo "$out" | grep -q "default value (0) is used" &&
    echo "$out" | grep -q "Parameter: coll_adaptx_bcast_algorithm" &&
    echo "$out" | grep -q "Parameter: coll_hanx_ranks_per_node" &&
    echo "$out" | grep -q "coll_hanx_priority"
}
step "nonsense MCA values are reported and replaced by defaults" bad_params
bad_values_run() {  # and a job with them still computes right
    local_run 120 3 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_segment_size -5 \
        --mca coll_adaptx_max_send_requests 0 --mca coll_adaptx_allreduce_algorithm bogus \
        --mca coll_adaptx_reduce_fanout 0 "$CHECKER" --quick --colls "$ALL_ADAPTX"
}
step "a job with nonsense MCA values still runs correctly" bad_values_run

finish
