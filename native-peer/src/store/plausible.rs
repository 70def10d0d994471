//! Checks a far side's final report before it is kept: the far end stores what an anonymous
//! client says about its own end, so counts, times and stream ids must fit the test that ran,
//! its intervals are bounded, and its free text is cut to its bounds, before any of it reaches
//! the disk or a result page.

use std::time::Duration;

use perfpeer_shared::report::{SideReport, TestResult};

/// Most intervals kept per side: a day at one per second.
pub(super) const MAX_INTERVALS: usize = 86_400;
/// Fastest rate believed of one test (bytes per second): 1.6 Tbit/s, far beyond any link
/// perfpeer measures, and loopback.
const MAX_BYTES_PER_SECOND: f64 = 200e9;
/// Slack on the test's length for start-up, drain and clock differences.
const TIME_SLACK: Duration = Duration::from_secs(30);

/// Longest host name kept, in bytes: a DNS name's 253, and then some.
pub(super) const MAX_HOSTNAME: usize = 255;
/// Longest system line kept (`uname -srvm` is about 100 bytes).
pub(super) const MAX_SYSTEM: usize = 256;
/// Longest version kept.
pub(super) const MAX_VERSION: usize = 64;
/// Longest congestion control name kept (the kernel's TCP_CA_NAME_MAX, 16).
pub(super) const MAX_CONGESTION: usize = 16;
/// Longest socket address kept (`[v6%scope]:port`).
pub(super) const MAX_ADDRESS: usize = 64;
/// Most CCIDs kept of a DCCP stream's list (the kernel knows 2 and 3).
pub(super) const MAX_CCIDS: usize = 8;

/// Longest interface name kept (the kernel's IFNAMSIZ less its NUL).
pub(super) const MAX_IFACE: usize = 15;
/// Longest station address kept (`aa:bb:cc:dd:ee:ff`).
pub(super) const MAX_STATION: usize = 17;
/// Most receive chains kept of a Wi-Fi reading (802.11 has at most 8 streams).
pub(super) const MAX_CHAINS: usize = 8;

/// Cuts `text` to at most `max` bytes on a character boundary, ending with `…` when cut.
fn cut(text: &mut String, max: usize) {
    const MARK: char = '…';
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(MARK.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push(MARK);
}

/// Cuts every free-text field of a far side's report to its bound (host name, system line,
/// version, congestion control, socket addresses, DCCP's CCID lists, the Wi-Fi link's names
/// and lists).
pub(super) fn cut_free_text(remote: &mut SideReport) {
    cut(&mut remote.host.hostname, MAX_HOSTNAME);
    cut(&mut remote.host.system, MAX_SYSTEM);
    cut(&mut remote.host.version, MAX_VERSION);
    if let Some(cc) = remote.congestion_used.as_mut() {
        cut(cc, MAX_CONGESTION);
    }
    for socket in &mut remote.sockets {
        cut(&mut socket.local, MAX_ADDRESS);
        cut(&mut socket.remote, MAX_ADDRESS);
        if let Some(dccp) = socket.dccp.as_mut() {
            dccp.available_ccids.truncate(MAX_CCIDS);
        }
    }
    for sample in remote.intervals.iter_mut().filter_map(|i| i.wifi.as_mut()) {
        cut(&mut sample.iface, MAX_IFACE);
        cut(&mut sample.station, MAX_STATION);
        sample.chain_signal_dbm.truncate(MAX_CHAINS);
    }
}

/// Why `remote` does not fit `result`'s test, if it does not.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a count of intervals from a ratio of durations, non-negative and capped by MAX_INTERVALS"
)]
pub(super) fn remote_problem(result: &TestResult, remote: &SideReport) -> Option<String> {
    let spec = &result.spec;
    let longest = spec
        .expected_duration()
        .unwrap_or(Duration::from_secs(86_400))
        + TIME_SLACK;
    let interval = spec.interval.max(Duration::from_millis(100));
    let max_intervals =
        ((longest.as_secs_f64() / interval.as_secs_f64()).ceil() as usize + 5).min(MAX_INTERVALS);
    if remote.intervals.len() > max_intervals {
        return Some(format!(
            "{} intervals for a test of at most {max_intervals}",
            remote.intervals.len()
        ));
    }
    let ids: Vec<u32> = spec.stream_plan().into_iter().map(|(id, _)| id).collect();
    if remote.streams.len() > ids.len() || remote.sockets.len() > ids.len() {
        return Some(format!(
            "{} streams and {} sockets for a test of {}",
            remote.streams.len(),
            remote.sockets.len(),
            ids.len()
        ));
    }
    for s in &remote.streams {
        if !ids.contains(&s.id) {
            return Some(format!("a stream id {} the test does not have", s.id));
        }
        if s.duration > longest {
            return Some(format!(
                "a stream that ran {:.0} s",
                s.duration.as_secs_f64()
            ));
        }
        if s.bytes as f64 > MAX_BYTES_PER_SECOND * longest.as_secs_f64() {
            return Some(format!(
                "{} bytes in at most {} s",
                s.bytes,
                longest.as_secs()
            ));
        }
    }
    let times_ok = remote
        .intervals
        .iter()
        .all(|i| i.end >= i.start && i.end <= longest && i.streams.len() <= ids.len());
    (!times_ok).then(|| "intervals outside the test".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::report::{IntervalReport, PeerRole, TestStatus};
    use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};

    fn result_of(seconds: u64) -> TestResult {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.end = EndCondition::Time {
            duration: Duration::from_secs(seconds),
        };
        TestResult {
            id: "t".into(),
            spec,
            started_unix_ms: 0,
            server_addr: String::new(),
            local: SideReport::empty(PeerRole::Server, Default::default()),
            remote: None,
            group_receivers: Vec::new(),
            working_load: None,
            status: TestStatus::Complete,
        }
    }

    fn interval(at: u64) -> IntervalReport {
        IntervalReport {
            start: Duration::from_secs(at),
            end: Duration::from_secs(at + 1),
            omitted: false,
            streams: Vec::new(),
            wifi: None,
        }
    }

    #[test]
    fn a_report_that_fits_the_test_passes() {
        let result = result_of(10);
        let mut remote = SideReport::empty(PeerRole::Client, Default::default());
        remote.intervals = (0..10).map(interval).collect();
        assert_eq!(remote_problem(&result, &remote), None);
    }

    #[test]
    fn free_text_is_cut_to_its_bounds() {
        use perfpeer_shared::report::{HostInfo, SocketInfo};
        let mut remote = SideReport::empty(
            PeerRole::Client,
            HostInfo {
                hostname: "h".repeat(800_000),
                system: "é".repeat(1000),
                version: "0.1.0".into(),
            },
        );
        remote.congestion_used = Some("c".repeat(100));
        remote.sockets = vec![SocketInfo {
            id: 1,
            local: "a".repeat(10_000),
            remote: "127.0.0.1:5211".into(),
            dccp: Some(perfpeer_shared::dccp::DccpStreamInfo {
                available_ccids: vec![2; 100_000],
                ..Default::default()
            }),
        }];
        cut_free_text(&mut remote);
        assert_eq!(remote.host.hostname.len(), MAX_HOSTNAME);
        assert!(remote.host.hostname.ends_with('…'));
        assert!(remote.host.system.len() <= MAX_SYSTEM && remote.host.system.ends_with('…'));
        assert_eq!(remote.host.version, "0.1.0", "short text stays as it is");
        assert!(remote.congestion_used.as_ref().unwrap().len() <= MAX_CONGESTION);
        assert!(remote.sockets[0].local.len() <= MAX_ADDRESS);
        assert_eq!(remote.sockets[0].remote, "127.0.0.1:5211");
        let ccids = &remote.sockets[0].dccp.as_ref().unwrap().available_ccids;
        assert_eq!(ccids.len(), MAX_CCIDS);
        // More sockets than the test has streams is not a report of this test.
        let result = result_of(10);
        remote.sockets = vec![remote.sockets[0].clone(); 1000];
        assert!(
            remote_problem(&result, &remote)
                .unwrap()
                .contains("sockets")
        );
    }

    #[test]
    fn a_far_sides_wifi_names_and_chains_are_cut() {
        use perfpeer_shared::wifi::{LinkSample, Mode};
        let mut remote = SideReport::empty(PeerRole::Client, Default::default());
        let sample = LinkSample {
            iface: "w".repeat(100_000),
            mode: Mode::Ap,
            station: "s".repeat(1000),
            signal_dbm: Some(-30),
            signal_avg_dbm: None,
            chain_signal_dbm: vec![-30; 100_000],
            tx_rate: None,
            rx_rate: None,
            tx_packets: None,
            tx_retries: None,
            tx_failed: None,
            retries_percent: None,
            beacon_loss: None,
            expected_mbps: None,
            tx_airtime_us: None,
            rx_airtime_us: None,
            connected_s: None,
            channel: None,
        };
        let mut with_wifi = interval(0);
        with_wifi.wifi = Some(Box::new(sample.clone()));
        remote.intervals = vec![with_wifi];
        cut_free_text(&mut remote);
        let kept = remote.intervals[0].wifi.as_ref().unwrap();
        assert!(kept.iface.len() <= MAX_IFACE && kept.station.len() <= MAX_STATION);
        assert_eq!(kept.chain_signal_dbm.len(), MAX_CHAINS);
    }

    #[test]
    fn too_many_intervals_or_times_outside_the_test_are_refused() {
        let result = result_of(10);
        let mut remote = SideReport::empty(PeerRole::Client, Default::default());
        remote.intervals = (0..5000).map(|_| interval(0)).collect();
        assert!(
            remote_problem(&result, &remote)
                .unwrap()
                .contains("intervals")
        );
        remote.intervals = vec![interval(100_000)];
        assert!(remote_problem(&result, &remote).is_some());
    }
}
