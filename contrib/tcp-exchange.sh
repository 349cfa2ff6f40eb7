#!/bin/bash
# Large messages sent both ways at once over Open MPI's TCP BTL
# (docs/benchmarks.md, "Large messages both ways at once on TCP"): tuned's
# allgather between 2 ranks on 2 emulated nodes at RATE, as Open MPI sets
# the TCP BTL by default, with a 1 MiB eager limit and send size, and with
# two TCP links per peer.  Root, from the build tree after make.
#
#   contrib/tcp-exchange.sh [RATE]        (default 200mbit)
set -eu
rate=${1:-200mbit}
B=$(pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$B/collx-bench" ] || { echo "tcp-exchange.sh: run from the build tree after make" >&2; exit 2; }
run=$(mktemp /tmp/collx-tcp-exchange.XXXXXX)
trap 'rm -f "$run"' EXIT
cat > "$run" <<EOS
#!/bin/bash
b() { timeout 200 \$COLLX_MPIRUN -np \$COLLX_CLUSTER_NP "\$@" $B/collx-bench --coll allgather \
      --min 65536 --max 1048576 --reps 3 --time-per-rep 0.05 2>/dev/null | grep -v '^#'; }
b | sed 's/^/default /'
b --mca btl_tcp_eager_limit 1048576 --mca btl_tcp_max_send_size 1048576 | sed 's/^/eager-1MiB /'
b --mca btl_tcp_links 2 | sed 's/^/two-links /'
EOS
chmod +x "$run"
echo "# tuned's allgather, 2 nodes x 1 rank, egress $rate: setting coll bytes median_us min_us max_us"
"$src/test/cluster/cluster.sh" -n 2 -m 1 --rate "$rate" --timeout 600 -- --exec "$run" 2>/dev/null
