#!/usr/bin/env bash
# Builds the chat server and drives it with real WebSocket clients (Python `websockets`) over
# 127.0.0.1: rooms and ordering, connection churn, slow-client eviction with flat memory, SIGTERM.
#   Examples/ChatServer/test.sh [rooms|churn|slow|sigterm ...]
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'websockets>=14'
swift build --product ChatServer
python3 Tests/chat_test.py "$(swift build --show-bin-path)/ChatServer" "$@"
