//! Latency under load (`perfpeer test PEER --latency-under-load`): a latency probe runs through
//! four phases — idle, download, upload, both — while TCP load fills the link one way, the other,
//! then both. This module is the model: the probe's samples as the requester saw them, the phase
//! windows and load figures the runner measured, and [`LatencyResult::build`], which derives
//! every figure once (percentiles, one-way delays above the idle baseline, loss per direction,
//! added latency, RPM). Renderings read a [`LatencyResult`] and compute nothing.
//!
//! What the probe can prove: each answered probe gives its round trip exactly (the far end's
//! holding time taken out). The two peers' clocks are not synchronised, so a one-way delay is
//! only known up to a constant offset; it is shown relative to the smallest value seen while
//! the link was idle ("above the idle minimum"), which assumes that the offset does not drift
//! during the test (crystal clocks drift by tens of ppm: about 1 ms per 20 s at 50 ppm) and that
//! the idle phase saw at least one probe with no queue in the way.

use serde::{Deserialize, Serialize};

/// One probe as its requester saw it: every probe sent has exactly one sample, answered or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSample {
    /// Sequence number, from 1.
    pub seq: u64,
    /// When it was sent, ns since the probe stream's measurement began (requester's clock).
    pub sent_ns: u64,
    /// Its answer, if one came back in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo: Option<ProbeEcho>,
}

/// What the answer to a probe told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeEcho {
    /// When the answer arrived, ns on the requester's clock (as `sent_ns`).
    pub received_ns: u64,
    /// When the far end took the request in, ns on the far end's clock.
    pub far_received_ns: u64,
    /// When the far end sent the answer, ns on the far end's clock.
    pub far_sent_ns: u64,
    /// Requests the far end had taken in by then.
    pub far_count: u64,
}

impl ProbeEcho {
    /// The round trip: time out and back, less the far end's holding time.
    pub fn rtt_ns(&self, sent_ns: u64) -> u64 {
        let hold = self.far_sent_ns.saturating_sub(self.far_received_ns);
        self.received_ns
            .saturating_sub(sent_ns)
            .saturating_sub(hold)
    }
}

/// One phase of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// No load: the baseline.
    Idle,
    /// Load from the far end to this one.
    Download,
    /// Load from this end to the far end.
    Upload,
    /// Load both ways at once.
    Both,
}

impl Phase {
    /// Every phase, in the order they run.
    pub const ALL: [Phase; 4] = [Phase::Idle, Phase::Download, Phase::Upload, Phase::Both];

    /// Its name as shown.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Download => "download",
            Phase::Upload => "upload",
            Phase::Both => "both",
        }
    }
}

/// What was asked for and what the probe costs, as the output states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSettings {
    /// Seconds of the idle phase.
    pub idle_seconds: f64,
    /// Seconds of each loaded phase.
    pub load_seconds: f64,
    /// TCP load streams per direction.
    pub streams: u16,
    /// Congestion control the load flows used (as the kernel reported it), or asked for.
    pub congestion: Option<String>,
    /// UDP load at this rate per direction besides the TCP load, bit/s.
    pub udp_bits_per_second: Option<u64>,
    /// The TCP load paced at this rate per direction (all its streams), bit/s; `None`: as fast
    /// as it goes.
    #[serde(default)]
    pub load_bits_per_second: Option<u64>,
    /// Probe interval, ms.
    pub probe_interval_ms: f64,
    /// Probe request and answer payload, bytes.
    pub probe_bytes: u32,
    /// The probe's rate each way on the wire (payload and IP/UDP headers), bit/s.
    pub probe_bits_per_second: f64,
    /// IP TOS / DSCP byte of the probe, if set.
    pub probe_tos: Option<u8>,
}

/// Figures of a set of delays, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// How many samples.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `values` (sorted here); `None` if empty.
    pub fn of(values: &mut [f64]) -> Option<Percentiles> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        // Nearest rank: the smallest value with at least `pct` percent of the samples at or
        // below it (integer arithmetic: ceil(pct · n / 100)).
        let rank = |pct: usize| values[(pct * n).div_ceil(100).clamp(1, n) - 1];
        Some(Percentiles {
            count: n as u64,
            min: values[0],
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: values[n - 1],
        })
    }
}

/// What the runner measured of one phase's load (nothing for idle).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLoad {
    /// Received from the far end (download), bit/s.
    pub down_bits_per_second: Option<f64>,
    /// Received by the far end (upload), bit/s.
    pub up_bits_per_second: Option<f64>,
    /// The load flows' own smoothed RTT (TCP_INFO, each sender, each interval), ms.
    pub flow_rtt_ms: Vec<f64>,
    /// Why the load failed or ended early, if it did.
    pub error: Option<String>,
}

/// One phase as the runner ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseWindow {
    /// Which phase.
    pub phase: Phase,
    /// Start, seconds on the probe's timeline.
    pub start: f64,
    /// End, seconds on the probe's timeline.
    pub end: f64,
    /// Its load's figures.
    pub load: PhaseLoad,
}

/// A point of the throughput timeline, bit/s over the interval ending at `t`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThroughputPoint {
    /// End of the interval, seconds on the probe's timeline.
    pub t: f64,
    /// Length of the interval, seconds.
    pub seconds: f64,
    /// Download over the interval, bit/s (none where nothing flows that way).
    pub down: Option<f64>,
    /// Upload over the interval, bit/s.
    pub up: Option<f64>,
}

/// What the runner hands to [`LatencyResult::build`].
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyInputs {
    /// The target, as given.
    pub target: String,
    /// When it started, Unix ms.
    pub started_unix_ms: u64,
    /// The settings.
    pub settings: LoadSettings,
    /// Every probe sent.
    pub probes: Vec<ProbeSample>,
    /// The phases as they ran.
    pub phases: Vec<PhaseWindow>,
    /// The load's throughput over time.
    pub throughput: Vec<ThroughputPoint>,
    /// Why the whole run ended early, if it did.
    pub error: Option<String>,
}

/// One probe, derived: its place on the timeline and its delays in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbePoint {
    /// Sent, seconds on the timeline.
    pub t: f64,
    /// Round trip, ms (none: lost).
    pub rtt: Option<f64>,
    /// Client → far end, ms above the idle minimum.
    pub up: Option<f64>,
    /// Far end → client, ms above the idle minimum.
    pub down: Option<f64>,
    /// Lost, and which way if the far end's count tells: `"up"`, `"down"` or `"unknown"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostWay>,
}

/// Which way a lost probe was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LostWay {
    /// The request never reached the far end.
    Up,
    /// The far end answered; the answer never came back.
    Down,
    /// Cannot be told (no answered probe on one side of it).
    Unknown,
}

/// Figures of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseFigures {
    /// Which phase.
    pub phase: Phase,
    /// Start and end, seconds on the timeline.
    pub start: f64,
    /// End.
    pub end: f64,
    /// Download throughput, bit/s.
    pub down_bits_per_second: Option<f64>,
    /// Upload throughput, bit/s.
    pub up_bits_per_second: Option<f64>,
    /// Probe round trip, ms.
    pub rtt: Option<Percentiles>,
    /// Client → far end one-way delay above the idle minimum, ms.
    pub up_delay: Option<Percentiles>,
    /// Far end → client one-way delay above the idle minimum, ms.
    pub down_delay: Option<Percentiles>,
    /// Probes sent in the phase.
    pub probes_sent: u64,
    /// Probes lost (either way).
    pub probes_lost: u64,
    /// Of those, lost on the way out.
    pub lost_up: u64,
    /// Of those, lost on the way back.
    pub lost_down: u64,
    /// Median round trip minus the idle phase's, ms (none for idle itself).
    pub added_rtt: Option<f64>,
    /// Round trips per minute at the median round trip: 60 000 / p50 ms.
    pub rpm: Option<f64>,
    /// The load flows' own RTT (TCP_INFO), ms.
    pub flow_rtt: Option<Percentiles>,
    /// Why the phase's load failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where one-way delays are measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// The idle phase's smallest one-way values.
    IdleMinimum,
    /// No probe was answered while idle: the whole test's smallest.
    TestMinimum,
}

/// A whole latency-under-load run, with every figure derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// The target, as given.
    pub target: String,
    /// When it started, Unix ms.
    pub started_unix_ms: u64,
    /// The settings.
    pub settings: LoadSettings,
    /// What the one-way delays are relative to.
    pub baseline: Baseline,
    /// Figures per phase, in order.
    pub phases: Vec<PhaseFigures>,
    /// Every probe on the timeline.
    pub probes: Vec<ProbePoint>,
    /// Throughput over time.
    pub throughput: Vec<ThroughputPoint>,
    /// Why the run ended early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

const NS_PER_MS: f64 = 1e6;

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
        });
        spec
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

impl LatencyResult {
    /// Derives every figure from what was measured.
    pub fn build(inputs: LatencyInputs) -> LatencyResult {
        let LatencyInputs {
            target,
            started_unix_ms,
            settings,
            mut probes,
            phases,
            throughput,
            error,
        } = inputs;
        probes.sort_by_key(|p| p.seq);
        probes.dedup_by_key(|p| p.seq);
        let secs = |ns: u64| ns as f64 / 1e9;
        let idle = phases.iter().find(|w| w.phase == Phase::Idle);
        let in_window = |p: &ProbeSample, w: &PhaseWindow| {
            let t = secs(p.sent_ns);
            t >= w.start && t < w.end
        };
        // One-way values as measured (far clock − near clock, ns, any offset), and the smallest of
        // them while idle: the baseline each delay is shown above.
        let raw = |p: &ProbeSample| {
            p.echo.map(|e| {
                (
                    i128::from(e.far_received_ns) - i128::from(p.sent_ns),
                    i128::from(e.received_ns) - i128::from(e.far_sent_ns),
                )
            })
        };
        let minimum = |filter: &dyn Fn(&ProbeSample) -> bool| {
            probes
                .iter()
                .filter(|p| filter(p))
                .filter_map(raw)
                .reduce(|a, b| (a.0.min(b.0), a.1.min(b.1)))
        };
        let (baseline, floor) = match idle.and_then(|w| minimum(&|p| in_window(p, w))) {
            Some(f) => (Baseline::IdleMinimum, Some(f)),
            None => (Baseline::TestMinimum, minimum(&|_| true)),
        };
        let lost_ways = lost_ways(&probes);
        let points: Vec<ProbePoint> = probes
            .iter()
            .map(|p| {
                let above = raw(p).zip(floor).map(|((up, down), (fu, fd))| {
                    ((up - fu) as f64 / NS_PER_MS, (down - fd) as f64 / NS_PER_MS)
                });
                ProbePoint {
                    t: secs(p.sent_ns),
                    rtt: p.echo.map(|e| e.rtt_ns(p.sent_ns) as f64 / NS_PER_MS),
                    up: above.map(|a| a.0),
                    down: above.map(|a| a.1),
                    lost: lost_ways.get(&p.seq).copied(),
                }
            })
            .collect();
        let mut figures: Vec<PhaseFigures> = phases
            .iter()
            .map(|w| {
                let mine: Vec<&ProbePoint> = points
                    .iter()
                    .filter(|p| p.t >= w.start && p.t < w.end)
                    .collect();
                let collect = |f: fn(&ProbePoint) -> Option<f64>| {
                    Percentiles::of(&mut mine.iter().filter_map(|p| f(p)).collect::<Vec<_>>())
                };
                let rtt = collect(|p| p.rtt);
                let lost_count = |way: Option<LostWay>| {
                    mine.iter()
                        .filter(|p| p.lost.is_some() && (way.is_none() || p.lost == way))
                        .count() as u64
                };
                PhaseFigures {
                    phase: w.phase,
                    start: w.start,
                    end: w.end,
                    down_bits_per_second: w.load.down_bits_per_second,
                    up_bits_per_second: w.load.up_bits_per_second,
                    rtt,
                    up_delay: collect(|p| p.up),
                    down_delay: collect(|p| p.down),
                    probes_sent: mine.len() as u64,
                    probes_lost: lost_count(None),
                    lost_up: lost_count(Some(LostWay::Up)),
                    lost_down: lost_count(Some(LostWay::Down)),
                    added_rtt: None,
                    rpm: rtt.filter(|r| r.p50 > 0.0).map(|r| 60_000.0 / r.p50),
                    flow_rtt: Percentiles::of(&mut w.load.flow_rtt_ms.clone()),
                    error: w.load.error.clone(),
                }
            })
            .collect();
        let idle_p50 = figures
            .iter()
            .find(|f| f.phase == Phase::Idle)
            .and_then(|f| f.rtt)
            .map(|r| r.p50);
        for f in &mut figures {
            if f.phase != Phase::Idle {
                f.added_rtt = f.rtt.zip(idle_p50).map(|(r, idle)| r.p50 - idle);
            }
        }
        LatencyResult {
            target,
            started_unix_ms,
            settings,
            baseline,
            phases: figures,
            probes: points,
            throughput,
            error,
        }
    }

    /// The figures of `phase`, if it ran.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseFigures> {
        self.phases.iter().find(|f| f.phase == phase)
    }

    /// The loaded phase with the highest median round trip: the headline.
    pub fn worst_loaded(&self) -> Option<&PhaseFigures> {
        self.phases
            .iter()
            .filter(|f| f.phase != Phase::Idle)
            .filter_map(|f| f.rtt.map(|r| (f, r.p50)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(f, _)| f)
    }
}

crate::tagged_enum! {
    tag = "event", rename_all = "snake_case";
    /// What a running latency test tells its caller, live: the CLI prints from it, a browser's run
    /// logs it for the page (which folds it into a [`Live`] as the runner does).
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum LatencyEvent {
        /// The probe runs: what the run is.
        Started {
            /// The target, as given.
            target: String,
            /// When it started, Unix ms.
            started_unix_ms: u64,
            /// The settings (congestion control as asked until a phase reports it).
            settings: LoadSettings,
        },
        /// A phase started (seconds on the timeline).
        PhaseStarted {
            /// Which.
            phase: Phase,
            /// When.
            at: f64,
        },
        /// Probes settled (answered or given up), in no particular order.
        Probes {
            /// The probes.
            samples: Vec<ProbeSample>,
        },
        /// Load throughput over an interval.
        Throughput {
            /// The point.
            point: ThroughputPoint,
        },
        /// A phase ended.
        PhaseDone {
            /// Its window and load.
            window: PhaseWindow,
            /// The congestion control its load used, as the kernel reported it.
            congestion_used: Option<String>,
        },
    }
}

/// A run as its events tell it so far: what the runner keeps, and what a page following the run
/// keeps; [`Live::snapshot`] is the result so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// From `Started`.
    pub started: Option<(String, u64, LoadSettings)>,
    /// Every probe settled so far.
    pub probes: Vec<ProbeSample>,
    /// Phases done.
    pub windows: Vec<PhaseWindow>,
    /// The phase running now and when it began.
    pub running: Option<(Phase, f64)>,
    /// Throughput points so far.
    pub throughput: Vec<ThroughputPoint>,
}

impl Live {
    /// Takes in one event.
    pub fn apply(&mut self, ev: &LatencyEvent) {
        match ev {
            LatencyEvent::Started {
                target,
                started_unix_ms,
                settings,
            } => self.started = Some((target.clone(), *started_unix_ms, settings.clone())),
            LatencyEvent::PhaseStarted { phase, at } => self.running = Some((*phase, *at)),
            LatencyEvent::Probes { samples } => self.probes.extend_from_slice(samples),
            LatencyEvent::Throughput { point } => self.throughput.push(*point),
            LatencyEvent::PhaseDone {
                window,
                congestion_used,
            } => {
                self.running = None;
                self.windows.push(window.clone());
                if let (Some(cc), Some((_, _, settings))) = (congestion_used, &mut self.started) {
                    settings.congestion = Some(cc.clone());
                }
            }
        }
    }

    /// The result so far (`None` before `Started`). The running phase is shown up to its last
    /// probe, without load figures yet.
    pub fn snapshot(&self, error: Option<String>) -> Option<LatencyResult> {
        let (target, started_unix_ms, settings) = self.started.clone()?;
        let mut phases = self.windows.clone();
        if let Some((phase, at)) = self.running {
            // Up to the next probe's due time, so the last one sent is inside.
            let last = self
                .probes
                .iter()
                .map(|p| p.sent_ns as f64 / 1e9)
                .fold(at, f64::max);
            phases.push(PhaseWindow {
                phase,
                start: at,
                end: last + settings.probe_interval_ms / 1000.0,
                load: PhaseLoad::default(),
            });
        }
        let mut throughput = self.throughput.clone();
        throughput.sort_by(|a, b| a.t.total_cmp(&b.t));
        Some(LatencyResult::build(LatencyInputs {
            target,
            started_unix_ms,
            settings,
            probes: self.probes.clone(),
            phases,
            throughput,
            error,
        }))
    }
}

/// Which way each lost probe was lost, by the far end's count of requests it took in: between
/// two answered probes `a` and `b`, `(b.seq − a.seq) − (b.far_count − a.far_count)` requests never
/// reached it; the rest of the unanswered ones between them lost their answer. Which of the
/// probes in one gap went which way cannot be told, so the first ones of the gap are marked up.
/// Lost probes before the first answered one or after the last are `Unknown`.
fn lost_ways(probes: &[ProbeSample]) -> std::collections::HashMap<u64, LostWay> {
    let mut ways = std::collections::HashMap::new();
    let mut last_answered: Option<(u64, u64)> = None;
    let mut gap: Vec<u64> = Vec::new();
    for p in probes {
        match p.echo {
            None => gap.push(p.seq),
            Some(e) => {
                if let Some((a_seq, a_count)) = last_answered {
                    let sent = p.seq.saturating_sub(a_seq);
                    let reached = e.far_count.saturating_sub(a_count);
                    let up = usize::try_from(sent.saturating_sub(reached))
                        .unwrap_or(usize::MAX)
                        .min(gap.len());
                    for (i, seq) in gap.drain(..).enumerate() {
                        ways.insert(seq, if i < up { LostWay::Up } else { LostWay::Down });
                    }
                } else {
                    for seq in gap.drain(..) {
                        ways.insert(seq, LostWay::Unknown);
                    }
                }
                last_answered = Some((p.seq, e.far_count));
            }
        }
    }
    for seq in gap {
        ways.insert(seq, LostWay::Unknown);
    }
    ways
}

/// The probe's rate each way on the wire: `payload` bytes plus `overhead` of IP and UDP headers,
/// one datagram each `interval_ms`.
pub fn probe_bits_per_second(payload: u32, overhead: u32, interval_ms: f64) -> f64 {
    if interval_ms <= 0.0 {
        return 0.0;
    }
    f64::from(payload + overhead) * 8.0 * 1000.0 / interval_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A probe sent at `t_ms`, out `up_ms` and back `down_ms`, on a far clock `offset_ms` ahead.
    fn answered(seq: u64, t_ms: u64, up_ms: u64, down_ms: u64, far_count: u64) -> ProbeSample {
        let offset = 5_000 * MS;
        ProbeSample {
            seq,
            sent_ns: t_ms * MS,
            echo: Some(ProbeEcho {
                far_received_ns: offset + (t_ms + up_ms) * MS,
                far_sent_ns: offset + (t_ms + up_ms) * MS + 10_000,
                received_ns: (t_ms + up_ms + down_ms) * MS + 10_000,
                far_count,
            }),
        }
    }

    fn lost(seq: u64, t_ms: u64) -> ProbeSample {
        ProbeSample {
            seq,
            sent_ns: t_ms * MS,
            echo: None,
        }
    }

    fn settings() -> LoadSettings {
        LoadSettings {
            idle_seconds: 1.0,
            load_seconds: 1.0,
            streams: 1,
            congestion: Some("cubic".into()),
            udp_bits_per_second: None,
            load_bits_per_second: None,
            probe_interval_ms: 10.0,
            probe_bytes: 64,
            probe_bits_per_second: probe_bits_per_second(64, 28, 10.0),
            probe_tos: None,
        }
    }

    fn window(phase: Phase, start: f64, end: f64) -> PhaseWindow {
        PhaseWindow {
            phase,
            start,
            end,
            load: PhaseLoad::default(),
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let p = Percentiles::of(&mut v).unwrap();
        assert_eq!(
            (p.min, p.p50, p.p90, p.p99, p.max),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(p.count, 100);
        assert_eq!(Percentiles::of(&mut [7.0]).unwrap().p99, 7.0);
        assert!(Percentiles::of(&mut []).is_none());
    }

    #[test]
    fn queue_on_the_way_out_shows_up_one_way_and_in_the_round_trip() {
        // Idle: 1 ms each way. Upload: the request waits 80 ms in a queue; answers come back fast.
        let mut probes = vec![];
        let mut count = 0;
        for i in 0..100u64 {
            count += 1;
            probes.push(answered(i + 1, i * 10, 1, 1, count));
        }
        for i in 100..200u64 {
            count += 1;
            probes.push(answered(i + 1, i * 10, 81, 1, count));
        }
        let r = LatencyResult::build(LatencyInputs {
            target: "pc".into(),
            started_unix_ms: 0,
            settings: settings(),
            probes,
            phases: vec![
                window(Phase::Idle, 0.0, 1.0),
                window(Phase::Upload, 1.0, 2.0),
            ],
            throughput: vec![],
            error: None,
        });
        assert_eq!(r.baseline, Baseline::IdleMinimum);
        let idle = r.phase(Phase::Idle).unwrap();
        let up = r.phase(Phase::Upload).unwrap();
        assert!((idle.rtt.unwrap().p50 - 2.0).abs() < 1e-6, "{idle:?}");
        assert!((up.rtt.unwrap().p50 - 82.0).abs() < 1e-6);
        assert!((up.added_rtt.unwrap() - 80.0).abs() < 1e-6);
        assert!((up.up_delay.unwrap().p50 - 80.0).abs() < 1e-6);
        assert!(up.down_delay.unwrap().max.abs() < 1e-6);
        assert!((up.rpm.unwrap() - 60_000.0 / 82.0).abs() < 1e-6);
        assert!(idle.added_rtt.is_none());
        assert_eq!(up.probes_sent, 100);
        assert_eq!(r.worst_loaded().unwrap().phase, Phase::Upload);
    }

    #[test]
    fn loss_is_split_by_the_far_count() {
        // Probes 2 and 3 are lost: 2 never reached the far end (its count does not move), 3's
        // answer was lost (the count at probe 4 includes it). 6 is lost after the last answer.
        let probes = vec![
            answered(1, 0, 1, 1, 1),
            lost(2, 10),
            lost(3, 20),
            answered(4, 30, 1, 1, 3),
            answered(5, 40, 1, 1, 4),
            lost(6, 50),
        ];
        let r = LatencyResult::build(LatencyInputs {
            target: "pc".into(),
            started_unix_ms: 0,
            settings: settings(),
            probes,
            phases: vec![window(Phase::Idle, 0.0, 1.0)],
            throughput: vec![],
            error: None,
        });
        let idle = r.phase(Phase::Idle).unwrap();
        assert_eq!(
            (
                idle.probes_sent,
                idle.probes_lost,
                idle.lost_up,
                idle.lost_down
            ),
            (6, 3, 1, 1)
        );
        assert_eq!(r.probes[5].lost, Some(LostWay::Unknown));
    }

    #[test]
    fn without_idle_answers_the_baseline_is_the_test_minimum() {
        let r = LatencyResult::build(LatencyInputs {
            target: "pc".into(),
            started_unix_ms: 0,
            settings: settings(),
            probes: vec![
                lost(1, 0),
                answered(2, 1500, 30, 2, 1),
                answered(3, 1510, 40, 2, 2),
            ],
            phases: vec![
                window(Phase::Idle, 0.0, 1.0),
                window(Phase::Download, 1.0, 2.0),
            ],
            throughput: vec![],
            error: None,
        });
        assert_eq!(r.baseline, Baseline::TestMinimum);
        let d = r.phase(Phase::Download).unwrap();
        assert_eq!(d.up_delay.unwrap().max, 10.0);
        assert!(d.added_rtt.is_none(), "no idle round trip to compare with");
    }

    #[test]
    fn requests_are_bounded_and_their_specs_valid() {
        let r = LatencyRequest::default();
        assert_eq!(r.check(), Ok(()));
        assert!(r.probe_spec(30.0).validate().is_ok());
        for phase in [Phase::Download, Phase::Upload, Phase::Both] {
            assert!(r.tcp_load_spec(phase).unwrap().validate().is_ok());
        }
        assert!(r.tcp_load_spec(Phase::Idle).is_none());
        assert!(r.udp_load_spec(Phase::Upload).is_none());
        let bad = |f: fn(&mut LatencyRequest)| {
            let mut r = LatencyRequest::default();
            f(&mut r);
            r.check().unwrap_err()
        };
        assert_eq!(
            bad(|r| r.load_seconds = 0.5),
            LatencyRequestError::PhaseLength("load", 0.5)
        );
        assert!(matches!(
            bad(|r| r.idle_seconds = f64::NAN),
            LatencyRequestError::PhaseLength("idle", _)
        ));
        assert_eq!(bad(|r| r.streams = 0), LatencyRequestError::Streams(0));
        assert!(matches!(
            bad(|r| {
                r.probe_interval_ms = 1.0;
                r.load_seconds = 60.0;
            }),
            LatencyRequestError::TooManyProbes(_)
        ));
        assert_eq!(
            bad(|r| r.probe_bytes = 39),
            LatencyRequestError::ProbeBytes(39)
        );
        assert_eq!(
            bad(|r| r.udp_bits_per_second = Some(0)),
            LatencyRequestError::UdpRate
        );
    }

    #[test]
    fn live_folds_events_into_the_same_result() {
        let mut live = Live::default();
        assert!(live.snapshot(None).is_none());
        let events = vec![
            LatencyEvent::Started {
                target: "pc".into(),
                started_unix_ms: 5,
                settings: settings(),
            },
            LatencyEvent::PhaseStarted {
                phase: Phase::Idle,
                at: 0.0,
            },
            LatencyEvent::Probes {
                samples: vec![answered(2, 10, 1, 1, 2), answered(1, 0, 1, 1, 1)],
            },
            LatencyEvent::PhaseDone {
                window: window(Phase::Idle, 0.0, 1.0),
                congestion_used: Some("reno".into()),
            },
            LatencyEvent::PhaseStarted {
                phase: Phase::Upload,
                at: 1.0,
            },
            LatencyEvent::Probes {
                samples: vec![answered(3, 1500, 41, 1, 3)],
            },
        ];
        for ev in &events {
            // Events travel as JSON to a browser.
            let again: LatencyEvent =
                serde_json::from_str(&serde_json::to_string(ev).unwrap()).unwrap();
            live.apply(&again);
        }
        let r = live.snapshot(None).unwrap();
        assert_eq!(r.settings.congestion.as_deref(), Some("reno"));
        assert_eq!(r.phases.len(), 2, "the running phase is shown too");
        let upload = r.phase(Phase::Upload).unwrap();
        assert_eq!((upload.start, upload.end), (1.0, 1.51));
        assert_eq!(upload.rtt.unwrap().count, 1);
        assert!((r.probes[2].up.unwrap() - 40.0).abs() < 1e-6);
    }

    #[test]
    fn probe_rate_on_the_wire() {
        // 64 bytes + 28 of IPv4 and UDP, 100 a second: 73.6 kbit/s.
        assert!((probe_bits_per_second(64, 28, 10.0) - 73_600.0).abs() < 1e-6);
    }
}
