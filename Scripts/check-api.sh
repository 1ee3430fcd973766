#!/usr/bin/env bash
# The public API of every product, listed from its symbol graph, compared with API/<Module>.txt.
#
#   Scripts/check-api.sh           fails, printing the difference, when a surface changed
#   Scripts/check-api.sh --update  rewrites the listings: commit them with the change, so that
#                                  every change to the surface shows in review
#
# Reads the modules each package's debug build left in .build/debug/Modules (`.ci/run` builds them
# before this step), so it compiles nothing. What a listing holds: Scripts/api-listing.py.
# Unconditionally unavailable overloads are not in symbol graphs; their messages are checked word
# for word by Scripts/check-compile-failures.sh instead.
set -euo pipefail
cd "$(dirname "$0")/.."

update=false
[[ "${1:-}" == "--update" ]] && update=true

target=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# package directory, then the modules it vends
products=(
    ". AsyncMail AsyncMailFoundation AsyncMailTesting"
    "ServiceLifecycle AsyncMailServiceLifecycle"
    "Observability AsyncMailObservability"
    "Relays/Postgres AsyncMailPostgres AsyncMailRelay"
    "Relays/SQLite AsyncMailSQLite"
)

for entry in "${products[@]}"; do
    read -r package modules <<<"$entry"
    build="$package/.build/debug"
    # C targets (swift-nio's, for one) are found through the module maps their build wrote.
    includes=(-I "$build/Modules")
    # (Not one an older build generated for a root C target that now has a module map of its own,
    # under Sources, added below, nor the host copy, NAME-tool.build, of a module that a package
    # plugin's tool uses, which Scripts/build-packages.sh leaves in the PostgreSQL relay's folder:
    # two maps of one module do not load.)
    while IFS= read -r map; do
        c_target=$(basename "$(dirname "$map")" .build)
        [[ -e "Sources/$c_target/include/module.modulemap" ]] || includes+=(-I "$(dirname "$map")")
    done < <(find "$build/" -maxdepth 2 -name module.modulemap -not -path '*-tool.build/*' 2>/dev/null)
    while IFS= read -r map; do includes+=(-I "$(dirname "$map")"); done \
        < <(find "$package/.build/checkouts" -path '*/include/module.modulemap' 2>/dev/null)
    # The root package's own C targets (AsyncMail's inlinable locks use CAsyncMail), for every package.
    while IFS= read -r map; do includes+=(-I "$(dirname "$map")"); done \
        < <(find Sources -path '*/include/module.modulemap' 2>/dev/null)
    for module in $modules; do
        if [[ ! -e "$build/Modules/$module.swiftmodule" ]]; then
            echo "check-api: $module is not built: run swift build --package-path $package first" >&2
            exit 1
        fi
        mkdir -p "$work/$module"
        swift symbolgraph-extract -module-name "$module" -target "$target" "${includes[@]}" \
            -minimum-access-level public -skip-synthesized-members -output-dir "$work/$module" >/dev/null
        python3 Scripts/api-listing.py "$work/$module" "$module" >"$work/$module.txt"
        if $update; then
            cp "$work/$module.txt" "API/$module.txt"
        elif ! diff -u "API/$module.txt" "$work/$module.txt"; then
            echo "check-api: the public API of $module changed; if on purpose, run Scripts/check-api.sh --update, commit API/$module.txt and add a CHANGELOG line" >&2
            status=1
        fi
    done
done
exit $status
