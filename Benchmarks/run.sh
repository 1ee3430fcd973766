#!/usr/bin/env bash
# Runs every AsyncMail benchmark and its baselines in one go, then prints ratios of medians.
#   Benchmarks/run.sh            (about 2 minutes on 2 cores, after a first release build of about 3)
# PROCESSES (default 6) and ROUNDS (default 61) size the interleaved part.
set -euo pipefail
cd "$(dirname "$0")"
results=.build/results
rm -rf "$results"
mkdir -p "$results"

# Every shape, one after another: wall time, throughput and mallocs.
swift package --disable-sandbox benchmark --no-progress --format markdown >"$results/benchmarks.md"

# Idle memory and latency; then the ratio targets with both sides interleaved, in several
# processes because where a process's threads and memory land moves some ratios.
swift build -c release --product Probe
.build/release/Probe | tee "$results/probe.txt"
for process in $(seq "${PROCESSES:-6}"); do
    .build/release/Probe ratios "${ROUNDS:-61}" >"$results/interleaved-$process.txt"
done

echo
echo "Machine: $(nproc) cores, $(uname -m), $(swift --version 2>&1 | head -n 1)"
echo "Date:    $(date -u +%Y-%m-%d)"
echo
python3 ratios.py "$results/benchmarks.md" "$results/probe.txt" "$results"/interleaved-*.txt
