#!/usr/bin/env bash
# Builds perfpeer (release) and runs the peer with its web UI: `perfpeer serve`, on port 5210
# (HTTP, /ws) and 5211 (data); the web UI is built first (scripts/build-web.sh) and embedded.
# Extra arguments go to `perfpeer serve`, e.g. --open or --max-tests 4.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build-web.sh
cargo build --release --locked -p perfpeer
exec ./target/release/perfpeer serve "$@"
