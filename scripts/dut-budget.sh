#!/usr/bin/env bash
# Measures each DUT build in dist/ against the budgets of docs/dut.md and prints a Markdown
# table for docs/benchmarks.md: stripped size, xz -9 size, and the resident memory (VmHWM, the
# peak) of `perfpeer serve` idle for 3 s and while serving a 4-stream TCP test of 5 s from the
# native peer, each the median of 3 runs (every sample printed on stderr). x86_64 runs natively;
# the others run under qemu-user, whose own memory is in the figure (indicative only).
#   scripts/dut-budget.sh [TARGET...]      (default: every build in dist/)
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(awk -F'"' '/^\[workspace.package\]/ { p = 1 } p && /^version/ { print $2; exit }' Cargo.toml)
[ $# -gt 0 ] || set -- x86_64 aarch64 armv7 mipsel mips
# The native client drives the tests (its speed does not change the server's memory).
cargo build -q -p perfpeer
client=target/debug/perfpeer

qemu_of() {
    case "$1" in
    x86_64) echo "" ;; aarch64) echo qemu-aarch64-static ;; armv7) echo qemu-arm-static ;;
    mipsel) echo qemu-mipsel-static ;; mips) echo qemu-mips-static ;;
    esac
}

# peak RSS (kB) of a serve run: idle, or with a 4-stream test against it
peak_kb() {
    local bin=$1 qemu=$2 load=$3 dir port log pid
    dir=$(mktemp -d)
    log=$dir/serve.log
    port=$((20000 + RANDOM % 10000))
    # shellcheck disable=SC2086
    $qemu "$bin" serve --listen "127.0.0.1:$port" --data-port 0 --data-dir "$dir/data" --open \
        >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do grep -q "serving" "$log" 2>/dev/null && break; sleep 0.1; done
    if [ "$load" = idle ]; then
        sleep 3
    else
        "$client" test "127.0.0.1:$port" -P 4 -t 5 >/dev/null 2>&1 || echo "dut-budget: test failed" >&2
    fi
    local kb
    kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
    echo "$kb"
}

median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

echo "| target | stripped | xz -9 | RSS idle | RSS 4 streams | run |"
echo "|---|---|---|---|---|---|"
for t in "$@"; do
    bin=dist/perfpeer-$version-$t
    [ -f "$bin" ] || { echo "dut-budget: $bin not built (scripts/build-dut.sh $t)" >&2; continue; }
    size=$(stat -c %s "$bin")
    xzsize=$(xz -9 -c "$bin" | wc -c)
    qemu=$(qemu_of "$t")
    idle=() busy=()
    for _ in 1 2 3; do
        idle+=("$(peak_kb "$bin" "$qemu" idle)")
        busy+=("$(peak_kb "$bin" "$qemu" busy)")
    done
    echo "dut-budget: $t idle kB: ${idle[*]}; 4 streams kB: ${busy[*]}" >&2
    # MB as the budgets count them: 10^6 bytes.
    mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
    echo "| $t | $(mb "$size") ($size B) | $(mb "$xzsize") | $(mb $(($(median "${idle[@]}") * 1024))) |" \
        "$(mb $(($(median "${busy[@]}") * 1024))) | ${qemu:-native} |"
done
