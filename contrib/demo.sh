#!/bin/bash
# collx demonstration: MPI_Bcast and MPI_Reduce latency through Open MPI's
# own tuned, han and adapt components and through collx's hanx and adaptx,
# side by side in one run on emulated nodes, with the ratios.
#
#   contrib/demo.sh [-n NODES] [-m RANKS_PER_NODE] [--max BYTES] [--rate RATE]
#                   [--colls bcast,reduce] [--csv FILE]
#
# Needs a build (contrib/quickstart.sh makes one) and root (emulated nodes
# are network namespaces).  Latencies are medians over repetitions of the
# slowest rank's time per call, rotating root; they are noisy on a 2-core
# machine, so compare ratios measured in the same run, not absolute values.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=2 per=2 max=1048576 rate="" colls="bcast,reduce" csv=""
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bench="$build/collx-bench"
[ -x "$bench" ] || { echo "demo.sh: $bench not built (run contrib/quickstart.sh or make)" >&2; exit 1; }
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
# Prefer the build tree's components (the first copy in the path wins);
# otherwise Open MPI finds the installed ones in its own directory.
if [ -f "$build/.libs/mca_coll_adaptx.so" ]; then
    export OMPI_MCA_mca_base_component_path="$build/.libs:$pkglibdir"
fi
out=$(mktemp -d /tmp/collx-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT

contenders="tuned han adapt hanx adaptx"
flags_tuned=""
flags_han="--mca coll_han_priority 100"
flags_adapt="--mca coll_adapt_priority 100"
flags_hanx="--mca coll_hanx_priority 100"
flags_adaptx="--mca coll_adaptx_priority 100"

cat > "$out/session.sh" <<SESSION
#!/bin/bash
for coll in ${colls//,/ }; do
  for c in $contenders; do
    eval f=\\\$flags_\$c
    echo "  measuring \$coll via \$c ..."
    \$COLLX_MPIRUN \$f "$bench" --coll \$coll --max $max > "$out/\$coll.\$c" 2> "$out/\$coll.\$c.err" ||
      { echo "demo.sh: \$coll via \$c failed:" >&2; tail -5 "$out/\$coll.\$c.err" >&2; exit 1; }
  done
done
SESSION
export flags_tuned flags_han flags_adapt flags_hanx flags_adaptx
chmod +x "$out/session.sh"
echo "collx demo: $nodes emulated nodes x $per ranks${rate:+, links limited to $rate}; latency in microseconds (median)"
rateopt=""; [ -n "$rate" ] && rateopt="--rate $rate"
"$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" $rateopt --timeout 1200 -- --exec "$out/session.sh" || exit 1

[ -n "$csv" ] && echo "coll,bytes,component,median_us,min_us,max_us" > "$csv"
for coll in ${colls//,/ }; do
    echo
    echo "MPI_${coll^} ($((nodes * per)) ranks)"
    awk -v coll="$coll" -v list="$contenders" -v csv="$csv" -v dir="$out" '
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
        printf "%10s", "bytes"
        for (i = 1; i <= n; ++i) printf " %9s", c[i]
        printf "  %12s %12s %10s %10s\n", "adaptx/tuned", "adaptx/adapt", "hanx/tuned", "hanx/han"
        m = 0; for (s in sizes) sz[++m] = s + 0
        for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (sz[j] < sz[i]) { x = sz[i]; sz[i] = sz[j]; sz[j] = x }
        for (k = 1; k <= m; ++k) {
            s = sz[k]; printf "%10d", s
            for (i = 1; i <= n; ++i) printf " %9s", t[s, c[i]]
            printf "  %12.2f %12.2f %10.2f %10.2f\n", t[s,"adaptx"]/t[s,"tuned"], t[s,"adaptx"]/t[s,"adapt"], t[s,"hanx"]/t[s,"tuned"], t[s,"hanx"]/t[s,"han"]
        }
    }'
done
echo
echo "ratios < 1 mean collx is faster; rerun for spread (2-core machine, noisy)"
