#!/bin/bash
# collx-tune end to end on one machine (2 synthetic nodes x 2 ranks): a
# small tuning run writes a tuning file hanx accepts and follows, with
# correct results; --explain, --validate (and that its checks can fail),
# --budget, and the errors a user can make.  Small sizes only: this checks
# the tool, not the machine's timings (docs/collx-tune.md has the
# measurements).
. "$(dirname "$0")/common.sh"
TUNE="$COLLX_BUILDDIR/collx-tune"
work=$(mktemp -d /tmp/collx-check-tune.XXXXXX)
trap 'rm -rf "$work"' EXIT
# collx-tune measures hanx's own configurations: no tuning file
forced_file=$OMPI_MCA_coll_hanx_tuning_file
unset OMPI_MCA_coll_hanx_tuning_file
SMALL=(--max 256K --measure-max 64K --segments 16K,64K --windows 3 --point-time 0.001 --quiet)
nodes2=(--mca coll_hanx_ranks_per_node 2)
# (--margin off: a rule at every size, which the steps on t.json below
# read; hanx's built-in choice as the baseline: builtin_baseline)

tune_small() {
    local_run 300 4 "${nodes2[@]}" "$TUNE" --out "$work/t.json" "${SMALL[@]}" --margin off > "$work/tune.out" 2>&1 &&
        grep -q "wrote $work/t.json" "$work/tune.out" && [ -s "$work/t.json" ] && [ -s "$work/t.model.json" ] &&
        grep -q '"format": "collx-tuning"' "$work/t.json" && grep -q "^allreduce " "$work/tune.out"
}
step "collx-tune writes a tuning file and its model (2 synthetic nodes x 2)" tune_small
# the front door's flat collx trees are measured too (default pipeline,
# knomial, topo, ring, recursive_doubling): a curve of each for every
# pipelined collective in the model (the ring's and recursive doubling's for
# allreduce alone: their bcast and reduce are the pipeline chain and the
# binomial tree); split rails too (2 nodes of 2: hanx runs them), a curve of
# allreduce and of reduce_scatter_block, and allgather's split form, the
# node ring (since stop 36), alone; the others (measured whole)
# have previous and hierarchical curves only, the barrier one point at size 0
flat_curves() {
    python3 - "$work/t.model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["flat_trees"] == ["pipeline", "knomial", "topo", "ring", "recursive_doubling"], m["flat_trees"]
assert m["version"] == 10 and m["split_rails"] is True, (m["version"], m.get("split_rails"))
assert m["margin"] < 0 and all("builtin" not in c for c in m["collectives"].values()), m["margin"]  # --margin off
piped = ["bcast", "reduce", "allreduce"]
whole = ["allgather", "alltoall", "barrier", "reduce_scatter_block"]
assert sorted(m["collectives"]) == sorted(piped + whole), list(m["collectives"])
for name in piped:
    c = m["collectives"][name]
    for t in m["flat_trees"]:
        if t in ("ring", "recursive_doubling") and name != "allreduce":
            assert t not in c["flat"], (name, c["flat"])
        else:
            assert len(c["flat"][t]) >= 5, (name, t, c["flat"].get(t))
    assert c["hier"][0]["pipelines"], name
    assert ("split" in c) == (name == "allreduce"), (name, c.get("split"))
for name in ["allreduce", "reduce_scatter_block", "allgather"]:
    split = m["collectives"][name]["split"]
    assert len(split) == len(m["collectives"][name]["previous"]) >= 5 and all(s > 0 for _, s in split), (name, split)
for name in whole:
    c = m["collectives"][name]
    n = 1 if name == "barrier" else 5
    assert ("split" in c) == (name in ("reduce_scatter_block", "allgather")), (name, c.get("split"))
    assert not c["flat"] and "stages" not in c and not c["hier"][0]["pipelines"], (name, c)
    assert len(c["previous"]) >= n and len(c["hier"][0]["whole"]) >= n, (name, c)
    if name == "barrier":
        assert c["previous"][0][0] == 0 and len(c["previous"]) == 1, c
print("flat curves of", ", ".join(m["flat_trees"]), "for", ", ".join(piped), "; split rails for allreduce "
      "and reduce_scatter_block, the node ring for allgather; "
      "whole curves for", ", ".join(whole))
PY
}
step "collx-tune measures the front door's flat collx trees, split rails (allreduce, reduce_scatter_block), the node ring (allgather), and the other collectives whole" flat_curves

# "hier" of a collective measured whole is hanx's hierarchical algorithm,
# also where hanx's built-in choice is the previous module (alltoall above
# 256 B; allgather above 16 B before stop 25): every hanx call of the
# tuning is hierarchical (--margin off: not the built-in choice, the
# baseline, which is the previous module there)
hier_measured() {
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_verbose 10 "$TUNE" --out "$work/w.json" --colls allgather,alltoall \
        --min 1K --max 4K --measure-max 4K --windows 3 --point-time 0.001 --margin off --quiet > "$work/w.out" 2>&1 ||
        { tail "$work/w.out"; return 1; }
    grep -q "coll:hanx: allgather count 256 on" "$work/w.out" && grep -q "coll:hanx: alltoall count 1024 on" "$work/w.out" ||
        { echo "no hierarchical allgather/alltoall measured"; return 1; }
    ! grep -qE "coll:hanx: (allgather|alltoall) of [0-9]+ bytes on .*previous module" "$work/w.out" ||
        { grep -m3 "previous module" "$work/w.out"; return 1; }
}
step "collx-tune measures hanx's hierarchical allgather and alltoall, not its built-in previous module" hier_measured
# ... and says coll_hanx_default_algorithm itself at every hanx measurement:
# a job started with 2 (every call to the previous module) still measures
# hanx's levels, its flat trees, its hierarchical allgather, and allreduce
# and reduce_scatter_block as split rails (3 for those: run as such, never
# handed to the levels; --margin off: the configurations alone)
pinned_default() {
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_verbose 10 --mca coll_hanx_default_algorithm 2 "$TUNE" \
        --out "$work/d.json" --colls bcast,allgather,allreduce,reduce_scatter_block --flat pipeline --segments 16K --min 1K --max 64K \
        --measure-max 4K --windows 3 --point-time 0.001 --margin off --quiet > "$work/d.out" 2>&1 || { tail "$work/d.out"; return 1; }
    grep -q "coll:hanx: bcast levels (innermost first)" "$work/d.out" &&
        grep -qE "coll:hanx: bcast count [0-9]+ on .*: one collx pipeline tree over all ranks" "$work/d.out" &&
        grep -q "coll:hanx: allgather count 256 on" "$work/d.out" &&
        grep -qE "coll:hanx: allreduce count [0-9]+ on .*: split rails" "$work/d.out" &&
        grep -qE "coll:hanx: reduce_scatter_block count [0-9]+ on .*: split rails" "$work/d.out" ||
        { echo "a configuration was not measured"; return 1; }
    # (reduce_scatter_block's split rails on the collx ring, as the one flag runs them)
    grep -q "coll:hanx: reduce_scatter_block on .*: split rails, the node's on the collx ring, the rail's on the collx ring" \
        "$work/d.out" || { echo "reduce_scatter_block's split rails not measured on the rings"; return 1; }
    ! grep -qE "coll:hanx: (bcast|allgather|allreduce|reduce_scatter_block) of [0-9]+ bytes on .*previous module" "$work/d.out" ||
        { grep -m3 "previous module" "$work/d.out"; return 1; }
    ! grep -q "split rails cannot run" "$work/d.out" || { grep -m3 "split rails cannot run" "$work/d.out"; return 1; }
}
step "collx-tune measures hanx's configurations whatever coll_hanx_default_algorithm the job started with" pinned_default

# ... and whatever coll_hanx_flat_algorithm says: the job's communicators
# would run every bcast and allreduce as that flat tree under hanx's
# built-in choice; the hierarchical configurations must run the levels
# (--margin off: the built-in choice, the baseline, is that flat tree here)
pinned_flat() {
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_verbose 10 --mca coll_hanx_flat_algorithm pipeline "$TUNE" \
        --out "$work/f.json" --colls bcast,allreduce --flat none --split no --segments 16K --min 1K --max 64K \
        --measure-max 4K --windows 3 --point-time 0.001 --margin off --quiet > "$work/f.out" 2>&1 || { tail "$work/f.out"; return 1; }
    grep -q "coll:hanx: bcast levels (innermost first)" "$work/f.out" &&
        grep -q "coll:hanx: allreduce levels (innermost first)" "$work/f.out" || { echo "no hierarchical call"; return 1; }
    ! grep -E "tree over all ranks" "$work/f.out" | grep -m3 . || { echo "a flat tree ran in a hierarchical measurement"; return 1; }
}
step "collx-tune measures the levels whatever coll_hanx_flat_algorithm the job started with" pinned_flat

# split rails only where hanx runs them: not on 3 ranks (nodes of 2 and 1:
# hanx hands a "split" allreduce to the levels), nor with --split no; the
# model says they were not measured, and no rule names them (--margin off:
# a rule at every size)
split_where() {
    local tiny=(--colls allreduce --flat none --segments 16K --min 1K --max 4K --measure-max 4K --windows 3
                --point-time 0.001 --margin off)
    local_run 300 3 "${nodes2[@]}" "$TUNE" --out "$work/x.json" "${tiny[@]}" > "$work/x.out" 2>&1 &&
        grep -q "split rails not measured: the nodes are not all of one size" "$work/x.out" ||
        { tail "$work/x.out"; return 1; }
    local_run 300 4 "${nodes2[@]}" "$TUNE" --out "$work/n.json" "${tiny[@]}" --split no --quiet > "$work/n.out" 2>&1 ||
        { tail "$work/n.out"; return 1; }
    python3 - "$work/x" "$work/n" <<'PY'
import json, sys
for p in sys.argv[1:]:
    m = json.load(open(p + ".model.json"))
    assert m["split_rails"] is False and "split" not in m["collectives"]["allreduce"], (p, m)
    assert len(m["collectives"]["allreduce"]["previous"]) >= 3, (p, m)
    rules = json.load(open(p + ".json"))["rules"]
    assert rules and all(r["algorithm"] != "split" for r in rules), (p, rules)
PY
}
step "collx-tune measures split rails only on nodes of one size, and not with --split no" split_where

# collx-tune --explain FILE ARGS... into OUT; on a failure its output and
# how it ended (a failing step says why)
explain_to() {  # explain_to OUT FILE ARGS...
    local out=$1 rc
    shift
    "$TUNE" --explain "$@" > "$out" 2>&1
    rc=$?
    [ $rc = 0 ] || { cat "$out"; echo "collx-tune --explain $* ended with status $rc"; }
    return $rc
}

# every rule names a configuration hanx knows, for this shape, and the
# ranges cover every size from 0 on
rules_cover() {
    for coll in bcast reduce allreduce; do
        for b in 0 4 1000 65536 262144 1048576 67108864; do
            explain_to "$work/ex.out" "$work/t.json" --coll $coll --bytes $b || return 1
            grep -q "^  rule [0-9]* (line [0-9]*) of" "$work/ex.out" || { cat "$work/ex.out"; return 1; }
            grep -qE "hanx runs: (the previous module|the levels|one collx [a-z_]+ tree over all ranks|split rails)" \
                "$work/ex.out" || { cat "$work/ex.out"; return 1; }
            # the flat trees are among the configurations predicted, and
            # for allreduce alone split rails
            grep -qE "^    flat:pipeline +[0-9.]+" "$work/ex.out" || { cat "$work/ex.out"; return 1; }
            if [ $coll = allreduce ]; then grep -qE "^    split +[0-9.]+" "$work/ex.out"
            else ! grep -q "^    split" "$work/ex.out"; fi || { cat "$work/ex.out"; return 1; }
            grep -q "<- best predicted" "$work/ex.out" || { cat "$work/ex.out"; return 1; }
        done
    done
    # the collectives measured whole: previous or the hierarchical form (or
    # for reduce_scatter_block split rails), no flat trees, no segments
    local runs
    for coll in allgather alltoall reduce_scatter_block barrier; do
        runs="the previous module|the levels one after the other, unsegmented"
        [ $coll = reduce_scatter_block ] && runs="$runs|split rails"
        for b in 0 4 65536 67108864; do
            explain_to "$work/ex.out" "$work/t.json" --coll $coll --bytes $b || return 1
            grep -q "^  rule [0-9]* (line [0-9]*) of" "$work/ex.out" &&
                grep -qE "hanx runs: ($runs)" "$work/ex.out" &&
                grep -qE "^    hier +[0-9.]+" "$work/ex.out" && grep -q "<- best predicted" "$work/ex.out" &&
                ! grep -qE "^    (flat:|hier/)" "$work/ex.out" || { cat "$work/ex.out"; return 1; }
        done
    done
    # another shape: no rule, hanx's defaults, said so
    explain_to "$work/ex.out" "$work/t.json" --coll bcast --bytes 64 --nodes 8 --ranks-per-node 4 &&
        grep -q "no rule of .* matches: hanx uses its built-in defaults" "$work/ex.out" || { cat "$work/ex.out"; return 1; }
}
step "collx-tune --explain: a rule for every size, the prediction of every configuration" rules_cover

# hanx reads the file, follows it (verbose 20 names the rules) and the
# results stay right
follows() {
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_priority 100 --mca coll_hanx_tuning_file "$work/t.json" \
        --mca coll_hanx_verbose 20 "$CHECKER" --quick \
        --colls bcast,reduce,allreduce,allgather,alltoall,barrier,reduce_scatter_block > "$work/f.out" 2>&1 ||
        { tail -20 "$work/f.out"; return 1; }
    grep -q "rules from $work/t.json" "$work/f.out" || return 1
    local c
    for c in bcast allreduce allgather alltoall barrier reduce_scatter_block; do
        grep -qE "coll:hanx: $c of [0-9]+ bytes: rule [0-9]+ \(line" "$work/f.out" || { echo "no rule for $c"; return 1; }
    done
}
step "hanx follows the produced file; checker passes (bcast, reduce, allreduce, allgather, alltoall, barrier, reduce_scatter_block)" follows

validate_small() {
    # clocks synchronised by ping-pong (as on several kernels) here
    local_run 300 4 "${nodes2[@]}" "$TUNE" --validate "$work/t.json" --sample 3 --windows 3 --point-time 0.001 \
        --clock estimate --plot "$work/p" > "$work/v.out" 2>&1 || { tail "$work/v.out"; return 1; }
    # 3 sizes of each collective, 1 of barrier
    grep -q "the file's choice within 5% of the best measured: [0-9]* of 19 points" "$work/v.out" &&
        grep -q "prediction error, all configurations: median" "$work/v.out" &&
        grep -qE "regret against the exhaustive search .*: median -?[0-9.]+%, mean \(geometric\) -?[0-9.]+%, max [0-9.]+% \([a-z_]+ " "$work/v.out" &&
        # one regret per point, never below 0 (the best is among the measured)
        [ "$(awk '$1 ~ /^(bcast|reduce|allreduce|allgather|alltoall|barrier|reduce_scatter_block)$/ && $(NF - 1) ~ /%$/ {n++; if ($(NF - 1) + 0 < 0) bad++} END {print n + 0, bad + 0}' "$work/v.out")" = "19 0" ] &&
        # and timed back to back (the default): under each point its loop's
        # regret, never below 0 either, and the loop's summary
        [ "$(awk '/^  back to back: / {n++; if ($NF + 0 < 0 || $NF !~ /%$/) bad++} END {print n + 0, bad + 0}' "$work/v.out")" = "19 0" ] &&
        grep -qE "regret back to back \(.*\): median -?[0-9.]+%, mean \(geometric\) -?[0-9.]+%, max [0-9.]+% \([a-z_]+ " "$work/v.out" &&
        [ -s "$work/p-allgather.dat" ] && [ -s "$work/p-barrier.dat" ] && [ ! -e "$work/p-barrier.gp" ] &&
        grep -q "tuning time (tasks)" "$work/v.out" && [ -s "$work/p-bcast.dat" ] && [ -s "$work/p-allreduce.gp" ] &&
        grep -q "^# flat:pipeline" "$work/p-bcast.dat" &&  # the flat trees measured too
        grep -q "^# split" "$work/p-allreduce.dat" && ! grep -q "^# split" "$work/p-bcast.dat"  # and split rails
}
step "collx-tune --validate (estimated clock offsets): 3 sizes per collective, every configuration, report and plot data" validate_small

# the loops rotate a rooted collective's root on from one timed window to
# the next: with one call per window (a tiny --loop-time, as a large
# message gets) every rank is still a root, not rank 0 alone (the
# synchronised starts' root); and --loop-time, not --point-time, sizes a
# loop's windows: one call each with a tiny one, many at the default
# (twice --point-time)
loop_roots() {
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_verbose 10 --output-filename "$work/lr" "$TUNE" \
        --validate "$work/t.json" --colls bcast --sample 1 --windows 5 --point-time 0.001 --loop-time 0.000001 \
        > "$work/lr.out" 2>&1 || { tail "$work/lr.out"; return 1; }
    grep -q "^  back to back: " "$work/lr.out" || return 1
    local r
    for r in 0 1 2 3; do
        cat "$work"/lr/1/rank.*/stderr | grep -qE "coll:hanx: bcast count [0-9]+ root $r on" ||
            { echo "no bcast from root $r"; return 1; }
    done
    # the same at the default --loop-time (0.002 s here): many calls per window
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_verbose 10 --output-filename "$work/lr2" "$TUNE" \
        --validate "$work/t.json" --colls bcast --sample 1 --windows 5 --point-time 0.001 \
        > "$work/lr2.out" 2>&1 || { tail "$work/lr2.out"; return 1; }
    local one many
    one=$(grep -c "coll:hanx: bcast count" "$work"/lr/1/rank.0/stderr)
    many=$(grep -c "coll:hanx: bcast count" "$work"/lr2/1/rank.0/stderr)
    [ "$many" -gt $((one + 100)) ] || { echo "calls: $one with a tiny --loop-time, $many at the default"; return 1; }
}
step "collx-tune's loops rotate the root across windows (every rank a root with one call per window); --loop-time sizes the windows" loop_roots

# --score judges the file on validations' measurements: on the same
# measurements it finds what the validation found
rescore() {
    local v s
    v=$(grep -o "within 5% of the best measured: [0-9]* of [0-9]* points" "$work/v.out" | grep -oE "[0-9]+ of [0-9]+")
    s=$("$TUNE" --score "$work/t.json" --data "$work/p" | grep -o "best measured at [0-9]* of [0-9]*" | grep -oE "[0-9]+ of [0-9]+")
    echo "validation: $v, score: $s"
    [ -n "$v" ] && [ "$v" = "$s" ] || return 1
    # twice the same measurements: the median is them, and one's best is the other's
    "$TUNE" --score "$work/t.json" --data "$work/p,$work/p" > "$work/s2.out" || return 1
    grep -q "against the median of the 2 validations (per configuration): $v points" "$work/s2.out" &&
        grep -q "best choices within 5% of another's best at 100.0% of the points on average, of the median's at 100.0%" \
            "$work/s2.out" &&
        "$TUNE" --score "$work/t.json" --data "$work/nothing" 2>&1 | grep -q "no measurements under"
}
step "collx-tune --score gives back the validation's share on its measurements" rescore

# the validation can fail: a model 100x off is caught by --max-error
# (exit 3)
wrong_model() {
    cp "$work/t.json" "$work/w.json"
    python3 - "$work/t.model.json" "$work/w.model.json" <<'EOF' || return 1
import json, sys
m = json.load(open(sys.argv[1]))
def scale(x):  # seconds are the only floats of a model
    if isinstance(x, float): return x * 100
    if isinstance(x, list): return [scale(v) for v in x]
    if isinstance(x, dict): return {k: scale(v) for k, v in x.items()}
    return x
m["collectives"] = scale(m["collectives"])
json.dump(m, open(sys.argv[2], "w"))
EOF
    local_run 300 4 "${nodes2[@]}" "$TUNE" --validate "$work/w.json" --sample 2 --windows 3 --point-time 0.001 \
        --colls bcast --max-error 10 --back-to-back no > "$work/w.out" 2>&1
    local rc=$?
    [ $rc = 3 ] && grep -q "median prediction error above 10" "$work/w.out" &&
        # --back-to-back no: synchronised starts only
        ! grep -q "back to back" "$work/w.out"
}
step "collx-tune --validate --max-error fails on a model 100x off (exit 3)" wrong_model

# other modules on the levels (--low/--up): hanx made to prefer them on
# sub-communicators of their own, measured and kept in the model; a file
# with such rules validates (the configurations it names are measured
# too) and hanx follows it, with right results
submodules() {
    local_run 300 4 "${nodes2[@]}" "$TUNE" --out "$work/s.json" "${SMALL[@]}" --colls bcast,allreduce \
        --up adaptx --low basic > "$work/s.out" 2>&1 || { tail "$work/s.out"; return 1; }
    python3 - "$work/s.model.json" <<'EOF' || return 1
import json, sys
m = json.load(open(sys.argv[1]))
subs = [(s["low"], s["up"]) for s in m["submodules"]]
assert subs == [("", ""), ("", "adaptx"), ("basic", ""), ("basic", "adaptx")], subs
for c in m["collectives"].values():
    assert sorted((h["low"], h["up"]) for h in c["hier"]) == sorted(subs)
    assert all(len(h["whole"]) > 3 and len(h["pipelines"]) == 2 for h in c["hier"])
EOF
    # rules that ask for adaptx between the leaders at every size
    python3 - "$work/s.json" "$work/u.json" <<'EOF' || return 1
import json, sys
f = json.load(open(sys.argv[1]))
f["rules"] = [{"collective": c, "algorithm": "hierarchical", "segment_bytes": 16384, "up": "adaptx"}
              for c in ("bcast", "allreduce")]
json.dump(f, open(sys.argv[2], "w"))
EOF
    cp "$work/s.model.json" "$work/u.model.json"
    local_run 300 4 "${nodes2[@]}" "$TUNE" --validate "$work/u.json" --sample 2 --windows 3 --point-time 0.001 \
        --colls bcast,allreduce > "$work/u.out" 2>&1 || { tail "$work/u.out"; return 1; }
    grep -Eq "^bcast +[0-9KM]+ +hier(/16K)? up=adaptx " "$work/u.out" || { cat "$work/u.out"; return 1; }
    local_run 300 4 "${nodes2[@]}" --mca coll_hanx_priority 100 --mca coll_hanx_tuning_file "$work/u.json" \
        --mca coll_hanx_verbose 1 --mca coll_adaptx_verbose 10 "$CHECKER" --quick --colls bcast,allreduce \
        > "$work/uf.out" 2>&1 || { tail -20 "$work/uf.out"; return 1; }
    grep -q 'sub-communicators with low "^hanx,han", up "adaptx,^hanx,han"' "$work/uf.out" &&
        grep -Eq "coll:adaptx: (bcast|iallreduce|ibcast) count" "$work/uf.out"
}
step "collx-tune --low/--up: other modules on the levels measured, in the model, validated, followed" submodules

# the levels' collx trees (--up-trees): hanx itself runs the tree on the
# leaders' level of bcast, reduce and allreduce (not of the collectives
# measured whole); a choice of the levels of its own, measured whole and
# as pipelines, in the model (version 10) and in --explain
LEVELS2=(--mca coll_hanx_ranks_per_node 2 --mca coll_hanx_socket_level 0)  # exactly 2 levels
TINY=(--flat none --split no --segments 16K --min 1K --max 64K --measure-max 16K --windows 3 --point-time 0.001)
level_trees() {
    local_run 300 4 "${LEVELS2[@]}" "$TUNE" --out "$work/lt.json" "${TINY[@]}" --colls bcast,reduce,allreduce,allgather \
        --up-trees pipeline --quiet > "$work/lt.out" 2>&1 || { tail "$work/lt.out"; return 1; }
    python3 - "$work/lt.model.json" <<'EOF' || return 1
import json, sys
m = json.load(open(sys.argv[1]))
assert m["version"] == 10, m["version"]
choices = [(s["low"], s["up"], s["low_algorithm"], s["up_algorithm"]) for s in m["submodules"]]
assert choices == [("", "", "module", "module"), ("", "", "module", "pipeline")], choices
for name in ("bcast", "reduce", "allreduce"):
    hier = {h["up_algorithm"]: h for h in m["collectives"][name]["hier"]}
    assert sorted(hier) == ["module", "pipeline"], (name, sorted(hier))
    tree = hier["pipeline"]
    assert len(tree["whole"]) >= 3 and all(t > 0 for _, t in tree["whole"]), (name, tree["whole"])
    assert list(tree["pipelines"]) == ["16384"] and len(tree["pipelines"]["16384"]["measured"]) >= 2, (name, tree)
hier = m["collectives"]["allgather"]["hier"]
assert [h["up_algorithm"] for h in hier] == ["module"], hier
print("up_tree=pipeline: whole and pipelined curves for bcast, reduce, allreduce; none for allgather")
EOF
    explain_to "$work/lt-ex.out" "$work/lt.json" --coll reduce --bytes 64K || return 1
    grep -qE "^    hier up_tree=pipeline +[0-9.]+" "$work/lt-ex.out" &&
        grep -qE "^    hier/16K up_tree=pipeline +[0-9.]+ .*\(4 segments" "$work/lt-ex.out" ||
        { cat "$work/lt-ex.out"; return 1; }
    explain_to "$work/lt-ex.out" "$work/lt.json" --coll allgather --bytes 1K || return 1
    grep -qE "^    hier +[0-9.]+" "$work/lt-ex.out" && ! grep -q "up_tree" "$work/lt-ex.out" ||
        { cat "$work/lt-ex.out"; return 1; }
}
step "collx-tune --up-trees: the leaders' collx tree measured (whole and pipelined), in the model and --explain" level_trees

# ... and collx-tune sets coll_hanx_low/up_algorithm through MPI_T at every
# measurement: a job started with chain between the leaders measures the
# module where a configuration says module and the LP tree where it says
# pipeline, never chain (every rank's verbose lines, in files of their own;
# --margin off: the built-in choice, the baseline, is chain in this job)
pinned_trees() {
    local_run 300 4 "${LEVELS2[@]}" --mca coll_hanx_up_algorithm chain --mca coll_hanx_verbose 10 \
        --output-filename "$work/pin" "$TUNE" --out "$work/pin.json" "${TINY[@]}" --colls bcast --up-trees pipeline \
        --margin off --quiet > "$work/pin.out" 2>&1 || { tail "$work/pin.out"; return 1; }
    local lines
    lines=$(cat "$work"/pin/1/rank.*/stderr | grep "coll:hanx: bcast levels (innermost first)" | sed 's/.*: //' | sort | uniq -c)
    echo "$lines"
    echo "$lines" | grep -qE "^ +[0-9]+ module, module$" && echo "$lines" | grep -qE "^ +[0-9]+ module, pipeline$" &&
        ! echo "$lines" | grep -q "chain"
}
step "collx-tune sets the levels' algorithms through MPI_T at every measurement (job started with chain)" pinned_trees

# a file whose rules name up_algorithm: validated (its configurations
# measured, the tree among them) and followed by hanx, with right results
follows_trees() {
    python3 - "$work/lt.json" "$work/ut.json" <<'EOF' || return 1
import json, sys
f = json.load(open(sys.argv[1]))
f["rules"] = [{"collective": c, "algorithm": "hierarchical", "segment_bytes": 16384, "up_algorithm": "pipeline"}
              for c in ("bcast", "reduce", "allreduce")]
json.dump(f, open(sys.argv[2], "w"))
EOF
    cp "$work/lt.model.json" "$work/ut.model.json"
    local_run 300 4 "${LEVELS2[@]}" "$TUNE" --validate "$work/ut.json" --sample 2 --windows 3 --point-time 0.001 \
        --colls bcast,reduce,allreduce > "$work/ut.out" 2>&1 || { tail "$work/ut.out"; return 1; }
    grep -Eq "^reduce +[0-9KM]+ +hier(/16K)? up_tree=pipeline +[0-9.]+ " "$work/ut.out" || { cat "$work/ut.out"; return 1; }
    local_run 300 4 "${LEVELS2[@]}" --mca coll_hanx_priority 100 --mca coll_hanx_tuning_file "$work/ut.json" \
        --mca coll_hanx_verbose 10 "$CHECKER" --quick --colls bcast,reduce,allreduce > "$work/utf.out" 2>&1 ||
        { tail -20 "$work/utf.out"; return 1; }
    grep "collx_check:" "$work/utf.out" | tail -1
    grep -q " 0 failed" "$work/utf.out" || return 1
    local c
    for c in bcast reduce allreduce; do
        grep -q "coll:hanx: $c levels (innermost first): module, pipeline" "$work/utf.out" || { echo "no $c on the tree"; return 1; }
    done
}
step "a file naming up_algorithm: --validate measures its tree, hanx runs it (verbose), checker passes" follows_trees

# hanx's built-in choice -- what runs where no rule matches -- is measured
# at every size beside the other configurations, the levels left to hanx
# (coll_hanx_low/up_algorithm "auto", written through MPI_T after the other
# measurements wrote "module": so the leaders' built-in tree runs, the collx
# binomial for a reduce from 64 KiB, which no configuration measured here
# runs), and it is the baseline: a size gets a rule only where a
# configuration beats it by more than the margin (10%) back to back and is
# predicted faster by the margin (or the built-in's measured spread there)
# or at least no slower (a near tie, decided by the loop); elsewhere no
# rule, and
# --explain and --validate say the built-in runs
builtin_baseline() {
    local_run 300 4 "${LEVELS2[@]}" --mca coll_hanx_verbose 10 --output-filename "$work/bl" "$TUNE" \
        --out "$work/bl.json" --colls bcast,reduce --flat topo --split no --segments 16K --min 1K --max 128K \
        --measure-max 128K --windows 3 --point-time 0.001 --quiet > "$work/bl.out" 2>&1 || { tail "$work/bl.out"; return 1; }
    cat "$work"/bl/1/rank.*/stderr | grep -q "coll:hanx: reduce levels (innermost first): module, binomial" ||
        { echo "the built-in reduce (the leaders' binomial tree from 64 KiB) not measured"; return 1; }
    python3 - "$work/bl" <<'PY' || return 1
import json, re, sys
m = json.load(open(sys.argv[1] + ".model.json"))
assert m["version"] == 10 and m["margin"] == 0.1, (m["version"], m["margin"])
for name in ("bcast", "reduce"):
    c = m["collectives"][name]
    assert [x for x, _ in c["builtin"]] == [x for x, _ in c["previous"]], name
    assert len(c["builtin_spread"]) == len(c["builtin"]) and all(t > 0 for _, t in c["builtin"]), name
rules = json.load(open(sys.argv[1] + ".json"))["rules"]
near_ties = 0
for r in rules:  # each beat the built-in by the margin in a loop, and was predicted no slower
    p, b, lp, lb = (float(v) for v in re.match(
        r"predicted ([0-9.]+) us at \S+ bytes \(built-in ([0-9.]+) us\); back to back ([0-9.]+) us \(built-in ([0-9.]+) us\)$",
        r["comment"]).groups())
    assert p <= b and lp < 0.9 * lb, r
    near_ties += not p < 0.9 * b  # (predicted faster, but not by the margin: the loop decided)
# the loop's times: at each size a rule covers, those of up to 3
# configurations (--loop-configs) and the built-in's, the fastest beating
# it; where none beat the built-in, no rule
def rule_at(name, x):
    return [r for r in rules if r["collective"] == name and r["bytes"][0] <= x and
            (r["bytes"][1] is None or x <= r["bytes"][1])]
timed = 0
for name in ("bcast", "reduce"):
    loop = {x: (cs, b) for x, b, cs in m["collectives"][name].get("back_to_back", [])}
    for x in m["sizes"]:
        if rule_at(name, x):
            assert x in loop and min(loop[x][0].values()) < 0.9 * loop[x][1], (name, x, loop.get(x))
    for x, (cs, b) in loop.items():
        assert 1 <= len(cs) <= 3 and all(t > 0 for t in cs.values()) and b > 0, (name, x, cs)
        timed += 1
        if not min(cs.values()) < 0.9 * b:
            assert not rule_at(name, x), (name, x, loop[x])
print(len(rules), "rules, each faster than hanx's built-in choice by more than 10% back to back and predicted",
      "no slower (%d near ties);" % near_ties, timed, "sizes timed back to back")
PY
    local coll b ex
    for coll in bcast reduce; do
        for b in 1K 4K 16K 64K 128K; do
            explain_to "$work/bl-ex.out" "$work/bl.json" --coll $coll --bytes $b || return 1
            ex=$(cat "$work/bl-ex.out")
            echo "$ex" | grep -qE "^    builtin +[0-9.]+ +\(hanx's own choice; a rule must be predicted [0-9]+% faster\)" &&
                { echo "$ex" | grep -q "^  rule [0-9]* (line [0-9]*) of" ||
                  { echo "$ex" | grep -q "no rule of .* matches: hanx uses its built-in defaults" &&
                    echo "$ex" | grep -q "<- runs: no rule"; }; } || { echo "$ex"; return 1; }
        done
    done
    # validated: where no rule matches, the built-in runs, measured like any configuration
    local_run 300 4 "${LEVELS2[@]}" "$TUNE" --validate "$work/bl.json" --sample 3 --windows 3 --point-time 0.001 \
        > "$work/blv.out" 2>&1 || { tail "$work/blv.out"; return 1; }
    ! grep -q "(no rule)" "$work/blv.out" &&
        [ "$(grep -cE '^(bcast|reduce) +[0-9KM]+ +[a-z]' "$work/blv.out")" = 6 ] || { cat "$work/blv.out"; return 1; }
}
step "collx-tune measures hanx's built-in choice (levels on auto) and writes a rule only where a configuration beats it by the margin" builtin_baseline

budget() {
    local_run 300 4 "${nodes2[@]}" "$TUNE" --out "$work/b.json" --windows 5 --budget 0.05 > "$work/b.out" 2>&1 &&
        grep -q "stopped early" "$work/b.out" &&
        grep -q '"complete": false' "$work/b.model.json" &&
        explain_to "$work/b-ex.out" "$work/b.json" --coll allreduce --bytes 16777216 &&
        grep -q "no rule of .* matches" "$work/b-ex.out"
}
step "collx-tune --budget stops early and writes rules only for what it measured" budget

errors() {
    "$TUNE" --segments 1 2>&1 | grep -q "segment sizes must be 4..1G" || return 1
    "$TUNE" --colls scan 2>&1 | grep -q 'unknown collective "scan"' || return 1
    "$TUNE" --max 12X 2>&1 | grep -q 'not a size: "12X"' || return 1
    "$TUNE" --clock gps 2>&1 | grep -q -- '--clock: auto, shared or estimate' || return 1
    "$TUNE" --up adaptx --up adaptx 2>&1 | grep -q -- '--low/--up: an empty or repeated value' || return 1
    "$TUNE" --split maybe 2>&1 | grep -q -- '--split: yes or no' || return 1
    "$TUNE" --up-trees torus 2>&1 | grep -q -- '--up-trees: no collx tree "torus"' || return 1
    "$TUNE" --loop-time 0 2>&1 | grep -q -- '--loop-time must be positive' || return 1
    "$TUNE" --loop-configs 0 2>&1 | grep -q -- '--loop-configs: at least 1' || return 1
    "$TUNE" --explain /nonexistent.json --coll bcast --bytes 4 2>&1 | grep -q "cannot open" || return 1
    local_run 120 2 "$TUNE" --quiet > "$work/e1.out" 2>&1
    grep -q "the job spans one node" "$work/e1.out" || { cat "$work/e1.out"; return 1; }
    local_run 120 4 "${nodes2[@]}" --mca coll_hanx_tuning_file "$forced_file" "$TUNE" --quiet > "$work/e2.out" 2>&1
    grep -q "coll_hanx_tuning_file is set" "$work/e2.out" || { cat "$work/e2.out"; return 1; }
}
step "collx-tune: clear errors (bad options, one node, a tuning file already set)" errors

finish
