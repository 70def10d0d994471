//! Latency under load against a queue set by the test itself: host A – router R – host B in
//! network namespaces, R shaping its egress towards B with `tc tbf rate 20mbit` and a large
//! (500 ms) or small (20 ms) queue. perfpeer's probe runs beside `ping -i 0.05` (iputils) and
//! `irtt client` (flent's isochronous round-trip tester), all at the same time under the same
//! load; their medians over the same stretch of the upload phase must agree, and irtt's one-way
//! delays (one host, one clock) are the reference for perfpeer's per-direction figures.
//! Also over loopback: the flags, refusals and the JSON key.

use std::time::Duration;

use perfpeer_tests::netns::{self, ROUTED_B, Routed};
use perfpeer_tests::{Peer, Running, have, json_of, perfpeer_test, perfpeer_test_with};
use serde_json::Value;

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "no samples");
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

fn phase<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["latency_under_load"]["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["phase"] == name)
        .unwrap_or_else(|| panic!("no {name} phase in {v}"))
}

fn p50(phase: &Value, key: &str) -> f64 {
    phase[key]["p50"]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}.p50 in {phase}"))
}

/// Whether `a` and `b` agree within `share` of the larger, or within `abs_ms` (for figures
/// near zero).
fn agree(a: f64, b: f64, share: f64, abs_ms: f64) -> bool {
    (a - b).abs() <= share * a.max(b) || (a - b).abs() <= abs_ms
}

/// ping's round trips (ms) sent within `[from, to)` (Unix seconds), from `ping -D` output.
fn ping_rtts(text: &str, from: f64, to: f64) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            let ts: f64 = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let ms: f64 = l.split("time=").nth(1)?.split(' ').next()?.parse().ok()?;
            (ts >= from && ts < to).then_some(ms)
        })
        .collect()
}

/// irtt's (rtt, send delay, receive delay) in ms of round trips sent within `[from, to)`.
fn irtt_delays(json: &Value, from: f64, to: f64) -> Vec<(f64, f64, f64)> {
    json["round_trips"]
        .as_array()
        .expect("irtt round_trips")
        .iter()
        .filter(|rt| rt["lost"] == "false")
        .filter_map(|rt| {
            let sent = rt["timestamps"]["client"]["send"]["wall"].as_f64()? / 1e9;
            let d = &rt["delay"];
            (sent >= from && sent < to).then_some((
                d["rtt"].as_f64()? / 1e6,
                d["send"].as_f64()? / 1e6,
                d["receive"].as_f64()? / 1e6,
            ))
        })
        .collect()
}

/// One run against `hosts` with the reference tools beside it; returns perfpeer's JSON, and the
/// window (Unix seconds) of the upload phase's settled part with perfpeer's, ping's and irtt's
/// medians over it.
struct Run {
    json: Value,
    perfpeer_rtt: f64,
    perfpeer_up: f64,
    perfpeer_down: f64,
    ping_rtt: f64,
    irtt_rtt: f64,
    irtt_send: f64,
    irtt_receive: f64,
}

fn run_beside_references(hosts: &Routed, tag: &str) -> Run {
    let dir = std::env::temp_dir().join(format!("pp-lul-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let irtt_out = dir.join("irtt.json");
    let ns_a = hosts.ns_a.clone();
    let ns_b = hosts.ns_b.clone();
    let ip = std::path::Path::new("ip");
    let _irtt_server = Running::spawn(
        ip,
        &[
            "netns",
            "exec",
            &ns_b,
            "irtt",
            "server",
            "-b",
            &format!("{ROUTED_B}:2112"),
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    // idle 2 s + 3 phases of 4 s + pauses: about 16 s; the references run a little longer.
    let ping = Running::spawn(
        ip,
        &[
            "netns", "exec", &ns_a, "ping", "-D", "-n", "-i", "0.05", "-w", "22", ROUTED_B,
        ],
    );
    let irtt = Running::spawn(
        ip,
        &[
            "netns",
            "exec",
            &ns_a,
            "irtt",
            "client",
            "-i",
            "10ms",
            "-d",
            "22s",
            "-Q",
            "-o",
            irtt_out.to_str().expect("path"),
            &format!("{ROUTED_B}:2112"),
        ],
    );
    let args = [
        ROUTED_B,
        "--latency-under-load",
        "--idle-time",
        "2",
        "-t",
        "4",
        "-C",
        "cubic",
        "-J",
    ];
    let out = perfpeer_test_with(hosts.prefix_a(), &args);
    let json = json_of(&out, &args);
    let ping_out = ping.wait(Duration::from_secs(30));
    let _ = irtt.wait(Duration::from_secs(30));
    let irtt_json: Value = serde_json::from_slice(
        &std::fs::read(&irtt_out).unwrap_or_else(|e| panic!("irtt output: {e}")),
    )
    .expect("irtt JSON");
    let _ = std::fs::remove_dir_all(&dir);

    // The upload phase less its first second (the queue filling) and last half second.
    let lul = &json["latency_under_load"];
    let upload = phase(&json, "upload");
    let (start, end) = (
        upload["start"].as_f64().expect("start") + 1.0,
        upload["end"].as_f64().expect("end") - 0.5,
    );
    assert!(end - start > 2.0, "upload phase too short: {upload}");
    let origin = lul["started_unix_ms"].as_f64().expect("started_unix_ms") / 1000.0;
    let probes: Vec<&Value> = lul["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .filter(|p| p["t"].as_f64().is_some_and(|t| t >= start && t < end))
        .collect();
    let of = |key: &str| median(probes.iter().filter_map(|p| p[key].as_f64()).collect());
    let (from, to) = (origin + start, origin + end);
    let pings = ping_rtts(&String::from_utf8_lossy(&ping_out.stdout), from, to);
    let irtts = irtt_delays(&irtt_json, from, to);
    assert!(
        pings.len() > 20 && irtts.len() > 100,
        "reference samples: {} ping, {} irtt",
        pings.len(),
        irtts.len()
    );
    Run {
        perfpeer_rtt: of("rtt"),
        perfpeer_up: of("up"),
        perfpeer_down: of("down"),
        ping_rtt: median(pings),
        irtt_rtt: median(irtts.iter().map(|d| d.0).collect()),
        irtt_send: median(irtts.iter().map(|d| d.1).collect()),
        irtt_receive: median(irtts.iter().map(|d| d.2).collect()),
        json,
    }
}

#[test]
fn a_router_queue_shows_in_the_shaped_direction_and_agrees_with_ping_and_irtt() {
    if !netns::available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root with iproute2 for the namespace tests"
        );
        perfpeer_tests::skip("needs root and iproute2");
        return;
    }
    if !have("ping") || !have("irtt") {
        return;
    }
    let hosts = Routed::new("l", "20mbit", "500ms").expect("create namespaces");
    let _peer = Peer::start_with(
        hosts.prefix_b(),
        &format!("{ROUTED_B}:5210"),
        "5211",
        &["--open"],
    );
    for (queue, check) in [
        ("500ms", (|p50: f64| p50 >= 100.0) as fn(f64) -> bool),
        ("20ms", |p50: f64| p50 <= 40.0),
    ] {
        hosts.set_queue("20mbit", queue).expect("set the queue");
        let run = run_beside_references(&hosts, queue);
        let v = &run.json;
        let figures = format!(
            "queue {queue}: perfpeer RTT {:.1} up {:.1} down {:.2}; ping {:.1}; irtt RTT {:.1} send {:.1} receive {:.2}\n{v}",
            run.perfpeer_rtt,
            run.perfpeer_up,
            run.perfpeer_down,
            run.ping_rtt,
            run.irtt_rtt,
            run.irtt_send,
            run.irtt_receive
        );
        eprintln!("{}", figures.lines().next().unwrap_or_default());
        assert_eq!(
            v["latency_under_load"]["settings"]["congestion"], "cubic",
            "the load's congestion control is said"
        );
        let upload = phase(v, "upload");
        let download = phase(v, "download");
        // The queue is on the way out from A: the upload phase's round trip and its up delay.
        assert!(check(p50(upload, "rtt")), "upload RTT p50: {figures}");
        assert!(
            check(p50(upload, "up_delay")),
            "upload up delay p50: {figures}"
        );
        // The other direction carries no queue.
        assert!(
            p50(upload, "down_delay") <= 5.0,
            "upload down delay: {figures}"
        );
        assert!(
            p50(download, "up_delay") <= 5.0,
            "download up delay: {figures}"
        );
        assert!(
            p50(download, "rtt") <= 5.0,
            "download RTT (no queue that way): {figures}"
        );
        assert!(
            upload["up_bits_per_second"]
                .as_f64()
                .is_some_and(|b| (15e6..=21e6).contains(&b)),
            "upload at the link rate: {figures}"
        );
        // The same stretch of the same queue, measured three ways.
        assert!(
            agree(run.perfpeer_rtt, run.ping_rtt, 0.25, 2.0),
            "ping: {figures}"
        );
        assert!(
            agree(run.perfpeer_rtt, run.irtt_rtt, 0.25, 2.0),
            "irtt RTT: {figures}"
        );
        assert!(
            agree(run.perfpeer_up, run.irtt_send, 0.25, 2.0),
            "irtt send delay: {figures}"
        );
        assert!(
            agree(run.perfpeer_down, run.irtt_receive, 0.25, 2.0),
            "irtt receive delay: {figures}"
        );
    }
}

#[test]
fn latency_under_load_flags_refusals_and_json_over_loopback() {
    let peer = Peer::start(&["--open"]);
    let target = peer.control.clone();
    // Refused before anything runs, as usage errors.
    for (args, words) in [
        (
            vec!["--latency-under-load", "-t", "0.5"],
            "load phase must last 1 to 60",
        ),
        (
            vec!["--latency-under-load", "--probe-interval", "0.5"],
            "probe interval",
        ),
        (
            vec!["--latency-under-load", "--probe-size", "20"],
            "probe payload",
        ),
        (vec!["--latency-under-load", "-P", "0"], "load streams"),
        (vec!["--latency-under-load", "-u"], "cannot be used with"),
        (vec!["--latency-under-load", "-R"], "cannot be used with"),
        (vec!["--probe-interval", "5"], "--latency-under-load"),
    ] {
        let mut full = vec![target.as_str()];
        full.extend(args.iter().copied());
        let out = perfpeer_test(&full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
    }
    // Stock tools cannot answer the probe.
    let out = perfpeer_test(&[
        "iperf3://127.0.0.1:1",
        "--latency-under-load",
        "--idle-time",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a perfpeer peer"));

    // A short run: every phase, every probe settled, nothing lost on loopback.
    let args = [
        target.as_str(),
        "--latency-under-load",
        "--idle-time",
        "1",
        "-t",
        "1",
        "-P",
        "2",
        "--probe-interval",
        "5",
        "--probe-tos",
        "0xb8",
        // Paced (per direction), so the load does not take both cores from the tests beside it.
        "-b",
        "300M",
        "-J",
    ];
    let out = perfpeer_test(&args);
    let v = json_of(&out, &args);
    let lul = &v["latency_under_load"];
    let names: Vec<&str> = lul["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| p["phase"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["idle", "download", "upload", "both"]);
    assert_eq!(lul["settings"]["streams"], 2);
    assert_eq!(lul["settings"]["probe_tos"], 0xb8);
    // 64 B + 28 of IPv4 and UDP + 38 of Ethernet framing, 200 a second: 208 kbit/s.
    assert_eq!(lul["settings"]["probe_bits_per_second"], 208_000.0);
    let probes = lul["probes"].as_array().expect("probes");
    // About 200 a second through idle (1 s), three phases (≥ 1 s each) and the pauses.
    assert!(probes.len() > 700, "{} probes", probes.len());
    for p in lul["phases"].as_array().expect("phases") {
        let sent = p["probes_sent"].as_u64().expect("sent");
        assert!(sent >= 150, "phase {}: {sent} probes", p["phase"]);
        assert_eq!(p["probes_lost"], 0, "loopback loses nothing: {p}");
        assert!(p["rtt"]["p50"].as_f64().is_some_and(|ms| ms < 50.0), "{p}");
        assert!(p["rpm"].as_f64().is_some_and(|r| r > 1000.0), "{p}");
    }
    let both = phase(&v, "both");
    // Paced at 300 Mbit/s each way: near it, never well above it.
    assert_eq!(lul["settings"]["load_bits_per_second"], 300_000_000);
    for key in ["down_bits_per_second", "up_bits_per_second"] {
        assert!(
            both[key]
                .as_f64()
                .is_some_and(|b| (150e6..=330e6).contains(&b)),
            "{key}: {both}"
        );
    }
    assert!(
        both["flow_rtt"]["count"].as_u64().is_some_and(|n| n > 0),
        "load flows' RTT: {both}"
    );
    assert!(phase(&v, "idle")["added_rtt"].is_null());
    assert!(phase(&v, "upload")["added_rtt"].is_number());
    assert!(
        lul["throughput"].as_array().is_some_and(|t| t.len() >= 6),
        "throughput timeline"
    );

    // The text: the header, a row per phase as it ends, the final table and its notes; and the
    // page with both pictures written alongside.
    let page = std::env::temp_dir().join(format!("pp-lul-{}.html", std::process::id()));
    let out = perfpeer_test(&[
        target.as_str(),
        "--lul",
        "--idle-time",
        "1",
        "-t",
        "1",
        "-b",
        "300M",
        "--html",
        page.to_str().expect("path"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("Latency under load to "), "{text}");
    assert!(text.contains("4 TCP streams per direction"), "{text}");
    assert!(
        text.contains("TCP paced at 300.0 Mbit/s per direction"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("upload ")).count(),
        2,
        "{text}"
    );
    assert!(text.contains("RPM = 60000 / median probe RTT"));
    let html = std::fs::read_to_string(&page).expect("the page");
    let _ = std::fs::remove_file(&page);
    assert!(html.contains("latency-timeline") && html.contains("latency-cdf"));
    assert!(html.contains("How to read it") && !html.contains("<script src"));

    // Kept in this machine's history, as `perfpeer test` keeps a test; `results` shows it.
    let err = String::from_utf8_lossy(&out.stderr);
    let id = err
        .split("kept as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("not kept: {err}"))
        .to_string();
    let dir = perfpeer_tests::data_home().join("perfpeer");
    let results = |args: &[&str]| {
        let mut all = vec!["results", "--data-dir", dir.to_str().expect("path")];
        all.extend_from_slice(args);
        let out =
            Running::spawn(&perfpeer_tests::perfpeer_bin(), &all).wait(Duration::from_secs(20));
        assert!(out.status.success(), "{all:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = results(&["list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with(&id) && l.contains(" cli ") && l.contains(" latency ")),
        "{list}"
    );
    assert!(results(&["show", &id]).starts_with("Latency under load to "));
    // --no-store keeps nothing; --json-stream is one object per line as things happen, the
    // whole result last.
    let out = perfpeer_test(&[
        target.as_str(),
        "--lul",
        "--idle-time",
        "1",
        "-t",
        "1",
        "-b",
        "300M",
        "--no-store",
        "--json-stream",
    ]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("kept as"));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        lines.first().map(|l| l["event"].clone()),
        Some("started".into())
    );
    let done = lines.iter().filter(|l| l["event"] == "phase_done").count();
    assert_eq!(done, 4);
    let last = lines.last().expect("lines");
    assert_eq!(last["event"], "end");
    assert_eq!(
        last["latency_under_load"]["phases"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    // A run that cannot start says so in JSON too, and exits 1.
    let out = perfpeer_test(&["127.0.0.1:1", "--lul", "-J"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot reach 127.0.0.1:1")),
        "{v}"
    );
}
