#!/bin/bash
# Make a bundle for test/gpu/run-gpu-checks.sh --bundle on a GPU machine that
# has neither Open MPI nor a network: the GPU test programs and benchmark,
# the collx GPU libraries, and a relocatable copy of this machine's Open MPI
# runtime (made by contrib/ompi-bundle.sh).  Run from a built tree
# configured with CUDA (nvcc found):
#   contrib/gpu-bundle.sh [DIR]          (default .gpu-carry)
set -e
cd "$(dirname "$0")/.."
D=${1:-.gpu-carry}
make -s libcollx_gpu_cuda.so libcollx_gpu.la libcollx_gpu_interpose.la test/gpu/gpu_vs_cpu test/mpi/gpu_staging \
    collx-gpu-bench-device >/dev/null
rm -rf "$D/bin" "$D/lib"
mkdir -p "$D/bin" "$D/lib"
cp test/gpu/gpu_vs_cpu collx-gpu-bench-device "$D/bin/"
cp test/mpi/.libs/gpu_staging "$D/bin/"
cp -a libcollx_gpu_cuda.so .libs/libcollx_gpu.so* .libs/libcollx_gpu_interpose.so* "$D/lib/"
strip --strip-unneeded "$D"/bin/* "$D"/lib/*.so.*.*
[ -f "$D/ompi/env.sh" ] || contrib/ompi-bundle.sh "$D/ompi"
du -sh "$D"
