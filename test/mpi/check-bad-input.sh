#!/bin/bash
# Bad input: every MCA parameter of coll/hanx and coll/adaptx given nonsense
# (negative, huge, not a number, unknown choices), unknown parameter names,
# bad tuning files, and erroneous MPI calls.  Each run must not crash or
# hang, must compute right (a small collx_check subset), and must say in
# show_help style which parameter/file is wrong, with what, and what is
# used instead.
. "$(dirname "$0")/common.sh"
unset OMPI_MCA_coll_hanx_tuning_file   # the steps below choose their own
BAD_ARGS="$COLLX_BUILDDIR/test/mpi/bad_args"
HANX="--mca coll_hanx_priority 100 --mca coll_hanx_ranks_per_node 2"
ADAPTX="--mca coll_adaptx_priority 100"
SUBSET="--quick --colls bcast,reduce,allreduce,allgather --max-count 64 --seed 21"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

params() {  # params COMPONENT TYPE: the component's parameters of that type
    ompi_info --param coll "$1" --level 9 --parsable 2>/dev/null |
        sed -n "s/^mca:coll:$1:param:\(coll_$1_[a-z_]*\):type:$2\$/\1/p"
}
# the checker through the component, with its output for the greps
checked() {  # checked OUTFILE mpirun-args... : run the subset, 0 failed
    local out=$1; shift
    local_run 120 4 "$@" "$CHECKER" $SUBSET >"$out" 2>&1
    local rc=$?
    tail -3 "$out"
    [ $rc = 0 ] && grep -q " 0 failed" "$out"
}
said() {  # said OUTFILE PARAM VALUE: a message names the parameter and value
    local out=$1 p=$2 v=$3
    awk -v p="  Parameter: $p" -v v="  Value:     $v" \
        '$0 == p { getline; if ($0 == v) found = 1 } END { exit !found }' "$out" ||
        { echo "no message for $p = '$v'"; return 1; }
}

# --- every integer parameter at once with one kind of nonsense (all but
# priority and the node grouping, which the run needs; those come after)
ints_bad() {  # ints_bad COMPONENT VALUE component-args...
    local comp=$1 val=$2 p out="$T/ints.$comp"
    shift 2
    local list=$(params $comp int | grep -v -e _priority -e _ranks_per_node)
    [ -n "$list" ] || { echo "no int parameters found for $comp"; return 1; }
    ( for p in $list; do export "OMPI_MCA_$p=$val"; done
      checked "$out" "$@" ) || return 1
    for p in $list; do said "$out" $p "$val" || return 1; done
    grep -q "is used instead" "$out"
}
for val in -7 99999999999999999999 abc 12abc; do
    step "hanx: every int parameter = '$val' is reported, defaults used, results right" \
        ints_bad hanx "$val" $HANX
    step "adaptx: every int parameter = '$val' is reported, defaults used, results right" \
        ints_bad adaptx "$val" $ADAPTX
done
one_bad() {  # one_bad PARAM VALUE mpirun-args...: reported and still right
    local p=$1 v=$2 out="$T/one"; shift 2
    ( export "OMPI_MCA_$p=$v"; checked "$out" "$@" ) || return 1
    said "$out" "$p" "$v"
}
step "hanx: priority -5 (out of range) is reported, results right" one_bad coll_hanx_priority -5
step "hanx: ranks_per_node 1e9 is reported, results right" \
    one_bad coll_hanx_ranks_per_node 1000000000 --mca coll_hanx_priority 100
step "adaptx: priority 'high' is reported, results right" one_bad coll_adaptx_priority high
step "self-test: a valid value (verbose 0) produces no message, which one_bad notices" \
    eval '! one_bad coll_hanx_verbose 0 $HANX'

# --- choices (strings)
for coll in bcast reduce allreduce; do
    for v in nosuch "" BINOMIAL_; do
        step "adaptx: ${coll}_algorithm='$v' is reported, default tree used, results right" \
            one_bad coll_adaptx_${coll}_algorithm "$v" $ADAPTX
    done
done
for which in low up; do
    for v in nosuch "" MODULE_; do
        step "hanx: ${which}_algorithm='$v' is reported, the levels' module used, results right" \
            one_bad coll_hanx_${which}_algorithm "$v" $HANX
    done
done
for v in nosuch "" NONE_; do
    step "hanx: flat_algorithm='$v' is reported, no flat tree, results right" \
        one_bad coll_hanx_flat_algorithm "$v" $HANX
done
for which in low up; do
    for v in hanx "" "^tuned" "adaptx,hanx"; do
        step "hanx: ${which}_preference='$v' (would recurse) is rewritten to exclude hanx, reported" \
            one_bad coll_hanx_${which}_preference "$v" $HANX
    done
    step "hanx: ${which}_preference naming an unknown component still runs right" \
        checked "$T/pref" $HANX --mca coll_hanx_${which}_preference "nosuch,^hanx"
done

# --- unknown parameter names (typos), from the command line and the environment
unknown_names() {
    local out="$T/unknown"
    OMPI_MCA_coll_adaptx_bcast_algoritm=chain checked "$out" $HANX --mca coll_hanx_nosuch 3 \
        --mca coll_hanx_segment_size 1k || return 1
    said "$out" coll_hanx_nosuch 3 && said "$out" coll_hanx_segment_size 1k &&
        said "$out" coll_adaptx_bcast_algoritm chain && grep -q "has no such parameter" "$out"
}
step "unknown parameter names of hanx and adaptx are reported, results right" unknown_names

# --- tuning files
printf '' >"$T/empty.json"
printf '{ "format": "collx-tuning", "version": 1,\n  "rules": [\n    { "collective": "bcast",' \
    >"$T/truncated.json"
printf 'collective=bcast algorithm=previous\n' >"$T/notjson.json"
head -c 300 /dev/urandom >"$T/binary.json"
rules() {  # rules FILE RULES...: a tuning file with these rules, one per line
    local f=$1; shift
    { printf '{ "format": "collx-tuning", "version": 1,\n  "rules": [\n'
      local first=1 r
      for r in "$@"; do [ $first = 1 ] || printf ',\n'; printf '    %s' "$r"; first=0; done
      printf '\n  ] }\n'; } >"$f"
}
rules "$T/types.json" '{ "collective": "bcast", "segment_bytes": "64k" }'
rules "$T/missing.json" '{ "algorithm": "previous" }'
rules "$T/negative.json" '{ "collective": "reduce", "bytes": [-1, 100] }'
rules "$T/negseg.json" '{ "collective": "reduce", "segment_bytes": -4096 }'
rules "$T/minmax.json" '{ "collective": "bcast", "bytes": [100, 10] }'
rules "$T/coll.json" '{ "collective": "bcast" }' '{ "collective": "broadcast" }'
rules "$T/algo.json" '{ "collective": "allreduce", "algorithm": "ring" }'
rules "$T/flat.json" '{ "collective": "allgather", "algorithm": "flat:binomial" }'
rules "$T/split.json" '{ "collective": "reduce_scatter_block", "algorithm": "split" }' \
    '{ "collective": "scan", "algorithm": "split" }'
rules "$T/algtype.json" '{ "collective": "allreduce", "algorithm": 7 }'
rules "$T/unknownkey.json" '{ "collective": "allreduce", "segmnet_bytes": 4096 }'
printf '{ "format": "collx-tuning", "version": 99, "rules": [] }\n' >"$T/version.json"
printf '{ "format": "other", "version": 1, "rules": [] }\n' >"$T/format.json"
printf '{ "format": "collx-tuning", "version": 1, "rules": {} }\n' >"$T/rulesobj.json"
printf '[ 1, 2, 3 ]\n' >"$T/array.json"
bad_tuning() {  # bad_tuning FILE [LINE]: reported (file, and line where given), defaults, right
    local f=$1 line=${2:-} out="$T/tuning"
    checked "$out" $HANX --mca coll_hanx_tuning_file "$f" || return 1
    grep -aq "cannot be used" "$out" || { echo "no show_help message"; return 1; }
    grep -aA3 "cannot be used" "$out" | grep -aq "File: *$f" || { echo "file not named"; return 1; }
    if [ -n "$line" ]; then
        grep -aq "$(basename "$f"):$line" "$out" || { echo "line $line not named"; cat "$out"; return 1; }
    fi
    grep -aA4 "cannot be used" "$out" | grep -a "Problem:"
}
step "tuning file: missing file" bad_tuning "$T/nosuch.json"
step "tuning file: a directory" bad_tuning "$T"
step "tuning file: empty" bad_tuning "$T/empty.json"
step "tuning file: truncated JSON (line 3)" bad_tuning "$T/truncated.json" 3
step "tuning file: not JSON (line 1)" bad_tuning "$T/notjson.json" 1
step "tuning file: binary garbage" bad_tuning "$T/binary.json"
step "tuning file: wrong value type (line 3)" bad_tuning "$T/types.json" 3
step "tuning file: rule without a collective (line 3)" bad_tuning "$T/missing.json" 3
step "tuning file: negative message size (line 3)" bad_tuning "$T/negative.json" 3
step "tuning file: negative segment size (line 3)" bad_tuning "$T/negseg.json" 3
step "tuning file: min > max (line 3)" bad_tuning "$T/minmax.json" 3
step "tuning file: unknown collective name (line 4)" bad_tuning "$T/coll.json" 4
step "tuning file: unknown algorithm for hanx (line 3)" bad_tuning "$T/algo.json" 3
step "tuning file: a flat collx tree for a collective without one (line 3)" bad_tuning "$T/flat.json" 3
step "tuning file: split rails for a collective without them (line 4; reduce_scatter_block's are fine)" \
    bad_tuning "$T/split.json" 4
step "tuning file: algorithm of the wrong type (line 3)" bad_tuning "$T/algtype.json" 3
step "tuning file: unknown key (line 3)" bad_tuning "$T/unknownkey.json" 3
step "tuning file: unsupported version" bad_tuning "$T/version.json" 1
step "tuning file: wrong format name" bad_tuning "$T/format.json" 1
step "tuning file: rules not a list" bad_tuning "$T/rulesobj.json" 1
step "tuning file: a list at the top" bad_tuning "$T/array.json" 1
# overlapping rules are legal (docs/tuning-file.md: tried in order, the
# first match wins): accepted, the first one followed, results right
rules "$T/overlap.json" '{ "collective": "bcast", "algorithm": "previous" }' \
    '{ "collective": "bcast", "bytes": [0, 100], "algorithm": "hierarchical" }'
overlap() {
    local out="$T/overlap"
    checked "$out" $HANX --mca coll_hanx_tuning_file "$T/overlap.json" --mca coll_hanx_verbose 20 ||
        return 1
    ! grep -q "cannot be used" "$out" && grep -q "bcast of [0-9]* bytes: rule 1 (line 3)" "$out" &&
        ! grep -q "bcast of [0-9]* bytes: rule 2" "$out"
}
step "tuning file: overlapping rules accepted, the first match followed" overlap

# --- erroneous MPI calls under MPI_ERRORS_RETURN: error codes, no crash
for comp in "tuned (no collx)|--mca coll ^hanx,adaptx" "hanx 2x2|$HANX" "adaptx|$ADAPTX" \
    "hanx over adaptx|$HANX --mca coll_adaptx_priority 90"; do
    step "erroneous collective calls return MPI error codes: ${comp%%|*}" \
        eval 'local_run 120 4 ${comp#*|} "$BAD_ARGS" | grep "bad_args:"; [ ${PIPESTATUS[0]} = 0 ]'
done
step "self-test: bad_args fails when a call does not return an error" \
    eval '! local_run 120 4 $HANX "$BAD_ARGS" --self-test'
finish
