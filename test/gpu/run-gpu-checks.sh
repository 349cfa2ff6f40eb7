#!/bin/bash
# GPU checks and benchmark of the datatype engine, for a machine with an
# NVIDIA GPU (one H200: about 5 minutes).  Either from a configured and
# built tree (builds the missing pieces), or from a bundle made by
# contrib/gpu-bundle.sh on a machine without a GPU (for a GPU machine that
# has no Open MPI and no network):
#   test/gpu/run-gpu-checks.sh [BUILDDIR]
#   test/gpu/run-gpu-checks.sh --bundle DIR [--out DIR]
# 1. CUDA backend vs CPU backend on random nested datatypes (pack to host,
#    pack to device, unpack), plus device pack throughput;
# 2. staged transfers with real device buffers across 2 ranks (Send/Recv,
#    Isend/Irecv, Bcast, Reduce, Allreduce, Pack/Unpack) through the
#    interposer, every host/device sender/receiver pairing around the
#    chunk size, with 4 KiB chunks (deep pipeline) and 1 MiB chunks;
# 3. collx-gpu-bench-device: pack/unpack GB/s against per-block copies and
#    the CPU engine (the table of docs/gpu-datatype.md), its results checked.
# With --out, each step's output is also written there.
out=
if [ "$1" = --bundle ]; then
    D=$(cd "$2" && pwd) || exit 1
    shift 2
    [ "$1" = --out ] && { out=$2; shift 2; }
    # shellcheck source=/dev/null
    . "$D/ompi/env.sh" || exit 1
    export LD_LIBRARY_PATH="$D/lib:$LD_LIBRARY_PATH"
    export COLLX_GPU_CUDA_LIB="$D/lib/libcollx_gpu_cuda.so"
    vs_cpu=$D/bin/gpu_vs_cpu staging=$D/bin/gpu_staging bench=$D/bin/collx-gpu-bench-device
else
    B=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
    cd "$B" || exit 1
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export COLLX_GPU_CUDA_LIB="$B/libcollx_gpu_cuda.so"
    # only the small pieces, if missing (the CUDA .so, three programs)
    make -s libcollx_gpu_cuda.so test/gpu/gpu_vs_cpu test/mpi/gpu_staging collx-gpu-bench-device >/dev/null ||
        { echo "FAIL: build"; exit 1; }
    vs_cpu=$B/test/gpu/gpu_vs_cpu staging=$B/test/mpi/gpu_staging bench=$B/collx-gpu-bench-device
fi
[ -n "$out" ] && mkdir -p "$out"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"
fail=0 n=0
step() {
    local what=$1; shift
    local t0=$(date +%s) log=/dev/null rc
    n=$((n + 1))
    [ -n "$out" ] && log=$out/step$n.log
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then echo "PASS: $what ($(( $(date +%s) - t0 ))s)"; else echo "FAIL: $what (exit $rc)"; fail=$((fail + 1)); fi
}
step "CUDA backend == CPU backend, 3000 random types" \
    timeout 120 env OMPI_MCA_btl=self "$vs_cpu" cuda 3000
for chunk in 4096 1048576; do
    step "staged device transfers, 2 ranks, chunk $chunk" \
        timeout 90 mpirun -np 2 --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1 \
        -x COLLX_GPU_TEST_BACKEND=cuda -x COLLX_GPU_CUDA_LIB -x COLLX_GPU_CHUNK_BYTES=$chunk \
        -x LD_LIBRARY_PATH "$staging"
done
step "device pack/unpack benchmark (results checked against the CPU engine)" \
    timeout 240 env OMPI_MCA_btl=self "$bench" ${COLLX_GPU_BENCH_ARGS:-}
echo "$fail step(s) failed"
[ $fail = 0 ]
