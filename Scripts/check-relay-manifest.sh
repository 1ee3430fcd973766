#!/usr/bin/env bash
# Loads Tests/RelayManifest/Package.swift (the one AsyncMailSQLite's Setting Up article shows, an
# excerpt of it) beside a link to this checkout named AsyncMail, and checks that SwiftPM finds
# every product it names (resolving the relays' dependencies, building nothing).
#   Scripts/check-relay-manifest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/AsyncMail"
mkdir -p "$work/Starter/Sources/Starter"
cp Tests/RelayManifest/Package.swift "$work/Starter/Package.swift"
touch "$work/Starter/Sources/Starter/main.swift"
# show-dependencies loads the whole graph: a product a target names that its package lacks fails it.
swift package --package-path "$work/Starter" show-dependencies >"$work/out" 2>&1 || {
    cat "$work/out" >&2
    echo "Tests/RelayManifest/Package.swift does not load" >&2
    exit 1
}
echo "Tests/RelayManifest/Package.swift loads; its products are found"
