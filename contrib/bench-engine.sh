#!/bin/bash
# hanx's blocking bcast, reduce and allreduce as they run by default (since
# stop 43 on the core's schedules, serial, the node's steps blocking
# collectives; before, a lock-step loop) against the same stages with every
# step an i-collective (coll_hanx_blocking_schedule 1), with the levels'
# Open MPI modules and with collx LP chains on the levels
# (coll_hanx_low/up_algorithm pipeline), and tuned beside them; same
# segment sizes everywhere (hanx's built-in:
# pipelined from 512 KiB), and no measured machine (coll_hanx_model_measure
# 0: the engine is compared, not the choice -- on fast links the measured
# one flag hands large bcasts to the previous module).  docs/benchmarks.md
# shows the tables.
#
#   contrib/bench-engine.sh [-n NODES] [-m RANKS] [--rate RATE] [bench.sh options...]
#
# Default: 2 nodes x 2 ranks, 512 KiB - 8 MiB (x2), 5 rounds x 3 repetitions.
set -u
here=$(cd "$(dirname "$0")" && pwd)
H0="coll_hanx_priority=100,coll_hanx_model_measure=0"
H="$H0,coll_hanx_blocking_schedule=1"
exec bash "$here/bench.sh" -n 2 -m 2 --colls bcast,reduce,allreduce --min 524288 --max 8388608 \
    --factor 2 --rounds 5 --reps 3 \
    --contenders "tuned hanx=$H0 sched=$H sched-lp=$H,coll_hanx_low_algorithm=pipeline,coll_hanx_up_algorithm=pipeline" \
    --ratios "sched/hanx sched-lp/hanx" "$@"
