#!/bin/bash
# The front door's cost model (coll_hanx_default_algorithm 4) against hanx's
# built-in choice (the one flag) and tuned, han and adapt, side by side, on
# 2x2 and 4x2 emulated nodes, unlimited and at 1 Gbit/s (where the model is
# told the link: 7 us, 8400 ps/byte, as bench.sh measures it here), and the
# model that measures the machine itself (coll_hanx_model_measure 1).
#   OUT=DIR contrib/model-bench.sh      (default DIR /tmp/model-bench; ~6 min)
# Writes DIR/model-NxM-RATE/ (bench.sh --out) and DIR/model-NxM-RATE.txt.
# docs/cost-model.md reads them.  Needs a build and root.
set -u
cd "$(dirname "$0")/.."
mkdir -p "${OUT:-/tmp/model-bench}"
for s in "2 none" "4 none" "2 1gbit" "4 1gbit"; do
    set -- $s
    r="" extra=""
    if [ $2 != none ]; then r="--rate $2"; extra=",coll_hanx_model_inter_beta_ps_per_byte=8400,coll_hanx_model_inter_alpha_ns=7000"; fi
    out=${OUT:-/tmp/model-bench}/model-${1}x2-$2
    echo "== $s $(date +%T) $(cat /proc/loadavg)"
    contrib/bench.sh -n $1 -m 2 $r --colls bcast,reduce,allreduce,allgather,alltoall,barrier --min 8 --max 2097152 --factor 8 \
        --contenders "tuned han adapt hanx model=coll_hanx_priority=100,coll_hanx_default_algorithm=4$extra measured=coll_hanx_priority=100,coll_hanx_default_algorithm=4,coll_hanx_model_measure=1" \
        --out $out --no-plot > $out.txt 2>&1
    echo "rc $?"
done
echo "done $(date +%T)"
