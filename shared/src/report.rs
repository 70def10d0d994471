//! The one result model: what each end measured (intervals, per-stream finals, CPU) and the
//! statistics derived from it. Renderers read these values; they never compute statistics.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::spec::TestSpec;
use crate::units::serde_secs;

/// Which end of a test a report comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerRole {
    /// The end that started the test (`perfpeer test`, iperf3 `-c`).
    Client,
    /// The end that accepted it (`perfpeer serve`, iperf3 `-s`).
    Server,
}

impl PeerRole {
    /// The other end of the test.
    pub fn other(self) -> PeerRole {
        match self {
            PeerRole::Client => PeerRole::Server,
            PeerRole::Server => PeerRole::Client,
        }
    }
}

/// Which way a test's data went, seen from one of its two peers ("this peer": the one that
/// shows it, which for a kept result is the peer that kept it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending {
    /// This peer sent, the other received.
    ThisPeer,
    /// The other peer sent, this one received.
    OtherPeer,
    /// Both sent.
    Both,
}

impl Sending {
    /// The direction of a test whose spec says `direction`, seen from the end with `role`.
    pub fn seen_from(direction: crate::spec::Direction, role: PeerRole) -> Sending {
        let this_sends = match role {
            PeerRole::Client => direction.client_sends(),
            PeerRole::Server => direction.server_sends(),
        };
        let other_sends = match role {
            PeerRole::Client => direction.server_sends(),
            PeerRole::Server => direction.client_sends(),
        };
        match (this_sends, other_sends) {
            (true, true) => Sending::Both,
            (true, false) => Sending::ThisPeer,
            (false, _) => Sending::OtherPeer,
        }
    }

    /// `TX`, `RX` or `TX+RX`: what this peer did.
    pub fn short(self) -> &'static str {
        match self {
            Sending::ThisPeer => "TX",
            Sending::OtherPeer => "RX",
            Sending::Both => "TX+RX",
        }
    }

    /// `TX (this peer sends)`, `RX (this peer receives)`, `TX+RX (both send)`.
    pub fn words(self) -> &'static str {
        match self {
            Sending::ThisPeer => "TX (this peer sends)",
            Sending::OtherPeer => "RX (this peer receives)",
            Sending::Both => "TX+RX (both send)",
        }
    }
}

/// What one stream does at the end that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamRole {
    /// Writes data.
    Sender,
    /// Reads data.
    Receiver,
}

/// TCP_INFO read from a sending socket at the end of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpSample {
    /// Retransmitted segments during the interval.
    pub retransmits: u64,
    /// Congestion window in bytes (snd_cwnd × MSS).
    pub snd_cwnd: u64,
    /// Smoothed RTT in µs.
    pub rtt_us: u32,
    /// RTT variance in µs.
    pub rttvar_us: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// The receiver's advertised window, bytes (iperf3's `snd_wnd`), where the kernel says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
}

/// UDP receiver figures for one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpRxSample {
    /// Datagrams expected in the interval (received plus lost).
    pub packets: u64,
    /// Datagrams lost in the interval (sequence gaps, corrected by late arrivals).
    pub lost: u64,
    /// Datagrams that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams seen twice.
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter at the end of the interval, in ms.
    pub jitter_ms: f64,
    /// Longest time between two arrivals that ended in the interval, in ms (what a listener
    /// of a constant-bitrate stream hears as a dropout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gap_ms: Option<f64>,
}

impl UdpRxSample {
    /// Loss as a percentage of expected datagrams.
    pub fn lost_percent(&self) -> f64 {
        percent(self.lost, self.packets)
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// One stream during one interval, as seen at the reporting end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamInterval {
    /// Stream id (1-based; in bidir the reverse streams follow the forward ones).
    pub id: u32,
    /// Sender or receiver at this end.
    pub role: StreamRole,
    /// Bytes written or read during the interval.
    pub bytes: u64,
    /// Datagrams sent during the interval (UDP sender only).
    pub packets: Option<u64>,
    /// Write calls that moved data during the interval (TCP sender only; iperf 2's `-e`
    /// Write column). A write that fails ends the stream, so none is counted as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<u64>,
    /// TCP sender state (TCP sender only, where the kernel reports it).
    pub tcp: Option<TcpSample>,
    /// UDP receiver figures (UDP receiver only).
    pub udp_rx: Option<UdpRxSample>,
    /// CCID 3's TFRC state at the end of the interval (DCCP with CCID 3 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfrc: Option<crate::dccp::TfrcSample>,
    /// Latency probes settled during the interval, answered or given up (a probe's requester
    /// only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<crate::latency::ProbeSample>,
}

/// One reporting interval at one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Start, relative to the start of the test.
    #[serde(with = "serde_secs")]
    pub start: Duration,
    /// End, relative to the start of the test.
    #[serde(with = "serde_secs")]
    pub end: Duration,
    /// Inside the omitted start period (`-O`).
    pub omitted: bool,
    /// Every stream at this end.
    pub streams: Vec<StreamInterval>,
    /// The Wi-Fi link at this end during the interval, where a radio carries the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<Box<crate::wifi::LinkSample>>,
}

/// Sum over the streams of one role in one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IntervalSum {
    /// Bytes.
    pub bytes: u64,
    /// bit/s over the interval.
    pub bits_per_second: f64,
    /// Summed retransmits, when every stream reported TCP info.
    pub retransmits: Option<u64>,
    /// Summed datagrams sent (UDP sender).
    pub packets: Option<u64>,
    /// UDP receiver figures summed (jitter averaged).
    pub udp_rx: Option<UdpRxSample>,
}

impl IntervalReport {
    /// Start and end in seconds on iperf3's timeline, which starts again at 0 when the omitted
    /// start (`omit`) is over: a measured interval counts from there, an omitted one from the
    /// start of the test.
    pub fn iperf3_span(&self, omit: Duration) -> (f64, f64) {
        let shift = if self.omitted { Duration::ZERO } else { omit };
        (
            self.start.saturating_sub(shift).as_secs_f64(),
            self.end.saturating_sub(shift).as_secs_f64(),
        )
    }

    /// Interval length.
    pub fn seconds(&self) -> f64 {
        (self.end.saturating_sub(self.start)).as_secs_f64()
    }

    /// Sum over the streams with `role`, or `None` if there are none.
    pub fn sum(&self, role: StreamRole) -> Option<IntervalSum> {
        let streams: Vec<&StreamInterval> =
            self.streams.iter().filter(|s| s.role == role).collect();
        if streams.is_empty() {
            return None;
        }
        let bytes = streams.iter().map(|s| s.bytes).sum();
        Some(IntervalSum {
            bytes,
            bits_per_second: bits_per_second(bytes, self.seconds()),
            retransmits: sum_all(streams.iter().map(|s| s.tcp.map(|t| t.retransmits))),
            packets: sum_all(streams.iter().map(|s| s.packets)),
            udp_rx: merge_udp(streams.iter().filter_map(|s| s.udp_rx)),
        })
    }
}

/// `Some(total)` only when every item is `Some`.
fn sum_all(items: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let mut total = 0u64;
    for item in items {
        total += item?;
    }
    Some(total)
}

fn merge_udp(samples: impl Iterator<Item = UdpRxSample>) -> Option<UdpRxSample> {
    let mut count = 0usize;
    let mut sum = UdpRxSample::default();
    for s in samples {
        count += 1;
        sum.packets += s.packets;
        sum.lost += s.lost;
        sum.out_of_order += s.out_of_order;
        sum.duplicates += s.duplicates;
        sum.jitter_ms += s.jitter_ms;
        sum.max_gap_ms = max_opt(sum.max_gap_ms, s.max_gap_ms);
    }
    (count > 0).then(|| UdpRxSample {
        jitter_ms: sum.jitter_ms / count as f64,
        ..sum
    })
}

/// The larger of two optional figures.
fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// `count` events over `seconds`, per second (0 over no time): iperf 2's packets a second.
pub fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

/// iperf 2's NetPwr ("network power"): bytes a second over the RTT in µs (throughput divided
/// by delay); `None` without an RTT.
pub fn net_power(bits_per_second: f64, rtt_us: u32) -> Option<f64> {
    (rtt_us > 0).then(|| bits_per_second / 8.0 / f64::from(rtt_us))
}

/// bit/s for `bytes` moved in `seconds` (0 for an empty period).
pub fn bits_per_second(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// TCP sender figures over the whole test.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpFinal {
    /// Retransmitted segments.
    pub retransmits: u64,
    /// Largest congestion window seen, bytes.
    pub max_snd_cwnd: u64,
    /// Largest smoothed RTT seen, µs.
    pub max_rtt_us: u32,
    /// Smallest smoothed RTT seen, µs.
    pub min_rtt_us: u32,
    /// Mean of the sampled smoothed RTTs, µs.
    pub mean_rtt_us: u32,
    /// Largest advertised receive window seen, bytes (iperf3's `max_snd_wnd`), where the
    /// kernel says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_wnd: Option<u64>,
}

/// UDP receiver figures over the whole test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpRxFinal {
    /// Datagrams received (each counted once).
    pub received: u64,
    /// Datagrams the sender reported sending, when its final count arrived.
    pub sender_packets: Option<u64>,
    /// Datagrams lost.
    pub lost: u64,
    /// Datagrams that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams seen twice.
    pub duplicates: u64,
    /// RFC 3550 jitter at the end of the test, in ms.
    pub jitter_ms: f64,
    /// Longest time between two arrivals over the test, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gap_ms: Option<f64>,
    /// One-way delays, where the datagrams carry the sender's wall-clock time and the sender
    /// asked for them (iperf 2's `--trip-times`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way: Option<crate::one_way::OneWayFinal>,
    /// Video-like frames (`--isochronous`): whole, lost, late, and their latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<crate::video::FrameFinal>,
}

impl UdpRxFinal {
    /// Datagrams expected: received plus lost.
    pub fn expected(&self) -> u64 {
        self.received + self.lost
    }
    /// Loss in percent of expected datagrams.
    pub fn lost_percent(&self) -> f64 {
        percent(self.lost, self.expected())
    }
}

/// One stream over the whole test (without the omitted start), at the reporting end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamFinal {
    /// Stream id.
    pub id: u32,
    /// Sender or receiver at this end.
    pub role: StreamRole,
    /// Bytes written or read.
    pub bytes: u64,
    /// How long the stream was measured.
    #[serde(with = "serde_secs")]
    pub duration: Duration,
    /// Datagrams sent (UDP sender).
    pub packets: Option<u64>,
    /// Write calls that moved data (TCP sender; see [`StreamInterval::writes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<u64>,
    /// TCP sender figures.
    pub tcp: Option<TcpFinal>,
    /// UDP receiver figures.
    pub udp_rx: Option<UdpRxFinal>,
    /// Request/response figures (`--rr`, at the end that sent the requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<crate::rr::RrFinal>,
    /// A TCP receiver's one-way delay of each write, from its send to the read of its last byte
    /// (`--trip-times`; a UDP receiver's are in `udp_rx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_one_way: Option<crate::one_way::OneWayFinal>,
    /// A TCP receiver's video frames (`--isochronous` over TCP: each frame one write, whole
    /// when its last byte was read; a UDP receiver's are in `udp_rx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_frames: Option<crate::video::FrameFinal>,
}

impl StreamFinal {
    /// The one-way delays this receiver measured: of its datagrams (UDP) or its writes (TCP).
    pub fn one_way(&self) -> Option<&crate::one_way::OneWayFinal> {
        self.udp_rx
            .as_ref()
            .and_then(|r| r.one_way.as_ref())
            .or(self.write_one_way.as_ref())
    }

    /// The video frames this receiver counted: of its datagrams (UDP) or its writes (TCP).
    pub fn frames(&self) -> Option<&crate::video::FrameFinal> {
        self.udp_rx
            .as_ref()
            .and_then(|r| r.frames.as_ref())
            .or(self.write_frames.as_ref())
    }
}

impl SideReport {
    /// Puts the clocks' offset beside every one-way figure of this side that rests on two
    /// clocks.
    pub fn set_clock_offset(&mut self, offset: crate::one_way::ClockOffset) {
        for s in &mut self.streams {
            if let Some(d) = s.udp_rx.as_mut().and_then(|r| r.one_way.as_mut())
                && d.clock == crate::one_way::ClockBasis::SynchronisedClocks
            {
                d.clock_offset = Some(offset);
            }
        }
    }
}

impl StreamFinal {
    /// Average bit/s over the stream's duration.
    pub fn bits_per_second(&self) -> f64 {
        bits_per_second(self.bytes, self.duration.as_secs_f64())
    }

    /// Datagrams received a second over the stream's duration (a UDP receiver's; `None` for
    /// others or a stream of no duration).
    pub fn datagrams_per_second(&self) -> Option<f64> {
        let seconds = self.duration.as_secs_f64();
        self.udp_rx
            .as_ref()
            .filter(|_| seconds > 0.0)
            .map(|rx| rx.received as f64 / seconds)
    }
}

/// Below this share of the host's busy time being the test's own, service demand is not the
/// test's cost (see [`CpuUsage::demand_is_noise`]).
pub const MIN_DEMAND_SHARE: f64 = 0.05;

/// An end's service demand as it is shown (see [`TestResult::service_demand`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServiceDemand {
    /// µs of the host's CPU time (all CPUs) per KB the end moved, netperf's definition.
    UsPerKb(f64),
    /// The test was this share (0–1) of the host's busy CPU time, under [`MIN_DEMAND_SHARE`]:
    /// the figure would be the cost of the host's other work.
    NotMeaningful {
        /// The test's share of the host's busy CPU time.
        share_of_host_busy: f64,
    },
}

impl ServiceDemand {
    /// The figure, when it is one.
    pub fn us_per_kb(self) -> Option<f64> {
        match self {
            ServiceDemand::UsPerKb(v) => Some(v),
            ServiceDemand::NotMeaningful { .. } => None,
        }
    }

    /// `62.200 µs/KB`, or `not meaningful: this test was 0.4% of the host's busy CPU`.
    pub fn words(self) -> String {
        match self {
            ServiceDemand::UsPerKb(v) => format!("{v:.3} µs/KB"),
            ServiceDemand::NotMeaningful { share_of_host_busy } => format!(
                "not meaningful: this test was {:.1}% of the host's busy CPU, the rest other work",
                share_of_host_busy * 100.0
            ),
        }
    }
}

/// CPU used at one end over the measured period.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Wall time the figures cover.
    #[serde(with = "serde_secs")]
    pub elapsed: Duration,
    /// User CPU seconds of the perfpeer process.
    pub process_user_s: f64,
    /// System CPU seconds of the perfpeer process.
    pub process_system_s: f64,
    /// Host-wide user time, percent of all CPUs.
    pub host_user_percent: f64,
    /// Host-wide system (incl. irq and softirq) time, percent of all CPUs.
    pub host_system_percent: f64,
    /// Number of CPUs on the host; 0 when host-wide figures were not measured (a stock tool
    /// at the other end reports only its process figures).
    pub cpus: u32,
}

impl CpuUsage {
    fn of_one_cpu(&self, seconds: f64) -> f64 {
        let wall = self.elapsed.as_secs_f64();
        if wall > 0.0 {
            seconds * 100.0 / wall
        } else {
            0.0
        }
    }
    /// Process user time in percent of one CPU (iperf3's `cpu_util_user`).
    pub fn process_user_percent(&self) -> f64 {
        self.of_one_cpu(self.process_user_s)
    }
    /// Process system time in percent of one CPU (iperf3's `cpu_util_system`).
    pub fn process_system_percent(&self) -> f64 {
        self.of_one_cpu(self.process_system_s)
    }
    /// Process total in percent of one CPU (iperf3's `cpu_util_total`).
    pub fn process_total_percent(&self) -> f64 {
        self.of_one_cpu(self.process_user_s + self.process_system_s)
    }
    /// Whether any CPU figures were measured: a stock tool that reports none (iperf2, ttcp)
    /// leaves the far end's usage at zero elapsed time.
    pub fn measured(&self) -> bool {
        !self.elapsed.is_zero()
    }
    /// Whether host-wide figures were measured (see [`CpuUsage::cpus`]).
    pub fn host_measured(&self) -> bool {
        self.cpus > 0
    }
    /// Host busy time in percent of all CPUs (netperf's CPU utilisation).
    pub fn host_total_percent(&self) -> f64 {
        self.host_user_percent + self.host_system_percent
    }
    /// netperf's service demand: µs of host CPU time (all CPUs) per KB (1024 bytes) moved.
    pub fn service_demand_us_per_kb(&self, bytes: u64) -> Option<f64> {
        if bytes == 0 || self.cpus == 0 {
            return None;
        }
        Some(self.host_busy_us() / (bytes as f64 / 1024.0))
    }
    /// The share (0–1) of the host's busy CPU time that was this process's own; `None` without
    /// host figures, with a host that was not busy at all, or without the process's own times
    /// (a stock far end, such as netserver, reports the host's alone: its share is unknown, not
    /// nothing, and its service demand is not judged).
    pub fn share_of_host_busy(&self) -> Option<f64> {
        let busy = self.host_busy_us();
        let own = self.process_user_s + self.process_system_s;
        (self.host_measured() && busy > 0.0 && own > 0.0).then(|| (own * 1e6 / busy).min(1.0))
    }
    /// Whether service demand at this end mostly measures other work: the test's process was
    /// under [`MIN_DEMAND_SHARE`] of the host's busy time (a 48 kbit/s stream on a busy PC).
    /// The kernel's network work outside the process (softirq) is not counted as the test's,
    /// so the threshold is low: a test that loads the host is well above it.
    pub fn demand_is_noise(&self) -> bool {
        self.share_of_host_busy()
            .is_some_and(|share| share < MIN_DEMAND_SHARE)
    }
    /// netperf's service demand for request/response tests (`us/Tr`): µs of host CPU time (all
    /// CPUs) per completed transaction.
    pub fn service_demand_us_per_transaction(&self, transactions: u64) -> Option<f64> {
        if transactions == 0 || self.cpus == 0 {
            return None;
        }
        Some(self.host_busy_us() / transactions as f64)
    }
    /// Host CPU time used over the period, summed over all CPUs, in µs.
    fn host_busy_us(&self) -> f64 {
        self.host_total_percent() / 100.0 * f64::from(self.cpus) * self.elapsed.as_secs_f64() * 1e6
    }
}

/// Who and what an end is.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// `uname -srvm`-style system line.
    pub system: String,
    /// perfpeer version.
    pub version: String,
}

/// Addresses of one data stream at the reporting end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketInfo {
    /// Stream id.
    pub id: u32,
    /// Local address (`ip:port`).
    pub local: String,
    /// Remote address (`ip:port`).
    pub remote: String,
    /// What the kernel says about a DCCP stream (CCIDs, maximum packet size, TFRC state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dccp: Option<crate::dccp::DccpStreamInfo>,
}

/// Everything one end measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    /// Client or server.
    pub role: PeerRole,
    /// The host.
    pub host: HostInfo,
    /// Data sockets.
    pub sockets: Vec<SocketInfo>,
    /// SO_SNDBUF as the kernel set it on the data sockets.
    pub sndbuf_actual: Option<u32>,
    /// SO_RCVBUF as the kernel set it on the data sockets.
    pub rcvbuf_actual: Option<u32>,
    /// TCP MSS of the data sockets.
    pub tcp_mss: Option<u32>,
    /// Congestion control in use on the data sockets.
    pub congestion_used: Option<String>,
    /// Interval reports in order.
    pub intervals: Vec<IntervalReport>,
    /// Per-stream totals.
    pub streams: Vec<StreamFinal>,
    /// CPU over the measured period.
    pub cpu: CpuUsage,
}

impl SideReport {
    /// The TCP sample of stream `id`'s last interval that has one.
    pub fn last_tcp_sample(&self, id: u32) -> Option<TcpSample> {
        self.intervals
            .iter()
            .rev()
            .flat_map(|i| i.streams.iter())
            .find(|s| s.id == id && s.tcp.is_some())
            .and_then(|s| s.tcp)
    }

    /// The Wi-Fi link at this end over the test, from its intervals' readings (each with the
    /// interval's goodput where this report has its streams), `None` without a radio.
    pub fn link_summary(&self) -> Option<crate::wifi::LinkSummary> {
        let readings: Vec<crate::wifi::IntervalLink<'_>> = self
            .intervals
            .iter()
            .filter_map(|i| {
                let sample = i.wifi.as_deref()?;
                let rate = |role| i.sum(role).map_or(0.0, |s| s.bits_per_second);
                let goodput = (!i.streams.is_empty())
                    .then(|| (rate(StreamRole::Sender), rate(StreamRole::Receiver)));
                Some((sample, goodput))
            })
            .collect();
        // A far side's final report has no streams in its intervals: its totals say which way
        // it sent.
        let bytes = |role| {
            self.streams
                .iter()
                .filter(|s| s.role == role)
                .map(|s| s.bytes)
                .sum::<u64>()
        };
        let sent_more = (!self.streams.is_empty())
            .then(|| bytes(StreamRole::Sender) >= bytes(StreamRole::Receiver));
        crate::wifi::LinkSummary::build(&readings, sent_more)
    }

    /// This report as a final one to the other end: without its intervals (the other end had
    /// them live), except each interval's Wi-Fi reading, kept in an interval without streams,
    /// so the other end's result has this end's radio per interval too.
    pub fn with_link_intervals_only(&self) -> SideReport {
        let mut summary = self.clone();
        summary.intervals.retain(|i| i.wifi.is_some());
        for i in &mut summary.intervals {
            i.streams.clear();
        }
        summary
    }

    /// A report of `role` with nothing measured yet (or nothing the other end could tell): no
    /// sockets, streams, intervals or CPU figures.
    pub fn empty(role: PeerRole, host: HostInfo) -> SideReport {
        SideReport {
            role,
            host,
            sockets: Vec::new(),
            sndbuf_actual: None,
            rcvbuf_actual: None,
            tcp_mss: None,
            congestion_used: None,
            intervals: Vec::new(),
            streams: Vec::new(),
            cpu: CpuUsage::default(),
        }
    }
}

crate::tagged_enum! {
    tag = "status", rename_all = "lowercase";
    /// How a test ended.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum TestStatus {
        /// Ran to its end condition and both ends reported.
        Complete,
        /// Stopped early (the other end vanished, a stream broke, …); the figures cover what ran.
        Partial {
            /// Why.
            reason: String,
        },
        /// Someone stopped it on purpose (Ctrl-C, a browser's cancel, the peer shutting down); the
        /// figures cover what ran.
        Cancelled,
    }
}

impl TestStatus {
    /// Why the test did not run to its end (`"cancelled"` for a cancel), or `None` if it did.
    pub fn ended_early(&self) -> Option<&str> {
        match self {
            TestStatus::Complete => None,
            TestStatus::Partial { reason } => Some(reason),
            TestStatus::Cancelled => Some("cancelled"),
        }
    }
}

/// A finished (or partial) test as one end renders it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Test id (the session cookie's public half).
    pub id: String,
    /// What ran.
    pub spec: TestSpec,
    /// Start time, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// The peer the client connected to (`host`, `port`).
    pub server_addr: String,
    /// The end this result is rendered for.
    pub local: SideReport,
    /// The other end's report, when it arrived.
    pub remote: Option<SideReport>,
    /// A multicast test's receivers, each with what it reported (the far end is the group,
    /// so `remote` is empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_receivers: Vec<crate::multicast::GroupReceiver>,
    /// A bounce-back test's working load (`--bounceback-congest`): what it achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_load: Option<crate::working_load::WorkingLoadResult>,
    /// How it ended.
    #[serde(flatten)]
    pub status: TestStatus,
}

impl TestResult {
    /// The result with the Wi-Fi link left out at both ends (`--no-wifi`).
    pub fn without_wifi(&self) -> TestResult {
        let mut r = self.clone();
        for side in std::iter::once(&mut r.local).chain(r.remote.as_mut()) {
            for i in &mut side.intervals {
                i.wifi = None;
            }
        }
        r
    }
}

/// Totals of one role across the streams of one direction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DirectionTotals {
    /// Bytes.
    pub bytes: u64,
    /// Longest stream duration.
    pub seconds: f64,
    /// bit/s.
    pub bits_per_second: f64,
    /// Summed retransmits (TCP sender with TCP info).
    pub retransmits: Option<u64>,
    /// Summed datagrams sent (UDP sender).
    pub packets: Option<u64>,
    /// UDP receiver figures summed (jitter averaged).
    pub udp_rx: Option<UdpRxFinal>,
    /// The TCP senders' smoothed RTT over the test (TCP_INFO, sampled each interval).
    pub tcp_rtt: Option<TcpRtt>,
    /// The TCP receivers' one-way delays of their writes, combined (`--trip-times`).
    pub write_one_way: Option<crate::one_way::OneWayFinal>,
    /// The TCP receivers' video frames, combined (`--isochronous` over TCP).
    pub write_frames: Option<crate::video::FrameFinal>,
}

impl DirectionTotals {
    /// The one-way delays of the direction's datagrams (UDP) or writes (TCP), combined.
    pub fn one_way(&self) -> Option<&crate::one_way::OneWayFinal> {
        self.udp_rx
            .as_ref()
            .and_then(|r| r.one_way.as_ref())
            .or(self.write_one_way.as_ref())
    }

    /// The video frames of the direction's datagrams (UDP) or writes (TCP), combined.
    pub fn frames(&self) -> Option<&crate::video::FrameFinal> {
        self.udp_rx
            .as_ref()
            .and_then(|r| r.frames.as_ref())
            .or(self.write_frames.as_ref())
    }
}

/// The round-trip time TCP itself measured for a direction's streams, µs: the smallest and
/// largest sample of any stream, and the mean of the streams' means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRtt {
    /// Smallest.
    pub min_us: u32,
    /// Mean of the streams' means.
    pub mean_us: u32,
    /// Largest.
    pub max_us: u32,
}

/// One direction of data flow: its streams paired sender-to-receiver, and both ends' totals.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow<'a> {
    /// Whether data flows client → server.
    pub client_to_server: bool,
    /// (sender's view, receiver's view) per stream id; a view is missing if its end did not report.
    pub streams: Vec<(u32, Option<&'a StreamFinal>, Option<&'a StreamFinal>)>,
    /// Sender totals.
    pub sent: Option<DirectionTotals>,
    /// Receiver totals.
    pub received: Option<DirectionTotals>,
}

impl SideReport {
    /// This side's receiving streams, and their totals (what a flow's `received` is): one
    /// multicast receiver's figures.
    pub fn received(&self) -> (Vec<&StreamFinal>, Option<DirectionTotals>) {
        let streams = streams_of(Some(self), StreamRole::Receiver);
        let totals = totals(&streams);
        (streams, totals)
    }
}

fn streams_of(side: Option<&SideReport>, role: StreamRole) -> Vec<&StreamFinal> {
    side.map(|s| s.streams.iter().filter(|st| st.role == role).collect())
        .unwrap_or_default()
}

fn totals(streams: &[&StreamFinal]) -> Option<DirectionTotals> {
    if streams.is_empty() {
        return None;
    }
    let bytes = streams.iter().map(|s| s.bytes).sum();
    let seconds = streams
        .iter()
        .map(|s| s.duration.as_secs_f64())
        .fold(0.0, f64::max);
    let udp_rx = {
        let rx: Vec<&UdpRxFinal> = streams.iter().filter_map(|s| s.udp_rx.as_ref()).collect();
        (!rx.is_empty()).then(|| UdpRxFinal {
            received: rx.iter().map(|r| r.received).sum(),
            sender_packets: sum_all(rx.iter().map(|r| r.sender_packets)),
            lost: rx.iter().map(|r| r.lost).sum(),
            out_of_order: rx.iter().map(|r| r.out_of_order).sum(),
            duplicates: rx.iter().map(|r| r.duplicates).sum(),
            jitter_ms: rx.iter().map(|r| r.jitter_ms).sum::<f64>() / rx.len() as f64,
            max_gap_ms: rx.iter().fold(None, |m, r| max_opt(m, r.max_gap_ms)),
            // Moments combine across streams; percentiles only for one stream.
            one_way: crate::one_way::OneWayFinal::combine(
                &rx.iter()
                    .filter_map(|r| r.one_way.clone())
                    .collect::<Vec<_>>(),
            ),
            frames: crate::video::FrameFinal::combine(
                &rx.iter()
                    .filter_map(|r| r.frames.as_ref())
                    .collect::<Vec<_>>(),
            ),
        })
    };
    let tcp: Vec<TcpFinal> = streams.iter().filter_map(|s| s.tcp).collect();
    let tcp_rtt = (!tcp.is_empty() && tcp.iter().any(|t| t.mean_rtt_us > 0)).then(|| TcpRtt {
        min_us: tcp.iter().map(|t| t.min_rtt_us).min().unwrap_or(0),
        mean_us: u32::try_from(
            tcp.iter().map(|t| u64::from(t.mean_rtt_us)).sum::<u64>() / tcp.len() as u64,
        )
        .unwrap_or(u32::MAX),
        max_us: tcp.iter().map(|t| t.max_rtt_us).max().unwrap_or(0),
    });
    Some(DirectionTotals {
        tcp_rtt,
        bytes,
        seconds,
        bits_per_second: bits_per_second(bytes, seconds),
        retransmits: sum_all(streams.iter().map(|s| s.tcp.map(|t| t.retransmits))),
        packets: sum_all(streams.iter().map(|s| s.packets)),
        udp_rx,
        write_one_way: crate::one_way::OneWayFinal::combine(
            &streams
                .iter()
                .filter_map(|s| s.write_one_way.clone())
                .collect::<Vec<_>>(),
        ),
        write_frames: crate::video::FrameFinal::combine(
            &streams
                .iter()
                .filter_map(|s| s.write_frames.as_ref())
                .collect::<Vec<_>>(),
        ),
    })
}

impl TestResult {
    /// Which way the data went, seen from the peer that measured or kept this result (`local`).
    pub fn sending_here(&self) -> Sending {
        Sending::seen_from(self.spec.direction, self.local.role)
    }

    /// Whether the peer that measured or kept this result (`local`) is the sender of `flow`.
    pub fn sent_from_here(&self, flow: &Flow<'_>) -> bool {
        flow.client_to_server == (self.local.role == PeerRole::Client)
    }

    /// The client's and the server's reports, whichever of them is local.
    pub fn sides(&self) -> (Option<&SideReport>, Option<&SideReport>) {
        match self.local.role {
            PeerRole::Client => (Some(&self.local), self.remote.as_ref()),
            PeerRole::Server => (self.remote.as_ref(), Some(&self.local)),
        }
    }

    /// The report of `end` (client or server), whichever of the two is local.
    pub fn side(&self, end: PeerRole) -> Option<&SideReport> {
        let (client, server) = self.sides();
        match end {
            PeerRole::Client => client,
            PeerRole::Server => server,
        }
    }

    /// The bytes `end` moved: in each flow, what it sent if it is the sender, what it received
    /// if it is the receiver (the other view where its own is missing). For TCP the two views
    /// agree; for UDP a sender counts what it sent and a receiver what arrived.
    pub fn bytes_moved_by(&self, end: PeerRole) -> u64 {
        self.flows()
            .iter()
            .filter_map(|f| {
                let end_sends = f.client_to_server == (end == PeerRole::Client);
                if end_sends {
                    f.sent.as_ref().or(f.received.as_ref())
                } else {
                    f.received.as_ref().or(f.sent.as_ref())
                }
            })
            .map(|t| t.bytes)
            .sum()
    }

    /// Service demand of `end`: µs of its host's CPU time (all CPUs) per KB it moved, netperf's
    /// definition (its TCP_STREAM and UDP_STREAM count each end's own bytes; in --bidir an end
    /// counts both directions). The one figure every rendering shows. `None` without host CPU
    /// figures for that end.
    pub fn service_demand_us_per_kb(&self, end: PeerRole) -> Option<f64> {
        self.side(end)?
            .cpu
            .service_demand_us_per_kb(self.bytes_moved_by(end))
    }

    /// Service demand of `end` as every rendering shows it: the figure, or, where the test was
    /// under [`MIN_DEMAND_SHARE`] of that host's busy CPU time, why it is not one. The one rule
    /// for the page, the tool tabs and the CLI.
    pub fn service_demand(&self, end: PeerRole) -> Option<ServiceDemand> {
        let us_per_kb = self.service_demand_us_per_kb(end)?;
        let cpu = self.side(end)?.cpu;
        Some(match cpu.share_of_host_busy() {
            Some(share) if cpu.demand_is_noise() => ServiceDemand::NotMeaningful {
                share_of_host_busy: share,
            },
            _ => ServiceDemand::UsPerKb(us_per_kb),
        })
    }

    /// A request/response test's transactions and the seconds they took (from the end that
    /// sent the requests); `None` for other tests.
    pub fn rr_final(&self) -> Option<(crate::rr::RrFinal, f64)> {
        std::iter::once(&self.local)
            .chain(self.remote.as_ref())
            .flat_map(|side| side.streams.iter())
            .find_map(|s| s.rr.map(|rr| (rr, s.duration.as_secs_f64())))
    }

    /// The data flows of the test: client→server first, then server→client.
    pub fn flows(&self) -> Vec<Flow<'_>> {
        let (client, server) = self.sides();
        let mut flows = Vec::new();
        for client_to_server in [true, false] {
            let sends = if client_to_server {
                self.spec.direction.client_sends()
            } else {
                self.spec.direction.server_sends()
            };
            if !sends {
                continue;
            }
            let (tx_side, rx_side) = if client_to_server {
                (client, server)
            } else {
                (server, client)
            };
            let tx = streams_of(tx_side, StreamRole::Sender);
            let rx = streams_of(rx_side, StreamRole::Receiver);
            let mut ids: Vec<u32> = tx.iter().chain(rx.iter()).map(|s| s.id).collect();
            ids.sort_unstable();
            ids.dedup();
            let streams = ids
                .into_iter()
                .map(|id| {
                    (
                        id,
                        tx.iter().copied().find(|s| s.id == id),
                        rx.iter().copied().find(|s| s.id == id),
                    )
                })
                .collect();
            flows.push(Flow {
                client_to_server,
                streams,
                sent: totals(&tx),
                received: totals(&rx),
            });
        }
        flows
    }
}

#[cfg(test)]
pub(crate) mod service_demand_tests {
    //! Service demand by hand: each end's host CPU time over the bytes it moved.
    use super::*;
    use crate::spec::{Direction, Protocol, TestSpec};

    /// Half of 2 CPUs busy for 2 s: 2 s = 2,000,000 µs of CPU.
    fn busy_cpu() -> CpuUsage {
        CpuUsage {
            elapsed: Duration::from_secs(2),
            host_user_percent: 30.0,
            host_system_percent: 20.0,
            cpus: 2,
            ..CpuUsage::default()
        }
    }

    pub(crate) fn stream(id: u32, role: StreamRole, bytes: u64) -> StreamFinal {
        StreamFinal {
            id,
            role,
            bytes,
            duration: Duration::from_secs(2),
            packets: None,
            tcp: None,
            udp_rx: None,
            rr: None,
            writes: None,
            write_one_way: None,
            write_frames: None,
        }
    }

    pub(crate) fn side(role: PeerRole, streams: Vec<StreamFinal>) -> SideReport {
        SideReport {
            streams,
            cpu: busy_cpu(),
            ..SideReport::empty(role, HostInfo::default())
        }
    }

    pub(crate) fn result(spec: TestSpec, client: SideReport, server: SideReport) -> TestResult {
        TestResult {
            id: "t".into(),
            spec,
            started_unix_ms: 0,
            server_addr: String::new(),
            local: client,
            remote: Some(server),
            group_receivers: Vec::new(),
            working_load: None,
            status: TestStatus::Complete,
        }
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn parallel_streams_count_together() {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.streams = 2;
        let client = side(
            PeerRole::Client,
            vec![
                stream(1, StreamRole::Sender, MIB),
                stream(2, StreamRole::Sender, MIB),
            ],
        );
        let server = side(
            PeerRole::Server,
            vec![
                stream(1, StreamRole::Receiver, MIB),
                stream(2, StreamRole::Receiver, MIB),
            ],
        );
        let r = result(spec, client, server);
        // 2,000,000 µs over 2048 KB.
        let expected = 2_000_000.0 / 2048.0;
        for end in [PeerRole::Client, PeerRole::Server] {
            assert_eq!(r.bytes_moved_by(end), 2 * MIB);
            let sd = r.service_demand_us_per_kb(end).unwrap();
            assert!((sd - expected).abs() < 1e-9, "{end:?}: {sd}");
        }
    }

    #[test]
    fn in_bidir_an_end_counts_both_directions() {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.direction = Direction::Bidir;
        // Stream 1 goes client → server, stream 2 server → client.
        let client = side(
            PeerRole::Client,
            vec![
                stream(1, StreamRole::Sender, MIB),
                stream(2, StreamRole::Receiver, 3 * MIB),
            ],
        );
        let server = side(
            PeerRole::Server,
            vec![
                stream(1, StreamRole::Receiver, MIB),
                stream(2, StreamRole::Sender, 3 * MIB),
            ],
        );
        let r = result(spec, client, server);
        assert_eq!(r.bytes_moved_by(PeerRole::Client), 4 * MIB);
        let sd = r.service_demand_us_per_kb(PeerRole::Server).unwrap();
        assert!((sd - 2_000_000.0 / 4096.0).abs() < 1e-9, "{sd}");
    }

    #[test]
    fn over_udp_the_sender_counts_what_it_sent_the_receiver_what_arrived() {
        let spec = TestSpec::new(Protocol::Udp);
        let client = side(
            PeerRole::Client,
            vec![stream(1, StreamRole::Sender, 1000 * 1024)],
        );
        let server = side(
            PeerRole::Server,
            vec![stream(1, StreamRole::Receiver, 800 * 1024)],
        );
        let r = result(spec, client, server);
        let sender = r.service_demand_us_per_kb(PeerRole::Client).unwrap();
        let receiver = r.service_demand_us_per_kb(PeerRole::Server).unwrap();
        assert!((sender - 2000.0).abs() < 1e-9, "{sender}");
        assert!((receiver - 2500.0).abs() < 1e-9, "{receiver}");
        // Without host figures there is no service demand, not a zero.
        let mut quiet = r.clone();
        quiet.local.cpu = CpuUsage::default();
        assert_eq!(quiet.service_demand_us_per_kb(PeerRole::Client), None);
    }

    #[test]
    fn service_demand_is_a_figure_or_not_meaningful_by_one_rule() {
        let mut client = side(PeerRole::Client, vec![stream(1, StreamRole::Sender, MIB)]);
        // 0.5 s of the host's 2 s busy time (50 % of 2 CPUs for 2 s): a quarter.
        client.cpu.process_user_s = 0.5;
        let server = side(PeerRole::Server, vec![stream(1, StreamRole::Receiver, MIB)]);
        let r = result(TestSpec::new(Protocol::Tcp), client, server);
        let figure = r.service_demand(PeerRole::Client).unwrap();
        assert_eq!(
            figure.us_per_kb(),
            r.service_demand_us_per_kb(PeerRole::Client)
        );
        assert!(figure.words().ends_with(" µs/KB"), "{}", figure.words());
        // A far end whose process took 2 ms of its host's 2 s busy time: not the test's cost.
        let mut r = r;
        r.remote.as_mut().unwrap().cpu.process_user_s = 0.002;
        let noise = r.service_demand(PeerRole::Server).unwrap();
        assert!(
            matches!(noise, ServiceDemand::NotMeaningful { share_of_host_busy } if (share_of_host_busy - 0.001).abs() < 1e-9),
            "{noise:?}"
        );
        assert_eq!(noise.us_per_kb(), None);
        assert!(noise.words().starts_with("not meaningful"));
        // A stock far end (netserver) reports its host's time alone: a figure, not judged.
        r.remote.as_mut().unwrap().cpu.process_user_s = 0.0;
        assert!(matches!(
            r.service_demand(PeerRole::Server),
            Some(ServiceDemand::UsPerKb(_))
        ));
    }

    #[test]
    fn the_direction_is_told_from_the_peer_that_shows_it() {
        use Sending::{Both, OtherPeer, ThisPeer};
        for (direction, client_sees, server_sees) in [
            (Direction::Normal, ThisPeer, OtherPeer),
            (Direction::Reverse, OtherPeer, ThisPeer),
            (Direction::Bidir, Both, Both),
        ] {
            assert_eq!(Sending::seen_from(direction, PeerRole::Client), client_sees);
            assert_eq!(Sending::seen_from(direction, PeerRole::Server), server_sees);
        }
        let mut spec = TestSpec::new(Protocol::Udp);
        spec.direction = Direction::Normal;
        let client = side(PeerRole::Client, vec![stream(1, StreamRole::Sender, MIB)]);
        let server = side(PeerRole::Server, vec![stream(1, StreamRole::Receiver, MIB)]);
        let mut kept_by_far_end = result(spec, client, server);
        std::mem::swap(
            &mut kept_by_far_end.local,
            kept_by_far_end.remote.as_mut().unwrap(),
        );
        assert_eq!(kept_by_far_end.sending_here(), OtherPeer);
        let flows = kept_by_far_end.flows();
        assert!(!kept_by_far_end.sent_from_here(&flows[0]));
    }
}

#[cfg(test)]
mod statistics_tests {
    //! The derived figures of the model, each checked against a value worked out by hand.
    use super::service_demand_tests::{result, side, stream};
    use super::*;
    use crate::spec::{Direction, Protocol, TestSpec};

    fn tcp_stream(
        id: u32,
        role: StreamRole,
        bytes: u64,
        retransmits: Option<u64>,
    ) -> StreamInterval {
        StreamInterval {
            id,
            role,
            bytes,
            packets: None,
            writes: None,
            tcp: retransmits.map(|r| TcpSample {
                retransmits: r,
                ..TcpSample::default()
            }),
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
        }
    }

    fn half_second(streams: Vec<StreamInterval>) -> IntervalReport {
        IntervalReport {
            start: Duration::from_millis(1500),
            end: Duration::from_millis(2000),
            omitted: false,
            streams,
            wifi: None,
        }
    }

    #[test]
    fn an_interval_sums_one_role_and_its_rate_over_its_own_length() {
        let report = half_second(vec![
            tcp_stream(1, StreamRole::Sender, 1_000_000, Some(3)),
            tcp_stream(2, StreamRole::Sender, 500_000, Some(4)),
            tcp_stream(3, StreamRole::Receiver, 42, None),
        ]);
        assert_eq!(report.seconds(), 0.5);
        let sent = report.sum(StreamRole::Sender).unwrap();
        assert_eq!(sent.bytes, 1_500_000);
        // 1.5 MB in 0.5 s = 24 Mbit/s.
        assert_eq!(sent.bits_per_second, 24_000_000.0);
        assert_eq!(sent.retransmits, Some(7));
        let received = report.sum(StreamRole::Receiver).unwrap();
        assert_eq!((received.bytes, received.retransmits), (42, None));
        // Retransmits are summed only when every stream reported them.
        let mixed = half_second(vec![
            tcp_stream(1, StreamRole::Sender, 1, Some(3)),
            tcp_stream(2, StreamRole::Sender, 1, None),
        ]);
        assert_eq!(mixed.sum(StreamRole::Sender).unwrap().retransmits, None);
        assert!(half_second(Vec::new()).sum(StreamRole::Sender).is_none());
    }

    #[test]
    fn udp_intervals_add_counts_average_jitter_and_keep_the_longest_gap() {
        let rx = |packets, lost, jitter_ms, max_gap_ms| StreamInterval {
            udp_rx: Some(UdpRxSample {
                packets,
                lost,
                out_of_order: 1,
                duplicates: 0,
                jitter_ms,
                max_gap_ms,
            }),
            ..tcp_stream(1, StreamRole::Receiver, packets * 100, None)
        };
        let report = half_second(vec![rx(100, 5, 1.0, Some(2.5)), rx(300, 15, 3.0, None)]);
        let sum = report.sum(StreamRole::Receiver).unwrap().udp_rx.unwrap();
        assert_eq!((sum.packets, sum.lost, sum.out_of_order), (400, 20, 2));
        assert_eq!(sum.jitter_ms, 2.0, "the mean of the streams' jitter");
        assert_eq!(sum.max_gap_ms, Some(2.5));
        // 20 of 400 expected.
        assert_eq!(sum.lost_percent(), 5.0);
    }

    #[test]
    fn rates_and_loss_at_the_edges() {
        assert_eq!(bits_per_second(1_000, 0.0), 0.0);
        assert_eq!(bits_per_second(125, 1.0), 1000.0);
        let none_expected = UdpRxFinal::default();
        assert_eq!(none_expected.lost_percent(), 0.0);
        let udp = UdpRxFinal {
            received: 990,
            lost: 10,
            ..UdpRxFinal::default()
        };
        assert_eq!(udp.expected(), 1000);
        assert_eq!(udp.lost_percent(), 1.0);
        // 2 MB over the fixture's 2 s.
        let received = stream(1, StreamRole::Receiver, 2_000_000);
        assert_eq!(received.bits_per_second(), 8_000_000.0);
    }

    #[test]
    fn cpu_figures_in_percent_of_one_cpu_and_of_the_host() {
        let cpu = CpuUsage {
            elapsed: Duration::from_secs(4),
            process_user_s: 1.0,
            process_system_s: 3.0,
            host_user_percent: 10.0,
            host_system_percent: 15.0,
            cpus: 4,
        };
        assert_eq!(cpu.process_user_percent(), 25.0);
        assert_eq!(cpu.process_system_percent(), 75.0);
        assert_eq!(cpu.process_total_percent(), 100.0);
        assert_eq!(cpu.host_total_percent(), 25.0);
        assert!(cpu.measured() && cpu.host_measured());
        // 25 % of 4 CPUs for 4 s = 4 CPU-seconds = 4e6 µs, over 4000 KB = 1000 µs/KB.
        assert_eq!(cpu.service_demand_us_per_kb(4000 * 1024), Some(1000.0));
        assert_eq!(cpu.service_demand_us_per_transaction(8000), Some(500.0));
        assert_eq!(cpu.service_demand_us_per_kb(0), None);
        let stock = CpuUsage::default();
        assert!(!stock.measured() && !stock.host_measured());
        assert_eq!(stock.process_total_percent(), 0.0);
        assert_eq!(stock.service_demand_us_per_kb(1 << 20), None);
    }

    #[test]
    fn flows_pair_each_streams_sender_and_receiver_by_id() {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.direction = Direction::Bidir;
        spec.streams = 1;
        let client = side(
            PeerRole::Client,
            vec![
                stream(1, StreamRole::Sender, 100),
                stream(2, StreamRole::Receiver, 70),
            ],
        );
        let server = side(
            PeerRole::Server,
            vec![
                stream(1, StreamRole::Receiver, 90),
                stream(2, StreamRole::Sender, 80),
            ],
        );
        let result = result(spec, client, server);
        let flows = result.flows();
        assert_eq!(flows.len(), 2);
        let (up, down) = (&flows[0], &flows[1]);
        assert!(up.client_to_server && !down.client_to_server);
        let (id, tx, rx) = up.streams[0];
        assert_eq!((id, tx.unwrap().bytes, rx.unwrap().bytes), (1, 100, 90));
        let (id, tx, rx) = down.streams[0];
        assert_eq!((id, tx.unwrap().bytes, rx.unwrap().bytes), (2, 80, 70));
        assert_eq!(up.sent.as_ref().unwrap().bytes, 100);
        assert_eq!(down.received.as_ref().unwrap().bytes, 70);
        // Without the far end's report, only this end's views are there.
        let alone = TestResult {
            remote: None,
            ..result
        };
        let flows = alone.flows();
        assert!(flows[0].received.is_none() && flows[0].sent.is_some());
        assert!(flows[1].sent.is_none() && flows[1].received.is_some());
    }
}
