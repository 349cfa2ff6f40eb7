#!/bin/bash
# Integration tests on this machine (one node): the differential checker
# through coll/adaptx and coll/hanx (with a synthetic node grouping), the
# communicator lifecycle test, and bad MCA parameter handling.
. "$(dirname "$0")/common.sh"

# --- adaptx
for coll in bcast reduce allreduce ibcast ireduce iallreduce; do
    step "adaptx serves MPI_${coll^}" served_by adaptx $coll local_run 60 4
done
step "adaptx checker, 4 ranks, every collective, full matrix + big counts" \
    local_run 600 4 --mca coll_adaptx_priority 100 "$CHECKER" --colls "$ALL_ADAPTX" --big
for tree in $ADAPTX_TREES; do
    step "adaptx $tree tree, 5 ranks, every collective" adaptx_tree $tree local_run 300 5
done
step "adaptx checker, 3 ranks, tiny segments, 1 outstanding send" \
    local_run 300 3 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_segment_size 40 \
    --mca coll_adaptx_reduce_segment_size 24 --mca coll_adaptx_allreduce_segment_size 16 \
    --mca coll_adaptx_max_send_requests 1 --mca coll_adaptx_max_recv_requests 1 \
    "$CHECKER" --quick --colls "$ALL_ADAPTX" --seed 3
step "adaptx LP (pipeline) with the automatic segment size, 6 ranks" \
    local_run 300 6 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm pipeline \
    --mca coll_adaptx_reduce_algorithm pipeline --mca coll_adaptx_allreduce_algorithm pipeline \
    "$CHECKER" --quick --colls "$ALL_ADAPTX" --seed 5
step "adaptx with more than 2^31 bytes per buffer (bcast, allreduce, reduce), 3 ranks" \
    local_run 300 3 --mca coll_adaptx_priority 100 "$COLLX_BUILDDIR/test/mpi/huge_count"

# --- hanx: one real node has no hierarchy, so impose groups of 2 ranks
step "hanx serves MPI_Allreduce (synthetic 2-rank nodes)" \
    served_by hanx allreduce local_run 60 4 --mca coll_hanx_ranks_per_node 2
step "hanx checker, 4 ranks as 2x2" \
    local_run 600 4 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 "$CHECKER" --big
step "hanx checker, 5 ranks as 2+2+1 (imbalanced)" \
    local_run 300 5 --mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2 "$CHECKER" --quick
step "hanx over adaptx sub-communicators, 6 ranks as 3x2" \
    local_run 300 6 --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 \
    --mca coll_hanx_ranks_per_node 2 "$CHECKER" --quick --seed 7
step "hanx on a single node falls back cleanly" \
    local_run 300 3 --mca coll_hanx_priority 100 "$CHECKER" --quick
step "communicator lifecycle and finalize (hanx + adaptx)" \
    local_run 300 4 --mca coll_hanx_priority 100 --mca coll_adaptx_priority 90 \
    --mca coll_hanx_ranks_per_node 2 "$LIFECYCLE" 200

# --- bad MCA values: a clear message naming the parameter, then defaults
bad_params() {
    local out
    out=$(OMPI_MCA_coll_adaptx_bcast_segment_size=-5 OMPI_MCA_coll_adaptx_bcast_algorithm=nonsense \
          OMPI_MCA_coll_hanx_ranks_per_node=-1 ompi_info --param coll all --level 9 2>&1)
    echo "$out" | grep -q "Parameter: coll_adaptx_bcast_segment_size" &&
    echo "$out" | grep -q "default value (0) is used" &&
    echo "$out" | grep -q "Parameter: coll_adaptx_bcast_algorithm" &&
    echo "$out" | grep -q "Parameter: coll_hanx_ranks_per_node" &&
    echo "$out" | grep -q "coll_hanx_priority"
}
step "nonsense MCA values are reported and replaced by defaults" bad_params
bad_values_run() {  # and a job with them still computes right
    local_run 120 3 --mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_segment_size -5 \
        --mca coll_adaptx_max_send_requests 0 --mca coll_adaptx_allreduce_algorithm bogus \
        --mca coll_adaptx_reduce_fanout 0 "$CHECKER" --quick --colls "$ALL_ADAPTX"
}
step "a job with nonsense MCA values still runs correctly" bad_values_run

finish
