//! netperf 2.7's control protocol between `netperf` and `netserver`, as pure functions, tested
//! with the bytes a netperf 2.7.1 client and its netserver exchanged
//! (`tests/fixtures/netperf-2.7.1/`).
//!
//! Every control message is 656 bytes: two 32-bit words (the message's type, then the sender's
//! CPU-affinity wish in a request or an errno in a response) and 162 words of test data. The
//! words are big-endian up to a cut-off each message type has (38 words of an OMNI request, 18
//! of its response, 27 of its results, all of the small ones); raw strings follow the cut-off.
//! A float travels as its IEEE-754 bits in a big-endian word. netperf 2.7 runs its classic
//! tests (TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, TCP_CC, UDP_STREAM, UDP_RR) as OMNI tests:
//! one DO_OMNI request, one OMNI_RESPONSE naming the data port, the data phase, one
//! OMNI_RESULTS. See docs/wire-protocols.md ("netperf 2.7").

/// Length of every control message.
pub const MESSAGE_LEN: usize = 656;
/// netserver's control port.
pub const DEFAULT_PORT: u16 = 12865;
/// Bytes of test data after the two header words.
pub const DATA_LEN: usize = MESSAGE_LEN - 8;
/// The largest UDP payload.
pub const MAX_DATAGRAM: u32 = 65_507;

/// Message types (the first word).
pub mod kind {
    /// Turn the server's debug output on (answered with DEBUG_OK).
    pub const DEBUG_ON: i32 = 1;
    /// Turn it off (answered with DEBUG_OK).
    pub const DEBUG_OFF: i32 = 2;
    /// The answer to DEBUG_ON and DEBUG_OFF.
    pub const DEBUG_OK: i32 = 3;
    /// How fast the server's CPU idles (answered with the same type).
    pub const CPU_CALIBRATE: i32 = 5;
    /// The first message to a netserver started with `-Z`.
    pub const PASSPHRASE: i32 = 6;
    /// netperf 2.7's classic TCP_STREAM request (before OMNI; a 2.7 client sends DO_OMNI).
    pub const DO_TCP_STREAM: i32 = 10;
    /// The classic TCP_CC request, which netperf 2.7 still sends for `-t TCP_CC`.
    pub const DO_TCP_CC: i32 = 300;
    /// The server's answer to DO_TCP_CC.
    pub const TCP_CC_RESPONSE: i32 = 301;
    /// The server's figures after a TCP_CC test.
    pub const TCP_CC_RESULTS: i32 = 302;
    /// An OMNI test: every test of a netperf 2.7 client.
    pub const DO_OMNI: i32 = 97;
    /// The server's answer to DO_OMNI.
    pub const OMNI_RESPONSE: i32 = 98;
    /// The server's figures after the data phase.
    pub const OMNI_RESULTS: i32 = 99;
    /// System information (netserver answers "Deprecated").
    pub const DO_SYSINFO: i32 = 600;
    /// The answer to DO_SYSINFO.
    pub const SYSINFO_RESPONSE: i32 = 601;
}

/// OMNI request and response flag bits.
pub mod flags {
    /// TCP_NODELAY on the data socket.
    pub const NO_DELAY: u32 = 0x0000_0001;
    /// A connection per transaction (TCP_CRR) or connections only (TCP_CC).
    pub const CONNECT_TEST: u32 = 0x0000_0004;
    /// Measure the server's CPU.
    pub const MEASURE_CPU: u32 = 0x0000_0008;
}

/// What the server does in an OMNI test (netperf's direction from the server's side).
pub mod direction {
    /// The server sends.
    pub const XMIT: u32 = 0x2;
    /// The server receives.
    pub const RECV: u32 = 0x4;
}

/// How the server's CPU figures were measured (`cpu_method`).
pub mod cpu_method {
    /// Not measured.
    pub const UNKNOWN: u32 = 0;
    /// From /proc/stat.
    pub const PROC_STAT: u32 = 8;
}

/// Something a netperf peer sent that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Not one whole message.
    #[error("a netperf control message is 656 bytes, not {0}")]
    Length(usize),
    /// An address family netperf does not send.
    #[error("unknown netperf address family {0}")]
    Family(u32),
    /// A data port beyond 65535.
    #[error("data port {0} is not a port number")]
    Port(u32),
}

/// A control message: its two header words and its test data, still in wire order.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    /// The message's type ([`kind`]).
    pub kind: i32,
    /// A request's CPU-affinity wish (-1: none), or a response's errno (0: success).
    pub word2: i32,
    /// The test data, as sent.
    pub data: [u8; DATA_LEN],
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("kind", &self.kind)
            .field("word2", &self.word2)
            .finish_non_exhaustive()
    }
}

impl Message {
    /// An empty message of `kind` whose second word is `word2`.
    pub fn new(kind: i32, word2: i32) -> Message {
        Message {
            kind,
            word2,
            data: [0; DATA_LEN],
        }
    }

    /// Reads one message.
    pub fn decode(bytes: &[u8]) -> Result<Message, CodecError> {
        if bytes.len() != MESSAGE_LEN {
            return Err(CodecError::Length(bytes.len()));
        }
        let word = |at: usize| {
            i32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let mut data = [0; DATA_LEN];
        data.copy_from_slice(&bytes[8..]);
        Ok(Message {
            kind: word(0),
            word2: word(4),
            data,
        })
    }

    /// The message's bytes.
    pub fn encode(&self) -> [u8; MESSAGE_LEN] {
        let mut out = [0; MESSAGE_LEN];
        out[..4].copy_from_slice(&self.kind.to_be_bytes());
        out[4..8].copy_from_slice(&self.word2.to_be_bytes());
        out[8..].copy_from_slice(&self.data);
        out
    }

    /// Test-data word `i` (big-endian).
    fn u32_at(&self, i: usize) -> u32 {
        let at = i * 4;
        u32::from_be_bytes([
            self.data[at],
            self.data[at + 1],
            self.data[at + 2],
            self.data[at + 3],
        ])
    }

    fn i32_at(&self, i: usize) -> i32 {
        self.u32_at(i).cast_signed()
    }

    fn f32_at(&self, i: usize) -> f32 {
        f32::from_bits(self.u32_at(i))
    }

    fn put_u32(&mut self, i: usize, v: u32) {
        self.data[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn put_i32(&mut self, i: usize, v: i32) {
        self.put_u32(i, v.cast_unsigned());
    }

    fn put_f32(&mut self, i: usize, v: f32) {
        self.put_u32(i, v.to_bits());
    }

    /// A NUL-terminated string of at most `len` bytes at byte `at` of the test data.
    fn string_at(&self, at: usize, len: usize) -> String {
        let field = &self.data[at..at + len];
        let end = field.iter().position(|&b| b == 0).unwrap_or(len);
        String::from_utf8_lossy(&field[..end]).into_owned()
    }

    /// Writes `s` at byte `at`, cut to leave room for the NUL in a field of `len` bytes.
    fn put_string(&mut self, at: usize, len: usize, s: &str) {
        let field = &mut self.data[at..at + len];
        field.fill(0);
        let n = s.len().min(len - 1);
        field[..n].copy_from_slice(&s.as_bytes()[..n]);
    }

    /// An error answer: `kind` with `errno` and no data (netperf prints the errno's text).
    pub fn error(kind: i32, errno: i32) -> Message {
        Message::new(kind, errno)
    }

    /// The answer to CPU_CALIBRATE: the idle rate (a float) and the number of CPUs.
    pub fn cpu_calibration(rate: f32, cpus: u32) -> Message {
        let mut m = Message::new(kind::CPU_CALIBRATE, 0);
        m.put_f32(0, rate);
        m.put_u32(1, cpus);
        m
    }

    /// The answer to DO_SYSINFO, as netserver 2.7 gives it.
    pub fn sysinfo() -> Message {
        let mut m = Message::new(kind::SYSINFO_RESPONSE, 0);
        m.put_string(0, DATA_LEN, ",Deprecated,Deprecated,Deprecated,Deprecated");
        m
    }

    /// The string a PASSPHRASE message carries.
    pub fn passphrase(&self) -> String {
        self.string_at(0, DATA_LEN)
    }

    /// A PASSPHRASE message carrying `phrase` (as netperf's `-Z`).
    pub fn with_passphrase(phrase: &str) -> Message {
        let mut m = Message::new(kind::PASSPHRASE, -1);
        m.put_string(0, DATA_LEN, phrase);
        m
    }
}

/// The data connection's address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Whichever the server has (AF_UNSPEC).
    Unspecified,
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    fn decode(v: u32) -> Result<Family, CodecError> {
        match v {
            0 => Ok(Family::Unspecified),
            4 => Ok(Family::V4),
            6 => Ok(Family::V6),
            other => Err(CodecError::Family(other)),
        }
    }

    fn encode(self) -> u32 {
        match self {
            Family::Unspecified => 0,
            Family::V4 => 4,
            Family::V6 => 6,
        }
    }
}

/// netperf's socket types (`NST_*`) and the IP protocol numbers it sends.
pub mod socket_type {
    /// SOCK_STREAM.
    pub const STREAM: i32 = 1;
    /// SOCK_DGRAM.
    pub const DGRAM: i32 = 2;
    /// IPPROTO_TCP.
    pub const TCP: i32 = 6;
    /// IPPROTO_UDP.
    pub const UDP: i32 = 17;
}

/// An OMNI test request: what the netperf client asks the server to do. Sizes of -1 (or 0)
/// mean "the system's default"; the server answers with what it used.
#[derive(Debug, Clone, PartialEq)]
pub struct OmniRequest {
    /// SO_SNDBUF wanted (-1: default).
    pub send_buf_size: i32,
    /// Bytes per send (-1: default).
    pub send_size: i32,
    /// Bytes of a request in a request/response test (≤ 0: not one).
    pub request_size: i32,
    /// SO_RCVBUF wanted (-1: default).
    pub recv_buf_size: i32,
    /// Bytes per receive (-1: default).
    pub receive_size: i32,
    /// Bytes of a response in a request/response test (≤ 0: not one).
    pub response_size: i32,
    /// [`flags`] bits.
    pub flags: u32,
    /// The CPU rate the client already knows (0: none).
    pub cpu_rate: f32,
    /// Seconds (> 0), run until stopped (0), or minus a byte or transaction count (< 0).
    pub test_length: i32,
    /// The data port the client wants the server to listen on (0: any).
    pub data_port: u16,
    /// The data connection's family.
    pub family: Family,
    /// [`socket_type`] of the data connection.
    pub socket_type: i32,
    /// IP protocol of the data connection.
    pub protocol: i32,
    /// [`direction`] bits, from the server's side.
    pub direction: u32,
    /// The client's data port (UDP: where a sending server would send).
    pub netperf_port: u32,
    /// SO_PRIORITY for the server's data socket (-1: leave it).
    pub socket_prio: i32,
    /// IP TOS / traffic class for the server's data socket (-1: leave it).
    pub socket_tos: i32,
    /// TCP congestion control wanted ("": the default).
    pub cong_control: String,
}

/// Word indexes of an OMNI request's fields.
mod request_at {
    pub const SEND_BUF_SIZE: usize = 0;
    pub const SEND_SIZE: usize = 1;
    pub const REQUEST_SIZE: usize = 5;
    pub const RECV_BUF_SIZE: usize = 6;
    pub const RECEIVE_SIZE: usize = 7;
    pub const RESPONSE_SIZE: usize = 11;
    pub const FLAGS: usize = 12;
    pub const CPU_RATE: usize = 13;
    pub const TEST_LENGTH: usize = 14;
    pub const DATA_PORT: usize = 20;
    pub const IPFAMILY: usize = 21;
    pub const SOCKET_TYPE: usize = 22;
    pub const PROTOCOL: usize = 23;
    pub const DIRECTION: usize = 24;
    pub const NETPERF_PORT: usize = 25;
    pub const SOCKET_PRIO: usize = 36;
    pub const SOCKET_TOS: usize = 37;
    /// Byte offset of `cong_control[16]` (after the 38 converted words).
    pub const CONG_CONTROL: usize = 38 * 4;
}

/// How an OMNI test ends, from its `test_length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestLength {
    /// After this many seconds.
    Seconds(u32),
    /// When the client stops it (`-l 0`).
    UntilStopped,
    /// After this many bytes (stream tests) or transactions (request/response tests).
    Units(u32),
}

impl OmniRequest {
    /// Reads a DO_OMNI request's test data.
    pub fn decode(m: &Message) -> Result<OmniRequest, CodecError> {
        use request_at as at;
        let data_port = m.u32_at(at::DATA_PORT);
        Ok(OmniRequest {
            send_buf_size: m.i32_at(at::SEND_BUF_SIZE),
            send_size: m.i32_at(at::SEND_SIZE),
            request_size: m.i32_at(at::REQUEST_SIZE),
            recv_buf_size: m.i32_at(at::RECV_BUF_SIZE),
            receive_size: m.i32_at(at::RECEIVE_SIZE),
            response_size: m.i32_at(at::RESPONSE_SIZE),
            flags: m.u32_at(at::FLAGS),
            cpu_rate: m.f32_at(at::CPU_RATE),
            test_length: m.i32_at(at::TEST_LENGTH),
            data_port: u16::try_from(data_port).map_err(|_| CodecError::Port(data_port))?,
            family: Family::decode(m.u32_at(at::IPFAMILY))?,
            socket_type: m.i32_at(at::SOCKET_TYPE),
            protocol: m.i32_at(at::PROTOCOL),
            direction: m.u32_at(at::DIRECTION),
            netperf_port: m.u32_at(at::NETPERF_PORT),
            socket_prio: m.i32_at(at::SOCKET_PRIO),
            socket_tos: m.i32_at(at::SOCKET_TOS),
            cong_control: m.string_at(at::CONG_CONTROL, 16),
        })
    }

    /// The DO_OMNI message for this request (what a netperf client sends; fields netperf
    /// sends and the server does not read are left as netperf 2.7.1 leaves them by default).
    pub fn encode(&self) -> Message {
        use request_at as at;
        let mut m = Message::new(kind::DO_OMNI, -1);
        m.put_i32(at::SEND_BUF_SIZE, self.send_buf_size);
        m.put_i32(at::SEND_SIZE, self.send_size);
        m.put_u32(2, 8); // send alignment
        m.put_u32(4, if self.request_size > 0 { 1 } else { 2 }); // send width
        m.put_i32(at::REQUEST_SIZE, self.request_size);
        m.put_i32(at::RECV_BUF_SIZE, self.recv_buf_size);
        m.put_i32(at::RECEIVE_SIZE, self.receive_size);
        m.put_u32(8, 8); // receive alignment
        m.put_u32(10, u32::from(self.request_size > 0)); // receive width
        m.put_i32(at::RESPONSE_SIZE, self.response_size);
        m.put_u32(at::FLAGS, self.flags);
        m.put_f32(at::CPU_RATE, self.cpu_rate);
        m.put_i32(at::TEST_LENGTH, self.test_length);
        for dirty in 17..=19 {
            m.put_i32(dirty, -1);
        }
        m.put_u32(at::DATA_PORT, u32::from(self.data_port));
        m.put_u32(at::IPFAMILY, self.family.encode());
        m.put_i32(at::SOCKET_TYPE, self.socket_type);
        m.put_i32(at::PROTOCOL, self.protocol);
        m.put_u32(at::DIRECTION, self.direction);
        m.put_u32(at::NETPERF_PORT, self.netperf_port);
        m.put_i32(at::SOCKET_PRIO, self.socket_prio);
        m.put_i32(at::SOCKET_TOS, self.socket_tos);
        m.put_string(at::CONG_CONTROL, 16, &self.cong_control);
        m
    }

    /// Reads a classic DO_TCP_CC request (connections only, each opened and closed) as the
    /// OMNI request with the same meaning.
    pub fn decode_tcp_cc(m: &Message) -> Result<OmniRequest, CodecError> {
        let port = m.u32_at(14);
        let measure = if m.u32_at(9) != 0 {
            flags::MEASURE_CPU
        } else {
            0
        };
        let no_delay = if m.u32_at(8) != 0 { flags::NO_DELAY } else { 0 };
        Ok(OmniRequest {
            recv_buf_size: m.i32_at(0),
            send_buf_size: m.i32_at(1),
            request_size: m.i32_at(6),
            response_size: m.i32_at(7),
            send_size: -1,
            receive_size: -1,
            flags: flags::CONNECT_TEST | measure | no_delay,
            cpu_rate: m.f32_at(10),
            test_length: m.i32_at(11),
            data_port: u16::try_from(port).map_err(|_| CodecError::Port(port))?,
            family: Family::decode(m.u32_at(15))?,
            socket_type: socket_type::STREAM,
            protocol: socket_type::TCP,
            direction: 0,
            netperf_port: 0,
            socket_prio: -1,
            socket_tos: -1,
            cong_control: String::new(),
        })
    }

    /// The classic DO_TCP_CC message for a connect-only request (what netperf 2.7 sends for
    /// `-t TCP_CC`): sizes, no-delay and CPU wishes, length, data port and family, with
    /// netperf's default alignments.
    pub fn encode_tcp_cc(&self) -> Message {
        let mut m = Message::new(kind::DO_TCP_CC, -1);
        m.put_i32(0, self.recv_buf_size);
        m.put_i32(1, self.send_buf_size);
        m.put_u32(2, 8); // receive alignment
        m.put_u32(4, 8); // send alignment
        m.put_i32(6, self.request_size);
        m.put_i32(7, self.response_size);
        m.put_u32(8, u32::from(self.flags & flags::NO_DELAY != 0));
        m.put_u32(9, u32::from(self.measures_cpu()));
        m.put_f32(10, self.cpu_rate);
        m.put_i32(11, self.test_length);
        m.put_u32(14, u32::from(self.data_port));
        m.put_u32(15, self.family.encode());
        m
    }

    /// How the test ends.
    pub fn length(&self) -> TestLength {
        match self.test_length {
            0 => TestLength::UntilStopped,
            s if s > 0 => TestLength::Seconds(s.unsigned_abs()),
            units => TestLength::Units(units.unsigned_abs()),
        }
    }

    /// Whether the server sends.
    pub fn server_sends(&self) -> bool {
        self.direction & direction::XMIT != 0
    }

    /// Whether the server receives.
    pub fn server_receives(&self) -> bool {
        self.direction & direction::RECV != 0
    }

    /// A request/response test (both directions), or a connect-only one (neither).
    pub fn is_transactional(&self) -> bool {
        self.server_sends() == self.server_receives()
    }

    /// Whether each transaction has its own connection (TCP_CRR, TCP_CC).
    pub fn is_connect_test(&self) -> bool {
        self.flags & flags::CONNECT_TEST != 0
    }

    /// Whether the client wants the server's CPU measured.
    pub fn measures_cpu(&self) -> bool {
        self.flags & flags::MEASURE_CPU != 0
    }
}

/// The server's answer to DO_OMNI: the sizes it took and the port to connect to.
#[derive(Debug, Clone, PartialEq)]
pub struct OmniResponse {
    /// SO_RCVBUF of the data socket.
    pub recv_buf_size: i32,
    /// Bytes per receive.
    pub receive_size: i32,
    /// Receive buffers in the ring.
    pub recv_width: i32,
    /// SO_SNDBUF of the data socket.
    pub send_buf_size: i32,
    /// Bytes per send.
    pub send_size: i32,
    /// Send buffers in the ring.
    pub send_width: i32,
    /// [`flags`] the server honours (MEASURE_CPU, NO_DELAY).
    pub flags: u32,
    /// The server's CPU rate (0: not measured).
    pub cpu_rate: f32,
    /// The data port to connect (or send) to.
    pub data_port: u16,
    /// SO_PRIORITY set (-1: none).
    pub socket_prio: i32,
    /// TOS set (-1: none).
    pub socket_tos: i32,
}

impl OmniResponse {
    /// The OMNI_RESPONSE message.
    pub fn encode(&self) -> Message {
        let mut m = Message::new(kind::OMNI_RESPONSE, 0);
        m.put_i32(0, self.recv_buf_size);
        m.put_i32(1, self.receive_size);
        m.put_i32(2, self.recv_width);
        m.put_i32(3, self.send_buf_size);
        m.put_i32(4, self.send_size);
        m.put_i32(5, self.send_width);
        m.put_u32(6, self.flags);
        m.put_f32(7, self.cpu_rate);
        m.put_u32(11, u32::from(self.data_port));
        m.put_i32(16, self.socket_prio);
        m.put_i32(17, self.socket_tos);
        m
    }

    /// The same answer in the classic TCP_CC layout.
    pub fn encode_tcp_cc(&self) -> Message {
        let mut m = Message::new(kind::TCP_CC_RESPONSE, 0);
        m.put_i32(0, self.recv_buf_size);
        m.put_u32(1, u32::from(self.flags & flags::NO_DELAY != 0));
        m.put_u32(2, u32::from(self.flags & flags::MEASURE_CPU != 0));
        m.put_i32(4, self.send_buf_size);
        m.put_u32(5, u32::from(self.data_port));
        m.put_f32(6, self.cpu_rate);
        m
    }

    /// Reads an OMNI_RESPONSE (a client's side; `None` for a port beyond 65535).
    pub fn decode(m: &Message) -> Option<OmniResponse> {
        Some(OmniResponse {
            recv_buf_size: m.i32_at(0),
            receive_size: m.i32_at(1),
            recv_width: m.i32_at(2),
            send_buf_size: m.i32_at(3),
            send_size: m.i32_at(4),
            send_width: m.i32_at(5),
            flags: m.u32_at(6),
            cpu_rate: m.f32_at(7),
            data_port: u16::try_from(m.u32_at(11)).ok()?,
            socket_prio: m.i32_at(16),
            socket_tos: m.i32_at(17),
        })
    }

    /// Reads a classic TCP_CC_RESPONSE as the OMNI answer with the same meaning (`None` for a
    /// port beyond 65535); its sizes are the socket buffers, it has no send or receive size.
    pub fn decode_tcp_cc(m: &Message) -> Option<OmniResponse> {
        let no_delay = if m.u32_at(1) != 0 { flags::NO_DELAY } else { 0 };
        let measure = if m.u32_at(2) != 0 {
            flags::MEASURE_CPU
        } else {
            0
        };
        Some(OmniResponse {
            recv_buf_size: m.i32_at(0),
            receive_size: -1,
            recv_width: 0,
            send_buf_size: m.i32_at(4),
            send_size: -1,
            send_width: 0,
            flags: flags::CONNECT_TEST | no_delay | measure,
            cpu_rate: m.f32_at(6),
            data_port: u16::try_from(m.u32_at(5)).ok()?,
            socket_prio: -1,
            socket_tos: -1,
        })
    }
}

/// The server's CPU over the data phase, in percent of all its CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerCpu {
    /// Busy (user + system), 0–100.
    pub util: f32,
    /// User mode.
    pub user: f32,
    /// Kernel mode, interrupts included.
    pub system: f32,
    /// How it was measured ([`cpu_method`]).
    pub method: u32,
}

/// The server's figures after the data phase.
#[derive(Debug, Clone, PartialEq)]
pub struct OmniResults {
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Receive calls.
    pub recv_calls: u32,
    /// SO_RCVBUF at the end.
    pub recv_buf_size: i32,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Send calls.
    pub send_calls: u32,
    /// SO_SNDBUF at the end.
    pub send_buf_size: i32,
    /// Sends that failed for want of buffers (UDP).
    pub failed_sends: u32,
    /// Transactions (request/response and connect tests).
    pub transactions: u32,
    /// Length of the data phase in seconds.
    pub elapsed_s: f32,
    /// CPU figures, if measured.
    pub cpu: Option<ServerCpu>,
    /// Logical CPUs of the server.
    pub num_cpus: u32,
    /// TCP retransmissions of the data connection.
    pub retransmits: u32,
    /// TCP congestion control of the data connection ("" if none).
    pub cong_control: String,
}

/// Byte offset of the results' `cong_control[16]`: after the 27 converted words and the
/// ifname, driver, version, firmware, bus and ifslot strings (16 + 4 × 32 + 16 bytes).
const RESULTS_CONG_AT: usize = 27 * 4 + 16 + 4 * 32 + 16;

impl OmniResults {
    /// The OMNI_RESULTS message.
    pub fn encode(&self) -> Message {
        let mut m = Message::new(kind::OMNI_RESULTS, 0);
        let (hi, lo) = halves(self.bytes_received);
        m.put_u32(0, hi);
        m.put_u32(1, lo);
        m.put_u32(2, self.recv_calls);
        m.put_i32(3, self.recv_buf_size);
        let (hi, lo) = halves(self.bytes_sent);
        m.put_u32(4, hi);
        m.put_u32(5, lo);
        m.put_u32(6, self.send_calls);
        m.put_i32(7, self.send_buf_size);
        m.put_u32(8, self.failed_sends);
        m.put_u32(9, self.transactions);
        m.put_f32(10, self.elapsed_s);
        let cpu = self.cpu.unwrap_or(ServerCpu {
            util: 0.0,
            user: 0.0,
            system: 0.0,
            method: cpu_method::UNKNOWN,
        });
        m.put_f32(11, cpu.util);
        m.put_f32(12, cpu.user);
        m.put_f32(13, cpu.system);
        // iowait, irq and softirq (in `system` here) stay 0. Service demand is worked out by
        // the client; netserver leaves the word it shares with the response's TOS (-1) there.
        m.put_i32(17, -1);
        m.put_u32(18, cpu.method);
        m.put_u32(19, self.num_cpus);
        m.put_i32(20, -1); // peak CPU id: not measured
        m.put_u32(26, self.retransmits);
        m.put_string(RESULTS_CONG_AT, 16, &self.cong_control);
        m
    }

    /// The same figures in the classic TCP_CC layout.
    pub fn encode_tcp_cc(&self) -> Message {
        let mut m = Message::new(kind::TCP_CC_RESULTS, 0);
        m.put_u32(0, u32::try_from(self.bytes_received).unwrap_or(u32::MAX));
        m.put_u32(1, self.recv_calls);
        m.put_u32(2, self.transactions);
        m.put_f32(3, self.elapsed_s);
        m.put_f32(4, self.cpu.map_or(-1.0, |c| c.util));
        m.put_f32(5, -1.0);
        m.put_u32(6, self.cpu.map_or(cpu_method::UNKNOWN, |c| c.method));
        m.put_u32(7, self.num_cpus);
        m
    }

    /// Reads a classic TCP_CC_RESULTS message (a client's side). netserver 2.7 leaves stale
    /// memory in its service-demand and CPU-method words, so the utilisation alone says
    /// whether CPU was measured (netserver's -1 or a nonsense value: not measured).
    pub fn decode_tcp_cc(m: &Message) -> OmniResults {
        let util = m.f32_at(4);
        OmniResults {
            bytes_received: u64::from(m.u32_at(0)),
            recv_calls: m.u32_at(1),
            recv_buf_size: -1,
            bytes_sent: 0,
            send_calls: 0,
            send_buf_size: -1,
            failed_sends: 0,
            transactions: m.u32_at(2),
            elapsed_s: m.f32_at(3),
            cpu: (util.is_finite() && (0.0..=100.0).contains(&util)).then_some(ServerCpu {
                util,
                user: 0.0,
                system: util,
                method: cpu_method::UNKNOWN,
            }),
            num_cpus: m.u32_at(7),
            retransmits: 0,
            cong_control: String::new(),
        }
    }

    /// Reads an OMNI_RESULTS message (a client's side).
    pub fn decode(m: &Message) -> OmniResults {
        let method = m.u32_at(18);
        OmniResults {
            bytes_received: (u64::from(m.u32_at(0)) << 32) | u64::from(m.u32_at(1)),
            recv_calls: m.u32_at(2),
            recv_buf_size: m.i32_at(3),
            bytes_sent: (u64::from(m.u32_at(4)) << 32) | u64::from(m.u32_at(5)),
            send_calls: m.u32_at(6),
            send_buf_size: m.i32_at(7),
            failed_sends: m.u32_at(8),
            transactions: m.u32_at(9),
            elapsed_s: m.f32_at(10),
            cpu: (method != cpu_method::UNKNOWN).then(|| ServerCpu {
                util: m.f32_at(11),
                user: m.f32_at(12),
                system: m.f32_at(13),
                method,
            }),
            num_cpus: m.u32_at(19),
            retransmits: m.u32_at(26),
            cong_control: m.string_at(RESULTS_CONG_AT, 16),
        }
    }
}

/// A 64-bit count as netperf sends it: high word, low word.
fn halves(v: u64) -> (u32, u32) {
    let b = v.to_be_bytes();
    (
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    )
}

#[cfg(test)]
mod tests;
