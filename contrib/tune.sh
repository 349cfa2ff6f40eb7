#!/bin/bash
# collx-tune on emulated nodes, in one cluster session: tune (task
# benchmarks -> tuning file + model), then validate the file against whole
# collectives of every configuration at sampled sizes (--sample all: the
# exhaustive search, whose time the tuning time is compared with).
#
#   contrib/tune.sh [-n NODES] [-m RANKS] [--out FILE] [--sample N|all]
#                   [--plot PREFIX] [--rate RATE] [--no-validate | --no-tune] [--no-bind]
#                   [-- collx-tune options]
# --no-tune validates an existing --out file (e.g. twice, to see how far
# two exhaustive measurements of this machine agree).
# Ranks are bound to cores (--bind-to core: each emulated node's k-th rank
# on core k); unbound (--no-bind), where the scheduler pairs the ranks on
# the cores differs from one mpirun to the next and so do the timings
# (docs/collx-tune.md).
#
# e.g. contrib/tune.sh -n 2 -m 2 --out /tmp/tuning-2x2.json --sample all --plot /tmp/tune-2x2
# On a real cluster run collx-tune under mpirun yourself (docs/collx-tune.md).
# Needs a build and root (network namespaces).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${COLLX_BUILDDIR:-$src}
nodes=2 per=2 out=$PWD/collx-tuning.json sample=8 plot="" rate="" validate=1 tune=1 bind="--bind-to core"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-validate) validate=0; shift ;;
    --no-tune) tune=0; shift ;;
    --no-bind) bind=""; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "tune.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
case "$plot" in ''|/*) ;; *) plot=$PWD/$plot ;; esac
tool="$build/collx-tune"
[ -x "$tool" ] || { echo "tune.sh: $tool not built (contrib/build.sh)" >&2; exit 1; }
. "$src/contrib/build-env.sh"
use_build_components
work=$(mktemp -d /tmp/collx-tune.XXXXXX)
trap 'rm -rf "$work"' EXIT
q() { printf '%q ' "$@"; }
{
    echo "#!/bin/bash"
    [ $tune = 1 ] && echo "\$COLLX_MPIRUN $bind --mca coll_hanx_priority 100 $(q "$tool" --out "$out" "$@") || exit 1"
    if [ $validate = 1 ]; then
        echo "echo"
        echo "\$COLLX_MPIRUN $bind --mca coll_hanx_priority 100 $(q "$tool" --validate "$out" --sample "$sample" ${plot:+--plot "$plot"} "$@") || exit 1"
    fi
} > "$work/session.sh"
chmod +x "$work/session.sh"
echo "collx-tune on $nodes emulated nodes x $per ranks${rate:+, links limited to $rate}"
"$src/test/cluster/cluster.sh" -n "$nodes" -m "$per" ${rate:+--rate "$rate"} --timeout 3000 -- --exec "$work/session.sh"
