#!/usr/bin/env bash
# Checks that perfpeer compiles for macOS (type-checks every crate, std included, for the
# target; nothing is linked, so no Apple SDK is needed):
#   scripts/check-macos.sh [TARGET...]   (default: aarch64-apple-darwin x86_64-apple-darwin)
# Route: Debian's rustc-web checking std from rust-web-src (-Zbuild-std). What this cannot cover
# without Xcode: SQLite's C source (compiled by rusqlite's build script with the SDK's clang on
# a Mac), so the build script is pointed at a system SQLite here (LIBSQLITE3_SYS_USE_PKG_CONFIG),
# which only changes what a link would use; the lab store's TLS (feature `postgres`: rustls on
# ring, whose build script compiles C and assembly for the target with the SDK's clang), so the
# check leaves that one feature out; and the link itself. A Mac user builds with rustup:
# see README, "PC side". Build cache: $PERFPEER_MAC_CACHE (default ~/.cache/perfpeer/mac-target).
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -gt 0 ] || set -- aarch64-apple-darwin x86_64-apple-darwin
./scripts/setup.sh --macos
./scripts/build-web.sh
cache=${PERFPEER_MAC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perfpeer/mac-target}
for triple in "$@"; do
    case "$triple" in
    *-apple-darwin) ;;
    *)
        echo "check-macos: '$triple' is not a macOS target" >&2
        exit 2
        ;;
    esac
    start=$(date +%s)
    LIBSQLITE3_SYS_USE_PKG_CONFIG=1 RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 \
        CARGO_TARGET_DIR=$cache /usr/bin/cargo check --locked --target "$triple" \
        -Zbuild-std=std,panic_abort -p perfpeer --no-default-features --features plans,console
    echo "check-macos: $triple compiles, $(($(date +%s) - start)) s" >&2
done
