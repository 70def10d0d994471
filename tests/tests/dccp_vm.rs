//! Real kernel DCCP: boots Debian 12's own kernel (6.1, DCCP as modules) under
//! `qemu-system-x86_64 -accel tcg` with a busybox initramfs and a static perfpeer, runs DCCP
//! tests over the guest's loopback (CCID 2 and 3, IPv4 and IPv6, reverse and parallel, a short
//! sweep, a constant-bitrate stream, CCID 4 and an over-size -l refused) and checks the numbers
//! the guest prints: data arrived and the figures agree, never exact byte counts or rates.

#[path = "vm_guest.rs"]
pub(crate) mod guest;

use std::time::Duration;

use serde_json::Value;

use guest::Run;

/// Whole-VM limit on the host (the guest's own watchdog powers off sooner).
const QEMU_LIMIT: Duration = Duration::from_secs(420);
/// The guest's watchdog, seconds.
const GUEST_WATCHDOG: u64 = 360;

/// (name, `perfpeer test` arguments after the program) run in the guest, in order.
const RUNS: &[(&str, &str)] = &[
    ("ccid2_v4", "127.0.0.1 --dccp --ccid 2 -t 3 -J"),
    ("ccid3_v6", "::1 --dccp --ccid 3 -t 3 -J"),
    ("ccid2_v6_reverse_p2", "::1 --dccp --ccid 2 -R -P 2 -t 3 -J"),
    (
        "ccid2_v4_bidir",
        "127.0.0.1 --dccp --ccid 2 --bidir -t 3 -J",
    ),
    (
        "ccid3_v4_rate",
        "127.0.0.1 --dccp --ccid 3 -b 4M -l 1000 -t 3 -J",
    ),
    ("ccid4", "127.0.0.1 --dccp --ccid 4 -t 1"),
    ("over_mps", "127.0.0.1 --dccp --ccid 2 -l 65507 -t 1 -J"),
    (
        "sweep",
        "::1 --dccp --ccid 2 --sweep-len 64,...,1024 -t 1 -J",
    ),
    ("cbr_json", "127.0.0.1 --dccp --ccid 3 --cbr mp3 -t 5 -J"),
    ("cbr_text", "::1 --dccp --ccid 3 --cbr 48k --len 160 -t 3"),
    ("ccid3_text", "127.0.0.1 --dccp --ccid 3 -t 2"),
];

fn init_script() -> String {
    let mut s = guest::init_prologue(GUEST_WATCHDOG);
    s += "for m in dccp dccp_ipv4 dccp_ipv6; do insmod /lib/dccp/$m.ko || echo \"PPVM insmod $m failed\"; done\n\
          echo \"PPVM boot $(uname -r)\"\n\
          /perfpeer serve --listen [::]:5210 --data-port 5211 --open --data-dir /tmp/pp >/tmp/serve.out 2>/tmp/serve.err &\n\
          sleep 2\n\
          t() { name=$1; shift; r $name 90 /perfpeer test \"$@\"; }\n";
    for (name, args) in RUNS {
        s += &format!("t {name} {args}\n");
    }
    s += "grep -v INFO /tmp/serve.err | sed 's/^/PPVM~ /'\necho 'PPVM done'\npoweroff -f\n";
    s
}

fn f(v: &Value, p: &str) -> f64 {
    v.pointer(p)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {p} in {v}"))
}

/// A throughput test: data arrived, sender and receiver agree, each end reports the CCID asked
/// for and a maximum packet size; CCID 3 senders report TFRC figures.
fn check_transfer(name: &str, v: &Value, ccid: u64, streams: usize) -> String {
    assert_eq!(v["perfpeer"]["status"], "complete", "{name}: {v}");
    let (sent, got) = (f(v, "/end/sum_sent/bytes"), f(v, "/end/sum_received/bytes"));
    assert!(
        got > 0.0 && got <= sent,
        "{name}: sent {sent}, received {got}"
    );
    let (secs, bps) = (
        f(v, "/end/sum_received/seconds"),
        f(v, "/end/sum_received/bits_per_second"),
    );
    assert!(
        (got * 8.0 / secs - bps).abs() <= bps * 0.01 + 1.0,
        "{name}: rate disagrees with bytes/time"
    );
    let (lost, packets) = (f(v, "/end/sum/lost_packets"), f(v, "/end/sum/packets"));
    assert!(
        lost <= packets && packets > 0.0,
        "{name}: lost {lost} of {packets}"
    );
    let dccp = v["perfpeer"]["dccp"]["streams"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no perfpeer.dccp: {v}"));
    assert_eq!(
        dccp.len(),
        2 * streams,
        "{name}: one entry per stream and end: {dccp:?}"
    );
    let mut mps = 0.0;
    for s in dccp {
        assert_eq!(s["tx_ccid"].as_u64(), Some(ccid), "{name}: {s}");
        assert_eq!(s["rx_ccid"].as_u64(), Some(ccid), "{name}: {s}");
        let offered: Vec<u64> = s["available_ccids"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect();
        assert!(
            offered.contains(&2) && offered.contains(&3),
            "{name}: the 6.1 kernel offers CCID 2 and 3: {s}"
        );
        mps = f(s, "/cur_mps");
        assert!(mps > 0.0, "{name}: {s}");
    }
    if ccid == 3 {
        assert!(
            dccp.iter().any(|s| s.get("tfrc_tx").is_some()),
            "{name}: no TFRC sender figures: {dccp:?}"
        );
    }
    format!(
        "{name}: {:.1} Mbit/s received, {:.0} packets/s, lost {lost}/{packets}, MPS {mps}",
        bps / 1e6,
        (packets - lost) / secs
    )
}

/// Builds and boots the guest; returns its serial console and how long it ran.
fn run_guest() -> (String, Duration) {
    let kernel = guest::kernel();
    let builds = guest::static_builds();
    let mut image = guest::Initramfs::new("dccp");
    for m in ["dccp.ko", "dccp_ipv4.ko", "dccp_ipv6.ko"] {
        image.add(
            &kernel.modules.join("net/dccp").join(m),
            &format!("lib/dccp/{m}"),
        );
    }
    image.add(&builds.perfpeer, "perfpeer");
    let initrd = image.build(&init_script());
    let (console, took) = guest::boot(&kernel.vmlinuz, &initrd, QEMU_LIMIT);
    // Kept for a look after the run (the last run's console is also target/dccp-vm/console.log).
    let _ = std::fs::write(guest::cache().join("console.log"), &console);
    let _ = std::fs::remove_dir_all(guest::scratch("dccp"));
    (console, took)
}

#[test]
fn dccp_in_a_debian_12_guest() {
    if !guest::host_ready() {
        return;
    }
    let (console, took) = run_guest();
    let dump = || guest::markers(&console);
    assert!(
        console.contains("PPVM boot 6."),
        "the guest did not boot:\n{console}"
    );
    assert!(
        !console.contains("insmod"),
        "a DCCP module did not load:\n{}",
        dump()
    );
    assert!(
        console.contains("PPVM done"),
        "the guest did not finish (watchdog?):\n{}",
        dump()
    );
    let runs = guest::parse(&console);
    let run = |name: &str| {
        runs.get(name)
            .unwrap_or_else(|| panic!("no run {name}:\n{}", dump()))
    };
    let mut summary = vec![format!(
        "guest ran {} tests in {:.0} s (boot included)",
        runs.len(),
        took.as_secs_f64()
    )];
    for (name, ccid, streams) in [
        ("ccid2_v4", 2, 1),
        ("ccid3_v6", 3, 1),
        ("ccid2_v6_reverse_p2", 2, 2),
        ("ccid2_v4_bidir", 2, 2),
        ("ccid3_v4_rate", 3, 1),
    ] {
        let r = run(name);
        assert_eq!(r.rc, 0, "{name}: {}{}", r.out, r.err);
        summary.push(check_transfer(name, &r.json(), ccid, streams));
    }
    let v6 = run("ccid3_v6").json();
    assert!(
        v6["start"]["connected"][0]["local_host"]
            .as_str()
            .unwrap_or_default()
            .contains(':'),
        "IPv6: {v6}"
    );
    let rate = run("ccid3_v4_rate").json();
    assert!(
        f(&rate, "/end/sum_sent/bits_per_second") <= 4e6 * 1.1,
        "paced at -b 4M: {rate}"
    );
    summary.extend(check_refusals(run("ccid4"), run("over_mps")));
    summary.extend(check_sweep(&run("sweep").json()));
    summary.push(check_cbr(&run("cbr_json").json()));
    summary.push(check_text(run("cbr_text"), run("ccid3_text")));
    eprintln!("{}", summary.join("\n"));
}

/// CCID 4 is refused listing what the kernel offers; `-l` over the MPS names the MPS.
fn check_refusals(c4: &Run, over: &Run) -> Vec<String> {
    assert_ne!(c4.rc, 0);
    assert!(
        c4.err.contains("CCID 4 is not available") && c4.err.contains("CCID 2 and 3"),
        "{}",
        c4.err
    );
    let over = over.json();
    let mps_note = match over.get("error").and_then(Value::as_str) {
        Some(e) => {
            assert!(e.contains("maximum packet size"), "{e}");
            e.to_string()
        }
        None => "-l 65507 fits this path's MPS".to_string(),
    };
    vec![
        format!("ccid4: {}", c4.err.trim()),
        format!("over_mps: {mps_note}"),
    ]
}

/// The text outputs: live CBR lines with the longest gap; CCID 3 lines with TFRC figures.
fn check_text(cbr: &Run, ccid3: &Run) -> String {
    let live: Vec<&str> = cbr
        .out
        .lines()
        .filter(|l| l.contains("Kbits/s") && l.contains(" ms") && !l.contains("TFRC"))
        .collect();
    assert!(live.len() >= 2, "live CBR lines: {}", cbr.out);
    assert!(cbr.out.contains("longest gap"), "{}", cbr.out);
    // CCID 3: the sender's TFRC state every interval, X near the stream's rate.
    let tfrc: Vec<&str> = cbr
        .out
        .lines()
        .filter(|l| l.contains("TFRC #1 sender: X "))
        .collect();
    assert!(tfrc.len() >= 2, "live TFRC lines: {}", cbr.out);
    assert!(
        ccid3.out.contains("TX CCID 3") && ccid3.out.contains("TFRC"),
        "{}",
        ccid3.out
    );
    format!(
        "cbr_text live lines: {}\n{}",
        live[0].trim(),
        tfrc[0].trim()
    )
}

fn check_sweep(v: &Value) -> Vec<String> {
    let points = v["points"]
        .as_array()
        .unwrap_or_else(|| panic!("no sweep points: {v}"));
    let lens: Vec<u64> = points.iter().filter_map(|p| p["len"].as_u64()).collect();
    assert_eq!(lens, vec![64, 128, 256, 512, 1024], "{v}");
    points
        .iter()
        .map(|p| {
            assert!(p.get("error").is_none(), "sweep size failed: {p}");
            let (len, bytes, packets) = (f(p, "/len"), f(p, "/bytes"), f(p, "/packets"));
            assert!(
                packets > 0.0 && bytes == len * packets,
                "every DCCP packet is one datagram of -l bytes: {p}"
            );
            format!(
                "sweep {len} B: {:.2} Mbit/s, {:.0} packets/s",
                f(p, "/bits_per_second") / 1e6,
                f(p, "/packets_per_second")
            )
        })
        .collect()
}

fn check_cbr(v: &Value) -> String {
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let (secs, bps) = (
        f(v, "/end/sum_received/seconds"),
        f(v, "/end/sum_received/bits_per_second"),
    );
    let (packets, lost) = (f(v, "/end/sum/packets"), f(v, "/end/sum/lost_packets"));
    let pps = (packets - lost) / secs;
    // 48 kbit/s in 160-byte packets is 37.5 packets/s; TCG and CCID 3 blur it, not by half.
    assert!(
        (24_000.0..72_000.0).contains(&bps),
        "CBR rate {bps} for 48k: {v}"
    );
    assert!((18.0..57.0).contains(&pps), "CBR packet rate {pps}: {v}");
    let gap = f(v, "/perfpeer/udp/max_gap_ms");
    assert!(
        gap >= 1000.0 / 37.5 * 0.5,
        "the longest gap cannot be shorter than half the spacing: {gap}"
    );
    format!(
        "cbr mp3: {:.1} kbit/s, {pps:.1} packets/s, lost {lost}/{packets}, jitter {:.3} ms, longest gap {gap:.1} ms",
        bps / 1e3,
        f(v, "/end/sum/jitter_ms")
    )
}
