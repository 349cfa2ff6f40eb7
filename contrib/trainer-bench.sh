#!/bin/bash
# The example data-parallel trainer (examples/trainer) on emulated nodes for
# several contenders in one cluster session, runs interleaved in rounds
# (contender order rotating), and a table: median time per iteration, the
# share spent in communication, the speedup over tuned in the same mode, and
# whether every run ended with identical weights on all ranks.
#
#   contrib/trainer-bench.sh [-n NODES] [-m RANKS] [--rate RATE]
#                            [--contenders "tuned han hanx adaptx:pipeline"]
#                            [--modes "layer bucket overlap"] [--rounds R]
#                            [--run-timeout SECONDS] [-- TRAINER-OPTIONS]
#
# Contenders as in contrib/bench.sh (contrib/contenders.sh).  Default trainer
# options: --layers 128,512,512,10 --batch 16 --iters 40 --warmup 5
# (bucket mode: 1 MiB buckets).  A run that crashes or takes longer than
# --run-timeout (default 240 s) shows FAILED; the others go on.  Exit 1 if
# any run failed or ended with weights that differ between ranks.  Needs a
# build and root.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=4 per=2 rate="" rounds=3 modes="layer bucket overlap" run_tmo=240
contenders="tuned han hanx adaptx:pipeline"
targs="--layers 128,512,512,10 --batch 16 --iters 40 --warmup 5"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --contenders) contenders=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --run-timeout) run_tmo=$2; shift 2 ;;
    --) shift; targs="$*"; break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "trainer-bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
trainer="$build/examples/trainer/trainer"
[ -x "$trainer" ] || make -C "$build" examples/trainer/trainer > /dev/null ||
    { echo "trainer-bench.sh: cannot build $trainer" >&2; exit 1; }
. "$src/contrib/build-env.sh"
use_build_components
. "$src/contrib/contenders.sh"
parse_contenders "$contenders" || exit 2
nc=${#labels[@]}
out=$(mktemp -d /tmp/collx-trainer.XXXXXX)
trap 'rm -rf "$out"' EXIT
{
    echo "#!/bin/bash"
    for ((r = 0; r < rounds; ++r)); do
        echo "echo '  round $((r + 1))/$rounds'"
        for ((k = 0; k < nc; ++k)); do
            i=$(( (k + r) % nc ))
            for m in $modes; do
                echo "timeout -k 5 $run_tmo \$COLLX_MPIRUN ${flags[$i]} $(printf %q "$trainer") $targs --mode $m > '$out/$i.$m.$r' 2>&1 ||" \
                     "{ echo '  ${labels[$i]} $m failed (round $((r + 1)), exit '\$?'):'; grep -m2 -E 'Signal:|rror|DIFFER' '$out/$i.$m.$r'; }"
            done
        done
    done
} > "$out/session.sh"
chmod +x "$out/session.sh"
echo "trainer bench: $nodes emulated nodes x $per ranks${rate:+, links limited to $rate}; $rounds interleaved rounds"
echo "trainer options: $targs"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
"$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" ${rate:+--rate "$rate"} --timeout 3000 \
    -- --exec "$out/session.sh" || exit 1
grep -h -m1 '^trainer:' "$out"/0.*.0 | head -1
lab=$(printf '%s\n' "${labels[@]}")
awk -v dir="$out" -v nc="$nc" -v rounds="$rounds" -v labs="$lab" -v modes="$modes" '
function isort(a, n,   i, j, x) { for (i = 2; i <= n; ++i) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; --j) a[j + 1] = a[j]; a[j + 1] = x } }
function med(a, n) { isort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
BEGIN {
    split(labs, L, "\n"); nm = split(modes, M, " "); bad = 0
    printf "\n%-22s %-8s %12s %11s %16s %9s\n", "contender", "mode", "ms/iter", "comm share", "speedup vs tuned", "weights"
    for (mi = 1; mi <= nm; ++mi) {
        m = M[mi]
        for (i = 0; i < nc; ++i) {
            n = 0; delete T; delete C; w = "identical"
            for (r = 0; r < rounds; ++r) {
                f = dir "/" i "." m "." r; got = 0
                while ((getline line < f) > 0) {
                    if (line !~ /^RESULT /) continue
                    got = 1; k = split(line, kv, " ")
                    for (j = 2; j <= k; ++j) { split(kv[j], p, "="); v[p[1]] = p[2] }
                    T[++n] = v["iter_ms"]; C[n] = v["comm_share"]
                    if (v["weights"] != "identical") w = "DIFFER"
                }
                if (!got) w = "FAILED"
            }
            if (w != "identical") bad = 1
            if (n == 0) { row[i, m] = sprintf("%-22s %-8s %12s %11s", L[i + 1], m, "-", "-"); wt[i, m] = w; continue }
            t = med(T, n); c = med(C, n); ms[i, m] = t
            if (L[i + 1] == "tuned") base[m] = t
            row[i, m] = sprintf("%-22s %-8s %12.2f %10.1f%%", L[i + 1], m, t, 100 * c); wt[i, m] = w
        }
        for (i = 0; i < nc; ++i) if ((i, m) in row)
            printf "%s %16s %9s\n", row[i, m], (m in base && ms[i, m] > 0) ? sprintf("%.2f", base[m] / ms[i, m]) : "-", wt[i, m]
    }
    printf "\nms/iter: median over rounds of the median iteration (slowest rank); comm share: time in the\n"
    printf "gradient exchange (MPI calls) over iteration time; speedup: tuned ms/iter over this one, same mode\n"
    exit bad
}'
rc=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
