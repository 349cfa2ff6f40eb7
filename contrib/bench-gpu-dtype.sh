#!/bin/bash
# Reproduce the CPU pack table of docs/gpu-datatype.md: engine vs the system
# MPI_Pack, same run, medians over repetitions (one process, no mpirun).
#   contrib/bench-gpu-dtype.sh [--runs K] [--bytes N] [--reps R]
# With --runs K (default 1) the benchmark runs K times; the median columns
# are medians over the K runs (speed-up: median of the per-run ratios), the
# "best" columns the best throughput seen over all runs and their ratio.
set -e
cd "$(dirname "$0")/.."
runs=1
if [ "$1" = --runs ]; then runs=$2; shift 2; fi
make -s collx-gpu-bench-pack >/dev/null
export OMPI_MCA_btl=self OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# $(date -u +%F) $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(ompi_info --version 2>/dev/null | head -1)"
echo "# $runs run(s); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$runs" = 1 ]; then
    ./collx-gpu-bench-pack "$@"
    exit
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for ((i = 0; i < runs; ++i)); do ./collx-gpu-bench-pack "$@" | grep -E '^\| [a-z]' | grep -v '^| type' >>"$tmp"; done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| type | block (B) | packed (MiB) | MPI_Pack (GB/s) | collx CPU (GB/s) | speed-up | MPI_Pack best | collx best | speed-up (best) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
# median per (type, block) of each numeric column over the runs ("best"
# columns: the best over all runs), rows in first-seen order
awk -F'|' '
function med(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; ++i) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; --j) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function mx(s,   a, n, i, m) { n = split(s, a, " "); m = a[1] + 0; for (i = 2; i <= n; ++i) if (a[i] + 0 > m) m = a[i] + 0; return m }
{
    k = $2 "|" $3
    if (!(k in seen)) { seen[k] = 1; order[++m] = k; mib[k] = $4 }
    for (c = 5; c <= 10; ++c) { v = $c; gsub(/[ x]/, "", v); col[k, c] = col[k, c] " " v }
}
END { for (i = 1; i <= m; ++i) { k = order[i]; split(k, p, "|")
    bm = mx(col[k, 8]); bc = mx(col[k, 9])
    printf "|%s|%s|%s| %.2f | %.2f | %.1fx | %.2f | %.2f | %.1fx |\n", p[1], p[2], mib[k],
        med(col[k, 5]), med(col[k, 6]), med(col[k, 7]), bm, bc, bc / bm } }' "$tmp"
