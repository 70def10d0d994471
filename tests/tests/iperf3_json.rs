//! `-J` from perfpeer's iperf3 client against the JSON stock iperf3 3.12 prints, captured from a
//! stock client and server on loopback (tests/fixtures/iperf3-3.12/, one file per mode): every key
//! stock prints is there, and every yes/no figure (`sender`, `omitted`, `reverse`, …) says the
//! same, so a JSON consumer written against stock iperf3 reads perfpeer's output unchanged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use perfpeer_tests::{Running, free_port, have, perfpeer_bin, wait_listening};
use serde_json::Value;

/// Each mode: its fixture and the flags (stock's were captured with `-t 2` unless `-n` is given).
const MODES: [(&str, &[&str]); 9] = [
    ("tcp", &["-t", "1"]),
    ("tcp_R", &["-t", "1", "-R"]),
    ("tcp_bidir", &["-t", "1", "--bidir"]),
    ("tcp_P2", &["-t", "1", "-P", "2"]),
    ("udp", &["-t", "1", "-u", "-b", "10M"]),
    ("udp_R", &["-t", "1", "-u", "-b", "10M", "-R"]),
    ("udp_bidir", &["-t", "1", "-u", "-b", "10M", "--bidir"]),
    ("tcp_n", &["-n", "10M"]),
    ("tcp_O", &["-t", "1", "-O", "1"]),
];

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/iperf3-3.12")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every key path (arrays as `[]`), and every boolean leaf with its path.
fn shape(v: &Value, path: &str, keys: &mut BTreeSet<String>, flags: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                keys.insert(p.clone());
                shape(x, &p, keys, flags);
            }
        }
        Value::Array(items) => {
            for x in items {
                shape(x, &format!("{path}[]"), keys, flags);
            }
        }
        Value::Bool(b) => {
            flags.insert(format!("{path}={b}"));
        }
        _ => {}
    }
}

/// Fails naming what stock has and `ours` lacks, or a yes/no figure that differs.
fn assert_like_stock(mode: &str, stock: &Value, ours: &Value) {
    let (mut stock_keys, mut stock_flags) = (BTreeSet::new(), BTreeSet::new());
    shape(stock, "", &mut stock_keys, &mut stock_flags);
    let (mut our_keys, mut our_flags) = (BTreeSet::new(), BTreeSet::new());
    shape(ours, "", &mut our_keys, &mut our_flags);
    let missing: Vec<_> = stock_keys.difference(&our_keys).collect();
    assert!(
        missing.is_empty(),
        "{mode}: keys stock iperf3 has and perfpeer lacks: {missing:?}\n{ours}"
    );
    // Only where stock has the key (perfpeer's own section has flags of its own).
    let in_stock = |f: &&String| {
        f.rsplit_once('=')
            .is_some_and(|(p, _)| stock_keys.contains(p))
    };
    let our_flags: BTreeSet<String> = our_flags.iter().filter(in_stock).cloned().collect();
    let differ: Vec<_> = stock_flags.symmetric_difference(&our_flags).collect();
    assert!(
        differ.is_empty(),
        "{mode}: yes/no figures that differ from stock: {differ:?}\n{ours}"
    );
    // Whole numbers print as integers, as stock's JSON library prints them.
    for pointer in ["/end/sum_sent/start", "/start/test_start/omit"] {
        if let Some(x) = stock.pointer(pointer) {
            assert_eq!(
                x.is_u64(),
                ours.pointer(pointer).is_some_and(Value::is_u64),
                "{mode}: {pointer}"
            );
        }
    }
}

fn run_json(program: &Path, args: &[&str]) -> Value {
    let out = Running::spawn(program, args).wait(Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn our_iperf3_client_json_has_stock_keys_against_a_stock_server() {
    if !have("iperf3") {
        return;
    }
    for (mode, flags) in MODES {
        let port = free_port();
        let p = port.to_string();
        let server = Running::spawn(Path::new("iperf3"), &["-s", "-1", "-p", &p]);
        assert!(
            wait_listening(port, Duration::from_secs(10)),
            "stock iperf3 -s"
        );
        let mut args = vec!["iperf3", "-c", "127.0.0.1", "-p", &p, "-J"];
        args.extend_from_slice(flags);
        let ours = run_json(&perfpeer_bin(), &args);
        assert_like_stock(mode, &fixture(mode), &ours);
        drop(server);
    }
}

#[test]
fn perfpeer_test_iperf3_json_has_stock_keys_against_our_server() {
    let port = free_port();
    let p = port.to_string();
    let _server = Running::spawn(&perfpeer_bin(), &["iperf3", "-s", "-p", &p]);
    assert!(
        wait_listening(port, Duration::from_secs(10)),
        "perfpeer iperf3 -s"
    );
    let target = format!("iperf3://127.0.0.1:{port}");
    for (mode, flags) in MODES {
        let mut args = vec!["test", target.as_str(), "-J"];
        args.extend_from_slice(flags);
        let ours = run_json(&perfpeer_bin(), &args);
        assert_like_stock(mode, &fixture(mode), &ours);
    }
}

#[test]
fn a_failed_test_prints_stock_iperf3s_json_skeleton() {
    let port = free_port(); // nothing listens there
    let p = port.to_string();
    let ours = run_json(
        &perfpeer_bin(),
        &["iperf3", "-c", "127.0.0.1", "-p", &p, "-J", "-t", "1"],
    );
    assert_like_stock("error", &fixture("error"), &ours);
    assert!(
        ours["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{ours}"
    );
}

/// The PyPI `iperf3` package (0.1.11, the parser scripts import as `iperf3.TestResult`), its
/// sdist fetched once into target/ and read from there (nothing installed).
fn pypi_iperf3() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pypi-iperf3");
    let module = dir.join("iperf3-0.1.11/iperf3/iperf3.py");
    if !module.exists() {
        std::fs::create_dir_all(&dir).expect("cache dir");
        let out = std::process::Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--no-binary", ":all:"])
            .args(["iperf3==0.1.11", "-d"])
            .arg(&dir)
            .output()
            .expect("python3 -m pip (scripts/setup.sh installs python3-pip)");
        assert!(out.status.success(), "{out:?}");
        let out = std::process::Command::new("tar")
            .args(["-xzf", "iperf3-0.1.11.tar.gz"])
            .current_dir(&dir)
            .output()
            .expect("tar");
        assert!(out.status.success(), "{out:?}");
    }
    assert!(module.exists(), "{}", module.display());
    module
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

/// A result with the Wi-Fi link at both ends (`intervals[].wifi`, `end.wifi`) still reads as
/// stock iperf3 JSON: the stock keys' jq paths give the same figures as without it, and the
/// PyPI `iperf3` parser reads it. (The readings are put into a real loopback result: this host
/// has no radio; the Wi-Fi guest, wifi_vm, checks real ones.)
#[test]
fn a_result_with_the_wifi_link_still_parses_as_stock_json() {
    use perfpeer_shared::report::TestResult;
    use perfpeer_shared::wifi::{GuardInterval, LinkSample, Mode, Rate, RateKind};
    let peer = perfpeer_tests::Peer::start(&[]);
    let out = perfpeer_tests::perfpeer_test(&[&peer.control, "-t", "2"]);
    assert!(out.status.success(), "{out:?}");
    let id = perfpeer_tests::result_id_from(&String::from_utf8_lossy(&out.stdout));
    let (status, body) =
        perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200, "{body}");
    let mut result: TestResult = serde_json::from_str(&body).expect("a TestResult");
    let plain = perfpeer_shared::format::iperf3::json(&result);
    let sample = LinkSample {
        iface: "wlan0".into(),
        mode: Mode::Ap,
        station: "02:00:00:00:01:00".into(),
        signal_dbm: Some(-42),
        signal_avg_dbm: Some(-41),
        chain_signal_dbm: vec![-44, -45],
        tx_rate: Some(Rate {
            kind: RateKind::Vht,
            mcs: Some(9),
            nss: Some(2),
            width_mhz: Some(80),
            gi: Some(GuardInterval::Short),
            mbps: Some(866.7),
        }),
        rx_rate: None,
        tx_packets: Some(1000),
        tx_retries: Some(20),
        tx_failed: Some(0),
        retries_percent: Some(2.0),
        beacon_loss: None,
        expected_mbps: Some(600.0),
        tx_airtime_us: Some(400_000),
        rx_airtime_us: Some(20_000),
        connected_s: Some(60),
        channel: None,
    };
    // The far end's report as its final one carries it: an interval per reading, no streams.
    let times = result.local.intervals.clone();
    if let Some(remote) = result.remote.as_mut()
        && remote.intervals.is_empty()
    {
        remote.intervals = times;
        for i in &mut remote.intervals {
            i.streams.clear();
        }
    }
    for side in std::iter::once(&mut result.local).chain(result.remote.as_mut()) {
        for i in &mut side.intervals {
            i.wifi = Some(Box::new(sample.clone()));
        }
    }
    let with = perfpeer_shared::format::iperf3::json(&result);
    assert_eq!(with["intervals"][0]["wifi"]["local"]["tx_rate"]["mcs"], 9);
    assert_eq!(with["intervals"][0]["wifi"]["remote"]["signal_dbm"], -42);
    // The summary is derived from the intervals' readings: 20 retries in each.
    let remote_readings = result.remote.as_ref().map_or(0, |r| r.intervals.len());
    assert!(remote_readings > 0);
    assert_eq!(
        with["end"]["wifi"]["remote"]["tx_retries"],
        20 * remote_readings as u64
    );
    let dir = std::env::temp_dir().join(format!("pp-wifi-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("with.json");
    std::fs::write(&file, with.to_string()).unwrap();
    // jq: the stock keys read the same with and without the link.
    if have("jq") {
        for path in [
            ".end.sum_sent.bytes",
            ".end.sum_received.bits_per_second",
            ".intervals[0].sum.bits_per_second",
            ".intervals | length",
            ".start.test_start.protocol",
        ] {
            let out = std::process::Command::new("jq")
                .args(["-c", path])
                .arg(&file)
                .output()
                .expect("jq");
            let got: Value = serde_json::from_slice(&out.stdout).expect("jq's answer");
            let want: Value = {
                let std_out = std::process::Command::new("jq")
                    .args(["-c", path])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .and_then(|mut c| {
                        use std::io::Write as _;
                        c.stdin
                            .take()
                            .unwrap()
                            .write_all(plain.to_string().as_bytes())?;
                        c.wait_with_output()
                    })
                    .expect("jq");
                serde_json::from_slice(&std_out.stdout).expect("jq's answer")
            };
            assert_eq!(got, want, "{path}");
        }
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "jq: scripts/setup.sh installs it"
        );
        perfpeer_tests::skip("jq is not installed");
    }
    // The PyPI parser: what a script reads from the file.
    let script = "import sys, json\nsys.path.insert(0, sys.argv[1])\nfrom iperf3.iperf3 import TestResult\n\
                  r = TestResult(open(sys.argv[2]).read())\n\
                  print(json.dumps([r.error, r.protocol, r.sent_bytes, r.received_bytes, r.received_Mbps]))\n";
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(pypi_iperf3())
        .arg(&file)
        .output()
        .expect("python3");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{out:?}");
    let read: Value = serde_json::from_slice(&out.stdout).expect("the parser's figures");
    assert_eq!(read[0], Value::Null, "no error: {read}");
    assert_eq!(read[1], "TCP");
    assert_eq!(read[2], plain["end"]["sum_sent"]["bytes"]);
    assert_eq!(read[3], plain["end"]["sum_received"]["bytes"]);
    let mbps = read[4].as_f64().unwrap();
    let want = plain["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
        / 1e6;
    assert!(
        (mbps - want).abs() < 1e-6 * want.max(1.0),
        "{mbps} vs {want}"
    );
}
