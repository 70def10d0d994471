//! Video-like traffic (iperf 2's `--isochronous=FPS:MEAN,STDEV`): frames at a fixed rate, each
//! of a size drawn around a mean, sent as a burst of datagrams; what a test asks for
//! ([`VideoSpec`], with the frame sizes it draws, [`FrameSizes`]) and what a receiver reports
//! ([`FrameFinal`]: frames whole, lost, late, and the frames' latency). Pure data and
//! arithmetic: the engine sends and counts.

use serde::{Deserialize, Serialize};

use crate::one_way::OneWayFinal;
use crate::units::{BitRate, parse_rate};

/// Most frames a second.
pub const MAX_FPS: u32 = 1000;
/// A frame is never drawn larger than this many times the mean (the log-normal's long tail,
/// bounded: the traffic a test makes stays near what it asked for).
pub const MAX_FRAME_OVER_MEAN: f64 = 4.0;

/// Frames asked for: `fps` a second, their sizes log-normal around `mean` with `stdev` (both
/// as bit rates, iperf 2's way: 20 Mbit/s at 60 fps is frames of 41 667 bytes on average).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VideoSpec {
    /// Frames a second.
    pub fps: u32,
    /// Mean rate, bit/s (per stream).
    pub mean: BitRate,
    /// Standard deviation of the rate, bit/s (0: every frame the same size).
    pub stdev: BitRate,
}

impl VideoSpec {
    /// iperf 2.1's default: 60 frames a second, 20 Mbit/s, all frames alike.
    pub const DEFAULT: VideoSpec = VideoSpec {
        fps: 60,
        mean: BitRate(20_000_000),
        stdev: BitRate(0),
    };

    /// Reads iperf 2's `--isochronous` value, `FPS[:MEAN[,STDEV]]` (rates like 20m, 100M), e.g.
    /// `60:20m,5m`; what is left out keeps the default's.
    pub fn parse(text: &str) -> Result<VideoSpec, String> {
        let bad = |why: &str| {
            format!(
                "'{text}': {why}; expected FPS[:MEAN[,STDEV]], e.g. 60:20m,5m (1 to {MAX_FPS} frames a second, a mean rate above 0)"
            )
        };
        let mut spec = VideoSpec::DEFAULT;
        let (fps, rates) = match text.split_once(':') {
            Some((f, r)) => (f, Some(r)),
            None => (text, None),
        };
        if !fps.trim().is_empty() {
            spec.fps = fps.trim().parse().map_err(|_| bad("not a frame rate"))?;
        }
        if let Some(rates) = rates {
            let (mean, stdev) = match rates.split_once(',') {
                Some((m, s)) => (m, Some(s)),
                None => (rates, None),
            };
            spec.mean = parse_rate(mean.trim()).map_err(|e| bad(&e.to_string()))?;
            if let Some(s) = stdev {
                spec.stdev = parse_rate(s.trim()).map_err(|e| bad(&e.to_string()))?;
            }
        }
        if spec.is_valid() {
            Ok(spec)
        } else {
            Err(bad("out of range"))
        }
    }

    /// 1 to [`MAX_FPS`] frames a second, a mean above 0.
    pub fn is_valid(&self) -> bool {
        (1..=MAX_FPS).contains(&self.fps) && self.mean.0 > 0
    }

    /// Time between frames, seconds.
    pub fn period_s(&self) -> f64 {
        1.0 / f64::from(self.fps)
    }

    /// Mean frame size in bytes (per stream of `streams`, which share the rate).
    pub fn mean_frame_bytes(&self, streams: u16) -> f64 {
        self.mean.bytes_per_sec() / f64::from(self.fps) / f64::from(streams.max(1))
    }

    /// `60 fps, 20 Mbit/s ± 5 Mbit/s (frames of 41 667 bytes on average)`.
    pub fn words(&self) -> String {
        let stdev = if self.stdev.0 > 0 {
            format!(
                " ± {}",
                crate::units::format_rate(self.stdev.0 as f64).trim()
            )
        } else {
            String::new()
        };
        format!(
            "{} fps, {}{stdev} (frames of {:.0} bytes on average)",
            self.fps,
            crate::units::format_rate(self.mean.0 as f64).trim(),
            self.mean_frame_bytes(1)
        )
    }
}

/// Frame sizes drawn from a log-normal distribution with the spec's mean and standard deviation
/// (in bytes), capped at [`MAX_FRAME_OVER_MEAN`] × the mean; a small xorshift generator seeded
/// by the caller (the figures need no cryptographic randomness).
#[derive(Debug, Clone)]
pub struct FrameSizes {
    mean: f64,
    mu: f64,
    sigma: f64,
    state: u64,
}

impl FrameSizes {
    /// Sizes for one stream of `streams` under `spec`, from `seed`.
    pub fn new(spec: &VideoSpec, streams: u16, seed: u64) -> FrameSizes {
        let mean = spec.mean_frame_bytes(streams).max(1.0);
        let sd = spec.stdev.bytes_per_sec() / f64::from(spec.fps) / f64::from(streams.max(1));
        let sigma2 = (1.0 + (sd / mean).powi(2)).ln();
        FrameSizes {
            mean,
            mu: mean.ln() - sigma2 / 2.0,
            sigma: sigma2.sqrt(),
            state: seed | 1,
        }
    }

    fn next_unit(&mut self) -> f64 {
        // xorshift64*: 53 bits of the product as a float in (0, 1].
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let bits = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (bits as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// The next frame's size in bytes (at least 1).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive size capped at a few times the mean frame"
    )]
    pub fn next_bytes(&mut self) -> u64 {
        let size = if self.sigma == 0.0 {
            self.mean
        } else {
            // Box–Muller: one standard normal from two uniforms.
            let (u1, u2) = (self.next_unit(), self.next_unit());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (self.mu + self.sigma * z).exp()
        };
        size.min(self.mean * MAX_FRAME_OVER_MEAN).round().max(1.0) as u64
    }
}

/// Frames a receiver saw over the whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameFinal {
    /// Frames that arrived whole.
    pub whole: u64,
    /// Frames with a datagram missing, or never seen (a gap in the frame numbers).
    pub lost: u64,
    /// Whole frames whose last datagram arrived more than a frame period after the frame's
    /// first datagram was sent: they missed their slot at that frame rate.
    pub late: u64,
    /// The period they were judged by, ms.
    pub period_ms: f64,
    /// Frame latency: the frame's first datagram sent (the sender's clock) to its last one
    /// received (ours), over the whole frames.
    pub latency: Option<OneWayFinal>,
}

impl FrameFinal {
    /// Frames the sender started that this receiver knows of.
    pub fn frames(&self) -> u64 {
        self.whole + self.lost
    }

    /// Several streams' frames together.
    pub fn combine(parts: &[&FrameFinal]) -> Option<FrameFinal> {
        let first = parts.first()?;
        let latencies: Vec<OneWayFinal> = parts.iter().filter_map(|p| p.latency.clone()).collect();
        Some(FrameFinal {
            whole: parts.iter().map(|p| p.whole).sum(),
            lost: parts.iter().map(|p| p.lost).sum(),
            late: parts.iter().map(|p| p.late).sum(),
            period_ms: first.period_ms,
            latency: OneWayFinal::combine(&latencies),
        })
    }

    /// `598 whole, 2 lost, 5 late (> 16.667 ms); latency 1.234 ms mean (…)`: a summary's line.
    pub fn words(&self) -> String {
        let latency = self
            .latency
            .as_ref()
            .map_or_else(String::new, |l| format!("; latency {}", l.words()));
        format!(
            "{} whole, {} lost, {} late (> {:.3} ms){latency}",
            self.whole, self.lost, self.late, self.period_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_iperf2_option_text_reads_and_bad_values_are_refused() {
        assert_eq!(VideoSpec::parse("60:20m,0"), Ok(VideoSpec::DEFAULT));
        let v = VideoSpec::parse("30:100m,10m").unwrap();
        assert_eq!((v.fps, v.mean.0, v.stdev.0), (30, 100_000_000, 10_000_000));
        assert_eq!(
            VideoSpec::parse("24").unwrap().mean,
            VideoSpec::DEFAULT.mean
        );
        for bad in ["0", "1001", "x", "60:0", "60:abc", "60:20m,x"] {
            assert!(VideoSpec::parse(bad).is_err(), "{bad}");
        }
        assert!((VideoSpec::DEFAULT.mean_frame_bytes(1) - 41_666.67).abs() < 0.01);
        assert!((VideoSpec::DEFAULT.period_s() - 1.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn frame_sizes_have_the_asked_mean_and_spread() {
        let fixed = VideoSpec::DEFAULT;
        let mut sizes = FrameSizes::new(&fixed, 1, 7);
        assert!((0..100).all(|_| sizes.next_bytes() == 41_667));
        let spread = VideoSpec::parse("60:20m,5m").unwrap();
        let mut sizes = FrameSizes::new(&spread, 1, 42);
        let n = 20_000;
        let drawn: Vec<f64> = (0..n).map(|_| sizes.next_bytes() as f64).collect();
        let mean = drawn.iter().sum::<f64>() / f64::from(n);
        let sd = (drawn.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / f64::from(n - 1)).sqrt();
        // Mean 41 667 bytes, stdev 10 417, to sampling error (and the cap, far in the tail).
        assert!((mean - 41_667.0).abs() < 41_667.0 * 0.02, "mean {mean}");
        assert!((sd - 10_417.0).abs() < 10_417.0 * 0.05, "stdev {sd}");
        assert!(
            drawn
                .iter()
                .all(|d| (1.0..=41_667.0 * MAX_FRAME_OVER_MEAN + 1.0).contains(d))
        );
        // Two streams share the rate.
        let mut half = FrameSizes::new(&fixed, 2, 7);
        assert_eq!(half.next_bytes(), 20_833);
    }

    #[test]
    fn frames_of_streams_add_up() {
        let a = FrameFinal {
            whole: 10,
            lost: 1,
            late: 2,
            period_ms: 16.667,
            latency: None,
        };
        let b = FrameFinal {
            whole: 5,
            ..a.clone()
        };
        let sum = FrameFinal::combine(&[&a, &b]).unwrap();
        assert_eq!(
            (sum.whole, sum.lost, sum.late, sum.frames()),
            (15, 2, 4, 17)
        );
        assert!(
            sum.words()
                .starts_with("15 whole, 2 lost, 4 late (> 16.667 ms)"),
            "{}",
            sum.words()
        );
    }
}
