//! flent (Debian's 2.1.1) against `perfpeer netserver` between two network namespaces, with the
//! stock netperf 2.7.0 that scripts/fetch-netperf.sh fetched: one short run of `flent rrul` and
//! one of `flent tcp_upload`, and flent's data file read back — every flow the test names has
//! data, throughputs lie between nothing and what the shaped link carries (and the netserver's
//! byte counts agree with netperf's), latencies are round trips that link can have.
//!
//! rrul's UDP pings are netperf UDP_RR tests against the netserver: flent tries irtt first, and
//! with no irtt server in the far namespace falls back to netperf, as on any host that runs a
//! netserver alone. Its ICMP pings are answered by the far namespace's kernel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use perfpeer_tests::netns::{self, ADDR_B, TwoHosts};
use perfpeer_tests::{Running, have, perfpeer_bin, skip, wait_for};
use serde_json::Value;

use crate::netserver::stock_netperf;

/// The link's rate each way (tc's word, and in Mbit/s).
const LINK: (&str, f64) = ("50mbit", 50.0);
/// flent's `-l`: how long the loads run, in seconds.
const LENGTH_S: u32 = 4;
/// flent's `-d`: the idle seconds before and after the loads, in which only the pings run.
const DELAY_S: u32 = 1;
/// flent's step (`-s`, its default 0.2 s), in ms: the interval of netperf's interim results
/// and of the pings.
const STEP_MS: u32 = 200;
/// netserver's port, in the far namespace (flent's `--netperf-control-port`).
const CONTROL_PORT: u16 = 12865;
/// A round trip the idle link beats, on a machine as busy as the whole suite makes it.
const IDLE_RTT_BOUND_MS: f64 = 50.0;
/// A round trip no loaded link of this test gives as its median: tbf queues at most 300 ms
/// each way (netns.rs). Single round trips may take longer (a UDP_RR request lost in a full
/// queue waits out netperf's 2-s timeout), so the median is bounded, not the slowest.
const MEDIAN_RTT_BOUND_MS: f64 = 1000.0;

/// What the test needs: root for the namespaces, flent, stock netperf (its directory, for
/// flent's PATH). In CI each of them missing is a failure; elsewhere the test is skipped, said.
fn setup(tag: &str) -> Option<(TwoHosts, PathBuf)> {
    if !netns::available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root with iproute2 for the namespace tests"
        );
        skip("needs root and iproute2");
        return None;
    }
    if !have("flent") {
        return None;
    }
    let netperf = stock_netperf()?;
    let dir = netperf
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .or_else(|| which("netperf"))
        .expect("the directory holding netperf");
    let hosts = TwoHosts::new(tag, LINK.0).expect("create namespaces");
    Some((hosts, dir))
}

/// The directory on PATH that holds `program`.
fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| d.join(program).is_file())
}

/// `prefix` (`ip netns exec NS`) followed by `program`.
fn in_namespace(prefix: &[String], program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(&prefix[0]);
    cmd.args(&prefix[1..]).arg(program);
    cmd
}

/// Whether process `pid`'s network namespace has a TCP socket listening on `port` (its own
/// /proc/PID/net/tcp: the test's process sits in another namespace).
fn listening_in(pid: u32, port: u16) -> bool {
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 3
            && fields[3] == "0A"
            && fields[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok())
                == Some(port)
    })
}

/// `perfpeer netserver` in host B, listening on B's address.
fn start_netserver(hosts: &TwoHosts) -> Running {
    let child = in_namespace(&hosts.prefix_b(), perfpeer_bin())
        .args(["netserver", "-D", "-L", ADDR_B, "-p"])
        .arg(CONTROL_PORT.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perfpeer netserver in host B");
    let server = Running(child);
    let pid = server.0.id();
    assert!(
        wait_for(Duration::from_secs(10), || listening_in(pid, CONTROL_PORT)),
        "perfpeer netserver did not listen in host B"
    );
    server
}

/// Runs `flent TEST` in host A against the netserver in host B, its data file written into a
/// temporary directory; returns that file's JSON. Fails with flent's and the server's output.
fn run_flent(hosts: &TwoHosts, test: &str, netperf_dir: &Path, server: Running) -> Value {
    let data_dir = std::env::temp_dir().join(format!(
        "perfpeer-flent-{}-{}",
        std::process::id(),
        hosts.ns_a
    ));
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).expect("data directory");
    let path = std::env::join_paths(
        std::iter::once(netperf_dir.to_path_buf()).chain(
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default(),
        ),
    )
    .expect("PATH");
    let child = in_namespace(&hosts.prefix_a(), "flent")
        .arg(test)
        .args(["-H", ADDR_B, "-l", &LENGTH_S.to_string()])
        .args(["-d", &DELAY_S.to_string()])
        .args(["-s", &(f64::from(STEP_MS) / 1000.0).to_string()])
        .args(["--netperf-control-port", &CONTROL_PORT.to_string()])
        .args(["-t", "perfpeer", "-D"])
        .arg(&data_dir)
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run flent in host A");
    let out = Running(child).wait(Duration::from_secs(90));
    let server_out = server.wait(Duration::ZERO);
    let said = format!(
        "flent {test}: {}\n{}{}\nnetserver:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&server_out.stdout),
        String::from_utf8_lossy(&server_out.stderr)
    );
    let file = std::fs::read_dir(&data_dir)
        .expect("data directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".flent.gz"));
    let json = file.map(|file| {
        Command::new("gzip")
            .arg("-dc")
            .arg(&file)
            .output()
            .expect("run gzip")
    });
    let _ = std::fs::remove_dir_all(&data_dir);
    assert!(out.status.success(), "{said}");
    let json = json.unwrap_or_else(|| panic!("no .flent.gz data file: {said}"));
    assert!(json.status.success(), "the data file is not gzip: {said}");
    let data: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("the data file is not JSON ({e}): {said}"));
    assert_eq!(
        data.pointer("/metadata/FAILED_RUNNERS")
            .and_then(Value::as_u64),
        Some(0),
        "flows that gave no data: {said}"
    );
    data
}

/// A series of the data file: its values (flent's `null`s, the steps without one, left out).
fn series(data: &Value, name: &str) -> Vec<f64> {
    let values = data
        .pointer("/results")
        .and_then(|r| r.get(name))
        .and_then(Value::as_array)
        .unwrap_or_else(|| {
            let names: Vec<&String> = data["results"]
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            panic!("no series {name:?} in the data file; it has {names:?}")
        });
    values.iter().filter_map(Value::as_f64).collect()
}

/// What netperf said of a flow at its end (flent keeps it per series).
fn series_meta<'a>(data: &'a Value, name: &str) -> &'a Value {
    data.pointer("/metadata/SERIES_META")
        .and_then(|m| m.get(name))
        .unwrap_or_else(|| panic!("no metadata for {name:?}"))
}

/// Steps of the loads' length: a series with fewer than half of them has lost its flow.
fn enough_steps() -> usize {
    usize::try_from(LENGTH_S * 1000 / STEP_MS / 2).expect("a small count")
}

/// A TCP flow: interim throughputs every step, netperf's own mean above nothing and at most
/// the link's rate, and the netserver's byte count where netperf's can tell it. Returns the
/// mean, Mbit/s.
///
/// Upload (TCP_STREAM): the netserver received every byte netperf counted as sent, and at most
/// one send (`SEND_SIZE`) more — the send netperf's clock cut short, which netperf does not
/// count. Download (TCP_MAERTS): netperf received no more than the netserver sent, and most of
/// it: netperf stops counting at its clock and drains what is still in flight (in the link's
/// queue, in socket buffers) uncounted.
fn check_tcp_flow(data: &Value, name: &str) -> f64 {
    let values = series(data, name);
    assert!(
        values.len() >= enough_steps(),
        "{name}: {} throughput samples in a {LENGTH_S}-s load",
        values.len()
    );
    assert!(
        values.iter().all(|v| v.is_finite() && *v >= 0.0),
        "{name}: {values:?}"
    );
    let meta = series_meta(data, name);
    let number = |key: &str| {
        meta[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no {key} in {meta}"))
    };
    let mean_mbits = number("MEAN_VALUE");
    assert!(
        mean_mbits > 0.0 && mean_mbits <= LINK.1 * 1.05,
        "{name}: {mean_mbits} Mbit/s over a {} Mbit/s link",
        LINK.1
    );
    let (sent, received) = (number("BYTES_SENT"), number("BYTES_RECVD"));
    assert!(sent > 0.0, "{name}: nothing sent: {meta}");
    if name.starts_with("TCP upload") {
        let one_send = number("SEND_SIZE");
        assert!(
            received >= sent && received - sent < one_send,
            "{name}: netperf sent {sent} bytes, the netserver received {received}: {meta}"
        );
    } else {
        assert!(
            received <= sent && received >= sent / 2.0,
            "{name}: the netserver sent {sent} bytes, netperf received {received}: {meta}"
        );
    }
    mean_mbits
}

/// A latency series: round trips every step, each more than nothing, the fastest one of an
/// idle link (the pings run alone before and after the loads), the median within what the
/// queues can hold.
fn check_latency(data: &Value, name: &str) {
    let mut values = series(data, name);
    assert!(
        values.len() >= enough_steps(),
        "{name}: {} round trips in {} s",
        values.len(),
        LENGTH_S + 2 * DELAY_S
    );
    values.sort_by(f64::total_cmp);
    let (min, median) = (values[0], values[values.len() / 2]);
    assert!(
        min > 0.0 && min < IDLE_RTT_BOUND_MS,
        "{name}: fastest round trip {min} ms of {values:?}"
    );
    assert!(
        median < MEDIAN_RTT_BOUND_MS,
        "{name}: median round trip {median} ms of {values:?}"
    );
}

/// The flows of a direction together: below the link's rate, and most of it (nothing else
/// shares the link).
fn check_link_share(what: &str, means: &[f64]) {
    let total: f64 = means.iter().sum();
    assert!(
        (LINK.1 * 0.4..=LINK.1 * 1.05).contains(&total),
        "{what}: {total} Mbit/s in all ({means:?}) over a {} Mbit/s link",
        LINK.1
    );
}

/// RRUL: four TCP uploads and four downloads (TCP_STREAM and TCP_MAERTS with four DSCP
/// markings), three UDP_RR pings and an ICMP ping, all at once.
#[test]
fn flent_rrul_against_perfpeer_netserver() {
    let Some((hosts, netperf_dir)) = setup("fr") else {
        return;
    };
    let server = start_netserver(&hosts);
    let data = run_flent(&hosts, "rrul", &netperf_dir, server);
    let markings = ["BE", "BK", "CS5", "EF"];
    for direction in ["upload", "download"] {
        let means: Vec<f64> = markings
            .iter()
            .map(|m| check_tcp_flow(&data, &format!("TCP {direction} {m}")))
            .collect();
        check_link_share(&format!("TCP {direction}"), &means);
    }
    for ping in [
        "Ping (ms) UDP EF",
        "Ping (ms) UDP BK",
        "Ping (ms) UDP BE",
        "Ping (ms) ICMP",
    ] {
        check_latency(&data, ping);
    }
    // Every flow above ran: the results hold them and the sums flent computes from them.
    let names: BTreeMap<&str, usize> = data["results"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.as_str(), v.as_array().map_or(0, Vec::len)))
                .collect()
        })
        .unwrap_or_default();
    for computed in ["TCP upload sum", "TCP download sum", "Ping (ms) avg"] {
        assert!(
            names.get(computed).is_some_and(|&n| n > 0),
            "{computed}: {names:?}"
        );
    }
}

/// One TCP upload beside an ICMP ping.
#[test]
fn flent_tcp_upload_against_perfpeer_netserver() {
    let Some((hosts, netperf_dir)) = setup("fu") else {
        return;
    };
    let server = start_netserver(&hosts);
    let data = run_flent(&hosts, "tcp_upload", &netperf_dir, server);
    let mean_mbits = check_tcp_flow(&data, "TCP upload");
    check_link_share("TCP upload", &[mean_mbits]);
    check_latency(&data, "Ping (ms) ICMP");
}
