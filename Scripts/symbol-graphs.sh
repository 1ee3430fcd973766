#!/usr/bin/env bash
# Writes the symbol graphs of a module that a package's debug build made, without compiling:
# swift symbolgraph-extract reads SCRATCH/debug/Modules. Used by check-api.sh and build-docs.sh.
#
#   Scripts/symbol-graphs.sh SCRATCH MODULE OUTPUT [FLAG ...]
#
# SCRATCH is the build folder whose debug build holds MODULE (a package's own is PACKAGE/.build; a
# nested package's build holds the modules of the packages it depends on too); FLAGs go to
# symbolgraph-extract as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 SCRATCH MODULE OUTPUT [FLAG ...]" >&2; exit 2; }
scratch=$1
module=$2
output=$3
shift 3

build="$scratch/debug"
if [[ ! -e "$build/Modules/$module.swiftmodule" ]]; then
    echo "symbol-graphs: $module is not built in $build: build it there first" >&2
    exit 1
fi
target=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')
# C targets (swift-nio's, for one) are found through the module maps their build wrote.
includes=(-I "$build/Modules")
# (Not one an older build generated for a root C target that now has a module map of its own,
# under Sources, added below, nor the host copy, NAME-tool.build, of a module that a package
# plugin's tool uses, which Scripts/build-packages.sh leaves in the relays' debug folder:
# two maps of one module do not load.)
while IFS= read -r map; do
    c_target=$(basename "$(dirname "$map")" .build)
    [[ -e "Sources/$c_target/include/module.modulemap" ]] || includes+=(-I "$(dirname "$map")")
done < <(find "$build/" -maxdepth 2 -name module.modulemap -not -path '*-tool.build/*' 2>/dev/null)
while IFS= read -r map; do includes+=(-I "$(dirname "$map")"); done \
    < <(find "$scratch/checkouts" -path '*/include/module.modulemap' 2>/dev/null)
# The root package's own C targets (AsyncMail's inlinable locks use CAsyncMail), for every package.
while IFS= read -r map; do includes+=(-I "$(dirname "$map")"); done \
    < <(find Sources -path '*/include/module.modulemap' 2>/dev/null)
mkdir -p "$output"
swift symbolgraph-extract -module-name "$module" -target "$target" "${includes[@]}" \
    -minimum-access-level public -output-dir "$output" "$@" >/dev/null
