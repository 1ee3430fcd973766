#!/usr/bin/env bash
# Runs AsyncMail's test suites again and again while every core is kept busy by another process,
# and says how many runs of each passed: a test that fails one run in twenty fails here.
#
#   Scripts/soak-tests.sh [RUNS] [SUITE ...]
#
# RUNS (default 3) runs of each SUITE, in turn; SUITE is one or more of
#   root         swift test (the README's command)
#   root-tsan    swift test --sanitize=thread, as .ci/run runs it; a ThreadSanitizer report fails the run
#   lifecycle    swift test --package-path ServiceLifecycle
#   observability  swift test --package-path Observability
#   relay        swift test --package-path Relays/Postgres, against a real PostgreSQL
#   sqlite       swift test --package-path Relays/SQLite (the embedded relay, #45)
#   contract     swift test --package-path Relays/Contract (every relay engine's one suite; PostgreSQL as for relay)
#   chat         the chat example's scenarios (Examples/ChatServer/Tests/chat_test.py), real WebSocket clients
# and all eight when none is named. Each suite is built first, without the load; then the load starts
# (one busy loop per core, SOAK_BURNERS to change it) and the runs begin. It prints, per suite,
#   <suite>: N passed, M failed (wall time)
# followed by each failing test's name and how many runs it failed in; the log of every failed run
# is kept in .build-soak/. Then, for the Swift suites, how close their waits came to their
# deadlines: every wait of AsyncMailTesting (withTimeout, waitUntil, expectMail, expectHandled) is
# logged with how long it took (ASYNCMAIL_WAIT_LOG), and each call site whose slowest wait took
# more than a tenth of its limit is listed, since a deadline is meant to be ten times the event.
# Exits 1 when any run failed.
#
# PostgreSQL: the relay and chat suites use the server that PGHOST names; without PGHOST, this
# starts Scripts/postgres.sh's throwaway cluster on 127.0.0.1 and stops it at the end. Everything
# is loopback. Bounded: each run has SOAK_RUN_LIMIT seconds (default 900), as in .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
shift || true
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(root root-tsan lifecycle observability relay sqlite contract chat)
run_limit=${SOAK_RUN_LIMIT:-900}
burners=${SOAK_BURNERS:-$(nproc)}
logs=.build-soak
mkdir -p "$logs"

# RUNS is a count of at least one: 0 would soak nothing and report nothing.
case "$runs" in '' | *[!0-9]* | 0*)
    echo "usage: $0 [RUNS] [root|root-tsan|lifecycle|observability|relay|sqlite|contract|chat ...]" >&2
    exit 2
    ;;
esac

# The command that runs a suite once (its build is already done), and the one that builds it.
command_for() {
    case "$1" in
    root) echo "swift test --skip-build" ;;
    # As a user runs it: the stress suites halve their volume by themselves under a sanitizer.
    root-tsan) echo "swift test --skip-build --sanitize=thread --scratch-path .build-tsan" ;;
    lifecycle) echo "swift test --skip-build --package-path ServiceLifecycle" ;;
    observability) echo "swift test --skip-build --package-path Observability" ;;
    relay) echo "swift test --skip-build --package-path Relays/Postgres --scratch-path $relay_scratch --disable-xctest" ;;
    sqlite) echo "swift test --skip-build --package-path Relays/SQLite --disable-xctest" ;;
    contract) echo "swift test --skip-build --package-path Relays/Contract --scratch-path $relay_scratch --disable-xctest" ;;
    chat) echo "env CHAT_LOG_LEVEL=warning python3 Examples/ChatServer/Tests/chat_test.py $(chat_binary)" ;;
    *)
        echo "unknown suite: $1" >&2
        return 2
        ;;
    esac
}

build() {
    case "$1" in
    root) swift build --build-tests ;;
    root-tsan) swift build --build-tests --sanitize=thread --scratch-path .build-tsan ;;
    lifecycle) swift build --build-tests --package-path ServiceLifecycle ;;
    observability) swift build --build-tests --package-path Observability ;;
    relay) swift build --build-tests --package-path Relays/Postgres --scratch-path "$relay_scratch" ;;
    sqlite) swift build --build-tests --package-path Relays/SQLite ;;
    contract) swift build --build-tests --package-path Relays/Contract --scratch-path "$relay_scratch" ;;
    chat)
        python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'websockets>=14'
        swift build --package-path Examples/ChatServer --product ChatServer "${chat_scratch[@]}"
        ;;
    esac
}

# RELAY_SCRATCH_PATH: the build folder of the relay and contract suites, the PostgreSQL relay's own
# unless set (.ci/run builds them in the embedded relay's, and says why).
relay_scratch=${RELAY_SCRATCH_PATH:-Relays/Postgres/.build}
# CHAT_SCRATCH_PATH: as in Examples/ChatServer/test.sh.
chat_scratch=(${CHAT_SCRATCH_PATH:+--scratch-path "$CHAT_SCRATCH_PATH"})
chat_binary() { echo "$(swift build --package-path Examples/ChatServer --show-bin-path "${chat_scratch[@]}")/ChatServer"; }

# The names of what failed in one run's log: Swift Testing's failed tests, or the chat scenarios.
failures_in() {
    {
        grep -aE '^✘ Test ' "$1" | grep -avE '^✘ Test run with' | sed -nE 's/^✘ Test ("[^"]*"|[^ ]+) .*/\1/p' || true
        grep -aE '^scenario [a-z]+ FAILED' "$1" | sed -E 's/^scenario ([a-z]+) FAILED.*/scenario \1/' || true
        grep -aqE '^WARNING: ThreadSanitizer' "$1" && echo "a ThreadSanitizer report" || true
        grep -aqE '^(Fatal error|.*Fatal error:)' "$1" && echo "a crash (Fatal error)" || true
    } | sort -u
}

# What the wait log says: the slowest wait against its limit, and every call site over a tenth.
headroom() {
    awk -F'\t' '
        { if (!($1 in slowest) || $3 > slowest[$1]) { slowest[$1] = $3; limit[$1] = $2 }; count++ }
        END {
            worst = ""
            for (site in slowest) {
                if (worst == "" || slowest[site] / limit[site] > slowest[worst] / limit[worst]) worst = site
                if (slowest[site] * 10 > limit[site])
                    printf "    over a tenth of its deadline: %s took %.2f s of %g s\n", site, slowest[site], limit[site]
            }
            printf "    waits: %d, the slowest against its deadline %s: %.3f s of %g s (%.1f%%)\n",
                count, worst, slowest[worst], limit[worst], 100 * slowest[worst] / limit[worst]
        }' "$1" | sort
}

for suite in "${suites[@]}"; do command_for "$suite" >/dev/null; done

started_postgres=0
# By this shell only: a subshell signalled right after its fork runs the EXIT trap it inherited
# (see on_exit in .ci/run), and would stop PostgreSQL under the suites.
stop_all() {
    local self _
    read -r self _ </proc/self/stat
    [ "$self" = "$$" ] || return 0
    for pid in "${burner_pids[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
    if [ "$started_postgres" = 1 ]; then Scripts/postgres.sh stop || true; fi
}
burner_pids=()
trap stop_all EXIT
trap 'exit 130' INT TERM

for suite in "${suites[@]}"; do
    if [ "$suite" = relay ] || [ "$suite" = chat ]; then
        if [ -z "${PGHOST:-}" ]; then
            eval "$(Scripts/postgres.sh start)"
            started_postgres=1
        fi
        # Lets the relay's fault tests restart and stop the server: only the tests' own cluster.
        if [ -z "${ASYNCMAIL_PG_CONTROL:-}" ] && [ "$started_postgres" = 1 ]; then
            export ASYNCMAIL_PG_CONTROL="$PWD/Scripts/postgres.sh"
        fi
        break
    fi
done

echo "=== building ${suites[*]} (without the load)"
for suite in "${suites[@]}"; do
    build "$suite" >"$logs/build-$suite.log" 2>&1 || {
        tail -40 "$logs/build-$suite.log"
        echo "$suite did not build" >&2
        exit 1
    }
done

echo "=== load: $burners busy loops on $(nproc) cores"
for _ in $(seq "$burners"); do
    (while :; do :; done) &
    burner_pids+=($!)
done

summary=()
failed_any=0
for suite in "${suites[@]}"; do
    command=$(command_for "$suite")
    passed=0
    failed=0
    names=""
    started=$SECONDS
    waits="$PWD/$logs/waits-$suite.tsv"
    rm -f "$waits"
    for run in $(seq "$runs"); do
        log="$logs/$suite-$run.log"
        run_started=$SECONDS
        status=0
        ASYNCMAIL_WAIT_LOG="$waits" timeout "$run_limit" $command >"$log" 2>&1 || status=$?
        found=$(failures_in "$log")
        if [ "$status" = 0 ] && [ -z "$found" ]; then
            passed=$((passed + 1))
            rm -f "$log"
            echo "$suite run $run: passed ($((SECONDS - run_started)) s)"
        else
            failed=$((failed + 1))
            [ "$status" = 124 ] && found=$(printf '%s\nthe run itself, timed out after %s s' "$found" "$run_limit")
            [ -n "$found" ] || found="exit status $status, no failing test named (see the log)"
            names=$(printf '%s\n%s' "$names" "$found")
            echo "$suite run $run: FAILED ($((SECONDS - run_started)) s, log in $log):"
            printf '%s\n' "$found" | sed 's/^/    /'
            # What each failure said (an issue and the details under it), so that a CI log is enough to start from.
            awk '/recorded an issue|Fatal error|ThreadSanitizer: |AssertionError|Error: / { print; details = 1; next }
                 details && /^↳/ { print; next } { details = 0 }' "$log" | head -30 | sed 's/^/      /'
        fi
    done
    wall=$((SECONDS - started))
    line="$suite: $passed passed, $failed failed ($((wall / 60)) min $((wall % 60)) s, $((wall / runs)) s a run)"
    if [ "$failed" -gt 0 ]; then
        failed_any=1
        line=$(printf '%s\n%s' "$line" "$(printf '%s\n' "$names" | sed '/^$/d' | sort | uniq -c | sed -E 's/^ *([0-9]+) (.*)/    \2: failed in \1 of '"$runs"' runs/')")
    fi
    if [ -s "$waits" ]; then
        line=$(printf '%s\n%s' "$line" "$(headroom "$waits")")
    fi
    summary+=("$line")
done

echo
echo "=== soak: $runs runs each, $burners busy loops on $(nproc) cores"
printf '%s\n' "${summary[@]}"
exit "$failed_any"
