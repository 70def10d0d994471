#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, codec tests, and the end-to-end tests that start
# real perfpeer peers on loopback and in network namespaces (those need root, as CI has).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo build --workspace --all-targets --locked
cargo test --workspace --locked "$@"
