#!/bin/bash
# Side-by-side collective benchmark: every contender in the same run on
# emulated nodes (or a real hostfile), repetitions interleaved across
# contenders in rounds, validated results, latency, algorithm and bus
# bandwidth, the alpha-beta lower bound on the measured links, the ratio to
# the best upstream contender; a text table, CSV, JSON and plots.
#
#   contrib/bench.sh [-n NODES] [-m RANKS] [--hostfile FILE] [--rate RATE]
#                    [--colls LIST|all] [--min BYTES] [--max BYTES] [--factor F]
#                    [--contenders "tuned han adapt hanx adaptx:pipeline ..."]
#                    [--upstream "tuned han adapt"] [--rounds R] [--reps K]
#                    [--time-per-rep S] [--ratios "hanx/tuned ..."]
#                    [--out DIR] [--csv FILE] [--json FILE] [--no-plot]
#                    [--run-timeout SECONDS] [--stat median|min|p25]
#                    [--mpirun-args "ARGS"] [--no-bind]
#   contrib/bench.sh --replot DIR [--stat S] [--ratios ...] [--out DIR2]
#
# Collectives (LIST, comma-separated, or all): bcast, reduce, allreduce,
# ibcast, ireduce, iallreduce (BYTES = the message), allgather, iallgather, alltoall,
# reduce_scatter, ireduce_scatter (BYTES = one rank's block), barrier (no size).
# Sizes: --min to --max in steps of * --factor (default 4 .. 1 MiB, x4).
# Contenders (contrib/contenders.sh):
#   default               Open MPI's default selection (Open MPI 5.0: han on)
#   tuned                 Open MPI's tuned: the default with han excluded
#                         (the same as default on Open MPI 4.1)
#   han, adapt, hanx, adaptx     that component at priority 100
#   adaptx:TREE           adaptx with TREE for bcast, reduce and allreduce:
#                         binomial, in_order_binomial, binary, knomial, chain,
#                         pipeline (the linear pipeline, LP), linear, topo, ring,
#                         recursive_doubling
#   hanx:FILE             hanx with the tuning file FILE (collx-tune output)
#   LABEL=K=V[,K=V...]    anything else: mpirun --mca K V ... under LABEL
# --upstream names the Open MPI contenders (default tuned han adapt): the
# table's "/upstream" is the best other contender over the best of these.
# Interleaving: --rounds R (default 3) rounds; in each, one mpirun per
# contender runs --reps K (default 3) repetitions of every size, the contender
# order rotating from round to round; medians and spreads pool the R*K
# repetitions, so slow drift of the machine falls on every contender alike.
# Round 1 also measures the links (ping-pong, --pingpong of collx-bench) for
# the alpha-beta bound.  --rate (e.g. 1gbit) limits each emulated node's
# link with a token bucket.  On emulated nodes the ranks are bound to cores
# (--bind-to core: each node's k-th rank on core k, as contrib/tune.sh
# binds them): unbound (--no-bind), the scheduler pairs the ranks on the
# cores differently from one mpirun to the next, and contenders running the
# same code measured 12-20% apart at small sizes (docs/benchmarks.md).
# --hostfile runs on real hosts instead
# (mpirun --hostfile FILE -np NODES*RANKS plus --mpirun-args "ARGS", e.g.
# the network to use; -n/-m describe the layout).
# --out DIR writes DIR/results.csv, results.json, links.txt and, where
# gnuplot is installed, DIR/COLL-latency.{svg,png} and COLL-busbw.{svg,png}.
# A contender's mpirun that fails (a validation error, a crash) or runs past
# --run-timeout (default 900 s) is reported and the run goes on: what it
# measured before stays, the rest of its cells show "-", and bench.sh exits 1
# at the end.  --stat picks the statistic of the table and the plots (default
# median; min or p25 show what the machine does when nobody else disturbs it);
# the CSV and JSON always hold all of them.  --replot DIR redraws the table
# (and, with --out, the plots) from DIR/results.csv of an earlier run without
# measuring.  Definitions and formulas: docs/benchmarks.md.  Needs a build and root.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=2 per=2 min=4 max=1048576 factor=4 rate="" colls="bcast,reduce" csv="" json="" ratios=""
contenders="tuned han adapt hanx adaptx" upstream="tuned han adapt" rounds=3 reps=3
per_rep=0.02 outdir="" plot=1 hostfile="" run_tmo=900 stat=median replot="" mpirun_args="" bind="--bind-to core"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --mpirun-args) mpirun_args=$2; shift 2 ;;
    --no-bind) bind=""; shift ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --factor) factor=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --contenders) contenders=$2; shift 2 ;;
    --upstream) upstream=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --time-per-rep) per_rep=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --out) outdir=$2; shift 2 ;;
    --no-plot) plot=0; shift ;;
    --run-timeout) run_tmo=$2; shift 2 ;;
    --ratios) ratios=$2; shift 2 ;;
    --stat) stat=$2; shift 2 ;;
    --replot) replot=$2; shift 2 ;;
    -h|--help) sed -n '2,52p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$colls" = all ] && colls="bcast,reduce,allreduce,allgather,alltoall,reduce_scatter,barrier,ibcast,iallreduce"
case "$stat" in  # its column in results.csv
median) statcol=5 ;; min) statcol=6 ;; p25) statcol=8 ;;
*) echo "bench.sh: --stat median, min or p25" >&2; exit 2 ;;
esac
if [ -n "$replot" ]; then
    [ -f "$replot/results.csv" ] || { echo "bench.sh: $replot/results.csv not found" >&2; exit 1; }
    out=$(mktemp -d /tmp/collx-bench.XXXXXX)
    trap 'rm -rf "$out"' EXIT
    cp "$replot/results.csv" "$out/"
    cp "$replot/links.txt" "$out/" 2> /dev/null || : > "$out/links.txt"
    mapfile -t labels < <(awk -F, 'NR > 1 && !seen[$3]++ { print $3 }' "$out/results.csv")
    colls=$(awk -F, 'NR > 1 && !seen[$1]++ { printf "%s%s", (n++ ? "," : ""), $1 }' "$out/results.csv")
    j=$(cat "$replot/results.json" 2> /dev/null)
    field() { echo "$j" | sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"]*\).*/\1/p" | head -1; }
    nodes=$(field nodes) per=$(field ranks_per_node) rate=$(field rate) rounds=$(field rounds)
    reps=$(field reps_per_round)
    [ -n "$nodes" ] && [ -n "$per" ] || { echo "bench.sh: $replot/results.json lacks the layout" >&2; exit 1; }
    np=$((nodes * per))
    echo "collx bench (redrawn from $replot): $nodes nodes x $per ranks${rate:+, links limited to $rate};" \
         "$rounds interleaved rounds x $reps repetitions"
else
bench="$build/collx-bench"
[ -x "$bench" ] || { echo "bench.sh: $bench not built (contrib/build.sh)" >&2; exit 1; }
. "$src/contrib/build-env.sh"
use_build_components

. "$src/contrib/contenders.sh"
parse_contenders "$contenders" || exit 2
nc=${#labels[@]}
out=$(mktemp -d /tmp/collx-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/raw"
[ -z "$hostfile" ] || bind=""  # (real hosts: --mpirun-args says)
args="--coll $colls --min $min --max $max --factor $factor --reps $reps --time-per-rep $per_rep --raw"
{
    echo "#!/bin/bash"
    echo "\$COLLX_MPIRUN $bind $(printf %q "$bench") --pingpong --burst \${COLLX_LINK_BURST:-0} > '$out/links.txt' 2> '$out/links.err' ||" \
         "{ echo 'bench.sh: link measurement failed:'; tail -5 '$out/links.err'; exit 1; }"
    echo "echo \"# burst \${COLLX_LINK_BURST:-0}\" >> '$out/links.txt'"
    for ((r = 0; r < rounds; ++r)); do
        echo "echo '  round $((r + 1))/$rounds'"
        for ((k = 0; k < nc; ++k)); do
            i=$(( (k + r) % nc ))
            echo "c0=\$(\${COLLX_LINKSTAT:-true})"
            echo "timeout -k 5 $run_tmo \$COLLX_MPIRUN $bind ${flags[$i]} $(printf %q "$bench") $args > '$out/raw/$i.$r' 2> '$out/raw/$i.$r.err' ||" \
                 "{ echo '  ${labels[$i]} failed (round $((r + 1)), exit '\$?'):'; grep -m3 -E 'collx-bench|rror' '$out/raw/$i.$r.err'; echo $i >> '$out/failed'; }"
            echo "[ -z \"\${COLLX_LINKSTAT:-}\" ] || echo \"\$c0 \$(\$COLLX_LINKSTAT)\" > '$out/raw/$i.$r.links'"
        done
    done
} > "$out/session.sh"
chmod +x "$out/session.sh"
np=$((nodes * per))
echo "collx bench: $nodes ${hostfile:+real}${hostfile:-emulated} nodes x $per ranks${rate:+, links limited to $rate}${bind:+, ranks bound to cores};" \
     "$rounds interleaved rounds x $reps repetitions; $stat latency in microseconds"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
if [ -n "$hostfile" ]; then
    COLLX_MPIRUN="${MPIRUN:-mpirun} --hostfile $hostfile -np $np $mpirun_args" COLLX_CLUSTER_NP=$np \
        "$out/session.sh" || exit 1
else
    "$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" ${rate:+--rate "$rate"} --timeout 3000 \
        -- --exec "$out/session.sh" || exit 1
fi

# --------------------------------------------------------------- results
lab=$(printf '%s\n' "${labels[@]}")
# the links' counters (emulated nodes): what each contender's runs dropped
# and retransmitted, summed over the rounds, into links.txt
for ((i = 0; i < nc; ++i)); do
    cat "$out"/raw/$i.*.links 2> /dev/null |
        awk -v l="${labels[$i]}" '{ d += $6 - $2; r += $8 - $4; n++ }
            END { if (n) printf "# counters %s drops %d retransmits %d\n", l, d, r }'
done >> "$out/links.txt"
# pool the rounds' repetitions; one CSV row per collective, size, contender
awk -v dir="$out" -v nc="$nc" -v rounds="$rounds" -v labs="$lab" -v up=" $upstream " \
    -v nodes="$nodes" -v per="$per" -v rate="$rate" -v emulated="$([ -z "$hostfile" ] && echo 1)" '
function isort(a, n,   i, j, x) { for (i = 2; i <= n; ++i) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; --j) a[j + 1] = a[j]; a[j + 1] = x } }
function q(a, n, p,   x) { x = 1 + p * (n - 1); return a[int(x)] + (x - int(x)) * (a[int(x) + (x > int(x))] - a[int(x)]) }
# alpha-beta lower bound on one level, for a call among back-to-back calls (a
# repetition loop of K calls): U units joined by links (alpha us, beta us/byte),
# k ranks per unit; S the message, n a rank block (bytes); B the burst a token
# bucket passes at once, at most once per repetition and unit; docs/benchmarks.md
function lvl(coll, U, k, al, be, S, B, K,   bw, rooted) {
    if (U < 2 || al == "") return 0
    rooted = (coll == "bcast" || coll == "reduce" || coll == "ibcast" || coll == "ireduce")
    if (rooted) bw = (U - 1) / U * S * be  # the calls of a loop share the sending out
    else if (coll ~ /allreduce/) bw = 2 * (U - 1) / U * S * be
    else if (coll ~ /allgather/ || coll ~ /reduce_scatter/) bw = (U - 1) * k * S * be
    else if (coll == "alltoall") bw = (U - 1) * k * k * S * be
    else bw = 0  # barrier
    bw -= B * be / K
    if (bw < 0) bw = 0
    if (rooted) return bw          # consecutive calls overlap: no latency term
    return bw > al ? bw : al       # each call waits for a message sent after the last ended
}
# a tc rate ("1gbit", "200mbit", "10mbps", ...) in us per byte; 0 if none
function rate_beta(r,   v, u) {
    if (!match(r, /^[0-9.]+/)) return 0
    v = substr(r, 1, RLENGTH) + 0; u = tolower(substr(r, RLENGTH + 1))
    if (u ~ /^k/) v *= 1e3; else if (u ~ /^m/) v *= 1e6; else if (u ~ /^g/) v *= 1e9; else if (u ~ /^t/) v *= 1e12
    if (u ~ /bps$/) v *= 8  # bytes per second
    return v > 0 ? 8e6 / v : 0
}
BEGIN {
    P = nodes * per
    while ((getline line < (dir "/links.txt")) > 0) {
        split(line, w, " ")
        if (w[2] == "alphabeta") { alpha[w[3]] = w[4]; beta[w[3]] = w[5] }
        if (w[2] == "burst") burst = w[3] + 0
    }
    # a rate-limited node link moves at most the rate (a ping-pong stream may
    # not fill it); an unlimited one as fast as its ranks move data, each with
    # a TCP stream of its own (the ping-pong measured one), and an unlimited
    # emulated one is the kernel copying bytes: no faster than a memory copy
    rb = rate_beta(rate)
    if (rb > 0) { if (beta["inter"] == "" || rb < beta["inter"]) beta["inter"] = rb }
    else if (beta["inter"] != "") {
        if (emulated && beta["intra"] != "" && beta["intra"] < beta["inter"]) beta["inter"] = beta["intra"]
        beta["inter"] /= per
    }
    split(labs, L, "\n")
    for (i = 0; i < nc; ++i) for (r = 0; r < rounds; ++r) {
        f = dir "/raw/" i "." r
        while ((getline line < f) > 0) {
            if (line ~ /^# iters /) {  # the calls in a repetition: the fewest of all contenders
                split(line, w, " "); ik = w[3] SUBSEP w[4]
                if (!(ik in iters) || w[5] + 0 < iters[ik]) iters[ik] = w[5] + 0
            }
            if (line ~ /^#/) continue
            m = split(line, w, " ")
            key = w[1] SUBSEP w[2] SUBSEP i
            if (!(key in cnt)) { keys[++nk] = key }
            for (j = 3; j <= m; ++j) smp[key, ++cnt[key]] = w[j]
        }
    }
    print "coll,bytes,contender,upstream,median_us,min_us,max_us,p25_us,p75_us,samples,algbw_GBps,busbw_GBps,bound_us,bound_fraction,ratio_to_best_upstream,source"
    for (x = 1; x <= nk; ++x) {
        split(keys[x], kk, SUBSEP); coll = kk[1]; s = kk[2]; i = kk[3]
        n = cnt[keys[x]]; delete a
        for (j = 1; j <= n; ++j) a[j] = smp[keys[x], j] + 0
        isort(a, n)
        med = q(a, n, 0.5)
        wide = (coll ~ /allgather/ || coll == "alltoall" || coll ~ /reduce_scatter/)
        S = wide ? s * P : s
        fac = (coll ~ /allreduce/) ? 2 * (P - 1) / P : (wide ? (P - 1) / P : 1)
        alg = (coll == "barrier" || med <= 0) ? "" : sprintf("%.4f", S / med / 1e3)
        bus = alg == "" ? "" : sprintf("%.4f", alg * fac)
        K = (coll SUBSEP s) in iters ? iters[coll, s] : 1
        b1 = lvl(coll, nodes, per, alpha["inter"], beta["inter"], s, burst, K)
        b2 = lvl(coll, per, 1, alpha["intra"], beta["intra"], s, 0, K)
        bound = b1 > b2 ? b1 : b2
        isup = index(up, " " L[i + 1] " ") > 0
        row[x] = sprintf("%s,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%s,%s,%s,%s", coll, s, L[i + 1], isup,
                         med, a[1], a[n], q(a, n, 0.25), q(a, n, 0.75), n, alg, bus,
                         bound > 0 ? sprintf("%.3f", bound) : "",
                         bound > 0 ? sprintf("%.4f", bound / med) : "")
        rk[x] = coll SUBSEP s
        if (isup && (!(rk[x] in bestup) || med < bestup[rk[x]])) bestup[rk[x]] = med
        medv[x] = med
    }
    for (x = 1; x <= nk; ++x)
        printf "%s,%s,measured\n", row[x], (rk[x] in bestup) ? sprintf("%.4f", medv[x] / bestup[rk[x]]) : ""
}' > "$out/results.csv"
fi  # measuring

# ---------------------------------------------------------------- table
lab=$(printf '%s\n' "${labels[@]}")
awk -F, -v list="$lab" -v ratios="$ratios" -v colls="$colls" -v np="$np" -v links="$out/links.txt" -v sc="$statcol" -v stat="$stat" '
function w(s) { return length(s) > 9 ? length(s) : 9 }
BEGIN {
    n = split(list, c, "\n")
    while ((getline line < links) > 0) {
        split(line, lv, " ")
        if (lv[2] == "alphabeta") printf "link %s: alpha %.2f us, beta %.4g us/byte (%.2f GB/s)\n", lv[3], lv[4], lv[5], (lv[5] > 0 ? 1e-3 / lv[5] : 0)
        if (lv[2] == "counters") cnt = cnt sprintf("%s %s %d/%d", (cnt == "" ? "" : ","), lv[3], lv[5], lv[7])
    }
    if (cnt != "") printf "link packet drops/TCP retransmits during the runs of each contender:%s\n", cnt
}
NR > 1 {  # the chosen statistic; busBw scales inversely with the time
    t[$1, $2, $3] = $sc; bus[$1, $2, $3] = ($12 != "" && $sc > 0) ? $12 * $5 / $sc : ""
    up[$3] = $4; bound[$1, $2] = $13; sizes[$1, $2] = 1
}
END {
    nn = split(colls, cl, ",")
    for (ci = 1; ci <= nn; ++ci) {
        coll = cl[ci]; m = 0; delete sz
        for (k in sizes) { split(k, kk, SUBSEP); if (kk[1] == coll) sz[++m] = kk[2] + 0 }
        for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (sz[j] < sz[i]) { x = sz[i]; sz[i] = sz[j]; sz[j] = x }
        printf "\nMPI_%s (%d ranks): %s latency (us)\n", toupper(substr(coll, 1, 1)) substr(coll, 2), np, stat
        printf "%9s", "bytes"
        for (i = 1; i <= n; ++i) printf " %*s", w(c[i]), c[i]
        printf "  %-18s %9s %10s %9s", "best other", "/upstream", "bound_us", "%bound"
        nr = split(ratios, rat, " ")
        for (r = 1; r <= nr; ++r) printf " %*s", w(rat[r]), rat[r]
        printf "\n"
        for (k = 1; k <= m; ++k) {
            s = sz[k]; printf "%9d", s
            bu = 0; bc = 0; bn = "-"
            for (i = 1; i <= n; ++i) {
                v = t[coll, s, c[i]]
                printf " %*s", w(c[i]), (v == "" ? "-" : sprintf("%.2f", v))
                if (v == "") continue
                if (up[c[i]]) { if (bu == 0 || v + 0 < bu) bu = v + 0 }
                else if (bc == 0 || v + 0 < bc) { bc = v + 0; bn = c[i] }
            }
            bd = bound[coll, s]
            printf "  %-18s %9s %10s %9s", bn, ((bu > 0 && bc > 0) ? sprintf("%.2f", bc / bu) : "-"),
                   (bd == "" ? "-" : sprintf("%.1f", bd)), ((bd != "" && bc > 0) ? sprintf("%.0f%%", 100 * bd / bc) : "-")
            for (r = 1; r <= nr; ++r) {
                split(rat[r], ab, "/"); va = t[coll, s, ab[1]]; vb = t[coll, s, ab[2]]
                printf " %*s", w(rat[r]), ((va != "" && vb != "" && vb > 0) ? sprintf("%.2f", va / vb) : "-")
            }
            printf "\n"
        }
        if (coll == "barrier") continue
        printf "MPI_%s: bus bandwidth (GB/s, nccl-tests definition; %s time)\n", toupper(substr(coll, 1, 1)) substr(coll, 2), stat
        printf "%9s", "bytes"
        for (i = 1; i <= n; ++i) printf " %*s", w(c[i]), c[i]
        printf "\n"
        for (k = 1; k <= m; ++k) {
            s = sz[k]; printf "%9d", s
            for (i = 1; i <= n; ++i) { v = bus[coll, s, c[i]]; printf " %*s", w(c[i]), (v == "" ? "-" : sprintf("%.3f", v)) }
            printf "\n"
        }
    }
    print "\nbest other: the fastest contender not in --upstream; /upstream < 1: it beats the best upstream one;"
    print "bound_us: alpha-beta lower bound on the measured links; %bound: bound / best other (100% = at the bound)"
}' "$out/results.csv"

# ---------------------------------------------------------------- files
to_json() {  # the CSV as a JSON document
    awk -F, -v nodes="$nodes" -v per="$per" -v rate="$rate" -v rounds="$rounds" -v reps="$reps" -v links="$out/links.txt" '
    BEGIN {
        printf "{\n  \"nodes\": %d, \"ranks_per_node\": %d, \"rate\": \"%s\", \"rounds\": %d, \"reps_per_round\": %d,\n  \"links\": {", nodes, per, rate, rounds, reps
        sep = ""
        while ((getline line < links) > 0) {
            split(line, lv, " ")
            if (lv[2] == "alphabeta") { printf "%s\"%s\": {\"alpha_us\": %s, \"beta_us_per_byte\": %s}", sep, lv[3], lv[4], lv[5]; sep = ", " }
            if (lv[2] == "burst") { printf "%s\"burst_bytes\": %s", sep, lv[3]; sep = ", " }
            if (lv[2] == "counters") { cn = cn sprintf("%s\"%s\": {\"drops\": %s, \"retransmits\": %s}", (cn == "" ? "" : ", "), lv[3], lv[5], lv[7]) }
        }
        printf "},\n  \"link_counters\": {%s", cn
        printf "},\n  \"results\": [\n"
    }
    NR == 1 { for (i = 1; i <= NF; ++i) h[i] = $i; next }
    {
        printf "%s    {", (NR > 2 ? ",\n" : "")
        for (i = 1; i <= NF; ++i) {
            v = $i
            if (v == "") v = "null"
            else if (h[i] == "coll" || h[i] == "contender" || h[i] == "source") v = "\"" v "\""
            else if (h[i] == "upstream") v = (v == 1 ? "true" : "false")
            printf "%s\"%s\": %s", (i > 1 ? ", " : ""), h[i], v
        }
        printf "}"
    }
    END { printf "\n  ]\n}\n" }' "$out/results.csv"
}
[ -n "$csv" ] && cp "$out/results.csv" "$csv"
[ -n "$json" ] && to_json > "$json"
if [ -n "$outdir" ]; then
    mkdir -p "$outdir"
    for f in results.csv links.txt; do cmp -s "$out/$f" "$outdir/$f" || cp "$out/$f" "$outdir/"; done
    to_json > "$outdir/results.json"
    if [ $plot = 1 ] && command -v gnuplot > /dev/null; then
        for coll in ${colls//,/ }; do
            [ "$coll" = barrier ] && continue
            for i in "${!labels[@]}"; do   # one data file per contender: bytes median busbw
                awk -F, -v c="$coll" -v l="${labels[$i]}" -v sc="$statcol" '$1 == c && $3 == l && $sc > 0 { print $2, $sc, ($12 == "" ? 0 : $12 * $5 / $sc) }' \
                    "$out/results.csv" | sort -n > "$out/plot.$i"
            done
            for kind in latency busbw; do
                for term in svg png; do
                    {
                        if [ $term = svg ]; then echo "set terminal svg size 800,500 dynamic noenhanced background '#ffffff'"
                        else echo "set terminal png size 800,500 noenhanced"; fi
                        echo "set output '$outdir/$coll-$kind.$term'"
                        echo "set logscale x 2; set format x '%.0b%B'; set grid; set key left top"
                        echo "set xlabel 'message size (bytes)'"
                        if [ $kind = latency ]; then
                            echo "set logscale y 10; set ylabel '$stat latency (us)'"
                            echo "set title 'MPI_$coll, $nodes nodes x $per ranks${rate:+, $rate links}: latency'"
                        else
                            echo "set ylabel 'bus bandwidth (GB/s)'"
                            echo "set title 'MPI_$coll, $nodes nodes x $per ranks${rate:+, $rate links}: bus bandwidth'"
                        fi
                        col=$([ $kind = latency ] && echo 2 || echo 3)
                        printf "plot"
                        for i in "${!labels[@]}"; do
                            printf "%s '%s' using 1:%s with linespoints title '%s'" \
                                "$([ "$i" = 0 ] || echo ,)" "$out/plot.$i" "$col" "${labels[$i]}"
                        done
                        echo
                    } | gnuplot 2> "$out/gnuplot.err" ||
                        { echo "bench.sh: gnuplot failed:" >&2; cat "$out/gnuplot.err" >&2; }
                done
            done
        done
    fi
    echo "results: $outdir/results.csv, $outdir/results.json$(ls "$outdir"/*.svg > /dev/null 2>&1 && echo ", plots $outdir/*-{latency,busbw}.{svg,png}")"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$out/failed" ]; then
    echo "failed runs:$(sort -u "$out/failed" | while read -r i; do printf ' %s' "${labels[$i]}"; done) (see above)"
    exit 1
fi
