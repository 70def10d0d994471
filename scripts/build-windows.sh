#!/usr/bin/env bash
# Builds the Windows PC-side peer, one .exe with the web UI embedded, into
# dist/perfpeer-<version>-windows-x86_64.exe (and its line in dist/SHA256SUMS):
#   scripts/build-windows.sh
# Route, from Debian packages only (scripts/setup.sh --windows): Debian's rustc-web building std
# from rust-web-src (-Zbuild-std, as the wasm and DUT builds do) for x86_64-win7-windows-gnu,
# linked by gcc-mingw-w64-x86-64. Why the win7 target and not x86_64-pc-windows-gnu: the latter's
# std imports bcryptprimitives.dll (ProcessPrng), which Debian's wine 8.0 lacks, so that build
# cannot be tested here; the win7 target's std takes its randomness from advapi32's
# SystemFunction036 and runs on Windows 7 through 11 alike. Cargo profile `release` (a PC is
# not short of flash). Build cache: $PERFPEER_WIN_CACHE (default ~/.cache/perfpeer/win-target).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh --windows
./scripts/build-web.sh

triple=x86_64-win7-windows-gnu
version=$(awk -F'"' '/^\[workspace.package\]/ { p = 1 } p && /^version/ { print $2; exit }' Cargo.toml)
cache=${PERFPEER_WIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perfpeer/win-target}
mkdir -p dist "$cache"

export CARGO_TARGET_X86_64_WIN7_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CC_x86_64_win7_windows_gnu=x86_64-w64-mingw32-gcc
export AR_x86_64_win7_windows_gnu=x86_64-w64-mingw32-ar
start=$(date +%s)
RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$cache \
    /usr/bin/cargo build --locked --release --target "$triple" -Zbuild-std -p perfpeer
out=dist/perfpeer-$version-windows-x86_64.exe
cp "$cache/$triple/release/perfpeer.exe" "$out.tmp"
mv "$out.tmp" "$out"
# Only DLLs every Windows has: a DLL of mingw's would make the .exe fail to start on a PC.
dlls=$(x86_64-w64-mingw32-objdump -p "$out" | awk '/DLL Name:/ { print tolower($3) }' | sort -u)
for dll in $dlls; do
    case "$dll" in
    kernel32.dll | ntdll.dll | ws2_32.dll | advapi32.dll | msvcrt.dll | iphlpapi.dll | \
        userenv.dll | bcrypt.dll | shell32.dll | ole32.dll | api-ms-win-*) ;;
    *)
        echo "build-windows: $out needs $dll, which Windows does not ship" >&2
        exit 1
        ;;
    esac
done
echo "build-windows: $out $(stat -c %s "$out") bytes, $(($(date +%s) - start)) s" >&2

# dist/SHA256SUMS keeps the other builds' lines.
sums=dist/SHA256SUMS
touch "$sums"
{
    grep -v " perfpeer-$version-windows-x86_64.exe\$" "$sums" || true
    (cd dist && sha256sum "perfpeer-$version-windows-x86_64.exe")
} | sort -k2 >"$sums.tmp"
mv "$sums.tmp" "$sums"
echo "build-windows: $sums" >&2
