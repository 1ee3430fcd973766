#!/usr/bin/env bash
# Builds the chat server and drives it with real WebSocket clients (Python `websockets`) over
# 127.0.0.1: rooms and ordering, connection churn, slow-client eviction with flat memory, SIGTERM.
#   Examples/ChatServer/test.sh [rooms|churn|slow|sigterm ...]
# CHAT_CONFIGURATION=release tests the release build a server ships (debug by default).
# CHAT_SCRATCH_PATH builds in another package's build folder (CI passes the one that already holds
# SwiftNIO and PostgresNIO, so the server is not compiled from scratch a second time). SwiftPM does
# not notice there that the root package changed, so the folder's build plan is removed first.
# CHAT_SERVER names a ChatServer binary built already (CI's release step builds it with every other
# product): it is tested as it is, with no build here.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'websockets>=14'
if [ -n "${CHAT_SERVER:-}" ]; then
    exec python3 Tests/chat_test.py "$CHAT_SERVER" "$@"
fi
configuration=${CHAT_CONFIGURATION:-debug}
scratch=()
if [ -n "${CHAT_SCRATCH_PATH:-}" ]; then
    scratch=(--scratch-path "$CHAT_SCRATCH_PATH")
    rm -f "$CHAT_SCRATCH_PATH/$configuration.yaml"
fi
swift build -c "$configuration" --product ChatServer "${scratch[@]}"
python3 Tests/chat_test.py "$(swift build -c "$configuration" --show-bin-path "${scratch[@]}")/ChatServer" "$@"
