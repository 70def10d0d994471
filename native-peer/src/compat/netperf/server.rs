//! `perfpeer netserver`: the server side of netperf 2.7's control protocol, so a stock
//! `netperf` client (and flent, which drives one) can test against a perfpeer peer. Each control
//! connection sends 656-byte requests; a DO_OMNI request (every classic test of netperf 2.7)
//! gets a data socket of its own, the OMNI_RESPONSE naming its port, a data phase on one thread
//! ([`super::data`]), and the OMNI_RESULTS. Unlike netserver, which forks a process per
//! client, tests run side by side up to `--max-tests`; every request is bounded (its size, its
//! time, its memory), data is taken only from the control connection's address, and the server
//! never sends to an address that has not asked: a UDP test takes the first datagram from the
//! control connection's address and then that source (5-tuple) alone, UDP_RR answers it with no
//! more than 3 times the bytes it sent (nothing in netperf's UDP shows that the source
//! receives, so a UDP_RR whose response is over 3 times its request is refused), and a UDP test
//! in which the server alone would send is refused. A test holds one of `--max-tests` places
//! from its request to the end of its data phase; until the client moves data, its place may
//! go to a newcomer ([`crate::compat::slots`]). What a client can make it print
//! (refusals, tests served) is a few lines per 10 s and then a count.

use portable_atomic::AtomicU64;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc as std_mpsc};
use std::time::Duration;

use socket2::{Domain, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::codec::{
    Family, MAX_DATAGRAM, MESSAGE_LEN, Message, OmniRequest, OmniResponse, OmniResults, ServerCpu,
    TestLength, cpu_method, flags, kind, socket_type,
};
use super::data::{self, Counts, Endpoint, Mode, Plan};
use crate::admission::{Admission, Admitted, Caps, LogLimit, LogLine, accept_admitted};
use crate::budget::{Charge, MemoryBudget};
use crate::compat::slots::{self, Slots};
use crate::compat::{REFUSALS_SHOWN, SHOWN_PERIOD, TESTS_SHOWN};
use crate::engine::cpu::{CpuSnapshot, logical_cpus};
use crate::engine::sockopt;

/// How long a control connection may take to send each request (netserver waits 20 s for a
/// passphrase).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// Requests one control connection may send: a netperf client sends one or two.
const MAX_REQUESTS: usize = 32;
/// Control connections held at once, from all sources and from one (idle ones are shed).
const CONTROL_CAPS: Caps = Caps {
    total: 256,
    per_source: 32,
};
/// Largest buffer a test may ask for; a larger TCP read or write size is cut to it (a TCP
/// stream does not show its write sizes), a larger request or response is refused.
const MAX_BUFFER: usize = 1 << 20;
/// netserver's PAD_TIME: how long past the test's time a receiving server waits for the end.
const PAD: Duration = Duration::from_secs(4);
/// The CPU rate netserver's /proc/stat method reports (it needs no calibration).
const PROC_STAT_RATE: f32 = 100.0;

static DROPPED: LogLimit = LogLimit::new(
    "netperf control connections dropped",
    Duration::from_secs(10),
);
static FOREIGN: LogLimit = LogLimit::new(
    "netperf data connections from another address than their test's client, dropped",
    Duration::from_secs(10),
);

/// Linux errno values, which netperf prints with strerror: the answer's only words.
mod errno {
    pub(super) const ENOENT: i32 = 2;
    pub(super) const ENOMEM: i32 = 12;
    pub(super) const EACCES: i32 = 13;
    pub(super) const EBUSY: i32 = 16;
    pub(super) const EINVAL: i32 = 22;
    pub(super) const ERANGE: i32 = 34;
    pub(super) const EPROTONOSUPPORT: i32 = 93;
    pub(super) const EOPNOTSUPP: i32 = 95;
    pub(super) const EAFNOSUPPORT: i32 = 97;
    /// What netserver answers to a request type it does not know.
    pub(super) const UNKNOWN_TEST: i32 = 998;
}

/// Limits of the server.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    /// Tests at once (one client address may hold half of them, rounded up).
    pub max_tests: u32,
    /// Longest test accepted; also the end of a test by count or of `-l 0`.
    pub max_duration: Duration,
    /// Bytes of buffers the tests may hold at once.
    pub max_memory: u64,
    /// The passphrase a client must send first (`-Z`), if any.
    pub passphrase: Option<String>,
}

/// What the server reports to its printer.
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// A test ended.
    Finished {
        /// The test's number at this server (1, 2, …).
        test: u64,
        /// The client's control address.
        client: SocketAddr,
        /// The classic test it was (TCP_STREAM, …).
        name: &'static str,
        /// What the data phase did.
        counts: Box<Counts>,
    },
    /// A request was refused, or a control connection closed for a reason worth saying.
    Refused {
        /// The client's control address.
        client: SocketAddr,
        /// Why.
        reason: String,
    },
    /// Events of a kind that were not shown in the period before this one.
    Unshown {
        /// What they were.
        what: &'static str,
        /// How many.
        count: u64,
        /// The period, seconds.
        secs: u64,
    },
}

struct Shared {
    config: ServerConfig,
    /// Tests' places, from the request to the end of the data phase: shed for a newcomer only
    /// before the client moved any data, never after.
    tests: Arc<Slots>,
    /// Finished tests shown to the printer.
    tests_shown: LogLimit,
    /// Refusals shown to the printer.
    refusals_shown: LogLimit,
    memory: Arc<MemoryBudget>,
    next_test: AtomicU64,
    events: mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
}

/// Serves netperf clients on `listener` (from [`listen`]) until `shutdown`.
pub(crate) async fn run(
    listener: std::net::TcpListener,
    config: ServerConfig,
    events: mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    let max_tests = usize::try_from(config.max_tests).unwrap_or(usize::MAX);
    let shared = Arc::new(Shared {
        tests: Slots::new(max_tests, max_tests.div_ceil(2)),
        memory: MemoryBudget::new(config.max_memory),
        tests_shown: LogLimit::with_burst("netperf tests served", SHOWN_PERIOD, TESTS_SHOWN),
        refusals_shown: LogLimit::with_burst(
            "netperf requests refused or connections closed",
            SHOWN_PERIOD,
            REFUSALS_SHOWN,
        ),
        config,
        next_test: AtomicU64::new(1),
        events,
        shutdown,
    });
    let tasks = TaskTracker::new();
    let places = Admission::new(CONTROL_CAPS);
    while let Some((conn, from, place)) =
        accept_admitted(&listener, &places, &DROPPED, &shared.shutdown).await
    {
        let shared = shared.clone();
        tasks.spawn(crate::util::boxed(async move {
            if let Err(reason) = control(conn, from, place, &shared).await {
                shared.refused(from, reason);
            }
        }));
    }
    crate::server::drain(&tasks).await;
    Ok(())
}

impl Shared {
    /// Sends `event` if `limit` lets its line be written now (after a count of those it did
    /// not).
    fn show(&self, limit: &LogLimit, event: ServerEvent) {
        if let LogLine::Write { suppressed } = limit.admit() {
            if suppressed > 0 {
                let _ = self.events.send(ServerEvent::Unshown {
                    what: limit.what(),
                    count: suppressed,
                    secs: limit.period_secs(),
                });
            }
            let _ = self.events.send(event);
        }
    }

    /// A refusal, as one rate-limited line.
    fn refused(&self, client: SocketAddr, reason: String) {
        self.show(
            &self.refusals_shown,
            ServerEvent::Refused { client, reason },
        );
    }
}

/// The control listener (bound before the process goes into the background, when it does).
pub(crate) fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    crate::server::tcp_listener(addr, 128)
}

/// Reads one whole message; `None` at the client's close before its first byte.
async fn read_message(conn: &mut TcpStream) -> io::Result<Option<Message>> {
    let mut buf = [0u8; MESSAGE_LEN];
    let mut got = 0;
    while got < MESSAGE_LEN {
        match conn.read(&mut buf[got..]).await? {
            0 if got == 0 => return Ok(None),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("a control message cut short at {got} of {MESSAGE_LEN} bytes"),
                ));
            }
            n => got += n,
        }
    }
    Message::decode(&buf)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

async fn write_message(conn: &mut TcpStream, m: &Message) -> Result<(), String> {
    tokio::time::timeout(REQUEST_TIMEOUT, conn.write_all(&m.encode()))
        .await
        .map_err(|_| "the client stopped reading the control connection".to_string())?
        .map_err(|e| format!("control connection: {e}"))
}

/// One control connection: its requests, in turn.
async fn control(
    mut conn: TcpStream,
    from: SocketAddr,
    place: Admitted,
    shared: &Shared,
) -> Result<(), String> {
    let mut place = Some(place);
    let mut authenticated = shared.config.passphrase.is_none();
    for _ in 0..MAX_REQUESTS {
        let evicted = async {
            match &place {
                Some(p) => p.evicted().cancelled().await,
                None => std::future::pending().await,
            }
        };
        let message = tokio::select! {
            m = tokio::time::timeout(REQUEST_TIMEOUT, read_message(&mut conn)) => m,
            () = evicted => return Ok(()),
            () = shared.shutdown.cancelled() => return Ok(()),
        };
        let message = match message {
            Ok(Ok(Some(m))) => m,
            Ok(Ok(None)) => return Ok(()),
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("no request in 20 s; closed".into()),
        };
        if !authenticated {
            if message.kind == kind::PASSPHRASE
                && Some(message.passphrase()) == shared.config.passphrase
            {
                authenticated = true;
                continue;
            }
            return Err("no or a wrong passphrase (-Z); closed".into());
        }
        let answer = match message.kind {
            kind::DO_OMNI | kind::DO_TCP_CC => {
                // A test holds a test place instead of an idle connection's.
                place = None;
                let layout = if message.kind == kind::DO_OMNI {
                    Layout::Omni
                } else {
                    Layout::TcpCc
                };
                omni_test(&mut conn, from, &message, layout, shared).await?;
                continue;
            }
            kind::CPU_CALIBRATE => Message::cpu_calibration(PROC_STAT_RATE, logical_cpus()),
            kind::DO_SYSINFO => Message::sysinfo(),
            kind::DEBUG_ON | kind::DEBUG_OFF => Message::new(kind::DEBUG_OK, 0),
            // netserver ignores a passphrase it did not ask for.
            kind::PASSPHRASE => continue,
            other => {
                shared.refused(
                    from,
                    format!(
                        "request type {other} is not served (netperf 2.7's OMNI tests are; a classic-only netperf needs its --enable-omni build)"
                    ),
                );
                Message::error(other, errno::UNKNOWN_TEST)
            }
        };
        write_message(&mut conn, &answer).await?;
    }
    Err(format!(
        "more than {MAX_REQUESTS} requests on one control connection; closed"
    ))
}

/// A refused request: the errno netperf prints and the words this server logs.
#[derive(Debug)]
struct Refusal {
    errno: i32,
    reason: String,
}

fn refusal(errno: i32, reason: impl Into<String>) -> Refusal {
    Refusal {
        errno,
        reason: reason.into(),
    }
}

/// A test's socket, bound and sized, before its data phase.
enum Bound {
    Tcp(std::net::TcpListener),
    Udp(std::net::UdpSocket),
}

/// Everything a test needs before its OMNI_RESPONSE is sent.
struct Prepared {
    name: &'static str,
    plan: Plan,
    bound: Bound,
    response: OmniResponse,
    measure_cpu: bool,
    _memory: Charge,
}

/// netperf's name for the test a request describes.
fn classic_name(udp: bool, mode: Mode) -> &'static str {
    match (udp, mode) {
        (false, Mode::Receive) => "TCP_STREAM",
        (false, Mode::Send) => "TCP_MAERTS",
        (false, Mode::Transactions) => "TCP_RR",
        (false, Mode::ConnectionPerTransaction { exchange: true }) => "TCP_CRR",
        (false, Mode::ConnectionPerTransaction { exchange: false }) => "TCP_CC",
        (true, Mode::Receive) => "UDP_STREAM",
        (true, _) => "UDP_RR",
    }
}

/// Checks a request against this server's rules and limits and binds its data socket.
fn prepare(
    request: &OmniRequest,
    client: SocketAddr,
    shared: &Shared,
) -> Result<Prepared, Refusal> {
    let udp = match (request.socket_type, request.protocol) {
        (socket_type::STREAM, socket_type::TCP) => false,
        (socket_type::DGRAM, socket_type::UDP) => true,
        (t, p) => {
            return Err(refusal(
                errno::EPROTONOSUPPORT,
                format!("socket type {t}, protocol {p}: only TCP and UDP tests are served"),
            ));
        }
    };
    let mode = match (
        request.server_receives(),
        request.server_sends(),
        request.is_connect_test(),
    ) {
        (_, _, true) if udp => {
            return Err(refusal(errno::EOPNOTSUPP, "a connection test needs TCP"));
        }
        (true, true, true) => Mode::ConnectionPerTransaction { exchange: true },
        (false, false, true) => Mode::ConnectionPerTransaction { exchange: false },
        (true, true, false) => Mode::Transactions,
        (true, false, false) => Mode::Receive,
        (false, true, false) if !udp => Mode::Send,
        (false, true, false) => {
            return Err(refusal(
                errno::EOPNOTSUPP,
                "a UDP test in which the server sends alone is not served: it would send to an address it has not heard from",
            ));
        }
        _ => {
            return Err(refusal(
                errno::EINVAL,
                format!("direction {:#x} names no test", request.direction),
            ));
        }
    };
    let client_ip = client.ip().to_canonical();
    // The data connection comes from the control connection's address, so in its family.
    let wants_v6 = match request.family {
        Family::Unspecified => client_ip.is_ipv6(),
        Family::V4 => false,
        Family::V6 => true,
    };
    if wants_v6 != client_ip.is_ipv6() {
        return Err(refusal(
            errno::EAFNOSUPPORT,
            "the data connection must come from the control connection's address, in its family",
        ));
    }
    let limit = shared.config.max_duration;
    let (run_for, units) = match request.length() {
        TestLength::Seconds(s) if Duration::from_secs(u64::from(s)) > limit => {
            return Err(refusal(
                errno::ERANGE,
                format!(
                    "a test of {s} s is longer than this server allows ({} s, --max-duration)",
                    limit.as_secs()
                ),
            ));
        }
        TestLength::Seconds(s) => (Duration::from_secs(u64::from(s)), None),
        TestLength::UntilStopped => (limit, None),
        TestLength::Units(n) => (limit, Some(u64::from(n))),
    };
    if request.data_port != 0 && request.data_port < 1024 {
        return Err(refusal(
            errno::EACCES,
            format!(
                "data port {} is privileged; ask for 0 or 1024 and above",
                request.data_port
            ),
        ));
    }
    let exchange = matches!(
        mode,
        Mode::Transactions | Mode::ConnectionPerTransaction { exchange: true }
    );
    let max_message = if udp {
        MAX_DATAGRAM as usize
    } else {
        MAX_BUFFER
    };
    let message_len = |v: i32, what: &str| -> Result<usize, Refusal> {
        usize::try_from(v)
            .ok()
            .filter(|&n| (1..=max_message).contains(&n))
            .ok_or_else(|| {
                refusal(
                    errno::EINVAL,
                    format!("a {what} of {v} bytes: 1 to {max_message} are served"),
                )
            })
    };
    let (request_len, response_len) = if exchange {
        (
            message_len(request.request_size, "request")?,
            message_len(request.response_size, "response")?,
        )
    } else {
        (0, 0)
    };
    let most = data::UDP_AMPLIFICATION * request_len;
    if udp && exchange && response_len > most {
        return Err(refusal(
            errno::EINVAL,
            format!(
                "a UDP_RR response of {response_len} bytes to requests of {request_len}: at most {} times the request is sent back, since nothing in netperf's UDP shows that the client's port receives (-r {request_len},{most} at most)",
                data::UDP_AMPLIFICATION
            ),
        ));
    }
    if request.socket_tos > 255 {
        return Err(refusal(
            errno::EINVAL,
            format!("TOS {} is not a byte", request.socket_tos),
        ));
    }

    let domain = if wants_v6 { Domain::IPV6 } else { Domain::IPV4 };
    let bind_err = |e: io::Error| {
        refusal(
            e.raw_os_error().unwrap_or(errno::EINVAL),
            format!("data socket: {e}"),
        )
    };
    let socket = Socket::new(domain, if udp { Type::DGRAM } else { Type::STREAM }, None)
        .map_err(bind_err)?;
    if wants_v6 {
        socket.set_only_v6(false).map_err(bind_err)?;
    }
    if request.send_buf_size > 0 {
        socket
            .set_send_buffer_size(request.send_buf_size.unsigned_abs() as usize)
            .map_err(bind_err)?;
    }
    if request.recv_buf_size > 0 {
        socket
            .set_recv_buffer_size(request.recv_buf_size.unsigned_abs() as usize)
            .map_err(bind_err)?;
    }
    let tos = u32::try_from(request.socket_tos).ok();
    if let Some(tos) = tos {
        sockopt::set_tos(&socket, tos, wants_v6).map_err(bind_err)?;
    }
    // netperf's -y: as netserver, a priority the system refuses is reported as -2 and the
    // test runs without it; what is reported is what the kernel holds. Accepted connections
    // inherit it from the listener.
    let priority = match u32::try_from(request.socket_prio) {
        Ok(p) => crate::sys::set_priority(&socket, p)
            .map_or(-2, |held| i32::try_from(held).unwrap_or(-2)),
        Err(_) => -1,
    };
    if !udp && !request.cong_control.is_empty() {
        sockopt::set_congestion(&socket, &request.cong_control)
            .map_err(|e| refusal(errno::ENOENT, e.to_string()))?;
    }
    let ip = if wants_v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    if !udp {
        socket.set_reuse_address(true).map_err(bind_err)?;
    }
    socket
        .bind(&SocketAddr::new(ip, request.data_port).into())
        .map_err(bind_err)?;
    if !udp {
        socket.listen(16).map_err(bind_err)?;
    }
    let data_port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .map_or(0, |a| a.port());
    let (send_buf_size, recv_buf_size) = sockopt::buffer_sizes(socket2::SockRef::from(&socket));
    let default_len = |sized: Option<u32>, fallback: usize| {
        sized.map_or(fallback, |v| v as usize).clamp(1, MAX_BUFFER)
    };
    let asked = |v: i32| usize::try_from(v).ok().filter(|&n| n > 0);
    let recv_len = match mode {
        _ if exchange => request_len,
        Mode::Receive if udp => asked(request.receive_size)
            .map_or(MAX_DATAGRAM as usize, |n| n.min(MAX_DATAGRAM as usize)),
        Mode::Receive => asked(request.receive_size).map_or_else(
            || default_len(recv_buf_size, 128 * 1024),
            |n| n.min(MAX_BUFFER),
        ),
        _ => 0,
    };
    let send_len = match mode {
        _ if exchange => response_len,
        Mode::Send => asked(request.send_size).map_or_else(
            || default_len(send_buf_size, 16 * 1024),
            |n| n.min(MAX_BUFFER),
        ),
        _ => 0,
    };
    let measure_cpu = request.measures_cpu() && crate::sys::host_cpu_times().is_some();
    let receives = request.server_receives();
    let sends = request.server_sends();
    let response = OmniResponse {
        recv_buf_size: sized(recv_buf_size),
        receive_size: if receives {
            word(recv_len)
        } else {
            request.receive_size
        },
        recv_width: i32::from(receives),
        send_buf_size: sized(send_buf_size),
        send_size: if sends {
            word(send_len)
        } else {
            request.send_size
        },
        send_width: i32::from(sends),
        flags: (if measure_cpu { flags::MEASURE_CPU } else { 0 })
            | (request.flags & flags::NO_DELAY),
        cpu_rate: if measure_cpu { PROC_STAT_RATE } else { 0.0 },
        data_port,
        socket_prio: priority,
        socket_tos: tos.map_or(-1, u32::cast_signed),
    };
    let pad = if mode == Mode::Send {
        Duration::ZERO
    } else {
        PAD
    };
    let plan = Plan {
        mode,
        recv_len,
        send_len,
        units,
        deadline_after: run_for + pad,
        pad,
        client: client_ip,
        no_delay: request.flags & flags::NO_DELAY != 0,
    };
    let memory = shared
        .memory
        .charge(plan.memory_needed(udp))
        .map_err(|e| refusal(errno::ENOMEM, e.to_string()))?;
    Ok(Prepared {
        name: classic_name(udp, mode),
        plan,
        bound: if udp {
            Bound::Udp(socket.into())
        } else {
            Bound::Tcp(socket.into())
        },
        response,
        measure_cpu,
        _memory: memory,
    })
}

/// Answers a request with an error the client prints, and says why here.
async fn refuse(
    conn: &mut TcpStream,
    from: SocketAddr,
    answer_kind: i32,
    refusal: Refusal,
    shared: &Shared,
) -> Result<(), String> {
    shared.refused(from, refusal.reason);
    write_message(conn, &Message::error(answer_kind, refusal.errno)).await
}

/// The message layouts of a test: OMNI's, or the classic TCP_CC test's (netperf 2.7 runs
/// every other classic test as OMNI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Omni,
    TcpCc,
}

/// One test: checks, response, data phase, results.
async fn omni_test(
    conn: &mut TcpStream,
    from: SocketAddr,
    message: &Message,
    layout: Layout,
    shared: &Shared,
) -> Result<(), String> {
    let (decoded, answer_kind) = match layout {
        Layout::Omni => (OmniRequest::decode(message), kind::OMNI_RESPONSE),
        Layout::TcpCc => (OmniRequest::decode_tcp_cc(message), kind::TCP_CC_RESPONSE),
    };
    let request = match decoded {
        Ok(r) => r,
        Err(e) => {
            let why = refusal(errno::EINVAL, e.to_string());
            return refuse(conn, from, answer_kind, why, shared).await;
        }
    };
    let slot = match shared.tests.admit(from.ip()) {
        Ok((slot, _)) => slot,
        Err(busy) => {
            let why = refusal(
                errno::EBUSY,
                format!(
                    "busy: {busy} (this server runs {} tests at once, half of them for one address)",
                    shared.config.max_tests
                ),
            );
            return refuse(conn, from, answer_kind, why, shared).await;
        }
    };
    let prepared = match prepare(&request, from, shared) {
        Ok(p) => p,
        Err(why) => return refuse(conn, from, answer_kind, why, shared).await,
    };
    let Prepared {
        name,
        plan,
        bound,
        response,
        measure_cpu,
        _memory: memory,
    } = prepared;
    let test = shared.next_test.fetch_add(1, Ordering::Relaxed);
    let (connections_tx, connections_rx) = std_mpsc::sync_channel(4);
    let (listener, endpoint) = match bound {
        Bound::Tcp(l) => {
            let listener = l
                .set_nonblocking(true)
                .and_then(|()| TcpListener::from_std(l))
                .map_err(|e| e.to_string())?;
            (Some(listener), Endpoint::Tcp(connections_rx))
        }
        Bound::Udp(s) => (None, Endpoint::Udp(s)),
    };
    let connect_test = matches!(plan.mode, Mode::ConnectionPerTransaction { .. });
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_start = measure_cpu.then(CpuSnapshot::take);
    let (done_tx, mut done) = oneshot::channel();
    let begun = Arc::new(Notify::new());
    {
        let (stop, begun) = (stop.clone(), begun.clone());
        let plan = plan.clone();
        std::thread::Builder::new()
            .name(format!("pp-netserver-{test}"))
            .spawn(move || {
                let on_begun = || begun.notify_one();
                let _ = done_tx.send(data::run(&plan, endpoint, &stop, &on_begun));
            })
            .map_err(|e| format!("cannot start the test's thread: {e}"))?;
    }
    let response_message = match layout {
        Layout::Omni => response.encode(),
        Layout::TcpCc => response.encode_tcp_cc(),
    };
    if let Err(e) = write_message(conn, &response_message).await {
        stop.store(true, Ordering::Relaxed);
        let _ = done.await;
        return Err(e);
    }
    let mut listener = listener;
    let mut control_open = true;
    let mut foreign = 0u64;
    let mut probe = [0u8; 1];
    // Until the client moves data its test is idle, and its place may go to a newcomer.
    let mut running = false;
    let mut shed = false;
    let counts = loop {
        tokio::select! {
            counts = &mut done => break counts.map_err(|_| "the test's thread ended without its figures".to_string())?,
            () = begun.notified(), if !running && !shed => {
                running = slot.run();
            }
            () = slot.shed().cancelled(), if !running && !shed => {
                shed = true;
                stop.store(true, Ordering::Relaxed);
            }
            accepted = async { listener.as_ref().expect("guarded").accept().await }, if listener.is_some() => match accepted {
                Ok((stream, peer)) if data::is_client(peer, plan.client) => {
                    if let Ok(stream) = stream.into_std()
                        && stream.set_nonblocking(false).is_ok()
                    {
                        // Full only if the client opens connections it does not use: dropped.
                        let _ = connections_tx.try_send(stream);
                    }
                    if !connect_test {
                        listener = None;
                    }
                }
                Ok((_, peer)) => {
                    foreign += 1;
                    FOREIGN.warn(peer, "not the test's client");
                }
                Err(e) => {
                    FOREIGN.warn("accept", e);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            // netperf sends nothing while its test runs: a close (or anything) ends the test.
            r = conn.read(&mut probe), if control_open => {
                control_open = false;
                stop.store(true, Ordering::Relaxed);
                if let Ok(n) = r && n > 0 {
                    shared.refused(from, "the client spoke during its test; the test was stopped".into());
                }
            }
            () = shared.shutdown.cancelled(), if !stop.load(Ordering::Relaxed) => {
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    drop(connections_tx);
    let mut counts = counts;
    counts.foreign_dropped += foreign;
    let cpu = cpu_start.map(|start| CpuSnapshot::take().usage_since(&start));
    let results = OmniResults {
        bytes_received: counts.bytes_received,
        recv_calls: saturate(counts.recv_calls),
        recv_buf_size: counts
            .buffers
            .1
            .map_or(response.recv_buf_size, |v| sized(Some(v))),
        bytes_sent: counts.bytes_sent,
        send_calls: saturate(counts.send_calls),
        send_buf_size: counts
            .buffers
            .0
            .map_or(response.send_buf_size, |v| sized(Some(v))),
        failed_sends: saturate(counts.failed_sends),
        transactions: saturate(counts.transactions),
        elapsed_s: counts.elapsed.as_secs_f32(),
        cpu: cpu.as_ref().map(|u| ServerCpu {
            util: single(u.host_user_percent + u.host_system_percent),
            user: single(u.host_user_percent),
            system: single(u.host_system_percent),
            method: cpu_method::PROC_STAT,
        }),
        num_cpus: cpu.as_ref().map_or_else(logical_cpus, |u| u.cpus),
        retransmits: counts.retransmits,
        cong_control: counts.congestion.clone().unwrap_or_default(),
    };
    // A data phase that failed is answered with its errno, as netserver answers it.
    if shed {
        counts.error = Some((
            errno::EBUSY,
            format!(
                "busy: its place went to a newcomer after it sat {} s or more without data",
                slots::SHED_AFTER.as_secs()
            ),
        ));
    }
    let results_message = match (&counts.error, layout) {
        (Some((errno, _)), Layout::Omni) => Message::error(kind::OMNI_RESULTS, *errno),
        (Some((errno, _)), Layout::TcpCc) => Message::error(kind::TCP_CC_RESULTS, *errno),
        (None, Layout::Omni) => results.encode(),
        (None, Layout::TcpCc) => results.encode_tcp_cc(),
    };
    shared.show(
        &shared.tests_shown,
        ServerEvent::Finished {
            test,
            client: from,
            name,
            counts: Box::new(counts),
        },
    );
    // The test is over: its slot and memory are free before the client reads its results, so
    // a client that starts its next test at once (a script's loop, `--max-tests 1`) is admitted.
    drop(slot);
    drop(memory);
    if control_open {
        write_message(conn, &results_message).await?;
    }
    Ok(())
}

/// A buffer size for a signed word (-1: unknown).
fn sized(v: Option<u32>) -> i32 {
    v.and_then(|v| i32::try_from(v).ok()).unwrap_or(-1)
}

/// A length for a signed word (every length here is at most 1 MiB).
fn word(v: usize) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// A percentage as netperf's float.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a percentage, 0 to 100: f32 holds it to netperf's two decimals"
)]
fn single(v: f64) -> f32 {
    v as f32
}

fn saturate(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}
