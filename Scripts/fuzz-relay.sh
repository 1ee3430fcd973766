#!/usr/bin/env bash
# Fuzzes the relay's inbound path (decoding, validation and the per-origin accounting) with
# libFuzzer, coverage-guided, for a bounded time. Only the relays' shared RelayWire package (no
# database) and AsyncMail are built, with -sanitize=fuzzer,address, in a scratch folder of their own.
#
#   Scripts/fuzz-relay.sh [SECONDS]     default 60; prints libFuzzer's final stats (stat::number_of_executed_units)
#
# SwiftPM links an executable's entry point as RelayFuzz_main; with -DFUZZING the C target
# RelayFuzzDriver defines it and hands control to libFuzzer's driver.
# A crash leaves its input in Relays/Wire/.build-fuzz/crash-*; replay it with the plain build:
#   swift run --package-path Relays/Wire RelayFuzz Relays/Wire/.build-fuzz/crash-…
set -euo pipefail
cd "$(dirname "$0")/../Relays/Wire"
seconds=${1:-60}
scratch=.build-fuzz
swift build -c release --product RelayFuzz --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -parse-as-library -Xcc -DFUZZING
binary="$(swift build -c release --product RelayFuzz --scratch-path "$scratch" --show-bin-path)/RelayFuzz"
# The fuzzer adds what it finds to the corpus folder: work on a copy, keep the seeds clean.
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp Fuzz/corpus/* "$corpus"/
"$binary" "$corpus" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$scratch/" -print_final_stats=1
