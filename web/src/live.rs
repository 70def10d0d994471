//! The running screen's live numbers (current and average rate, retransmits or loss/jitter,
//! elapsed and remaining, each end's Wi-Fi link in its last interval) from the intervals
//! received so far, printed with the shared unit formatters. DOM-free; sums come from
//! `IntervalReport::sum`, the link's words from `format::wifi`.

use perfpeer_shared::report::{IntervalReport, StreamRole};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_shared::wifi::LinkSample;

use crate::present::{bytes, rate};

/// What the running screen shows, from the intervals received so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveFigures {
    /// Rate of the last interval (per direction for bidir).
    pub current: String,
    /// Rate over the measured (non-omitted) intervals so far.
    pub average: String,
    /// Retransmits (TCP) or loss and jitter (UDP), from the sending or receiving end.
    pub extra: String,
    /// Time measured so far.
    pub elapsed: String,
    /// Time (or bytes) left.
    pub remaining: String,
    /// 0.0–1.0 when the end is known.
    pub progress: f64,
    /// This peer's Wi-Fi link in its last interval, where a radio carries the test.
    pub link_here: Option<String>,
    /// The other peer's, in its last interval.
    pub link_far: Option<String>,
}

/// One interval's Wi-Fi link as `perfpeer test` prints it under the interval, named by its
/// interface and mode instead of the whole radio line: `wlan0 (AP): -52 dBm, tx VHT MCS 9 2SS
/// 80MHz 866.7 Mbit/s, retries 30 (3.0 %), failed 0`.
pub fn link_words(sample: &LinkSample) -> String {
    let line = perfpeer_shared::format::wifi::interval_line(sample, false);
    let figures = line.split_once(": ").map_or("", |(_, rest)| rest);
    format!("{} ({}): {figures}", sample.iface, sample.mode.word())
}

/// The link in `side`'s last interval, in words.
fn last_link(side: &[IntervalReport]) -> Option<String> {
    side.last()?.wifi.as_deref().map(link_words)
}

/// The client-side roles to show: TX is the client's senders, RX its receivers.
fn roles(spec: &TestSpec) -> Vec<(StreamRole, &'static str)> {
    let mut r = Vec::new();
    if spec.direction.client_sends() {
        r.push((StreamRole::Sender, "TX"));
    }
    if spec.direction.server_sends() {
        r.push((StreamRole::Receiver, "RX"));
    }
    r
}

fn join_dirs(parts: Vec<(&str, String)>) -> String {
    match parts.as_slice() {
        [(_, only)] => only.clone(),
        _ => parts
            .iter()
            .map(|(d, v)| format!("{d} {v}"))
            .collect::<Vec<_>>()
            .join(" · "),
    }
}

/// Live numbers for a running test from the client's and the server's intervals.
pub fn live(spec: &TestSpec, client: &[IntervalReport], server: &[IntervalReport]) -> LiveFigures {
    let Some(last) = client.last() else {
        return LiveFigures {
            current: "—".into(),
            average: "—".into(),
            extra: "—".into(),
            elapsed: "0 s".into(),
            remaining: "starting…".into(),
            progress: 0.0,
            link_here: None,
            link_far: last_link(server),
        };
    };
    let measured: Vec<&IntervalReport> = client.iter().filter(|r| !r.omitted).collect();
    let (mut current, mut average) = (Vec::new(), Vec::new());
    for (role, label) in roles(spec) {
        let now = last.sum(role).map_or(0.0, |s| s.bits_per_second);
        current.push((label, rate(now)));
        let moved: u64 = measured
            .iter()
            .filter_map(|r| r.sum(role))
            .map(|s| s.bytes)
            .sum();
        let secs: f64 = measured.iter().map(|r| r.seconds()).sum();
        average.push((
            label,
            rate(perfpeer_shared::report::bits_per_second(moved, secs)),
        ));
    }
    let elapsed = last.end.as_secs_f64();
    let (remaining, progress) = match spec.end {
        EndCondition::Time { duration } => {
            let total = (duration + spec.omit).as_secs_f64();
            let left = (total - elapsed).max(0.0);
            (format!("{left:.0} s"), (elapsed / total).min(1.0))
        }
        EndCondition::Bytes { bytes: budget } => {
            let sent = sent_so_far(client, server, spec);
            let left = budget.saturating_sub(sent);
            (
                format!("{} to send", bytes(left)),
                sent as f64 / budget as f64,
            )
        }
    };
    LiveFigures {
        current: join_dirs(current),
        average: join_dirs(average),
        extra: live_extra(spec, client, server),
        elapsed: format!("{elapsed:.0} s"),
        remaining,
        progress: progress.clamp(0.0, 1.0),
        link_here: last_link(client),
        link_far: last_link(server),
    }
}

/// Live numbers for a packet-size sweep: the running size's rates, and elapsed, remaining and
/// progress for the whole sweep (`done` of `sizes` sizes finished, each its spec's seconds), so
/// they agree with the progress bar instead of starting again at each size.
pub fn sweep_live(
    spec: &TestSpec,
    client: &[IntervalReport],
    server: &[IntervalReport],
    done: usize,
    sizes: usize,
) -> LiveFigures {
    let mut figures = live(spec, client, server);
    let per_size = spec.total_time().map_or(0.0, |t| t.as_secs_f64());
    let running = client
        .last()
        .map_or(0.0, |r| r.end.as_secs_f64().min(per_size));
    let total = per_size * sizes.max(1) as f64;
    let elapsed = (per_size * done as f64 + running).min(total);
    figures.elapsed = format!("{elapsed:.0} s");
    figures.remaining = format!("{:.0} s", (total - elapsed).max(0.0));
    figures.progress = if total > 0.0 {
        (elapsed / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    figures
}

/// Bytes sent so far by the busiest sending direction.
fn sent_so_far(client: &[IntervalReport], server: &[IntervalReport], spec: &TestSpec) -> u64 {
    let total = |side: &[IntervalReport]| -> u64 {
        side.iter()
            .filter_map(|r| r.sum(StreamRole::Sender))
            .map(|s| s.bytes)
            .sum()
    };
    let c = if spec.direction.client_sends() {
        total(client)
    } else {
        0
    };
    let s = if spec.direction.server_sends() {
        total(server)
    } else {
        0
    };
    c.max(s)
}

fn live_extra(spec: &TestSpec, client: &[IntervalReport], server: &[IntervalReport]) -> String {
    let mut parts = Vec::new();
    for (client_sends, label) in [(true, "TX"), (false, "RX")] {
        let flows = if client_sends {
            spec.direction.client_sends()
        } else {
            spec.direction.server_sends()
        };
        if !flows {
            continue;
        }
        let (tx_side, rx_side) = if client_sends {
            (client, server)
        } else {
            (server, client)
        };
        let text = match spec.protocol {
            Protocol::Tcp => {
                let retr: Option<u64> = tx_side
                    .iter()
                    .map(|r| r.sum(StreamRole::Sender).and_then(|s| s.retransmits))
                    .sum();
                match retr {
                    Some(n) => format!("{n} retransmits"),
                    None => "retransmits n/a".into(),
                }
            }
            // DCCP carries the same sequence numbers as UDP: loss and jitter.
            Protocol::Udp | Protocol::Dccp => {
                let rx: Vec<_> = rx_side
                    .iter()
                    .filter_map(|r| r.sum(StreamRole::Receiver).and_then(|s| s.udp_rx))
                    .collect();
                let lost: u64 = rx.iter().map(|s| s.lost).sum();
                let packets: u64 = rx.iter().map(|s| s.packets).sum();
                let jitter = rx.last().map_or(0.0, |s| s.jitter_ms);
                let pct = if packets > 0 {
                    lost as f64 * 100.0 / packets as f64
                } else {
                    0.0
                };
                format!("{lost}/{packets} lost ({pct:.2}%), jitter {jitter:.3} ms")
            }
        };
        parts.push((label, text));
    }
    join_dirs(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::report::{StreamInterval, UdpRxSample};
    use std::time::Duration;

    #[test]
    fn live_figures_follow_the_intervals() {
        let r = crate::present::tests::tcp_result();
        let spec = &r.spec;
        let empty = live(spec, &[], &[]);
        assert_eq!((empty.current.as_str(), empty.progress), ("—", 0.0));
        let client = &r.local.intervals;
        let l = live(spec, client, &r.remote.as_ref().unwrap().intervals);
        assert_eq!(l.current, "2.00 Gbit/s");
        assert_eq!(l.average, "1.50 Gbit/s");
        assert_eq!(l.extra, "7 retransmits");
        assert_eq!((l.elapsed.as_str(), l.remaining.as_str()), ("2 s", "8 s"));
        assert!((l.progress - 0.2).abs() < 1e-9);
    }

    #[test]
    fn each_ends_link_shows_as_its_interval_arrives() {
        let r = crate::present::tests::wifi_result();
        let mut far = r.remote.clone().unwrap().intervals;
        let l = live(&r.spec, &r.local.intervals, &far);
        assert_eq!(
            l.link_here.as_deref(),
            Some(
                "wlan0 (station): -54 dBm, tx VHT MCS 9 2SS 160MHz 2882.4 Mbit/s, retries 30 \
                 (3.0 %), failed 0"
            )
        );
        assert_eq!(l.link_far, None, "no radio there");
        // The far end's interval carries its own radio's reading.
        far[1].wifi = Some(Box::new(crate::present::tests::link_sample(-61, 1200.0)));
        let l = live(&r.spec, &[], &far);
        assert_eq!((l.current.as_str(), l.link_here), ("—", None));
        assert!(
            l.link_far
                .unwrap()
                .starts_with("wlan0 (station): -61 dBm, tx VHT")
        );
    }

    #[test]
    fn a_sweeps_time_counts_the_whole_sweep() {
        let r = crate::present::tests::tcp_result();
        // 10 s a size; 3 of 8 sizes done, the fourth 2 s in: 32 s of 80.
        let l = sweep_live(&r.spec, &r.local.intervals, &[], 3, 8);
        assert_eq!((l.elapsed.as_str(), l.remaining.as_str()), ("32 s", "48 s"));
        assert!((l.progress - 0.4).abs() < 1e-9);
        assert_eq!(l.current, "2.00 Gbit/s", "the running size's own rate");
        let none_yet = sweep_live(&r.spec, &[], &[], 0, 8);
        assert_eq!(
            (none_yet.elapsed.as_str(), none_yet.remaining.as_str()),
            ("0 s", "80 s")
        );
    }

    #[test]
    fn live_udp_loss_comes_from_the_receiving_end() {
        let mut spec = TestSpec::new(Protocol::Udp);
        spec.end = EndCondition::Bytes { bytes: 1000 };
        let at = |role, bytes, udp_rx| IntervalReport {
            start: Duration::ZERO,
            end: Duration::from_secs(1),
            omitted: false,
            streams: vec![StreamInterval {
                id: 1,
                role,
                bytes,
                packets: None,
                tcp: None,
                udp_rx,
                tfrc: None,
                probes: Vec::new(),
                writes: None,
            }],
            wifi: None,
        };
        let client = [at(StreamRole::Sender, 400, None)];
        let rx = UdpRxSample {
            packets: 100,
            lost: 5,
            out_of_order: 0,
            duplicates: 0,
            jitter_ms: 0.25,
            max_gap_ms: None,
        };
        let server = [at(StreamRole::Receiver, 380, Some(rx))];
        let l = live(&spec, &client, &server);
        assert_eq!(l.extra, "5/100 lost (5.00%), jitter 0.250 ms");
        assert_eq!(l.remaining, "600 Bytes to send");
        assert!((l.progress - 0.4).abs() < 1e-9);
    }
}
