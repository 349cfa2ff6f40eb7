#!/bin/bash
# The MPI differential checker under valgrind (memcheck), a few ranks, with
# coll/hanx (synthetic 2-rank nodes, over adaptx sub-communicators) and
# coll/adaptx.  Open MPI's and PMIx's own noise is suppressed
# (contrib/valgrind/openmpi.supp: only errors whose own frames are inside
# those libraries); any other error makes valgrind exit 99 and the step
# fail.  Leaks are not checked here (Open MPI keeps its allocations to
# exit); leak growth is test/mpi/check-leaks.sh's business.
#
#   contrib/valgrind.sh [--self-test] [BUILDDIR]   (default: the source tree, built)
#
# --self-test: one short run WITHOUT the suppressions, which must fail on
# PMIx's known error -- proof that an error fails a step.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
self_test=0
[ "${1:-}" = --self-test ] && { self_test=1; shift; }
b=${1:-$src}
pkglib=$(sed -n "s/^OMPI_PKGLIBDIR = //p" "$b/Makefile")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$b/.libs:$pkglib"
export OMPI_MCA_coll_hanx_tuning_file="$src/contrib/tuning/hierarchical.json"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
VG="valgrind -q --error-exitcode=99 --num-callers=40 --track-origins=yes
    --suppressions=$src/contrib/valgrind/openmpi.supp --log-file=$logs/vg.%p.log"
failures=0 total=0
step() {  # step "what" mpirun-args... -- checker-args...
    local what=$1; shift
    rm -f "$logs"/vg.*.log
    local out rc n
    out=$(timeout -k 10 900 mpirun --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1 \
          "$@" 2>&1)
    rc=$?
    n=$(cat "$logs"/vg.*.log 2>/dev/null | grep -cE "^==[0-9]+== (Invalid|Conditional jump|Use of uninitialised|Syscall param|Mismatched|Source and destination|Argument .* fishy)")
    total=$((total + n))
    if [ $rc = 0 ] && [ "$n" = 0 ] && echo "$out" | grep -q " 0 failed"; then
        echo "PASS: $what: 0 valgrind errors, $(echo "$out" | grep passed | tail -1)"
    else
        failures=$((failures + 1))
        echo "FAIL: $what (exit $rc, $n valgrind error(s))"
        echo "$out" | tail -5
        cat "$logs"/vg.*.log | head -80
    fi
}
C="$b/test/mpi/collx_check"
if [ $self_test = 1 ]; then
    VG=${VG/--suppressions=*openmpi.supp/}
    step "self-test: without suppressions (must FAIL)" -np 2 --mca coll_adaptx_priority 100 \
        $VG "$C" --quick --max-count 1 --colls bcast
    [ $failures = 1 ] && { echo "PASS: the self-test run failed as it must"; exit 0; }
    echo "FAIL: the self-test run passed"; exit 1
fi
step "valgrind: hanx 4 ranks as 2x2 over adaptx, blocking collectives" \
    -np 4 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 --mca coll_adaptx_priority 90 \
    $VG "$C" --quick --max-count 17 --colls blocking --seed 3
step "valgrind: hanx 3 ranks round-robin 2+1, pipelined tiny segments" \
    -np 3 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 --mca coll_hanx_round_robin 1 \
    --mca coll_hanx_bcast_segment_size 8 --mca coll_hanx_allreduce_segment_size 8 \
    $VG "$C" --quick --max-count 64 --colls bcast,reduce,allreduce,scan,gather,alltoall --seed 5
step "valgrind: adaptx 4 ranks, every collective (blocking, non-blocking, overlapped)" \
    -np 4 --mca coll_adaptx_priority 100 $VG "$C" --quick --max-count 64 \
    --colls bcast,reduce,allreduce,ibcast,ireduce,iallreduce,overlap --seed 7
step "valgrind: adaptx pipeline tree, tiny segments, 1 outstanding request" \
    -np 3 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm pipeline \
    --mca coll_adaptx_reduce_algorithm chain --mca coll_adaptx_allreduce_algorithm pipeline \
    --mca coll_adaptx_bcast_segment_size 16 --mca coll_adaptx_reduce_segment_size 16 \
    --mca coll_adaptx_allreduce_segment_size 16 --mca coll_adaptx_max_send_requests 1 \
    --mca coll_adaptx_max_recv_requests 1 $VG "$C" --quick --max-count 64 \
    --colls bcast,reduce,allreduce,ibcast,iallreduce --seed 9
echo "valgrind.sh: $total valgrind error(s) outside Open MPI's suppressed noise, $failures step(s) failed"
[ $failures = 0 ]
