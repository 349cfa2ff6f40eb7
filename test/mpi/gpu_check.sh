#!/bin/bash
# GPU datatype engine, staged transfers through the interposer on this
# machine: host memory registered as "device" memory (fake backend) moves
# through the same pipelined staging code as real device buffers.  Every
# host/device sender/receiver pairing is run at 0 B, < 1 chunk, exactly 1
# chunk, 3 chunks and 2.25 chunks + 4 B, for each chunk size below.
. "$(dirname "$0")/common.sh"
PROG="$COLLX_BUILDDIR/test/mpi/gpu_staging"
run_staging() {  # run_staging CHUNK STAGES
    local_run 120 2 -x COLLX_GPU_CHUNK_BYTES=$1 -x COLLX_GPU_STAGES=$2 "$PROG" > "$COLLX_BUILDDIR/test/mpi/gpu_staging.$1.$2.out" 2>&1
    local rc=$?
    cat "$COLLX_BUILDDIR/test/mpi/gpu_staging.$1.$2.out"
    return $rc
}
step "staged path, 4 KiB chunks, 2 stages (many chunks in flight)" run_staging 4096 2
step "staged path, 1 KiB chunks, 3 stages" run_staging 1024 3
step "staged path, 1 MiB chunks (the default; messages of 0 B to 3 MiB)" run_staging 1048576 2
# the individual checks of the last run, as steps of this script
grep -E "^(PASS|FAIL): " "$COLLX_BUILDDIR/test/mpi/gpu_staging.4096.2.out" | sed 's/^/  /'
rm -f "$COLLX_BUILDDIR"/test/mpi/gpu_staging.*.out
finish
