#!/bin/bash
# Reproduce the CPU pack table of docs/gpu-datatype.md: engine vs the system
# MPI_Pack, same run, medians over repetitions (one process, no mpirun).
#   contrib/bench-gpu-dtype.sh [--bytes N] [--reps R]
set -e
cd "$(dirname "$0")/.."
make -s collx-gpu-bench-pack >/dev/null
export OMPI_MCA_btl=self OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# $(date -u +%F) $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(ompi_info --version 2>/dev/null | head -1)"
./collx-gpu-bench-pack "$@"
