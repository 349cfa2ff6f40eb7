#!/bin/bash
# Leak growth: 10,000 cycles of communicator create (dup, split, dup of
# split) -> use (allreduce, bcast, reduce, iallreduce, allgather, so that
# hanx builds its sub-communicators and adaptx runs its request path) ->
# free, with heap in use and resident memory measured at 16 checkpoints
# after a warm-up of 2,000 cycles; the least-squares slope (bytes per cycle,
# largest over the ranks) must stay under a generous limit.  A memory
# assertion, not a timing one.  Then finalize with sub-communicators alive.
. "$(dirname "$0")/common.sh"

CYCLES=${COLLX_LEAK_CYCLES:-10000}
LIMIT=${COLLX_LEAK_LIMIT:-64}   # bytes per cycle (one leaked sub-communicator costs KiBs)
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2"
leak_run() {  # leak_run LIMIT "PROGRAM-ARGS" mpirun-args... : ends with the slope
    local limit=$1 extra=$2 out rc; shift 2
    out=$(local_run 300 4 "$@" "$LIFECYCLE" "$CYCLES" --max-slope "$limit" $extra 2>&1)
    rc=$?
    echo "$out"
    # last line, shown on the PASS line: the slope and the error count
    echo "$out" | sed -n 's/.*leak slope over \(.*\): \(heap .*\); rank 0.*/\2 (\1)/p' |
        tr -d '\n'
    echo ", $(echo "$out" | sed -n 's/.*iterations, \([0-9]*\) errors/\1/p') errors"
    return $rc
}
step "leak slope, hanx 2x2, $CYCLES cycles: heap under $LIMIT bytes/cycle" leak_run $LIMIT "" $HANX
step "leak slope, adaptx, $CYCLES cycles: heap under $LIMIT bytes/cycle" \
    leak_run $LIMIT "" --mca coll_adaptx_priority 100
step "leak slope, hanx over adaptx sub-communicators, $CYCLES cycles" \
    leak_run $LIMIT "" $HANX --mca coll_adaptx_priority 90
# the assertion can fail: 256 bytes leaked per cycle on purpose
self_test() {
    local out
    out=$(CYCLES=2000 leak_run $LIMIT "--leak-on-purpose 256" $HANX 2>&1)
    local rc=$?
    echo "$out"
    [ $rc != 0 ] && echo "$out" | grep -q "LEAK: heap grows"
}
step "self-test: 256 bytes leaked per cycle on purpose is caught" self_test
# clean finalize with communicators (and their sub-communicators) alive:
# comm_lifecycle leaves two to MPI_Finalize; han_regress #13398 leaves more
finalize_alive() {
    local out
    out=$(local_run 120 4 "$@" "$LIFECYCLE" 20 2>&1) || { echo "$out"; return 1; }
    echo "$out" | grep -q "finalized cleanly" || { echo "$out"; return 1; }
    local_run 120 4 "$@" "$REGRESS" --case 13398
}
step "clean MPI_Finalize with sub-communicators alive, hanx 2x2" finalize_alive $HANX
step "clean MPI_Finalize with sub-communicators alive, adaptx" finalize_alive --mca coll_adaptx_priority 100
finish
