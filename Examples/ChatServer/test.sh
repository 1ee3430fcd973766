#!/usr/bin/env bash
# Builds the chat server and drives it with real WebSocket clients (Python `websockets`) over
# 127.0.0.1: rooms and ordering, connection churn, slow-client eviction with flat memory, SIGTERM.
#   Examples/ChatServer/test.sh [rooms|churn|slow|sigterm ...]
# CHAT_SCRATCH_PATH builds in another package's build folder (CI passes the relay's, which already
# holds SwiftNIO and PostgresNIO, so the server is not compiled from scratch a second time).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'websockets>=14'
scratch=(${CHAT_SCRATCH_PATH:+--scratch-path "$CHAT_SCRATCH_PATH"})
swift build --product ChatServer "${scratch[@]}"
python3 Tests/chat_test.py "$(swift build --show-bin-path "${scratch[@]}")/ChatServer" "$@"
