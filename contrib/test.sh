#!/bin/bash
# The whole test suite, from a fresh clone, as root: dependencies, build,
# then `make check` (Check unit tests, MPI differential checker on one node
# and on emulated nodes, ...).  Prints "N passed, M failed" last.
set -e
cd "$(dirname "$0")/.."
contrib/build.sh
set +e
make -j1 check
rc=$?
# (no set -e from here: grep -c finding nothing is not an error)
# One line for the whole suite.  Every test of `make check` leaves a .log
# next to its .trs: a Check program counts its checks ("Checks: N,
# Failures: F, Errors: E"), a script counts its steps ("PASS: "/"FAIL: ").
. contrib/tally.sh
passed=0 failed=0
for trs in $(find test -name '*.trs' | sort); do
    log=${trs%.trs}.log
    [ -f "$log" ] && tally "$log"
done
skipped=$(grep -c "^SKIP" test-suite.log 2>/dev/null)
[ $rc != 0 ] && [ $failed = 0 ] && failed=1  # a crash before any verdict is a failure
echo "collx: $passed passed, $failed failed, ${skipped:-0} skipped"
exit $rc
