#!/usr/bin/env bash
# Builds the browser front-end (crate perfpeer-web) to wasm32 and assembles web/dist/, which the
# perfpeer binary embeds at build time (native-peer/build.rs):
#   web/dist/index.html                       (no-cache; refers to the versioned directory)
#   web/dist/assets/<hash>/{perfpeer_web.js, perfpeer_web_bg.wasm, style.css} (+ .lzma of each)
# Compiler: rustup's wasm32 target when installed, else Debian's rustc-web building std from
# source (-Zbuild-std; scripts/setup.sh installs it). wasm-bindgen-cli is installed at exactly
# the version of the wasm-bindgen crate in Cargo.lock. Leaves web/dist untouched when nothing
# changed, so the native build is not redone.
#   scripts/build-web.sh          the UI of PC builds, into web/dist
#   scripts/build-web.sh --dut    the UI DUT builds embed, into web/dist-dut: without the Plans
#                                 screen (a DUT build runs no plans; docs/dut.md)
set -euo pipefail
cd "$(dirname "$0")/.."

target=wasm32-unknown-unknown
out=target/web
dist=web/dist
features=()
case "${1:-}" in
    "") ;;
    --dut)
        dist=web/dist-dut
        features=(--no-default-features)
        ;;
    *)
        echo "usage: scripts/build-web.sh [--dut]" >&2
        exit 2
        ;;
esac
# Small rather than fast: the page moves a few messages a second.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=z
export CARGO_PROFILE_RELEASE_LTO=true
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
export CARGO_PROFILE_RELEASE_PANIC=abort
# Keep the target_features section wasm-bindgen reads; it drops debug info itself.
export CARGO_PROFILE_RELEASE_STRIP=debuginfo

if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "build-web: rustup's $target target" >&2
    CARGO_TARGET_DIR=$out cargo build --release --locked --target "$target" -p perfpeer-web \
        "${features[@]}"
elif [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] && [ -d /usr/lib/rustlib/src/rust/library ]; then
    echo "build-web: Debian rustc-web with -Zbuild-std (first build takes minutes)" >&2
    # Debian's rustc has no rust-lld of its own: link with lld-22's wasm-ld.
    if ! command -v rust-lld >/dev/null 2>&1 && [ -x /usr/bin/wasm-ld-22 ]; then
        export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/bin/wasm-ld-22
    fi
    # Panic messages without file:line, derived Debug printing only the type's name: the page
    # shows neither, and the wasm every phone downloads (and every DUT build embeds) is smaller.
    export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-Z location-detail=none -Z fmt-debug=shallow"
    RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$out \
        /usr/bin/cargo build --release --locked --target "$target" \
        -Zbuild-std=std,panic_abort -p perfpeer-web "${features[@]}"
else
    echo "build-web: no wasm32 compiler. Run scripts/setup.sh (installs Debian's rustc-web," \
        "cargo-web, rust-web-src, lld-22) or 'rustup target add $target'." >&2
    exit 1
fi

# wasm-bindgen-cli must match the crate exactly.
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
[ -n "$want" ] || { echo "build-web: wasm-bindgen not found in Cargo.lock" >&2; exit 1; }
bindgen=$(command -v wasm-bindgen || true)
[ -n "$bindgen" ] || bindgen="${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen"
if [ ! -x "$bindgen" ] || [ "$("$bindgen" --version | awk '{print $2}')" != "$want" ]; then
    echo "build-web: installing wasm-bindgen-cli $want" >&2
    # Not --locked: one of its locked dependencies is not served by the registry mirror here.
    cargo install -q wasm-bindgen-cli --version "$want" --force
    bindgen="${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen"
fi

stage=$out/bindgen
rm -rf "$stage"
"$bindgen" --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir "$stage" \
    "$out/$target/release/perfpeer_web.wasm"
# The shell without its comments and indentation: every DUT build carries it inside its xz
# budget (1.4 KB of LZMA for the two), and every phone downloads it. Nothing in them depends on
# leading whitespace (their <pre> elements are empty until the page fills them).
minify_css() { perl -0777 -pe 's{/\*.*?\*/}{}gs; s/^[ \t]+//mg; s/\n\s*\n/\n/g; s/^\n//' "$1"; }
page() {
    perl -0777 -pe 's{<!--.*?-->}{}gs; s/^[ \t]+//mg; s/\n\s*\n/\n/g' web/static/index.html \
        | sed "s|ASSET_DIR|assets/$1|g"
}
minify_css web/static/style.css >"$stage/style.css"
cp web/static/boot.js "$stage/"

hash=$(cat "$stage/perfpeer_web.js" "$stage/perfpeer_web_bg.wasm" "$stage/style.css" "$stage/boot.js" \
    | sha256sum | cut -c1-12)
if [ -f "$dist/assets/$hash/perfpeer_web_bg.wasm.lzma" ] && [ -f "$dist/index.html.lzma" ] \
    && grep -q "assets/$hash/" "$dist/index.html" \
    && cmp -s <(page "$hash") "$dist/index.html"; then
    echo "build-web: $dist is up to date (assets/$hash)" >&2
    exit 0
fi

new=$dist.new
rm -rf "$new"
mkdir -p "$new/assets/$hash"
cp "$stage/perfpeer_web.js" "$stage/perfpeer_web_bg.wasm" "$stage/style.css" "$stage/boot.js" "$new/assets/$hash/"
page "$hash" >"$new/index.html"
# Each file's LZMA-alone twin is what the binary embeds (native-peer/build.rs): xz packs a
# router's firmware, and an LZMA stream inside it stays 18 % smaller than a gzip one (the wasm:
# 239 KB, not zopfli's 289 KB); the peer unpacks a file the first time it is asked for and
# gzips it for browsers then (native-peer/src/server/assets.rs).
for f in "$new/index.html" "$new/assets/$hash"/*; do
    xz --format=lzma -9e -c "$f" >"$f.lzma"
done
rm -rf "$dist"
mv "$new" "$dist"

size() { stat -c %s "$1"; }
a="$dist/assets/$hash"
gz=$(($(size "$a/perfpeer_web_bg.wasm.lzma") + $(size "$a/perfpeer_web.js.lzma")))
raw=$(($(size "$a/perfpeer_web_bg.wasm") + $(size "$a/perfpeer_web.js")))
echo "build-web: $dist/assets/$hash: wasm + JS $((raw / 1024)) KiB, LZMA $((gz / 1024)) KiB" >&2
