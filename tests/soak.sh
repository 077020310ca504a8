#!/usr/bin/env bash
# The soak: the host and docker tiers, ROUNDS times in a row (default 3), while
# `stress-ng --cpu STRESS_CPUS` (default 2) loads the machine.  A suite that is robust by
# design passes every round; any failure makes the exit status non-zero.
#
#   tests/soak.sh                    # from the checkout's root, as root (both tiers need it)
#   ROUNDS=1 STRESS_CPUS=4 tests/soak.sh
#
# Each tier's output goes to .test-results/soak/round-<n>-<tier>.log; one summary line per
# round is printed, and a last line with the verdict.  Not part of CI (it takes 30-60 min).
set -u

cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-3}"
STRESS_CPUS="${STRESS_CPUS:-2}"
PY="${PYTHON:-.venv/bin/python}"
LOGS=.test-results/soak

command -v stress-ng >/dev/null || { echo "soak: stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }
[ -x "$PY" ] || { echo "soak: no $PY: run make setup first" >&2; exit 2; }
mkdir -p "$LOGS"

stress-ng --cpu "$STRESS_CPUS" --timeout 0 >"$LOGS/stress-ng.log" 2>&1 &
SPID=$!
stop_stress() {
    # stress-ng ends its workers on SIGTERM; wait for that one process by its pid only.
    if kill -0 "$SPID" 2>/dev/null; then
        kill "$SPID" 2>/dev/null
        wait "$SPID" 2>/dev/null
    fi
}
trap stop_stress EXIT
trap 'exit 130' INT TERM
echo "soak: stress-ng --cpu $STRESS_CPUS (pid $SPID), $ROUNDS round(s) of the host and docker tiers"

# tier NAME PATHS...: runs pytest on PATHS into its log; prints "NAME rc=… <pytest's last line>".
tier() {
    local name=$1 log
    shift
    log="$LOGS/round-$round-$name.log"
    local t0=$SECONDS
    "$PY" -m pytest -q -rfEs -p no:cacheprovider "$@" >"$log" 2>&1
    local rc=$?
    local last
    last=$(grep -E '(passed|failed|error|skipped|no tests ran)' "$log" | tail -n 1)
    printf '%s rc=%d %ds [%s]' "$name" "$rc" $((SECONDS - t0)) "${last//=/}"
    return "$rc"
}

failed=0
for round in $(seq 1 "$ROUNDS"); do
    kill -0 "$SPID" 2>/dev/null || { echo "soak: stress-ng (pid $SPID) is gone" >&2; exit 2; }
    host=$(tier host tests/host tests/tooling tests/examples) || failed=$((failed + 1))
    docker=$(tier docker tests/docker) || failed=$((failed + 1))
    echo "round $round/$ROUNDS: $host; $docker"
done

if [ "$failed" -eq 0 ]; then
    echo "soak: PASSED, $ROUNDS round(s) under stress-ng --cpu $STRESS_CPUS (logs: $LOGS)"
    exit 0
fi
echo "soak: FAILED, $failed tier run(s) of $((2 * ROUNDS)) (logs: $LOGS)"
exit 1
