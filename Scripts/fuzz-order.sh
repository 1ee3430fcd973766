#!/usr/bin/env bash
# Runs the order-race fuzz of OrderRaceTests (posters against subscriptions of every kind that
# come, go and end, checked for disagreements and holes) for about ROUNDS rounds, in runs of 1,200
# (800 rounds, and 400 with a slow termination handler), each run on seeds of its own.
#   Scripts/fuzz-order.sh [ROUNDS]      (default 20,000; about 20 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20000}
swift build --build-tests >/dev/null
runs=$(((rounds + 1199) / 1200))
for run in $(seq 1 "$runs"); do
    # Scale 10: each test case runs 400 rounds, well within its 5-minute limit.
    if ! ASYNCMAIL_STRESS_SCALE=10 ASYNCMAIL_FUZZ_SEED=$run swift test --skip-build \
        --filter 'OrderRaceTests/(racingSubscriptionsKeepOneOrder|slowlyEndingSubscriptionsKeepOneOrder)' \
        >".build/fuzz-order-$run.log" 2>&1; then
        grep -E "fuzz seed|✘" ".build/fuzz-order-$run.log" >&2 || tail -20 ".build/fuzz-order-$run.log" >&2
        echo "fuzz-order: run $run of $runs failed (log: .build/fuzz-order-$run.log)" >&2
        exit 1
    fi
    echo "fuzz-order: run $run of $runs passed ($((run * 1200)) rounds)"
done
