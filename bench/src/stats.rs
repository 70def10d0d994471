//! The statistics the runner computes from raw samples: medians, perfpeer/other ratios, and
//! pacing smoothness from arrival timestamps (achieved rate, largest back-to-back burst). Pure
//! functions: no processes, no clock.

/// Median of the finite values (mean of the middle two for an even count); `None` if none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// `ours / theirs`, or `None` when either is missing or `theirs` is zero.
pub fn ratio(ours: Option<f64>, theirs: Option<f64>) -> Option<f64> {
    match (ours, theirs) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => Some(a / b),
        _ => None,
    }
}

/// Pacing figures from the arrival times of one paced stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Smoothness {
    /// Datagrams seen.
    pub datagrams: usize,
    /// Achieved rate in bit/s over the middle 80 % of the datagrams: their payload (but the
    /// last one's) over the first→last arrival time.
    pub rate_bps: f64,
    /// Longest run of datagrams each arriving closer than `gap / 10` after the previous one (a
    /// datagram on its own is a run of 1).
    pub largest_burst: usize,
}

/// Achieved rate and largest burst. `arrivals` are (nanoseconds, payload bytes) in arrival
/// order; `nominal_gap_ns` is the spacing the target rate implies. `None` for fewer than two.
pub fn smoothness(arrivals: &[(u64, usize)], nominal_gap_ns: f64) -> Option<Smoothness> {
    if arrivals.len() < 2 {
        return None;
    }
    let threshold = nominal_gap_ns / 10.0;
    let (mut run, mut largest) = (1usize, 1usize);
    for w in arrivals.windows(2) {
        let gap = w[1].0.saturating_sub(w[0].0) as f64;
        if gap < threshold {
            run += 1;
            largest = largest.max(run);
        } else {
            run = 1;
        }
    }
    // The rate over the middle 80 % of the datagrams: start-up and end-of-test datagrams
    // (retransmitted fins, a first datagram before the schedule starts) do not skew it.
    let (lo, hi) = (arrivals.len() / 10, arrivals.len() - arrivals.len() / 10);
    let steady = &arrivals[lo..hi.max(lo + 2).min(arrivals.len())];
    let first = steady[0].0;
    let last = steady[steady.len() - 1].0;
    let span_s = last.saturating_sub(first) as f64 / 1e9;
    let bytes: usize = steady[..steady.len() - 1].iter().map(|a| a.1).sum();
    let rate_bps = if span_s > 0.0 {
        bytes as f64 * 8.0 / span_s
    } else {
        f64::INFINITY
    };
    Some(Smoothness {
        datagrams: arrivals.len(),
        rate_bps,
        largest_burst: largest,
    })
}

/// Nominal spacing in ns of `payload`-byte datagrams at `rate_bps`.
pub fn nominal_gap_ns(payload: usize, rate_bps: f64) -> f64 {
    payload as f64 * 8.0 / rate_bps * 1e9
}

/// Signed error of `achieved` against `target`, in percent.
pub fn error_percent(achieved: f64, target: f64) -> f64 {
    (achieved - target) / target * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0), "NaN is ignored");
    }

    #[test]
    fn ratio_needs_both_and_a_nonzero_divisor() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(None, Some(2.0)), None);
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
    }

    #[test]
    fn evenly_spaced_arrivals_have_no_burst_and_the_right_rate() {
        // 1400-byte payloads every 56 µs = 200 Mbit/s.
        let gap = nominal_gap_ns(1400, 200e6);
        assert!((gap - 56_000.0).abs() < 1e-6);
        let a: Vec<(u64, usize)> = (0..1000).map(|i| (i * 56_000, 1400)).collect();
        let s = smoothness(&a, gap).unwrap();
        assert_eq!(s.largest_burst, 1);
        assert!(
            error_percent(s.rate_bps, 200e6).abs() < 1e-9,
            "{}",
            s.rate_bps
        );
    }

    #[test]
    fn a_burst_per_tick_is_found() {
        // 18 datagrams 1 µs apart every 1 ms (a 1 ms pacing timer), same mean rate.
        let mut a = Vec::new();
        for tick in 0..50u64 {
            for k in 0..18u64 {
                a.push((tick * 1_000_000 + k * 1_000, 1400));
            }
        }
        let s = smoothness(&a, nominal_gap_ns(1400, 200e6)).unwrap();
        assert_eq!(s.largest_burst, 18);
        assert_eq!(s.datagrams, 900);
        // A late straggler (a retransmitted fin) does not change the steady rate.
        let mut d: Vec<(u64, usize)> = (0..100).map(|i| (i * 56_000, 1400)).collect();
        d.push((100 * 56_000 + 50_000_000, 1400));
        let r = smoothness(&d, 56_000.0).unwrap().rate_bps;
        assert!(error_percent(r, 200e6).abs() < 1e-9, "{r}");
        // Gaps just at the threshold do not count as back to back.
        let b = [(0, 100), (5_600, 100), (11_200, 100)];
        assert_eq!(smoothness(&b, 56_000.0).unwrap().largest_burst, 1);
        let c = [(0, 100), (5_599, 100), (11_198, 100), (50_000, 100)];
        assert_eq!(smoothness(&c, 56_000.0).unwrap().largest_burst, 3);
        assert_eq!(smoothness(&c[..1], 56_000.0), None);
    }
}
