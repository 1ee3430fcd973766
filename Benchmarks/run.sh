#!/usr/bin/env bash
# Runs every AsyncMail benchmark and its baselines in one go, then prints ratios of medians.
#   Benchmarks/run.sh            (about 5 minutes on 2 cores, after a first release build)
set -euo pipefail
cd "$(dirname "$0")"
results=.build/results
mkdir -p "$results"

swift package --disable-sandbox benchmark --no-progress --format markdown >"$results/benchmarks.md"
swift run -c release Probe | tee "$results/probe.txt"

echo
echo "Machine: $(nproc) cores, $(uname -m), $(swift --version 2>&1 | head -n 1)"
echo "Date:    $(date -u +%Y-%m-%d)"
python3 ratios.py "$results/benchmarks.md" "$results/probe.txt"
