//! Request/response results (`perfpeer test --rr`, netperf's TCP_RR, iperf2's bounceback): a
//! round-trip-time histogram the engine fills, and the per-stream final that goes into the
//! report. Pure data and arithmetic: no clock, no sockets (the engine measures, renderers read).

use serde::{Deserialize, Serialize};

/// Values below this are counted in buckets 1 ns wide.
const LINEAR: u64 = 64;
/// Sub-buckets per power of two above [`LINEAR`]: 32 gives at most 1/32 ≈ 3 % relative error.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Bucket count: the linear part plus 32 sub-buckets for each power of two from 2^6 to 2^63.
#[allow(
    clippy::cast_possible_truncation,
    reason = "64 and 32: small constants"
)]
const BUCKETS: usize = LINEAR as usize + (64 - 6) * SUB as usize;

/// A log-linear histogram of round-trip times in nanoseconds (bucket width ≤ 1/32 of the value),
/// fixed size, so recording never allocates. Percentiles report a bucket's upper bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttHistogram {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for RttHistogram {
    fn default() -> Self {
        RttHistogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "bucket indices are below BUCKETS (1920) and exponents below 64"
)]
fn bucket_of(ns: u64) -> usize {
    if ns < LINEAR {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros(); // ≥ 6
    let sub = (ns >> (exp - SUB_BITS)) & (SUB - 1);
    LINEAR as usize + (exp as usize - 6) * SUB as usize + sub as usize
}

/// The largest value that falls into bucket `b`.
#[allow(
    clippy::cast_possible_truncation,
    reason = "b is a bucket index below BUCKETS (1920): its exponent and sub-bucket are small"
)]
fn bucket_upper(b: usize) -> u64 {
    if b < LINEAR as usize {
        return b as u64;
    }
    let k = b - LINEAR as usize;
    let exp = (k / SUB as usize) as u32 + 6;
    let sub = (k % SUB as usize) as u64;
    let width = 1u64 << (exp - SUB_BITS);
    let low = (1u64 << exp) + sub * width;
    low.saturating_add(width - 1)
}

impl RttHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one round trip of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket_of(ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Round trips recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value `v` such that at least `p` percent of the recorded values are ≤ `v`
    /// (to bucket precision, never above the true maximum); `None` when empty.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the rank is a non-negative count no larger than the sample count (p is clamped to 0..=100)"
    )]
    pub fn percentile_ns(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * self.count as f64).ceil() as u64;
        let rank = rank.max(1);
        let mut seen = 0u64;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_upper(b).min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// The summary that goes into a report.
    pub fn summary(&self) -> Option<RttSummary> {
        if self.count == 0 {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(RttSummary {
            min_us: us(self.min_ns),
            mean_us: (self.sum_ns / u128::from(self.count)) as f64 / 1000.0,
            p50_us: us(self.percentile_ns(50.0)?),
            p90_us: us(self.percentile_ns(90.0)?),
            p99_us: us(self.percentile_ns(99.0)?),
            max_us: us(self.max_ns),
        })
    }
}

/// Round-trip time statistics in microseconds (percentiles to ~3 % precision).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RttSummary {
    /// Fastest round trip.
    pub min_us: f64,
    /// Mean round trip.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Slowest round trip.
    pub max_us: f64,
}

/// One request/response stream over the whole test, at the end that sent the requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RrFinal {
    /// Completed transactions (a request sent and its whole response read).
    pub transactions: u64,
    /// Bytes per request.
    pub request_len: u32,
    /// Bytes per response.
    pub response_len: u32,
    /// Round trips measured from the request's write to the end of its response's read.
    pub rtt: Option<RttSummary>,
}

impl RrFinal {
    /// Transactions per second over `seconds`.
    pub fn transactions_per_second(&self, seconds: f64) -> f64 {
        if seconds > 0.0 {
            self.transactions as f64 / seconds
        } else {
            0.0
        }
    }

    /// Round trips a second at the mean round trip (iperf 2's bounce-back "rps": what one
    /// transaction after another would reach), `None` without a round trip.
    pub fn requests_per_second_at_mean(&self) -> Option<f64> {
        self.rtt
            .filter(|r| r.mean_us > 0.0)
            .map(|r| 1e6 / r.mean_us)
    }

    /// Microseconds per transaction over `seconds` (netperf's "round trip latency"), `None`
    /// without a transaction.
    pub fn us_per_transaction(&self, seconds: f64) -> Option<f64> {
        (self.transactions > 0).then(|| seconds * 1e6 / self.transactions as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_contain_their_values() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            100,
            1000,
            4095,
            4096,
            1 << 40,
            u64::MAX,
        ] {
            let b = bucket_of(v);
            assert!(b >= last, "{v}");
            assert!(bucket_upper(b) >= v, "{v} above its bucket");
            if b > 0 {
                assert!(bucket_upper(b - 1) < v, "{v} fits a lower bucket");
            }
            last = b;
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = RttHistogram::new();
        assert_eq!(h.percentile_ns(50.0), None);
        assert_eq!(h.summary(), None);
        // 1..=1000 µs, one each.
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.percentile_ns(50.0).unwrap() as f64;
        let p99 = h.percentile_ns(99.0).unwrap() as f64;
        assert!((p50 / 500_000.0 - 1.0).abs() < 0.035, "{p50}");
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.035, "{p99}");
        let s = h.summary().unwrap();
        assert_eq!((s.min_us, s.max_us), (1.0, 1000.0));
        assert!((s.mean_us - 500.5).abs() < 1e-9);
        assert_eq!(
            h.percentile_ns(100.0),
            Some(1_000_000),
            "capped at the true maximum"
        );
    }

    #[test]
    fn a_slow_tail_shows_in_p99_not_p50() {
        let mut h = RttHistogram::new();
        for _ in 0..985 {
            h.record(10_000);
        }
        for _ in 0..15 {
            h.record(2_000_000);
        }
        let s = h.summary().unwrap();
        assert!(s.p50_us <= 10.4 && s.p50_us >= 10.0, "{s:?}");
        assert!(s.p99_us >= 1900.0, "{s:?}");
    }

    #[test]
    fn rate_over_time() {
        let f = RrFinal {
            transactions: 500,
            request_len: 1,
            response_len: 1,
            rtt: None,
        };
        assert_eq!(f.transactions_per_second(2.0), 250.0);
        assert_eq!(f.transactions_per_second(0.0), 0.0);
    }
}
