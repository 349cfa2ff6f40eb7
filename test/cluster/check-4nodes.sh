#!/bin/bash
# Integration tests on 4 emulated nodes x 2 ranks: every adaptx tree with
# every adaptx collective (blocking, non-blocking, overlapped), and hanx with
# every blocking collective on block, round-robin and imbalanced placements.
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: emulated nodes need root"; exit 77; }
export COLLX_CLUSTER_TAG="f$$"
nodes() { "$CLUSTER" "$@"; }

for tree in $ADAPTX_TREES; do
    step "adaptx $tree tree, 4x2, every collective" adaptx_tree $tree nodes -n 4 -m 2 --timeout 300 --
done
step "hanx checker, 4x2, every blocking collective" nodes -n 4 -m 2 --timeout 600 -- \
    --mca coll_hanx_priority 100 "$CHECKER" --quick --colls blocking --seed 19
step "hanx over adaptx, 4x2 round-robin, every blocking collective" nodes -n 4 -m 2 --timeout 600 -- \
    --map-by node --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 "$CHECKER" --quick \
    --colls blocking --seed 23
step "hanx checker, 4 nodes of 3+1+2+2, every blocking collective" nodes -n 4 --slots 3,1,2,2 \
    --timeout 600 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --colls blocking --seed 29
step "hanx non-blocking (ibcast, ireduce, iallreduce, iallgather, overlapped), 4x2 and 4x2 round-robin over adaptx" \
    eval 'nodes -n 4 -m 2 --timeout 600 -- --mca coll_hanx_priority 100 "$CHECKER" --quick --colls "$HANX_NB" --seed 31 &&
          nodes -n 4 -m 2 --timeout 600 -- --map-by node --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 \
              "$CHECKER" --quick --colls "$HANX_NB" --seed 37'
step "hanx with collx trees on its levels (LP chain across the leaders), blocking calls on the schedules, 4x2" \
    nodes -n 4 -m 2 --timeout 600 -- --mca coll_hanx_priority 100 --mca coll_hanx_low_algorithm binomial \
    --mca coll_hanx_up_algorithm pipeline --mca coll_hanx_blocking_schedule 1 \
    --mca coll_hanx_bcast_segment_size 256 --mca coll_hanx_reduce_segment_size 128 \
    --mca coll_hanx_allreduce_segment_size 96 "$CHECKER" --quick \
    --colls "blocking,$HANX_NB" --seed 41
step "upstream han bug regressions (ompi #8248 ... #13398), 4x2 and round-robin" \
    eval 'nodes -n 4 -m 2 --timeout 300 -- --mca coll_hanx_priority 100 "$REGRESS" &&
          nodes -n 4 -m 2 --timeout 300 -- --map-by node --mca coll_hanx_priority 100 "$REGRESS"' 
ring_nodes() (  # the one flag's large allreduce across real (emulated) nodes: split rails on the collx ring, blocking or not
    local out
    # (the built-in rule itself: without the measured model, which may refine it)
    out=$(nodes -n 4 -m 2 --timeout 600 -- --mca coll_hanx_priority 100 --mca coll_hanx_verbose 10 \
          --mca coll_hanx_model_measure 0 "$CHECKER" --quick --big --colls allreduce,iallreduce --seed 43 2>&1)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -Eq "coll:hanx: allreduce count 300007 on MPI_COMM_WORLD: split rails$" &&
        echo "$out" | grep -Eq "coll:hanx: allreduce levels \(innermost first\): module, .*; rails: ring$" ||
        { echo "no big allreduce on split rails with the collx ring on the rails"; return 1; }
    echo "$out" | grep -Eq "coll:hanx: iallreduce count 300007 on MPI_COMM_WORLD: split rails$" ||
        { echo "no big iallreduce on split rails"; return 1; }
    ! echo "$out" | grep -q "ring tree over all ranks" || { echo "a call on the flat ring"; return 1; }
)
step "hanx's built-in large allreduce on 4x2, big counts: split rails on the collx ring, blocking or not" ring_nodes
ag_ring_nodes() (  # allgather's leaders on the collx ring across real (emulated) nodes
    local out
    # (set: the measured links here are not slow enough for the built-in gate)
    out=$(nodes -n 4 -m 2 --timeout 600 -- --mca coll_hanx_priority 100 --mca coll_hanx_verbose 10 \
          --mca coll_hanx_up_algorithm ring "$CHECKER" --quick --colls allgather,iallgather --seed 47 2>&1)
    echo "$out" | grep "collx_check:" | tail -1
    echo "$out" | grep -q " 0 failed" || return 1
    echo "$out" | grep -q "coll:hanx: allgather on MPI_COMM_WORLD: the leaders' allgather on the collx ring" &&
        echo "$out" | grep -q "coll:hanx: iallgather on MPI_COMM_WORLD: the leaders' allgather on the collx ring" ||
        { echo "no allgather or iallgather with the leaders on the ring"; return 1; }
)
step "hanx allgather and iallgather on 4x2, the leaders on the collx ring (coll_hanx_up_algorithm ring)" ag_ring_nodes
leftovers() { ! ip netns list | grep -q "^cx${COLLX_CLUSTER_TAG}p"; }
step "no namespaces left behind" leftovers

finish
