#!/usr/bin/env bash
# Installs what perfpeer's build and tests need on Debian 12 beyond rustup/cargo: iproute2 (ip,
# tc) for the network-namespace tests, and the stock tools used for interop and benchmarks.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v iperf >/dev/null 2>&1 || need+=(iperf)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)

if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
