#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, codec tests, and the end-to-end tests that start
# real perfpeer peers on loopback and in network namespaces (those need root, as CI has), and the
# web UI in headless Chromium (so the UI is built first), after clippy with warnings as errors,
# two static DUT builds under qemu-user (built here first, see scripts/build-dut.sh), the Windows
# .exe under wine (scripts/build-windows.sh), stock netperf 2.7.0 and flent against perfpeer's
# netperf peers (scripts/fetch-netperf.sh) and a compile check for macOS.
# Ends with one line totalling every test binary's results.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Stock netperf 2.7.0 (Debian's build, fetched once into the cache): the netperf and netserver
# interop tests run it and fail without it (PERFPEER_NETPERF, PERFPEER_NETSERVER); on PATH for
# flent, which runs `netperf`, and for the benchmark smoke's netperf column.
netperf_dir=$(./scripts/fetch-netperf.sh)
export PERFPEER_NETPERF=$netperf_dir/netperf PERFPEER_NETSERVER=$netperf_dir/netserver
export PATH=$netperf_dir:$PATH
./scripts/build-web.sh
cargo build --workspace --all-targets --locked
# Lints, the workspace's chosen set (Cargo.toml [workspace.lints]) included, as errors.
cargo clippy --workspace --all-targets --locked -- -D warnings
# And as the DUT builds and the UI they embed are compiled: without the default features.
cargo clippy -p perfpeer -p perfpeer-web --no-default-features --all-targets --locked -- -D warnings
# The benchmark runner once, in its 1-second smoke mode (every case, every stock tool on PATH),
# so its command lines and parsers cannot rot. Not a measurement: see docs/benchmarks.md.
cargo run --locked -q -p perfpeer-bench -- --smoke --perfpeer target/debug/perfpeer \
    --json target/bench-smoke.json >/dev/null
# Two of the static DUT builds (one 64-bit ARM, one 32-bit MIPS), for tests/tests/dut.rs to run
# under qemu-user; the other targets are built by scripts/build-dut.sh alone (release time).
export PERFPEER_DUT_TARGETS="aarch64 mipsel"
# shellcheck disable=SC2086
./scripts/build-dut.sh $PERFPEER_DUT_TARGETS
# The Windows .exe, for tests/tests/windows.rs and the browser test to run under wine; and the
# macOS check (one of the two Mac targets: they differ only in the CPU), which links nothing.
./scripts/build-windows.sh
export PERFPEER_WINDOWS=1
./scripts/check-macos.sh aarch64-apple-darwin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked "$@" 2>&1 | tee "$log" || status=$?
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i } }
     END { printf "total: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
