#!/bin/bash
# Faults on 2 emulated nodes: a rank that kills itself (SIGKILL) in the
# middle of a loop of broadcasts and allreduces, under coll/hanx and under
# coll/adaptx, must make mpirun exit non-zero within a generous bound (a
# hang detector, not a performance assertion) and leave no process behind.
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: emulated nodes need root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }

export COLLX_CLUSTER_TAG="f$$"
PROG="$COLLX_BUILDDIR/test/mpi/fault_kill"
BOUND=${COLLX_FAULT_BOUND:-60}   # seconds

survivors() {  # live (not zombie) processes of the program, after a grace period
    local n k
    for k in 1 2 3 4 5 6 7 8 9 10; do
        n=$(ps -eo stat=,comm= | awk '$2 == "fault_kill" && $1 !~ /^Z/' | wc -l)
        [ "$n" = 0 ] && return 0
        sleep 1
    done
    echo "$n fault_kill process(es) still alive"
    return 1
}

killed_run() {  # killed_run WHAT cluster/mpirun options... -- program options
    local t0 rc secs out
    # cluster.sh's own limit is well above the bound: we want to see mpirun
    # end by itself, and cluster.sh to kill it only if it really hangs
    local limit=$((BOUND * 3 > 60 ? BOUND * 3 : 60))
    t0=$(date +%s)
    out=$("$CLUSTER" -n 2 -m 2 --timeout $limit -- "$@" 2>&1)
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    echo "$out" | tail -8
    echo "mpirun exit $rc after ${secs}s (bound ${BOUND}s)"
    echo "  $* -> exit $rc after ${secs}s" >>"$TIMES"
    echo "$out" | grep -q "kills itself" || { echo "the victim never ran"; return 1; }
    [ $rc != 0 ] || { echo "mpirun exited 0 although a rank died"; return 1; }
    [ $rc != 124 ] || { echo "hang: cluster.sh had to kill the run"; return 1; }
    [ $secs -le $BOUND ] || { echo "mpirun took longer than ${BOUND}s"; return 1; }
    survivors
}
TIMES=$(mktemp)
trap 'rm -f "$TIMES"' EXIT
HANX="--mca coll_hanx_priority 100"
ADAPTX="--mca coll_adaptx_priority 100"
step "hanx: a non-leader rank killed mid-loop, mpirun exits non-zero in time, nothing left" \
    killed_run $HANX "$PROG" --victim 3 --at 300
step "hanx: a node leader killed mid-loop, mpirun exits non-zero in time, nothing left" \
    killed_run $HANX "$PROG" --victim 2 --at 300 --count 65536
step "adaptx: a rank killed mid-loop (pipeline tree), mpirun exits non-zero in time" \
    killed_run $ADAPTX --mca coll_adaptx_bcast_algorithm pipeline \
    --mca coll_adaptx_allreduce_algorithm pipeline "$PROG" --victim 1 --at 300 --count 65536
step "adaptx: rank 0 (the first root) killed mid-loop, mpirun exits non-zero in time" \
    killed_run $ADAPTX "$PROG" --victim 0 --at 301
# the same program without a victim ends normally: the check above is
# about the fault, not about the program failing anyway
step "without a victim the loop completes and mpirun exits 0 (control)" \
    "$CLUSTER" -n 2 -m 2 --timeout 120 -- $HANX "$PROG" --victim -1 --iters 500
echo "fault exit times (mpirun start to exit, 2 nodes x 2 ranks):"
sed "s|$PROG|fault_kill|; s|--mca coll_||g" "$TIMES"
: >"$TIMES"
# the detector can fail: a run where nobody dies (exit 0), and one that
# outlives a bound of 1 s (its victim sleeps 3 s first: however fast the
# machine, the run is slower than the bound)
step "self-test: a run where nobody dies is reported" \
    eval '! killed_run $HANX "$PROG" --victim -1 --iters 300'
step "self-test: a run slower than the bound is reported (bound 1 s)" \
    eval '! BOUND=1 killed_run $HANX "$PROG" --victim 3 --at 40 --delay 3'
finish
