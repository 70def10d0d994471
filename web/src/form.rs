//! The "new test" form as plain values: what the user typed, turned into a `run` or `sweep`
//! request ([`TestRequest`]) by the builder `perfpeer test`'s flags use too
//! (`perfpeer_shared::request`), with the same units and checks (DCCP with a CCID,
//! packet-size sweeps, constant-bitrate streams included), and the presets that mirror the
//! classic recipes. DOM-free: the view reads and writes [`FormInput`] fields.

use std::time::Duration;

use perfpeer_shared::dccp::{DEFAULT_SERVICE, DccpSpec};
use perfpeer_shared::format::cbr::{self, StreamError};
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::latency::{
    LatencyRequest, LatencyRequestError, MAX_LOAD_STREAMS, MAX_PHASE_SECONDS,
};
use perfpeer_shared::multicast::{MulticastSpec, receivers_in};
use perfpeer_shared::request::{Mode, RequestError, RequestInput};
use perfpeer_shared::spec::{Direction, EndCondition, MAX_STREAMS, Protocol, SpecError, TestSpec};
use perfpeer_shared::sweep::parse_sizes;
use perfpeer_shared::units::{parse_rate, parse_size};
use perfpeer_shared::verdict::Expectation;
use perfpeer_shared::video::VideoSpec;

/// The form's fields exactly as typed (strings, so nothing is lost before validation; its four
/// menus as the [`Choice`] picked). Kept in the browser's storage as JSON for "Test to <last
/// peer>": a field missing there (an older page's), or a menu value that names no choice,
/// takes its default.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FormInput {
    /// `host`, `host:port` or `[v6]:port` of the other peer.
    pub target: String,
    /// What kind of run: one test, request/response, a sweep, a stream or latency under load.
    #[serde(deserialize_with = "choice_or_default")]
    pub mode: RunKind,
    /// TCP, UDP or DCCP (sweeps and streams use UDP unless DCCP is picked); stored as `"tcp"`,
    /// `"udp"` or `"dccp"`, the spec's own names.
    #[serde(deserialize_with = "choice_or_default")]
    pub protocol: Protocol,
    /// DCCP congestion control: `""` (the kernel's default), `"2"`, `"3"` or `"4"`.
    pub ccid: String,
    /// Sweep sizes, like `--sweep-len` (`16,32,...,1420`).
    pub sizes: String,
    /// Stream rate or preset, like `--cbr` (`mp3`, `g711`, or `48k` with a length).
    pub cbr: String,
    /// Who sends.
    #[serde(deserialize_with = "choice_or_default")]
    pub direction: WhoSends,
    /// What ends a single test: a time or a byte count.
    #[serde(deserialize_with = "choice_or_default")]
    pub end: EndsAfter,
    /// Seconds for a timed test.
    pub seconds: String,
    /// Bytes per sending direction for a byte-count test (K/M/G = ×1024, like `-n`).
    pub bytes: String,
    /// Streams per direction.
    pub streams: String,
    /// Bytes per write or datagram (K/M = ×1024, like `-l`); empty = the protocol's default.
    pub len: String,
    /// UDP rate (K/M/G = ×1000, like `-b`); empty = 1M.
    pub bitrate: String,
    /// Type of service (`-S`): a Wi-Fi access class (`BK`, `BE`, `VI`, `VO`), or a TOS byte
    /// (`184`, `0xb8`); empty = the kernel's default.
    pub tos: String,
    /// Socket buffer size (`-w`, K/M ×1024); empty = the kernel's.
    pub window: String,
    /// TCP congestion control (`-C`); empty = the kernel's default.
    pub congestion: String,
    /// Seconds between live reports (`-i`): `"1"` or `"0.5"`.
    pub interval: String,
    /// One-way delay of every datagram (`--trip-times`, UDP): `"on"`, `"histogram"` (also in
    /// bins, `--histograms`), or `""` for off (left out when off, so a form stores as older
    /// pages stored it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trip_times: String,
    /// Video-like frames (`--isochronous`, UDP): `FPS:MEAN,STDEV` as iperf 2 takes it (`60:20m,0`),
    /// or `""` for an even rate (left out when empty, as `trip_times`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub video: String,
    /// A multicast group to send to (`--multicast`, UDP, `GROUP[:PORT]`), received by every
    /// peer the target names (commas between them), or `""` for a unicast test (left out when
    /// empty, as `trip_times`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub multicast: String,
    /// What the result must show to pass, like `--expect` (`rx>=300M, loss<=0.5%`; a latency
    /// run's `p99<=40ms`), commas between them, or `""` for no verdict (left out when empty,
    /// as `trip_times`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expect: String,
}

impl Default for FormInput {
    fn default() -> Self {
        FormInput {
            target: String::new(),
            mode: RunKind::DEFAULT,
            protocol: Protocol::DEFAULT,
            ccid: String::new(),
            sizes: "16,32,64,...,1420".into(),
            cbr: "mp3".into(),
            direction: WhoSends::DEFAULT,
            end: EndsAfter::DEFAULT,
            seconds: "10".into(),
            bytes: String::new(),
            streams: "1".into(),
            len: String::new(),
            bitrate: String::new(),
            tos: String::new(),
            window: String::new(),
            congestion: String::new(),
            interval: "1".into(),
            trip_times: String::new(),
            video: String::new(),
            multicast: String::new(),
            expect: String::new(),
        }
    }
}

/// One of the form's menus. Its choices are stored, and are the menu's option values, as the
/// strings serde gives them: `mode`, `protocol`, `direction` and `end` keep the strings the
/// form was stored with when they were plain text, so an older page's form still loads.
pub trait Choice: Copy + serde::Serialize + serde::de::DeserializeOwned {
    /// The choice of a new form, and of a stored or typed value that names no choice.
    const DEFAULT: Self;

    /// The option value (and stored string) of this choice.
    fn value(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(value)) => value,
            _ => String::new(),
        }
    }

    /// The choice an option value names; [`Choice::DEFAULT`] when it names none.
    fn from_value(value: &str) -> Self {
        serde_json::from_value(serde_json::Value::String(value.to_string()))
            .unwrap_or(Self::DEFAULT)
    }
}

/// Reads a stored menu value: one that names no choice (a newer or a damaged page's) is the
/// default, rather than the whole stored form failing to load.
fn choice_or_default<'de, D, T>(stored: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Choice,
{
    let value = <serde_json::Value as serde::Deserialize>::deserialize(stored)?;
    Ok(serde_json::from_value(value).unwrap_or(T::DEFAULT))
}

/// What kind of run the form asks for (its Kind menu).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// One test (`"test"`).
    Test,
    /// Request/response, like netperf's TCP_RR (`"rr"`).
    #[serde(rename = "rr")]
    RequestResponse,
    /// One short test per packet size (`"sweep"`).
    Sweep,
    /// An evenly paced, constant-bitrate stream (`"cbr"`).
    #[serde(rename = "cbr")]
    Stream,
    /// Latency under load: idle, then TCP load down, up and both (`"latency"`).
    Latency,
}

impl Choice for RunKind {
    const DEFAULT: Self = RunKind::Test;
}

/// The form's protocol menu: the spec's protocols, stored by their spec names.
impl Choice for Protocol {
    const DEFAULT: Self = Protocol::Tcp;
}

/// Who sends, seen from this peer (the form's Direction menu).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WhoSends {
    /// This peer sends, the other receives (`"tx"`).
    #[serde(rename = "tx")]
    ThisPeer,
    /// The other peer sends, this one receives (`"rx"`).
    #[serde(rename = "rx")]
    OtherPeer,
    /// Both send at once (`"both"`).
    #[serde(rename = "both")]
    Both,
}

impl Choice for WhoSends {
    const DEFAULT: Self = WhoSends::ThisPeer;
}

impl WhoSends {
    /// The spec's direction: the peer that starts the test (this one) is the client.
    pub fn direction(self) -> Direction {
        match self {
            WhoSends::ThisPeer => Direction::Normal,
            WhoSends::OtherPeer => Direction::Reverse,
            WhoSends::Both => Direction::Bidir,
        }
    }
}

/// What ends a single test (the form's "Ends after" menu).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndsAfter {
    /// The seconds typed (`"time"`).
    Time,
    /// The bytes typed, per sending direction (`"bytes"`).
    Bytes,
}

impl Choice for EndsAfter {
    const DEFAULT: Self = EndsAfter::Time;
}

/// Which of the form's rows apply to a choice of kind, protocol and end (the others are
/// hidden).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormRows {
    /// The latency-under-load settings.
    pub latency: bool,
    /// Protocol and datagram length.
    pub protocol_and_len: bool,
    /// The end menu (time or bytes).
    pub end: bool,
    /// Seconds.
    pub seconds: bool,
    /// Bytes.
    pub bytes: bool,
    /// A sweep's sizes.
    pub sizes: bool,
    /// A constant-bitrate stream's settings.
    pub cbr: bool,
    /// DCCP's CCID and service.
    pub dccp: bool,
    /// The rate.
    pub bitrate: bool,
}

impl FormRows {
    /// The rows for `kind`, `protocol` and `end` (every kind is named: a new one must say).
    pub fn of(kind: RunKind, protocol: Protocol, end: EndsAfter) -> FormRows {
        let datagrams = protocol != Protocol::Tcp;
        let hidden = FormRows {
            latency: false,
            protocol_and_len: true,
            end: false,
            seconds: true,
            bytes: false,
            sizes: false,
            cbr: false,
            dccp: protocol == Protocol::Dccp,
            bitrate: false,
        };
        match kind {
            RunKind::Test => FormRows {
                end: true,
                seconds: end == EndsAfter::Time,
                bytes: end == EndsAfter::Bytes,
                bitrate: datagrams,
                ..hidden
            },
            RunKind::RequestResponse => hidden,
            RunKind::Sweep => FormRows {
                sizes: true,
                bitrate: true,
                ..hidden
            },
            RunKind::Stream => FormRows {
                cbr: true,
                ..hidden
            },
            RunKind::Latency => FormRows {
                latency: true,
                protocol_and_len: false,
                dccp: false,
                bitrate: true,
                ..hidden
            },
        }
    }
}

/// The TOS byte of a Wi-Fi (WMM) access class: the DSCP whose top three bits are the 802.11
/// user priority Linux derives from it (BK: CS1 → UP 1, BE: 0, VI: CS5 → UP 5, VO: CS6 →
/// UP 6), shifted into the TOS byte.
pub const ACCESS_CLASSES: [(&str, u8); 4] =
    [("BK", 0x20), ("BE", 0x00), ("VI", 0xa0), ("VO", 0xc0)];

/// A TOS field as typed: an access class name, or a TOS byte as `-S` reads it (decimal, `0x`
/// hex, or octal with a leading 0).
pub fn parse_tos(text: &str) -> Result<Option<u8>, FormError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Some((_, tos)) = ACCESS_CLASSES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(t))
    {
        return Ok(Some(*tos));
    }
    perfpeer_shared::units::parse_tos(t)
        .map(Some)
        .ok_or_else(|| {
            err(
                "tos",
                "TOS is BK, BE, VI or VO (Wi-Fi access classes), or a number from 0 to 255",
            )
        })
}

/// A named set of form values, and the result tab it is read in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    /// Short id (button value).
    pub id: &'static str,
    /// What the button says.
    pub label: &'static str,
    /// Fields it sets (the target is kept).
    pub input: FormInput,
    /// The result tab shown first: the tool the preset is named after.
    pub tab: Layout,
}

/// The preset with this id.
pub fn preset(id: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.id == id)
}

/// The classic recipes, each with its tool's own defaults: ttcp's 128 000 writes of 1 KB,
/// iperf's 10 s of 128 KB writes, netperf's TCP_STREAM (10 s of 16 KB sends, read in netperf's
/// table with CPU and service demand); an audio stream; latency under load; a packet-size
/// sweep that is not paced, so a small-packet limit (packets per second) shows.
pub fn presets() -> Vec<Preset> {
    let base = FormInput::default();
    vec![
        Preset {
            id: "ttcp",
            label: "ttcp TX 128 000 × 1 KB",
            input: FormInput {
                end: EndsAfter::Bytes,
                bytes: (128_000u64 * 1024).to_string(),
                len: "1024".into(),
                ..base.clone()
            },
            tab: Layout::Ttcp,
        },
        Preset {
            id: "iperf",
            label: "iperf 10 s",
            input: FormInput {
                len: "128K".into(),
                ..base.clone()
            },
            tab: Layout::Iperf3,
        },
        Preset {
            id: "netperf",
            label: "netperf TCP_STREAM with CPU",
            input: FormInput {
                len: "16K".into(),
                ..base.clone()
            },
            tab: Layout::Netperf,
        },
        Preset {
            id: "audio",
            label: "Audio stream: MP3 48 kbit/s for 60 s",
            input: FormInput {
                mode: RunKind::Stream,
                protocol: Protocol::Udp,
                cbr: "mp3".into(),
                seconds: "60".into(),
                ..base.clone()
            },
            tab: Layout::Stream,
        },
        Preset {
            id: "oneway",
            label: "One-way latency: UDP 1 Mbit/s each way, 10 s",
            input: FormInput {
                protocol: Protocol::Udp,
                bitrate: "1M".into(),
                direction: WhoSends::Both,
                trip_times: "histogram".into(),
                ..base.clone()
            },
            tab: Layout::Iperf3,
        },
        Preset {
            id: "video",
            label: "Video 60 fps 20 Mbit/s, 10 s",
            input: FormInput {
                protocol: Protocol::Udp,
                video: "60:20m,0".into(),
                ..base.clone()
            },
            tab: Layout::Iperf3,
        },
        Preset {
            id: "multicast",
            label: "Multicast 10 Mbit/s to 239.255.1.1",
            input: FormInput {
                protocol: Protocol::Udp,
                bitrate: "10M".into(),
                multicast: "239.255.1.1".into(),
                ..base.clone()
            },
            tab: Layout::Iperf3,
        },
        Preset {
            id: "latency",
            label: "Latency under load (bufferbloat), 17 s",
            input: FormInput {
                mode: RunKind::Latency,
                seconds: "5".into(),
                streams: "4".into(),
                ..base.clone()
            },
            tab: Layout::Iperf3,
        },
        Preset {
            id: "sweep",
            label: "Packet-size sweep 16–1420 B",
            input: FormInput {
                mode: RunKind::Sweep,
                protocol: Protocol::Udp,
                seconds: "2".into(),
                // Unpaced: each size as fast as it goes, so the table shows where small
                // packets stop the link (a peer with a rate cap gets its cap instead).
                bitrate: "0".into(),
                ..base
            },
            tab: Layout::Iperf3,
        },
    ]
}

/// A form value that cannot become a test, with what to type instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError {
    /// Id of the offending field.
    pub field: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> FormError {
    FormError {
        field,
        message: message.into(),
    }
}

/// Checks the target's shape (the peer resolves it): `host`, `host:port`, `[v6]` or `[v6]:port`.
pub fn check_target(target: &str) -> Result<String, FormError> {
    let t = target.trim();
    let bad = |why: &str| {
        err(
            "target",
            format!("{why}: type the other peer's address, like 192.168.1.20 or pc.lan:5210"),
        )
    };
    if t.is_empty() {
        return Err(bad("no target peer"));
    }
    if t.len() > 255 || t.chars().any(|c| c.is_whitespace() || c == '/') {
        return Err(bad("that is not a host name or address"));
    }
    let port = if let Some(rest) = t.strip_prefix('[') {
        match rest.split_once(']') {
            Some((_, "")) => None,
            Some((_, p)) => Some(p.strip_prefix(':').ok_or_else(|| bad("bad port"))?),
            None => return Err(bad("missing ']'")),
        }
    } else if t.matches(':').count() == 1 {
        t.rsplit_once(':').map(|(_, p)| p)
    } else {
        None // a bare IPv6 address or a plain host
    };
    if let Some(p) = port
        && !matches!(p.parse::<u16>(), Ok(1..))
    {
        return Err(bad("the port must be a number from 1 to 65535"));
    }
    Ok(t.to_string())
}

/// The control port of a peer whose address names none (`perfpeer serve`'s default).
const CONTROL_PORT: u16 = 5210;

/// An address's host (lower case, without IPv6 brackets) and port (the control port when it
/// names none): `pc.lan`, `pc.lan:5210`, `[fd00::1]:5210`, `fd00::1`.
pub fn host_and_port(address: &str) -> (String, u16) {
    let address = address.trim();
    let (host, port) = match address.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => (rest, None),
        },
        // One colon is host:port; more are a bare IPv6 address.
        None => match address.split_once(':') {
            Some((host, port)) if !port.contains(':') => (host, Some(port)),
            _ => (address, None),
        },
    };
    let port = port.and_then(|p| p.parse().ok()).unwrap_or(CONTROL_PORT);
    (host.to_ascii_lowercase(), port)
}

fn positive_number(field: &'static str, text: &str, what: &str) -> Result<f64, FormError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(err(field, format!("{what} must be a number above 0"))),
    }
}

pub use perfpeer_shared::request::TestRequest;

/// The Expect field read as `--expect` reads it; a bad one names the field with the reason.
fn expectations(text: &str) -> Result<Vec<Expectation>, FormError> {
    Expectation::parse_list(text).map_err(|e| err("expect", e.to_string()))
}

/// The latency-under-load run the form describes (mode `latency`): `Seconds` is each loaded
/// phase, `Streams` the TCP load streams per direction; the other fields do not apply. `None`
/// for the other modes.
pub fn to_latency(input: &FormInput) -> Option<Result<(String, LatencyRequest), FormError>> {
    match input.mode {
        RunKind::Latency => {}
        RunKind::Test | RunKind::RequestResponse | RunKind::Sweep | RunKind::Stream => return None,
    }
    Some((|| {
        let target = check_target(&input.target)?;
        let mut request = LatencyRequest {
            load_seconds: positive_number("seconds", &input.seconds, "Seconds")?,
            probe_tos: parse_tos(&input.tos)?,
            congestion: Some(input.congestion.trim().to_string()).filter(|c| !c.is_empty()),
            expect: expectations(&input.expect)?,
            ..LatencyRequest::default()
        };
        // A rate paces the TCP load (per direction); empty or 0: as fast as it goes.
        if !input.bitrate.trim().is_empty() {
            let rate = parse_rate(&input.bitrate).map_err(|e| err("bitrate", e.to_string()))?;
            request.load_bits_per_second = (rate.0 > 0).then_some(rate.0);
        }
        let streams = positive_number("streams", &input.streams, "Streams")?;
        if streams.fract() != 0.0 || streams > f64::from(MAX_LOAD_STREAMS) {
            return Err(err(
                "streams",
                format!("Streams must be a whole number from 1 to {MAX_LOAD_STREAMS}"),
            ));
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a positive whole number at most MAX_LOAD_STREAMS, checked above"
        )]
        {
            request.streams = streams as u16;
        }
        request.check().map_err(|e| match e {
            LatencyRequestError::Streams(_) => err("streams", e.to_string()),
            LatencyRequestError::Expectation(_) => err("expect", e.to_string()),
            other => err(
                "seconds",
                match other {
                    LatencyRequestError::PhaseLength(..) => {
                        format!("Seconds (each loaded phase) must be 1 to {MAX_PHASE_SECONDS:.0}")
                    }
                    other => other.to_string(),
                },
            ),
        })?;
        Ok((target, request))
    })())
}

/// The request the form describes, built and checked by the same builder as `perfpeer test`'s
/// flags; a problem names the field to fix.
pub fn to_request(input: &FormInput) -> Result<TestRequest, FormError> {
    let group = match input.multicast.trim() {
        "" => None,
        g => Some(MulticastSpec::parse(g).map_err(|e| err("multicast", e))?),
    };
    // A group's receivers: every peer the target names.
    let target = match group {
        Some(_) => {
            let receivers = receivers_in(&input.target)
                .map_err(|e| err("target", e))?
                .into_iter()
                .map(check_target)
                .collect::<Result<Vec<String>, FormError>>()?;
            receivers.join(", ")
        }
        None => check_target(&input.target)?,
    };
    // A latency form reaches here only when checked as a test too (a remembered form).
    let mode = match input.mode {
        RunKind::Sweep => Mode::Sweep(parse_sizes(&input.sizes).map_err(|e| err("sizes", e))?),
        RunKind::Stream => Mode::Stream(input.cbr.clone()),
        RunKind::Test | RunKind::RequestResponse | RunKind::Latency => Mode::Test,
    };
    let rr = input.mode == RunKind::RequestResponse;
    // DCCP starts from TCP's defaults; the builder makes it DCCP.
    let protocol = match input.protocol {
        Protocol::Udp => Protocol::Udp,
        Protocol::Tcp | Protocol::Dccp => Protocol::Tcp,
    };
    let mut spec = TestSpec::new(protocol);
    spec.direction = input.direction.direction();
    spec.end = if input.end == EndsAfter::Bytes && mode == Mode::Test {
        let bytes = parse_size(&input.bytes).map_err(|e| err("bytes", e.to_string()))?;
        EndCondition::Bytes { bytes }
    } else {
        let secs = positive_number("seconds", &input.seconds, "Seconds")?;
        let duration = Duration::try_from_secs_f64(secs)
            .map_err(|_| err("seconds", "Seconds: that is too long"))?;
        EndCondition::Time { duration }
    };
    let streams_message = format!("Streams must be a whole number from 1 to {MAX_STREAMS}");
    let streams = positive_number("streams", &input.streams, "Streams")?;
    if streams.fract() != 0.0 || streams > f64::from(MAX_STREAMS) {
        return Err(err("streams", streams_message));
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive whole number at most MAX_STREAMS, checked above"
    )]
    let streams = streams as u16;
    spec.streams = streams;
    let len_given = !input.len.trim().is_empty();
    if len_given {
        let len = parse_size(&input.len).map_err(|e| err("len", e.to_string()))?;
        spec.len = u32::try_from(len).map_err(|_| err("len", "Length is too large"))?;
    }
    spec.tos = parse_tos(&input.tos)?;
    if !input.window.trim().is_empty() {
        let window = parse_size(&input.window).map_err(|e| err("window", e.to_string()))?;
        spec.window =
            Some(u32::try_from(window).map_err(|_| err("window", "Window is too large"))?);
    }
    spec.congestion = Some(input.congestion.trim().to_string()).filter(|c| !c.is_empty());
    // "histogram": the delays also in iperf 2's default bins (100 µs × 10000).
    spec.trip_times = matches!(input.trip_times.as_str(), "on" | "histogram");
    spec.histogram = (input.trip_times == "histogram")
        .then_some(perfpeer_shared::histogram::HistogramSpec::DEFAULT);
    if input.interval.trim() == "0.5" {
        spec.interval = Duration::from_millis(500);
    }
    if rr {
        // One transaction in flight, request and response of Length bytes (1 by default), as
        // `perfpeer test --rr` and netperf's TCP_RR.
        if !len_given {
            spec.len = 1;
        }
        spec.bitrate = None;
        spec.rr = Some(perfpeer_shared::spec::RequestResponse {
            response_len: spec.len,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: None,
        });
    }
    // A rate is a datagram test's: UDP, DCCP, or any sweep or stream (never request/response).
    let datagrams = (input.protocol != Protocol::Tcp || mode != Mode::Test) && !rr;
    let bitrate_given = datagrams && !input.bitrate.trim().is_empty();
    if bitrate_given {
        spec.bitrate = Some(parse_rate(&input.bitrate).map_err(|e| err("bitrate", e.to_string()))?);
    }
    // Video frames set their own rate, and are timed on the clocks.
    if !input.video.trim().is_empty() {
        if bitrate_given {
            return Err(err(
                "video",
                "Video frames set their own rate: leave Rate empty",
            ));
        }
        spec.video = Some(VideoSpec::parse(input.video.trim()).map_err(|e| err("video", e))?);
        spec.bitrate = None;
        spec.trip_times = true;
    }
    spec.expect = expectations(&input.expect)?;
    // A verdict judges one result: a sweep's sizes and a group's receivers each have their own.
    if !spec.expect.is_empty() {
        if matches!(mode, Mode::Sweep(_)) {
            return Err(err(
                "expect",
                "A sweep is not judged: leave Expect empty, or run one test at a size",
            ));
        }
        if group.is_some() {
            return Err(err(
                "expect",
                "A multicast test is not judged: leave Expect empty, or test one peer",
            ));
        }
    }
    spec.multicast = group;
    let dccp = if input.protocol == Protocol::Dccp {
        let ccid = match input.ccid.trim() {
            "" => None,
            c => Some(
                c.parse::<u8>()
                    .ok()
                    .filter(|c| (2..=4).contains(c))
                    .ok_or_else(|| err("ccid", "The CCID is 2, 3 or 4"))?,
            ),
        };
        Some(DccpSpec {
            service: DEFAULT_SERVICE,
            ccid,
        })
    } else {
        None
    };
    let request = RequestInput {
        target,
        spec,
        mode,
        dccp,
        len_given,
        bitrate_given,
        // The form always says how long (or how much); request/response: the length is set.
        end_given: true,
    };
    request.build().map_err(|e| match e {
        RequestError::Spec(SpecError::NotMeasured(expectation)) => err(
            "expect",
            format!(
                "{expectation}: this test does not measure that (loss and jitter need UDP or \
                 DCCP, retransmits TCP, rr a request/response test, p99 and added a latency \
                 under load run)"
            ),
        ),
        RequestError::Spec(e) => {
            let field = match e {
                SpecError::Streams(_) => "streams",
                SpecError::UdpLen(_)
                | SpecError::DccpLen(_)
                | SpecError::TcpLen(_)
                | SpecError::RrLen(_) => "len",
                SpecError::ZeroBytes => "bytes",
                SpecError::Window(_) => "window",
                SpecError::Congestion(_) => "congestion",
                SpecError::TripTimes => "trip-times",
                SpecError::Video => "video",
                SpecError::Multicast(_) => "multicast",
                SpecError::RrNeeds(_) => "mode",
                SpecError::Expectations(_) => "expect",
                _ => "seconds",
            };
            err(field, e.to_string())
        }
        RequestError::Stream { error, .. } => stream_error(error),
        RequestError::Sweep(message) => err("sizes", message),
    })
}

/// A stream's rate problem in the form's terms.
fn stream_error(error: StreamError) -> FormError {
    match error {
        StreamError::NotARate => err(
            "cbr",
            format!(
                "The stream takes a rate (like 48k) or a preset ({})",
                cbr::preset_names()
            ),
        ),
        StreamError::ZeroRate => err("cbr", "The stream needs a rate above 0"),
        StreamError::NeedsLen => err(
            "len",
            "A stream at a rate needs a Length: the bytes in each packet (160 for audio)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::control::ClientMsg;
    use perfpeer_shared::multicast::MAX_RECEIVERS;
    use perfpeer_shared::units::BitRate;

    #[test]
    fn each_kind_shows_its_own_rows() {
        let rows = |k, p, e| FormRows::of(k, p, e);
        let tcp_time = rows(RunKind::Test, Protocol::Tcp, EndsAfter::Time);
        assert!(tcp_time.end && tcp_time.seconds && !tcp_time.bytes && !tcp_time.bitrate);
        let udp_bytes = rows(RunKind::Test, Protocol::Udp, EndsAfter::Bytes);
        assert!(udp_bytes.bytes && !udp_bytes.seconds && udp_bytes.bitrate);
        let rr = rows(RunKind::RequestResponse, Protocol::Udp, EndsAfter::Bytes);
        assert!(
            !rr.end && rr.seconds && !rr.bitrate,
            "an rr test runs for a time, unpaced"
        );
        let sweep = rows(RunKind::Sweep, Protocol::Tcp, EndsAfter::Time);
        assert!(sweep.sizes && sweep.bitrate && !sweep.end);
        let cbr = rows(RunKind::Stream, Protocol::Dccp, EndsAfter::Time);
        assert!(cbr.cbr && cbr.dccp && !cbr.bitrate);
        let latency = rows(RunKind::Latency, Protocol::Dccp, EndsAfter::Bytes);
        assert!(latency.latency && latency.bitrate && latency.seconds);
        assert!(!latency.protocol_and_len && !latency.dccp && !latency.bytes);
    }

    fn input(target: &str) -> FormInput {
        FormInput {
            target: target.into(),
            ..FormInput::default()
        }
    }

    #[test]
    fn defaults_are_iperf3s() {
        let TestRequest {
            target,
            spec,
            sweep,
        } = to_request(&input("pc.lan")).unwrap();
        assert_eq!(sweep, None);
        assert_eq!(target, "pc.lan");
        assert_eq!(*spec, TestSpec::new(Protocol::Tcp));
    }

    #[test]
    fn directions_map_to_the_spec() {
        for (dir, want) in [
            (WhoSends::ThisPeer, Direction::Normal),
            (WhoSends::OtherPeer, Direction::Reverse),
            (WhoSends::Both, Direction::Bidir),
        ] {
            let f = FormInput {
                direction: dir,
                ..input("h")
            };
            assert_eq!(to_request(&f).unwrap().spec.direction, want);
        }
    }

    #[test]
    fn the_multicast_preset_sends_to_the_group_and_every_named_peer_receives() {
        let mut input = preset("multicast").unwrap().input;
        input.target = " pc.lan, 10.0.0.3:5210 [fd00::4] ".into();
        let request = to_request(&input).unwrap();
        assert_eq!(request.target, "pc.lan, 10.0.0.3:5210, [fd00::4]");
        let group = request.spec.multicast.expect("a group");
        assert_eq!((group.address(), group.ttl), ("239.255.1.1:5212".into(), 1));
        assert_eq!(request.spec.bitrate.map(|b| b.0), Some(10_000_000));
        // What a group cannot take names the field to fix.
        for (change, field) in [
            (
                &(|i: &mut FormInput| i.multicast = "10.0.0.1".into()) as &dyn Fn(&mut FormInput),
                "multicast",
            ),
            (&|i: &mut FormInput| i.protocol = Protocol::Tcp, "multicast"),
            (
                &|i: &mut FormInput| i.direction = WhoSends::Both,
                "multicast",
            ),
            (&|i: &mut FormInput| i.target = "pc, a/b".into(), "target"),
            (&|i: &mut FormInput| i.target = " , ".into(), "target"),
            (
                &|i: &mut FormInput| i.target = vec!["pc"; MAX_RECEIVERS + 1].join(","),
                "target",
            ),
        ] {
            let mut bad = input.clone();
            change(&mut bad);
            assert_eq!(to_request(&bad).err().map(|e| e.field), Some(field));
        }
        // Without a group, a list of peers is not a target.
        input.multicast = String::new();
        assert_eq!(to_request(&input).err().map(|e| e.field), Some("target"));
    }

    #[test]
    fn the_one_way_preset_measures_each_way_and_tcp_its_writes() {
        let mut input = preset("oneway").unwrap().input;
        input.target = "pc".into();
        let spec = to_request(&input).unwrap().spec;
        assert!(spec.trip_times && spec.protocol == Protocol::Udp);
        assert_eq!(
            spec.histogram,
            Some(perfpeer_shared::histogram::HistogramSpec::DEFAULT)
        );
        assert_eq!(spec.direction, Direction::Bidir);
        // TCP measures its writes; DCCP cannot.
        input.protocol = Protocol::Tcp;
        assert!(to_request(&input).unwrap().spec.trip_times);
        input.protocol = Protocol::Dccp;
        assert_eq!(
            to_request(&input).err().map(|e| e.field),
            Some("trip-times")
        );
        input.trip_times = "on".into();
        input.protocol = Protocol::Udp;
        let spec = to_request(&input).unwrap().spec;
        assert!(spec.trip_times && spec.histogram.is_none(), "on: no bins");
        input.protocol = Protocol::Tcp;
        input.trip_times = String::new();
        assert!(to_request(&input).is_ok(), "off is off");
    }

    #[test]
    fn the_video_preset_sends_frames_and_a_rate_or_bad_text_is_refused() {
        let mut input = preset("video").unwrap().input;
        input.target = "pc".into();
        let spec = to_request(&input).unwrap().spec;
        assert_eq!(spec.video, Some(VideoSpec::DEFAULT));
        assert!(spec.trip_times && spec.bitrate.is_none() && spec.protocol == Protocol::Udp);
        input.bitrate = "5M".into();
        assert_eq!(to_request(&input).err().map(|e| e.field), Some("video"));
        input.bitrate = String::new();
        input.video = "0:20m".into();
        assert_eq!(to_request(&input).err().map(|e| e.field), Some("video"));
        input.video = "30:8m,2m".into();
        let spec = to_request(&input).unwrap().spec;
        assert_eq!(
            spec.video.map(|v| (v.fps, v.mean.0, v.stdev.0)),
            Some((30, 8_000_000, 2_000_000))
        );
        // Over TCP each frame is one write; DCCP carries none.
        input.protocol = Protocol::Tcp;
        let spec = to_request(&input).unwrap().spec;
        assert!(spec.video.is_some() && spec.protocol == Protocol::Tcp);
        input.protocol = Protocol::Dccp;
        assert!(to_request(&input).is_err(), "no frames over DCCP");
    }

    #[test]
    fn every_preset_has_its_button_with_its_label() {
        // The page's controller binds each preset's button by id: a missing one stops the page.
        let page = include_str!("../static/index.html");
        for p in presets() {
            let button = format!(
                "<button id=\"preset-{}\" type=\"button\">{}</button>",
                p.id, p.label
            );
            assert!(page.contains(&button), "index.html lacks {button}");
        }
    }

    #[test]
    fn presets_named_apart_run_apart() {
        let specs: Vec<(String, TestSpec)> = presets()
            .into_iter()
            .filter(|p| matches!(p.input.mode, RunKind::Test | RunKind::Sweep))
            .map(|p| {
                let f = FormInput {
                    target: "h".into(),
                    ..p.input
                };
                (
                    p.id.to_string(),
                    TestSpec::clone(&to_request(&f).unwrap().spec),
                )
            })
            .collect();
        for (i, (a, sa)) in specs.iter().enumerate() {
            for (b, sb) in &specs[i + 1..] {
                assert_ne!(sa, sb, "presets {a} and {b} run the same test");
            }
        }
        let spec = |id: &str| &specs.iter().find(|(p, _)| p == id).unwrap().1;
        assert_eq!(spec("iperf").len, 128 * 1024);
        assert_eq!(spec("netperf").len, 16 * 1024);
        assert_eq!(preset("netperf").unwrap().tab, Layout::Netperf);
        // The sweep is not paced: it shows where small packets stop the link.
        assert_eq!(spec("sweep").bitrate.map(|b| b.0).unwrap_or(0), 0);
    }

    #[test]
    fn bring_up_settings_reach_the_spec() {
        let f = FormInput {
            tos: "vo".into(),
            window: "256K".into(),
            congestion: "bbr".into(),
            interval: "0.5".into(),
            ..input("h")
        };
        let spec = to_request(&f).unwrap().spec;
        assert_eq!(spec.tos, Some(0xc0));
        assert_eq!(spec.window, Some(256 * 1024));
        assert_eq!(spec.congestion.as_deref(), Some("bbr"));
        assert_eq!(spec.interval, Duration::from_millis(500));
        // Numbers as the CLI's -S reads them: `010` is octal there, so here too.
        for (text, want) in [
            ("BK", Some(0x20)),
            ("0xb8", Some(0xb8)),
            ("184", Some(184)),
            ("010", Some(8)),
            ("", None),
        ] {
            assert_eq!(parse_tos(text), Ok(want), "{text}");
        }
        for bad in ["256", "VX", "-1", "0x1ff"] {
            assert_eq!(parse_tos(bad).unwrap_err().field, "tos", "{bad}");
        }
        assert_eq!(
            to_request(&FormInput {
                window: "lots".into(),
                ..input("h")
            })
            .unwrap_err()
            .field,
            "window"
        );
        // Request/response, like netperf's TCP_RR: 1-byte transactions unless a length is given.
        let rr = to_request(&FormInput {
            mode: RunKind::RequestResponse,
            ..input("h")
        })
        .unwrap()
        .spec;
        assert_eq!((rr.len, rr.rr.map(|r| r.response_len)), (1, Some(1)));
        let udp_rr = to_request(&FormInput {
            mode: RunKind::RequestResponse,
            protocol: Protocol::Udp,
            len: "64".into(),
            ..input("h")
        })
        .unwrap()
        .spec;
        assert_eq!(
            (udp_rr.protocol, udp_rr.len, udp_rr.bitrate),
            (Protocol::Udp, 64, None)
        );
        let both = to_request(&FormInput {
            mode: RunKind::RequestResponse,
            direction: WhoSends::Both,
            ..input("h")
        });
        assert_eq!(both.unwrap_err().field, "mode");
    }

    #[test]
    fn ttcp_preset_is_128000_writes_of_1_kib() {
        let ttcp = presets().into_iter().find(|p| p.id == "ttcp").unwrap();
        let f = FormInput {
            target: "h".into(),
            ..ttcp.input
        };
        let spec = to_request(&f).unwrap().spec;
        assert_eq!(spec.protocol, Protocol::Tcp);
        assert_eq!(
            spec.end,
            EndCondition::Bytes {
                bytes: 128_000 * 1024
            }
        );
        assert_eq!(spec.len, 1024);
        assert_eq!(spec.direction, Direction::Normal);
    }

    #[test]
    fn udp_takes_a_rate_and_a_datagram_size() {
        let f = FormInput {
            protocol: Protocol::Udp,
            bitrate: "15M".into(),
            len: "1400".into(),
            streams: "2".into(),
            ..input("[fe80::1]:5210")
        };
        let TestRequest { target, spec, .. } = to_request(&f).unwrap();
        assert_eq!(target, "[fe80::1]:5210");
        assert_eq!(spec.bitrate, Some(BitRate(15_000_000)));
        assert_eq!((spec.len, spec.streams), (1400, 2));
    }

    #[test]
    fn bad_values_name_their_field() {
        let cases = [
            (input(""), "target"),
            (input("pc:99999"), "target"),
            (input("a b"), "target"),
            (input("[::1"), "target"),
            (
                FormInput {
                    seconds: "-1".into(),
                    ..input("h")
                },
                "seconds",
            ),
            (
                FormInput {
                    streams: "1.5".into(),
                    ..input("h")
                },
                "streams",
            ),
            (
                FormInput {
                    streams: "500".into(),
                    ..input("h")
                },
                "streams",
            ),
            (
                FormInput {
                    protocol: Protocol::Udp,
                    len: "8".into(),
                    ..input("h")
                },
                "len",
            ),
            (
                FormInput {
                    end: EndsAfter::Bytes,
                    bytes: "lots".into(),
                    ..input("h")
                },
                "bytes",
            ),
        ];
        for (f, field) in cases {
            let e = to_request(&f).unwrap_err();
            assert_eq!(e.field, field, "{f:?}: {e:?}");
            assert!(!e.message.is_empty());
        }
    }

    #[test]
    fn dccp_takes_a_ccid() {
        let f = FormInput {
            protocol: Protocol::Dccp,
            ccid: "3".into(),
            ..input("h")
        };
        let spec = to_request(&f).unwrap().spec;
        assert_eq!(spec.protocol, Protocol::Dccp);
        assert_eq!(
            spec.dccp,
            Some(DccpSpec {
                service: DEFAULT_SERVICE,
                ccid: Some(3)
            })
        );
        let bad = FormInput {
            ccid: "7".into(),
            ..f
        };
        assert_eq!(to_request(&bad).unwrap_err().field, "ccid");
    }

    #[test]
    fn sweeps_become_sweep_requests_over_udp_or_dccp() {
        let sweep = presets().into_iter().find(|p| p.id == "sweep").unwrap();
        let f = FormInput {
            protocol: Protocol::Tcp,
            ..sweep.input.clone()
        };
        let req = to_request(&FormInput {
            target: "pc".into(),
            ..f
        })
        .unwrap();
        assert_eq!(
            req.spec.protocol,
            Protocol::Udp,
            "a sweep over TCP means UDP"
        );
        assert_eq!(
            req.sweep.as_deref(),
            Some(&[16, 32, 64, 128, 256, 512, 1024, 1420][..])
        );
        assert!(matches!(req.message(), ClientMsg::Sweep { ref sizes, .. } if sizes.len() == 8));
        for (sizes, direction) in [
            ("16,x", WhoSends::ThisPeer),
            ("", WhoSends::ThisPeer),
            ("64", WhoSends::Both),
        ] {
            let bad = FormInput {
                target: "pc".into(),
                sizes: sizes.into(),
                direction,
                ..sweep.input.clone()
            };
            assert_eq!(
                to_request(&bad).unwrap_err().field,
                "sizes",
                "{sizes} {direction:?}"
            );
        }
    }

    #[test]
    fn streams_take_a_preset_or_a_rate_and_a_length() {
        let audio = presets().into_iter().find(|p| p.id == "audio").unwrap();
        let f = FormInput {
            target: "pc".into(),
            ..audio.input
        };
        let req = to_request(&f).unwrap();
        assert_eq!(req.sweep, None);
        assert_eq!(
            (req.spec.protocol, req.spec.bitrate, req.spec.len),
            (Protocol::Udp, Some(BitRate(48_000)), 160)
        );
        assert!(matches!(req.message(), ClientMsg::Run { .. }));
        let rate = FormInput {
            cbr: "64k".into(),
            len: "200".into(),
            protocol: Protocol::Dccp,
            ..f.clone()
        };
        let spec = to_request(&rate).unwrap().spec;
        assert_eq!(
            (spec.protocol, spec.bitrate, spec.len),
            (Protocol::Dccp, Some(BitRate(64_000)), 200)
        );
        let no_len = FormInput {
            cbr: "64k".into(),
            ..f.clone()
        };
        assert_eq!(to_request(&no_len).unwrap_err().field, "len");
        let nonsense = FormInput {
            cbr: "loud".into(),
            ..f
        };
        let e = to_request(&nonsense).unwrap_err();
        assert!(e.field == "cbr" && e.message.contains("mp3"), "{e:?}");
    }

    #[test]
    fn the_latency_preset_makes_a_checked_request_and_says_which_field_is_wrong() {
        let preset = presets().into_iter().find(|p| p.id == "latency").unwrap();
        let f = FormInput {
            target: "pc.lan".into(),
            ..preset.input
        };
        let (target, request) = to_latency(&f).unwrap().unwrap();
        assert_eq!(target, "pc.lan");
        assert_eq!((request.load_seconds, request.streams), (5.0, 4));
        assert_eq!(request.check(), Ok(()));
        for (field, change) in [
            (
                "seconds",
                FormInput {
                    seconds: "0.5".into(),
                    ..f.clone()
                },
            ),
            (
                "seconds",
                FormInput {
                    seconds: "600".into(),
                    ..f.clone()
                },
            ),
            (
                "streams",
                FormInput {
                    streams: "2.5".into(),
                    ..f.clone()
                },
            ),
            (
                "streams",
                FormInput {
                    streams: "33".into(),
                    ..f.clone()
                },
            ),
            (
                "target",
                FormInput {
                    target: String::new(),
                    ..f.clone()
                },
            ),
        ] {
            assert_eq!(
                to_latency(&change).unwrap().unwrap_err().field,
                field,
                "{change:?}"
            );
        }
        assert!(
            to_latency(&input("pc")).is_none(),
            "other modes are not latency runs"
        );
    }

    /// A form as the page stored it while its menus were plain strings (`FormInput` as JSON,
    /// every field a string), with these four menu values.
    fn stored_by_an_older_page(mode: &str, protocol: &str, direction: &str, end: &str) -> String {
        format!(
            r#"{{"target":"pc:5210","mode":"{mode}","protocol":"{protocol}","ccid":"","sizes":"16,32,64,...,1420","cbr":"mp3","direction":"{direction}","end":"{end}","seconds":"10","bytes":"","streams":"1","len":"","bitrate":"","tos":"","window":"","congestion":"","interval":"1"}}"#
        )
    }

    #[test]
    fn forms_stored_by_older_pages_load_and_are_stored_the_same_way() {
        let pc = || input("pc:5210");
        let cases = [
            (["test", "tcp", "tx", "time"], pc()),
            (
                ["rr", "tcp", "tx", "time"],
                FormInput {
                    mode: RunKind::RequestResponse,
                    ..pc()
                },
            ),
            (
                ["sweep", "udp", "tx", "time"],
                FormInput {
                    mode: RunKind::Sweep,
                    protocol: Protocol::Udp,
                    ..pc()
                },
            ),
            (
                ["cbr", "dccp", "rx", "time"],
                FormInput {
                    mode: RunKind::Stream,
                    protocol: Protocol::Dccp,
                    direction: WhoSends::OtherPeer,
                    ..pc()
                },
            ),
            (
                ["latency", "tcp", "both", "bytes"],
                FormInput {
                    mode: RunKind::Latency,
                    direction: WhoSends::Both,
                    end: EndsAfter::Bytes,
                    ..pc()
                },
            ),
        ];
        for ([mode, protocol, direction, end], want) in cases {
            let stored = stored_by_an_older_page(mode, protocol, direction, end);
            let loaded: FormInput = serde_json::from_str(&stored).expect(&stored);
            assert_eq!(loaded, want, "{stored}");
            // Stored again, it reads exactly as before: older pages still load newer forms.
            assert_eq!(serde_json::to_string(&loaded).unwrap(), stored);
        }
        // An even older page's form, without the later fields, takes their defaults.
        let short: FormInput =
            serde_json::from_str(r#"{"target":"pc","mode":"sweep","protocol":"udp"}"#).unwrap();
        assert_eq!(
            short,
            FormInput {
                mode: RunKind::Sweep,
                protocol: Protocol::Udp,
                ..input("pc")
            }
        );
    }

    #[test]
    fn a_stored_menu_value_that_names_no_choice_is_its_default() {
        let stored = stored_by_an_older_page("flood", "sctp", "up", "packets")
            .replace(r#""seconds":"10""#, r#""seconds":"30""#);
        let loaded: FormInput = serde_json::from_str(&stored).expect(&stored);
        assert_eq!(
            loaded,
            FormInput {
                seconds: "30".into(),
                ..input("pc:5210")
            },
            "the other fields are kept"
        );
        // Not even a string: the default too.
        let odd: FormInput =
            serde_json::from_str(r#"{"target":"pc","mode":3,"protocol":null,"end":["bytes"]}"#)
                .unwrap();
        assert_eq!(odd, input("pc"));
        // The same for a menu value as the page reads it.
        assert_eq!(RunKind::from_value("flood"), RunKind::Test);
        assert_eq!(WhoSends::from_value(""), WhoSends::ThisPeer);
    }

    #[test]
    fn the_menus_option_values_are_the_stored_strings() {
        let page = include_str!("../static/index.html");
        // Each menu's options, in order, as the page lists them.
        let options = |id: &str| -> Vec<String> {
            let from = page.find(&format!(r#"<select id="{id}">"#)).unwrap();
            let menu = &page[from..from + page[from..].find("</select>").unwrap()];
            menu.split(r#"<option value=""#)
                .skip(1)
                .map(|o| o[..o.find('"').unwrap()].to_string())
                .collect()
        };
        fn values<T: Choice>(choices: &[T]) -> Vec<String> {
            choices.iter().map(|choice| choice.value()).collect()
        }
        use RunKind::{Latency, RequestResponse, Stream, Sweep, Test};
        let kinds = values(&[Test, RequestResponse, Sweep, Stream, Latency]);
        assert_eq!(options("f-mode"), kinds);
        let protocols = values(&[Protocol::Tcp, Protocol::Udp, Protocol::Dccp]);
        assert_eq!(options("f-protocol"), protocols);
        let senders = values(&[WhoSends::ThisPeer, WhoSends::OtherPeer, WhoSends::Both]);
        assert_eq!(options("f-direction"), senders);
        assert_eq!(
            options("f-end"),
            values(&[EndsAfter::Time, EndsAfter::Bytes])
        );
        for value in options("f-mode") {
            assert_eq!(RunKind::from_value(&value).value(), value);
        }
    }

    #[test]
    fn expectations_fill_the_request_and_a_bad_one_is_an_error_on_its_field() {
        let texts = |expect: &[Expectation]| -> Vec<String> {
            expect.iter().map(|e| e.text().to_string()).collect()
        };
        let tcp = FormInput {
            expect: " rx >= 300M, retransmits<=10 ".into(),
            ..input("h")
        };
        let spec = to_request(&tcp).unwrap().spec;
        assert_eq!(texts(&spec.expect), ["rx>=300M", "retransmits<=10"]);
        let rr = FormInput {
            mode: RunKind::RequestResponse,
            expect: "rr>=5k".into(),
            ..input("h")
        };
        assert_eq!(texts(&to_request(&rr).unwrap().spec.expect), ["rr>=5k"]);
        let latency = FormInput {
            target: "pc".into(),
            expect: "p99<=40ms, added<=20ms".into(),
            ..preset("latency").unwrap().input
        };
        let (_, request) = to_latency(&latency).unwrap().unwrap();
        assert_eq!(texts(&request.expect), ["p99<=40ms", "added<=20ms"]);
        let multicast = FormInput {
            target: "pc".into(),
            ..preset("multicast").unwrap().input
        };
        let sweep = FormInput {
            target: "pc".into(),
            ..preset("sweep").unwrap().input
        };
        // The parser's words, the test's, or why the kind of run is not judged: all on Expect.
        let too_many = vec!["rx>=1M"; perfpeer_shared::verdict::MAX_EXPECTATIONS + 1].join(",");
        for (form, expect, words) in [
            (&tcp, "rx>300M", "not an expectation"),
            (&tcp, "speed>=1G", "not a figure"),
            (&tcp, "rx<=1G", "a higher rx is better"),
            (
                &tcp,
                "loss<=1%",
                "loss<=1%: this test does not measure that",
            ),
            (&tcp, "p99<=40ms", "does not measure"),
            (&tcp, too_many.as_str(), "at most 16"),
            (&rr, "rx>=1M", "does not measure"),
            (&sweep, "rx>=1M", "A sweep is not judged"),
            (&multicast, "loss<=1%", "A multicast test is not judged"),
            (&latency, "rx>=1M", "judged by p99 and added"),
            (&latency, "p99<40ms", "not an expectation"),
        ] {
            let bad = FormInput {
                expect: expect.into(),
                ..form.clone()
            };
            let e = match to_latency(&bad) {
                Some(latency) => latency.unwrap_err(),
                None => to_request(&bad).unwrap_err(),
            };
            assert_eq!(e.field, "expect", "{expect}: {e:?}");
            assert!(e.message.contains(words), "{expect}: {}", e.message);
        }
        // Kept with the form in the browser's storage, for Run again and Test to <peer>.
        let json = serde_json::to_string(&tcp).unwrap();
        assert!(
            json.ends_with(r#","expect":" rx >= 300M, retransmits<=10 "}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<FormInput>(&json).unwrap(), tcp);
    }

    #[test]
    fn bare_ipv6_and_ports_are_accepted() {
        assert_eq!(check_target(" ::1 ").unwrap(), "::1");
        assert_eq!(check_target("[::1]").unwrap(), "[::1]");
        assert_eq!(check_target("10.0.0.2:5210").unwrap(), "10.0.0.2:5210");
        assert!(check_target("h:0").is_err());
    }
}
