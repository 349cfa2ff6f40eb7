#!/bin/bash
# Randomised differential testing (test/mpi/collx_fuzz), concurrency
# (test/mpi/threads) and determinism of reductions (test/mpi/determinism),
# the fast subset for `make check` (~2-3 minutes on 2
# cores).  Every fuzz step prints, on a mismatch or a hang, the seed, the
# case and a one-line reproducer.  The nightly-sized run (>= 10,000 cases)
# is contrib/fuzz-nightly.sh.  docs/reliability.md explains both.
. "$(dirname "$0")/common.sh"
FUZZ="$COLLX_BUILDDIR/test/mpi/collx_fuzz"
THREADS="$COLLX_BUILDDIR/test/mpi/threads"
DETERMINISM="$COLLX_BUILDDIR/test/mpi/determinism"
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node"
# collx trees run by hanx on its levels (instead of the levels' Open MPI modules)
HANX_TREES="--mca coll_hanx_low_algorithm pipeline --mca coll_hanx_up_algorithm binomial"
ADAPTX_COLLS=bcast,reduce,allreduce,ibcast,ireduce,iallreduce
# every fuzz step: a hang of one case is reported by the program itself
# (--case-timeout); the outer timeout only catches what is left
fuzz() {  # fuzz SECONDS NP mpirun-args... -- fuzz-args...
    local tmo=$1 np=$2 a=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    local_run "$tmo" "$np" "${a[@]}" "$FUZZ" --case-timeout 60 "$@"
}
# passes only if the run fails: the self-test must be able to fail
must_fail() { ! "$@"; }

# --- the checker itself
step "fuzz self-test: a corrupted result of every collective kind is reported, 4 ranks" \
    fuzz 120 4 -- --self-test
step "fuzz self-test fails when the checker is disabled (proves the self-test can fail)" \
    must_fail fuzz 120 4 -- --self-test --break-checker --colls bcast,allreduce,igather

# --- hanx on synthetic nodes
step "fuzz hanx, 4 ranks as 2x2, 600 cases of the blocking collectives" \
    fuzz 300 4 $HANX 2 -- --seed 101 --cases 600 --colls blocking --components-under-test hanx
step "fuzz hanx, 7 ranks round-robin on 3 nodes, 300 cases" \
    fuzz 300 7 $HANX 3 --mca coll_hanx_round_robin 1 -- --seed 102 --cases 300 --colls blocking \
    --components-under-test hanx
step "fuzz hanx, 5 ranks as 2+2+1 (odd layout), 300 cases incl. non-blocking" \
    fuzz 300 5 $HANX 2 -- --seed 103 --cases 300 --components-under-test hanx
step "fuzz hanx, 6 ranks as 3x2, small segments (4 KiB / 4000 B / 2 KiB), 300 cases" \
    fuzz 300 6 $HANX 2 --mca coll_hanx_bcast_segment_size 4096 --mca coll_hanx_reduce_segment_size 4000 \
    --mca coll_hanx_allreduce_segment_size 2048 -- --seed 104 --cases 300 \
    --colls bcast,reduce,allreduce,scan,exscan,reduce_scatter --components-under-test hanx
step "fuzz hanx, 6 ranks as 3x2, collx trees on the levels, blocking calls on the schedules, small segments, 300 cases" \
    fuzz 300 6 $HANX 2 $HANX_TREES --mca coll_hanx_blocking_schedule 1 \
    --mca coll_hanx_bcast_segment_size 4096 --mca coll_hanx_reduce_segment_size 4000 \
    --mca coll_hanx_allreduce_segment_size 2048 -- --seed 107 --cases 300 --components-under-test hanx
step "fuzz hanx, split rails (test/mpi/tuning/split.json: allreduce, reduce_scatter(_block), blocking and not), 6 ranks as 3x2, small segments, 300 cases" \
    fuzz 300 6 $HANX 2 --mca coll_hanx_allreduce_segment_size 2048 \
    --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/split.json" -- --seed 108 --cases 300 \
    --colls allreduce,iallreduce,reduce_scatter,reduce_scatter_block,ireduce_scatter,ireduce_scatter_block,bcast,barrier \
    --components-under-test hanx
step "fuzz hanx, 4 ranks as 2x2, per-rule submodules (test/mpi/tuning/views.json), 400 cases" \
    fuzz 300 4 $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/views.json" -- \
    --seed 105 --cases 400 --colls blocking --components-under-test hanx
step "fuzz hanx, 8 ranks as 2 nodes x 2 sockets x 2, per-rule submodules on 3 levels, 200 cases" \
    fuzz 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 \
    --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/views.json" -- \
    --seed 106 --cases 200 --colls blocking --components-under-test hanx

# --- adaptx with several trees and small segments
for tree in binomial pipeline chain topo; do
    step "fuzz adaptx $tree, 5 ranks, 1 KiB segments, 250 cases" \
        fuzz 300 5 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm $tree \
        --mca coll_adaptx_reduce_algorithm $tree --mca coll_adaptx_allreduce_algorithm $tree \
        --mca coll_adaptx_bcast_segment_size 1024 --mca coll_adaptx_reduce_segment_size 1000 \
        --mca coll_adaptx_allreduce_segment_size 1024 -- --seed 110 --cases 250 \
        --colls $ADAPTX_COLLS --components-under-test adaptx
done
step "fuzz adaptx default settings, 3 ranks, 300 cases" \
    fuzz 300 3 --mca coll_adaptx_priority 100 -- --seed 111 --cases 300 --colls $ADAPTX_COLLS \
    --components-under-test adaptx

# --- concurrency
threads_step() {  # exit 77 (no MPI_THREAD_MULTIPLE) is a skip, shown as such
    local out rc
    out=$(local_run 300 4 "$@" "$THREADS" 2>&1); rc=$?
    echo "$out"
    [ $rc = 77 ] && { echo "SKIP: no MPI_THREAD_MULTIPLE"; return 0; }
    return $rc
}
step "threads: 4 threads x 40 collectives, 64 outstanding, hanx 2x2" \
    threads_step $HANX 2
step "threads: the same with split-rail allreduces (rails made concurrently)" \
    threads_step $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/split.json"
step "threads: the same with allgather and iallgather on the node ring (each call's P tags reserved concurrently)" \
    threads_step $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/node-ring.json"
step "threads: the same with per-rule submodules (sub-communicators made concurrently)" \
    threads_step $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/views.json"
step "threads: hanx 2x2 with collx trees on its levels, blocking calls on the schedules" \
    threads_step $HANX 2 $HANX_TREES --mca coll_hanx_blocking_schedule 1 \
    --mca coll_hanx_bcast_segment_size 512 --mca coll_hanx_reduce_segment_size 256 \
    --mca coll_hanx_allreduce_segment_size 256
step "threads: 4 threads x 40 collectives, 64 outstanding, adaptx" \
    threads_step --mca coll_adaptx_priority 100
step "threads: self-test fails (a corrupted result is reported)" \
    must_fail local_run 120 4 --mca coll_adaptx_priority 100 "$THREADS" --self-test --iters 5 --rounds 1

# --- determinism: every reduction, float and double, 8 repetitions with
# random delays before each call; one result each, and allreduce's the
# same on every rank
determinism() {  # determinism SECONDS NP mpirun-args...
    local tmo=$1 np=$2; shift 2
    local_run "$tmo" "$np" "$@" "$DETERMINISM" --reps 8 --count 40000
}
step "determinism self-test: a changed input is reported (proves the comparison can fail)" \
    must_fail local_run 120 3 --mca coll_adaptx_priority 100 "$DETERMINISM" --reps 3 --count 100 \
    --self-test --colls allreduce
for tree in $ADAPTX_TREES; do
    step "determinism adaptx $tree, 5 ranks, 4 KiB segments: one result per reduction" \
        determinism 300 5 --mca coll_adaptx_priority 100 --mca coll_adaptx_reduce_algorithm $tree \
        --mca coll_adaptx_allreduce_algorithm $tree --mca coll_adaptx_reduce_segment_size 4096 \
        --mca coll_adaptx_allreduce_segment_size 4096
done
step "determinism hanx, 5 ranks as 2+2+1, small segments: one result per reduction" \
    determinism 300 5 $HANX 2 --mca coll_hanx_reduce_segment_size 4000 \
    --mca coll_hanx_allreduce_segment_size 4096
step "determinism hanx, 8 ranks as 2 nodes x 2 sockets x 2, adaptx on the levels" \
    determinism 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 \
    --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/views.json"
step "determinism hanx, flat collx trees from a tuning file (the front door), 5 ranks as 2+2+1" \
    determinism 300 5 $HANX 2 --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/flat.json"
step "determinism hanx, split rails (allreduce, reduce_scatter(_block)), 6 ranks as 3x2, small segments" \
    determinism 300 6 $HANX 2 --mca coll_hanx_allreduce_segment_size 4096 \
    --mca coll_hanx_tuning_file "$COLLX_SRCDIR/test/mpi/tuning/split.json"
step "determinism hanx, the one flag's large allreduce, iallreduce and reduce_scatter(_block) (split rails on the collx ring), 8 ranks as 4x2" \
    local_run 300 8 $HANX 2 --mca coll_hanx_model_measure 0 "$DETERMINISM" --reps 8 --count 150000 \
    --colls allreduce,iallreduce,reduce_scatter_block,reduce_scatter
step "determinism hanx, the one flag's small allreduce (one collx topo tree, since stop 38), 8 ranks as 4x2" \
    local_run 300 8 $HANX 2 --mca coll_hanx_model_measure 0 "$DETERMINISM" --reps 8 --count 1000 \
    --colls allreduce
step "determinism hanx, the one flag on 2x2: allreduce and iallreduce on recursive doubling between the two leaders" \
    local_run 300 4 $HANX 2 --mca coll_hanx_model_measure 0 "$DETERMINISM" --reps 8 --count 3000 \
    --colls allreduce,iallreduce
kept_machine() {  # the one flag's large allreduce and iallreduce on a kept machine with fast links (one node's): the previous module's, one result each
    local d out rc
    d=$(mktemp -d) || return 1
    out=$(local_run 300 4 $HANX 2 --mca coll_hanx_model_cache "$d/machines" --mca coll_hanx_verbose 10 \
          "$DETERMINISM" --reps 8 --count 300000 --colls allreduce,iallreduce 2>&1)
    rc=$?
    rm -rf "$d"
    echo "$out" | grep -v "coll:hanx" | tail -2
    [ $rc = 0 ] || return 1
    # (300000 floats or doubles: 1.2 or 2.4 MB, above both thresholds)
    echo "$out" | grep -Eq "coll:hanx: allreduce of [0-9]+ bytes on 2 nodes: previous module \(links .*; machine kept\)" ||
        { echo "no allreduce handed to the previous module"; return 1; }
    echo "$out" | grep -Eq "coll:hanx: iallreduce of [0-9]+ bytes on 2 nodes: previous module \(links .*; machine kept\)" ||
        { echo "no iallreduce handed to the previous module"; return 1; }
}
step "determinism hanx, the one flag on a kept machine with fast links (2x2): allreduce and iallreduce on the previous module" \
    kept_machine
step "determinism hanx, 3 levels, collx trees on the levels, blocking calls on the schedules" \
    determinism 300 8 $HANX 4 --mca coll_hanx_ranks_per_socket 2 $HANX_TREES \
    --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_reduce_segment_size 4000 \
    --mca coll_hanx_allreduce_segment_size 4096

# --- 2 emulated nodes (root only)
if [ "$(id -u)" = 0 ] && [ -x "$CLUSTER" ]; then
    export COLLX_CLUSTER_TAG="f$$"
    step "fuzz hanx on 2 emulated nodes (3+2 round-robin), 200 cases" \
        "$CLUSTER" -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
        "$FUZZ" --case-timeout 60 --seed 120 --cases 200 --colls blocking --components-under-test hanx
    step "fuzz hanx's non-blocking collectives on 2 emulated nodes (3+2 round-robin), 200 cases" \
        "$CLUSTER" -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
        "$FUZZ" --case-timeout 60 --seed 121 --cases 200 --colls nonblocking --components-under-test hanx
    step "fuzz hanx on 4 emulated nodes (3+1+2+2), collx trees on the levels, blocking calls on the schedules, 200 cases" \
        "$CLUSTER" -n 4 --slots 3,1,2,2 --timeout 400 -- --mca coll_hanx_priority 100 $HANX_TREES \
        --mca coll_hanx_blocking_schedule 1 --mca coll_hanx_bcast_segment_size 4096 \
        --mca coll_hanx_reduce_segment_size 4000 --mca coll_hanx_allreduce_segment_size 2048 \
        "$FUZZ" --case-timeout 60 --seed 122 --cases 200 --components-under-test hanx
    step "determinism hanx on 2 emulated nodes (3+2 round-robin)" \
        "$CLUSTER" -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 \
        "$DETERMINISM" --reps 8 --count 40000
    step "determinism adaptx topo tree on 2 emulated nodes (3+2 round-robin)" \
        "$CLUSTER" -n 2 --slots 3,2 --timeout 300 -- --map-by node --mca coll_adaptx_priority 100 \
        --mca coll_adaptx_reduce_algorithm topo --mca coll_adaptx_allreduce_algorithm topo \
        "$DETERMINISM" --reps 8 --count 40000
fi
finish
