#!/usr/bin/env bash
# The public API of every product, listed from its symbol graph, compared with API/<Module>.txt.
#
#   Scripts/check-api.sh           fails, printing the difference, when a surface changed
#   Scripts/check-api.sh --update  rewrites the listings: commit them with the change, so that
#                                  every change to the surface shows in review
#
# Reads the modules each package's debug build left in .build/debug/Modules (`.ci/run` builds them
# before this step), so it compiles nothing (Scripts/symbol-graphs.sh). What a listing holds:
# Scripts/api-listing.py.
# Unconditionally unavailable overloads are not in symbol graphs; their messages are checked word
# for word by Scripts/check-compile-failures.sh instead.
set -euo pipefail
cd "$(dirname "$0")/.."

update=false
[[ "${1:-}" == "--update" ]] && update=true

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
    for module in $modules; do
        Scripts/symbol-graphs.sh "$package" "$module" "$work/$module" -skip-synthesized-members
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
