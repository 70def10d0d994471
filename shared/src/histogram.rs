//! Latency histograms in bins of one fixed width (iperf 2's `--histograms`): what a receiver is
//! asked to keep ([`HistogramSpec`]), the counting as delays arrive ([`DelayBins`]), and the
//! counts a report carries ([`DelayHistogram`]) with the figures read from them (the 5 / 95 /
//! 99.7 % bins, outliers). Pure data and arithmetic: no clock, no I/O.

use serde::{Deserialize, Serialize};

/// Most bins a histogram may have: 40 KB of counters per receiving stream at most, charged to
/// the peer's memory budget.
pub const MAX_BINS: u32 = 10_000;
/// Widest bin: 1 s.
pub const MAX_BIN_WIDTH_US: u32 = 1_000_000;

/// Bins asked for: `bins` bins of `bin_width_us` each, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramSpec {
    /// Width of a bin, µs.
    pub bin_width_us: u32,
    /// How many bins; delays past the last are counted as above it.
    pub bins: u32,
}

impl HistogramSpec {
    /// iperf 2.1.8's default (its server prints it so): 10 000 bins of 100 µs (1 s).
    pub const DEFAULT: HistogramSpec = HistogramSpec {
        bin_width_us: 100,
        bins: 10_000,
    };

    /// Whether the spec is within bounds (a width of 1 µs to 1 s, 1 to [`MAX_BINS`] bins).
    pub fn is_valid(&self) -> bool {
        (1..=MAX_BIN_WIDTH_US).contains(&self.bin_width_us) && (1..=MAX_BINS).contains(&self.bins)
    }

    /// Reads iperf 2's `--histograms` value, `WIDTH[u|m][,BINS]` (units µs unless `m`: ms), e.g.
    /// `100u,10000` or `1m`. BINS alone keeps the default width.
    pub fn parse(text: &str, default: HistogramSpec) -> Result<HistogramSpec, String> {
        let bad = || {
            format!(
                "'{text}': expected WIDTH[u|m][,BINS], e.g. 100u,10000 (a width of 1 µs to 1 s, 1 to {MAX_BINS} bins)"
            )
        };
        let (width, bins) = match text.split_once(',') {
            Some((w, b)) => (w.trim(), Some(b.trim())),
            None => (text.trim(), None),
        };
        let mut spec = default;
        if !width.is_empty() {
            let (digits, scale) = if let Some(d) = width.strip_suffix('m') {
                (d, 1000)
            } else {
                (width.strip_suffix('u').unwrap_or(width), 1)
            };
            let n: u32 = digits.parse().map_err(|_| bad())?;
            spec.bin_width_us = n.checked_mul(scale).ok_or_else(bad)?;
        }
        if let Some(b) = bins {
            // iperf 2 also takes the confidence bounds after the count; they are fixed here.
            let count = b.split(',').next().unwrap_or_default();
            spec.bins = count.parse().map_err(|_| bad())?;
        }
        if spec.is_valid() {
            Ok(spec)
        } else {
            Err(bad())
        }
    }
}

/// Counting delays into bins as they arrive: the counters grow to the highest bin reached, never
/// past the spec's count. O(1) per delay after the growth.
#[derive(Debug, Clone)]
pub struct DelayBins {
    spec: HistogramSpec,
    counts: Vec<u32>,
    below: u64,
    above: u64,
}

impl DelayBins {
    /// Empty bins of `spec` (nothing allocated before the first delay).
    pub fn new(spec: HistogramSpec) -> DelayBins {
        DelayBins {
            spec,
            counts: Vec::new(),
            below: 0,
            above: 0,
        }
    }

    /// Counts one delay of `delay_s` seconds.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a non-negative, finite delay over a width of ≥ 1 µs: the index is compared with the bin count before use"
    )]
    pub fn record(&mut self, delay_s: f64) {
        if delay_s.is_nan() || delay_s < 0.0 {
            self.below += 1;
            return;
        }
        let bin = (delay_s * 1e6 / f64::from(self.spec.bin_width_us)).floor();
        if bin >= f64::from(self.spec.bins) {
            self.above += 1;
            return;
        }
        let bin = bin as usize;
        if bin >= self.counts.len() {
            self.counts.resize(bin + 1, 0);
        }
        self.counts[bin] = self.counts[bin].saturating_add(1);
    }

    /// The counts so far.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "bin indices are below MAX_BINS"
    )]
    pub fn finish(&self) -> DelayHistogram {
        DelayHistogram {
            bin_width_us: self.spec.bin_width_us,
            bins: self.spec.bins,
            counts: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u32, u64::from(*c)))
                .collect(),
            below: self.below,
            above: self.above,
        }
    }
}

/// Counts of delays in bins of one width: bin `i` holds the delays from `i × width` up to (not
/// including) `(i + 1) × width`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelayHistogram {
    /// Width of a bin, µs.
    pub bin_width_us: u32,
    /// Bins there were.
    pub bins: u32,
    /// `[bin, count]` of every bin that counted something, in bin order.
    pub counts: Vec<(u32, u64)>,
    /// Delays below zero (the sender's clock ahead of the receiver's).
    pub below: u64,
    /// Delays past the last bin.
    pub above: u64,
}

/// What iperf 2 prints after a histogram's bins: the bins (1-based, as it numbers them) where
/// the lower and upper points and 99.7 % fall, and the outliers past 3 interquartile-like ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinPoints {
    /// Bin (1-based) where more than `lower` percent of the delays are counted.
    pub lower: u32,
    /// Bin (1-based) where more than `upper` percent are counted.
    pub upper: u32,
    /// Bin (1-based) where more than 99.7 % are counted.
    pub p99_7: u32,
    /// Delays in bins past the 90 % bin plus three times the 10–90 % spread.
    pub outliers: u64,
}

impl DelayHistogram {
    /// Delays counted in a bin (without those below or above).
    pub fn in_bins(&self) -> u64 {
        self.counts.iter().map(|(_, c)| c).sum()
    }

    /// All delays counted.
    pub fn total(&self) -> u64 {
        self.in_bins() + self.below + self.above
    }

    /// Both histograms' counts, where their bins are the same; `None` where they differ.
    pub fn merged(&self, other: &DelayHistogram) -> Option<DelayHistogram> {
        if (self.bin_width_us, self.bins) != (other.bin_width_us, other.bins) {
            return None;
        }
        let mut counts = std::collections::BTreeMap::new();
        for (bin, count) in self.counts.iter().chain(&other.counts) {
            *counts.entry(*bin).or_insert(0) += count;
        }
        Some(DelayHistogram {
            counts: counts.into_iter().collect(),
            below: self.below + other.below,
            above: self.above + other.above,
            ..*self
        })
    }

    /// The bin numbers iperf 2 prints for percent points `lower` and `upper`, read as it reads
    /// them (over the delays in bins; a point never reached is the last bin).
    #[allow(clippy::cast_precision_loss, reason = "counts far below 2^53")]
    pub fn points(&self, lower: f64, upper: f64) -> BinPoints {
        let population = self.in_bins() as f64;
        let (mut running, mut points) = (
            0u64,
            BinPoints {
                lower: 0,
                upper: 0,
                p99_7: 0,
                outliers: 0,
            },
        );
        let (mut fence_lower, mut fence_upper, mut outside) = (0u32, 0u32, None::<u32>);
        for &(bin, count) in &self.counts {
            running += count;
            let share = running as f64 / population;
            let numbered = bin + 1;
            if points.lower == 0 && share > lower / 100.0 {
                points.lower = numbered;
            }
            if share < 0.1 {
                fence_lower = numbered;
            }
            if share < 0.9 {
                fence_upper = numbered;
            } else if let Some(fence) = outside {
                if bin > fence {
                    points.outliers += count;
                }
            } else {
                outside = Some(fence_upper + 3 * fence_upper.saturating_sub(fence_lower));
            }
            if points.upper == 0 && share > upper / 100.0 {
                points.upper = numbered;
            }
            if points.p99_7 == 0 && share > 0.997 {
                points.p99_7 = numbered;
            }
        }
        if points.upper == 0 {
            points.upper = self.bins;
        }
        if points.p99_7 == 0 {
            points.p99_7 = self.bins;
        }
        points
    }

    /// `1:3,2:10,7:1`: each bin that counted something (numbered from 1, as iperf 2 does: bin
    /// `n` ends at `n × width`) and its count.
    pub fn bins_text(&self) -> String {
        let mut text = String::new();
        for (i, (bin, count)) in self.counts.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!("{}:{count}", bin + 1));
        }
        text
    }

    /// `100 µs bins: 95 % ≤ 0.300 ms, 99.7 % ≤ 0.500 ms (bins 3 and 5 of 10000), 0 outliers`,
    /// with the delays below zero and past the last bin where there are any: a summary's line.
    pub fn words(&self) -> String {
        let p = self.points(5.0, 95.0);
        let edge_ms = |bin: u32| f64::from(bin) * f64::from(self.bin_width_us) / 1e3;
        let mut text = format!(
            "{} µs bins: 95 % ≤ {:.3} ms, 99.7 % ≤ {:.3} ms (bins {} and {} of {}), {} outliers",
            self.bin_width_us,
            edge_ms(p.upper),
            edge_ms(p.p99_7),
            p.upper,
            p.p99_7,
            self.bins,
            p.outliers
        );
        if self.below > 0 {
            text.push_str(&format!(", {} below zero", self.below));
        }
        if self.above > 0 {
            text.push_str(&format!(
                ", {} past {:.3} ms",
                self.above,
                edge_ms(self.bins)
            ));
        }
        text
    }

    /// The bins from 0 to the last that counted something, merged into at most `most` runs of
    /// equal width: `(start ms, end ms, count)` each, for a chart.
    pub fn grouped(&self, most: u32) -> Vec<(f64, f64, u64)> {
        let Some(&(last, _)) = self.counts.last() else {
            return Vec::new();
        };
        let span = last + 1;
        let per_group = span.div_ceil(most.max(1));
        let groups = span.div_ceil(per_group);
        let width_ms = f64::from(self.bin_width_us) / 1e3;
        let mut out: Vec<(f64, f64, u64)> = (0..groups)
            .map(|g| {
                let start = f64::from(g * per_group) * width_ms;
                (start, start + f64::from(per_group) * width_ms, 0)
            })
            .collect();
        for &(bin, count) in &self.counts {
            out[(bin / per_group) as usize].2 += count;
        }
        out
    }

    /// The width as iperf 2 prints it: `100us`, or `1ms` for whole milliseconds.
    pub fn width_text(&self) -> String {
        if self.bin_width_us.is_multiple_of(1000) {
            format!("{}ms", self.bin_width_us / 1000)
        } else {
            format!("{}us", self.bin_width_us)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(width: u32, bins: u32) -> HistogramSpec {
        HistogramSpec {
            bin_width_us: width,
            bins,
        }
    }

    #[test]
    fn delays_land_in_their_bins_and_past_the_ends() {
        let mut b = DelayBins::new(spec(100, 10));
        for d in [
            0.0, 0.000_099, 0.000_100, 0.000_250, 0.000_999, 0.001, 5.0, -0.000_001,
        ] {
            b.record(d);
        }
        let h = b.finish();
        assert_eq!(h.counts, vec![(0, 2), (1, 1), (2, 1), (9, 1)]);
        assert_eq!((h.below, h.above, h.total()), (1, 2, 8));
        assert_eq!(h.bins_text(), "1:2,2:1,3:1,10:1");
        assert_eq!(h.width_text(), "100us");
        assert!(spec(2000, 1).is_valid());
    }

    #[test]
    fn counters_grow_only_to_the_highest_bin_reached() {
        let mut b = DelayBins::new(HistogramSpec::DEFAULT);
        b.record(0.000_05);
        assert_eq!(b.counts.len(), 1);
        b.record(0.000_350);
        assert_eq!(b.counts.len(), 4);
        b.record(3.0);
        assert_eq!(
            b.counts.len(),
            4,
            "past the last bin: counted above, nothing grown"
        );
    }

    #[test]
    fn points_are_read_as_iperf2_reads_them() {
        // 100 delays: bins 1..=100 one each (numbered 1..=100).
        let mut b = DelayBins::new(spec(1000, 1000));
        for ms in 0..100 {
            b.record(f64::from(ms) / 1000.0 + 0.000_5);
        }
        let p = b.finish().points(5.0, 95.0);
        assert_eq!((p.lower, p.upper, p.p99_7), (6, 96, 100));
        assert_eq!(p.outliers, 0);
        // A far outlier past 90 % + 3 × (90 − 10) %.
        let mut b = DelayBins::new(spec(1000, 1000));
        for _ in 0..50 {
            b.record(0.0105);
        }
        for _ in 0..49 {
            b.record(0.0115);
        }
        b.record(0.900);
        let p = b.finish().points(5.0, 95.0);
        assert_eq!((p.lower, p.upper, p.p99_7, p.outliers), (11, 12, 901, 1));
    }

    #[test]
    fn the_iperf2_option_text_reads_and_bad_values_are_refused() {
        let d = HistogramSpec::DEFAULT;
        assert_eq!(HistogramSpec::parse("100u,10000", d), Ok(spec(100, 10_000)));
        assert_eq!(HistogramSpec::parse("1m", d), Ok(spec(1000, 10_000)));
        assert_eq!(HistogramSpec::parse("20,500,5,95", d), Ok(spec(20, 500)));
        assert_eq!(HistogramSpec::parse(",200", d), Ok(spec(100, 200)));
        for bad in ["0", "x", "1m,0", "1,10001", "5000000m", "2000m"] {
            assert!(HistogramSpec::parse(bad, d).is_err(), "{bad}");
        }
    }

    #[test]
    fn bins_group_into_a_chart_of_equal_runs() {
        let mut b = DelayBins::new(spec(100, 10_000));
        for d in [0.000_05, 0.000_15, 0.000_95, 0.001_05] {
            b.record(d);
        }
        // Bins 0..=10 (11 bins) in runs of 3: 4 runs.
        let g = b.finish().grouped(4);
        assert_eq!(g.len(), 4);
        assert_eq!(g.iter().map(|r| r.2).collect::<Vec<_>>(), vec![2, 0, 0, 2]);
        assert!(
            (g[1].0 - 0.3).abs() < 1e-9 && (g[3].1 - 1.2).abs() < 1e-9,
            "{g:?}"
        );
        assert!(DelayBins::new(spec(1, 1)).finish().grouped(10).is_empty());
    }

    #[test]
    fn histograms_of_the_same_bins_merge() {
        let mut a = DelayBins::new(spec(100, 10));
        let mut b = DelayBins::new(spec(100, 10));
        a.record(0.000_05);
        b.record(0.000_05);
        b.record(0.000_55);
        b.record(-1.0);
        let m = a.finish().merged(&b.finish()).unwrap();
        assert_eq!(m.counts, vec![(0, 2), (5, 1)]);
        assert_eq!(m.below, 1);
        assert!(
            a.finish()
                .merged(&DelayBins::new(spec(10, 10)).finish())
                .is_none()
        );
    }
}
