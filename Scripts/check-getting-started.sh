#!/usr/bin/env bash
# Builds and runs the Getting Started article's package exactly as written: its Package.swift
# block, and its two Swift blocks after it as main.swift, beside a link to this checkout.
#   Scripts/check-getting-started.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/AsyncMail"
mkdir -p "$work/Kitchen/Sources/Kitchen"
python3 - "$root/Sources/AsyncMail/AsyncMail.docc/GettingStarted.md" "$work/Kitchen" <<'PY'
import re, sys
blocks = re.findall(r"```swift\n(.*?)```", open(sys.argv[1]).read(), re.S)
manifest = next(b for b in blocks if "PackageDescription" in b)
after = blocks[blocks.index(manifest) + 1:]
open(sys.argv[2] + "/Package.swift", "w").write(manifest)
open(sys.argv[2] + "/Sources/Kitchen/main.swift", "w").write("\n".join(after[:2]))
import os
os.makedirs(sys.argv[2] + "/Tests/KitchenTests", exist_ok=True)
open(sys.argv[2] + "/Tests/KitchenTests/KitchenTests.swift", "w").write(after[2])
PY
output=$(cd "$work/Kitchen" && swift run Kitchen 2>&1 | tail -n 2)
echo "$output"
[ "$(echo "$output" | tail -n 1)" = "0" ] || { echo "Getting Started did not print 0" >&2; exit 1; }
# The article's test, as written: it must pass, and it must have run.
tests=$(cd "$work/Kitchen" && swift test 2>&1 | tail -n 3)
echo "$tests"
echo "$tests" | grep -q 'Test run with 1 test.* passed' || { echo "Getting Started's test did not pass" >&2; exit 1; }
