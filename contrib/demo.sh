#!/bin/bash
# collx demonstration: MPI_Bcast and MPI_Reduce latency through Open MPI's
# own tuned, han and adapt components and through collx's hanx and adaptx,
# side by side in one run on 2 emulated nodes x 2 ranks, with the ratio of
# the best collx component to the best Open MPI one.
#
#   contrib/demo.sh [any contrib/bench.sh option]
#
# Needs a build (contrib/quickstart.sh makes one) and root (emulated nodes
# are network namespaces).
exec "$(dirname "$0")/bench.sh" -n 2 -m 2 --max 1048576 --colls bcast,reduce \
    --contenders "tuned han adapt hanx adaptx" "$@"
