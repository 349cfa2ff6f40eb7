#!/bin/bash
# The Open MPI 5.0 checks, run by contrib/debian13.sh inside its Debian 13
# root, in a copy of the source tree: build (contrib/build.sh fetches the
# Open MPI source for the headers Debian omits), both components listed by
# ompi_info, then through make check the unit tests, the 1-node checker,
# 2 emulated nodes and the randomised tester under hanx and adaptx.  The
# last line is "collx-ompi5: N passed, M failed".
cd "$(dirname "$0")/../.."
TESTS="test/unit/test_core test/unit/test_rules test/mpi/check-1node.sh
       test/cluster/check-2nodes.sh test/mpi/check-fuzz.sh"
passed=0 failed=0
if ! contrib/build.sh >/tmp/collx-build.log 2>&1; then
    tail -40 /tmp/collx-build.log
    echo "FAIL: build against $(ompi_info --version 2>/dev/null | head -1)"
    echo "collx-ompi5: 0 passed, 1 failed"
    exit 1
fi
echo "PASS: build against $(ompi_info --version 2>/dev/null | head -1)"
passed=1
# the installed components, as a user would list them
make install >/dev/null 2>&1 || echo "make install failed"
listed=$(ompi_info 2>/dev/null | grep -cE "MCA coll: (hanx|adaptx) ")
if [ "$listed" = 2 ]; then
    passed=$((passed + 1)); echo "PASS: ompi_info lists coll/hanx and coll/adaptx"
else
    failed=$((failed + 1)); echo "FAIL: ompi_info lists $listed of coll/hanx, coll/adaptx"
fi
# the checker's quick matrix in the long steps (the full ones run on 4.1)
COLLX_QUICK=${COLLX_QUICK:-1} make -j1 check TESTS="$(echo $TESTS)" >/tmp/collx-check.log 2>&1
rc=$?
. contrib/tally.sh
for t in $TESTS; do
    if [ -f "$t.log" ]; then tally "$t.log"
    else failed=$((failed + 1)); echo "FAIL: $t left no log"; fi
done
if [ $rc != 0 ] && [ $failed = 0 ]; then failed=1; tail -40 /tmp/collx-check.log; fi
echo "collx-ompi5: $passed passed, $failed failed"
[ $rc = 0 ] && [ $failed = 0 ]
