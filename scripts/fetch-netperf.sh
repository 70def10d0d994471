#!/usr/bin/env bash
# Fetches stock netperf 2.7.0 (netperf and netserver) for the netperf interop tests and flent's:
# the version Debian, OpenWrt and most distributions ship. It is Debian's own build,
# netperf_2.7.0-0.1_amd64.deb from the non-free archive of deb.debian.org (the mirror
# scripts/build-dut.sh takes musl's source from), checked against a pinned sha256 and unpacked
# with dpkg-deb into ~/.cache/perfpeer/netperf-2.7.0 ($XDG_CACHE_HOME respected): never
# installed system-wide, fetched once and kept.
#   scripts/fetch-netperf.sh      prints the directory that holds netperf and netserver
# Needs curl (scripts/setup.sh installs it) and dpkg-deb; the package is built for x86_64.
set -euo pipefail

version=2.7.0
deb=netperf_$version-0.1_amd64.deb
sha256=c20d6afd858945a6e7b35b560d6764192fe35fa0a00e7d78b7bb0ac62df761b2
url=http://deb.debian.org/debian/pool/non-free/n/netperf/$deb
root=${XDG_CACHE_HOME:-$HOME/.cache}/perfpeer/netperf-$version
# The package's usr/bin holds netperf and netserver and nothing else.
bin=$root/usr/bin

# Whether the cache holds that package, unpacked whole, and its netperf runs here.
ready() {
    [ "$(cat "$root/complete" 2>/dev/null)" = "$sha256" ] &&
        "$bin/netperf" -V 2>/dev/null | grep -qx "Netperf version $version" &&
        [ -x "$bin/netserver" ]
}

if ! ready; then
    if [ "$(uname -m)" != x86_64 ]; then
        echo "fetch-netperf: $deb is built for x86_64; this machine is $(uname -m)" >&2
        exit 1
    fi
    for tool in curl dpkg-deb sha256sum; do
        command -v "$tool" >/dev/null 2>&1 || {
            echo "fetch-netperf: $tool is missing (scripts/setup.sh installs curl)" >&2
            exit 1
        }
    done
    echo "fetch-netperf: fetching netperf $version (once; kept in $root)" >&2
    parent=$(dirname "$root")
    mkdir -p "$parent"
    # Unpacked beside the cache's place and moved there whole, so an interrupted run leaves
    # nothing that looks complete.
    work=$(mktemp -d "$parent/netperf-$version.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    curl -sSfL -o "$work/$deb" "$url"
    echo "$sha256  $work/$deb" | sha256sum -c --status || {
        echo "fetch-netperf: $url does not have the pinned sha256 $sha256" >&2
        exit 1
    }
    dpkg-deb -x "$work/$deb" "$work/unpacked"
    echo "$sha256" >"$work/unpacked/complete"
    rm -rf "$root"
    mv "$work/unpacked" "$root"
fi
ready || {
    echo "fetch-netperf: $bin/netperf does not run as netperf $version" >&2
    exit 1
}
echo "$bin"
