#!/usr/bin/env bash
# Builds the DocC catalog offline, failing on any warning (broken links, undocumented topics).
#   Scripts/build-docs.sh [OUTPUT_DIR]   (default: .build/docs/AsyncMail.doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."

output=${1:-.build/docs/AsyncMail.doccarchive}
# Kept between runs: an up-to-date incremental build does not emit the graphs again.
symbols=.build/docs/symbol-graphs
rm -rf "$output"
mkdir -p "$symbols"

swift build --target AsyncMail \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$symbols" \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public

docc convert Sources/AsyncMail/AsyncMail.docc \
    --additional-symbol-graph-dir "$symbols" \
    --fallback-display-name AsyncMail \
    --fallback-bundle-identifier org.asyncmail.AsyncMail \
    --output-path "$output" \
    --warnings-as-errors
echo "documentation built: $output"
