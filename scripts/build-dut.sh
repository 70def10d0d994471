#!/usr/bin/env bash
# Builds static perfpeer binaries for devices under test (routers, boards), each one file with
# the web UI embedded, into dist/ as perfpeer-<version>-<target> plus dist/SHA256SUMS:
#   scripts/build-dut.sh [TARGET...]     (default: all five)
# TARGET is a short name or its Rust target:
#   x86_64   x86_64-unknown-linux-musl       PCs, x86 routers (APU, N100 boxes)
#   aarch64  aarch64-unknown-linux-musl      MediaTek Filogic, Qualcomm IPQ807x, Raspberry Pi 3-5
#   armv7    armv7-unknown-linux-musleabihf  IPQ40xx, Cortex-A7/A9 boards (hard float)
#   mipsel   mipsel-unknown-linux-musl       MediaTek MT7621 (32-bit MIPS, little-endian)
#   mips     mips-unknown-linux-musl         Atheros/QCA ath79 (32-bit MIPS, big-endian)
# The MIPS builds use the soft-float ABI, as OpenWrt does: those SoCs have no FPU and OpenWrt's
# kernels do not emulate one, so a hard-float binary would die at its first float instruction.
# Route: Debian's rustc-web building std from rust-web-src (-Zbuild-std, as the wasm build does)
# and linking against musl, the C library OpenWrt uses: static musl is 600 KB smaller than
# static glibc, which kept the MIPS builds over the 4 MB budget. Debian packages musl for only
# some of these architectures (none for big-endian MIPS), so musl is built here from Debian's
# source of it (musl_1.2.3.orig.tar.gz from deb.debian.org, checked against the sha256 of
# Debian's .dsc) by Debian's gcc-<arch>-linux-gnu cross compilers, about 45 s per target, once:
# it is kept in the build cache. Name lookups do not need the C library's resolver (perfpeer
# reads /etc/hosts and asks the DNS servers of /etc/resolv.conf itself).
# Cargo profile `dut` (Cargo.toml): small rather than fast where it does not cost throughput;
# see docs/benchmarks.md for the sizes. Build cache: $PERFPEER_DUT_CACHE (default
# ~/.cache/perfpeer/dut-target), shared between clones so a rebuild recompiles only perfpeer.
# scripts/setup.sh --dut installs the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# One row per target: short name, Rust target, GNU triple of Debian's cross compiler, C flags.
table="x86_64 x86_64-unknown-linux-musl x86_64-linux-gnu -
aarch64 aarch64-unknown-linux-musl aarch64-linux-gnu -
armv7 armv7-unknown-linux-musleabihf arm-linux-gnueabihf -
mipsel mipsel-unknown-linux-musl mipsel-linux-gnu -msoft-float,-fno-PIC
mips mips-unknown-linux-musl mips-linux-gnu -msoft-float,-fno-PIC"
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
# The UI these builds embed: without the Plans screen, as they run no plans.
./scripts/build-web.sh --dut
export PERFPEER_WEB_DIST="$PWD/web/dist-dut"

# std built for size, without the backtrace symbolizer.
std_features=${PERFPEER_DUT_STD_FEATURES-optimize_for_size}
# A panic ends the process at once, without its message (procd and systemd restart the peer):
# the formatting of every panic site's message was the ~90 KB the Wi-Fi link needed to fit the
# budgets (docs/benchmarks.md, "The Wi-Fi link on the DUT"). PERFPEER_DUT_PANIC=abort builds
# with the messages, for chasing a crash on a bench (such a build is over the budgets).
panic_strategy=${PERFPEER_DUT_PANIC-immediate-abort}
version=$(awk -F'"' '/^\[workspace.package\]/ { p = 1 } p && /^version/ { print $2; exit }' Cargo.toml)
cache=${PERFPEER_DUT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perfpeer/dut-target}
mkdir -p dist "$cache"

# musl, from Debian's source package, built and installed once per target under the cache.
musl_version=1.2.3
musl_sha256=7d5b0b6062521e4627e099e4c9dc8248d32a30285e959b7eecaa780cf8cfd4a4
musl_url=http://deb.debian.org/debian/pool/main/m/musl/musl_$musl_version.orig.tar.gz
musl_root=$cache/musl-$musl_version
# build_musl SHORT GNU-TRIPLE CFLAGS: prints the path of a C compiler that compiles and links
# against that target's musl. A cached musl built for another triple or other flags is rebuilt.
build_musl() {
    local short=$1 gnu=$2 cflags=$3 prefix=$musl_root/$1 tarball src
    if [ "$(cat "$prefix/complete" 2>/dev/null)" != "$gnu $cflags" ]; then
        echo "build-dut: building musl $musl_version for $short (once; kept in $musl_root)" >&2
        mkdir -p "$musl_root"
        tarball=$musl_root/musl_$musl_version.orig.tar.gz
        if ! echo "$musl_sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
            curl -sSfL -o "$tarball.tmp" "$musl_url"
            echo "$musl_sha256  $tarball.tmp" | sha256sum -c --status || {
                echo "build-dut: $musl_url does not have the sha256 of Debian's musl_$musl_version-1.dsc" >&2
                exit 1
            }
            mv "$tarball.tmp" "$tarball"
        fi
        rm -rf "$prefix" "$prefix.src"
        mkdir -p "$prefix.src"
        tar -C "$prefix.src" -xzf "$tarball"
        src=$prefix.src/musl-$musl_version
        # The musl-gcc specs name the prefix, so musl is installed where it will stay;
        # `complete` is written last.
        (cd "$src" && ./configure --prefix="$prefix" --target="$gnu" CC="$gnu-gcc" \
            CFLAGS="$cflags" --disable-shared --enable-wrapper=gcc &&
            make -j"$(nproc)" && make install) >"$prefix.log" 2>&1 || {
            echo "build-dut: musl did not build for $short; see $prefix.log" >&2
            exit 1
        }
        cat >"$prefix/bin/cc" <<WRAPPER
#!/bin/sh
exec $gnu-gcc $cflags "\$@" -specs "$prefix/lib/musl-gcc.specs"
WRAPPER
        chmod +x "$prefix/bin/cc"
        rm -rf "$prefix.src"
        echo "$gnu $cflags" >"$prefix/complete"
    fi
    # Rust's musl targets link libunwind for the few unwinder calls std's backtrace capture
    # makes even when a panic aborts. These builds have no unwind tables
    # (force-unwind-tables=no, panic=abort), so there is no stack to walk: the walk ends at once
    # and a backtrace is empty, as it would be with a real unwinder and no tables. (ARM's EHABI
    # reads registers through _Unwind_VRS_Get.) Rebuilt whenever this text changes.
    cat >"$prefix/unwind.c.new" <<'UNWIND'
typedef int (*trace_fn)(void *context, void *arg);
int _Unwind_Backtrace(trace_fn trace, void *arg) { (void)trace; (void)arg; return 5; /* END_OF_STACK */ }
unsigned long _Unwind_GetIP(void *context) { (void)context; return 0; }
unsigned long _Unwind_GetCFA(void *context) { (void)context; return 0; }
void *_Unwind_FindEnclosingFunction(void *pc) { (void)pc; return 0; }
int _Unwind_VRS_Get(void *context, int class, unsigned reg, int repr, void *value)
{ (void)context; (void)class; (void)reg; (void)repr; (void)value; return 2; /* _UVRSR_FAILED */ }
UNWIND
    if ! cmp -s "$prefix/unwind.c.new" "$prefix/unwind.c" || [ ! -f "$prefix/lib/libunwind.a" ]; then
        # shellcheck disable=SC2086 # the flags are words
        "$gnu-gcc" $cflags -Os -c -o "$prefix/unwind.o" -x c "$prefix/unwind.c.new"
        rm -f "$prefix/lib/libunwind.a"
        "$gnu-ar" rc "$prefix/lib/libunwind.a" "$prefix/unwind.o"
        mv "$prefix/unwind.c.new" "$prefix/unwind.c"
    fi
    echo "$prefix/bin/cc"
}

for row in "${rows[@]}"; do
    read -r short triple gnu cflags <<<"$row"
    # The table's C flags column: comma-separated, `-` for none.
    cflags=${cflags//,/ }
    [ "$cflags" != - ] || cflags=""
    start=$(date +%s)
    cc=$(build_musl "$short" "$gnu" "$cflags")
    var=$(echo "$triple" | tr 'a-z-' 'A-Z_')
    export "CARGO_TARGET_${var}_LINKER=$cc"
    export "CC_${triple//-/_}=$cc"
    export "AR_${triple//-/_}=$gnu-ar"
    # Static; linked by gcc against the musl built above, not the copy rustup bundles; no
    # unwind tables (the profile aborts on panic, nothing unwinds). getrandom calls the kernel
    # (getrandom(2), Linux 3.17+) instead of opening /dev/urandom: a chroot or an early-boot
    # system may not have it.
    flags="-C target-feature=+crt-static -C link-self-contained=no -C force-unwind-tables=no"
    flags="$flags --cfg getrandom_backend=\"linux_getrandom\""
    # MIPS: position-dependent code (calls by jal, not through the GOT) is much smaller there,
    # and a static binary needs no PIC; SQLite and musl (C) are built the same way (-fno-PIC).
    # Its segments aligned to 4 KiB pages (OpenWrt's MIPS kernels use 4 KiB pages), not ld's
    # default 64 KiB, which pads the file by up to that much.
    case "$triple" in
    mips*) flags="$flags -C relocation-model=static -C link-arg=-Wl,-z,max-page-size=4096" ;;
    # x86_64: rustc would link a static PIE, which musl's gcc specs do not know (they ask for
    # the dynamic loader); a plain static executable like the other targets'.
    x86_64*) flags="$flags -C relocation-model=static" ;;
    esac
    # The C code (SQLite) without unwind tables either: nothing unwinds through it (panics
    # abort), and the tables were 70 KB of .eh_frame.
    export "CFLAGS_${triple//-/_}=-fno-asynchronous-unwind-tables -fno-unwind-tables"
    echo "build-dut: $short ($triple) with Debian's rustc-web and -Zbuild-std" >&2
    # Panics as chosen above (with PERFPEER_DUT_PANIC=abort, messages keep their text but not
    # the file:line they came from); derived Debug prints a type's name only (the DUT's
    # messages never show a struct's fields).
    export "CARGO_TARGET_${var}_RUSTFLAGS=$flags -Z location-detail=none -Z fmt-debug=shallow -Z unstable-options -C panic=$panic_strategy"
    # Without the default features: regression plans (`perfpeer plan`, `serve --plans`, its
    # TOML reader, the UI's Plans screen) run on the PC that drives a lab, not on the board.
    RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$cache \
        /usr/bin/cargo build --locked --profile dut --target "$triple" \
        -Zbuild-std=std,panic_abort -Zbuild-std-features="$std_features" -p perfpeer \
        --no-default-features
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
