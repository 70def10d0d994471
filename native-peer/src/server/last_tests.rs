//! The last finished test per (far peer, protocol, direction), for `/metrics`' gauges: its
//! throughput, loss, jitter, loaded latency and verdict. At most [`MAX_SERIES`] such series are
//! kept; a new one beyond them takes the place of the one updated longest ago, so clients on a
//! hostile LAN, each its own far peer, cannot grow the scrape. No I/O, no clock: the caller
//! says when a test finished.

use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{Direction, Protocol, TestSpec};
use perfpeer_shared::verdict::{Metric, Outcome, test_figure};

/// Series kept at most (each is one far peer, protocol and direction).
pub(crate) const MAX_SERIES: usize = 32;
/// Longest far-peer label, in characters (an address is at most 45).
const MAX_PEER_LABEL: usize = 64;

/// Which series a finished test updates: all three are label values of `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SeriesKey {
    /// The far peer's address, without a port (a client's ephemeral port would make a
    /// series of every test).
    pub far_peer: String,
    /// `tcp`, `udp` or `dccp`.
    pub protocol: &'static str,
    /// From the client's side: `up` (the client sends), `down` or `bidir`.
    pub direction: &'static str,
}

impl SeriesKey {
    /// The series of a test of `spec` with the far peer `far_peer` (cut to 64 characters).
    pub(crate) fn new(far_peer: &str, spec: &TestSpec) -> SeriesKey {
        SeriesKey {
            far_peer: far_peer.chars().take(MAX_PEER_LABEL).collect(),
            protocol: match spec.protocol {
                Protocol::Tcp => "tcp",
                Protocol::Udp => "udp",
                Protocol::Dccp => "dccp",
            },
            direction: match spec.direction {
                Direction::Normal => "up",
                Direction::Reverse => "down",
                Direction::Bidir => "bidir",
            },
        }
    }
}

/// A finished test's figures, as the gauges show them (SI units; none where the test did not
/// measure it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct LastFigures {
    /// Received, bit/s, summed over the directions.
    pub bits_per_second: Option<f64>,
    /// Datagrams lost of those expected (UDP, DCCP), 0–1.
    pub loss_ratio: Option<f64>,
    /// RFC 3550 jitter of the worst direction, seconds.
    pub jitter_seconds: Option<f64>,
    /// TCP's smoothed round-trip time under the test's load (the senders' mean), seconds.
    pub loaded_rtt_seconds: Option<f64>,
    /// `pass`, `fail` or `unjudged`; none without expectations.
    pub verdict: Option<&'static str>,
    /// When it finished, Unix seconds.
    pub finished_unix_s: f64,
}

impl LastFigures {
    /// The figures of `result`, finished at `finished_unix_s`.
    pub(crate) fn of(result: &TestResult, finished_unix_s: f64) -> LastFigures {
        let loaded_rtt_us = result
            .flows()
            .iter()
            .filter_map(|f| f.sent.as_ref()?.tcp_rtt.map(|r| r.mean_us))
            .max();
        LastFigures {
            bits_per_second: test_figure(result, Metric::Rx),
            loss_ratio: test_figure(result, Metric::Loss).map(|percent| percent / 100.0),
            jitter_seconds: test_figure(result, Metric::Jitter).map(|ms| ms / 1e3),
            loaded_rtt_seconds: loaded_rtt_us.map(|us| f64::from(us) / 1e6),
            verdict: result.verdict().map(|v| match v.outcome {
                Outcome::Pass => "pass",
                Outcome::Fail => "fail",
                Outcome::Unjudged => "unjudged",
            }),
            finished_unix_s,
        }
    }
}

/// The kept series, each with the update that last touched it.
#[derive(Debug)]
pub(crate) struct LastTests {
    cap: usize,
    series: Vec<(SeriesKey, LastFigures, u64)>,
    updates: u64,
}

impl Default for LastTests {
    fn default() -> Self {
        LastTests::with_cap(MAX_SERIES)
    }
}

impl LastTests {
    /// At most `cap` series.
    pub(crate) fn with_cap(cap: usize) -> LastTests {
        LastTests {
            cap,
            series: Vec::with_capacity(cap),
            updates: 0,
        }
    }

    /// Sets `key`'s figures; a new key beyond the cap takes the place of the series updated
    /// longest ago.
    pub(crate) fn record(&mut self, key: SeriesKey, figures: LastFigures) {
        self.updates += 1;
        let update = self.updates;
        if let Some(kept) = self.series.iter_mut().find(|(k, _, _)| *k == key) {
            kept.1 = figures;
            kept.2 = update;
            return;
        }
        if self.series.len() >= self.cap {
            let oldest = self
                .series
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, _, at))| *at)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => {
                    self.series.swap_remove(i);
                }
                None => return,
            }
        }
        self.series.push((key, figures, update));
    }

    /// The kept series, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&SeriesKey, &LastFigures)> {
        self.series.iter().map(|(k, f, _)| (k, f))
    }

    /// How many series are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.series.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(peer: &str) -> SeriesKey {
        SeriesKey {
            far_peer: peer.into(),
            protocol: "tcp",
            direction: "up",
        }
    }

    fn at(seconds: f64) -> LastFigures {
        LastFigures {
            finished_unix_s: seconds,
            ..LastFigures::default()
        }
    }

    #[test]
    fn a_series_is_updated_in_place() {
        let mut last = LastTests::with_cap(2);
        last.record(key("10.0.0.1"), at(1.0));
        last.record(key("10.0.0.1"), at(2.0));
        assert_eq!(last.len(), 1);
        assert_eq!(last.iter().next().unwrap().1.finished_unix_s, 2.0);
    }

    #[test]
    fn beyond_the_cap_the_least_recently_updated_series_goes() {
        let mut last = LastTests::with_cap(3);
        last.record(key("a"), at(1.0));
        last.record(key("b"), at(2.0));
        last.record(key("c"), at(3.0));
        // `a` is updated again: `b` is now the oldest.
        last.record(key("a"), at(4.0));
        last.record(key("d"), at(5.0));
        let mut peers: Vec<&str> = last.iter().map(|(k, _)| k.far_peer.as_str()).collect();
        peers.sort_unstable();
        assert_eq!(peers, ["a", "c", "d"]);
    }

    #[test]
    fn a_thousand_far_ends_keep_to_the_cap() {
        let mut last = LastTests::default();
        for n in 0..1000u32 {
            let peer = std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string();
            last.record(key(&peer), at(f64::from(n)));
            assert!(last.len() <= MAX_SERIES);
        }
        assert_eq!(last.len(), MAX_SERIES);
        // The newest 32 are the ones kept.
        let mut kept: Vec<f64> = last.iter().map(|(_, f)| f.finished_unix_s).collect();
        kept.sort_by(f64::total_cmp);
        let newest: Vec<f64> = (968..1000).map(f64::from).collect();
        assert_eq!(kept, newest);
    }

    #[test]
    fn a_long_far_peer_is_cut() {
        let spec = TestSpec::new(Protocol::Udp);
        let long = "x".repeat(500);
        let key = SeriesKey::new(&long, &spec);
        assert_eq!(key.far_peer.chars().count(), MAX_PEER_LABEL);
        assert_eq!((key.protocol, key.direction), ("udp", "up"));
    }
}
