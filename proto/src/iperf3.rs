//! iperf3's control-protocol formats as pure functions: the cookie, the state bytes, the
//! length-prefixed JSON frames, and the parameter and result objects, each converted to and
//! from perfpeer's own types. No sockets here.

use std::time::Duration;

use perfpeer_shared::report::{
    CpuUsage, PeerRole, SideReport, StreamFinal, StreamRole, TcpFinal, UdpRxFinal,
};
use perfpeer_shared::spec::{Direction, EndCondition, MAX_TEST_TIME, Protocol, TestSpec};
use perfpeer_shared::units::BitRate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// iperf3's default port, for control and data.
pub const DEFAULT_PORT: u16 = 5201;
/// Cookie length on the wire: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// Largest parameter JSON accepted (iperf3 3.18's own limit).
pub const MAX_PARAMS_LEN: usize = 8192;
/// Largest results JSON accepted.
pub const MAX_RESULTS_LEN: usize = 1 << 20;
/// What a UDP stream's first datagram carries ("9876").
pub const UDP_CONNECT: [u8; 4] = *b"9876";
/// The server's answer to it ("6789").
pub const UDP_REPLY: [u8; 4] = *b"6789";

const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Something a stock iperf3 sent that is not valid iperf3.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The cookie is not 36 printable characters and a NUL.
    #[error("malformed iperf3 cookie")]
    BadCookie,
    /// A state byte iperf3 does not define.
    #[error("unknown iperf3 state byte {0}")]
    BadState(i8),
    /// A JSON frame of length 0 or over the limit.
    #[error("iperf3 JSON frame of {len} bytes (limit {max})")]
    BadLength {
        /// Announced length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// Not JSON, or a key with the wrong type.
    #[error("bad iperf3 JSON: {0}")]
    BadJson(String),
    /// Valid JSON asking for something perfpeer does not do.
    #[error("unsupported iperf3 test: {0}")]
    Unsupported(String),
}

/// A test's cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; COOKIE_LEN]);

impl Cookie {
    /// A fresh random cookie in iperf3's alphabet.
    pub fn generate() -> Cookie {
        let mut random = [0u8; COOKIE_LEN - 1];
        getrandom::fill(&mut random).expect("the OS random source is available");
        let mut bytes = [0u8; COOKIE_LEN];
        for (b, r) in bytes.iter_mut().zip(random) {
            *b = COOKIE_ALPHABET[usize::from(r % 32)];
        }
        Cookie(bytes)
    }

    /// Checks 37 received bytes: printable characters up to a NUL, which must be present.
    pub fn from_bytes(bytes: &[u8; COOKIE_LEN]) -> Result<Cookie, CodecError> {
        let end = bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or(CodecError::BadCookie)?;
        if end == 0 || !bytes[..end].iter().all(|b| b.is_ascii_graphic()) {
            return Err(CodecError::BadCookie);
        }
        Ok(Cookie(*bytes))
    }

    /// The wire bytes.
    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    /// The characters before the NUL (what `-J` shows as `cookie`).
    pub fn as_str(&self) -> &str {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(COOKIE_LEN);
        std::str::from_utf8(&self.0[..end]).unwrap_or("")
    }
}

/// The state bytes iperf3 sends on its control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    /// The byte on the wire.
    #[allow(
        clippy::cast_sign_loss,
        reason = "iperf3's states are signed chars on the wire (-1, -2, …): the byte is their bits"
    )]
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// Reads a state byte.
    #[allow(
        clippy::cast_possible_wrap,
        reason = "iperf3's states are signed chars on the wire (-1, -2, …): the byte is their bits"
    )]
    pub fn from_byte(b: u8) -> Result<State, CodecError> {
        Ok(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            other => return Err(CodecError::BadState(other)),
        })
    }
}

/// A JSON frame: 4-byte big-endian length, then unformatted JSON.
pub fn frame_json(value: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(value).expect("JSON values serialize");
    let mut out = Vec::with_capacity(4 + body.len());
    let len = u32::try_from(body.len()).expect("a JSON frame is far below 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Checks a frame's length prefix against `max`.
pub fn frame_len(prefix: [u8; 4], max: usize) -> Result<usize, CodecError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len == 0 || len > max {
        return Err(CodecError::BadLength { len, max });
    }
    Ok(len)
}

/// iperf3's id on the wire for the stream a test's plan numbers `plan_id` (1, 2, 3, …):
/// iperf3 numbers its streams 1, 3, 4, 5, … (2 is skipped, a quirk both ends keep).
pub fn wire_stream_id(plan_id: u32) -> u32 {
    if plan_id <= 1 {
        plan_id
    } else {
        plan_id.saturating_add(1)
    }
}

/// The plan's id of the stream iperf3 numbers `wire` on the wire; `None` for the ids iperf3
/// never uses (0 and 2).
pub fn plan_stream_id(wire: u32) -> Option<u32> {
    match wire {
        0 | 2 => None,
        1 => Some(1),
        n => Some(n - 1),
    }
}

/// The client's test parameters, typed as iperf3 3.18 checks them.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Params {
    #[serde(default)]
    tcp: Option<bool>,
    #[serde(default)]
    udp: Option<bool>,
    #[serde(default)]
    sctp: Option<bool>,
    #[serde(default)]
    omit: Option<f64>,
    #[serde(default)]
    time: Option<f64>,
    #[serde(default)]
    num: Option<u64>,
    #[serde(default)]
    blockcount: Option<u64>,
    #[serde(default, rename = "MSS")]
    mss: Option<u32>,
    #[serde(default)]
    nodelay: Option<bool>,
    #[serde(default)]
    parallel: Option<u16>,
    #[serde(default)]
    reverse: Option<bool>,
    #[serde(default)]
    bidirectional: Option<bool>,
    #[serde(default)]
    window: Option<u32>,
    #[serde(default)]
    len: Option<u32>,
    #[serde(default)]
    bandwidth: Option<u64>,
    #[serde(default)]
    burst: Option<u32>,
    #[serde(default, rename = "TOS")]
    tos: Option<u8>,
    #[serde(default)]
    congestion: Option<String>,
    #[serde(default)]
    udp_counters_64bit: Option<i64>,
    #[serde(default)]
    client_version: Option<String>,
    #[serde(default)]
    get_server_output: Option<Value>,
}

/// How a server's own output of a test travels back in its results (`--get-server-output`):
/// as text, or as its `-J` object when the server itself runs with `-J` (the client's style
/// does not matter, as with stock iperf3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `server_output_text`.
    Text,
    /// `server_output_json`.
    Json,
}

/// What a client asks of a server beyond the test itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Asks {
    /// 64-bit UDP counters.
    pub counter64: bool,
    /// The server's own output of the test, in the results.
    pub server_output: bool,
    /// The CPU the server should pin itself to (`-A n,m`: m).
    pub server_affinity: Option<u32>,
}

/// Whether a parameter is set: iperf3 writes its flags as `1` or `true`.
fn is_set(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        _ => false,
    }
}

/// What a parameter object asks for, in perfpeer's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Requested {
    /// The test.
    pub spec: TestSpec,
    /// 64-bit UDP counters.
    pub counter64: bool,
    /// The client's version string, if it sent one.
    pub client_version: Option<String>,
    /// The test runs until the client ends it (`-t 0`): `spec` carries the longest test a
    /// spec may be, for the server to cut to its own limit.
    pub until_stopped: bool,
    /// Whether the client asked for the server's own output.
    pub server_output: bool,
}

fn secs(v: f64, what: &str) -> Result<Duration, CodecError> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| CodecError::BadJson(format!("{what} must be a non-negative number")))
}

/// A message's bytes as text: JSON is UTF-8, and read from `&str` every type has one reader in
/// the binary (serde_json's byte-slice reader would be a second copy of each: 29 KB of MIPS).
fn json_text(bytes: &[u8]) -> Result<&str, CodecError> {
    std::str::from_utf8(bytes).map_err(|_| CodecError::BadJson("not UTF-8 text".into()))
}

impl Params {
    /// Parses the parameter JSON a client sent.
    pub fn parse(bytes: &[u8]) -> Result<Params, CodecError> {
        serde_json::from_str(json_text(bytes)?).map_err(|e| CodecError::BadJson(e.to_string()))
    }

    /// Converts to a validated spec.
    pub fn into_requested(self) -> Result<Requested, CodecError> {
        let protocol = match (self.tcp, self.udp, self.sctp) {
            (Some(true), _, _) => Protocol::Tcp,
            (_, Some(true), _) => Protocol::Udp,
            (_, _, Some(true)) => return Err(CodecError::Unsupported("SCTP".into())),
            _ => return Err(CodecError::BadJson("no protocol (tcp or udp) given".into())),
        };
        let mut spec = TestSpec::new(protocol);
        spec.streams = self.parallel.unwrap_or(1);
        spec.direction = match (self.bidirectional, self.reverse) {
            (Some(true), _) => Direction::Bidir,
            (_, Some(true)) => Direction::Reverse,
            _ => Direction::Normal,
        };
        if let Some(len) = self.len.filter(|&l| l > 0) {
            spec.len = len;
        }
        spec.end = match (
            self.num.filter(|&n| n > 0),
            self.blockcount.filter(|&b| b > 0),
        ) {
            (Some(bytes), _) => EndCondition::Bytes { bytes },
            (None, Some(blocks)) => EndCondition::Bytes {
                bytes: blocks.saturating_mul(u64::from(spec.len)),
            },
            // `-t 0`: until the client ends the test.
            (None, None) if self.time == Some(0.0) => EndCondition::Time {
                duration: MAX_TEST_TIME,
            },
            (None, None) => EndCondition::Time {
                duration: secs(self.time.unwrap_or(10.0), "time")?,
            },
        };
        let until_stopped = self.time == Some(0.0) && matches!(spec.end, EndCondition::Time { .. });
        spec.omit = secs(self.omit.unwrap_or(0.0), "omit")?;
        // iperf3's rate is per stream; perfpeer's is for all streams of a direction.
        spec.bitrate = self
            .bandwidth
            .filter(|&b| b > 0)
            .map(|b| BitRate(b.saturating_mul(u64::from(spec.streams))));
        // `-b RATE/BURST`: a burst of 0 or 1 is iperf3's way of saying none.
        spec.burst = self.burst.filter(|&b| b > 1 && spec.bitrate.is_some());
        if protocol == Protocol::Tcp {
            spec.mss = self.mss.filter(|&m| m > 0);
            spec.congestion = self.congestion;
            spec.no_delay = self.nodelay.unwrap_or(false);
        }
        spec.window = self.window.filter(|&w| w > 0);
        spec.tos = self.tos.filter(|&t| t > 0);
        spec.validate()
            .map_err(|e| CodecError::Unsupported(e.to_string()))?;
        let server_output = is_set(self.get_server_output.as_ref());
        Ok(Requested {
            spec,
            counter64: self.udp_counters_64bit.is_some(),
            client_version: self.client_version,
            until_stopped,
            server_output,
        })
    }
}

/// The parameter JSON a client sends for `spec` (keys in iperf3's order and types).
pub fn params_json(spec: &TestSpec, asks: Asks) -> Value {
    let mut m = Map::new();
    m.insert(
        if spec.protocol == Protocol::Tcp {
            "tcp"
        } else {
            "udp"
        }
        .into(),
        json!(true),
    );
    m.insert("omit".into(), json!(spec.omit.as_secs()));
    if let Some(cpu) = asks.server_affinity {
        m.insert("server_affinity".into(), json!(cpu));
    }
    let (time, num) = match spec.end {
        EndCondition::Time { duration } => (duration.as_secs().max(1), 0),
        EndCondition::Bytes { bytes } => (0, bytes),
    };
    m.insert("time".into(), json!(time));
    m.insert("num".into(), json!(num));
    m.insert("blockcount".into(), json!(0));
    if let Some(mss) = spec.mss {
        m.insert("MSS".into(), json!(mss));
    }
    if spec.no_delay {
        m.insert("nodelay".into(), json!(true));
    }
    m.insert("parallel".into(), json!(spec.streams));
    match spec.direction {
        Direction::Reverse => drop(m.insert("reverse".into(), json!(true))),
        Direction::Bidir => drop(m.insert("bidirectional".into(), json!(true))),
        Direction::Normal => {}
    }
    if let Some(w) = spec.window {
        m.insert("window".into(), json!(w));
    }
    m.insert("len".into(), json!(spec.len));
    if let Some(rate) = spec.per_stream_rate() {
        m.insert("bandwidth".into(), json!(rate.0));
    }
    if let Some(burst) = spec.burst {
        m.insert("burst".into(), json!(burst));
    }
    m.insert("pacing_timer".into(), json!(1000));
    if let Some(tos) = spec.tos {
        m.insert("TOS".into(), json!(tos));
    }
    if let Some(cc) = &spec.congestion {
        m.insert("congestion".into(), json!(cc));
    }
    if asks.counter64 {
        m.insert("udp_counters_64bit".into(), json!(1));
    }
    if asks.server_output {
        m.insert("get_server_output".into(), json!(1));
    }
    m.insert("client_version".into(), json!("3.12"));
    Value::Object(m)
}

/// One stream in a results message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// Stream id (1, 3, 4, …).
    pub id: u32,
    /// Bytes sent or received.
    pub bytes: u64,
    /// Retransmits, −1 when unknown or not a sender.
    #[serde(deserialize_with = "wrapped_i64")]
    pub retransmits: i64,
    /// Jitter in seconds.
    pub jitter: f64,
    /// Lost datagrams.
    #[serde(deserialize_with = "wrapped_i64")]
    pub errors: i64,
    /// Lost datagrams in the omitted period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_errors: Option<i64>,
    /// Datagrams sent, or the highest sequence number seen.
    #[serde(deserialize_with = "wrapped_i64")]
    pub packets: i64,
    /// Datagrams in the omitted period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_packets: Option<i64>,
    /// Always 0.
    #[serde(default)]
    pub start_time: f64,
    /// The stream's duration, seconds.
    #[serde(default)]
    pub end_time: f64,
}

/// Reads an integer that stock iperf3 may have printed as an unsigned 64-bit value: its −1
/// ("unknown") arrives as 18446744073709551615.
#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf3 prints some counters as unsigned 64-bit: their bits are the signed value it meant"
)]
fn wrapped_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(i) = n.as_i64() {
        Ok(i)
    } else if let Some(u) = n.as_u64() {
        Ok(u as i64)
    } else {
        Err(serde::de::Error::custom(format!("{n} is not an integer")))
    }
}

/// A results message (each side sends one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Process CPU, percent of one CPU.
    pub cpu_util_total: f64,
    /// User part.
    pub cpu_util_user: f64,
    /// System part.
    pub cpu_util_system: f64,
    /// −1 for a receive-only side; 1 for a TCP sender with retransmit counts; 0 otherwise.
    #[serde(deserialize_with = "wrapped_i64")]
    pub sender_has_retransmits: i64,
    /// Congestion control used (TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// Per stream.
    pub streams: Vec<StreamResult>,
    /// The sender's own `-J` output of the test, when the client asked for it in JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    /// The sender's own text output of the test, when the client asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
}

impl Results {
    /// Parses a results message; both omitted counters must be present or both absent.
    pub fn parse(bytes: &[u8]) -> Result<Results, CodecError> {
        let r: Results = serde_json::from_str(json_text(bytes)?)
            .map_err(|e| CodecError::BadJson(e.to_string()))?;
        if r.streams
            .iter()
            .any(|s| s.omitted_errors.is_some() != s.omitted_packets.is_some())
        {
            return Err(CodecError::BadJson(
                "omitted_errors and omitted_packets come together".into(),
            ));
        }
        Ok(r)
    }

    /// The results message for our side's report.
    pub fn from_report(report: &SideReport, protocol: Protocol) -> Results {
        let sends = report.streams.iter().any(|s| s.role == StreamRole::Sender);
        let sender_has_retransmits = match (sends, protocol) {
            (false, _) => -1,
            (true, Protocol::Tcp) => i64::from(report.streams.iter().any(|s| s.tcp.is_some())),
            (true, Protocol::Udp | Protocol::Dccp) => 0,
        };
        let streams = report.streams.iter().map(stream_result).collect();
        Results {
            cpu_util_total: report.cpu.process_total_percent(),
            cpu_util_user: report.cpu.process_user_percent(),
            cpu_util_system: report.cpu.process_system_percent(),
            sender_has_retransmits,
            congestion_used: report.congestion_used.clone(),
            streams,
            server_output_json: None,
            server_output_text: None,
        }
    }

    /// The other end's report, from its results message. `local` is our own report: the
    /// other end's role on each stream is the opposite of ours.
    pub fn into_report(
        self,
        local: &SideReport,
        remote_role: PeerRole,
        protocol: Protocol,
    ) -> SideReport {
        let elapsed = local.cpu.elapsed;
        // A stream under an id iperf3 never uses is left out (the report keeps the others).
        let streams = self
            .streams
            .iter()
            .filter_map(|s| {
                let id = plan_stream_id(s.id)?;
                let ours = local.streams.iter().find(|l| l.id == id).map(|l| l.role);
                let role = match ours {
                    Some(StreamRole::Sender) => StreamRole::Receiver,
                    _ => StreamRole::Sender,
                };
                Some(stream_final(
                    id,
                    s,
                    role,
                    self.sender_has_retransmits,
                    protocol == Protocol::Udp,
                ))
            })
            .collect();
        let cpu_seconds = |pct: f64| pct / 100.0 * elapsed.as_secs_f64();
        SideReport {
            congestion_used: self.congestion_used,
            streams,
            cpu: CpuUsage {
                elapsed,
                process_user_s: cpu_seconds(self.cpu_util_user),
                process_system_s: cpu_seconds(self.cpu_util_system),
                host_user_percent: 0.0,
                host_system_percent: 0.0,
                cpus: 0,
            },
            ..SideReport::empty(remote_role, Default::default())
        }
    }
}

#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf3's result JSON holds counts as signed 64-bit; ours stay below 2^63"
)]
fn stream_result(s: &StreamFinal) -> StreamResult {
    let (jitter, errors, packets) = match (&s.udp_rx, s.packets) {
        (Some(rx), _) => (rx.jitter_ms / 1000.0, rx.lost as i64, rx.expected() as i64),
        (None, Some(sent)) => (0.0, 0, sent as i64),
        (None, None) => (0.0, 0, 0),
    };
    StreamResult {
        id: wire_stream_id(s.id),
        bytes: s.bytes,
        retransmits: s.tcp.map_or(-1, |t| t.retransmits as i64),
        jitter,
        errors,
        omitted_errors: Some(0),
        packets,
        omitted_packets: Some(0),
        start_time: 0.0,
        end_time: s.duration.as_secs_f64(),
    }
}

#[allow(
    clippy::cast_sign_loss,
    reason = "negative counts from a peer are clamped to 0 before the conversion"
)]
fn stream_final(
    id: u32,
    s: &StreamResult,
    role: StreamRole,
    has_retransmits: i64,
    udp: bool,
) -> StreamFinal {
    let duration = Duration::try_from_secs_f64(s.end_time).unwrap_or_default();
    StreamFinal {
        id,
        role,
        bytes: s.bytes,
        duration,
        packets: (udp && role == StreamRole::Sender).then_some(s.packets.max(0) as u64),
        writes: None,
        tcp: (role == StreamRole::Sender && has_retransmits == 1 && s.retransmits >= 0).then(
            || TcpFinal {
                retransmits: s.retransmits as u64,
                ..Default::default()
            },
        ),
        udp_rx: (udp && role == StreamRole::Receiver).then(|| {
            let lost = s.errors.max(0) as u64;
            UdpRxFinal {
                received: (s.packets.max(0) as u64).saturating_sub(lost),
                sender_packets: None,
                lost,
                out_of_order: 0,
                duplicates: 0,
                jitter_ms: s.jitter * 1000.0,
                max_gap_ms: None,
                one_way: None,
                frames: None,
            }
        }),
        rr: None,
        write_one_way: None,
        write_frames: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_alphabet_and_checks() {
        let c = Cookie::generate();
        assert_eq!(c.as_str().len(), 36);
        assert!(c.as_str().bytes().all(|b| COOKIE_ALPHABET.contains(&b)));
        assert_eq!(c.as_bytes()[36], 0);
        assert_eq!(Cookie::from_bytes(c.as_bytes()), Ok(c));
        assert_eq!(Cookie::from_bytes(&[b'a'; 37]), Err(CodecError::BadCookie));
        assert_eq!(Cookie::from_bytes(&[0; 37]), Err(CodecError::BadCookie));
        let mut ctl = *c.as_bytes();
        ctl[3] = b'\n';
        assert_eq!(Cookie::from_bytes(&ctl), Err(CodecError::BadCookie));
    }

    #[test]
    fn state_bytes() {
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        assert_eq!(State::from_byte(9), Ok(State::ParamExchange));
        assert_eq!(State::from_byte(0x10), Ok(State::IperfDone));
        assert_eq!(State::from_byte(3), Err(CodecError::BadState(3)));
        for s in [
            State::TestStart,
            State::TestEnd,
            State::ExchangeResults,
            State::ClientTerminate,
        ] {
            assert_eq!(State::from_byte(s.byte()), Ok(s));
        }
    }

    #[test]
    fn frames() {
        let f = frame_json(&json!({"a":1}));
        assert_eq!(f, b"\0\0\0\x07{\"a\":1}");
        assert_eq!(frame_len([0, 0, 0, 7], MAX_PARAMS_LEN), Ok(7));
        assert!(frame_len([0, 0, 0, 0], MAX_PARAMS_LEN).is_err());
        assert_eq!(
            frame_len([0x06, 0x40, 0, 0], MAX_PARAMS_LEN),
            Err(CodecError::BadLength {
                len: 100 << 20,
                max: 8192
            })
        );
    }

    #[test]
    fn stock_default_tcp_request() {
        let raw = br#"{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let r = Params::parse(raw).unwrap().into_requested().unwrap();
        assert_eq!(r.spec.protocol, Protocol::Tcp);
        assert_eq!(
            r.spec.end,
            EndCondition::Time {
                duration: Duration::from_secs(10)
            }
        );
        assert_eq!(
            (r.spec.len, r.spec.streams, r.spec.direction),
            (131_072, 1, Direction::Normal)
        );
        assert_eq!(r.spec.bitrate, None);
        assert_eq!(r.client_version.as_deref(), Some("3.12"));
    }

    #[test]
    fn udp_request_with_rate_per_stream() {
        let raw = br#"{"udp":true,"omit":0,"time":3,"num":0,"blockcount":0,"parallel":2,"reverse":true,"len":1400,"bandwidth":5000000,"udp_counters_64bit":1}"#;
        let r = Params::parse(raw).unwrap().into_requested().unwrap();
        assert_eq!(
            r.spec.bitrate,
            Some(BitRate(10_000_000)),
            "2 streams × 5 Mbit/s"
        );
        assert_eq!(r.spec.per_stream_rate(), Some(BitRate(5_000_000)));
        assert_eq!(r.spec.direction, Direction::Reverse);
        assert!(r.counter64);
        let back = params_json(
            &r.spec,
            Asks {
                counter64: true,
                server_output: true,
                server_affinity: Some(1),
            },
        );
        assert_eq!(back["server_affinity"], 1);
        assert_eq!(back["bandwidth"], 5_000_000);
        assert_eq!(back["reverse"], true);
        assert_eq!(back["udp_counters_64bit"], 1);
        assert_eq!(back["get_server_output"], 1);
        let again = Params::parse(back.to_string().as_bytes())
            .unwrap()
            .into_requested()
            .unwrap();
        assert!(again.server_output);
        assert!(!again.until_stopped);
    }

    #[test]
    fn a_burst_travels_both_ways_and_one_is_none() {
        let raw =
            br#"{"udp":true,"time":3,"parallel":1,"len":1000,"bandwidth":2000000,"burst":20}"#;
        let r = Params::parse(raw).unwrap().into_requested().unwrap();
        assert_eq!(r.spec.burst, Some(20));
        assert_eq!(params_json(&r.spec, Asks::default())["burst"], 20);
        for none in [
            &br#"{"udp":true,"bandwidth":2000000,"burst":1}"#[..],
            br#"{"udp":true,"bandwidth":2000000}"#,
        ] {
            let r = Params::parse(none).unwrap().into_requested().unwrap();
            assert_eq!(r.spec.burst, None);
            assert!(params_json(&r.spec, Asks::default()).get("burst").is_none());
        }
        // Out of range: refused as iperf3's own server does.
        let raw = br#"{"udp":true,"bandwidth":2000000,"burst":5000}"#;
        assert!(Params::parse(raw).unwrap().into_requested().is_err());
    }

    #[test]
    fn time_zero_runs_until_the_client_stops() {
        let raw = br#"{"tcp":true,"omit":0,"time":0,"num":0,"blockcount":0,"parallel":1,"len":131072,"get_server_output":1}"#;
        let r = Params::parse(raw).unwrap().into_requested().unwrap();
        assert!(r.until_stopped);
        assert_eq!(
            r.spec.end,
            EndCondition::Time {
                duration: MAX_TEST_TIME
            }
        );
        assert!(r.server_output);
        // A byte count with time 0 is a byte-count test.
        let raw = br#"{"tcp":true,"time":0,"num":1000000}"#;
        let r = Params::parse(raw).unwrap().into_requested().unwrap();
        assert!(!r.until_stopped);
    }

    #[test]
    fn bad_params_are_refused() {
        for raw in [
            &b"not json"[..],
            br#"{"tcp":"yes"}"#,
            br#"{"tcp":true,"parallel":-1}"#,
            br#"{"tcp":true,"time":-5}"#,
            br#"{"omit":0}"#,
            br#"{"sctp":true}"#,
            br#"{"udp":true,"len":4}"#,
            br#"{"tcp":true,"parallel":1000}"#,
            br#"[1,2]"#,
        ] {
            let r = Params::parse(raw).and_then(Params::into_requested);
            assert!(r.is_err(), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn stock_results_parse() {
        let raw = br#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1.0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1000,"retransmits":-1,"jitter":0.0001,"errors":2,"omitted_errors":0,"packets":10,"omitted_packets":0,"start_time":0,"end_time":3.0}]}"#;
        let r = Results::parse(raw).unwrap();
        assert_eq!(r.streams[0].bytes, 1000);
        assert_eq!(r.sender_has_retransmits, -1);
        let half = br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"omitted_errors":0,"packets":1}]}"#;
        assert!(Results::parse(half).is_err());
        assert!(
            Results::parse(br#"{"streams":[]}"#).is_err(),
            "the CPU keys are required"
        );
        // Stock iperf3 prints its −1 through an unsigned 64-bit conversion.
        let wrapped = br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":5,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0}]}"#;
        let r = Results::parse(wrapped).unwrap();
        assert_eq!(
            (r.sender_has_retransmits, r.streams[0].retransmits),
            (-1, -1)
        );
        assert!(Results::parse(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0.5,"streams":[]}"#).is_err());
    }

    #[test]
    fn stream_ids_skip_two() {
        assert_eq!(
            (1..=4).map(wire_stream_id).collect::<Vec<_>>(),
            vec![1, 3, 4, 5]
        );
        assert_eq!(
            [0, 1, 2, 3, 4, 5].map(plan_stream_id),
            [None, Some(1), None, Some(2), Some(3), Some(4)]
        );
    }
}
