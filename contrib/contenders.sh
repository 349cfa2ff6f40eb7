# Contender specs shared by contrib/bench.sh and contrib/trainer-bench.sh
# (sourced).  parse_contenders "SPEC ..." fills labels[i] (a name for tables
# and files) and flags[i] (mpirun arguments, shell-quoted) per contender:
#   default               Open MPI's default selection (Open MPI 5.0: han on)
#   tuned                 Open MPI's tuned: the default with han excluded
#                         (the same as default on Open MPI 4.1)
#   han, adapt, hanx, adaptx     that component at priority 100
#   adaptx:TREE           adaptx with TREE for bcast, reduce and allreduce:
#                         binomial, in_order_binomial, binary, knomial, chain,
#                         pipeline (the linear pipeline, LP), linear, topo, ring,
#                         recursive_doubling
#   hanx:FILE             hanx with the tuning file FILE (collx-tune output),
#                         labelled hanx:BASENAME
#   LABEL=K=V[,K=V...]    anything else: mpirun --mca K V ... under LABEL
#                         (only what it names: with coll_hanx_* settings, add
#                         coll_hanx_priority=100, else hanx does not run; a
#                         warning says so)
labels=()
flags=()
parse_contenders() {
    local c t f l kv fl p pairs
    labels=() flags=()
    for c in $1; do
        case "$c" in
        default) labels+=(default); flags+=("") ;;
        tuned) labels+=(tuned); flags+=("--mca coll ^han") ;;
        han|adapt|hanx|adaptx) labels+=("$c"); flags+=("--mca coll_${c}_priority 100") ;;
        adaptx:*) t=${c#adaptx:}
            labels+=("$c")
            flags+=("--mca coll_adaptx_priority 100 --mca coll_adaptx_bcast_algorithm $t --mca coll_adaptx_reduce_algorithm $t --mca coll_adaptx_allreduce_algorithm $t") ;;
        hanx:*) f=${c#hanx:}
            [ -f "$f" ] || { echo "contenders: tuning file $f not found" >&2; return 2; }
            f=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
            labels+=("hanx:$(basename "$f" .json)")
            flags+=("--mca coll_hanx_priority 100 --mca coll_hanx_tuning_file $(printf %q "$f")") ;;
        *=*) l=${c%%=*} kv=${c#*=} fl=""
            IFS=, read -ra pairs <<< "$kv"
            for p in "${pairs[@]}"; do fl="$fl --mca ${p%%=*} $(printf %q "${p#*=}")"; done
            # (a component's settings without its priority: it does not run)
            for t in hanx adaptx han adapt; do
                case "$fl" in
                *" --mca coll_${t}_"*) case "$fl" in *" --mca coll_${t}_priority "*) ;;
                    *) echo "contenders: $l sets coll_${t}_* but not coll_${t}_priority: coll/$t is not selected by it" >&2 ;;
                    esac ;;
                esac
            done
            labels+=("$l"); flags+=("$fl") ;;
        *) echo "contenders: unknown contender $c (default, tuned, han, adapt, hanx, adaptx, adaptx:TREE, hanx:FILE, LABEL=K=V,...)" >&2
            return 2 ;;
        esac
    done
}
