//! One-way delays (iperf 2's `--trip-times`): each datagram's (or TCP write's) send time, stamped
//! by the sender on its wall clock, read against the receiver's wall clock on arrival. The figures are only as
//! good as the agreement of the two clocks, so the result says which assumption they rest on.
//! Pure data and arithmetic: the receive loop feeds [`OneWayDelays`], reports carry
//! [`OneWayFinal`].

use serde::{Deserialize, Serialize};

use crate::histogram::{DelayBins, DelayHistogram, HistogramSpec};
use crate::rr::RttHistogram;

/// What the one-way figures assume about the two clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockBasis {
    /// Sender and receiver read the same clock (one host, or loopback).
    SameHost,
    /// Two hosts: the figures hold only as far as their clocks are synchronised (NTP, PTP).
    SynchronisedClocks,
}

impl ClockBasis {
    /// What figures measured with the far end at `peer` rest on: one clock when the peer is
    /// this host's loopback (an IPv4-mapped one too), two clocks otherwise.
    pub fn of_peer(peer: std::net::IpAddr) -> ClockBasis {
        if peer.to_canonical().is_loopback() {
            ClockBasis::SameHost
        } else {
            ClockBasis::SynchronisedClocks
        }
    }

    /// The words a report prints beside the figures.
    pub fn words(self) -> &'static str {
        match self {
            ClockBasis::SameHost => "one clock (same host)",
            ClockBasis::SynchronisedClocks => {
                "two clocks: as exact as their synchronisation (NTP/PTP)"
            }
        }
    }
}

/// The one-way delays of a stream over the whole test, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OneWayFinal {
    /// Delays measured (datagrams with a send time).
    pub count: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Sample standard deviation (0 below two samples).
    pub stdev_ms: f64,
    /// Percentiles, where the end that measured kept a histogram (a stock iperf 2 server's
    /// report has none).
    pub percentiles: Option<DelayPercentiles>,
    /// Delays below zero: the sender's clock is ahead of the receiver's.
    pub negative: u64,
    /// Sum of squared differences from the mean, s² (Welford's M2: iperf 2's report carries it).
    pub m2_s2: f64,
    /// What the figures assume about the clocks.
    pub clock: ClockBasis,
    /// Between two hosts: how far apart perfpeer found their clocks, from its own round trip
    /// on the control connection (it is in the figures, give or take).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset: Option<ClockOffset>,
    /// The delays in bins, where the test asked for them (`--histograms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<DelayHistogram>,
}

/// The server's wall clock minus the client's, as the client read it around one round trip of
/// the control connection: the server's time taken at some instant between the request and
/// the answer, so the offset is known to within half the round trip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Server's clock minus the client's, ms (positive: the server's is ahead).
    pub server_minus_client_ms: f64,
    /// Half the round trip it was read in, ms: the true offset is within this of the figure.
    pub within_ms: f64,
}

impl ClockOffset {
    /// From the client's wall-clock times (µs since 1970) of sending the request and reading
    /// the answer, and the server's time in the answer.
    #[allow(
        clippy::cast_precision_loss,
        reason = "µs since 1970 (about 2^51) fit an f64's 53-bit mantissa exactly"
    )]
    pub fn from_round_trip(sent_us: u64, server_us: u64, answered_us: u64) -> ClockOffset {
        let (sent, server, answered) = (sent_us as f64, server_us as f64, answered_us as f64);
        ClockOffset {
            server_minus_client_ms: (server - (sent + answered) / 2.0) / 1e3,
            within_ms: (answered - sent).abs() / 2.0 / 1e3,
        }
    }

    /// `the server's clock is 0.120 ms ahead of the client's (± 0.050 ms)`.
    pub fn words(&self) -> String {
        let (how, by) = if self.server_minus_client_ms >= 0.0 {
            ("ahead of", self.server_minus_client_ms)
        } else {
            ("behind", -self.server_minus_client_ms)
        };
        format!(
            "the server's clock is {by:.3} ms {how} the client's (± {:.3} ms)",
            self.within_ms
        )
    }
}

/// Percentiles of one-way delays, ms (iperf 2's histograms print 5 / 95 / 99.7 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayPercentiles {
    /// 5th percentile.
    pub p5_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99.7th percentile.
    pub p99_7_ms: f64,
}

impl OneWayFinal {
    /// The figures a stock iperf 2 server reports (count, min, mean, max and Welford's M2, s and
    /// s²): no percentiles, no count of negative delays.
    pub fn from_moments(
        count: u64,
        (min_s, mean_s, max_s): (f64, f64, f64),
        m2_s2: f64,
        clock: ClockBasis,
    ) -> OneWayFinal {
        OneWayFinal {
            count,
            min_ms: min_s * 1e3,
            mean_ms: mean_s * 1e3,
            max_ms: max_s * 1e3,
            stdev_ms: stdev_ms(count, m2_s2),
            percentiles: None,
            negative: 0,
            m2_s2,
            clock,
            clock_offset: None,
            histogram: None,
        }
    }
}

impl OneWayFinal {
    /// The figures of several streams together (Chan's parallel update of the mean and M2);
    /// percentiles only for a single stream (they do not add up), histograms summed where all
    /// have the same bins. `None` for no stream.
    pub fn combine(parts: &[OneWayFinal]) -> Option<OneWayFinal> {
        let (first, rest) = parts.split_first()?;
        let mut all = first.clone();
        for p in rest {
            let n = all.count + p.count;
            if n == 0 {
                continue;
            }
            let (na, nb) = (all.count as f64, p.count as f64);
            let (ma, mb) = (all.mean_ms / 1e3, p.mean_ms / 1e3);
            let delta = mb - ma;
            let mean = ma + delta * nb / n as f64;
            all.m2_s2 += p.m2_s2 + delta * delta * na * nb / n as f64;
            all.count = n;
            all.mean_ms = mean * 1e3;
            all.min_ms = all.min_ms.min(p.min_ms);
            all.max_ms = all.max_ms.max(p.max_ms);
            all.negative += p.negative;
            all.percentiles = None;
            all.histogram = match (&all.histogram, &p.histogram) {
                (Some(a), Some(b)) => a.merged(b),
                _ => None,
            };
            if p.clock == ClockBasis::SynchronisedClocks {
                all.clock = p.clock;
            }
        }
        all.stdev_ms = stdev_ms(all.count, all.m2_s2);
        Some(all)
    }
}

impl OneWayFinal {
    /// `0.035 ms mean (0.012–0.262), stdev 0.015, 95 % 0.058 — one clock (same host)`: the
    /// figures a summary shows in one line.
    pub fn words(&self) -> String {
        let p95 = self
            .percentiles
            .map_or_else(String::new, |p| format!(", 95 % {:.3}", p.p95_ms));
        let offset = self
            .clock_offset
            .map_or_else(String::new, |o| format!("; {}", o.words()));
        format!(
            "{:.3} ms mean ({:.3}–{:.3}), stdev {:.3}{p95} — {}{offset}",
            self.mean_ms,
            self.min_ms,
            self.max_ms,
            self.stdev_ms,
            self.clock.words()
        )
    }
}

/// Sample standard deviation in ms from Welford's M2 (s²); 0 below two samples.
fn stdev_ms(count: u64, m2_s2: f64) -> f64 {
    if count < 2 {
        0.0
    } else {
        (m2_s2.max(0.0) / (count - 1) as f64).sqrt() * 1e3
    }
}

/// Running one-way delay statistics of a stream: Welford's mean and variance, and a log-linear
/// histogram of the non-negative delays for the percentiles. O(1) per datagram, no allocation
/// after the first.
#[derive(Debug, Clone, Default)]
pub struct OneWayDelays {
    count: u64,
    mean_s: f64,
    m2_s2: f64,
    min_s: f64,
    max_s: f64,
    negative: u64,
    histogram: Option<RttHistogram>,
    bins: Option<DelayBins>,
}

impl OneWayDelays {
    /// Statistics that also count the delays in the bins of `spec`.
    pub fn with_histogram(spec: HistogramSpec) -> OneWayDelays {
        OneWayDelays {
            bins: Some(DelayBins::new(spec)),
            ..OneWayDelays::default()
        }
    }

    /// Counts one delay of `delay_s` seconds (negative when the clocks disagree).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a non-negative delay in seconds becomes whole nanoseconds; f64 → u64 saturates"
    )]
    pub fn record(&mut self, delay_s: f64) {
        if !delay_s.is_finite() {
            return;
        }
        if let Some(bins) = &mut self.bins {
            bins.record(delay_s);
        }
        if self.count == 0 {
            (self.min_s, self.max_s) = (delay_s, delay_s);
        } else {
            self.min_s = self.min_s.min(delay_s);
            self.max_s = self.max_s.max(delay_s);
        }
        self.count += 1;
        let d = delay_s - self.mean_s;
        self.mean_s += d / self.count as f64;
        self.m2_s2 += d * (delay_s - self.mean_s);
        if delay_s < 0.0 {
            self.negative += 1;
        } else {
            self.histogram
                .get_or_insert_with(RttHistogram::new)
                .record((delay_s * 1e9) as u64);
        }
    }

    /// Delays counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The figures so far (`None` before the first delay). Percentiles count the negative
    /// delays as the smallest.
    pub fn finish(&self, clock: ClockBasis) -> Option<OneWayFinal> {
        if self.count == 0 {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        let percentile = |p: f64| {
            let below = self.negative as f64 / self.count as f64 * 100.0;
            match &self.histogram {
                Some(h) if p > below => {
                    // The rank among the non-negative delays.
                    let within = (p - below) / (100.0 - below) * 100.0;
                    h.percentile_ns(within).map_or(self.max_s * 1e3, ms)
                }
                _ => self.min_s * 1e3,
            }
        };
        Some(OneWayFinal {
            count: self.count,
            min_ms: self.min_s * 1e3,
            mean_ms: self.mean_s * 1e3,
            max_ms: self.max_s * 1e3,
            stdev_ms: stdev_ms(self.count, self.m2_s2),
            percentiles: Some(DelayPercentiles {
                p5_ms: percentile(5.0),
                p50_ms: percentile(50.0),
                p95_ms: percentile(95.0),
                p99_7_ms: percentile(99.7),
            }),
            negative: self.negative,
            m2_s2: self.m2_s2,
            clock,
            clock_offset: None,
            histogram: self.bins.as_ref().map(DelayBins::finish),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_stdev_and_percentiles() {
        let mut d = OneWayDelays::default();
        assert_eq!(d.finish(ClockBasis::SameHost), None);
        // 1..=100 ms.
        for i in 1..=100 {
            d.record(f64::from(i) / 1000.0);
        }
        let f = d.finish(ClockBasis::SameHost).unwrap();
        assert_eq!(f.count, 100);
        assert!((f.mean_ms - 50.5).abs() < 1e-9);
        assert!((f.min_ms - 1.0).abs() < 1e-9 && (f.max_ms - 100.0).abs() < 1e-9);
        // Sample stdev of 1..=100 is 29.011.
        assert!((f.stdev_ms - 29.011_492).abs() < 1e-3, "{}", f.stdev_ms);
        // Percentiles to the histogram's 1/32 precision.
        let p = f.percentiles.unwrap();
        for (got, want) in [(p.p5_ms, 5.0), (p.p50_ms, 50.0), (p.p95_ms, 95.0)] {
            assert!((got - want).abs() / want < 0.04, "{got} vs {want}");
        }
        assert!(p.p99_7_ms <= 100.0 && p.p99_7_ms > 96.0);
        // The same moments as a stock server reports them give the same stdev.
        let stock = OneWayFinal::from_moments(100, (0.001, 0.0505, 0.1), f.m2_s2, f.clock);
        assert!((stock.stdev_ms - f.stdev_ms).abs() < 1e-9 && stock.percentiles.is_none());
    }

    #[test]
    fn streams_combine_as_one() {
        let (mut a, mut b, mut both) = (
            OneWayDelays::default(),
            OneWayDelays::default(),
            OneWayDelays::default(),
        );
        for i in 0..50 {
            let (x, y) = (f64::from(i) * 1e-4, 0.01 + f64::from(i) * 3e-4);
            a.record(x);
            b.record(y);
            both.record(x);
            both.record(y);
        }
        let clock = ClockBasis::SameHost;
        let parts = [a.finish(clock).unwrap(), b.finish(clock).unwrap()];
        let sum = OneWayFinal::combine(&parts).unwrap();
        let whole = both.finish(clock).unwrap();
        assert_eq!(sum.count, 100);
        for (x, y) in [
            (sum.mean_ms, whole.mean_ms),
            (sum.stdev_ms, whole.stdev_ms),
            (sum.min_ms, whole.min_ms),
            (sum.max_ms, whole.max_ms),
        ] {
            assert!((x - y).abs() < 1e-9, "{x} vs {y}");
        }
        assert!(sum.percentiles.is_none());
        assert!(
            sum.words().ends_with("— one clock (same host)") && !sum.words().contains("95 %"),
            "{}",
            sum.words()
        );
        assert!(parts[0].words().contains(", 95 % "), "{}", parts[0].words());
        assert_eq!(OneWayFinal::combine(&parts[..1]), Some(parts[0].clone()));
        assert_eq!(OneWayFinal::combine(&[]), None);
    }

    #[test]
    fn a_clock_offset_from_one_round_trip() {
        // Sent at 1 000 000 µs, answered at 1 000 400: the server said 1 000 700.
        let o = ClockOffset::from_round_trip(1_000_000, 1_000_700, 1_000_400);
        assert!((o.server_minus_client_ms - 0.5).abs() < 1e-9 && (o.within_ms - 0.2).abs() < 1e-9);
        assert_eq!(
            o.words(),
            "the server's clock is 0.500 ms ahead of the client's (± 0.200 ms)"
        );
        let behind = ClockOffset::from_round_trip(1_000_000, 999_000, 1_000_000);
        assert!(
            behind.words().contains("1.000 ms behind"),
            "{}",
            behind.words()
        );
    }

    #[test]
    fn negative_delays_are_counted_not_lost() {
        let mut d = OneWayDelays::default();
        for v in [-0.002, -0.001, 0.001, 0.002] {
            d.record(v);
        }
        d.record(f64::NAN);
        let f = d.finish(ClockBasis::SynchronisedClocks).unwrap();
        assert_eq!((f.count, f.negative), (4, 2));
        assert!((f.min_ms + 2.0).abs() < 1e-9 && f.mean_ms.abs() < 1e-9);
        let p = f.percentiles.unwrap();
        assert_eq!(
            p.p5_ms, f.min_ms,
            "the lowest ranks are the negative delays"
        );
        assert!(p.p95_ms > 1.9 && p.p95_ms <= 2.0);
    }
}
