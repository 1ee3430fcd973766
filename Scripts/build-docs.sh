#!/usr/bin/env bash
# Builds a product's DocC catalog offline, failing on any warning (broken links, undocumented topics).
#   Scripts/build-docs.sh                                   AsyncMail, into .build/docs/AsyncMail.doccarchive
#   Scripts/build-docs.sh ServiceLifecycle AsyncMailServiceLifecycle   a nested package's target
set -euo pipefail
cd "$(dirname "$0")/.."

package=${1:-.}
target=${2:-AsyncMail}
output="$package/.build/docs/$target.doccarchive"
# Kept between runs: an up-to-date incremental build does not emit the graphs again.
symbols="$package/.build/docs/symbol-graphs"
# Only the target's own graphs: its dependencies' would be documented as part of it.
own="$package/.build/docs/$target-symbol-graphs"
rm -rf "$output" "$own"
mkdir -p "$symbols" "$own"

swift build --package-path "$package" --target "$target" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$symbols" \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public \
    -Xswiftc -emit-extension-block-symbols
cp "$symbols/$target".symbols.json "$own/"
cp "$symbols/$target"@*.symbols.json "$own/" 2>/dev/null || true

docc convert "$package/Sources/$target/$target.docc" \
    --additional-symbol-graph-dir "$own" \
    --fallback-display-name "$target" \
    --fallback-bundle-identifier "org.asyncmail.$target" \
    --output-path "$output" \
    --enable-experimental-overloaded-symbol-presentation \
    --warnings-as-errors
echo "documentation built: $output"
