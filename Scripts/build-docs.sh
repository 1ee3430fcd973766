#!/usr/bin/env bash
# Builds a product's DocC catalog offline, failing on any warning (broken links, undocumented topics).
#   Scripts/build-docs.sh                                   AsyncMail, into .build/docs/AsyncMail.doccarchive
#   Scripts/build-docs.sh ServiceLifecycle AsyncMailServiceLifecycle   a nested package's target
#   Scripts/build-docs.sh Relays/Wire AsyncMailRelay Relays/Postgres    a target built in another package
#   Scripts/build-docs.sh Relays/Postgres AsyncMailPostgres Relays/Postgres Relays/SQLite/.build
#                                                           ... in another build folder than its own
#
# The symbol graphs are read from the module the debug build made (Scripts/symbol-graphs.sh), in
# BUILT (the package itself unless named), in SCRATCH (BUILT/.build unless named), so nothing is
# compiled a second time with other flags: a plain `swift build` of the target comes first, which
# does nothing when the tests built it.
set -euo pipefail
cd "$(dirname "$0")/.."

package=${1:-.}
target=${2:-AsyncMail}
built=${3:-$package}
scratch=${4:-$built/.build}
output="$package/.build/docs/$target.doccarchive"
symbols="$package/.build/docs/$target-symbol-graphs"
rm -rf "$output" "$symbols"

# A folder that another package root built in last keeps that root's build plan, which may not know
# the target: the plan is made anew (Scripts/build-packages.sh says more); what is compiled is kept.
[ $# -lt 4 ] || rm -f "$scratch/debug.yaml"
swift build --package-path "$built" --scratch-path "$scratch" --target "$target"
# The modules the target re-exports (`@_exported import`) are documented as part of it, as the
# compiler's own symbol graphs have them: AsyncMailSQLite's docs link AsyncMailRelay's types.
reexported=$({ grep -rhoE --include='*.swift' '^@_exported import [A-Za-z_][A-Za-z_0-9]*' "$package/Sources/$target" ||
    true; } | awk '{ print $3 }' | sort -u | paste -sd, -)
flags=(-emit-extension-block-symbols)
[ -z "$reexported" ] || flags+=("-experimental-allowed-reexported-modules=$reexported")
Scripts/symbol-graphs.sh "$scratch" "$target" "$symbols" "${flags[@]}"
# Only the target's own graphs (its extensions of other modules' types included).
find "$symbols" -name '*.symbols.json' ! -name "$target.symbols.json" ! -name "$target@*.symbols.json" -delete

docc convert "$package/Sources/$target/$target.docc" \
    --additional-symbol-graph-dir "$symbols" \
    --fallback-display-name "$target" \
    --fallback-bundle-identifier "org.asyncmail.$target" \
    --output-path "$output" \
    --enable-experimental-overloaded-symbol-presentation \
    --warnings-as-errors
echo "documentation built: $output"
