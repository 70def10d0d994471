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
