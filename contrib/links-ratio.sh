#!/bin/bash
# How hanx sees the links of emulated nodes: RUNS fresh measurements
# (coll_hanx_model_measure, the machine file off), each a job of its own,
# and per run the two links' time per byte with the other ranks busy (the
# cost model's beta) and with them asleep (what collx_links_slow compares),
# and the ratios; then each column's range.  The figures behind
# COLLX_SLOW_LINK_RATIO (docs/cost-model.md, "Slow links").  Root, after
# contrib/build.sh.
#
#   contrib/links-ratio.sh [-n NODES] [-m RANKS] [--rate RATE] [--runs RUNS]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=2 per=2 rate="" runs=10
while [ $# -gt 0 ]; do
    case $1 in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "links-ratio.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$build/collx-bench" ] || { echo "links-ratio.sh: $build/collx-bench not built (contrib/build.sh)" >&2; exit 1; }
. "$src/contrib/build-env.sh"
use_build_components
echo "links-ratio: $nodes nodes x $per ranks${rate:+, links limited to $rate}, $runs runs"
echo "run  busy ns/B: within between ratio  quiet ns/B: within between ratio"
"$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" ${rate:+--rate "$rate"} --timeout 900 -- --exec \
    bash -c 'for i in $(seq '"$runs"'); do
                 $COLLX_MPIRUN --bind-to core --mca coll_hanx_priority 100 --mca coll_hanx_verbose 1 \
                     --mca coll_hanx_model_cache none "$0" --coll barrier --reps 1 --warmup 0 2>&1 |
                     grep -m1 "machine measured" || echo "no measurement"
             done' "$build/collx-bench" |
    awk '
    function num(s) { sub(/^[^0-9.-]*/, "", s); return s + 0 }
    /no measurement/ { print "  (a run printed no measurement)"; next }
    {
        # "... within a node A us + B ns/B, between nodes C us + D ns/B, a sum ...;
        #  asleep: within a node E ns/B, between nodes F ns/B"
        n = split($0, w, " ")
        bi = bb = qi = qb = -1; part = ""
        for (k = 1; k <= n; ++k) {
            if (w[k] == "asleep:") part = "q"
            if (w[k] == "ns/B," || w[k] == "ns/B" || w[k] == "ns/B;") {
                v = num(w[k - 1])
                if (part == "q") { if (qi < 0) qi = v; else if (qb < 0) qb = v }
                else { if (bi < 0) bi = v; else if (bb < 0) bb = v }
            }
        }
        ++r
        br = bi > 0 ? bb / bi : 0; qr = qi > 0 ? qb / qi : 0
        printf "%3d  %17.4f %7.4f %5.1f  %18.4f %7.4f %5.1f\n", r, bi, bb, br, qi, qb, qr
        col[1, r] = bi; col[2, r] = bb; col[3, r] = br; col[4, r] = qi; col[5, r] = qb; col[6, r] = qr
    }
    END {
        if (r == 0) exit 1
        printf "range"
        for (c = 1; c <= 6; ++c) {
            lo = hi = col[c, 1]
            for (k = 2; k <= r; ++k) { if (col[c, k] < lo) lo = col[c, k]; if (col[c, k] > hi) hi = col[c, k] }
            printf "  %s-%s", (c % 3 == 0 ? sprintf("%.1f", lo) : sprintf("%.3f", lo)),
                              (c % 3 == 0 ? sprintf("%.1f", hi) : sprintf("%.3f", hi))
        }
        print ""
    }'
