#!/bin/bash
# The whole test suite, from a fresh clone, as root: dependencies, build,
# then `make check` (Check unit tests, MPI differential checker on one node
# and on 2 emulated nodes).  Prints "N passed, M failed" last.
set -e
cd "$(dirname "$0")/.."
contrib/build.sh
set +e
make -j1 check
rc=$?
# (no set -e from here: grep -c finding nothing is not an error)
for log in test/unit/test_core.log test/mpi/check-1node.sh.log test/cluster/check-2nodes.sh.log test/cluster/check-4nodes.sh.log; do
    [ -f "$log" ] && { echo "==== $log"; grep -E "^(PASS|FAIL|SKIP)|Checks:|passed|failed" "$log" | head -60; }
done
# one line for the whole suite: Check's test cases plus each integration step
unit=$(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' test/unit/test_core.log 2>/dev/null | tail -1)
set -- $unit
u_total=${1:-0} u_bad=$(( ${2:-0} + ${3:-0} ))
steps_ok=$(cat test/mpi/check-1node.sh.log test/cluster/check-2nodes.sh.log test/cluster/check-4nodes.sh.log 2>/dev/null | grep -c "^PASS: ")
steps_bad=$(cat test/mpi/check-1node.sh.log test/cluster/check-2nodes.sh.log test/cluster/check-4nodes.sh.log 2>/dev/null | grep -c "^FAIL: ")
skipped=$(grep -c "^SKIP" test-suite.log 2>/dev/null)
passed=$(( u_total - u_bad + steps_ok )) failed=$(( u_bad + steps_bad ))
[ $rc != 0 ] && [ $failed = 0 ] && failed=1  # a crash before any verdict is a failure
echo "collx: $passed passed, $failed failed, ${skipped:-0} skipped"
exit $rc
