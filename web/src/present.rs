//! Words and figures the screens show, computed from the shared result model and printed with the
//! shared unit formatters (iperf3's layout), so the page reads like the CLI. DOM-free: returns
//! strings and small structs; no statistic is computed here that `perfpeer_shared::report` has.

use perfpeer_shared::control::ErrorCode;
use perfpeer_shared::report::{PeerRole, Sending, TestResult, TestStatus};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_shared::units::{format_bytes, format_rate};
use perfpeer_shared::verdict::{Check, Verdict};

/// A rate in the pages' one spelling: `941 Mbit/s` (the tool tabs keep their tools' own).
pub fn rate(bits_per_second: f64) -> String {
    format_rate(bits_per_second)
}

/// A byte count as iperf3 prints it: `1.10 GBytes`.
pub fn bytes(n: u64) -> String {
    format_bytes(n as f64).trim().to_string()
}

/// Escapes text for HTML element content and attribute values (shared with the server's pages).
pub use perfpeer_shared::format::markup::escape;

/// The access token in a URL fragment such as `#token=abc` (other `&`-separated keys ignored).
pub fn token_from_fragment(hash: &str) -> Option<String> {
    hash.trim_start_matches('#')
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= 256)
        .map(str::to_string)
}

/// A one-line description of a spec as run from this peer: `TCP TX (this peer sends), 10 s, 1
/// stream, length 128 KBytes`.
pub fn describe_spec(spec: &TestSpec) -> String {
    describe_spec_at(spec, PeerRole::Client)
}

/// A test's description from the side of this peer, which is its `role`: the far end of a
/// TX test receives.
pub fn describe_spec_at(spec: &TestSpec, role: PeerRole) -> String {
    let end = match spec.end {
        EndCondition::Time { duration } => format!("{} s", duration.as_secs_f64()),
        EndCondition::Bytes { bytes: n } => bytes(n),
    };
    let streams = match spec.streams {
        1 => "1 stream".to_string(),
        n => format!("{n} streams"),
    };
    let direction = Sending::seen_from(spec.direction, role).words();
    let mut text = format!(
        "{} {direction}, {end}, {streams}, length {}",
        transport(spec),
        bytes(u64::from(spec.len))
    );
    if spec.protocol != Protocol::Tcp
        && let Some(r) = spec.bitrate.filter(|r| r.0 > 0)
    {
        text.push_str(&format!(", {}", rate(r.0 as f64)));
    }
    text
}

/// `TCP`, `UDP`, `DCCP CCID 3`.
fn transport(spec: &TestSpec) -> String {
    match spec.dccp.and_then(|d| d.ccid) {
        Some(ccid) => format!("{} CCID {ccid}", spec.protocol.upper_name()),
        None => spec.protocol.upper_name().to_string(),
    }
}

/// A result's title from the side of the peer that measured or kept it: `TCP TX (this peer
/// sends), 10 s, … → pc:5210`, or for a test this peer was the far end of, `UDP RX (this peer
/// receives), … · started by laptop (192.168.1.5)`.
pub fn result_title(result: &TestResult) -> String {
    let what = describe_spec_at(&result.spec, result.local.role);
    match result.local.role {
        PeerRole::Client => format!("{what} → {}", result.server_addr),
        PeerRole::Server => format!("{what} · started by {}", result.server_addr),
    }
}

/// The one figure a result is read for: the rate each direction's receiver saw (the sender's
/// where no receiver reported), `TX 941 Mbit/s · RX 12.0 Mbit/s`, TX being what the peer
/// that measured or kept the result sent; request/response tests give their transactions per
/// second.
pub fn headline(result: &TestResult) -> String {
    if let Some((rr, seconds)) = result.rr_final() {
        return format!("{:.0} transactions/s", rr.transactions_per_second(seconds));
    }
    let parts: Vec<String> = result
        .flows()
        .iter()
        .filter_map(|f| {
            let dir = if result.sent_from_here(f) { "TX" } else { "RX" };
            f.received
                .as_ref()
                .or(f.sent.as_ref())
                .map(|t| (dir, rate(t.bits_per_second)))
        })
        .map(|(dir, r)| format!("{dir} {r}"))
        .collect();
    let text = match parts.as_slice() {
        [one] => one.clone(),
        _ => parts.join(" · "),
    };
    match &result.status {
        TestStatus::Complete => text,
        TestStatus::Cancelled => format!("{text} (cancelled)"),
        TestStatus::Partial { .. } => format!("{text} (partial)"),
    }
}

/// A one-line description of a sweep: `UDP packet-size sweep, TX (this peer sends), 2 s per
/// size, 10.0 Mbit/s, 8 sizes 16–1420 B`.
pub fn describe_sweep(spec: &TestSpec, sizes: &[u32]) -> String {
    let mut text = format!(
        "{} packet-size sweep, {}",
        transport(spec),
        Sending::seen_from(spec.direction, PeerRole::Client).words()
    );
    if let Some(t) = spec.total_time() {
        text.push_str(&format!(", {} s per size", t.as_secs_f64()));
    }
    if let Some(r) = spec.bitrate.filter(|r| r.0 > 0) {
        text.push_str(&format!(", {}", rate(r.0 as f64)));
    }
    match sizes {
        [] => {}
        [one] => text.push_str(&format!(", {one} B")),
        [first, .., last] => text.push_str(&format!(", {} sizes {first}–{last} B", sizes.len())),
    }
    text
}

/// The one big figure of a latency run: the worst loaded phase's latency added over idle and
/// its RPM, e.g. `+232 ms added under upload · 259 RPM`.
pub fn latency_headline(r: &perfpeer_shared::latency::LatencyResult) -> String {
    match r.worst_loaded() {
        Some(w) => match (w.added_rtt, w.rpm) {
            (Some(added), Some(rpm)) => {
                use perfpeer_shared::format::latency::{added_ms_text, rpm_text};
                format!(
                    "{} ms added under {} · {} RPM",
                    added_ms_text(added),
                    w.phase.name(),
                    rpm_text(rpm)
                )
            }
            _ => format!("{} phase: no round trip measured", w.phase.name()),
        },
        None => "No loaded phase ran".into(),
    }
}

/// The Result screen's verdict: its badge and the lines under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictCard {
    /// PASS, FAIL or COULD NOT JUDGE: the outcome in words, not in colour alone.
    pub badge: &'static str,
    /// The outcome's name (`pass`, `fail`, `unjudged`), the card's style.
    pub tone: &'static str,
    /// The checks that tell the outcome, in the CLI's words (`Check::words`): the failed ones
    /// of a fail, else every one; then why nothing could be judged, if so.
    pub lines: Vec<String>,
}

/// The card of `verdict`, the model's ([`TestResult::verdict`], `Verdict::of_latency`).
pub fn verdict_card(verdict: &Verdict) -> VerdictCard {
    VerdictCard {
        badge: verdict.outcome.word(),
        tone: verdict.outcome.name(),
        lines: verdict
            .telling()
            .map(Check::words)
            .chain(verdict.reason.clone())
            .collect(),
    }
}

/// One line of the result's summary card. `key` is stable (`flow0-received`, …) for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Stable identifier.
    pub key: String,
    /// What it is.
    pub label: String,
    /// The figure as shown.
    pub value: String,
}

fn row(key: impl Into<String>, label: impl Into<String>, value: impl Into<String>) -> SummaryRow {
    SummaryRow {
        key: key.into(),
        label: label.into(),
        value: value.into(),
    }
}

/// The summary card, from the side of the peer that measured or kept the result ("this peer",
/// its `local` report): status, then per direction (TX: this peer sent) the sender's and
/// receiver's rates, bytes and retransmits or loss/jitter, then each end's Wi-Fi link where a
/// radio carried the test, then CPU and service demand at this peer and the other.
pub fn summary(result: &TestResult) -> Vec<SummaryRow> {
    let mut rows = vec![match &result.status {
        TestStatus::Complete => row("status", "Status", "complete"),
        TestStatus::Partial { reason } => row("status", "Status", format!("partial: {reason}")),
        TestStatus::Cancelled => row("status", "Status", "cancelled"),
    }];
    for (i, flow) in result.flows().iter().enumerate() {
        let dir = if result.sent_from_here(flow) {
            "TX"
        } else {
            "RX"
        };
        if let Some(sent) = &flow.sent {
            rows.push(row(
                format!("flow{i}-sent"),
                format!("{dir} sender"),
                rate(sent.bits_per_second),
            ));
            if let Some(r) = sent.retransmits {
                rows.push(row(
                    format!("flow{i}-retr"),
                    format!("{dir} retransmits"),
                    r.to_string(),
                ));
            }
            if let Some(rtt) = sent.tcp_rtt {
                rows.push(row(
                    format!("flow{i}-rtt"),
                    format!("{dir} TCP RTT"),
                    perfpeer_shared::format::html::rtt_words(rtt),
                ));
            }
        }
        if let Some(received) = &flow.received {
            rows.push(row(
                format!("flow{i}-received"),
                format!("{dir} receiver"),
                rate(received.bits_per_second),
            ));
            rows.push(row(
                format!("flow{i}-bytes"),
                format!("{dir} received"),
                bytes(received.bytes),
            ));
            if let Some(u) = &received.udp_rx {
                rows.push(row(
                    format!("flow{i}-loss"),
                    format!("{dir} lost"),
                    format!("{}/{} ({:.2}%)", u.lost, u.expected(), u.lost_percent()),
                ));
                rows.push(row(
                    format!("flow{i}-jitter"),
                    format!("{dir} jitter"),
                    format!("{:.3} ms", u.jitter_ms),
                ));
            }
            // Datagrams' or (TCP) writes' one-way delays, their bins, a video test's frames.
            if let Some(d) = received.one_way() {
                let of = if received.udp_rx.is_some() {
                    ""
                } else {
                    " of writes"
                };
                rows.push(row(
                    format!("flow{i}-one-way"),
                    format!("{dir} one-way delay{of}"),
                    d.words(),
                ));
                if let Some(h) = &d.histogram {
                    rows.push(row(
                        format!("flow{i}-histogram"),
                        format!("{dir} delay histogram"),
                        h.words(),
                    ));
                }
            }
            if let Some(f) = received.frames() {
                rows.push(row(
                    format!("flow{i}-frames"),
                    format!("{dir} video frames"),
                    f.words(),
                ));
            }
        }
    }
    // A multicast test: the group, then each receiver's figures (or why it has none).
    if let Some(group) = result.spec.multicast {
        rows.push(row("group", "Multicast group", group.words()));
        for (i, (peer, words)) in result.group_receiver_words().into_iter().enumerate() {
            rows.push(row(
                format!("group{i}"),
                format!("Received by {peer}"),
                words,
            ));
        }
    }
    // A bounce-back test's working load (`--bounceback-congest`): its rates beside the bursts.
    if let Some(load) = &result.working_load {
        rows.push(row("working-load", "Working load", load.words()));
    }
    // Each radio that carried the test: signal, PHY rate, retries (the result page's words).
    for (side, key, name) in [
        (Some(&result.local), "wifi-this", "this peer"),
        (result.remote.as_ref(), "wifi-other", "other peer"),
    ] {
        if let Some(link) = side.and_then(perfpeer_shared::report::SideReport::link_summary) {
            rows.push(row(
                key,
                format!("Wi-Fi {name}"),
                perfpeer_shared::format::html::link_words(&link),
            ));
        }
    }
    let this = result.local.role;
    for (side, end, name) in [
        (Some(&result.local), this, "this peer"),
        (result.remote.as_ref(), this.other(), "other peer"),
    ] {
        let Some(side) = side else { continue };
        let key = if end == this { "this" } else { "other" };
        let cpu = side.cpu;
        rows.push(row(
            format!("cpu-{key}"),
            format!("CPU {name}"),
            format!(
                "{:.1}% host ({} CPUs), process {:.1}% of one CPU",
                cpu.host_total_percent(),
                cpu.cpus,
                cpu.process_total_percent()
            ),
        ));
        if let Some(sd) = result.service_demand(end) {
            rows.push(row(
                format!("sd-{key}"),
                format!("Service demand {name}"),
                sd.words(),
            ));
        }
    }
    rows
}

/// An error in plain words: what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What happened.
    pub title: String,
    /// The peer's own words.
    pub detail: String,
    /// What to do.
    pub hint: String,
}

/// Plain words for an `error` message from the peer.
pub fn explain(code: ErrorCode, message: &str, target: Option<&str>) -> Notice {
    let target = target.unwrap_or("the other peer");
    let (title, hint) = match code {
        ErrorCode::Unreachable => (
            format!("Could not reach {target}"),
            format!(
                "Check the address and port, that perfpeer serve runs there, and that no firewall \
                 blocks its control port {} or its data port (5211 unless it was started with \
                 --data-port).",
                crate::form::host_and_port(target).1
            ),
        ),
        ErrorCode::Unauthorized => (
            "This peer did not accept the token".into(),
            "Open the URL the peer printed at start (it ends in #token=…) or type the token it printed.".into(),
        ),
        ErrorCode::OverLimit => (
            "The peer refused the test: over its limits".into(),
            "Wait for running tests to finish, or ask for a shorter or slower test.".into(),
        ),
        ErrorCode::InvalidSpec => (
            "The test settings were refused".into(),
            "Change the settings and start again.".into(),
        ),
        ErrorCode::PeerLost => (
            "The other peer went away during the test".into(),
            "Check that it is still running and reachable, then run the test again.".into(),
        ),
        ErrorCode::DataPlane => (
            "A data stream failed".into(),
            "Check that the data port (5211 by default) is reachable between the peers.".into(),
        ),
        ErrorCode::VersionMismatch => (
            "This page and the peer speak different protocol versions".into(),
            "Reload the page; if that does not help, use the same perfpeer version on both peers.".into(),
        ),
        ErrorCode::UnknownTest => (
            "The test ended while the connection was down".into(),
            "Its result was not kept; run it again.".into(),
        ),
        _ => (
            "The peer reported a problem".into(),
            "Try again; if it persists, look at the peer's log.".into(),
        ),
    };
    Notice {
        title,
        detail: message.to_string(),
        hint,
    }
}

/// What the Peer screen (and the form's DCCP hint) says about DCCP: the CCIDs offered, or why
/// DCCP is unavailable.
pub fn dccp_support(d: &perfpeer_shared::dccp::DccpSupport) -> String {
    if !d.available {
        return format!(
            "not available: {}",
            d.reason
                .as_deref()
                .unwrap_or("this peer cannot open DCCP sockets")
        );
    }
    let ccids: Vec<String> = d.ccids.iter().map(|c| format!("CCID {c}")).collect();
    let family = if d.ipv6 { "IPv4 and IPv6" } else { "IPv4 only" };
    let offered = if ccids.is_empty() {
        "the kernel's default CCID".to_string()
    } else {
        ccids.join(", ")
    };
    format!("available ({offered}; {family})")
}

#[cfg(test)]
pub(crate) mod tests {

    #[test]
    fn sweeps_and_dccp_specs_read_plainly() {
        use perfpeer_shared::dccp::{DEFAULT_SERVICE, DccpSpec};
        use perfpeer_shared::spec::{Protocol, TestSpec};
        use perfpeer_shared::sweep::{SweepPoint, SweepResult};
        let mut spec = TestSpec::new(Protocol::Dccp);
        spec.dccp = Some(DccpSpec {
            service: DEFAULT_SERVICE,
            ccid: Some(3),
        });
        spec.end = perfpeer_shared::spec::EndCondition::Time {
            duration: std::time::Duration::from_secs(2),
        };
        spec.bitrate = None;
        assert!(
            super::describe_spec(&spec).starts_with("DCCP CCID 3 TX (this peer sends), 2 s"),
            "{}",
            super::describe_spec(&spec)
        );
        assert_eq!(
            super::describe_sweep(&spec, &[16, 32, 1420]),
            "DCCP CCID 3 packet-size sweep, TX (this peer sends), 2 s per size, 3 sizes 16–1420 B"
        );
        let mut ok = SweepPoint::failed(16, "");
        ok.error = None;
        ok.bits_per_second = 1e6;
        ok.packets_per_second = 7812.5;
        ok.packets = 15625;
        let result = SweepResult {
            protocol: Protocol::Dccp,
            ccid: Some(3),
            bitrate: None,
            seconds_per_size: 2.0,
            points: vec![ok, SweepPoint::failed(1420, "<too big>")],
        };
        let rows = perfpeer_shared::format::html::sweep_rows(&result.points);
        assert_eq!(rows.matches("<tr").count(), 2);
        assert!(
            rows.contains("1.00 Mbit/s") && (rows.contains(">7812<") || rows.contains(">7813<")),
            "{rows}"
        );
        assert!(rows.contains("failed: &lt;too big&gt;"), "escaped: {rows}");
    }

    #[test]
    fn dccp_line_names_the_ccids_or_the_reason() {
        let mut d = perfpeer_shared::dccp::DccpSupport {
            available: true,
            ccids: vec![2, 3],
            ipv6: true,
            reason: None,
        };
        assert_eq!(
            super::dccp_support(&d),
            "available (CCID 2, CCID 3; IPv4 and IPv6)"
        );
        d = perfpeer_shared::dccp::DccpSupport {
            available: false,
            ccids: vec![],
            ipv6: false,
            reason: Some("this kernel has no DCCP (removed from Linux in 6.16)".into()),
        };
        assert_eq!(
            super::dccp_support(&d),
            "not available: this kernel has no DCCP (removed from Linux in 6.16)"
        );
    }

    use super::*;
    use perfpeer_shared::format::layout::Layout;
    use perfpeer_shared::format::{iperf2, iperf3, ttcp};

    /// A 2-s TCP TX test, both ends' reports, built from JSON like the page receives it.
    pub(crate) fn tcp_result() -> TestResult {
        let side = |role: &str, stream_role: &str, tcp: bool| {
            serde_json::json!({
                "role": role,
                "host": { "hostname": role, "system": "Linux", "version": "0.1.0" },
                "sockets": [{ "id": 1, "local": "127.0.0.1:40000", "remote": "127.0.0.1:5211" }],
                "sndbuf_actual": null, "rcvbuf_actual": null, "tcp_mss": null,
                "congestion_used": null,
                "intervals": [
                    { "start": 0.0, "end": 1.0, "omitted": false, "streams": [
                        { "id": 1, "role": stream_role, "bytes": 125_000_000u64, "packets": null,
                          "tcp": if tcp { serde_json::json!({ "retransmits": 3, "snd_cwnd": 1, "rtt_us": 1, "rttvar_us": 1, "pmtu": 1500 }) } else { serde_json::Value::Null },
                          "udp_rx": null } ] },
                    { "start": 1.0, "end": 2.0, "omitted": false, "streams": [
                        { "id": 1, "role": stream_role, "bytes": 250_000_000u64, "packets": null,
                          "tcp": if tcp { serde_json::json!({ "retransmits": 4, "snd_cwnd": 1, "rtt_us": 1, "rttvar_us": 1, "pmtu": 1500 }) } else { serde_json::Value::Null },
                          "udp_rx": null } ] }
                ],
                "streams": [{ "id": 1, "role": stream_role, "bytes": 375_000_000u64, "duration": 2.0,
                              "packets": null,
                              "tcp": if tcp { serde_json::json!({ "retransmits": 7, "max_snd_cwnd": 1, "max_rtt_us": 1500, "min_rtt_us": 40, "mean_rtt_us": 120 }) } else { serde_json::Value::Null },
                              "udp_rx": null }],
                "cpu": { "elapsed": 2.0, "process_user_s": 0.1, "process_system_s": 0.3,
                         "host_user_percent": 5.0, "host_system_percent": 20.0, "cpus": 2 }
            })
        };
        serde_json::from_value(serde_json::json!({
            "id": "t1",
            "spec": TestSpec::new(Protocol::Tcp),
            "started_unix_ms": 0,
            "server_addr": "127.0.0.1:5210",
            "local": side("client", "sender", true),
            "remote": side("server", "receiver", false),
            "status": "complete"
        }))
        .expect("fixture parses")
    }

    /// One interval's Wi-Fi link: a VHT (160 MHz) station at `signal` dBm sending at `mbps`, 30 retries
    /// in 1000 packets.
    pub(crate) fn link_sample(signal: i8, mbps: f64) -> perfpeer_shared::wifi::LinkSample {
        serde_json::from_value(serde_json::json!({
            "iface": "wlan0", "mode": "station", "station": "02:00:00:00:00:01",
            "signal_dbm": signal,
            "tx_rate": { "kind": "vht", "mcs": 9, "nss": 2, "width_mhz": 160, "mbps": mbps },
            "tx_packets": 1000, "tx_retries": 30, "tx_failed": 0, "retries_percent": 3.0
        }))
        .expect("sample parses")
    }

    /// [`tcp_result`] over Wi-Fi: this peer's radio in both intervals (-50, then -54 dBm),
    /// and its summary.
    pub(crate) fn wifi_result() -> TestResult {
        let mut r = tcp_result();
        for (interval, signal) in r.local.intervals.iter_mut().zip([-50, -54]) {
            interval.wifi = Some(Box::new(link_sample(signal, 2882.4)));
        }
        r
    }

    #[test]
    fn the_summary_card_says_each_radios_link() {
        let rows = summary(&wifi_result());
        let wifi = rows
            .iter()
            .find(|r| r.key == "wifi-this")
            .expect("a Wi-Fi row");
        assert_eq!(wifi.label, "Wi-Fi this peer");
        assert_eq!(
            wifi.value,
            "wlan0 (station): signal -52 dBm median, PHY 2882.4 Mbit/s median, retries 3.0 %, \
             goodput 52 % of PHY"
        );
        assert!(rows.iter().all(|r| r.key != "wifi-other"), "no radio there");
        assert!(
            summary(&tcp_result())
                .iter()
                .all(|r| !r.key.starts_with("wifi"))
        );
    }

    #[test]
    fn the_verdict_card_says_the_outcome_in_words_and_what_tells_it() {
        use perfpeer_shared::verdict::Expectation;
        // tcp_result: 1.50 Gbit/s received, 7 retransmits.
        let expecting = |expect: &str| {
            let mut r = tcp_result();
            r.spec.expect = Expectation::parse_list(expect).unwrap();
            r
        };
        assert_eq!(tcp_result().verdict(), None, "no expectations, no card");
        let passed = verdict_card(&expecting("rx>=1G, retransmits<=10").verdict().unwrap());
        assert_eq!(
            passed,
            VerdictCard {
                badge: "PASS",
                tone: "pass",
                lines: vec!["rx>=1G: 1.50 Gbit/s".into(), "retransmits<=10: 7".into()],
            }
        );
        let failed = verdict_card(
            &expecting("rx>=1G, rx>=10G, retransmits<=0")
                .verdict()
                .unwrap(),
        );
        assert_eq!((failed.badge, failed.tone), ("FAIL", "fail"));
        assert_eq!(
            failed.lines,
            ["rx>=10G: 1.50 Gbit/s, 85.0 % short", "retransmits<=0: 7"],
            "the failed checks only"
        );
        let mut early = expecting("rx>=1G");
        early.status = TestStatus::Cancelled;
        let unjudged = verdict_card(&early.verdict().unwrap());
        assert_eq!(
            (unjudged.badge, unjudged.tone),
            ("COULD NOT JUDGE", "unjudged")
        );
        assert_eq!(
            unjudged.lines,
            ["rx>=1G: not measured", "the run ended early: cancelled"]
        );
    }

    #[test]
    fn units_read_like_iperf3() {
        assert_eq!(rate(941_000_000.0), "941 Mbit/s");
        assert_eq!(rate(1.5e9), "1.50 Gbit/s");
        assert_eq!(bytes(375_000_000), "358 MBytes");
    }

    #[test]
    fn the_token_comes_from_the_fragment() {
        assert_eq!(token_from_fragment("#token=abc123"), Some("abc123".into()));
        assert_eq!(token_from_fragment("#x=1&token=t"), Some("t".into()));
        assert_eq!(token_from_fragment("#token="), None);
        assert_eq!(token_from_fragment(""), None);
    }

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn the_summary_card_shows_the_models_figures() {
        let r = tcp_result();
        let rows = summary(&r);
        let value = |key: &str| {
            rows.iter()
                .find(|row| row.key == key)
                .map(|row| row.value.clone())
        };
        assert_eq!(value("status").as_deref(), Some("complete"));
        assert_eq!(value("flow0-sent").as_deref(), Some("1.50 Gbit/s"));
        assert_eq!(value("flow0-received").as_deref(), Some("1.50 Gbit/s"));
        assert_eq!(value("flow0-retr").as_deref(), Some("7"));
        // The sender's own RTT (TCP_INFO), measured and now shown.
        assert_eq!(
            value("flow0-rtt").as_deref(),
            Some("0.04 / 0.12 / 1.50 ms (min / mean / max)")
        );
        assert_eq!(value("flow0-bytes").as_deref(), Some("358 MBytes"));
        assert!(
            value("cpu-this")
                .unwrap()
                .starts_with("25.0% host (2 CPUs)")
        );
        assert!(value("sd-other").unwrap().ends_with("µs/KB"));
        // A trickle on a busy host: the figure would be the host's other work.
        let mut trickle = r.clone();
        trickle.local.cpu.process_user_s = 0.001;
        trickle.local.cpu.process_system_s = 0.001;
        let rows = summary(&trickle);
        let sd = rows.iter().find(|row| row.key == "sd-this").unwrap();
        assert!(
            sd.value.starts_with("not meaningful: this test was 0.2%"),
            "{sd:?}"
        );
        assert!(value("flow0-loss").is_none(), "no UDP figures for TCP");
    }

    #[test]
    fn an_unreachable_peer_s_hint_names_the_port_typed() {
        let hint = |t: &str| explain(ErrorCode::Unreachable, "", Some(t)).hint;
        assert!(hint("192.168.1.5:5310").contains("control port 5310"));
        assert!(hint("[fe80::1]:6000").contains("control port 6000"));
        assert!(hint("dut.lan").contains("control port 5210"));
        assert!(hint("fe80::1").contains("control port 5210"));
    }

    #[test]
    fn a_result_kept_by_the_far_end_is_told_from_its_side() {
        let mut kept_by_far_end = tcp_result();
        let client = kept_by_far_end.remote.take().unwrap();
        kept_by_far_end.remote = Some(std::mem::replace(&mut kept_by_far_end.local, client));
        kept_by_far_end.local.cpu.process_user_s = 0.1;
        kept_by_far_end.local.cpu.process_system_s = 0.1;
        kept_by_far_end.server_addr = "laptop (192.168.1.5)".into();
        let rows = summary(&kept_by_far_end);
        let label = |key: &str| rows.iter().find(|r| r.key == key).unwrap().label.clone();
        assert_eq!(label("flow0-sent"), "RX sender", "the other peer sent");
        assert_eq!(label("flow0-received"), "RX receiver");
        assert_eq!(label("cpu-this"), "CPU this peer");
        let cpu_this = rows.iter().find(|r| r.key == "cpu-this").unwrap();
        assert!(
            cpu_this.value.contains("process 10.0%"),
            "this peer's own CPU: {cpu_this:?}"
        );
        assert!(headline(&kept_by_far_end).starts_with("RX "));
        let title = result_title(&kept_by_far_end);
        assert!(
            title.starts_with("TCP RX (this peer receives)")
                && title.ends_with("started by laptop (192.168.1.5)"),
            "{title}"
        );
        assert!(result_title(&tcp_result()).starts_with("TCP TX (this peer sends)"));
    }

    #[test]
    fn the_iperf3_tab_is_the_clis_text() {
        let r = tcp_result();
        let text = Layout::Iperf3.text(&r);
        assert!(
            text.starts_with("Connecting to host 127.0.0.1, port 5210\n"),
            "{text}"
        );
        assert!(text.contains(&iperf3::text_summary(&r)));
        assert!(text.matches("sec").count() >= 4);
        let json: serde_json::Value = serde_json::from_str(&Layout::Json.text(&r)).unwrap();
        assert_eq!(json, iperf3::json(&r));
    }

    #[test]
    fn every_tab_is_the_shared_renderers_text() {
        let r = tcp_result();
        assert_eq!(Layout::Iperf2.text(&r), iperf2::text(&r));
        assert_eq!(Layout::Ttcp.text(&r), ttcp::text(&r));
        let netperf = Layout::Netperf.text(&r);
        assert!(netperf.starts_with("MIGRATED TCP STREAM TEST"), "{netperf}");
        assert!(
            netperf.contains(" to 127.0.0.1 (127.0.0.1) port 0 AF_INET"),
            "{netperf}"
        );
        let mut bidir = r.clone();
        bidir.spec.direction = perfpeer_shared::spec::Direction::Bidir;
        assert!(
            Layout::Netperf
                .text(&bidir)
                .contains("no netperf equivalent")
        );
    }

    /// The page's dark theme gives every legend label its dark-background shade.
    #[test]
    fn the_stylesheet_has_every_dark_legend_colour() {
        let css = include_str!("../static/style.css");
        for (light, dark) in perfpeer_shared::format::chart::LEGEND_TEXT {
            assert!(
                css.contains(&format!(
                    ".chart .legend[style*='{light}'] {{ fill: {dark} !important; }}"
                )),
                "{light} → {dark}"
            );
        }
    }

    #[test]
    fn errors_say_what_to_do() {
        let n = explain(ErrorCode::Unreachable, "refused", Some("pc:5210"));
        assert_eq!(n.title, "Could not reach pc:5210");
        assert_eq!(n.detail, "refused");
        assert!(n.hint.contains("firewall"));
        for code in [
            ErrorCode::OverLimit,
            ErrorCode::PeerLost,
            ErrorCode::Internal,
        ] {
            assert!(!explain(code, "x", None).hint.is_empty());
        }
    }
}
