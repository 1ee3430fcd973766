#!/usr/bin/env bash
# Type-checks every fixture in Tests/CompileFailures against the built AsyncMail module.
# A fixture's first line says what must happen:
#   // expect-error: <diagnostic text>   type-checking fails with exactly that diagnostic
#   // expect-success                    type-checking succeeds (the control case)
# Exits non-zero if any fixture behaves otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --target AsyncMail >/dev/null
modules="$(swift build --show-bin-path)/Modules"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failures=0
checked=0
for fixture in Tests/CompileFailures/*.swift; do
    checked=$((checked + 1))
    expectation=$(head -n 1 "$fixture")
    if swiftc -typecheck -swift-version 6 -I "$modules" -module-cache-path "$scratch" \
        "$fixture" >"$scratch/out" 2>&1; then
        status=0
    else
        status=$?
    fi
    case "$expectation" in
    "// expect-success")
        if [ "$status" -eq 0 ]; then
            echo "ok: $fixture compiles"
        else
            echo "FAIL: $fixture should compile but did not:"; cat "$scratch/out"; failures=$((failures + 1))
        fi
        ;;
    "// expect-error: "*)
        wanted=${expectation#"// expect-error: "}
        if [ "$status" -ne 0 ] && grep -qF "error: $wanted" "$scratch/out"; then
            echo "ok: $fixture is rejected: $wanted"
        else
            echo "FAIL: $fixture should be rejected with: $wanted"; cat "$scratch/out"; failures=$((failures + 1))
        fi
        ;;
    *)
        echo "FAIL: $fixture has no expectation on its first line"; failures=$((failures + 1))
        ;;
    esac
done
echo "compile fixtures: $((checked - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
