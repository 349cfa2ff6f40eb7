# Shared by the test scripts (sourced).  Environment from `make check`:
# COLLX_BUILDDIR, COLLX_SRCDIR, OMPI_PKGLIBDIR, MPIRUN.
: "${COLLX_BUILDDIR:?run through make check}"
: "${OMPI_PKGLIBDIR:?run through make check}"
MPIRUN=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# load our freshly built components: first in the path wins, so a copy
# installed in the system directory does not shadow the build; the system
# directory must stay in the path for Open MPI's own components
export OMPI_MCA_mca_base_component_path="$COLLX_BUILDDIR/.libs:$OMPI_PKGLIBDIR"
# Open MPI 5's PMIx reads that path too and names every file in it that is
# not one of its own plugins; quiet (no effect on 4.1)
export PMIX_MCA_mca_base_component_show_load_errors=0
# hanx's own algorithms at every size in every test (its built-in defaults
# hand large allgather/alltoall blocks back; a step checks that separately)
export OMPI_MCA_coll_hanx_tuning_file="$COLLX_SRCDIR/contrib/tuning/hierarchical.json"
# every run measures its machine, as the steps expect: none kept from one
# run to the next (coll_hanx_model_cache; check-1node's step model_cache
# checks the file)
export OMPI_MCA_coll_hanx_model_cache=none
CHECKER="$COLLX_BUILDDIR/test/mpi/collx_check"
# The checker's full matrix in the long steps, or with COLLX_QUICK=1 (CI's
# second series, Open MPI 5.0: the full matrices run on 4.1) its quick one.
# The full matrix of each component's 2x2 steps is dealt out in two
# disjoint halves (collx_check --part): check-1node runs the first on ranks
# grouped as 2x2 in one node, check-2nodes the second on 2 emulated nodes
# (the same hierarchy over shared memory or TCP), so each case runs once
# per suite and each transport sees half of them.
if [ "${COLLX_QUICK:-0}" = 1 ]; then
    MATRIX=--quick MATRIX_NAME="quick matrix"
    HALF1=--quick HALF2=--quick HALF1_NAME="quick matrix" HALF2_NAME="quick matrix"
else
    MATRIX="" MATRIX_NAME="full matrix"
    HALF1="--part 0/2" HALF1_NAME="full matrix, first half (the second: check-2nodes)"
    HALF2="--part 1/2" HALF2_NAME="full matrix, second half (the first: check-1node)"
fi
LIFECYCLE="$COLLX_BUILDDIR/test/mpi/comm_lifecycle"
REGRESS="$COLLX_BUILDDIR/test/mpi/han_regress"
CLUSTER="$COLLX_SRCDIR/test/cluster/cluster.sh"

failures=0
step() {  # step "what" command...: run, show the verdict line, count failures
    local what=$1; shift
    local t0=$(date +%s) log rc
    log=$(mktemp)
    "$@" >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        echo "PASS: $what ($(( $(date +%s) - t0 ))s) $(grep -E 'passed|errors' "$log" | tail -1)"
    else
        failures=$((failures + 1))
        echo "FAIL: $what (exit $rc)"
        echo "---- last lines of its output ----"
        tail -40 "$log"
        echo "----"
    fi
    rm -f "$log"
}

# mpirun on this machine only, under a time limit (a hang is a failure)
local_run() {  # local_run SECONDS NP mpirun-args...
    local tmo=$1 np=$2; shift 2
    timeout -k 10 "$tmo" "$MPIRUN" -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
        --mca btl self,vader "$@"
}

# logged runner... CHECKER-ARGS: the checker with --stderr into a fresh
# directory; prints the run's own output, then every rank's stderr file.
# For steps that count verbose lines or assert one is absent: mpirun
# forwards the ranks' output in chunks that may end inside a line, and a
# line spliced from two ranks' pieces can match or miss a pattern.
logged() {
    local dir rc
    dir=$(mktemp -d) || return 1
    "$@" --stderr "$dir" 2>&1
    rc=$?
    cat "$dir"/rank.* 2>/dev/null
    rm -rf "$dir"
    return $rc
}

# the front door's flat collx trees: a rule's "flat:TREE" runs the whole
# call as one collx tree over all ranks (test/mpi/tuning/flat.json)
FLAT_COLLS="bcast,reduce,allreduce,ibcast,ireduce,iallreduce,overlap"
flat_trees() {  # flat_trees RUNNER...: results right, every rule's tree (and the levels) ran
    local out want ok=0
    out=$(logged "$@" --mca coll_hanx_verbose 10 \
          --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/flat.json" \
          "$CHECKER" --quick --colls "$FLAT_COLLS" --seed 23)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    for want in "bcast .*knomial" "bcast .*pipeline" "ibcast .*knomial" "ibcast .*pipeline" \
                "reduce .*in_order_binomial" "reduce .*topo" "ireduce .*topo" \
                "allreduce .*: one collx binomial" "allreduce .*pipeline" "iallreduce .*pipeline" \
                "allreduce .*recursive_doubling" "iallreduce .*recursive_doubling"; do
        echo "$out" | grep -Eq "coll:hanx: $want tree over all ranks" || { echo "never ran: $want"; ok=1; }
    done
    echo "$out" | grep -q "coll:hanx: bcast levels (innermost first)" || { echo "no bcast on the levels"; ok=1; }
    echo "$out" | grep -Eq "coll:hanx: i?(reduce|allreduce) levels" && { echo "a reduction left its flat tree"; ok=1; }
    return $ok
}
# split rails: a rule's "split" runs allreduce as a reduce-scatter in the
# node, an allreduce per rail and an allgather in the node, blocking and
# non-blocking; reduce_scatter(_block) as a reduce-scatter in the node and
# one per rail (test/mpi/tuning/split.json)
SPLIT_COLLS="barrier,allreduce,iallreduce,reduce_scatter,reduce_scatter_block,overlap"
split_rails() {  # split_rails ran|levels RUNNER...: results right; split rails ran (or, on
                 # nodes of different sizes, the levels served every allreduce)
    local expect=$1 out ok=0; shift
    out=$(logged "$@" --mca coll_hanx_verbose 10 \
          --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/split.json" \
          "$CHECKER" --quick --colls "$SPLIT_COLLS" --seed 29)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    if [ "$expect" = ran ]; then
        echo "$out" | grep -Eq "coll:hanx: allreduce count [0-9]+ on .*: split rails$" || { echo "no split allreduce"; ok=1; }
        echo "$out" | grep -Eq "coll:hanx: iallreduce count [0-9]+ on .*: split rails$" || { echo "no split iallreduce"; ok=1; }
        echo "$out" | grep -Eq "coll:hanx: reduce_scatter on .*: split rails$" || { echo "no split reduce_scatter"; ok=1; }
        echo "$out" | grep -Eq "coll:hanx: reduce_scatter_block count [0-9]+ on .*: split rails$" ||
            { echo "no split reduce_scatter_block"; ok=1; }
    else
        echo "$out" | grep -Eq ": split rails$" && { echo "split rails on nodes of different sizes"; ok=1; }
        echo "$out" | grep -q "split rails cannot run (nodes of different sizes" || { echo "no hand-over said"; ok=1; }
    fi
    return $ok
}
# the node ring: a rule's "node_ring" runs allgather and allgatherv,
# blocking and not, as every rank's block broadcast at once round the nodes
# (test/mpi/tuning/node-ring.json: in 256-byte segments)
NODE_RING_COLLS="allgather,allgatherv,iallgather,overlap"
node_ring() {  # node_ring RUNNER...: results right, every form ran on the node ring
    local out
    out=$(logged "$@" --mca coll_hanx_verbose 10 \
          --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/node-ring.json" \
          "$CHECKER" --quick --colls "$NODE_RING_COLLS" --seed 37)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    node_ring_ran "$out"
}
node_ring_ran() {  # node_ring_ran OUTPUT: allgather, allgatherv and iallgather each said they ran on the node ring
    local c ok=0
    for c in allgather allgatherv iallgather; do
        echo "$1" | grep -q "coll:hanx: $c on .*: node ring" || { echo "no $c on the node ring"; ok=1; }
    done
    return $ok
}
# The component really served the calls: with verbose 10 it logs each one.
served_by() {  # served_by COMPONENT COLLECTIVE runner...
    local comp=$1 coll=$2; shift 2
    "$@" --mca coll_${comp}_priority 100 --mca coll_${comp}_verbose 10 \
        "$CHECKER" --quick --colls "$coll" --max-count 1 2>&1 | grep -q "coll:$comp: $coll "
}

HANX_COLLS="bcast reduce allreduce barrier gather gatherv allgather allgatherv scatter scatterv
    alltoall alltoallv reduce_scatter reduce_scatter_block scan exscan"
ALL_ADAPTX="bcast,reduce,allreduce,ibcast,ireduce,iallreduce,overlap"
# hanx's non-blocking collectives: a blocking barrier first on every
# communicator of the checker builds the hierarchy (an i-collective never
# builds it: the previous module serves until then)
HANX_NB="barrier,ibcast,ireduce,iallreduce,iallgather,ireduce_scatter,ireduce_scatter_block,overlap"
ADAPTX_TREES="binomial in_order_binomial binary knomial chain pipeline linear topo ring recursive_doubling"
# every adaptx collective on one tree, small segments so that all paths run
adaptx_tree() {  # adaptx_tree TREE runner...
    local tree=$1; shift
    "$@" --mca coll_adaptx_priority 100 \
        --mca coll_adaptx_bcast_algorithm "$tree" --mca coll_adaptx_reduce_algorithm "$tree" \
        --mca coll_adaptx_allreduce_algorithm "$tree" --mca coll_adaptx_bcast_fanout 3 \
        --mca coll_adaptx_reduce_fanout 2 --mca coll_adaptx_allreduce_fanout 3 \
        --mca coll_adaptx_bcast_segment_size 256 --mca coll_adaptx_reduce_segment_size 200 \
        --mca coll_adaptx_allreduce_segment_size 128 --mca coll_adaptx_max_send_requests 2 \
        --mca coll_adaptx_max_recv_requests 3 "$CHECKER" --quick --colls "$ALL_ADAPTX" --seed 9
}

finish() {
    echo "$failures step(s) failed"
    [ $failures = 0 ]
}
