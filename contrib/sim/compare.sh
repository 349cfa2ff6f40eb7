#!/bin/bash
# Simulator against real runs on emulated nodes (docs/simulator.md): fits
# the parameters from collx-pingpong on the same NODES x PER layout (rank 0
# with a rank on its node and one on another; the others idle, competing
# for the cores as in the collectives; COLLX_SIM_PP_ALONE=1: on 2 ranks
# only, 2 nodes x 1 and 1 node x 2), times collectives with collx-bench on NODES x PER ranks
# through adaptx (binomial, pipeline) and hanx (also allgather and
# reduce_scatter_block, which the simulator runs for hanx only), and prints a table of
# measured (minimum over repetitions) against predicted microseconds.
#
#   contrib/sim/compare.sh [NODES [PER [OUTDIR]]]     (root; from the build tree)
#
# COLLX_SIM_RATE=200mbit limits each node's egress (cluster.sh --rate): the
# network then dominates the CPU noise of a shared machine.
# COLLX_SIM_ROOT=R: bcast and reduce from root R (default 0).
# COLLX_SIM_SOCKET=S: S ranks per socket (S < PER): hanx runs 3 levels
# (coll_hanx_ranks_per_socket S) and the simulator too (--per-socket S).
# The last lines give the median of |predicted/measured - 1| over all
# cells, over those of 4 KiB and more, and per algorithm, and over hanx's
# cells predicted with collx binomial trees on its levels (OUTDIR/levels.txt).
#
# COLLX_SIM_NB=1: also hanx's MPI_Ibcast, MPI_Ireduce and MPI_Iallreduce
# (started and waited for, nothing overlapped), predicted as the simulator's
# hanx-sched (the schedules not serial; the levels' i-collectives as
# libnbc's algorithms or hanx's built-in collx trees), rows "hanx-sched".
# Short runs on purpose: a shared machine is noisy, read the table as such.
set -u
nodes=${1:-2} per=${2:-2} out=${3:-/tmp/collx-sim-compare}
root=${COLLX_SIM_ROOT:-0} sock=${COLLX_SIM_SOCKET:-0}
hanx_levels=""
[ "$sock" -gt 0 ] && hanx_levels="--mca coll_hanx_ranks_per_socket $sock"
B=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$B/collx-sim" ] && [ -x "$B/collx-pingpong" ] && [ -x "$B/collx-bench" ] ||
    { echo "compare.sh: run from the build tree after make" >&2; exit 2; }
mkdir -p "$out"
cat > "$out/pp.sh" <<EOF
#!/bin/bash
export OMPI_MCA_mca_base_component_path=$B/.libs:${OMPI_PKGLIBDIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
timeout 120 \$COLLX_MPIRUN -np \$COLLX_CLUSTER_NP $B/collx-pingpong --max 1048576 --reps 9 --iters 30
EOF
cat > "$out/bench.sh" <<EOF
#!/bin/bash
export OMPI_MCA_mca_base_component_path=$B/.libs:${OMPI_PKGLIBDIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
bench() { local c=\$1 r=$root; [ \$c = allreduce ] && r=0; shift; timeout 120 \$COLLX_MPIRUN -np \$COLLX_CLUSTER_NP "\$@" $B/collx-bench --coll \$c --min 16 --max 1048576 --reps 3 --time-per-rep 0.05 --root \$r 2>/dev/null | grep -v '^#'; }
for coll in bcast reduce allreduce; do
  for algo in binomial pipeline; do
    bench \$coll --mca coll_adaptx_priority 100 --mca coll_adaptx_\${coll}_algorithm \$algo | sed "s/^/\$algo /"
  done
  # (the one flag's built-in choice, which the simulator's hanx runs: the machine not
  # measured, so no call follows the measured model)
  bench \$coll --mca coll_hanx_priority 100 --mca coll_hanx_model_measure 0 $hanx_levels | sed "s/^/hanx /"
done
# allgather and reduce_scatter_block (MPI_Reduce_scatter_block; bytes: each rank's block): hanx only
for coll in allgather reduce_scatter; do
  bench \$coll --mca coll_hanx_priority 100 --mca coll_hanx_model_measure 0 $hanx_levels | sed "s/^/hanx /"
done
if [ "${COLLX_SIM_NB:-0}" = 1 ]; then  # the non-blocking calls, as the blocking ones' rows
  for coll in bcast reduce allreduce; do
    bench i\$coll --mca coll_hanx_priority 100 --mca coll_hanx_model_measure 0 $hanx_levels | sed "s/^i\$coll /hanx-sched \$coll /"
  done
fi
EOF
chmod +x "$out/pp.sh" "$out/bench.sh"
cl="$src/test/cluster/cluster.sh"
rate=()
[ -n "${COLLX_SIM_RATE:-}" ] && rate=(--rate "$COLLX_SIM_RATE")
if [ "${COLLX_SIM_PP_ALONE:-0}" = 1 ]; then  # 2 ranks only: the links without contention
    "$cl" -n 2 -m 1 "${rate[@]}" --timeout 200 -- --exec "$out/pp.sh" 2>/dev/null > "$out/net.json" || exit 1
    "$cl" -n 1 -m 2 "${rate[@]}" --timeout 200 -- --exec "$out/pp.sh" 2>/dev/null > "$out/node.json" || exit 1
    python3 - "$out" <<'PY'
import json, sys
o = sys.argv[1]
s = json.load(open(o + "/net.json")); s.update(json.load(open(o + "/node.json")))
json.dump(s, open(o + "/samples.json", "w"))
PY
else  # the same layout as the collectives: the other ranks compete for the cores
    "$cl" -n "$nodes" -m "$per" "${rate[@]}" --timeout 200 -- --exec "$out/pp.sh" 2>/dev/null > "$out/samples.json" || exit 1
fi
# the rest (nic_in false: the emulated links are shaped on egress only) from the shipped file
"$B/collx-sim" fit "$out/samples.json" --params "$src/contrib/sim/emulated-cluster.json" \
    --out "$out/params.json" || exit 1
"$cl" -n "$nodes" -m "$per" "${rate[@]}" --timeout 800 -- --exec "$out/bench.sh" > "$out/bench.txt" 2>/dev/null
P=$((nodes * per))
echo "# $nodes nodes x $per ranks${COLLX_SIM_RATE:+, egress $COLLX_SIM_RATE}, root $root (allreduce: 0)$([ "$sock" -gt 0 ] && echo ", hanx on 3 levels ($sock ranks per socket)"); measured = min of 3 repetitions; predicted with $out/params.json"
echo "| coll | algo | bytes | measured µs | predicted µs | predicted/measured |"
echo "|---|---|---:|---:|---:|---:|"
predict() {  # predict ALGO COLL BYTES: the simulator's µs, as the bench ran it
    local r=$root s=0
    [ "$2" = allreduce ] && r=0
    case "${1%%:*}" in hanx|hanx-sched) s=$sock ;; esac
    "$B/collx-sim" --coll "$([ "$2" = reduce_scatter ] && echo reduce_scatter_block || echo "$2")" --algo "$1" --ranks $P --per-node "$per" \
        --per-socket "$s" --root "$r" --bytes "$3" --params "$out/params.json" 2>/dev/null
}
while read -r algo coll bytes med min max; do
    pred=$(predict "$algo" "$coll" "$bytes")
    awk -v c="$coll" -v a="$algo" -v b="$bytes" -v m="$min" -v p="$pred" \
        'BEGIN { printf "| %s | %s | %d | %.1f | %.1f | %.2f |\n", c, a, b, m, p, p / m }'
done < "$out/bench.txt" | tee "$out/table.md"
# median errors: |predicted/measured - 1|
awk -F'|' '{ a = $3; gsub(/ /, "", a); c = $2; gsub(/ /, "", c); e = $7 - 1; if (e < 0) e = -e;
             print a, $4 + 0, e, c }' "$out/table.md" > "$out/errors.txt"
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.0f%%", 100 * v[(NR + 1) / 2]; else printf "%.0f%%", 50 * (v[NR / 2] + v[NR / 2 + 1]) }'; }
echo
echo "median |predicted/measured - 1|: all $(awk '{ print $3 }' "$out/errors.txt" | med) ($(wc -l < "$out/errors.txt") cells), from 4 KiB $(awk '$2 >= 4096 { print $3 }' "$out/errors.txt" | med)"
for a in binomial pipeline hanx hanx-sched; do
    [ "$a" = hanx-sched ] && ! grep -q '^hanx-sched ' "$out/bench.txt" && continue
    echo "  $a: all $(awk -v a=$a '$1 == a { print $3 }' "$out/errors.txt" | med), from 4 KiB $(awk -v a=$a '$1 == a && $2 >= 4096 { print $3 }' "$out/errors.txt" | med)"
done
for c in allgather reduce_scatter; do
    echo "  hanx's $c: all $(awk -v c=$c '$4 == c { print $3 }' "$out/errors.txt" | med), from 4 KiB $(awk -v c=$c '$4 == c && $2 >= 4096 { print $3 }' "$out/errors.txt" | med)"
done
# the same hanx cells predicted with a collx binomial tree on every level
# (the simulator's hanx until stop 30, before it modelled the modules)
while read -r algo coll bytes med min max; do
    [ "$algo" = hanx ] && [ "$coll" != reduce_scatter ] && [ "$coll" != allgather ] || continue
    pred=$(predict hanx:binomial:binomial "$coll" "$bytes")
    awk -v c="$coll" -v b="$bytes" -v m="$min" -v p="$pred" \
        'BEGIN { e = p / m - 1; if (e < 0) e = -e; printf "%s %d %.1f %.1f %.2f %f\n", c, b, m, p, p / m, e }'
done < "$out/bench.txt" > "$out/levels.txt"
echo "  hanx with binomial trees on its levels (hanx:binomial:binomial): all $(awk '{ print $6 }' "$out/levels.txt" | med), from 4 KiB $(awk '$2 >= 4096 { print $6 }' "$out/levels.txt" | med)"
