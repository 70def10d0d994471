//! What a latency-under-load run measured (the probe's samples, the phases as they ran, the
//! load's throughput) and [`LatencyResult::build`], which derives every figure from it once.

use serde::{Deserialize, Serialize};

use crate::report::{IntervalReport, StreamRole, TestResult};

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
    /// The probe's rate each way on the wire (payload, IP/UDP headers and Ethernet framing),
    /// bit/s.
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

impl PhaseLoad {
    /// A load test's figures from its result: each direction's throughput as its receivers
    /// measured it (its senders' where no receiver reported) and why it ended early; with how
    /// long its longest flow ran, seconds. The flows' RTTs are not in it (see
    /// [`sender_rtts_ms`]).
    pub fn of_test(result: &TestResult) -> (PhaseLoad, f64) {
        let mut load = PhaseLoad {
            error: result.status.ended_early().map(str::to_string),
            ..PhaseLoad::default()
        };
        let mut longest = 0.0f64;
        for flow in result.flows() {
            let Some(totals) = flow.received.or(flow.sent) else {
                continue;
            };
            longest = longest.max(totals.seconds);
            if flow.client_to_server {
                load.up_bits_per_second = Some(totals.bits_per_second);
            } else {
                load.down_bits_per_second = Some(totals.bits_per_second);
            }
        }
        (load, longest)
    }

    /// This (TCP) load with a UDP load that ran beside it: their rates added each way, the
    /// UDP load's failure said as such where the TCP load had none.
    pub fn with_udp(self, udp: PhaseLoad) -> PhaseLoad {
        let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        PhaseLoad {
            down_bits_per_second: add(self.down_bits_per_second, udp.down_bits_per_second),
            up_bits_per_second: add(self.up_bits_per_second, udp.up_bits_per_second),
            error: self.error.or(udp.error.map(|e| format!("UDP load: {e}"))),
            flow_rtt_ms: self.flow_rtt_ms,
        }
    }
}

/// The smoothed RTTs (TCP_INFO) of an interval's TCP senders that have one, ms.
pub fn sender_rtts_ms(report: &IntervalReport) -> impl Iterator<Item = f64> + '_ {
    report
        .streams
        .iter()
        .filter(|s| s.role == StreamRole::Sender)
        .filter_map(|s| s.tcp)
        .filter(|tcp| tcp.rtt_us > 0)
        .map(|tcp| f64::from(tcp.rtt_us) / 1000.0)
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

    /// How long loaded phase `f` ran past its load's seconds: after its senders stopped, the
    /// queue they built drains and the probes in it come in late. `None` for the idle phase and
    /// for less than half a second.
    pub fn drain_seconds(&self, f: &PhaseFigures) -> Option<f64> {
        let past = (f.end - f.start) - self.settings.load_seconds;
        (f.phase != Phase::Idle && past >= 0.5).then_some(past)
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

/// What Ethernet adds to each datagram on the wire: its header (14 B) and frame check (4 B),
/// the preamble (8 B) and the gap before the next frame (12 B).
pub const ETHERNET_FRAMING: u32 = 38;

/// The probe's rate each way on the wire: `payload` bytes plus `overhead` of IP and UDP headers
/// plus Ethernet's framing, one datagram each `interval_ms`.
pub fn probe_bits_per_second(payload: u32, overhead: u32, interval_ms: f64) -> f64 {
    if interval_ms <= 0.0 {
        return 0.0;
    }
    f64::from(payload + overhead + ETHERNET_FRAMING) * 8.0 * 1000.0 / interval_ms
}
