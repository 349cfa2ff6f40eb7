#!/bin/bash
# GPU checks of the datatype engine, for a machine with an NVIDIA GPU (one
# H200: well under 5 minutes).  Run from a configured and built tree:
#   test/gpu/run-gpu-checks.sh [BUILDDIR]
# 1. CUDA backend vs CPU backend on random nested datatypes (pack to host,
#    pack to device, unpack), plus device pack throughput;
# 2. staged transfers with real device buffers across 2 ranks (Send/Recv,
#    Isend/Irecv, Bcast, Reduce, Allreduce, Pack/Unpack) through the
#    interposer, every host/device sender/receiver pairing around the
#    chunk size, with 4 KiB chunks (deep pipeline) and 1 MiB chunks.
B=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
cd "$B" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export COLLX_GPU_CUDA_LIB="$B/libcollx_gpu_cuda.so"
# only the small pieces, if missing (the CUDA .so, two test programs)
make -s libcollx_gpu_cuda.so test/gpu/gpu_vs_cpu test/mpi/gpu_staging >/dev/null || { echo "FAIL: build"; exit 1; }
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"
fail=0
step() {
    local what=$1; shift
    local t0=$(date +%s)
    if "$@"; then echo "PASS: $what ($(( $(date +%s) - t0 ))s)"; else echo "FAIL: $what (exit $?)"; fail=$((fail + 1)); fi
}
step "CUDA backend == CPU backend, 3000 random types" \
    timeout 180 env OMPI_MCA_btl=self "$B/test/gpu/gpu_vs_cpu" cuda 3000
for chunk in 4096 1048576; do
    step "staged device transfers, 2 ranks, chunk $chunk" \
        timeout 120 mpirun -np 2 --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1 \
        -x COLLX_GPU_TEST_BACKEND=cuda -x COLLX_GPU_CUDA_LIB -x COLLX_GPU_CHUNK_BYTES=$chunk \
        "$B/test/mpi/gpu_staging"
done
echo "$fail step(s) failed"
[ $fail = 0 ]
