#!/bin/bash
# Emulated multi-node cluster on one machine: one network namespace per
# "node" (own hostname through a UTS namespace, own address), joined by a
# bridge inside a namespace of our own; mpirun runs in a head namespace and
# starts the nodes' daemons through rsh-agent.sh.  Ranks on different nodes
# talk TCP over the bridge, ranks on one node shared memory -- so Open MPI
# (and hanx) see a real multi-node job.  Only 198.51.100.0/24 (TEST-NET-2)
# is used; the namespaces are removed on exit, whatever happens.
#
#   cluster.sh [-n NODES] [-m RANKS_PER_NODE | --slots S0,S1,...] [--rate RATE]
#              [--timeout SECONDS] -- <mpirun options> <program> [args]
#   cluster.sh [options] -- --exec <command> [args]
#
# The second form runs <command> in the head namespace with $COLLX_MPIRUN
# set to an mpirun that launches on the emulated nodes (several mpiruns in
# one cluster session, e.g. for benchmarks), and $COLLX_CLUSTER_NP to the
# total number of ranks, and $COLLX_LINKSTAT to a command printing the
# links' counters so far ("drops D retransmits R": packets dropped at the
# nodes' egress, TCP segments retransmitted by the nodes).  With --rate they
# are printed when the run ends, and $COLLX_LINK_BURST is the bucket's
# burst in bytes.
#
#   -n NODES        number of emulated nodes (default 2, at most 200)
#   -m M            ranks per node (default 2)
#   --slots A,B,..  ranks per node, node by node (imbalanced layouts), e.g. 3,1
#   --rate RATE     limit each node's egress to RATE (e.g. 1gbit, 200mbit), a
#                   lossless link: a token bucket (tc tbf) whose queue is so
#                   deep (64mb) that nothing is dropped -- a full link holds
#                   packets back, as a lossless fabric's flow control does,
#                   instead of dropping them into TCP's 200 ms retransmit
#                   timeout -- and whose burst (80kb: the most a node sends
#                   faster than RATE after an idle spell) is one 64 KiB TCP
#                   segmentation-offload packet: a smaller bucket cuts every
#                   such packet into MTU-sized ones, a packet storm that costs
#                   more retransmits on 2 cores than it saves burst
#   --cc NAME       the nodes' TCP congestion control (default $COLLX_CLUSTER_CC,
#                   else cubic, Linux's and Debian's default), set in each
#                   node's namespace so that the emulated links do not depend
#                   on the host's choice (where the host forbids the default,
#                   its own stays, with a warning; a named one is an error).
#                   With bbr (some hosts' default) a connection paces itself
#                   at its measured bandwidth once its first transfer of
#                   about 1 MiB ends BBR's start-up, and on 2 cores that
#                   measured bandwidth is the CPUs', not the link's: every
#                   later call of the process ran up to 2x slower than
#                   before that first large message (docs/benchmarks.md,
#                   "The links' congestion control")
#   --timeout S     kill the whole run after S seconds (exit 124)
#
# Ranks are placed by node (block) unless the mpirun options say otherwise
# (e.g. --map-by node for round-robin).  Needs root (ip netns).
set -u
here=$(cd "$(dirname "$0")" && pwd)
nodes=2 per=2 slots="" rate="" tmo=600 cc=${COLLX_CLUSTER_CC:-cubic} cc_asked=${COLLX_CLUSTER_CC:+1}
burst=81920  # the bucket's burst in bytes (80 KiB: see --rate)
while [ $# -gt 0 ]; do
    case "$1" in
    -n) nodes=$2; shift 2 ;;
    -m) per=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --cc) cc=$2 cc_asked=1; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,49p' "$0"; exit 0 ;;
    *) echo "cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "cluster.sh: nothing to run (see --help)" >&2; exit 2; }
case "$nodes" in ''|*[!0-9]*) echo "cluster.sh: -n wants a number" >&2; exit 2 ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] || { echo "cluster.sh: 1..200 nodes" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "cluster.sh: needs root (network namespaces)" >&2; exit 77; }
command -v ip >/dev/null || { echo "cluster.sh: needs iproute2 (ip)" >&2; exit 77; }
if [ -z "$slots" ]; then
    slots=$(for i in $(seq 1 "$nodes"); do printf '%s,' "$per"; done); slots=${slots%,}
fi
IFS=, read -r -a slot_of <<< "$slots"
[ "${#slot_of[@]}" = "$nodes" ] || { echo "cluster.sh: --slots needs $nodes entries" >&2; exit 2; }

# A prefix of our own, so parallel runs and leftovers never collide;
# COLLX_CLUSTER_TAG lets a caller recognise its own namespaces.
prefix="cx${COLLX_CLUSTER_TAG:-}p$$"
export COLLX_CLUSTER_PREFIX=$prefix
net=198.51.100
br=$prefix-br head=$prefix-head

cleanup() {
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkns() {  # mkns NAME ADDRESS-LAST-OCTET INDEX
    ip netns add "$1" || return 1
    ip -n "$1" link set lo up
    [ -z "$cc" ] || ip netns exec "$1" sysctl -qw net.ipv4.tcp_congestion_control="$cc" 2>/dev/null ||
        cc_unavailable "not available"
    ip -n "$br" link add "v$3" type veth peer name eth0 netns "$1" || return 1
    ip -n "$br" link set "v$3" master br0 up
    ip -n "$1" addr add "$net.$2/24" dev eth0
    ip -n "$1" link set eth0 up
}

cc_unavailable() {  # cc_unavailable WHY: one asked for is an error; the default: the host's stays (said once)
    [ -z "$cc_asked" ] || { echo "cluster.sh: congestion control $cc $1" >&2; exit 1; }
    echo "cluster.sh: warning: cannot set the nodes' congestion control to $cc; they keep the" \
         "host's ($(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null)), and with bbr" \
         "figures without a rate limit depend on each process's history (docs/testing.md)" >&2
    cc=""
}
# a namespace may only pick a congestion control the host allows
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control 2>/dev/null)
case " $allowed " in
*" $cc "*) ;;
*) modprobe -q "tcp_$cc" 2>/dev/null
   # (an unreadable list is never overwritten)
   [ -n "$allowed" ] &&
       sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed $cc" 2>/dev/null ||
       cc_unavailable "cannot be allowed" ;;
esac
ip netns add "$br" || exit 1
ip -n "$br" link add br0 type bridge forward_delay 0 stp_state 0 && ip -n "$br" link set br0 up || exit 1
mkns "$head" 1 0 || exit 1
hosts=""
for i in $(seq 0 $((nodes - 1))); do
    mkns "$prefix-n$i" $((10 + i)) $((i + 1)) || exit 1
    if [ -n "$rate" ]; then
        ip netns exec "$prefix-n$i" tc qdisc replace dev eth0 root tbf rate "$rate" \
            burst "${burst}b" limit 64mb ||
            { echo "cluster.sh: tc tbf failed" >&2; exit 1; }
    fi
    hosts="$hosts,$net.$((10 + i)):${slot_of[$i]}"
done
hosts=${hosts#,}
np=0; for s in "${slot_of[@]}"; do np=$((np + s)); done

mpirun=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# An mpirun that knows the emulated cluster: used directly, or handed to an
# --exec command as $COLLX_MPIRUN.
work=$(mktemp -d /tmp/collx-cluster.XXXXXX)
cleanup_work() { rm -rf "$work"; cleanup; }
trap cleanup_work EXIT
# hanx keeps the machines it measures (coll_hanx_model_cache) for this
# cluster's life only, unless the caller says where: the nodes' names (the
# prefix's pid) are new each time, and the next cluster's links may have
# another rate
export OMPI_MCA_coll_hanx_model_cache=${OMPI_MCA_coll_hanx_model_cache:-$work/machines}
# Ranks by node (block) unless the caller maps them: Open MPI 5's PRRTE
# would otherwise map by core and fill the first node past its slots.
cat > "$work/mpirun" <<WRAP
#!/bin/sh
case " \$* " in *" --map-by "*) map= ;; *) map="--map-by slot" ;; esac
exec "$mpirun" --host "$hosts" -np "$np" \$map \\
    --mca plm_rsh_agent "$here/rsh-agent.sh" --mca plm_rsh_no_tree_spawn 1 \\
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$net.0/24" \\
    --mca oob_tcp_if_include "$net.0/24" --mca mpi_yield_when_idle 1 --oversubscribe "\$@"
WRAP
chmod +x "$work/mpirun"
# The links' counters: egress drops (tc) and TCP retransmits (the nodes'
# /proc/net/snmp), summed over the nodes.  With --rate, $COLLX_LINK_BURST
# holds the bucket's burst in bytes (what a link passes at once).
cat > "$work/linkstat" <<STAT
#!/bin/sh
for i in \$(seq 0 $((nodes - 1))); do
    ip netns exec "$prefix-n\$i" sh -c 'tc -s qdisc show dev eth0; cat /proc/net/snmp'
done | awk '/ dropped / { for (k = 1; k < NF; ++k) if (\$k == "dropped") d += \$(k + 1) + 0 }
            /^Tcp: [A-Z]/ { for (k = 2; k <= NF; ++k) col[\$k] = k; next }
            /^Tcp: / { r += \$col["RetransSegs"] }
            END { printf "drops %d retransmits %d\\n", d, r }'
STAT
chmod +x "$work/linkstat"
export COLLX_MPIRUN="$work/mpirun" COLLX_CLUSTER_NP=$np COLLX_LINKSTAT="$work/linkstat"
[ -n "$rate" ] && export COLLX_LINK_BURST=$burst

if [ "$1" = --exec ]; then
    shift
    set -- "$@"
else
    set -- "$work/mpirun" "$@"
fi
timeout -k 10 "$tmo" ip netns exec "$head" unshare --uts -- \
    sh -c 'hostname "$0-head"; exec "$@"' "$prefix" "$@"
rc=$?
[ $rc = 124 ] && echo "cluster.sh: timed out after ${tmo}s" >&2
[ -n "$rate" ] && echo "cluster.sh: links at $rate: $("$work/linkstat")" >&2
exit $rc
