#!/bin/bash
# The example trainer (examples/trainer) under tuned, hanx and adaptx (the LP
# pipeline), 4 ranks on this machine as 2 synthetic nodes: every rank ends
# with bitwise identical weights and the loss goes down; a run with one
# rank's gradient perturbed must be caught.
. "$COLLX_SRCDIR/test/mpi/common.sh"
TRAINER="$COLLX_BUILDDIR/examples/trainer/trainer"
ARGS="--layers 64,128,128,10 --batch 8 --iters 30 --warmup 2"
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2"
LP="--mca coll_adaptx_priority 100 --mca coll_adaptx_allreduce_algorithm pipeline"
identical() {  # identical runner-args...: the trainer passes and says so
    local out
    out=$("$@" 2>&1) || { echo "$out"; return 1; }
    echo "$out"
    echo "$out" | grep -q "weights=identical"
}
caught() {  # caught runner-args...: the trainer fails and says why
    local out
    out=$("$@" 2>&1) && { echo "$out"; echo "not caught"; return 1; }
    echo "$out"
    echo "$out" | grep -q "weights DIFFER"
}
step "trainer, tuned, per-layer allreduce: identical weights, loss down" \
    identical local_run 120 4 "$TRAINER" $ARGS --mode layer
step "trainer, hanx (2 synthetic nodes), fused 64 KiB buckets: identical weights, loss down" \
    identical local_run 120 4 $HANX "$TRAINER" $ARGS --mode bucket --bucket-bytes 65536
step "trainer, hanx (2 synthetic nodes), per-layer allreduce: identical weights, loss down" \
    identical local_run 120 4 $HANX "$TRAINER" $ARGS --mode layer
step "trainer, adaptx LP pipeline, iallreduce overlapped with backprop: identical weights, loss down" \
    identical local_run 120 4 $LP "$TRAINER" $ARGS --mode overlap
step "trainer, adaptx LP pipeline, fused buckets: identical weights, loss down" \
    identical local_run 120 4 $LP "$TRAINER" $ARGS --mode bucket --bucket-bytes 65536
step "trainer catches a rank whose gradient differs (--perturb-rank 1)" \
    caught local_run 120 4 $LP "$TRAINER" $ARGS --mode overlap --perturb-rank 1
finish
