#!/bin/bash
# Nightly-sized randomised differential run: collx_fuzz over many
# configurations (~18,600 cases in all, ~15 minutes on 2 idle cores), the
# threads test over several seeds, and (as root) 2 emulated nodes.  Prints
# one line per configuration and the totals: cases run, mismatches, hangs.
#
#   contrib/fuzz-nightly.sh [SEED_BASE] [SCALE]
#
# SEED_BASE (default 1000) makes the run reproducible: each configuration
# uses SEED_BASE + its number, and a failing case prints its own one-line
# reproducer.  SCALE multiplies the case counts (default 1; 0.1 for a smoke
# test).  Run from a built tree; exit status 0 when nothing failed.
SRC=$(cd "$(dirname "$0")/.." && pwd)
export COLLX_BUILDDIR=${COLLX_BUILDDIR:-$SRC} COLLX_SRCDIR=${COLLX_SRCDIR:-$SRC}
export OMPI_PKGLIBDIR=${OMPI_PKGLIBDIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
. "$COLLX_SRCDIR/test/mpi/common.sh"
BASE=${1:-1000}
SCALE=${2:-1}
FUZZ="$COLLX_BUILDDIR/test/mpi/collx_fuzz"
THREADS="$COLLX_BUILDDIR/test/mpi/threads"
LOGDIR=${FUZZ_LOGDIR:-$(mktemp -d /tmp/collx-fuzz-nightly.XXXXXX)}
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node"
ADX="--mca coll_adaptx_priority 100"
AC=bcast,reduce,allreduce,ibcast,ireduce,iallreduce
total=0 bad=0 hangs=0 failed=0 n=0
t_start=$(date +%s)

# config NAME NP LABEL CASES "mpirun args" [fuzz args...]
config() {
    local name=$1 np=$2 label=$3 cases=$4 margs=$5
    shift 5
    n=$((n + 1))
    cases=$(awk -v c="$cases" -v s="$SCALE" 'BEGIN { x = int(c * s); print x < 1 ? 1 : x }')
    local log="$LOGDIR/$n.log" t0=$(date +%s) rc
    # shellcheck disable=SC2086
    (
        # BUILTIN_TUNING=1: hanx's built-in rules (common.sh forces the hierarchy everywhere)
        [ -n "$BUILTIN_TUNING" ] && unset OMPI_MCA_coll_hanx_tuning_file
        local_run 3600 "$np" $margs "$FUZZ" --seed $((BASE + n)) --cases "$cases" --case-timeout 120 \
            --components-under-test "$label" "$@"
    ) >"$log" 2>&1
    rc=$?
    report "$name" "$log" $rc $(( $(date +%s) - t0 ))
}
report() {  # report NAME LOG RC SECONDS
    local ran mm h
    ran=$(sed -n 's/.*: \([0-9]*\) cases run.*/\1/p' "$2" | tail -1)
    mm=$(sed -n 's/.*cases run, \([0-9]*\) mismatches.*/\1/p' "$2" | tail -1)
    h=$(grep -c '^HANG:' "$2")
    [ "$3" = 124 ] && [ "$h" = 0 ] && h=1  # killed by the outer timeout
    ran=${ran:-0} mm=${mm:-0}
    total=$((total + ran)) bad=$((bad + mm)) hangs=$((hangs + h))
    if [ "$3" = 0 ]; then
        echo "PASS: $1: $ran cases, 0 mismatches (${4}s)"
    else
        failed=$((failed + 1))
        echo "FAIL: $1: exit $3, $ran cases, $mm mismatches, $h hangs (${4}s); log $2"
        grep -E -A2 '^(MISMATCH|HANG)' "$2" | head -12
    fi
}

echo "collx fuzz nightly: seed base $BASE, scale $SCALE, logs in $LOGDIR"
config "Open MPI's own components (reference run), 5 ranks, all" 5 ompi 1000 ""
config "hanx 2x2, blocking" 4 hanx 2000 "$HANX 2" --colls blocking
config "hanx 2x2, all (non-blocking: Open MPI's)" 4 hanx 1000 "$HANX 2"
config "hanx 7 ranks round-robin on 3 nodes" 7 hanx 1200 "$HANX 3 --mca coll_hanx_round_robin 1" --colls blocking
config "hanx 5 ranks as 2+2+1" 5 hanx 1200 "$HANX 2" --colls blocking
config "hanx 3 levels, 8 ranks as 2 nodes x 2 sockets x 2" 8 hanx 800 \
    "$HANX 4 --mca coll_hanx_ranks_per_socket 2" --colls blocking
config "hanx 3 levels imbalanced, 7 ranks as (3+1)+3" 7 hanx 600 \
    "$HANX 4 --mca coll_hanx_ranks_per_socket 3" --colls blocking
config "hanx 6 ranks as 3x2, small segments" 6 hanx 1000 \
    "$HANX 2 --mca coll_hanx_bcast_segment_size 4096 --mca coll_hanx_reduce_segment_size 4000 --mca coll_hanx_allreduce_segment_size 2048" \
    --colls bcast,reduce,allreduce,scan,exscan,reduce_scatter,reduce_scatter_block,allgather
config "hanx over adaptx sub-communicators, 6 ranks as 3x2" 6 hanx+adaptx 800 \
    "$HANX 2 --mca coll_adaptx_priority 90" --colls blocking
BUILTIN_TUNING=1 config "hanx 2x2 with its built-in tuning rules (hand-backs)" 4 hanx 800 "$HANX 2" --colls blocking
config "hanx 5 ranks as 3+2, tiny segments (64-200 B), up to 64 KiB" 5 hanx 500 \
    "$HANX 3 --mca coll_hanx_bcast_segment_size 200 --mca coll_hanx_reduce_segment_size 96 --mca coll_hanx_allreduce_segment_size 64" \
    --colls bcast,reduce,allreduce --max-bytes 65536
for tree in $ADAPTX_TREES; do
    config "adaptx $tree, 5 ranks, small segments" 5 adaptx 450 \
        "$ADX --mca coll_adaptx_bcast_algorithm $tree --mca coll_adaptx_reduce_algorithm $tree --mca coll_adaptx_allreduce_algorithm $tree --mca coll_adaptx_bcast_segment_size 1024 --mca coll_adaptx_reduce_segment_size 1000 --mca coll_adaptx_allreduce_segment_size 2048 --mca coll_adaptx_max_send_requests 2" \
        --colls $AC
done
config "adaptx default, 4 ranks" 4 adaptx 1000 "$ADX" --colls $AC
config "adaptx 4 ranks, tiny segments (40-64 B), up to 64 KiB" 4 adaptx 500 \
    "$ADX --mca coll_adaptx_bcast_segment_size 40 --mca coll_adaptx_reduce_segment_size 48 --mca coll_adaptx_allreduce_segment_size 64" \
    --colls $AC --max-bytes 65536
config "adaptx default, 6 ranks, 1 outstanding send/recv" 6 adaptx 600 \
    "$ADX --mca coll_adaptx_max_send_requests 1 --mca coll_adaptx_max_recv_requests 1" --colls $AC

for s in 1 2 3; do
    t0=$(date +%s)
    log="$LOGDIR/threads.$s.log"
    local_run 600 4 $HANX 2 --mca coll_adaptx_priority 90 "$THREADS" --seed $((BASE + s)) \
        --iters 100 --rounds 5 >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ] || [ $rc = 77 ]; then echo "PASS: threads seed $((BASE + s)) ($(( $(date +%s) - t0 ))s)"
    else failed=$((failed + 1)); [ $rc = 124 ] && hangs=$((hangs + 1)); echo "FAIL: threads seed $((BASE + s)): exit $rc; log $log"; fi
done

if [ "$(id -u)" = 0 ]; then
    export COLLX_CLUSTER_TAG="n$$"
    for lay in "hanx|--slots 3,2|--map-by node --mca coll_hanx_priority 100|blocking" \
               "adaptx|-m 2|--mca coll_adaptx_priority 100|$AC"; do
        IFS='|' read -r label slots margs colls <<<"$lay"
        n=$((n + 1))
        cases=$(awk -v s="$SCALE" 'BEGIN { x = int(500 * s); print x < 1 ? 1 : x }')
        t0=$(date +%s)
        # shellcheck disable=SC2086
        "$CLUSTER" -n 2 $slots --timeout 1200 -- $margs "$FUZZ" --seed $((BASE + n)) --cases "$cases" \
            --case-timeout 120 --colls "$colls" --components-under-test "$label" >"$LOGDIR/$n.log" 2>&1
        report "$label on 2 emulated nodes ($slots)" "$LOGDIR/$n.log" $? $(( $(date +%s) - t0 ))
    done
fi
echo "collx fuzz nightly: $total cases run, $bad mismatches, $hangs hangs, $failed failed runs" \
     "($(( $(date +%s) - t_start ))s)"
[ $failed = 0 ]
