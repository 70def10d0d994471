//! netperf's side of netperf 2.7's control protocol: `perfpeer netperf --netserver` runs one test
//! against a netserver (stock netperf's, or `perfpeer netserver`) on blocking sockets, as netperf
//! 2.7 runs it — one DO_OMNI request (DO_TCP_CC for TCP_CC), the data phase against the port the
//! answer names, then the server's results — and returns the test as perfpeer's report model,
//! so that the netperf tables and selectors print it as they print a perfpeer test, with the
//! socket sizes netperf's classic tables print beside it ([`Finished`]).
//!
//! Bounded against a netserver that misbehaves: every control answer has [`ANSWER_WAIT`] (the
//! results: the test's length plus that), the data phase ends at its own deadline whatever the
//! server does, and nothing the server says sizes an allocation.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use perfpeer_shared::format::netperf::NetperfTest;
use perfpeer_shared::report::{
    CpuUsage, HostInfo, PeerRole, SideReport, StreamFinal, StreamRole, TestResult, TestStatus,
    UdpRxFinal,
};
use perfpeer_shared::rr::{RrFinal, RttHistogram};
use perfpeer_shared::spec::{
    ConnectionTest, Direction, EndCondition, Protocol, RequestResponse, TestSpec,
};
use socket2::{Domain, SockRef, Socket, Type};

use super::codec::{
    Family, MESSAGE_LEN, Message, OmniRequest, OmniResponse, OmniResults, direction, flags, kind,
    socket_type,
};
use crate::engine::cpu::CpuSnapshot;
use crate::engine::patient::{self, Moved, Pause, Want};
use crate::engine::{POLL, is_retry, payload};
use crate::session::data_connect::{LocalEnd, new_socket};

/// How long the control and data connections have to open.
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(10);
/// How long a netserver has for each answer (after the data phase: for its results).
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(30);
/// A UDP_RR request unanswered this long is given up and the next one sent (netperf waits
/// forever; a lost datagram would stall the test).
const UDP_ANSWER_WAIT: Duration = Duration::from_millis(200);
/// How long the client waits for the server's close after its own, and how long a sending
/// server may run past the test's length before the client stops reading.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// How long a client stopped by the user (Ctrl-C) waits for the server's results.
const STOPPED_RESULTS_WAIT: Duration = Duration::from_secs(2);
/// The largest receive buffer the client allocates, whatever the sizes say.
const MAX_READ: usize = 1 << 20;

/// How long a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Length {
    /// Whole seconds (netserver takes no fractions).
    Seconds(u32),
    /// Bytes of a stream test, transactions of the others.
    Count(u32),
}

/// One test, as netperf's flags asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The test.
    pub test: NetperfTest,
    /// The netserver's control address.
    pub server: SocketAddr,
    /// How long it runs.
    pub length: Length,
    /// Bytes per send of a stream test (the sender's; netserver's choice in TCP_MAERTS when
    /// `None`), or the request's size.
    pub send_size: Option<u32>,
    /// Bytes per receive (the receiver's; its choice when `None`).
    pub recv_size: Option<u32>,
    /// The response's size (transactional tests).
    pub response_size: u32,
    /// This end's SO_SNDBUF and SO_RCVBUF (`-s`).
    pub local_buffers: (Option<u32>, Option<u32>),
    /// The netserver's SO_SNDBUF and SO_RCVBUF (`-S`).
    pub remote_buffers: (Option<u32>, Option<u32>),
    /// TCP_NODELAY at both ends.
    pub no_delay: bool,
    /// The local data port (`-- -P LPORT`).
    pub local_port: Option<u16>,
    /// The data port asked of the netserver (`-- -P ,RPORT`).
    pub remote_port: Option<u16>,
    /// Whether to measure this host's CPU (`-c`).
    pub local_cpu: bool,
    /// Whether to ask the netserver for its CPU (`-C`).
    pub remote_cpu: bool,
}

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The control connection did not open.
    #[error("cannot reach the netserver at {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The control connection failed or timed out.
    #[error("the control connection to the netserver failed: {0}")]
    Control(io::Error),
    /// The netserver refused the test with an errno.
    #[error("the netserver refused the test: {text} (errno {errno})")]
    Refused {
        /// Its errno.
        errno: i32,
        /// The errno's text on this system.
        text: String,
    },
    /// The netserver answered with something that is not the answer to this test.
    #[error("the netserver's answer cannot be used: {0}")]
    BadAnswer(String),
    /// The data connection did not open.
    #[error("the data connection to {addr} failed: {source}")]
    Data {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// A socket's SO_SNDBUF and SO_RCVBUF (`None` where it could not be read).
pub(crate) type Buffers = (Option<u32>, Option<u32>);

/// A finished test.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    /// The test in perfpeer's report model. Its socket sizes are each end's at the end of the
    /// test, which netperf's `*_SOCKET_SIZE_END` selectors print: Linux grows the buffers of a
    /// TCP socket whose sizes were not set while the connection runs (from 131072 bytes to
    /// megabytes).
    pub result: TestResult,
    /// This end's data socket's sizes as it was made (netperf's `lss_size`, `lsr_size`).
    pub local_initial: Buffers,
    /// The netserver's, as its answer to the request gave them (`rss_size`, `rsr_size`).
    pub remote_initial: Buffers,
}

impl Finished {
    /// The result as netperf's classic tables print it: with the sizes each end's data socket
    /// had when it was made (stock netperf 2.7's tables print those: 16384 and 131072 for a
    /// TCP socket on Linux's defaults), not the grown ones.
    pub(crate) fn for_classic_table(&self) -> TestResult {
        let mut result = self.result.clone();
        (result.local.sndbuf_actual, result.local.rcvbuf_actual) = self.local_initial;
        if let Some(remote) = result.remote.as_mut() {
            (remote.sndbuf_actual, remote.rcvbuf_actual) = self.remote_initial;
        }
        result
    }
}

/// What the data phase did at this end.
#[derive(Debug, Default)]
struct Counts {
    bytes_sent: u64,
    bytes_received: u64,
    datagrams_sent: u64,
    transactions: u64,
    elapsed: Duration,
    rtt: RttHistogram,
    /// The (first) data socket's sizes as it was made, before it connected.
    initial_buffers: Buffers,
    /// Its sizes when the data phase ended.
    buffers: Buffers,
    /// Why the data phase ended before its end, if it did.
    broke: Option<String>,
    stopped: bool,
}

impl Plan {
    fn protocol(&self) -> Protocol {
        self.test.protocol()
    }

    fn connection_test(&self) -> Option<ConnectionTest> {
        match self.test {
            NetperfTest::TcpCrr => Some(ConnectionTest::RequestResponse),
            NetperfTest::TcpCc => Some(ConnectionTest::ConnectOnly),
            _ => None,
        }
    }

    fn test_length(&self) -> i32 {
        match self.length {
            Length::Seconds(s) => i32::try_from(s).unwrap_or(i32::MAX),
            Length::Count(n) => -i32::try_from(n).unwrap_or(i32::MAX),
        }
    }

    /// The request netperf 2.7 sends for this test.
    fn request(&self) -> OmniRequest {
        let size = |v: Option<u32>| v.map_or(-1, |v| i32::try_from(v).unwrap_or(i32::MAX));
        let transactional = self.test.is_transactional();
        let (send_size, receive_size, dir) = match self.test {
            NetperfTest::TcpStream | NetperfTest::UdpStream => {
                (-1, size(self.recv_size), direction::RECV)
            }
            NetperfTest::TcpMaerts => (size(self.send_size), -1, direction::XMIT),
            NetperfTest::TcpCc => (-1, -1, 0),
            _ => (-1, -1, direction::RECV | direction::XMIT),
        };
        let mut flag_bits = 0;
        if self.no_delay {
            flag_bits |= flags::NO_DELAY;
        }
        if self.connection_test().is_some() {
            flag_bits |= flags::CONNECT_TEST;
        }
        if self.remote_cpu {
            flag_bits |= flags::MEASURE_CPU;
        }
        let udp = self.protocol() == Protocol::Udp;
        OmniRequest {
            send_buf_size: size(self.remote_buffers.0),
            send_size,
            request_size: if transactional {
                size(self.send_size.or(Some(1)))
            } else {
                -1
            },
            recv_buf_size: size(self.remote_buffers.1),
            receive_size,
            response_size: if transactional {
                size(Some(self.response_size))
            } else {
                -1
            },
            flags: flag_bits,
            cpu_rate: 0.0,
            test_length: self.test_length(),
            data_port: self.remote_port.unwrap_or(0),
            family: match self.server {
                SocketAddr::V4(_) => Family::V4,
                SocketAddr::V6(_) => Family::V6,
            },
            socket_type: if udp {
                socket_type::DGRAM
            } else {
                socket_type::STREAM
            },
            protocol: if udp {
                socket_type::UDP
            } else {
                socket_type::TCP
            },
            direction: dir,
            netperf_port: 0,
            socket_prio: -1,
            socket_tos: -1,
            cong_control: String::new(),
        }
    }

    /// The spec the report model and the netperf tables read this test as.
    fn spec(&self, send_len: u32) -> TestSpec {
        let mut spec = TestSpec::new(self.protocol());
        spec.bitrate = None;
        spec.no_delay = self.no_delay;
        spec.direction = if self.test == NetperfTest::TcpMaerts {
            Direction::Reverse
        } else {
            Direction::Normal
        };
        spec.len = send_len;
        if self.test.is_transactional() {
            spec.rr = Some(RequestResponse {
                response_len: self.response_size,
                probe_interval_us: None,
                connection_per_transaction: self.connection_test(),
                bursts: None,
            });
        }
        spec.end = match self.length {
            Length::Seconds(s) => EndCondition::Time {
                duration: Duration::from_secs(u64::from(s)),
            },
            Length::Count(n) if self.test.is_transactional() => EndCondition::Bytes {
                bytes: u64::from(n) * u64::from(send_len.max(1)),
            },
            Length::Count(n) => EndCondition::Bytes {
                bytes: u64::from(n),
            },
        };
        spec
    }
}

/// Runs the test. `on_ready` is called with the netserver's address once it has accepted the
/// test (netperf prints its banner then); `stop` ends the data phase early (Ctrl-C).
pub(crate) fn run(
    plan: &Plan,
    stop: &AtomicBool,
    on_ready: impl FnOnce(IpAddr),
) -> Result<Finished, ClientError> {
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut control = TcpStream::connect_timeout(&plan.server, CONNECT_WAIT).map_err(|source| {
        ClientError::Connect {
            addr: plan.server,
            source,
        }
    })?;
    control
        .set_read_timeout(Some(ANSWER_WAIT))
        .map_err(ClientError::Control)?;
    control
        .set_write_timeout(Some(ANSWER_WAIT))
        .map_err(ClientError::Control)?;
    let _ = control.set_nodelay(true);

    let connect_only = plan.test == NetperfTest::TcpCc;
    let request = plan.request();
    let message = if connect_only {
        request.encode_tcp_cc()
    } else {
        request.encode()
    };
    control
        .write_all(&message.encode())
        .map_err(ClientError::Control)?;
    let answer = read_message(&mut control)?;
    let (expected, response) = if connect_only {
        (kind::TCP_CC_RESPONSE, OmniResponse::decode_tcp_cc(&answer))
    } else {
        (kind::OMNI_RESPONSE, OmniResponse::decode(&answer))
    };
    if answer.kind != expected {
        return Err(ClientError::BadAnswer(format!(
            "message type {} where {expected} was due (a netserver of another version?)",
            answer.kind
        )));
    }
    let response = response
        .filter(|r| r.data_port != 0)
        .ok_or_else(|| ClientError::BadAnswer("no data port".into()))?;
    let data_addr = SocketAddr::new(plan.server.ip(), response.data_port);
    on_ready(plan.server.ip());

    let send_len = plan.data_send_len(&response);
    let cpu_start = plan.local_cpu.then(CpuSnapshot::take);
    let counts = match plan.test {
        NetperfTest::UdpStream | NetperfTest::UdpRr => udp(plan, data_addr, send_len, stop)?,
        NetperfTest::TcpCrr | NetperfTest::TcpCc => connections(plan, data_addr, stop)?,
        _ => tcp(plan, data_addr, send_len, &response, stop)?,
    };
    let local_cpu = cpu_start.map(|start| CpuSnapshot::take().usage_since(&start));

    // The results follow the data phase; a connection test's server ends on its own timer
    // (the test's length plus its pad), so it may take that long. Stopped by the user, the
    // client waits briefly and, without them, reports its own figures alone.
    let wait = if counts.stopped {
        STOPPED_RESULTS_WAIT
    } else {
        ANSWER_WAIT + plan.nominal_length()
    };
    control
        .set_read_timeout(Some(wait))
        .map_err(ClientError::Control)?;
    let results = match read_message(&mut control) {
        Ok(m) if connect_only => Some(OmniResults::decode_tcp_cc(&m)),
        Ok(m) => Some(OmniResults::decode(&m)),
        Err(_) if counts.stopped => None,
        Err(e) => return Err(e),
    };
    Ok(Finished {
        result: plan.result(
            &counts,
            results.as_ref(),
            &response,
            local_cpu,
            send_len,
            started_unix_ms,
        ),
        local_initial: counts.initial_buffers,
        remote_initial: (known(response.send_buf_size), known(response.recv_buf_size)),
    })
}

/// Reads one control message; an errno in it is the netserver's refusal.
fn read_message(control: &mut TcpStream) -> Result<Message, ClientError> {
    let mut bytes = [0u8; MESSAGE_LEN];
    control.read_exact(&mut bytes).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ClientError::Control(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the netserver closed the connection",
            ))
        } else {
            ClientError::Control(e)
        }
    })?;
    let m = Message::decode(&bytes).map_err(|e| ClientError::BadAnswer(e.to_string()))?;
    if m.word2 != 0 {
        return Err(ClientError::Refused {
            errno: m.word2,
            text: io::Error::from_raw_os_error(m.word2).to_string(),
        });
    }
    Ok(m)
}

impl Plan {
    /// The bytes or transactions that end the test, if a count does.
    fn units(&self) -> Option<u64> {
        match self.length {
            Length::Count(n) => Some(u64::from(n)),
            Length::Seconds(_) => None,
        }
    }

    /// How long the test is meant to run (a count: no length of its own).
    fn nominal_length(&self) -> Duration {
        match self.length {
            Length::Seconds(s) => Duration::from_secs(u64::from(s)),
            Length::Count(_) => Duration::ZERO,
        }
    }

    /// Bytes per send at this end: the stream's send size (default: the send buffer, as
    /// netperf), or the request's size; netserver's send size in TCP_MAERTS.
    fn data_send_len(&self, response: &OmniResponse) -> u32 {
        match self.test {
            NetperfTest::TcpMaerts => u32::try_from(response.send_size)
                .ok()
                .filter(|&n| n > 0)
                .or(self.send_size)
                .unwrap_or(0),
            t if t.is_transactional() => self.send_size.unwrap_or(1),
            _ => self.send_size.unwrap_or_else(|| {
                default_send_size(self.protocol(), self.local_buffers.0, self.server)
            }),
        }
    }

    /// The socket for the data, with `-s` and `-- -P LPORT` applied.
    fn data_socket(&self, ty: Type) -> io::Result<Socket> {
        let bind = LocalEnd {
            first_port: self.local_port,
            ..LocalEnd::default()
        };
        let socket = new_socket(self.server, ty, &bind)?;
        if let Some(n) = self.local_buffers.0 {
            socket.set_send_buffer_size(n as usize)?;
        }
        if let Some(n) = self.local_buffers.1 {
            socket.set_recv_buffer_size(n as usize)?;
        }
        Ok(socket)
    }

    /// A data connection, and its socket's sizes before it connected (Linux sets a TCP
    /// socket's send buffer anew once the connection is up).
    fn connect_tcp(&self, addr: SocketAddr) -> io::Result<(TcpStream, Buffers)> {
        let socket = self.data_socket(Type::STREAM)?;
        socket.set_tcp_nodelay(self.no_delay)?;
        let initial = crate::engine::sockopt::buffer_sizes(SockRef::from(&socket));
        socket.connect_timeout(&addr.into(), CONNECT_WAIT)?;
        let stream = TcpStream::from(socket);
        stream.set_read_timeout(Some(POLL))?;
        stream.set_write_timeout(Some(POLL))?;
        Ok((stream, initial))
    }
}

/// netperf's default send size: the send buffer of a fresh socket (Linux reports twice what
/// was asked), at most a datagram for UDP; 4096 if it cannot be read.
pub(crate) fn default_send_size(protocol: Protocol, window: Option<u32>, like: SocketAddr) -> u32 {
    let ty = match protocol {
        Protocol::Tcp => Type::STREAM,
        Protocol::Udp | Protocol::Dccp => Type::DGRAM,
    };
    let probed = Socket::new(Domain::for_address(like), ty, None).and_then(|s| {
        if let Some(w) = window {
            s.set_send_buffer_size(w as usize)?;
        }
        s.send_buffer_size()
    });
    let max = perfpeer_shared::spec::MAX_UDP_LEN;
    match (probed, protocol) {
        (Ok(n), Protocol::Udp) if n > 0 => u32::try_from(n).map_or(max, |n| n.min(max)),
        (Ok(n), Protocol::Tcp) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX),
        _ => 4096,
    }
}

/// The data phase's clock and stop flag.
struct Clock<'a> {
    start: Instant,
    deadline: Option<Instant>,
    stop: &'a AtomicBool,
}

impl Clock<'_> {
    fn new<'a>(plan: &Plan, stop: &'a AtomicBool) -> Clock<'a> {
        let start = Instant::now();
        Clock {
            start,
            deadline: match plan.length {
                Length::Seconds(s) => Some(start + Duration::from_secs(u64::from(s))),
                Length::Count(_) => None,
            },
            stop,
        }
    }

    /// Whether the test's time is up or the user stopped it.
    fn over(&self) -> bool {
        self.stopped() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether a receiving end should give up on a server that goes on sending.
    fn overrun(&self) -> bool {
        self.stopped()
            || self
                .deadline
                .is_some_and(|d| Instant::now() >= d + CLOSE_WAIT)
    }
}

/// Why a data loop stopped early.
enum Stop {
    Clock,
    Failed(String),
}

/// Writes all of `buf`, adding what went out to `sent_total` as it goes (a write cut short by
/// the clock still counts what it moved).
fn write_all(
    stream: &mut TcpStream,
    buf: &[u8],
    clock: &Clock<'_>,
    sent_total: &mut u64,
) -> Result<(), Stop> {
    let moved = patient::write_all(
        stream,
        buf,
        |n| *sent_total += n as u64,
        |pause| pause == Pause::TimedOut && clock.over(),
    )
    .map_err(|e| Stop::Failed(format!("sending: {e}")))?;
    match moved {
        Moved::All => Ok(()),
        Moved::Closed(_) | Moved::GaveUp(_) => Err(Stop::Clock),
    }
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` at the server's close.
fn read_exact(stream: &mut TcpStream, buf: &mut [u8], clock: &Clock<'_>) -> Result<bool, Stop> {
    let moved = patient::read(
        stream,
        buf,
        Want::All,
        |_| {},
        |pause| pause == Pause::TimedOut && clock.overrun(),
    )
    .map_err(|e| Stop::Failed(format!("receiving: {e}")))?;
    match moved {
        Moved::All => Ok(true),
        Moved::Closed(_) => Ok(false),
        Moved::GaveUp(_) => Err(Stop::Clock),
    }
}

/// Waits for the server to close a connection of a connection test.
fn await_close(stream: &mut TcpStream, clock: &Clock<'_>) -> Result<(), Stop> {
    let mut sink = [0u8; 64];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if is_retry(&e) => {
                if clock.overrun() {
                    return Err(Stop::Clock);
                }
            }
            Err(e) => return Err(Stop::Failed(format!("waiting for the close: {e}"))),
        }
    }
}

/// After the data: our FIN, then the server's close (bounded).
fn close_gracefully(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + CLOSE_WAIT;
    let mut sink = [0u8; 4096];
    while Instant::now() < until {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_retry(&e) => {}
            Err(_) => break,
        }
    }
}

fn note(counts: &mut Counts, stop: Result<(), Stop>, clock: &Clock<'_>) {
    match stop {
        Ok(()) | Err(Stop::Clock) => {}
        Err(Stop::Failed(why)) => counts.broke = Some(why),
    }
    counts.stopped = clock.stopped();
}

/// TCP_STREAM, TCP_MAERTS and TCP_RR: one data connection.
fn tcp(
    plan: &Plan,
    addr: SocketAddr,
    send_len: u32,
    response: &OmniResponse,
    stop: &AtomicBool,
) -> Result<Counts, ClientError> {
    let (mut stream, initial_buffers) = plan
        .connect_tcp(addr)
        .map_err(|source| ClientError::Data { addr, source })?;
    let mut counts = Counts {
        initial_buffers,
        ..Counts::default()
    };
    let clock = Clock::new(plan, stop);
    let units = plan.units();
    let outcome = match plan.test {
        NetperfTest::TcpStream => {
            let buf = payload(send_len.max(1) as usize);
            loop {
                let len = match units {
                    Some(u) => {
                        let left = u.saturating_sub(counts.bytes_sent);
                        if left == 0 {
                            break Ok(());
                        }
                        buf.len().min(usize::try_from(left).unwrap_or(usize::MAX))
                    }
                    None => buf.len(),
                };
                if let Err(stop) =
                    write_all(&mut stream, &buf[..len], &clock, &mut counts.bytes_sent)
                {
                    break Err(stop);
                }
                if clock.over() {
                    break Ok(());
                }
            }
        }
        NetperfTest::TcpMaerts => {
            let len = plan
                .recv_size
                .or_else(|| u32::try_from(response.recv_buf_size).ok())
                .map_or(128 * 1024, |n| n as usize)
                .clamp(1, MAX_READ);
            let mut buf = vec![0u8; len];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(n) => counts.bytes_received += n as u64,
                    Err(e) if is_retry(&e) => {
                        if clock.overrun() {
                            break Err(Stop::Clock);
                        }
                    }
                    Err(e) => break Err(Stop::Failed(format!("receiving: {e}"))),
                }
                if clock.stopped() {
                    break Ok(());
                }
            }
        }
        _ => {
            let request = payload(send_len.max(1) as usize);
            let mut answer = vec![0u8; (plan.response_size.max(1) as usize).min(MAX_READ)];
            loop {
                if clock.over() || units.is_some_and(|u| counts.transactions >= u) {
                    break Ok(());
                }
                let sent_at = Instant::now();
                if let Err(stop) = write_all(&mut stream, &request, &clock, &mut counts.bytes_sent)
                {
                    break Err(stop);
                }
                match read_exact(&mut stream, &mut answer, &clock) {
                    Ok(true) => counts.bytes_received += answer.len() as u64,
                    Ok(false) => break Err(Stop::Failed("the netserver closed early".into())),
                    Err(stop) => break Err(stop),
                }
                counts.rtt.record(nanos(sent_at.elapsed()));
                counts.transactions += 1;
            }
        }
    };
    counts.elapsed = clock.start.elapsed();
    counts.buffers = crate::engine::sockopt::buffer_sizes(SockRef::from(&stream));
    note(&mut counts, outcome, &clock);
    close_gracefully(&mut stream);
    Ok(counts)
}

/// TCP_CRR and TCP_CC: a connection per transaction, closed by this end.
fn connections(plan: &Plan, addr: SocketAddr, stop: &AtomicBool) -> Result<Counts, ClientError> {
    let exchange = plan.test == NetperfTest::TcpCrr;
    let request = payload(plan.send_size.unwrap_or(1).max(1) as usize);
    let mut answer = vec![0u8; (plan.response_size.max(1) as usize).min(MAX_READ)];
    let mut counts = Counts::default();
    let clock = Clock::new(plan, stop);
    let units = plan.units();
    let outcome = loop {
        if clock.over() || units.is_some_and(|u| counts.transactions >= u) {
            break Ok(());
        }
        let began = Instant::now();
        let mut stream = match plan.connect_tcp(addr) {
            Ok((s, initial)) => {
                if counts.transactions == 0 {
                    counts.initial_buffers = initial;
                }
                s
            }
            // The first connection must open; later ones may meet a full backlog.
            Err(source) if counts.transactions == 0 => {
                return Err(ClientError::Data { addr, source });
            }
            Err(e) => break Err(Stop::Failed(format!("connecting: {e}"))),
        };
        if exchange {
            if let Err(stop) = write_all(&mut stream, &request, &clock, &mut counts.bytes_sent) {
                break Err(stop);
            }
            match read_exact(&mut stream, &mut answer, &clock) {
                Ok(true) => counts.bytes_received += answer.len() as u64,
                Ok(false) => break Err(Stop::Failed("the netserver closed early".into())),
                Err(stop) => break Err(stop),
            }
        }
        if counts.transactions == 0 {
            counts.buffers = crate::engine::sockopt::buffer_sizes(SockRef::from(&stream));
        }
        // As netperf: the server closes first (after its answer, or at once in TCP_CC) and
        // the client waits for that close, so it never outruns the server's accepts.
        if exchange {
            let _ = stream.shutdown(Shutdown::Write);
        }
        if let Err(stop) = await_close(&mut stream, &clock) {
            break Err(stop);
        }
        drop(stream);
        counts.rtt.record(nanos(began.elapsed()));
        counts.transactions += 1;
    };
    counts.elapsed = clock.start.elapsed();
    note(&mut counts, outcome, &clock);
    Ok(counts)
}

/// UDP_STREAM and UDP_RR: datagrams to the data port; three empty ones end the test.
fn udp(
    plan: &Plan,
    addr: SocketAddr,
    send_len: u32,
    stop: &AtomicBool,
) -> Result<Counts, ClientError> {
    let data_err = |source| ClientError::Data { addr, source };
    let socket = plan.data_socket(Type::DGRAM).map_err(data_err)?;
    let initial_buffers = crate::engine::sockopt::buffer_sizes(SockRef::from(&socket));
    let socket = UdpSocket::from(socket);
    socket.connect(addr).map_err(data_err)?;
    let rr = plan.test == NetperfTest::UdpRr;
    socket
        .set_read_timeout(Some(if rr { UDP_ANSWER_WAIT } else { POLL }))
        .map_err(data_err)?;
    socket.set_write_timeout(Some(POLL)).map_err(data_err)?;
    let buf = payload(send_len.max(1) as usize);
    let mut answer = vec![0u8; 65_536];
    let mut counts = Counts {
        initial_buffers,
        ..Counts::default()
    };
    let clock = Clock::new(plan, stop);
    let units = plan.units();
    let outcome = loop {
        if clock.over() {
            break Ok(());
        }
        let done = if rr {
            counts.transactions
        } else {
            counts.bytes_sent
        };
        if units.is_some_and(|u| done >= u) {
            break Ok(());
        }
        let sent_at = Instant::now();
        match socket.send(&buf) {
            Ok(n) => {
                counts.bytes_sent += n as u64;
                counts.datagrams_sent += 1;
            }
            Err(e) if is_retry(&e) || crate::sys::is_no_buffer_space(&e) => continue,
            Err(e) => break Err(Stop::Failed(format!("sending: {e}"))),
        }
        if !rr {
            continue;
        }
        match socket.recv(&mut answer) {
            Ok(n) => {
                counts.bytes_received += n as u64;
                counts.rtt.record(nanos(sent_at.elapsed()));
                counts.transactions += 1;
            }
            // Lost one way or the other: the next request goes out.
            Err(e) if is_retry(&e) => {}
            Err(e) => break Err(Stop::Failed(format!("receiving: {e}"))),
        }
    };
    counts.elapsed = clock.start.elapsed();
    counts.buffers = crate::engine::sockopt::buffer_sizes(SockRef::from(&socket));
    for _ in 0..3 {
        let _ = socket.send(&[]);
    }
    note(&mut counts, outcome, &clock);
    Ok(counts)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A figure the netserver sent: a size of -1 (or any negative) is "not known".
fn known(size: i32) -> Option<u32> {
    u32::try_from(size).ok()
}

/// The netserver's elapsed seconds, if they are a length of time at all.
fn server_elapsed(secs: f32) -> Duration {
    Duration::try_from_secs_f32(secs).unwrap_or_default()
}

impl Plan {
    /// The test as perfpeer's report model: this end's counts and the server's results.
    fn result(
        &self,
        counts: &Counts,
        results: Option<&OmniResults>,
        response: &OmniResponse,
        local_cpu: Option<CpuUsage>,
        send_len: u32,
        started_unix_ms: u64,
    ) -> TestResult {
        let maerts = self.test == NetperfTest::TcpMaerts;
        let transactional = self.test.is_transactional();
        let udp = self.protocol() == Protocol::Udp;

        let mut local = SideReport::empty(PeerRole::Client, crate::hostinfo::host_info());
        (local.sndbuf_actual, local.rcvbuf_actual) = counts.buffers;
        local.cpu = local_cpu.unwrap_or_default();
        local.streams.push(StreamFinal {
            id: 1,
            role: if maerts {
                StreamRole::Receiver
            } else {
                StreamRole::Sender
            },
            bytes: if maerts {
                counts.bytes_received
            } else {
                counts.bytes_sent
            },
            duration: counts.elapsed,
            packets: udp.then_some(counts.datagrams_sent),
            tcp: None,
            udp_rx: None,
            rr: transactional.then(|| RrFinal {
                transactions: counts.transactions,
                request_len: send_len,
                response_len: self.response_size,
                rtt: counts.rtt.summary(),
            }),
            writes: None,
            write_one_way: None,
            write_frames: None,
        });

        let remote = results.map(|results| {
            let elapsed = server_elapsed(results.elapsed_s);
            let mut remote = SideReport::empty(PeerRole::Server, HostInfo::default());
            remote.sndbuf_actual = known(results.send_buf_size).or(known(response.send_buf_size));
            remote.rcvbuf_actual = known(results.recv_buf_size).or(known(response.recv_buf_size));
            if let Some(cpu) = results.cpu.filter(|c| c.util.is_finite() && c.util >= 0.0) {
                remote.cpu = CpuUsage {
                    elapsed,
                    host_user_percent: f64::from(cpu.user.clamp(0.0, cpu.util)),
                    host_system_percent: f64::from(cpu.util - cpu.user.clamp(0.0, cpu.util)),
                    cpus: results.num_cpus.max(1),
                    ..CpuUsage::default()
                };
            }
            remote.streams.push(StreamFinal {
                id: 1,
                role: if maerts {
                    StreamRole::Sender
                } else {
                    StreamRole::Receiver
                },
                bytes: if maerts {
                    results.bytes_sent
                } else {
                    results.bytes_received
                },
                duration: elapsed,
                packets: None,
                tcp: None,
                udp_rx: (udp && !transactional).then(|| UdpRxFinal {
                    received: u64::from(results.recv_calls),
                    sender_packets: Some(counts.datagrams_sent),
                    lost: counts
                        .datagrams_sent
                        .saturating_sub(u64::from(results.recv_calls)),
                    out_of_order: 0,
                    duplicates: 0,
                    jitter_ms: 0.0,
                    max_gap_ms: None,
                    one_way: None,
                    frames: None,
                }),
                rr: None,
                writes: None,
                write_one_way: None,
                write_frames: None,
            });
            remote
        });

        let status = if counts.stopped {
            TestStatus::Cancelled
        } else if let Some(why) = &counts.broke {
            TestStatus::Partial {
                reason: why.clone(),
            }
        } else {
            TestStatus::Complete
        };
        TestResult {
            id: String::new(),
            spec: self.spec(send_len),
            started_unix_ms,
            server_addr: self.server.to_string(),
            local,
            remote,
            group_receivers: Vec::new(),
            working_load: None,
            status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(test: NetperfTest) -> Plan {
        Plan {
            test,
            server: "127.0.0.1:12865".parse().unwrap(),
            length: Length::Seconds(10),
            send_size: None,
            recv_size: None,
            response_size: 1,
            local_buffers: (None, None),
            remote_buffers: (None, None),
            no_delay: false,
            local_port: None,
            remote_port: None,
            local_cpu: false,
            remote_cpu: true,
        }
    }

    /// The requests read, on netserver's side, as the tests they are.
    #[test]
    fn requests_say_what_the_server_does() {
        let stream = plan(NetperfTest::TcpStream).request();
        assert!(stream.server_receives() && !stream.server_sends());
        assert!(stream.measures_cpu());
        let maerts = plan(NetperfTest::TcpMaerts).request();
        assert!(maerts.server_sends() && !maerts.server_receives());
        let crr = plan(NetperfTest::TcpCrr).request();
        assert!(crr.is_connect_test() && crr.server_sends() && crr.server_receives());
        assert_eq!((crr.request_size, crr.response_size), (1, 1));
        let udp = plan(NetperfTest::UdpRr).request();
        assert_eq!(
            (udp.socket_type, udp.protocol),
            (socket_type::DGRAM, socket_type::UDP)
        );
        let cc = plan(NetperfTest::TcpCc).request().encode_tcp_cc();
        let back = OmniRequest::decode_tcp_cc(&cc).unwrap();
        assert!(back.is_connect_test() && !back.server_sends() && !back.server_receives());
        let mut counted = plan(NetperfTest::TcpRr);
        counted.length = Length::Count(500);
        assert_eq!(
            counted.request().length(),
            super::super::codec::TestLength::Units(500)
        );
    }
}
