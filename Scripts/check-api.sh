#!/usr/bin/env bash
# The public API of every product, listed from its symbol graph, compared with API/<Module>.txt.
#
#   Scripts/check-api.sh           fails, printing the difference, when a surface changed
#   Scripts/check-api.sh --update  rewrites the listings: commit them with the change, so that
#                                  every change to the surface shows in review
#
# Reads the modules each package's debug build left in its build folder's debug/Modules (`.ci/run`
# builds them before this step), so it compiles nothing (Scripts/symbol-graphs.sh). What a listing
# holds: Scripts/api-listing.py.
# Unconditionally unavailable overloads are not in symbol graphs; their messages are checked word
# for word by Scripts/check-compile-failures.sh instead.
set -euo pipefail
cd "$(dirname "$0")/.."

update=false
[[ "${1:-}" == "--update" ]] && update=true

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# The build folders that may hold the modules (comma-separated), then the modules. The PostgreSQL
# relay is built in the embedded relay's folder by .ci/run (it says why), and in its own by
# `swift test --package-path Relays/Postgres`: the folder with the newer module is read.
products=(
    ".build AsyncMail AsyncMailFoundation AsyncMailTesting"
    "ServiceLifecycle/.build AsyncMailServiceLifecycle"
    "Observability/.build AsyncMailObservability"
    "Relays/Postgres/.build,Relays/SQLite/.build AsyncMailPostgres AsyncMailRelay"
    "Relays/SQLite/.build AsyncMailSQLite"
)

# The folder of FOLDERS (comma-separated) whose debug build of MODULE is the newest (the first when none has it).
newest_build() {
    local folders=$1 module=$2 best= folder
    local -a candidates
    IFS=, read -ra candidates <<<"$folders"
    for folder in "${candidates[@]}"; do
        [[ -e "$folder/debug/Modules/$module.swiftmodule" ]] || continue
        if [[ -z "$best" || "$folder/debug/Modules/$module.swiftmodule" -nt "$best/debug/Modules/$module.swiftmodule" ]]; then
            best=$folder
        fi
    done
    echo "${best:-${candidates[0]}}"
}

for entry in "${products[@]}"; do
    read -r folders modules <<<"$entry"
    for module in $modules; do
        Scripts/symbol-graphs.sh "$(newest_build "$folders" "$module")" "$module" "$work/$module" -skip-synthesized-members
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
