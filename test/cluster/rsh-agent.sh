#!/bin/sh
# rsh "agent" for the emulated cluster: Open MPI calls it as
#   rsh-agent.sh HOST COMMAND...
# and we run COMMAND inside HOST's network namespace, under a hostname of
# its own (shared-memory segment names include the hostname).
host=$1
shift
prefix=${COLLX_CLUSTER_PREFIX:?rsh-agent.sh runs under cluster.sh}
case "$host" in
198.51.100.*) idx=$(( ${host##*.} - 10 )) ;;
*) echo "rsh-agent.sh: unknown host $host" >&2; exit 1 ;;
esac
ns="$prefix-n$idx"
# like ssh: the remote command is the arguments joined, parsed by a shell
exec ip netns exec "$ns" unshare --uts -- sh -c "hostname node$idx; $*"
