#!/bin/bash
# Side-by-side collective latency on emulated nodes: every contender in the
# same cluster session, sizes in powers of 4, medians over repetitions of the
# slowest rank's time per call (collx-bench), then one table per collective
# with the best collx contender against the best Open MPI one.
#
#   contrib/bench.sh [-n NODES] [-m RANKS] [--min BYTES] [--max BYTES]
#                    [--colls bcast,reduce,allreduce] [--rate RATE]
#                    [--contenders "tuned han adapt hanx adaptx adaptx:pipeline ..."]
#                    [--ratios "hanx/tuned hanx/han"] [--csv FILE]
#
# Collectives: bcast, reduce, allreduce (BYTES = the message), allgather and
# alltoall (BYTES = one rank's block).  --ratios adds a column A/B per pair:
# contender A's median over contender B's, from the same run.
# Contenders: tuned, han, adapt (Open MPI's own), hanx, adaptx, and
# adaptx:TREE (adaptx with TREE for every collective: binomial,
# in_order_binomial, binary, knomial, chain, pipeline, linear, topo).
# With --rate (e.g. 1gbit) each node's link is token-bucket limited and the
# table adds the bandwidth bound (n/B for bcast and reduce, 2(P-1)/P*n/B
# for allreduce, B = the rate) and the best collx time as a multiple of it.
# Needs a build and root.  Timings on a 2-core machine are noisy: compare
# ratios from one run.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=2 per=2 min=4 max=1048576 rate="" colls="bcast,reduce" csv="" ratios=""
contenders="tuned han adapt hanx adaptx"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --contenders) contenders=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --ratios) ratios=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bench="$build/collx-bench"
[ -x "$bench" ] || { echo "bench.sh: $bench not built (contrib/build.sh)" >&2; exit 1; }
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
# Prefer the build tree's components (the first copy in the path wins).
[ -f "$build/.libs/mca_coll_adaptx.so" ] &&
    export OMPI_MCA_mca_base_component_path="$build/.libs:$pkglibdir"

flags_of() {  # MCA flags selecting one contender
    case "$1" in
    tuned) echo "" ;;
    han|adapt|hanx|adaptx) echo "--mca coll_$1_priority 100" ;;
    adaptx:*) local t=${1#adaptx:}
        echo "--mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm $t" \
             "--mca coll_adaptx_reduce_algorithm $t --mca coll_adaptx_allreduce_algorithm $t" ;;
    *) echo "bench.sh: unknown contender $1" >&2; return 1 ;;
    esac
}
out=$(mktemp -d /tmp/collx-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
{
    echo "#!/bin/bash"
    for coll in ${colls//,/ }; do
        for c in $contenders; do
            f=$(flags_of "$c") || exit 2
            echo "echo '  measuring $coll via $c ...'"
            echo "\$COLLX_MPIRUN $f '$bench' --coll $coll --min $min --max $max > '$out/$coll.$c' 2> '$out/$coll.$c.err' ||" \
                 "{ echo 'bench.sh: $coll via $c failed:'; tail -5 '$out/$coll.$c.err'; exit 1; }"
        done
    done
} > "$out/session.sh"
chmod +x "$out/session.sh"
np=$((nodes * per))
echo "collx bench: $nodes emulated nodes x $per ranks${rate:+, links limited to $rate}; median latency in microseconds"
"$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" ${rate:+--rate "$rate"} --timeout 3000 -- --exec "$out/session.sh" || exit 1

# link rate in bytes per second (tc syntax: kbit, mbit, gbit)
bps=$(echo "$rate" | awk '/gbit$/{print $1*1e9/8; exit} /mbit$/{print $1*1e6/8; exit} /kbit$/{print $1*1e3/8; exit} {print 0}')
[ -n "$csv" ] && echo "coll,bytes,contender,median_us,min_us,max_us" > "$csv"
for coll in ${colls//,/ }; do
    echo
    echo "MPI_${coll^} ($np ranks)"
    awk -v coll="$coll" -v list="$contenders" -v ratios="$ratios" -v csv="$csv" -v dir="$out" -v bps="${bps:-0}" -v np="$np" '
    function upstream(c) { return c == "tuned" || c == "han" || c == "adapt" }
    BEGIN {
        n = split(list, c, " ")
        for (i = 1; i <= n; ++i) {
            f = dir "/" coll "." c[i]
            while ((getline line < f) > 0) {
                if (line ~ /^#/) continue
                split(line, w, " ")
                t[w[2], c[i]] = w[3]; sizes[w[2]] = 1
                if (csv != "") printf "%s,%s,%s,%s,%s,%s\n", coll, w[2], c[i], w[3], w[4], w[5] >> csv
            }
        }
        printf "%9s", "bytes"
        for (i = 1; i <= n; ++i) printf " %*s", (length(c[i]) > 9 ? length(c[i]) : 9), c[i]
        printf "  %-18s %10s", "best collx", "/upstream"
        nr = split(ratios, rat, " ")
        for (r = 1; r <= nr; ++r) printf " %*s", (length(rat[r]) > 9 ? length(rat[r]) : 9), rat[r]
        if (bps > 0) printf " %10s %8s", "bound_us", "/bound"
        printf "\n"
        m = 0; for (s in sizes) sz[++m] = s + 0
        for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (sz[j] < sz[i]) { x = sz[i]; sz[i] = sz[j]; sz[j] = x }
        for (k = 1; k <= m; ++k) {
            s = sz[k]; printf "%9d", s
            bu = 0; bc = 0; bn = "-"
            for (i = 1; i <= n; ++i) {
                v = t[s, c[i]]
                printf " %*s", (length(c[i]) > 9 ? length(c[i]) : 9), (v == "" ? "-" : v)
                if (v == "") continue
                if (upstream(c[i])) { if (bu == 0 || v + 0 < bu) bu = v + 0 }
                else if (bc == 0 || v + 0 < bc) { bc = v + 0; bn = c[i] }
            }
            printf "  %-18s %10s", bn, ((bu > 0 && bc > 0) ? sprintf("%.2f", bc / bu) : "-")
            for (r = 1; r <= nr; ++r) {
                split(rat[r], ab, "/"); va = t[s, ab[1]]; vb = t[s, ab[2]]
                printf " %*s", (length(rat[r]) > 9 ? length(rat[r]) : 9), ((va != "" && vb != "" && vb > 0) ? sprintf("%.2f", va / vb) : "-")
            }
            if (bps > 0 && (coll == "bcast" || coll == "reduce" || coll == "allreduce")) {
                bound = s / bps * 1e6
                if (coll == "allreduce") bound *= 2 * (np - 1) / np
                printf " %10.1f %8s", bound, ((bc > 0) ? sprintf("%.2f", bc / bound) : "-")
            }
            printf "\n"
        }
    }'
done
echo
echo "best collx /upstream < 1: collx's best contender is faster than Open MPI's best"
