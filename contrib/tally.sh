# Counting what `make check` left behind (sourced by contrib/test.sh and
# test/debian13/checks.sh).  tally LOG...: shows each log's verdict lines
# and adds to $passed and $failed -- a Check program's checks ("Checks: N,
# Failures: F, Errors: E"), else a script's steps ("PASS: " / "FAIL: ").
tally() {
    local log unit
    for log in "$@"; do
        echo "==== $log"
        grep -E "^(PASS|FAIL|SKIP)|Checks:|passed|failed" "$log" | head -60
        unit=$(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$log" | tail -1)
        if [ -n "$unit" ]; then
            set -- $unit
            passed=$(( passed + $1 - $2 - $3 )) failed=$(( failed + $2 + $3 ))
        else
            passed=$(( passed + $(grep -c "^PASS: " "$log") ))
            failed=$(( failed + $(grep -c "^FAIL: " "$log") ))
        fi
    done
}
