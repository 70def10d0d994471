//! What a person asks of a latency-under-load run: [`LatencyRequest`] (the phases' lengths, the
//! load, the probe), its bounds and checks, and the specs of the probe's test and of each phase's
//! load.

use serde::{Deserialize, Serialize};

use super::Phase;

/// What a person asks for: the phases' lengths, the load and the probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRequest {
    /// Seconds of the idle phase (the baseline).
    pub idle_seconds: f64,
    /// Seconds of each loaded phase.
    pub load_seconds: f64,
    /// TCP load streams per direction.
    pub streams: u16,
    /// Congestion control of the load flows (`None`: the hosts' default).
    pub congestion: Option<String>,
    /// UDP load at this rate per direction besides the TCP load, bit/s.
    pub udp_bits_per_second: Option<u64>,
    /// The TCP load paced at this rate per direction (all its streams), bit/s; `None`: as fast
    /// as it goes (to find the latency at a given share of the link).
    #[serde(default)]
    pub load_bits_per_second: Option<u64>,
    /// Probe interval, ms.
    pub probe_interval_ms: f64,
    /// Probe request and answer payload, bytes.
    pub probe_bytes: u32,
    /// IP TOS / DSCP byte of the probe (e.g. 0xb8, EF), so a network's priority queue can be
    /// checked too.
    pub probe_tos: Option<u8>,
    /// What the run must show to pass (`p99<=40ms`, `added<=20ms`), judged when it ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<crate::verdict::Expectation>,
}

impl Default for LatencyRequest {
    fn default() -> Self {
        LatencyRequest {
            idle_seconds: 2.0,
            load_seconds: 5.0,
            streams: 4,
            congestion: None,
            udp_bits_per_second: None,
            load_bits_per_second: None,
            probe_interval_ms: 10.0,
            probe_bytes: 64,
            probe_tos: None,
            expect: Vec::new(),
        }
    }
}

/// Longest phase, seconds.
pub const MAX_PHASE_SECONDS: f64 = 60.0;
/// Most probes one run may send (their samples are all kept).
pub const MAX_PROBES: f64 = 30_000.0;
/// Largest probe payload: fits a 1500-byte MTU.
pub const MAX_PROBE_BYTES: u32 = 1400;
/// Most load streams per direction.
pub const MAX_LOAD_STREAMS: u16 = 32;

/// Why a [`LatencyRequest`] was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LatencyRequestError {
    /// A phase too short or too long.
    #[error("the {0} phase must last 1 to 60 seconds, got {1}")]
    PhaseLength(&'static str, f64),
    /// Streams out of range.
    #[error("load streams per direction must be 1 to {MAX_LOAD_STREAMS}, got {0}")]
    Streams(u16),
    /// Probe interval out of range.
    #[error("the probe interval must be 1 to 1000 ms, got {0}")]
    ProbeInterval(f64),
    /// Too many probes for the run's length.
    #[error("{0:.0} probes is too many for one run (at most 30000): probe less often")]
    TooManyProbes(f64),
    /// Probe payload out of range.
    #[error("the probe payload must be 40 to {MAX_PROBE_BYTES} bytes, got {0}")]
    ProbeBytes(u32),
    /// A load rate of zero.
    #[error("a load rate must be above 0")]
    UdpRate,
    /// An expectation on a figure a latency run does not measure, or too many.
    #[error("expectation {0}: a latency-under-load run is judged by p99 and added (at most 16)")]
    Expectation(String),
}

impl LatencyRequest {
    /// Seconds of all the phases together.
    pub fn total_seconds(&self) -> f64 {
        self.idle_seconds + 3.0 * self.load_seconds
    }

    /// Checks every field.
    pub fn check(&self) -> Result<(), LatencyRequestError> {
        let phase_ok = |s: f64| s.is_finite() && (1.0..=MAX_PHASE_SECONDS).contains(&s);
        if !phase_ok(self.idle_seconds) {
            return Err(LatencyRequestError::PhaseLength("idle", self.idle_seconds));
        }
        if !phase_ok(self.load_seconds) {
            return Err(LatencyRequestError::PhaseLength("load", self.load_seconds));
        }
        if self.streams == 0 || self.streams > MAX_LOAD_STREAMS {
            return Err(LatencyRequestError::Streams(self.streams));
        }
        let ms = self.probe_interval_ms;
        if !ms.is_finite() || !(1.0..=1000.0).contains(&ms) {
            return Err(LatencyRequestError::ProbeInterval(ms));
        }
        // The phases and the pauses between them (a few seconds at most).
        let probes = (self.total_seconds() + 10.0) * 1000.0 / ms;
        if probes > MAX_PROBES {
            return Err(LatencyRequestError::TooManyProbes(probes));
        }
        if !(crate::spec::MIN_PROBE_ANSWER..=MAX_PROBE_BYTES).contains(&self.probe_bytes) {
            return Err(LatencyRequestError::ProbeBytes(self.probe_bytes));
        }
        if self.udp_bits_per_second == Some(0) || self.load_bits_per_second == Some(0) {
            return Err(LatencyRequestError::UdpRate);
        }
        let probe = self.probe_spec(1.0);
        if let Some(e) = self
            .expect
            .iter()
            .find(|e| !e.metric.measured_by(&probe, true))
        {
            return Err(LatencyRequestError::Expectation(e.text().to_string()));
        }
        if self.expect.len() > crate::verdict::MAX_EXPECTATIONS {
            return Err(LatencyRequestError::Expectation(format!(
                "{} of them",
                self.expect.len()
            )));
        }
        Ok(())
    }

    /// The probe interval in µs (`check` bounded it to 1 ms – 1 s).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 1 000 – 1 000 000 µs first"
    )]
    pub fn probe_interval_us(&self) -> u32 {
        (self.probe_interval_ms * 1000.0)
            .round()
            .clamp(1000.0, 1_000_000.0) as u32
    }

    /// The probe's test: UDP request/response at the probe's interval, for `seconds` (the
    /// runner ends it when the phases are done).
    pub fn probe_spec(&self, seconds: f64) -> crate::spec::TestSpec {
        use crate::spec::{EndCondition, Protocol, RequestResponse, TestSpec};
        let mut spec = TestSpec::new(Protocol::Udp);
        spec.bitrate = None;
        spec.len = self.probe_bytes;
        spec.tos = self.probe_tos;
        spec.interval = std::time::Duration::from_millis(200);
        spec.end = EndCondition::Time {
            duration: std::time::Duration::from_secs_f64(seconds),
        };
        spec.rr = Some(RequestResponse {
            response_len: self.probe_bytes,
            probe_interval_us: Some(self.probe_interval_us()),
            connection_per_transaction: None,
            bursts: None,
        });
        spec
    }

    /// How many tests the run opens at its far end: the probe's, and each loaded phase's TCP
    /// load (and UDP load, if asked).
    pub fn tests(&self) -> u32 {
        let loads = Phase::ALL
            .iter()
            .filter(|&&p| self.tcp_load_spec(p).is_some())
            .count()
            * if self.udp_bits_per_second.is_some() {
                2
            } else {
                1
            };
        1 + u32::try_from(loads).unwrap_or(0)
    }

    /// The settings as the run states them, over IPv6 or IPv4 (the probe's headers); the
    /// congestion control as asked (each phase says what the kernel used).
    pub fn settings(&self, ipv6: bool) -> super::LoadSettings {
        let overhead = if ipv6 { 48 } else { 28 };
        super::LoadSettings {
            idle_seconds: self.idle_seconds,
            load_seconds: self.load_seconds,
            streams: self.streams,
            congestion: self.congestion.clone(),
            udp_bits_per_second: self.udp_bits_per_second,
            load_bits_per_second: self.load_bits_per_second,
            probe_interval_ms: self.probe_interval_ms,
            probe_bytes: self.probe_bytes,
            probe_bits_per_second: super::probe_bits_per_second(
                self.probe_bytes,
                overhead,
                self.probe_interval_ms,
            ),
            probe_tos: self.probe_tos,
        }
    }

    /// The TCP load of a loaded phase (`None` for idle).
    pub fn tcp_load_spec(&self, phase: Phase) -> Option<crate::spec::TestSpec> {
        let mut spec = self.load_spec(phase, crate::spec::Protocol::Tcp)?;
        spec.congestion = self.congestion.clone();
        spec.bitrate = self.load_bits_per_second.map(crate::units::BitRate);
        Some(spec)
    }

    /// The UDP load of a loaded phase, if one is asked for.
    pub fn udp_load_spec(&self, phase: Phase) -> Option<crate::spec::TestSpec> {
        let rate = self.udp_bits_per_second?;
        let mut spec = self.load_spec(phase, crate::spec::Protocol::Udp)?;
        spec.streams = 1;
        spec.bitrate = Some(crate::units::BitRate(rate));
        Some(spec)
    }

    fn load_spec(
        &self,
        phase: Phase,
        protocol: crate::spec::Protocol,
    ) -> Option<crate::spec::TestSpec> {
        use crate::spec::{Direction, EndCondition, TestSpec};
        let direction = match phase {
            Phase::Idle => return None,
            Phase::Download => Direction::Reverse,
            Phase::Upload => Direction::Normal,
            Phase::Both => Direction::Bidir,
        };
        let mut spec = TestSpec::new(protocol);
        spec.direction = direction;
        spec.streams = self.streams;
        spec.interval = std::time::Duration::from_millis(250);
        spec.end = EndCondition::Time {
            duration: std::time::Duration::from_secs_f64(self.load_seconds),
        };
        Some(spec)
    }
}
