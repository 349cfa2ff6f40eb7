#!/bin/bash
# Integration tests on 2 emulated nodes (network namespaces, see
# cluster.sh): the differential checker through coll/adaptx and coll/hanx
# on block, imbalanced (3+1) and round-robin layouts, and the lifecycle test.
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: emulated nodes need root"; exit 77; }

export COLLX_CLUSTER_TAG="t$$"  # our runs' namespaces: cxt<pid>p<pid>-*
nodes() { "$CLUSTER" "$@"; }

step "adaptx serves MPI_Bcast on 2 nodes" served_by adaptx bcast nodes -n 2 -m 2 --timeout 120 --
step "adaptx checker, 2x2, full matrix + big counts" \
    nodes -n 2 -m 2 --timeout 600 -- --mca coll_adaptx_priority 100 "$CHECKER" --colls bcast,reduce --big
step "adaptx checker, 3+1 round-robin, small segments" \
    nodes -n 2 --slots 3,1 --timeout 300 -- --map-by node --mca coll_adaptx_priority 100 \
    --mca coll_adaptx_bcast_segment_size 700 --mca coll_adaptx_reduce_segment_size 300 \
    "$CHECKER" --quick --colls bcast,reduce --seed 11
step "hanx serves MPI_Bcast on 2 nodes" served_by hanx bcast nodes -n 2 -m 2 --timeout 120 --
step "hanx checker, 2x2, full matrix + big counts" \
    nodes -n 2 -m 2 --timeout 600 -- --mca coll_hanx_priority 100 "$CHECKER" --big
step "hanx checker, 3+1 (imbalanced)" \
    nodes -n 2 --slots 3,1 --timeout 300 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --seed 13
step "hanx checker, 2x2 round-robin placement" \
    nodes -n 2 -m 2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 "$CHECKER" --quick --seed 17
step "communicator lifecycle and finalize on 2 nodes" \
    nodes -n 2 -m 2 --timeout 300 -- --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 \
    "$LIFECYCLE" 100
fails() { ! "$@"; }
step "a failing program makes the run fail" fails nodes -n 2 -m 1 --timeout 60 -- false
step "a hung program is killed at the time limit" fails nodes -n 2 -m 1 --timeout 3 -- sleep 60
leftovers() { ! ip netns list | grep -q "^cx${COLLX_CLUSTER_TAG}p"; }
step "no namespaces left behind, even after failures" leftovers

finish
