#!/bin/bash
# The front door against Open MPI, every collective it serves: on 2x2 and
# 4x2 emulated nodes, unlimited and at 1 Gbit/s, hanx with one flag and
# with a collx-tune file made for that shape and link just before, against
# tuned, han and adapt (contrib/bench.sh, same run, interleaved rounds).
# Then one table per setting: each collx contender's median over the best
# of tuned/han/adapt (< 1: the front door wins).  Root, a build, and about
# 15 minutes on 2 cores.  --tune-args: collx-tune's options for the tunings
# (default "--up-trees pipeline": also an LP chain between the node leaders).
# --twin: tuned a second time, as a contender that is not upstream
# ("tuned-twin"): the tables then show its time over tuned's too, this
# run's noise on a cell (the same code measured twice; the one flag runs
# the previous module's code in some cells).
#   contrib/front-door-bench.sh [--out DIR] [--shapes "2x2 4x2"] [--rates "none 1gbit"]
#                               [--tune-args "ARGS"] [--twin]
#   contrib/front-door-bench.sh --summary DIR      (the tables of an earlier run)
set -e
cd "$(dirname "$0")/.."
out=/tmp/collx-front-door shapes="2x2 4x2" rates="none 1gbit" only_summary=0
tune_args="--up-trees pipeline" twin=""
colls=bcast,reduce,allreduce,allgather,alltoall,reduce_scatter,barrier
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --tune-args) tune_args=$2; shift 2 ;;
    --twin) twin=tuned-twin=coll=^han; shift ;;
    --summary) out=$2; only_summary=1; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--shapes \"2x2 4x2\"] [--rates \"none 1gbit\"] [--tune-args \"ARGS\"] [--twin] | --summary DIR" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ $only_summary = 0 ]; then
    for shape in $shapes; do
        n=${shape%x*} m=${shape#*x}
        for rate in $rates; do
            tag=$shape-$rate
            ropt=()
            [ "$rate" = none ] || ropt=(--rate "$rate")
            echo "== $tag: $(date -u +%T), load average $(cut -d' ' -f1-3 /proc/loadavg)"
            # shellcheck disable=SC2086 # (the options, word by word)
            contrib/tune.sh -n "$n" -m "$m" "${ropt[@]}" --out "$out/tune-$tag.json" --no-validate \
                ${tune_args:+-- $tune_args} >"$out/tune-$tag.log" 2>&1 || { echo "tune failed: $out/tune-$tag.log"; exit 1; }
            contrib/bench.sh -n "$n" -m "$m" "${ropt[@]}" --min 8 --max 8388608 --factor 8 --colls $colls \
                --contenders "tuned han adapt hanx hanx:$out/tune-$tag.json${twin:+ $twin}" --out "$out/$tag" \
                >"$out/bench-$tag.log" 2>&1 || { echo "bench failed: $out/bench-$tag.log"; exit 1; }
        done
    done
fi
# the tables: median of each collx contender over the best upstream median
for csv in "$out"/*/results.csv; do
    tag=$(basename "$(dirname "$csv")")
    echo
    twin_col=$(awk -F, 'NR > 1 && $3 == "tuned-twin" { print 1; exit }' "$csv")
    echo "### $tag: hanx (one flag) / hanx with its collx-tune file, over the best of tuned, han, adapt${twin_col:+; then tuned again over tuned}"
    awk -F, '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    {
        c = $col["coll"]; b = $col["bytes"]; k = $col["contender"]; t = $col["median_us"] + 0
        if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
        if (!((c, b) in sz)) { sz[c, b] = 1; sizes[c] = sizes[c] " " b }
        if (k == "tuned") tuned[c, b] = t
        if ($col["upstream"] == 1) { if (!((c, b) in best) || t < best[c, b]) best[c, b] = t }
        else if (k == "hanx") one[c, b] = t
        else if (k == "tuned-twin") { twin[c, b] = t; has_twin = 1 }
        else file[c, b] = t
    }
    function lab(b) { return b >= 1048576 ? b / 1048576 "M" : b >= 1024 ? b / 1024 "K" : b }
    END {
        hdr = "| collective |"; sep = "|---|"
        n = split(sizes[order[1]], s0, " ")
        for (i = 1; i <= n; ++i) { hdr = hdr " " lab(s0[i]) " |"; sep = sep "---:|" }
        print hdr; print sep
        for (j = 1; j <= nc; ++j) {
            c = order[j]; line = "| " c " |"; n = split(sizes[c], s, " ")
            for (i = 1; i <= n; ++i) {
                b = s[i]
                line = line sprintf(" %.2f / %.2f", one[c, b] / best[c, b], file[c, b] / best[c, b]) \
                       (has_twin ? sprintf("; %.2f", twin[c, b] / tuned[c, b]) : "") " |"
            }
            print line
        }
    }' "$csv"
done
