//! The test specification: what one test runs. A CLI invocation and a browser's `start` message
//! both end up as one [`TestSpec`], validated here once (two-stage input: parse, then validate).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dccp::{DccpSpec, KNOWN_CCIDS};
use crate::units::{BitRate, serde_secs};

/// Transport under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// A TCP byte stream.
    Tcp,
    /// UDP datagrams carrying sequence numbers and send timestamps.
    Udp,
    /// DCCP (RFC 4340): connection-oriented, congestion-controlled datagrams, with the same
    /// datagram header and statistics as UDP; options in [`TestSpec::dccp`].
    Dccp,
}

impl Protocol {
    /// The name iperf3 prints (`"TCP"`, `"UDP"`).
    pub fn upper_name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Dccp => "DCCP",
        }
    }

    /// Whether data travels as datagrams with our sequence header (UDP, DCCP).
    pub fn is_datagram(self) -> bool {
        matches!(self, Protocol::Udp | Protocol::Dccp)
    }
}

/// Who sends, seen from the peer that starts the test (the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The client sends, the server receives (iperf3's default; "TX" from the client's view).
    Normal,
    /// The server sends, the client receives (iperf3 `-R`; "RX").
    Reverse,
    /// Both send at once on separate streams (iperf3 `--bidir`).
    Bidir,
}

impl Direction {
    /// Whether the client has sending streams.
    pub fn client_sends(self) -> bool {
        matches!(self, Direction::Normal | Direction::Bidir)
    }
    /// Whether the server has sending streams.
    pub fn server_sends(self) -> bool {
        matches!(self, Direction::Reverse | Direction::Bidir)
    }
}

crate::tagged_enum! {
    tag = "kind", rename_all = "lowercase";
    /// When a test ends.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum EndCondition {
        /// After this long (not counting the omitted start).
        Time {
            /// Measured duration.
            #[serde(with = "serde_secs")]
            duration: Duration,
        },
        /// After this many bytes have been sent by each sending direction (all its streams
        /// together).
        Bytes {
            /// Byte budget per direction.
            bytes: u64,
        },
    }
}

/// Request/response mode (`--rr`, like netperf's TCP_RR): the client writes a request of the
/// spec's `len` bytes, the server answers with `response_len` bytes, one transaction at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestResponse {
    /// Bytes per response.
    pub response_len: u32,
    /// A latency probe instead of one transaction in flight (UDP only): the requester sends a
    /// request every this many µs, whatever is answered, and the answerer stamps each answer
    /// with its receive and send times (`perfpeer_proto::probe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_interval_us: Option<u32>,
    /// netperf's connection tests: a new TCP connection for each transaction. Only a netserver
    /// runs them (`perfpeer netperf --netserver -t TCP_CRR`); perfpeer's own protocol has no
    /// such mode, so [`TestSpec::validate`] refuses it and a perfpeer peer never sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_per_transaction: Option<ConnectionTest>,
    /// Bounce-back (iperf 2's `--bounceback`): the transactions come in bursts, a burst every
    /// period, and the answering end holds each answer; TCP only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bursts: Option<Bursts>,
}

/// Bursts of request/response round trips (iperf 2's bounce-back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bursts {
    /// Round trips in a burst, one after another.
    pub count: u32,
    /// From one burst's start to the next one's, µs.
    pub period_us: u32,
    /// How long the answering end holds each answer, µs.
    pub hold_us: u32,
    /// TCP streams to the same peer beside the bursts (iperf 2's `--bounceback-congest`):
    /// the client runs them as a test of their own; the far end serves the bursts alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congest: Option<crate::working_load::WorkingLoad>,
}

/// Most round trips in a burst.
pub const MAX_BURST_COUNT: u32 = 1000;
/// Longest period between bursts: 60 s.
pub const MAX_BURST_PERIOD_US: u32 = 60_000_000;
/// Longest hold of an answer: 1 s (as `perfpeer iperf -s` holds a stock client's).
pub const MAX_HOLD_US: u32 = 1_000_000;

/// What each connection of a connection test carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionTest {
    /// A request and its response, then the close (netperf's TCP_CRR).
    RequestResponse,
    /// Nothing: connect, then close (netperf's TCP_CC).
    ConnectOnly,
}

/// Shortest probe interval: 1 ms (1000 requests a second).
pub const MIN_PROBE_INTERVAL_US: u32 = 1_000;
/// Longest probe interval: 1 s.
pub const MAX_PROBE_INTERVAL_US: u32 = 1_000_000;
/// Smallest probe request: sequence number and send time.
pub const MIN_PROBE_REQUEST: u32 = 16;
/// Smallest probe answer: the request echoed, two time stamps and a count.
pub const MIN_PROBE_ANSWER: u32 = 40;

/// Largest request or response in request/response mode.
pub const MAX_RR_LEN: u32 = 65_536;

/// Everything that defines one test. Field names are the browser's too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    /// Transport.
    pub protocol: Protocol,
    /// Who sends.
    pub direction: Direction,
    /// When to stop.
    pub end: EndCondition,
    /// Start period left out of the totals (`-O`).
    #[serde(with = "serde_secs", default)]
    pub omit: Duration,
    /// Report interval (`-i`).
    #[serde(with = "serde_secs")]
    pub interval: Duration,
    /// Streams per sending direction (`-P`).
    pub streams: u16,
    /// Bytes per write (TCP) or per datagram (UDP) (`-l`).
    pub len: u32,
    /// Target rate for the whole test per direction, spread over its streams; `None` = unlimited.
    pub bitrate: Option<BitRate>,
    /// Writes (datagrams) each stream sends back to back before it waits for the rate
    /// (iperf3's `-b RATE/BURST`); `None` = evenly spaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Socket buffer size for SO_SNDBUF and SO_RCVBUF (`-w`).
    pub window: Option<u32>,
    /// TCP maximum segment size (`-M`).
    pub mss: Option<u32>,
    /// TCP congestion control algorithm (`-C`).
    pub congestion: Option<String>,
    /// TCP_NODELAY on data sockets (`-N`).
    #[serde(default)]
    pub no_delay: bool,
    /// IP TOS / IPv6 traffic class (`-S`).
    pub tos: Option<u8>,
    /// Request/response mode instead of a bulk transfer (`--rr`; TCP, not bidir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RequestResponse>,
    /// Receivers discard data in the kernel instead of copying it to user space (MSG_TRUNC, like
    /// iperf3's `--skip-rx-copy`); a UDP receiver still reads each datagram's header.
    #[serde(default)]
    pub skip_rx_copy: bool,
    /// Pace TCP senders with the kernel's SO_MAX_PACING_RATE (TCP's own pacing, or the fq qdisc)
    /// instead of perfpeer's clock (`--fq-pacing`, like iperf3's `--fq-rate`; needs `-b`).
    #[serde(default)]
    pub fq_pacing: bool,
    /// One-way delay of every datagram (`--trip-times`, iperf 2's name): senders stamp their
    /// wall-clock time, receivers read it against theirs (UDP; exact on one host, as good as the
    /// clocks' synchronisation between two).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trip_times: bool,
    /// Receivers also count the one-way delays in bins of a fixed width (`--histograms`,
    /// iperf 2's): needs `trip_times`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<crate::histogram::HistogramSpec>,
    /// Video-like frames instead of an even rate (`--isochronous`, iperf 2's): UDP, with
    /// `trip_times` (frames are timed on the clocks), no `bitrate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<crate::video::VideoSpec>,
    /// Send to a multicast group, received by any number of perfpeer peers that each report
    /// back over their control connection (one UDP stream, client to group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<crate::multicast::MulticastSpec>,
    /// DCCP service code and CCID (DCCP only; `None` = the defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dccp: Option<DccpSpec>,
    /// What the result must show to pass (`rx>=300M`, …): judged by the peer that runs the
    /// test, when it ends ([`crate::verdict`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<crate::verdict::Expectation>,
}

/// Default TCP write size, as iperf3: 128 KiB.
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// Default UDP datagram payload: fits a 1500-byte MTU over IPv4 and IPv6.
pub const DEFAULT_UDP_LEN: u32 = 1448;
/// Default UDP rate, as iperf3: 1 Mbit/s (iperf3 uses 1024×1024; we use the round 10^6).
pub const DEFAULT_UDP_RATE: BitRate = BitRate(1_000_000);
/// Smallest UDP datagram: our 16-byte sequence/timestamp header.
pub const MIN_UDP_LEN: u32 = 16;
/// Smallest TCP write of a `trip_times` test: its 16-byte stamp.
pub const MIN_TRIP_TIMES_TCP_LEN: u32 = 16;
/// Smallest datagram of a video test: the header and the 12-byte frame tag.
pub const MIN_VIDEO_LEN: usize = 28;
/// Smallest write of a video test over TCP: iperf 2's 92-byte write stamp, which each frame
/// starts with.
pub const MIN_TCP_VIDEO_LEN: usize = 92;
/// Largest UDP payload over IPv4.
pub const MAX_UDP_LEN: u32 = 65_507;
/// Default DCCP packet payload: under the maximum packet size of a 1500-byte MTU path.
pub const DEFAULT_DCCP_LEN: u32 = 1400;
/// Largest TCP write size accepted.
pub const MAX_TCP_LEN: u32 = 16 * 1024 * 1024;
/// Most streams per direction.
pub const MAX_STREAMS: u16 = 128;
/// Largest burst, as iperf3's.
pub const MAX_BURST: u32 = 1000;

impl TestSpec {
    /// A spec with iperf3's defaults for `protocol`: 10 s, 1 stream, 1 s intervals.
    pub fn new(protocol: Protocol) -> Self {
        let (len, bitrate) = match protocol {
            Protocol::Tcp => (DEFAULT_TCP_LEN, None),
            Protocol::Udp => (DEFAULT_UDP_LEN, Some(DEFAULT_UDP_RATE)),
            // DCCP is congestion-controlled: unlimited unless asked, like TCP.
            Protocol::Dccp => (DEFAULT_DCCP_LEN, None),
        };
        TestSpec {
            protocol,
            direction: Direction::Normal,
            end: EndCondition::Time {
                duration: Duration::from_secs(10),
            },
            omit: Duration::ZERO,
            interval: Duration::from_secs(1),
            streams: 1,
            len,
            bitrate,
            burst: None,
            window: None,
            mss: None,
            congestion: None,
            no_delay: false,
            tos: None,
            rr: None,
            skip_rx_copy: false,
            fq_pacing: false,
            trip_times: false,
            histogram: None,
            video: None,
            multicast: None,
            dccp: None,
            expect: Vec::new(),
        }
    }

    /// Checks every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(SpecError::Streams(self.streams));
        }
        if self.expect.len() > crate::verdict::MAX_EXPECTATIONS {
            return Err(SpecError::Expectations(self.expect.len()));
        }
        if let Some(e) = self
            .expect
            .iter()
            .find(|e| !e.metric.measured_by(self, false))
        {
            return Err(SpecError::NotMeasured(e.text().to_string()));
        }
        match self.protocol {
            // Request/response datagrams carry no perfpeer header: validate_rr bounds them.
            Protocol::Udp
                if self.rr.is_none() && !(MIN_UDP_LEN..=MAX_UDP_LEN).contains(&self.len) =>
            {
                return Err(SpecError::UdpLen(self.len));
            }
            Protocol::Tcp if self.len == 0 || self.len > MAX_TCP_LEN => {
                return Err(SpecError::TcpLen(self.len));
            }
            Protocol::Dccp if !(MIN_UDP_LEN..=MAX_UDP_LEN).contains(&self.len) => {
                return Err(SpecError::DccpLen(self.len));
            }
            _ => {}
        }
        match self.end {
            EndCondition::Time { duration } if duration.is_zero() || duration > MAX_TEST_TIME => {
                return Err(SpecError::Duration(duration));
            }
            EndCondition::Bytes { bytes: 0 } => return Err(SpecError::ZeroBytes),
            _ => {}
        }
        if self.omit > MAX_TEST_TIME {
            return Err(SpecError::Omit(self.omit));
        }
        if self.interval < MIN_INTERVAL || self.interval > MAX_INTERVAL {
            return Err(SpecError::Interval(self.interval));
        }
        if let Some(w) = self.window
            && !(1024..=1 << 30).contains(&w)
        {
            return Err(SpecError::Window(w));
        }
        if let Some(m) = self.mss
            && !(88..=65_535).contains(&m)
        {
            return Err(SpecError::Mss(m));
        }
        if self.protocol.is_datagram() && (self.mss.is_some() || self.congestion.is_some()) {
            return Err(SpecError::TcpOnly);
        }
        if let Some(d) = self.dccp {
            if self.protocol != Protocol::Dccp {
                return Err(SpecError::DccpOnly);
            }
            if d.ccid.is_some_and(|c| !KNOWN_CCIDS.contains(&c)) {
                return Err(SpecError::Ccid(d.ccid.unwrap_or_default()));
            }
        }
        if let Some(cc) = &self.congestion
            && (cc.is_empty()
                || cc.len() > 15
                || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            // Named back as typed, but never more than a name's length: the words go back to
            // whoever sent the spec (a far end's refusal).
            let shown: String = cc.chars().take(16).collect();
            let shown = if shown.len() < cc.len() {
                format!("{shown}…")
            } else {
                shown
            };
            return Err(SpecError::Congestion(shown));
        }
        if self.fq_pacing && (self.protocol != Protocol::Tcp || self.per_stream_rate().is_none()) {
            return Err(SpecError::FqPacing);
        }
        // UDP stamps every datagram; TCP the first 16 bytes of every write, which its
        // receiver must read (so not discard).
        if self.trip_times
            && (self.protocol == Protocol::Dccp
                || self.rr.is_some()
                || (self.protocol == Protocol::Tcp
                    && (self.skip_rx_copy || self.len < MIN_TRIP_TIMES_TCP_LEN)))
        {
            return Err(SpecError::TripTimes);
        }
        if let Some(h) = self.histogram
            && (!self.trip_times || !h.is_valid())
        {
            return Err(SpecError::Histogram);
        }
        let video_len = match self.protocol {
            Protocol::Tcp => MIN_TCP_VIDEO_LEN,
            _ => MIN_VIDEO_LEN,
        };
        if let Some(v) = self.video
            && (!v.is_valid()
                || self.protocol == Protocol::Dccp
                || !self.trip_times
                || self.bitrate.is_some()
                || self.burst.is_some()
                || (self.len as usize) < video_len)
        {
            return Err(SpecError::Video);
        }
        if let Some(burst) = self.burst
            && (!(1..=MAX_BURST).contains(&burst) || self.per_stream_rate().is_none())
        {
            return Err(SpecError::Burst(burst));
        }
        if let Some(rr) = self.rr {
            self.validate_rr(rr)?;
        }
        if let Some(m) = self.multicast {
            m.check().map_err(SpecError::Multicast)?;
            if self.protocol != Protocol::Udp
                || self.direction != Direction::Normal
                || self.streams != 1
                || self.rr.is_some()
            {
                return Err(SpecError::Multicast(
                    "a multicast group takes one UDP stream sent to it (-u, without -R, --bidir, \
                     -P or --rr)"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    fn validate_rr(&self, rr: RequestResponse) -> Result<(), SpecError> {
        if self.protocol == Protocol::Dccp {
            return Err(SpecError::RrNeeds("TCP or UDP"));
        }
        if self.direction == Direction::Bidir {
            return Err(SpecError::RrNeeds("one direction (not --bidir)"));
        }
        if self.bitrate.is_some_and(|r| r.0 > 0) || self.fq_pacing {
            return Err(SpecError::RrNeeds("no rate limit"));
        }
        if !self.omit.is_zero() {
            return Err(SpecError::RrNeeds("no omitted start"));
        }
        if rr.connection_per_transaction.is_some() {
            return Err(SpecError::RrNeeds(
                "a netserver for a connection per transaction (perfpeer netperf --netserver)",
            ));
        }
        for len in [self.len, rr.response_len] {
            if len == 0 || len > MAX_RR_LEN {
                return Err(SpecError::RrLen(len));
            }
        }
        if let Some(b) = rr.bursts
            && (self.protocol != Protocol::Tcp
                || rr.probe_interval_us.is_some()
                || !(1..=MAX_BURST_COUNT).contains(&b.count)
                || !(1_000..=MAX_BURST_PERIOD_US).contains(&b.period_us)
                || b.hold_us > MAX_HOLD_US
                || b.congest.is_some_and(|load| {
                    !load.is_valid() || !matches!(self.end, EndCondition::Time { .. })
                }))
        {
            return Err(SpecError::Bursts);
        }
        if let Some(us) = rr.probe_interval_us {
            if self.protocol != Protocol::Udp || self.direction != Direction::Normal {
                return Err(SpecError::RrNeeds(
                    "UDP from the client for a latency probe",
                ));
            }
            if !(MIN_PROBE_INTERVAL_US..=MAX_PROBE_INTERVAL_US).contains(&us) {
                return Err(SpecError::ProbeInterval(us));
            }
            if self.len < MIN_PROBE_REQUEST || rr.response_len < MIN_PROBE_ANSWER {
                return Err(SpecError::ProbeLen(self.len, rr.response_len));
            }
        }
        Ok(())
    }

    /// Total time the test runs, including the omitted start (`None` for a byte-count test).
    pub fn total_time(&self) -> Option<Duration> {
        match self.end {
            EndCondition::Time { duration } => Some(duration + self.omit),
            EndCondition::Bytes { .. } => None,
        }
    }

    /// How long the test should take: its time, or for a byte count at a rate, the bytes at that
    /// rate (`None`: a byte count sent as fast as it goes).
    pub fn expected_duration(&self) -> Option<Duration> {
        match self.end {
            EndCondition::Time { .. } => self.total_time(),
            EndCondition::Bytes { bytes } => self.bitrate.filter(|r| r.0 > 0).map(|rate| {
                Duration::from_secs_f64(bytes as f64 * 8.0 / rate.0 as f64) + self.omit
            }),
        }
    }

    /// Target rate of one stream (the test's rate spread evenly over the streams of a direction).
    pub fn per_stream_rate(&self) -> Option<BitRate> {
        self.bitrate
            .filter(|r| r.0 > 0)
            .map(|r| BitRate((r.0 / u64::from(self.streams)).max(1)))
    }

    /// Every stream of the test as `(id, client_sends)`: ids start at 1; in bidir the
    /// client→server streams come first, then the server→client ones.
    pub fn stream_plan(&self) -> Vec<(u32, bool)> {
        let n = u32::from(self.streams);
        match self.direction {
            Direction::Normal => (1..=n).map(|id| (id, true)).collect(),
            Direction::Reverse => (1..=n).map(|id| (id, false)).collect(),
            Direction::Bidir => (1..=2 * n).map(|id| (id, id <= n)).collect(),
        }
    }

    /// Total number of streams in the test (both directions for bidir).
    pub fn total_streams(&self) -> u16 {
        match self.direction {
            Direction::Bidir => self.streams * 2,
            _ => self.streams,
        }
    }
}

/// Longest test accepted by the spec itself (a peer's `--max-duration` may be lower).
pub const MAX_TEST_TIME: Duration = Duration::from_secs(24 * 3600);
/// Shortest report interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest report interval: a test's longest, so that iperf3's `-i 0` (no reports during the
/// test, one for all of it) is an interval no test reaches.
pub const MAX_INTERVAL: Duration = MAX_TEST_TIME;

/// Why a [`TestSpec`] was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Too many expectations.
    #[error("at most {max} expectations on a test, got {0}", max = crate::verdict::MAX_EXPECTATIONS)]
    Expectations(usize),
    /// An expectation on a figure this test does not measure.
    #[error(
        "--expect {0}: this test does not measure that (loss and jitter need UDP or DCCP, retransmits TCP, rr --rr, p99 and added a latency-under-load run)"
    )]
    NotMeasured(String),
    /// Stream count out of range.
    #[error("parallel streams must be 1 to {MAX_STREAMS}, got {0}")]
    Streams(u16),
    /// UDP datagram size out of range.
    #[error("UDP length must be {MIN_UDP_LEN} to {MAX_UDP_LEN} bytes, got {0}")]
    UdpLen(u32),
    /// TCP write size out of range.
    #[error("TCP length must be 1 to {MAX_TCP_LEN} bytes, got {0}")]
    TcpLen(u32),
    /// Duration zero or too long.
    #[error("test time must be more than 0 and at most 24 h, got {} s", .0.as_secs_f64())]
    Duration(Duration),
    /// `-n 0`.
    #[error("byte count must be more than 0")]
    ZeroBytes,
    /// Omit too long.
    #[error("omit time must be at most 24 h, got {} s", .0.as_secs_f64())]
    Omit(Duration),
    /// Interval out of range.
    #[error("report interval must be 0.1 s to 24 h, got {} s", .0.as_secs_f64())]
    Interval(Duration),
    /// Window out of range.
    #[error("window must be 1 KiB to 1 GiB, got {0} bytes")]
    Window(u32),
    /// MSS out of range.
    #[error("MSS must be 88 to 65535 bytes, got {0}")]
    Mss(u32),
    /// A TCP-only option on a UDP test.
    #[error("--mss and --congestion apply to TCP only")]
    TcpOnly,
    /// Congestion control name is not a plausible kernel name.
    #[error("'{0}' is not a congestion control name")]
    Congestion(String),
    /// `--fq-pacing` without TCP or without a rate.
    #[error("--fq-pacing applies to TCP with a rate (-b)")]
    FqPacing,
    /// `--trip-times` on a test whose data is not UDP datagrams with perfpeer's header.
    #[error(
        "--trip-times and --histograms measure UDP datagrams or TCP writes of at least 16 bytes (not --rr, DCCP or TCP's --skip-rx-copy); --isochronous sends UDP"
    )]
    TripTimes,
    /// Bounce-back bursts out of range, or not over TCP.
    #[error(
        "--bounceback runs over TCP: 1 to {MAX_BURST_COUNT} round trips a burst, a period of 1 ms to 60 s, a hold of at most 1 s; --bounceback-congest: 1 to {} TCP streams, and a test time (not -n)",
        crate::working_load::MAX_LOAD_STREAMS
    )]
    Bursts,
    /// Histogram bins without one-way delays to count, or out of range.
    #[error(
        "--histograms counts one-way delays (with --trip-times) in 1 to {} bins of 1 µs to 1 s",
        crate::histogram::MAX_BINS
    )]
    Histogram,
    /// Video frames on a test that cannot carry them.
    #[error(
        "--isochronous sends frames over UDP or TCP (with --trip-times, no -b; -l at least {MIN_VIDEO_LEN} bytes over UDP, {MIN_TCP_VIDEO_LEN} over TCP), 1 to {} frames a second",
        crate::video::MAX_FPS
    )]
    Video,
    /// A multicast group a test cannot use, or a test a group cannot take.
    #[error("{0}")]
    Multicast(String),
    /// A burst out of range, or without a rate.
    #[error("a burst (-b RATE/BURST) is 1 to {MAX_BURST} writes, with a rate above 0; got {0}")]
    Burst(u32),
    /// Request/response mode with an option it cannot honour.
    #[error("request/response mode needs {0}")]
    RrNeeds(&'static str),
    /// DCCP packet size out of range.
    #[error(
        "DCCP length must be {MIN_UDP_LEN} to {MAX_UDP_LEN} bytes (and at most the path's maximum packet size), got {0}"
    )]
    DccpLen(u32),
    /// DCCP options on a test that is not DCCP.
    #[error("--dccp-service and --ccid apply to DCCP (--dccp) only")]
    DccpOnly,
    /// A CCID that is not 2, 3 or 4.
    #[error("CCID must be 2, 3 or 4, got {0}")]
    Ccid(u8),
    /// Request or response size out of range.
    #[error("request/response sizes must be 1 to {MAX_RR_LEN} bytes, got {0}")]
    RrLen(u32),
    /// Latency probe interval out of range.
    #[error("the probe interval must be 1 ms to 1 s, got {0} µs")]
    ProbeInterval(u32),
    /// Latency probe datagrams too small for their stamps.
    #[error(
        "a probe request needs {MIN_PROBE_REQUEST} bytes and its answer {MIN_PROBE_ANSWER}, got {0} and {1}"
    )]
    ProbeLen(u32, u32),
}

/// A spec that passed [`TestSpec::validate`]. It is made once, where a spec enters (a flag
/// parser, the browser's form, a control message), and everything that runs a test takes it,
/// so nothing below the edge checks again. It dereferences to the spec; changing a spec means
/// taking it out ([`ValidSpec::into_inner`]) and validating the new one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ValidSpec(TestSpec);

impl ValidSpec {
    /// Checks `spec`.
    pub fn new(spec: TestSpec) -> Result<ValidSpec, SpecError> {
        spec.validate()?;
        Ok(ValidSpec(spec))
    }

    /// The spec, to change it (the result must be validated again).
    pub fn into_inner(self) -> TestSpec {
        self.0
    }
}

impl std::ops::Deref for ValidSpec {
    type Target = TestSpec;
    fn deref(&self) -> &TestSpec {
        &self.0
    }
}

impl TryFrom<TestSpec> for ValidSpec {
    type Error = SpecError;
    fn try_from(spec: TestSpec) -> Result<ValidSpec, SpecError> {
        ValidSpec::new(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_iperf3_like() {
        let tcp = TestSpec::new(Protocol::Tcp);
        assert_eq!(tcp.validate(), Ok(()));
        assert_eq!(tcp.len, 131_072);
        assert_eq!(tcp.total_time(), Some(Duration::from_secs(10)));
        let udp = TestSpec::new(Protocol::Udp);
        assert_eq!(udp.validate(), Ok(()));
        assert_eq!(udp.bitrate, Some(BitRate(1_000_000)));
    }

    #[test]
    fn a_byte_count_at_a_rate_is_expected_to_take_its_time() {
        let mut s = TestSpec::new(Protocol::Tcp);
        s.end = EndCondition::Bytes {
            bytes: 2_000_000_000_000,
        };
        assert_eq!(s.total_time(), None);
        s.bitrate = None;
        assert_eq!(s.expected_duration(), None, "as fast as it goes");
        s.bitrate = Some(BitRate(100_000_000));
        assert_eq!(s.expected_duration(), Some(Duration::from_secs(160_000)));
        s.end = EndCondition::Time {
            duration: Duration::from_secs(3),
        };
        assert_eq!(s.expected_duration(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn out_of_range_fields_are_refused() {
        let mut s = TestSpec::new(Protocol::Udp);
        s.len = 8;
        assert_eq!(s.validate(), Err(SpecError::UdpLen(8)));
        let mut s = TestSpec::new(Protocol::Tcp);
        s.streams = 0;
        assert_eq!(s.validate(), Err(SpecError::Streams(0)));
        let mut s = TestSpec::new(Protocol::Udp);
        s.mss = Some(1000);
        assert_eq!(s.validate(), Err(SpecError::TcpOnly));
        let mut s = TestSpec::new(Protocol::Tcp);
        s.congestion = Some("cubic; rm".into());
        assert!(matches!(s.validate(), Err(SpecError::Congestion(_))));
        s.congestion = Some("x".repeat(100_000));
        let refused = s.validate().unwrap_err().to_string();
        assert!(refused.len() < 80, "{refused}");
        let mut s = TestSpec::new(Protocol::Tcp);
        s.interval = Duration::from_millis(10);
        assert!(matches!(s.validate(), Err(SpecError::Interval(_))));
    }

    #[test]
    fn request_response_and_pacing_options_are_checked() {
        let mut s = TestSpec::new(Protocol::Tcp);
        s.len = 1;
        s.rr = Some(RequestResponse {
            response_len: 1,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(s.validate(), Ok(()));
        s.direction = Direction::Bidir;
        assert!(matches!(s.validate(), Err(SpecError::RrNeeds(_))));
        s.direction = Direction::Reverse;
        s.rr = Some(RequestResponse {
            response_len: 0,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(s.validate(), Err(SpecError::RrLen(0)));
        s.rr = Some(RequestResponse {
            response_len: 1,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
        let mut probe = TestSpec::new(Protocol::Udp);
        probe.bitrate = None;
        probe.len = 16;
        probe.rr = Some(RequestResponse {
            response_len: 40,
            probe_interval_us: Some(10_000),
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(probe.validate(), Ok(()));
        probe.len = 15;
        assert_eq!(probe.validate(), Err(SpecError::ProbeLen(15, 40)));
        probe.len = 16;
        probe.rr = Some(RequestResponse {
            response_len: 40,
            probe_interval_us: Some(999),
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(probe.validate(), Err(SpecError::ProbeInterval(999)));
        probe.rr = Some(RequestResponse {
            response_len: 40,
            probe_interval_us: Some(10_000),
            connection_per_transaction: None,
            bursts: None,
        });
        probe.direction = Direction::Reverse;
        assert!(matches!(probe.validate(), Err(SpecError::RrNeeds(_))));
        s.omit = Duration::from_secs(1);
        assert!(matches!(s.validate(), Err(SpecError::RrNeeds(_))));
        // UDP request/response (netperf's UDP_RR): unpaced, 1-byte datagrams allowed.
        let mut u = TestSpec::new(Protocol::Udp);
        u.rr = Some(RequestResponse {
            response_len: 1,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(
            u.validate(),
            Err(SpecError::RrNeeds("no rate limit")),
            "UDP's default 1M rate"
        );
        u.bitrate = None;
        u.len = 1;
        assert_eq!(u.validate(), Ok(()));
        let mut d = TestSpec::new(Protocol::Dccp);
        d.bitrate = None;
        d.rr = Some(RequestResponse {
            response_len: 1,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
        assert_eq!(d.validate(), Err(SpecError::RrNeeds("TCP or UDP")));
        // netperf's connection tests run only against a netserver: a perfpeer peer refuses them.
        let mut crr = TestSpec::new(Protocol::Tcp);
        crr.len = 1;
        crr.rr = Some(RequestResponse {
            response_len: 1,
            probe_interval_us: None,
            connection_per_transaction: Some(ConnectionTest::RequestResponse),
            bursts: None,
        });
        assert!(
            matches!(crr.validate(), Err(SpecError::RrNeeds(why)) if why.contains("netserver"))
        );
        let json = serde_json::to_string(&crr).unwrap();
        assert!(
            json.contains(r#""connection_per_transaction":"request_response""#),
            "{json}"
        );
        let mut f = TestSpec::new(Protocol::Tcp);
        f.fq_pacing = true;
        assert_eq!(f.validate(), Err(SpecError::FqPacing), "needs a rate");
        f.bitrate = Some(BitRate(100_000_000));
        assert_eq!(f.validate(), Ok(()));
        // Older specs without the new fields still parse.
        let old = serde_json::to_string(&TestSpec::new(Protocol::Tcp))
            .unwrap()
            .replace(r#","skip_rx_copy":false,"fq_pacing":false"#, "");
        assert!(!old.contains("skip_rx_copy"), "{old}");
        let back: TestSpec = serde_json::from_str(&old).unwrap();
        assert_eq!(back, TestSpec::new(Protocol::Tcp));
    }

    #[test]
    fn rate_is_spread_over_streams() {
        let mut s = TestSpec::new(Protocol::Udp);
        s.bitrate = Some(BitRate(15_000_000));
        s.streams = 3;
        assert_eq!(s.per_stream_rate(), Some(BitRate(5_000_000)));
        s.bitrate = Some(BitRate(0));
        assert_eq!(s.per_stream_rate(), None);
    }

    #[test]
    fn bidir_plan_puts_client_senders_first() {
        let mut s = TestSpec::new(Protocol::Tcp);
        s.streams = 2;
        s.direction = Direction::Bidir;
        assert_eq!(
            s.stream_plan(),
            vec![(1, true), (2, true), (3, false), (4, false)]
        );
        s.direction = Direction::Reverse;
        assert_eq!(s.stream_plan(), vec![(1, false), (2, false)]);
    }

    #[test]
    fn spec_round_trips_through_json() {
        let mut s = TestSpec::new(Protocol::Udp);
        s.direction = Direction::Bidir;
        s.end = EndCondition::Bytes { bytes: 1_000_000 };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""direction":"bidir""#), "{json}");
        let back: TestSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let bad = json.replace(r#""streams":1"#, r#""streams":-1"#);
        assert!(serde_json::from_str::<TestSpec>(&bad).is_err());
    }

    #[test]
    fn refusals_read_as_words_not_rust() {
        let all = [
            SpecError::Streams(0),
            SpecError::UdpLen(1),
            SpecError::TcpLen(0),
            SpecError::Duration(Duration::ZERO),
            SpecError::Omit(Duration::from_secs(90_000)),
            SpecError::Interval(Duration::from_millis(50)),
            SpecError::Window(1),
            SpecError::Mss(1),
            SpecError::DccpLen(1),
            SpecError::RrLen(0),
        ];
        for e in all {
            let text = e.to_string();
            assert!(!text.contains("..="), "{text}");
            // Rust's Debug of a Duration (`0ns`, `50ms`, `90000s`) is not for people.
            assert!(
                !["0ns", "0ms", "00s"].iter().any(|d| text.contains(d)),
                "{text}"
            );
        }
        assert_eq!(
            SpecError::Streams(0).to_string(),
            "parallel streams must be 1 to 128, got 0"
        );
        assert!(
            SpecError::Interval(Duration::from_millis(50))
                .to_string()
                .ends_with("got 0.05 s")
        );
    }

    #[test]
    fn a_valid_spec_is_only_made_from_a_spec_that_passes() {
        let mut bad = TestSpec::new(Protocol::Tcp);
        bad.streams = 0;
        assert_eq!(ValidSpec::new(bad), Err(SpecError::Streams(0)));
        let good = ValidSpec::new(TestSpec::new(Protocol::Udp)).unwrap();
        assert_eq!(good.protocol, Protocol::Udp, "it reads as the spec");
        assert_eq!(
            serde_json::to_value(&good).unwrap(),
            serde_json::to_value(TestSpec::new(Protocol::Udp)).unwrap(),
            "and travels as it"
        );
    }
}
