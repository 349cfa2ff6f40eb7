#!/bin/bash
# Integration tests on 2 emulated nodes (network namespaces, see
# cluster.sh): the differential checker through coll/adaptx and coll/hanx
# on block, imbalanced (3+1) and round-robin layouts, and the lifecycle test.
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: emulated nodes need root"; exit 77; }

export COLLX_CLUSTER_TAG="t$$"  # our runs' namespaces: cxt<pid>p<pid>-*
nodes() { "$CLUSTER" "$@"; }

# the links' TCP congestion control is the emulation's, not the host's
# (cluster.sh --cc; bbr made every call after a process's first large
# message up to 2x slower)
congestion() {  # congestion WANT [cluster.sh options]: what every rank's node runs
    local want=$1 got; shift
    got=$(nodes -n 2 -m 1 --timeout 60 "$@" -- cat /proc/sys/net/ipv4/tcp_congestion_control | sort | uniq -c)
    echo "ranks' nodes: $got"
    [ "$(echo $got)" = "2 $want" ]
}
step "the emulated nodes' TCP runs cubic by default, whatever the host runs" congestion cubic
step "... and the congestion control cluster.sh --cc names (reno)" congestion reno --cc reno
step "adaptx serves MPI_Bcast on 2 nodes" served_by adaptx bcast nodes -n 2 -m 2 --timeout 120 --
step "adaptx checker, 2x2, every collective, $HALF2_NAME + big counts" \
    nodes -n 2 -m 2 --timeout 600 -- --mca coll_adaptx_priority 100 "$CHECKER" --colls "$ALL_ADAPTX" $HALF2 --big
for tree in $ADAPTX_TREES; do
    step "adaptx $tree tree, 3+1 round-robin, every collective" \
        adaptx_tree $tree nodes -n 2 --slots 3,1 --timeout 300 -- --map-by node
done
# ompi #11168: upstream adapt hangs on large reductions over rendezvous
for coll in reduce allreduce; do
    step "adaptx $coll of 8-32 MiB on 2 nodes completes and validates (ompi #11168)" \
        nodes -n 2 -m 2 --timeout 300 -- --mca coll_adaptx_priority 100 \
        "$COLLX_BUILDDIR/collx-bench" --coll $coll --min 8388608 --max 33554432 --reps 1 \
        --time-per-rep 0
done
step "hanx serves MPI_Bcast on 2 nodes" served_by hanx bcast nodes -n 2 -m 2 --timeout 120 --
# a rule's "low"/"up": its own set of sub-communicators, where the
# preferred module serves (adaptx here, whose priority leaves it out
# otherwise: the control run must not see it)
views() {  # views yes|no: with or without test/mpi/tuning/views.json
    local out file=$COLLX_SRCDIR/contrib/tuning/hierarchical.json
    [ "$1" = yes ] && file=$COLLX_SRCDIR/test/mpi/tuning/views.json
    out=$(logged nodes -n 2 -m 2 --timeout 300 -- --mca coll_hanx_priority 100 --mca coll_hanx_verbose 1 \
          --mca coll_adaptx_verbose 10 --mca coll_hanx_tuning_file "$file" \
          "$CHECKER" --quick --colls bcast,reduce,allreduce,allgather,alltoall)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    local made served
    made=$(echo "$out" | grep -c 'MPI_COMM_WORLD: sub-communicators with low "basic,^hanx,han", up "adaptx,tuned,^hanx,han"')
    # (sub-communicators are "MPI COMMUNICATOR 5 SPLIT ..." in Open MPI 4.1, "MPI COMM 5 SPLIT ..." in 5.0)
    served=$(echo "$out" | grep -Ec "coll:adaptx: (bcast|reduce|iallreduce|allgather) count [0-9]+ on MPI COMM(UNICATOR)? [0-9]+ SPLIT")
    echo "sets with basic/adaptx,tuned on MPI_COMM_WORLD: $made, calls adaptx served on sub-communicators: $served"
    if [ "$1" = yes ]; then [ "$made" = 4 ] && [ "$served" -gt 0 ]; else [ "$made" = 0 ] && [ "$served" = 0 ]; fi
}
step "hanx honours a rule's low/up: sub-communicators per pair, adaptx serves there, results checked" \
    views yes
step "... and without those rules adaptx serves nothing (the control)" views no
step "hanx checker, 2x2, every blocking collective, $HALF2_NAME" \
    nodes -n 2 -m 2 --timeout 900 -- --mca coll_hanx_priority 100 "$CHECKER" --colls blocking $HALF2
step "hanx checker, 2x2, big counts (pipelined bcast/reduce/allreduce, allgather, alltoall)" \
    nodes -n 2 -m 2 --timeout 900 -- --mca coll_hanx_priority 100 "$CHECKER" \
    --colls bcast,reduce,allreduce,allgather,alltoall --quick --big
step "persistent collectives under hanx (2x2) and adaptx (3+1 round-robin), started 3 times each with new data" \
    eval 'nodes -n 2 -m 2 --timeout 300 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --colls persistent &&
          nodes -n 2 --slots 3,1 --timeout 300 -- --map-by node --mca coll_adaptx_priority 100 "$CHECKER" --quick --colls persistent'
step "hanx non-blocking (ibcast, ireduce, iallreduce, iallgather, overlapped), 2x2, $HALF2_NAME" \
    nodes -n 2 -m 2 --timeout 900 -- --mca coll_hanx_priority 100 "$CHECKER" --colls "$HANX_NB" $HALF2
step "hanx non-blocking, 3+1 (imbalanced)" \
    nodes -n 2 --slots 3,1 --timeout 300 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --colls "$HANX_NB" --seed 13
step "hanx non-blocking, 3+2 round-robin, pipelined with small segments" \
    nodes -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
    --mca coll_hanx_bcast_segment_size 512 --mca coll_hanx_reduce_segment_size 256 \
    --mca coll_hanx_allreduce_segment_size 128 "$CHECKER" --quick --colls "$HANX_NB" --seed 19
step "hanx checker, 3+1 (imbalanced), every blocking collective" \
    nodes -n 2 --slots 3,1 --timeout 300 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --colls blocking --seed 13
step "hanx checker, 2x2 round-robin placement, every blocking collective" \
    nodes -n 2 -m 2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 "$CHECKER" --quick --colls blocking --seed 17
step "hanx checker, 3+2 round-robin, pipelined with small segments" \
    nodes -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
    --mca coll_hanx_bcast_segment_size 512 --mca coll_hanx_reduce_segment_size 256 \
    --mca coll_hanx_allreduce_segment_size 128 "$CHECKER" --quick --seed 19
step "hanx with collx trees on its levels, blocking calls on the schedules, 3+2 round-robin, small segments" \
    nodes -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
    --mca coll_hanx_low_algorithm pipeline --mca coll_hanx_up_algorithm binomial \
    --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_bcast_segment_size 512 \
    --mca coll_hanx_reduce_segment_size 256 --mca coll_hanx_allreduce_segment_size 128 \
    "$CHECKER" --quick --colls "blocking,$HANX_NB" --seed 23
for case in 8248 11441 11473 11545 11664 12383 12438 13200 13398; do
    step "upstream han bug ompi #$case: 2x2, 3+1 and round-robin" \
        eval 'nodes -n 2 -m 2 --timeout 120 -- --mca coll_hanx_priority 100 "$REGRESS" --case $case &&
              nodes -n 2 --slots 3,1 --timeout 120 -- --mca coll_hanx_priority 100 "$REGRESS" --case $case &&
              nodes -n 2 -m 2 --timeout 120 -- --map-by node --mca coll_hanx_priority 100 "$REGRESS" --case $case'
done
# non-commutative reductions (reduce, allreduce, reduce_scatter, scan,
# exscan): through the levels when nodes hold contiguous ranks; gathered and
# folded in rank order on round-robin placements -- never handed back
flat_previous() (  # the fast links' blocking hand-overs run on Open MPI's flat modules, also where the previous module is upstream han
    # (2 x 2 unlimited: hanx measures fast links; a kept machine, so that allreduce hands over
    # too; collx-bench checks each result; upstream han's own reduce crashes on the checker's
    # datatypes in Open MPI 4.1.4, so collx-bench's ints)
    local d out ok=0 c hp
    unset OMPI_MCA_coll_hanx_tuning_file
    d=$(mktemp -d) || return 1
    run() {  # run COLL [mpirun args]: one call of 1 MiB under hanx, verbose 10
        local coll=$1; shift
        nodes -n 2 -m 2 --timeout 120 -- --mca coll_hanx_priority 100 --mca coll_hanx_verbose 10 \
            --mca coll_hanx_model_cache "$d/machines" "$@" "$COLLX_BUILDDIR/collx-bench" \
            --coll "$coll" --min 1048576 --max 1048576 --reps 1 --warmup 0 --time-per-rep 0.000001 2>&1
    }
    for c in bcast allreduce allgather; do
        out=$(run $c --mca coll_han_priority 50)  # (upstream han the previous module)
        echo "$out" | grep -q "coll:hanx: MPI_COMM_WORLD: the previous module is not Open MPI's flat one" ||
            { echo "$c: no communicator for Open MPI's flat modules"; echo "$out" | grep -m1 "machine"; ok=1; }
        [ "$(echo "$out" | grep -c "coll:hanx: $c of 1048576 bytes on 2 nodes: previous module (links")" -gt 0 ] ||
            { echo "$c: not handed to the previous module"; ok=1; }
        [ "$(echo "$out" | grep -c "coll:hanx: the previous module's call on .*, Open MPI's flat modules")" -gt 0 ] ||
            { echo "$c: the hand-over did not run on Open MPI's flat modules"; ok=1; }
        echo "$out" | grep -q "^$c 1048576 " || { echo "$c: no result"; echo "$out" | tail -3; ok=1; }
    done
    # the control: where han stays below tuned (Open MPI 4.1's default) the previous module is
    # tuned itself, and no communicator is made (5.0 puts han above tuned by default)
    hp=$(ompi_info --param coll han --level 9 --parsable 2>/dev/null |
         sed -n 's/^mca:coll:han:param:coll_han_priority:value://p')
    if [ "${hp:-0}" -lt 30 ]; then
        out=$(run bcast)
        [ "$(echo "$out" | grep -c "coll:hanx: bcast of 1048576 bytes on 2 nodes: previous module (links")" -gt 0 ] ||
            { echo "control: bcast not handed to the previous module"; ok=1; }
        ! echo "$out" | grep -q "not Open MPI's flat one" || { echo "control: a communicator made though tuned is the previous module"; ok=1; }
    fi
    rm -rf "$d"
    return $ok
)
step "fast links' hand-overs (bcast, allreduce, allgather of 1 MiB, 2x2) run on Open MPI's flat modules, also where upstream han is the previous module" \
    flat_previous
noncomm() {  # noncomm EXPECT(levels|folded) cluster-options... -- mpirun-options...
    local expect=$1 out; shift
    out=$(logged nodes "$@" --mca coll_hanx_priority 100 --mca coll_hanx_verbose 10 \
          "$CHECKER" --quick --colls reduce,allreduce,reduce_scatter,scan,exscan --seed 29)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    # (not "previous modules": flat comms; and not the i-collectives Open MPI
    # itself runs while it makes the checker's communicators, before their
    # hierarchy is built: none of the reductions under test)
    ! echo "$out" | grep -v "hierarchy not built yet" | grep -Eq "previous module($| \()" || return 1
    if [ "$expect" = folded ]; then echo "$out" | grep -q "gathered and folded in rank order"
    else ! echo "$out" | grep -q "gathered and folded"; fi
}
step "the front door's flat collx trees (tuning file), 3+1 round-robin: the topo tree on the real nodes" \
    flat_trees nodes -n 2 --slots 3,1 --timeout 300 -- --map-by node --mca coll_hanx_priority 100
step "split-rail allreduce (tuning file), 2x2 round-robin: rails across the real nodes" \
    split_rails ran nodes -n 2 -m 2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100
step "the node ring allgather (tuning file), 3+2 round-robin: every rank's block round the real nodes" \
    node_ring nodes -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100
step "hanx non-commutative reductions and scans go through the levels on 3+1 blocks" \
    noncomm levels -n 2 --slots 3,1 --timeout 300 --
step "hanx non-commutative reductions and scans on round-robin: gathered and folded in order" \
    noncomm folded -n 2 -m 2 --timeout 300 -- --map-by node
step "communicator lifecycle and finalize on 2 nodes" \
    nodes -n 2 -m 2 --timeout 300 -- --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 \
    "$LIFECYCLE" 100
# contrib/bench.sh's lower bound is a bound: no measured time of any
# contender undercuts it (not a timing assertion: noise only adds time),
# and the rate-limited links drop nothing
bench_bound() {  # bench_bound [--rate RATE]
    local dir rc
    dir=$(mktemp -d) || return 1
    COLLX_CLUSTER_TAG=$COLLX_CLUSTER_TAG "$COLLX_SRCDIR/contrib/bench.sh" -n 2 -m 2 "$@" \
        --colls bcast,reduce,allreduce,allgather,alltoall,reduce_scatter,barrier,iallreduce \
        --min 8 --max 2097152 --factor 16 --rounds 1 --reps 3 --contenders "tuned hanx adaptx" \
        --upstream tuned --csv "$dir/r.csv" --json "$dir/r.json" --no-plot > "$dir/table" 2>&1
    rc=$?
    grep -E "^link|drops" "$dir/table"
    [ $rc = 0 ] || { tail -20 "$dir/table"; rm -rf "$dir"; return 1; }
    # every point has a bound; none is beaten (min_us, col. 6, against bound_us, col. 13)
    awk -F, 'NR > 1 { ++n; if ($13 == "") { print "no bound: " $0; bad = 1 }
                      else if ($6 + 0 < $13 + 0) { print "beaten: " $0; bad = 1 }
                      if ($13 / $6 > worst) { worst = $13 / $6; w = $1 " " $2 " " $3 } }
             END { printf "%d points; the closest: %s, bound %.0f%% of its fastest sample\n", n, w, 100 * worst
                   exit bad || n < 100 }' "$dir/r.csv" || rc=1
    if [ "$1" = --rate ]; then
        grep -q '"link_counters": {"tuned": {"drops": 0,' "$dir/r.json" &&
            ! grep -Eq '"drops": [1-9]' "$dir/r.json" || { echo "packets dropped"; rc=1; }
    fi
    rm -rf "$dir"
    return $rc
}
step "bench.sh: no measurement beats the alpha-beta bound (2x2, unlimited links)" bench_bound
step "bench.sh: ... nor on lossless 1 Gbit/s links, which drop no packet" bench_bound --rate 1gbit
fails() { ! "$@"; }
step "a failing program makes the run fail" fails nodes -n 2 -m 1 --timeout 60 -- false
step "a hung program is killed at the time limit" fails nodes -n 2 -m 1 --timeout 3 -- sleep 60
leftovers() { ! ip netns list | grep -q "^cx${COLLX_CLUSTER_TAG}p"; }
step "no namespaces left behind, even after failures" leftovers

finish
