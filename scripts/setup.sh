#!/usr/bin/env bash
# Installs what perfpeer's build and tests need on Debian 12 beyond rustup/cargo: iproute2 (ip,
# tc) for the network-namespace tests, the stock tools used for interop and benchmarks (and curl
# for scripts/fetch-netperf.sh, which fetches stock netperf into the cache), flent, the wasm
# toolchain for the web UI, headless Chromium for its browser test, qemu for the DCCP test, and
# Prometheus (with promtool) for the /metrics tests.
# With --dut, also the cross toolchains of scripts/build-dut.sh; with --windows, those of
# scripts/build-windows.sh; with --macos, what scripts/check-macos.sh needs.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v iperf >/dev/null 2>&1 || need+=(iperf)
# The latency-under-load test's references: iputils ping and irtt (flent's round-trip tester).
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v irtt >/dev/null 2>&1 || need+=(irtt)
# flent (Debian main) runs its RRUL and TCP upload tests against `perfpeer netserver` with the
# stock netperf that scripts/fetch-netperf.sh fetches with curl (netperf is in Debian's non-free).
command -v flent >/dev/null 2>&1 || need+=(flent)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
# The web UI (scripts/build-web.sh): rustup's wasm32 target if installed, else Debian's
# rustc-web building std from source, linked by lld-22's wasm-ld.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    [ -x /usr/bin/rustc ] || need+=(rustc-web)
    [ -x /usr/bin/cargo ] || need+=(cargo-web)
    [ -d /usr/lib/rustlib/src/rust/library ] || need+=(rust-web-src)
    [ -x /usr/bin/wasm-ld-22 ] || need+=(lld-22)
fi
# xz: the UI's embedded files packed as LZMA (scripts/build-web.sh).
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
# The DCCP test boots Debian's own kernel (fetched at test time with apt-get download) under
# qemu with software emulation, in a busybox initramfs packed with cpio.
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v cpio >/dev/null 2>&1 || need+=(cpio)
# The -J compatibility test reads a result with the Wi-Fi link through jq and through the PyPI
# iperf3 parser (its sdist fetched with pip download into target/, nothing installed).
command -v jq >/dev/null 2>&1 || need+=(jq)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# The lab test checks docs/lab's systemd units with systemd-analyze verify.
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
# The /metrics tests: Debian's Prometheus (a real server scraping two peers) and its promtool
# (`promtool check metrics` on a scrape).
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# The browser test: Debian's headless Chromium and its WebDriver.
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
# The lab store test (tests/tests/lab_store.rs): its own PostgreSQL 15 cluster, made with
# Debian's initdb and pg_ctl in a temporary directory (no server is started by the package
# beyond Debian's own cluster, which the test does not use).
[ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql-15)
# Its TLS case makes a lab CA and the server's certificate with the openssl command.
command -v openssl >/dev/null 2>&1 || need+=(openssl)

# `--dut` (scripts/build-dut.sh and the DUT tests): xz (the tests check the size budget), the
# cross compilers (which build musl from
# Debian's source, fetched with curl, built with make), Debian's rustc-web to build std for those
# targets, and qemu-user to run the results.
# `--windows` (scripts/build-windows.sh and the Windows tests): the mingw-w64 cross compiler and
# wine to run the .exe. `--macos` (scripts/check-macos.sh): nothing beyond Debian's rustc.
case "${1:-}" in
--dut) cross=(gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-mipsel-linux-gnu make curl
    gcc-mips-linux-gnu qemu-user-static xz-utils) ;;
--windows) cross=(gcc-mingw-w64-x86-64 wine64) ;;
--macos) cross=() ;;
*) cross=(none) ;;
esac
if [ "${cross[*]}" != none ]; then
    # Debian's rustc-web and the std sources, to build (or check) std for the target.
    [ -x /usr/bin/rustc ] || need+=(rustc-web)
    [ -x /usr/bin/cargo ] || need+=(cargo-web)
    [ -d /usr/lib/rustlib/src/rust/library ] || need+=(rust-web-src)
    for pkg in "${cross[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
    done
fi

if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # Debian starts the Prometheus it installs, listening on every address: the tests start
    # their own on loopback, so the service is stopped and left disabled.
    if [[ " ${need[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
        $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
fi

# The lint step of scripts/test.sh: clippy comes with rustup's default profile; a minimal
# profile lacks it.
if ! cargo clippy --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        echo "setup: adding the clippy component"
        rustup component add clippy
    else
        echo "setup: cargo clippy is missing and rustup is not there to add it" >&2
        exit 1
    fi
fi
