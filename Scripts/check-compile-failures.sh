#!/usr/bin/env bash
# Type-checks every fixture in Tests/CompileFailures against the built AsyncMail, AsyncMailFoundation and
# AsyncMailTesting modules, in the Swift 6 and the Swift 5 language modes.
# A fixture's first line says what must happen in both modes:
#   // expect-error: <diagnostic text>     type-checking fails with exactly that diagnostic
#   // expect-warning: <diagnostic text>   type-checking succeeds with exactly that warning
#   // expect-success                      type-checking succeeds (the control case)
# An optional second line, `// swift5: <one of the above>`, says what the Swift 5 mode does
# instead, for a diagnostic that mode only warns about (Sendable checking).
# Exits non-zero if any fixture behaves otherwise in either mode.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --target AsyncMailTesting >/dev/null
swift build --target AsyncMailFoundation >/dev/null
modules="$(swift build --show-bin-path)/Modules"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failures=0
checked=0

# check FIXTURE MODE EXPECTATION
check() {
    local fixture=$1 mode=$2 expectation=$3 status wanted
    checked=$((checked + 1))
    # AsyncMail's inlinable locks use its C target's module, which a client must see too.
    if swiftc -typecheck -swift-version "$mode" -I "$modules" -I Sources/CAsyncMail/include -module-cache-path "$scratch" \
        "$fixture" >"$scratch/out" 2>&1; then
        status=0
    else
        status=$?
    fi
    case "$expectation" in
    "// expect-success")
        if [ "$status" -eq 0 ]; then
            echo "ok (Swift $mode): $fixture compiles"
            return
        fi
        echo "FAIL (Swift $mode): $fixture should compile but did not:"
        ;;
    "// expect-error: "*)
        wanted=${expectation#"// expect-error: "}
        if [ "$status" -ne 0 ] && grep -qF "error: $wanted" "$scratch/out"; then
            echo "ok (Swift $mode): $fixture is rejected: $wanted"
            return
        fi
        echo "FAIL (Swift $mode): $fixture should be rejected with: $wanted"
        ;;
    "// expect-warning: "*)
        wanted=${expectation#"// expect-warning: "}
        if [ "$status" -eq 0 ] && grep -qF "warning: $wanted" "$scratch/out"; then
            echo "ok (Swift $mode): $fixture compiles with: $wanted"
            return
        fi
        echo "FAIL (Swift $mode): $fixture should compile with the warning: $wanted"
        ;;
    *)
        echo "FAIL: $fixture has no expectation on its first line"
        ;;
    esac
    cat "$scratch/out"
    failures=$((failures + 1))
}

for fixture in Tests/CompileFailures/*.swift; do
    expectation=$(sed -n 1p "$fixture")
    swift5=$(sed -n 2p "$fixture")
    check "$fixture" 6 "$expectation"
    if [[ "$swift5" == "// swift5: "* ]]; then
        check "$fixture" 5 "// ${swift5#"// swift5: "}"
    else
        check "$fixture" 5 "$expectation"
    fi
done
echo "compile fixtures: $((checked - failures)) of $checked checks passed"
[ "$failures" -eq 0 ]
