#!/bin/bash
# Build collx with AddressSanitizer + UndefinedBehaviorSanitizer in a copy
# of the tree (configure --enable-sanitizers), then run the Check unit tests
# and the MPI test programs under mpirun with the instrumented components.
#
#   contrib/sanitize.sh [--dir DIR] [--no-build] [--quick]
#
# DIR (default /tmp/collx-sanitize) receives a copy of the working tree
# (tracked and untracked-not-ignored files) and the instrumented build: the
# source tree itself stays as it is.  Open MPI is not instrumented: the test
# programs are (they are built with the same flags), so the ASan runtime is
# in every rank from its start and the components Open MPI dlopens are
# checked.  Open MPI's own allocations never freed at exit would drown the
# leak report, so MPI runs use detect_leaks=0 (leak growth is measured by
# test/mpi/comm_lifecycle --measure instead); the unit tests run with leak
# detection on.  Any ASan or UBSan finding ends the process with an error
# (-fno-sanitize-recover=undefined, halt_on_error=1): each step prints
# PASS:/FAIL: and the script exits non-zero when one failed.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
dir=/tmp/collx-sanitize build=1 quick=0
while [ $# -gt 0 ]; do
    case $1 in
    --dir) dir=$2; shift ;;
    --no-build) build=0 ;;
    --quick) quick=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "sanitize.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
b=$dir/src
if [ $build = 1 ]; then
    mkdir -p "$b"
    (cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | (cd "$b" && tar xf -) ||
        { echo "FAIL: copy the tree to $b"; exit 1; }
    (cd "$b" && { [ -x configure ] || ./autogen.sh; } &&
        ./configure -q --without-cuda --enable-sanitizers CFLAGS="-g -O1" CXXFLAGS="-g -O1" &&
        make -j2 -s && make -j2 -s test/unit/test_core test/unit/test_rules test/mpi/collx_check \
            test/mpi/comm_lifecycle test/mpi/han_regress test/mpi/bad_args) >"$dir/build.log" 2>&1 ||
        { echo "FAIL: instrumented build (see $dir/build.log)"; tail -30 "$dir/build.log"; exit 1; }
    echo "PASS: instrumented build in $b"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pkglib=$(sed -n "s/^OMPI_PKGLIBDIR = //p" "$b/Makefile")
export OMPI_MCA_mca_base_component_path="$b/.libs:$pkglib"
export OMPI_MCA_coll_hanx_tuning_file="$b/contrib/tuning/hierarchical.json"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ASAN_MPI=detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86
failures=0 findings=0
step() {  # step "what" command...
    local what=$1 log; shift
    log=$(mktemp)
    "$@" >"$log" 2>&1
    local rc=$?
    local n=$(grep -cE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log")
    findings=$((findings + n))
    if [ $rc = 0 ] && [ "$n" = 0 ]; then
        echo "PASS: $what $(grep -E 'passed|errors|Checks' "$log" | tail -1)"
    else
        failures=$((failures + 1))
        echo "FAIL: $what (exit $rc, $n sanitizer report(s))"
        grep -A30 -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log" | head -60
        tail -15 "$log"
    fi
    rm -f "$log"
}
# our sanitizer settings reach every rank through mpirun -x
run() {  # run SECONDS NP mpirun-args...
    local tmo=$1 np=$2; shift 2
    ASAN_OPTIONS=$ASAN_MPI timeout -k 10 "$tmo" mpirun -np "$np" --oversubscribe \
        --mca btl self,vader --mca mpi_yield_when_idle 1 -x ASAN_OPTIONS -x UBSAN_OPTIONS "$@"
}
cd "$b"
C=test/mpi/collx_check
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2"
ADAPTX="--mca coll_adaptx_priority 100"
ALL_ADAPTX=bcast,reduce,allreduce,ibcast,ireduce,iallreduce,overlap
# the same ASan/UBSan flags with leak detection: our core alone, no MPI
# (contrib/sanitize/lsan.supp: one test's deliberate transport failure)
export CK_TIMEOUT_MULTIPLIER=20  # instrumented code is slower than Check's default allows
export LSAN_OPTIONS=suppressions=$src/contrib/sanitize/lsan.supp:print_suppressions=0
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 step "unit: test_core under ASan+UBSan+LSan" test/unit/test_core
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 step "unit: test_rules under ASan+UBSan+LSan" test/unit/test_rules
q=--quick; [ $quick = 1 ] && q="--quick --max-count 1000"
step "adaptx checker, 4 ranks, every collective" run 600 4 $ADAPTX $C $q --colls $ALL_ADAPTX
step "adaptx pipeline tree, tiny segments, 5 ranks" run 600 5 $ADAPTX \
    --mca coll_adaptx_bcast_algorithm pipeline --mca coll_adaptx_reduce_algorithm chain \
    --mca coll_adaptx_allreduce_algorithm knomial --mca coll_adaptx_bcast_segment_size 64 \
    --mca coll_adaptx_reduce_segment_size 40 --mca coll_adaptx_allreduce_segment_size 24 \
    --mca coll_adaptx_max_send_requests 1 $C $q --colls $ALL_ADAPTX --seed 3
step "hanx checker, 4 ranks as 2x2, every blocking collective" run 900 4 $HANX $C $q --colls blocking
step "hanx checker, 7 ranks round-robin 3+2+2, pipelined" run 900 7 --mca coll_hanx_priority 100 \
    --mca coll_hanx_ranks_per_node 3 --mca coll_hanx_round_robin 1 \
    --mca coll_hanx_bcast_segment_size 64 --mca coll_hanx_allreduce_segment_size 24 \
    $C --quick --max-count 1000 --colls blocking --seed 5
step "hanx 3 levels, 8 ranks (2 nodes x 2 sockets x 2)" run 900 8 --mca coll_hanx_priority 100 \
    --mca coll_hanx_ranks_per_node 4 --mca coll_hanx_ranks_per_socket 2 $C --quick --max-count 1000 \
    --colls blocking --seed 7
for case in 8248 11441 11473 11545 11664 12383 12438 13200 13398; do
    step "han_regress --case $case, hanx 4 ranks as 2x2" run 300 4 $HANX test/mpi/han_regress --case $case
done
step "comm_lifecycle 200 cycles, hanx over adaptx" run 300 4 $HANX --mca coll_adaptx_priority 90 \
    test/mpi/comm_lifecycle 200
# the error paths: nonsense parameters, a broken tuning file, erroneous calls
printf '{ "format": "collx-tuning", "version": 1,\n "rules": [ { "collective": "bcast",' >"$dir/bad.json"
step "bad parameters and a truncated tuning file, hanx 2x2" run 300 4 $HANX \
    --mca coll_hanx_tuning_file "$dir/bad.json" --mca coll_hanx_bcast_segment_size 12abc \
    --mca coll_hanx_low_preference hanx --mca coll_hanx_nosuch 1 --mca coll_adaptx_priority 90 \
    --mca coll_adaptx_reduce_algorithm nosuch --mca coll_adaptx_bcast_fanout -3 $C --quick \
    --max-count 64 --colls bcast,reduce,allreduce --seed 11
step "erroneous collective calls (MPI_ERRORS_RETURN), hanx 2x2" run 300 4 $HANX test/mpi/bad_args
step "erroneous collective calls (MPI_ERRORS_RETURN), adaptx" run 300 4 $ADAPTX test/mpi/bad_args
echo "sanitize.sh: $findings sanitizer finding(s), $failures step(s) failed"
[ $failures = 0 ]
