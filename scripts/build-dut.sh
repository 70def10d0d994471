#!/usr/bin/env bash
# Builds static perfpeer binaries for devices under test (routers, boards), each one file with
# the web UI embedded, into dist/ as perfpeer-<version>-<target> plus dist/SHA256SUMS:
#   scripts/build-dut.sh [TARGET...]     (default: all five)
# TARGET is a short name or its Rust target:
#   x86_64   x86_64-unknown-linux-gnu        PCs, x86 routers (APU, N100 boxes)
#   aarch64  aarch64-unknown-linux-gnu       MediaTek Filogic, Qualcomm IPQ807x, Raspberry Pi 3-5
#   armv7    armv7-unknown-linux-gnueabihf   IPQ40xx, Cortex-A7/A9 boards (hard float)
#   mipsel   mipsel-unknown-linux-gnu        MediaTek MT7621 (32-bit MIPS, little-endian)
#   mips     mips-unknown-linux-gnu          Atheros/QCA ath79 (32-bit MIPS, big-endian)
# Route: Debian's rustc-web building std from rust-web-src (-Zbuild-std, as the wasm build does),
# linked by Debian's gcc-<arch>-linux-gnu cross compilers against their static glibc
# (+crt-static), so the binary needs no libc on the device; name lookups do not go through
# glibc's NSS (perfpeer reads /etc/hosts and asks the DNS servers of /etc/resolv.conf itself).
# Without Debian's compiler, rustup's std for a target is used if installed (larger). Cargo
# profile `dut` (Cargo.toml): small rather than fast where it does not cost throughput; see
# docs/benchmarks.md for the sizes. Build cache: $PERFPEER_DUT_CACHE (default
# ~/.cache/perfpeer/dut-target), shared between clones so a rebuild recompiles only perfpeer.
# scripts/setup.sh --dut installs the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# One row per target: short name, Rust target, cross compiler.
table="x86_64 x86_64-unknown-linux-gnu x86_64-linux-gnu-gcc
aarch64 aarch64-unknown-linux-gnu aarch64-linux-gnu-gcc
armv7 armv7-unknown-linux-gnueabihf arm-linux-gnueabihf-gcc
mipsel mipsel-unknown-linux-gnu mipsel-linux-gnu-gcc
mips mips-unknown-linux-gnu mips-linux-gnu-gcc"
[ $# -gt 0 ] || set -- $(echo "$table" | cut -d' ' -f1)

rows=()
for t in "$@"; do
    row=$(echo "$table" | awk -v t="$t" '$1 == t || $2 == t')
    [ -n "$row" ] || {
        echo "build-dut: unknown target '$t' (one of:" $(echo "$table" | cut -d' ' -f1) \
            "or its Rust target)" >&2
        exit 2
    }
    rows+=("$row")
done

./scripts/setup.sh --dut
./scripts/build-web.sh

# std built for size, without the backtrace symbolizer (a panic still prints its message).
std_features=${PERFPEER_DUT_STD_FEATURES-optimize_for_size}
version=$(awk -F'"' '/^\[workspace.package\]/ { p = 1 } p && /^version/ { print $2; exit }' Cargo.toml)
cache=${PERFPEER_DUT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perfpeer/dut-target}
mkdir -p dist "$cache"

for row in "${rows[@]}"; do
    read -r short triple cc <<<"$row"
    var=$(echo "$triple" | tr 'a-z-' 'A-Z_')
    export "CARGO_TARGET_${var}_LINKER=$cc"
    export "CC_${triple//-/_}=$cc"
    export "AR_${triple//-/_}=${cc%-gcc}-ar"
    # Static; no unwind tables (the profile aborts on panic, nothing unwinds). getrandom calls
    # the kernel (getrandom(2), Linux 3.17+) instead of looking up glibc's wrapper with dlsym,
    # which finds nothing in a static binary and falls back to /dev/urandom: a chroot or an
    # early-boot system may not have it.
    flags="-C target-feature=+crt-static -C force-unwind-tables=no"
    flags="$flags --cfg getrandom_backend=\"linux_getrandom\""
    # MIPS: position-dependent code (calls by jal, not through the GOT) is much smaller there,
    # and a static binary needs no PIC.
    # Its segments aligned to 4 KiB pages (OpenWrt's MIPS kernels use 4 KiB pages), not ld's
    # default 64 KiB, which pads the file by up to that much.
    case "$triple" in
    # SQLite (C, built by the cc crate) the same way: position-dependent, not PIC (-115 KB).
    mips*)
        flags="$flags -C relocation-model=static -C link-arg=-Wl,-z,max-page-size=4096"
        export "CFLAGS_${triple//-/_}=-fno-PIC"
        ;;
    esac
    start=$(date +%s)
    # Debian's compiler first: building std lets it be built for size like the rest; rustup's
    # prebuilt std (built for speed, with unwinding) only where Debian's is missing.
    if [ ! -x /usr/bin/rustc ] && rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
        echo "build-dut: $short ($triple) with rustup's std" >&2
        export "CARGO_TARGET_${var}_RUSTFLAGS=$flags"
        CARGO_TARGET_DIR=$cache cargo build --locked --profile dut --target "$triple" -p perfpeer
    else
        echo "build-dut: $short ($triple) with Debian's rustc-web and -Zbuild-std" >&2
        # Panic messages keep their text but not the file:line they came from.
        export "CARGO_TARGET_${var}_RUSTFLAGS=$flags -Z location-detail=none"
        RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$cache \
            /usr/bin/cargo build --locked --profile dut --target "$triple" \
            -Zbuild-std=std,panic_abort -Zbuild-std-features="$std_features" -p perfpeer
    fi
    out=dist/perfpeer-$version-$short
    cp "$cache/$triple/dut/perfpeer" "$out.tmp"
    mv "$out.tmp" "$out"
    # A static binary has no interpreter; refuse to ship one that would need a libc.
    if readelf -lW "$out" | grep -q 'Requesting program interpreter'; then
        echo "build-dut: $out is dynamically linked" >&2
        exit 1
    fi
    echo "build-dut: $out $(stat -c %s "$out") bytes, $(($(date +%s) - start)) s" >&2
done

(cd dist && sha256sum perfpeer-"$version"-* | grep -v '\.tmp$' >SHA256SUMS)
echo "build-dut: dist/SHA256SUMS" >&2
