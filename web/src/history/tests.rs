//! Host tests of the history logic: the list as the peer sends it, filters, row wording, times,
//! the API requests, failures in plain words, and the comparison chart's lines.

use super::*;
use crate::present::tests::tcp_result;

/// The body `GET /api/results` sends (two rows, newest first).
const LIST: &str = r#"[
 {"id":"aa11","created_ms":1764684187000,"origin":"browser","role":"client","peer":"pc.lan:5210",
  "protocol":"udp","direction":"reverse","status":"complete","reason":null,"bytes":2500000,
  "bits_per_second":20000000.0,"link_enabled":true},
 {"id":"bb22","created_ms":1764684000000,"origin":"far_end","role":"server","peer":"10.0.0.7",
  "protocol":"tcp","direction":"normal","status":"cancelled","reason":"cancelled","bytes":null,
  "bits_per_second":null,"link_enabled":false}
]"#;

fn history() -> History {
    History {
        entries: parse_list(LIST).expect("list parses"),
        ..History::default()
    }
}

#[test]
fn the_list_parses_and_bad_bodies_say_so() {
    let list = parse_list(LIST).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].bits_per_second, Some(20e6));
    assert!(!list[1].link_enabled && list[1].bytes.is_none());
    assert!(parse_list("[]").unwrap().is_empty());
    assert!(
        parse_list("<html>").unwrap_err().contains("did not parse"),
        "plain words"
    );
}

#[test]
fn filters_by_peer_text_protocol_and_direction() {
    let h = history();
    let ids = |f: Filter| -> Vec<String> {
        let mut h = h.clone();
        h.filter = f;
        h.visible().iter().map(|e| e.id.clone()).collect()
    };
    assert_eq!(ids(Filter::default()), ["aa11", "bb22"]);
    let peer = |p: &str| Filter {
        peer: p.into(),
        ..Filter::default()
    };
    assert_eq!(ids(peer(" PC.LAN ")), ["aa11"]);
    assert_eq!(ids(peer("10.0")), ["bb22"]);
    assert!(ids(peer("nowhere")).is_empty());
    let fields = |p: &str, d: &str| Filter::from_fields(String::new(), p, d);
    assert_eq!(ids(fields("tcp", "")), ["bb22"]);
    // Directions from this peer's side: bb22 was the other peer's TX, so this peer received.
    assert_eq!(ids(fields("", "reverse")), ["aa11", "bb22"]);
    assert!(ids(fields("", "normal")).is_empty());
    assert!(ids(fields("udp", "normal")).is_empty());
    assert_eq!(ids(fields("", "")), ["aa11", "bb22"], "empty fields: any");
}

#[test]
fn rows_say_time_test_peer_throughput_and_status() {
    let h = history();
    let r = row(&h.entries[0], 0);
    assert_eq!(r.when, "2025-12-02 14:03:07 UTC");
    assert_eq!(r.what, "UDP RX");
    assert_eq!(r.peer, "pc.lan:5210");
    assert_eq!(r.throughput, "20.0 Mbit/s");
    assert_eq!(r.status, "complete");
    let r = row(&h.entries[1], 0);
    // Kept as the far end of the other peer's TX test: this peer received.
    assert_eq!(r.what, "TCP RX (far end)");
    assert_eq!(r.throughput, "–");
    assert_eq!(r.status, "cancelled · link off");
}

#[test]
fn a_row_over_wifi_says_its_radios_figures() {
    let mut h = history();
    assert_eq!(row(&h.entries[0], 0).wifi, "", "no radio, no line");
    let line = r#"{"id":"cc33","created_ms":1764684187000,"origin":"far_end","role":"server",
      "peer":"10.0.0.7","protocol":"tcp","direction":"normal","status":"complete",
      "wifi":{"signal_dbm":-52.0,"phy_mbps":144.4,"retries_percent":3.0,"far":false}}"#;
    h.entries = parse_list(&format!("[{line}]")).unwrap();
    assert_eq!(
        row(&h.entries[0], 0).wifi,
        "Wi-Fi -52 dBm · 144 Mbit/s PHY · 3.0 % retries"
    );
    // Kept as the far end, without a radio of its own: the client's radio, said so.
    h.entries[0].wifi.as_mut().unwrap().far = true;
    assert!(
        row(&h.entries[0], 0)
            .wifi
            .starts_with("Wi-Fi (other peer) -52 dBm")
    );
}

#[test]
fn times_are_local_dates() {
    assert_eq!(when(0, 0), "1970-01-01 00:00:00 UTC");
    // UTC+2 (JavaScript says -120) and UTC-5 (300).
    assert_eq!(when(1_764_684_187_000, -120), "2025-12-02 16:03:07 UTC+2");
    assert_eq!(when(1_764_684_187_000, 300), "2025-12-02 09:03:07 UTC-5");
    assert_eq!(when(951_782_400_000, 0), "2000-02-29 00:00:00 UTC");
    assert_eq!(when(1_767_225_599_000, 0), "2025-12-31 23:59:59 UTC");
}

#[test]
fn requests_name_their_method_path_and_body() {
    #[cfg(feature = "lab-store")]
    let (list, path) = (
        Request::List {
            query: "?limit=200&tag=ch36".into(),
            more: false,
        },
        "/api/results?limit=200&tag=ch36",
    );
    #[cfg(not(feature = "lab-store"))]
    let (list, path) = (Request::List {}, "/api/results");
    assert_eq!((list.method(), list.path()), ("GET", path.into()));
    let get = Request::Get {
        id: "aa11".into(),
        purpose: Purpose::Open,
    };
    assert_eq!(
        (get.method(), get.path(), get.body()),
        ("GET", "/api/results/aa11".into(), None)
    );
    let off = Request::SetLink {
        id: "aa11".into(),
        enabled: false,
    };
    assert_eq!(off.method(), "POST");
    assert_eq!(off.path(), "/api/results/aa11/link");
    assert_eq!(off.body().as_deref(), Some(r#"{"enabled":false}"#));
    let del = Request::Delete { id: "aa11".into() };
    assert_eq!(
        (del.method(), del.path()),
        ("DELETE", "/api/results/aa11".into())
    );
}

#[test]
fn failures_are_plain_words() {
    assert_eq!(failure(401, ""), "the peer did not accept the token");
    assert_eq!(
        failure(404, r#"{"error":"no such result"}"#),
        "no such result (deleted?)"
    );
    assert_eq!(
        failure(503, r#"{"error":"this peer keeps no results"}"#),
        "the peer said: this peer keeps no results (HTTP 503)"
    );
    assert_eq!(failure(500, "oops"), "the peer answered HTTP 500");
    assert!(failure(0, "TypeError: Failed to fetch").contains("did not answer"));
}

#[test]
fn the_share_link_is_absolute_on_this_origin() {
    assert_eq!(
        share_url("http://192.168.1.20:5210", "ab12"),
        "http://192.168.1.20:5210/r/ab12"
    );
    assert_eq!(share_url("http://h/", "ab12"), "http://h/r/ab12");
}

#[test]
fn picking_fetching_and_the_overlay_lines() {
    let mut h = history();
    h.toggle("aa11");
    h.comparing = true;
    assert_eq!(h.overlay(0), None, "two picks needed");
    h.toggle("bb22");
    assert!(!h.comparing, "a new pick redraws only when asked");
    h.comparing = true;
    assert_eq!(h.missing(), ["aa11", "bb22"]);
    assert_eq!(h.overlay(0), None, "results not fetched yet");
    let a = tcp_result();
    let mut b = tcp_result();
    b.local.intervals.truncate(1);
    h.keep("bb22", b);
    h.keep("aa11", a);
    h.keep("aa11", tcp_result());
    assert_eq!(h.loaded.len(), 2, "kept once");
    let lines = h.overlay(0).expect("all fetched");
    // In the order picked, labelled with time, peer and test.
    assert_eq!(lines[0].label, "14:03:07 pc.lan:5210 UDP RX");
    assert_eq!(
        lines[1].label, "14:00:00 10.0.0.7 TCP RX",
        "kept as the far end"
    );
    // The fixture sends 125 MB then 250 MB in 1-s intervals: 1 and 2 Gbit/s.
    assert_eq!(lines[0].points, vec![(1.0, 1e9), (2.0, 2e9)]);
    assert_eq!(lines[1].points, vec![(1.0, 1e9)]);
    // Untick one: no chart until asked again; a deleted result leaves every list.
    h.toggle("aa11");
    assert_eq!(h.overlay(0), None);
    h.forget("bb22");
    assert!(h.picked.is_empty() && h.loaded.len() == 1 && h.entries.len() == 1);
}

#[test]
fn a_kept_sweep_is_a_row_that_opens_as_a_sweep_and_is_not_overlaid() {
    let body = r#"[{"id":"cc33","kind":"sweep","created_ms":1764684187000,"origin":"browser",
      "role":"client","peer":"pc:5210","protocol":"dccp","direction":"normal","status":"failed",
      "reason":"1 of 8 sizes failed","bytes":900000,"bits_per_second":4500000.0,"link_enabled":true}]"#;
    let mut h = History {
        entries: parse_list(body).unwrap(),
        ..History::default()
    };
    assert!(h.entries[0].is_sweep());
    assert!(
        !history().entries[0].is_sweep(),
        "a line without kind is a test"
    );
    let r = row(&h.entries[0], 0);
    assert_eq!(r.what, "DCCP TX size sweep");
    assert_eq!(r.throughput, "best 4.50 Mbit/s");
    assert_eq!(r.status, "failed: 1 of 8 sizes failed");
    h.toggle("cc33");
    assert!(h.picked.is_empty(), "sweeps are not overlaid");
    let spec = serde_json::to_string(&perfpeer_shared::spec::TestSpec::new(
        perfpeer_shared::spec::Protocol::Dccp,
    ))
    .unwrap();
    let opened = parse_opened(&format!(
        r#"{{"summary":{},"sweep":{{"id":"cc33","created_ms":1,"peer":"pc:5210","spec":{spec},
        "result":{{"protocol":"dccp","bitrate":null,"seconds_per_size":2.0,"points":[]}},
        "link_enabled":true}}}}"#,
        &body[1..body.len() - 1]
    ))
    .unwrap();
    assert!(opened.result.is_none());
    assert_eq!(opened.sweep.unwrap().peer, "pc:5210");
    assert!(
        parse_opened(r#"{"summary":{"id":"x","created_ms":1,"origin":"cli","role":"client","peer":"pc","protocol":"tcp","direction":"normal","status":"complete"}}"#)
            .unwrap_err()
            .contains("neither")
    );
}

#[test]
fn latency_runs_are_overlaid_with_latency_runs_only() {
    let latency = |id: &str| {
        format!(
            r#"{{"id":"{id}","kind":"latency","created_ms":1764684187000,"origin":"browser",
            "role":"client","peer":"pc:5210","protocol":"tcp","direction":"bidir",
            "status":"complete","bits_per_second":19000000.0,"link_enabled":true}}"#
        )
    };
    let test_line = &LIST[1..LIST.find("},").unwrap() + 1];
    let body = format!("[{},{},{test_line}]", latency("L1"), latency("L2"));
    let mut h = History {
        entries: parse_list(&body).unwrap(),
        ..History::default()
    };
    let r = row(&h.entries[0], 0);
    assert_eq!(r.what, "Latency under load");
    assert_eq!(r.throughput, "best 19.0 Mbit/s");
    h.toggle("L1");
    h.toggle("aa11");
    assert_eq!(
        h.picked,
        ["L1"],
        "a test does not join a latency comparison"
    );
    h.toggle("L2");
    assert_eq!(h.picked, ["L1", "L2"]);
    h.comparing = true;
    assert_eq!(h.missing(), ["L1", "L2"]);
    assert!(h.latency_overlay(0).is_none(), "not fetched yet");
    let run = |target: &str| perfpeer_shared::latency::LatencyResult {
        target: target.into(),
        started_unix_ms: 0,
        settings: perfpeer_shared::latency::LoadSettings {
            idle_seconds: 1.0,
            load_seconds: 1.0,
            streams: 1,
            congestion: None,
            udp_bits_per_second: None,
            load_bits_per_second: None,
            probe_interval_ms: 10.0,
            probe_bytes: 64,
            probe_bits_per_second: 0.0,
            probe_tos: None,
        },
        baseline: perfpeer_shared::latency::Baseline::IdleMinimum,
        phases: vec![],
        probes: vec![],
        throughput: vec![],
        error: None,
    };
    h.keep_latency("L2", run("after"));
    h.keep_latency("L1", run("before"));
    let runs = h.latency_overlay(0).unwrap();
    assert_eq!(
        runs.iter()
            .map(|(_, r)| r.target.as_str())
            .collect::<Vec<_>>(),
        ["before", "after"],
        "in the order picked"
    );
    assert!(
        h.overlay(0).is_none(),
        "no throughput lines for latency runs"
    );
    h.forget("L1");
    assert_eq!(h.loaded_latency.len(), 1);
}
