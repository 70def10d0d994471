//! `perfpeer iperf -s`: an iperf 2.1 server for stock clients, TCP and UDP on one port, any
//! number of streams at once. TCP streams are read to EOF (or, with `-R`, written for the time
//! the header asks); UDP flows are counted until the fin, then answered with the server report.
//! Legacy dual tests (`-d`, `-r`), which need a connection back to the client, are refused.
//! Running streams and flows hold places ([`Places`]: caps per source and in all, idle ones shed
//! first, a UDP flow on probation until it has sent for a while), and every event an anonymous
//! client can cause reaches the printer through a [`LogLimit`] of its kind.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use perfpeer_shared::one_way::{ClockBasis, OneWayFinal};
use perfpeer_shared::report::{PeerRole, StreamRole, TestResult, TestStatus};
use perfpeer_shared::spec::{DEFAULT_TCP_LEN, Direction, EndCondition, Protocol, TestSpec};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::bounceback::{self, Bounced};
use super::clients::{
    ClientSum, Clients, Place, PlaceError, PlaceRules, Places, Probation, Verdict,
};
use super::codec::{
    ACK_LEN, Amount, BounceBack, Header, ServerReport, TCP_STAMP_LEN, TransitReport, UDP_HEADER_AT,
    ack, flags,
};

use crate::admission::{Admission, Admitted, Caps, LogLimit, LogLine, accept_admitted};
use crate::budget::MemoryBudget;
use crate::engine::wire::DatagramFormat;
use crate::engine::{DataSocket, StreamSetup, WireOptions};
pub(crate) use crate::multicast::Join;
use crate::server::far_end;
use crate::session::measure::{EarlyEnd, Measurement};

/// Time a new TCP connection has to send its header.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Report repeats while the client keeps sending fins, as iperf2 does.
const REPORT_REPEATS: usize = 9;
/// A UDP flow with no datagram for this long is over.
const UDP_IDLE: Duration = Duration::from_secs(10);
/// Quiet time after which the client is taken to have the report.
const REPORT_QUIET: Duration = Duration::from_millis(250);
/// Largest write of a reverse (`-R`) TCP stream, whatever buffer length the header asks for:
/// the size of a write does not show on a TCP stream, and the header's field is the client's
/// word (up to 2 GiB).
const MAX_TCP_WRITE: u32 = 1 << 20;
/// TCP connections that have not sent their header yet, from all sources and from one.
const UNIDENTIFIED_CAPS: Caps = Caps {
    total: 512,
    per_source: 512,
};
/// Running TCP streams (a thread each, two with `--full-duplex`): 64 from one address, so
/// `iperf -c -P 64` runs, and 128 in all; an idle stream (nothing moved for a second) is shed
/// first for a newcomer, then the oldest of a source holding more than the newcomer's.
const TCP_STREAMS: PlaceRules = PlaceRules {
    caps: Caps {
        total: 128,
        per_source: 64,
    },
    draining: 16,
    idle_after: Duration::from_secs(1),
    probation: None,
};
/// UDP flows (a thread each): 32 from one address, 128 in all. A flow is on probation (idle:
/// the first shed, oldest first) until it has sent 32 KiB over half a second, so forged flows
/// must come faster than 256 a second to shed a stock client's flow before it is through; then
/// it is never shed, but gives its place up if it falls quiet for a second while newcomers are
/// refused. Sources are not weighed against each other: they can be forged.
const UDP_FLOWS: PlaceRules = PlaceRules {
    caps: Caps {
        total: 128,
        per_source: 32,
    },
    draining: 16,
    idle_after: Duration::from_secs(1),
    probation: Some(Probation {
        time: Duration::from_millis(500),
        bytes: 32 << 10,
    }),
};
/// Longest wait for a thread permit while shed holders' threads end.
const THREAD_WAIT: Duration = Duration::from_secs(2);

static DROPPED: LogLimit = LogLimit::new("iperf2 connections dropped", Duration::from_secs(10));
/// Results: a `-P 64` test's 64 and its `[SUM]` are all written.
static RESULTS: LogLimit = LogLimit::with_burst("iperf 2 results", Duration::from_secs(10), 96);
static DUAL_REFUSED: LogLimit =
    LogLimit::new("iperf 2 dual tests refused", Duration::from_secs(10));
static UDP_BACK_REFUSED: LogLimit = LogLimit::new(
    "iperf 2 UDP -R/--full-duplex/dual tests refused",
    Duration::from_secs(10),
);
static BAD_HEADERS: LogLimit = LogLimit::new(
    "iperf 2 connections without a valid header",
    Duration::from_secs(10),
);
static NO_PLACE: LogLimit = LogLimit::new(
    "iperf 2 streams and flows without a place",
    Duration::from_secs(10),
);
static FAILED: LogLimit = LogLimit::with_burst(
    "iperf 2 streams and flows failed",
    Duration::from_secs(10),
    4,
);

/// Why the server turned a stream or flow away.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Reason {
    /// A legacy dual or tradeoff test.
    #[error(
        "refused a dual (-d, -r) test: perfpeer never connects back to a client; use -R or --full-duplex, or two tests"
    )]
    DualTest,
    /// A UDP test in which the server would send.
    #[error(
        "refused a UDP -R/--full-duplex/dual test: iperf 2's UDP cannot prove the client's address, and perfpeer sends to none it has not proved (TCP -R and --full-duplex work)"
    )]
    UdpBackChannel,
    /// No header, or a broken one, in time.
    #[error("{0}")]
    Header(String),
    /// No place for it, or it lost its place.
    #[error("{0}")]
    Place(PlaceError),
    /// Anything else: the memory budget, `-1`'s queue, a socket error, the shutdown.
    #[error("{0}")]
    Failed(String),
}

impl Reason {
    /// The limit its lines go through.
    fn log_limit(&self) -> &'static LogLimit {
        match self {
            Reason::DualTest => &DUAL_REFUSED,
            Reason::UdpBackChannel => &UDP_BACK_REFUSED,
            Reason::Header(_) => &BAD_HEADERS,
            Reason::Place(_) => &NO_PLACE,
            Reason::Failed(_) => &FAILED,
        }
    }
}

/// Limits of the server.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    /// Longest test accepted.
    pub max_duration: Duration,
    /// Bytes of buffers the streams may hold at once (`--max-memory`).
    pub max_memory: u64,
    /// Serve one client address's TCP streams at a time; others wait (`-1`).
    pub one_client_at_a_time: bool,
    /// Receive this multicast group (UDP only, no report sent back), instead of serving TCP
    /// and UDP on the address.
    pub multicast: Option<Join>,
    /// Count the one-way delays of `--trip-times` UDP flows in these bins (`--histograms`).
    pub histograms: Option<perfpeer_shared::histogram::HistogramSpec>,
}

/// What the server reports to its printer.
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// A stream finished.
    Finished(Box<TestResult>),
    /// A bounce-back test ended.
    BounceBack {
        /// Its number.
        id: u32,
        /// Our address of its connection.
        local: String,
        /// The client.
        from: SocketAddr,
        /// Its first request's header.
        header: BounceBack,
        /// What it moved.
        bounced: Bounced,
    },
    /// The TCP streams one client ran together ended: their sum (`[SUM]`).
    Sum {
        /// The streams' sum.
        sum: ClientSum,
    },
    /// A connection or flow was refused.
    Refused {
        /// Who.
        from: SocketAddr,
        /// Why.
        reason: Reason,
    },
    /// Events of one kind that were not reported in the period before (flood control).
    Suppressed {
        /// What they were.
        what: &'static str,
        /// How many.
        count: u64,
        /// The period, seconds.
        period_secs: u64,
    },
}

impl ServerEvent {
    /// The limit its lines go through (`None`: a count, one per line let through).
    fn log_limit(&self) -> Option<&'static LogLimit> {
        match self {
            ServerEvent::Finished(_) | ServerEvent::Sum { .. } | ServerEvent::BounceBack { .. } => {
                Some(&RESULTS)
            }
            ServerEvent::Refused { reason, .. } => Some(reason.log_limit()),
            ServerEvent::Suppressed { .. } => None,
        }
    }
}

struct Shared {
    config: ServerConfig,
    next_id: AtomicU32,
    udp_flows: Mutex<HashSet<SocketAddr>>,
    /// Flows refused lately, and until when their datagrams are dropped unanswered and unlogged
    /// (a stock client repeats its header for seconds: one refusal is said once).
    refused_flows: Mutex<std::collections::HashMap<SocketAddr, std::time::Instant>>,
    tcp_places: Arc<Places>,
    udp_places: Arc<Places>,
    memory: Arc<MemoryBudget>,
    clients: Arc<Clients>,
    events: tokio::sync::mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
}

/// Serves TCP and UDP on `addr` until `shutdown`.
pub(crate) async fn run(
    addr: SocketAddr,
    config: ServerConfig,
    events: tokio::sync::mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let (tcp, udp) = match &config.multicast {
        Some(join) => (
            None,
            UdpSocket::from_std(crate::multicast::bind_and_join(join, addr.port())?)?,
        ),
        None => {
            let (tcp, udp) = crate::server::data_listener::bind(addr)?;
            (Some(tcp), udp)
        }
    };
    let local = udp.local_addr()?;
    let shared = Arc::new(Shared {
        memory: MemoryBudget::new(config.max_memory),
        clients: Clients::new(config.one_client_at_a_time),
        config,
        next_id: AtomicU32::new(1),
        udp_flows: Mutex::new(HashSet::new()),
        refused_flows: Mutex::new(std::collections::HashMap::new()),
        tcp_places: Places::new(TCP_STREAMS),
        udp_places: Places::new(UDP_FLOWS),
        events,
        shutdown,
    });
    let tasks = TaskTracker::new();
    tasks.spawn(crate::util::boxed(udp_flows(
        udp,
        local,
        shared.clone(),
        tasks.clone(),
    )));
    let unidentified = Admission::new(UNIDENTIFIED_CAPS);
    let Some(tcp) = tcp else {
        // A multicast group: datagrams only.
        shared.shutdown.cancelled().await;
        crate::server::drain(&tasks).await;
        return Ok(());
    };
    while let Some((stream, from, place)) =
        accept_admitted(&tcp, &unidentified, &DROPPED, &shared.shutdown).await
    {
        let shared = shared.clone();
        tasks.spawn(crate::util::boxed(async move {
            if let Err(reason) = tcp_stream(stream, from, place, &shared).await {
                shared.report(ServerEvent::Refused { from, reason });
            }
        }));
    }
    // Running tests end at the shutdown; their results are reported before the server exits.
    crate::server::drain(&tasks).await;
    Ok(())
}

use crate::util::unix_ms_now as now_ms;

impl Shared {
    /// Sends `event` to the printer if its kind's limit lets its line be written, after the
    /// count of those of the kind that were not (one line per kind and period under a flood).
    fn report(&self, event: ServerEvent) {
        let Some(limit) = event.log_limit() else {
            let _ = self.events.send(event);
            return;
        };
        let suppressed = match limit.admit() {
            LogLine::Write { suppressed } => suppressed,
            LogLine::Suppress => return,
        };
        if suppressed > 0 {
            let _ = self.events.send(ServerEvent::Suppressed {
                what: limit.what(),
                count: suppressed,
                period_secs: limit.period_secs(),
            });
        }
        let _ = self.events.send(event);
    }
}

fn spec_for(protocol: Protocol, header: Option<&Header>, max: Duration) -> TestSpec {
    let mut spec = TestSpec::new(protocol);
    spec.bitrate = None;
    spec.len = header
        .and_then(|h| u32::try_from(h.buflen).ok())
        .filter(|&l| l > 0)
        .unwrap_or(DEFAULT_TCP_LEN);
    spec.end = match header.map(|h| h.amount) {
        Some(Amount::Time(d)) if !d.is_zero() && d <= max => EndCondition::Time { duration: d },
        Some(Amount::Bytes(b)) if b > 0 => EndCondition::Bytes { bytes: b },
        _ => EndCondition::Time { duration: max },
    };
    spec
}

/// How a TCP stream opened.
enum Opening {
    /// A test stream: its header, if it sent one, and how long that was.
    Test(Option<Header>, usize),
    /// A bounce-back test: its first word.
    BounceBack([u8; 4]),
}

/// Reads a TCP stream's first bytes: a bounce-back request, or a test stream's header.
async fn read_header(stream: &mut TcpStream) -> Result<Opening, String> {
    let mut first = [0u8; 4];
    tokio::time::timeout(HEADER_TIMEOUT, stream.read_exact(&mut first))
        .await
        .map_err(|_| "no data in time".to_string())?
        .map_err(|e| e.to_string())?;
    let word = u32::from_be_bytes(first);
    if BounceBack::opens(word) {
        return Ok(Opening::BounceBack(first));
    }
    match Header::length_from_flags(word).map_err(|e| e.to_string())? {
        None => Ok(Opening::Test(None, 4)),
        Some(len) => {
            let mut rest = vec![0u8; len];
            rest[..4].copy_from_slice(&first);
            tokio::time::timeout(HEADER_TIMEOUT, stream.read_exact(&mut rest[4..]))
                .await
                .map_err(|_| "header cut short".to_string())?
                .map_err(|e| e.to_string())?;
            let header = Header::decode(&rest).map_err(|e| e.to_string())?;
            Ok(Opening::Test(Some(header), len))
        }
    }
}

/// Runs a bounce-back test on `stream` (its place taken like a test stream's) and reports it.
async fn bounce_back(
    mut stream: TcpStream,
    first: [u8; 4],
    from: SocketAddr,
    shared: &Shared,
) -> Result<(), Reason> {
    let (header, head) = bounceback::first_request(&mut stream, first)
        .await
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let mut place = shared.tcp_places.admit(from.ip()).map_err(Reason::Place)?;
    let _memory = shared
        .memory
        .charge(u64::from(header.size))
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let local = stream
        .local_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    let stop = shared.shutdown.child_token();
    let evicted = place.evicted().clone();
    let watch = {
        let stop = stop.clone();
        async move {
            evicted.cancelled().await;
            stop.cancel();
        }
    };
    let serve = bounceback::serve(
        &mut stream,
        header,
        head,
        shared.config.max_duration,
        &stop,
        |bytes| {
            let _ = place.observe(std::time::Instant::now(), bytes);
        },
    );
    let bounced = tokio::select! {
        b = serve => b.map_err(|e| Reason::Failed(e.to_string()))?,
        () = watch => return Err(Reason::Place(PlaceError::Shed)),
    };
    shared.report(ServerEvent::BounceBack {
        id,
        local,
        from,
        header,
        bounced,
    });
    Ok(())
}

async fn tcp_stream(
    mut stream: TcpStream,
    from: SocketAddr,
    place: Admitted,
    shared: &Shared,
) -> Result<(), Reason> {
    let header = tokio::select! {
        h = read_header(&mut stream) => h.map_err(Reason::Header),
        _ = place.evicted().cancelled() => Err(Reason::Place(PlaceError::Shed)),
    };
    drop(place);
    let (header, header_len) = match header? {
        Opening::Test(header, len) => (header, len),
        Opening::BounceBack(first) => return bounce_back(stream, first, from, shared).await,
    };
    if let Some(h) = &header {
        if h.wants_connect_back() {
            return Err(Reason::DualTest);
        }
        if h.wants_ack() {
            use tokio::io::AsyncWriteExt;
            stream
                .write_all(&ack())
                .await
                .map_err(|e| Reason::Failed(e.to_string()))?;
        }
    }
    let reverse = header.as_ref().is_some_and(Header::is_reverse);
    // --full-duplex: both ends send on this one connection (which proves the client's address).
    let full_duplex = header.as_ref().is_some_and(Header::is_full_duplex);
    let mut spec = spec_for(Protocol::Tcp, header.as_ref(), shared.config.max_duration);
    spec.len = spec.len.min(MAX_TCP_WRITE);
    // --trip-times: every write starts with its stamp, both ways (a reverse test's client
    // reads ours); the delays' bins when the server was asked for them.
    let trip_times = header.as_ref().is_some_and(Header::wants_trip_times);
    if trip_times {
        spec.trip_times = true;
        spec.len = spec
            .len
            .max(u32::try_from(TCP_STAMP_LEN).unwrap_or(u32::MAX));
        spec.histogram = shared.config.histograms;
    }
    spec.direction = if full_duplex {
        Direction::Bidir
    } else if reverse {
        Direction::Reverse
    } else {
        Direction::Normal
    };
    let roles: Vec<StreamRole> = if full_duplex {
        vec![StreamRole::Receiver, StreamRole::Sender]
    } else if reverse {
        vec![StreamRole::Sender]
    } else {
        vec![StreamRole::Receiver]
    };
    // Its client's group: `[SUM]` at the end, and its turn under `-1` (waiting holds no place).
    let member = shared
        .clients
        .join(from.ip(), &shared.shutdown)
        .await
        .map_err(Reason::Failed)?;
    // A place, and a thread only with it (dropped last, once the threads have ended).
    let mut place = shared.tcp_places.admit(from.ip()).map_err(Reason::Place)?;
    place.thread(THREAD_WAIT).await.map_err(Reason::Place)?;
    let _memory = shared
        .memory
        .charge(crate::engine::memory_needed(&spec, roles.iter().copied()))
        .map_err(|e| Reason::Failed(e.to_string()))?;
    if let (Some(h), true, true) = (&header, trip_times, reverse || full_duplex) {
        // A reverse --trip-times client reads our header (and start time) before the data.
        let reply = h
            .reverse_reply()
            .encode_with_start(crate::util::wall_clock());
        tokio::io::AsyncWriteExt::write_all(&mut stream, &reply)
            .await
            .map_err(|e| Reason::Failed(e.to_string()))?;
    }
    let socket = stream
        .into_std()
        .and_then(|s| s.set_nonblocking(false).map(|()| s))
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let socket = Arc::new(socket);
    let setups: Vec<StreamSetup> = roles
        .iter()
        .map(|&role| StreamSetup {
            id: shared.next_id.fetch_add(1, Ordering::Relaxed),
            role,
            socket: DataSocket::Tcp(socket.clone()),
        })
        .collect();
    let id = setups[0].id;
    let started = now_ms();
    let wire = WireOptions {
        format: DatagramFormat::Iperf2 { seq64: false },
        one_way: trip_times.then(|| ClockBasis::of_peer(from.ip())),
        ..WireOptions::default()
    };
    let m = Measurement::start_with(PeerRole::Server, &spec, setups, &wire)
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let limit = far_end::far_end_limit(&spec, shared.config.max_duration);
    let ended = run_stream(&m, &roles, &spec, limit, &mut place, shared).await;
    let finished = m.finish(ended.is_err()).await;
    if place.evicted().is_cancelled() {
        // An idle stream shed for a newcomer (a flood's, most likely): said as such, once per
        // period, not as a result each.
        return Err(Reason::Place(PlaceError::Shed));
    }
    drop(place);
    let status = finished.status(ended.err().map(EarlyEnd::Because));
    let mut local = finished.report;
    // iperf2 counts the header as received data.
    for s in local
        .streams
        .iter_mut()
        .filter(|s| s.role == StreamRole::Receiver)
    {
        s.bytes += header_len as u64;
    }
    let bytes = local.streams.iter().map(|s| s.bytes).sum();
    let result = TestResult {
        id: id.to_string(),
        spec,
        started_unix_ms: started,
        server_addr: from.to_string(),
        local,
        remote: None,
        group_receivers: Vec::new(),
        working_load: None,
        status,
    };
    shared.report(ServerEvent::Finished(Box::new(result)));
    if let Some(sum) = member.leave(bytes) {
        shared.report(ServerEvent::Sum { sum });
    }
    Ok(())
}

/// Waits until the stream is over: EOF (or the fin) for a receiver; time or bytes for a
/// (reverse) sender. A UDP receiver that hears nothing for [`UDP_IDLE`] gives up: a stray
/// datagram must not hold a flow open. The stream ends early when its place is shed, or when
/// it falls quiet holding an established flow's place that newcomers wait for.
async fn run_stream(
    m: &Measurement,
    roles: &[StreamRole],
    spec: &TestSpec,
    limit: Duration,
    place: &mut Place,
    shared: &Shared,
) -> Result<(), String> {
    let epoch = m.epoch();
    let send_until = spec.total_time().map(|t| epoch + t);
    let udp = spec.protocol == Protocol::Udp;
    let (mut last_bytes, mut last_change) = (0u64, std::time::Instant::now());
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            _ = shared.shutdown.cancelled() => return Err("the server is shutting down".into()),
            _ = place.evicted().cancelled() => return Err(PlaceError::Shed.to_string()),
        }
        let e = m.engine();
        let done = roles.iter().all(|role| match role {
            StreamRole::Receiver => e.receivers_done(),
            StreamRole::Sender => {
                e.senders_done() || send_until.is_some_and(|t| std::time::Instant::now() >= t)
            }
        });
        if done {
            return Ok(());
        }
        let now = std::time::Instant::now();
        let bytes = e.bytes(StreamRole::Receiver);
        if place.observe(now, bytes + e.bytes(StreamRole::Sender)) == Verdict::Yield {
            return Err("fell quiet while other flows waited for a place".into());
        }
        if bytes != last_bytes {
            (last_bytes, last_change) = (bytes, now);
        } else if udp && roles == [StreamRole::Receiver] && last_change.elapsed() > UDP_IDLE {
            return Err(format!("no datagram for {} s", UDP_IDLE.as_secs()));
        }
        if epoch.elapsed() > limit {
            return Err("the client never finished".into());
        }
    }
}

/// A flow's datagrams that reached the listening socket before the flow's own socket existed,
/// handed to the flow at most (a video client's first frame comes as one back-to-back burst).
const EARLY_DATAGRAMS: usize = 64;
/// Other sources' datagrams read while collecting those, kept for the listener's next turns.
const HELD_DATAGRAMS: usize = 64;

async fn udp_flows(socket: UdpSocket, local: SocketAddr, shared: Arc<Shared>, tasks: TaskTracker) {
    let mut buf = vec![0u8; 65_536];
    let mut held: std::collections::VecDeque<(Vec<u8>, SocketAddr)> = Default::default();
    loop {
        let (datagram, from) = match held.pop_front() {
            Some(d) => d,
            None => tokio::select! {
                _ = shared.shutdown.cancelled() => return,
                r = socket.recv_from(&mut buf) => match r {
                    Ok((n, from)) => (buf[..n].to_vec(), from),
                    Err(_) => continue,
                },
            },
        };
        // Too short for a header, a leftover fin (negative id) or a flow we already serve.
        let n = datagram.len();
        if n < UDP_HEADER_AT + 24
            || (i32::from_be_bytes(datagram[..4].try_into().expect("4 bytes")) < 0)
        {
            continue;
        }
        if shared
            .udp_flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&from)
            || recently_refused(&shared, from)
        {
            continue;
        }
        let place = match shared.udp_places.admit(from.ip()) {
            Ok(place) => place,
            Err(refusal) => {
                DROPPED.warn(from, refusal);
                continue;
            }
        };
        // Bound to the flow's 5-tuple at once: its next datagrams queue there, not here.
        let flow_socket = match crate::server::data_listener::connected_udp_socket(local, from) {
            Ok(flow_socket) => flow_socket,
            Err(e) => {
                shared.report(ServerEvent::Refused {
                    from,
                    reason: Reason::Failed(e.to_string()),
                });
                continue;
            }
        };
        crate::util::lock(&shared.udp_flows).insert(from);
        // The flow's datagrams already queued here go to it, in order; others' wait their turn.
        let mut firsts = vec![datagram];
        while firsts.len() < EARLY_DATAGRAMS {
            match socket.try_recv_from(&mut buf) {
                Ok((m, src)) if src == from => firsts.push(buf[..m].to_vec()),
                Ok((m, src)) if held.len() < HELD_DATAGRAMS => {
                    held.push_back((buf[..m].to_vec(), src));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let shared = shared.clone();
        tasks.spawn(crate::util::boxed(async move {
            match udp_flow(firsts, flow_socket, from, place, &shared).await {
                Ok(FlowEnd::Served) => {}
                Ok(FlowEnd::LostItsPlace) => remember_refusal(&shared, from),
                Err(reason) => {
                    remember_refusal(&shared, from);
                    shared.report(ServerEvent::Refused { from, reason });
                }
            }
            crate::util::lock(&shared.udp_flows).remove(&from);
        }));
    }
}

/// How a flow that started ended.
enum FlowEnd {
    /// By its fin, its time or its silence.
    Served,
    /// Shed for a newcomer, or gave its place up: its later datagrams are dropped for a while.
    LostItsPlace,
}

/// How long a refused flow's datagrams are dropped without a word.
const REFUSAL_MEMORY: Duration = Duration::from_secs(10);
/// Refused flows remembered at most (beyond, a refusal is said again: never more memory).
const REFUSALS_KEPT: usize = 4096;

fn recently_refused(shared: &Shared, from: SocketAddr) -> bool {
    crate::util::lock(&shared.refused_flows)
        .get(&from)
        .is_some_and(|until| std::time::Instant::now() < *until)
}

fn remember_refusal(shared: &Shared, from: SocketAddr) {
    let now = std::time::Instant::now();
    let mut refused = crate::util::lock(&shared.refused_flows);
    if refused.len() >= REFUSALS_KEPT {
        refused.retain(|_, until| *until > now);
    }
    if refused.len() < REFUSALS_KEPT {
        refused.insert(from, now + REFUSAL_MEMORY);
    }
}

async fn udp_flow(
    firsts: Vec<Vec<u8>>,
    socket: std::net::UdpSocket,
    from: SocketAddr,
    mut place: Place,
    shared: &Shared,
) -> Result<FlowEnd, Reason> {
    let first = &firsts[0];
    let header =
        Header::decode(&first[UDP_HEADER_AT..]).map_err(|e| Reason::Header(e.to_string()))?;
    if header.wants_connect_back() || header.is_reverse() || header.is_full_duplex() {
        return Err(Reason::UdpBackChannel);
    }
    let seq64 = header.flags & flags::SEQNO64B != 0;
    place.thread(THREAD_WAIT).await.map_err(Reason::Place)?;
    let mut spec = spec_for(Protocol::Udp, Some(&header), shared.config.max_duration);
    spec.len = u32::try_from(first.len()).unwrap_or(u32::MAX);
    spec.end = EndCondition::Time {
        duration: shared.config.max_duration,
    };
    // The delays' bins, for a client that sends its times (iperf 2 counts them only then).
    spec.histogram = shared
        .config
        .histograms
        .filter(|_| header.wants_trip_times());
    let _memory = shared
        .memory
        .charge(crate::engine::memory_needed(&spec, [StreamRole::Receiver]))
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let udp = Arc::new(socket);
    let setup = StreamSetup {
        id,
        role: StreamRole::Receiver,
        socket: DataSocket::Udp(udp.clone()),
    };
    let trip_times = header.wants_trip_times();
    let wire = WireOptions {
        format: DatagramFormat::Iperf2 { seq64 },
        payload_template: None,
        first_datagrams: firsts,
        one_way: trip_times.then(|| ClockBasis::of_peer(from.ip())),
    };
    let started = now_ms();
    let m = Measurement::start_with(PeerRole::Server, &spec, vec![setup], &wire)
        .map_err(|e| Reason::Failed(e.to_string()))?;
    let limit =
        header_time(&header).unwrap_or(shared.config.max_duration) + Duration::from_secs(10);
    let ended = run_stream(
        &m,
        &[StreamRole::Receiver],
        &spec,
        limit,
        &mut place,
        shared,
    )
    .await;
    let finished = m.finish(ended.is_err()).await;
    let shed = place.evicted().is_cancelled();
    let yielded = ended.is_err() && place.established();
    let status = finished.status(ended.err().map(EarlyEnd::Because));
    if shed || status != TestStatus::Complete && !place.established() {
        // Shed, or ended without its fin before it had sent for a while (a forged flow's
        // ends): said once per period as such, not as a result each.
        return Err(Reason::Place(if shed {
            PlaceError::Shed
        } else {
            PlaceError::Unproven
        }));
    }
    let local_report = finished.report;
    // The report goes only to a flow that ended with its fin (not to one that went quiet or
    // failed), and never more bytes of reports than the flow sent: iperf2's UDP protocol has no
    // way to prove its source address, so a forged flow must reflect nothing larger than itself
    // (QUIC allows 3 times what a source sent before it proves its address).
    // A flow to a multicast group gets nothing back, as from a stock 2.1 server: its sender
    // awaits no report, and a receiver must never answer a group's sender.
    let report_budget = local_report
        .streams
        .first()
        .filter(|_| status == TestStatus::Complete && shared.config.multicast.is_none())
        .map_or(0, |rx| rx.bytes);
    if let Some(rx) = local_report.streams.first().filter(|_| report_budget > 0) {
        let stats = rx.udp_rx.clone().unwrap_or_default();
        let report = ServerReport {
            bytes: rx.bytes,
            duration: rx.duration,
            lost: stats.lost,
            out_of_order: stats.out_of_order,
            datagrams: stats.expected(),
            jitter: Duration::from_secs_f64(stats.jitter_ms / 1000.0),
            transit: stats
                .one_way
                .filter(|_| trip_times)
                .map(|d| transit_report(&d, rx.datagrams_per_second())),
        };
        place.answering();
        let udp2 = udp.clone();
        crate::util::spawn_blocking(move || send_report(&udp2, &report, report_budget))
            .await
            .map_err(|e| Reason::Failed(e.to_string()))?;
    }
    drop(place);
    let result = TestResult {
        id: id.to_string(),
        spec,
        started_unix_ms: started,
        server_addr: from.to_string(),
        local: local_report,
        remote: None,
        group_receivers: Vec::new(),
        working_load: None,
        status,
    };
    shared.report(ServerEvent::Finished(Box::new(result)));
    Ok(if yielded {
        FlowEnd::LostItsPlace
    } else {
        FlowEnd::Served
    })
}

/// The server report's latency extension, from the flow's one-way delays.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "iperf 2's counts are 32-bit words: a flow's datagrams a second fit, its delay count is clamped"
)]
fn transit_report(d: &OneWayFinal, datagrams_per_second: Option<f64>) -> TransitReport {
    TransitReport {
        min_s: d.min_ms / 1e3,
        max_s: d.max_ms / 1e3,
        sum_s: d.mean_ms / 1e3 * d.count as f64,
        mean_s: d.mean_ms / 1e3,
        m2_s2: d.m2_s2,
        count: u32::try_from(d.count).unwrap_or(u32::MAX),
        packets_per_second: datagrams_per_second.unwrap_or(0.0).round() as u32,
    }
}

fn header_time(h: &Header) -> Option<Duration> {
    match h.amount {
        Amount::Time(d) => Some(d),
        Amount::Bytes(_) => None,
    }
}

/// Sends the report, again each time another fin arrives, until the client falls quiet; at most
/// `budget` bytes of reports in all.
fn send_report(udp: &std::net::UdpSocket, report: &ServerReport, budget: u64) {
    let bytes = report.encode();
    let repeats = usize::try_from(budget / bytes.len() as u64)
        .unwrap_or(usize::MAX)
        .min(REPORT_REPEATS);
    let _ = udp.set_read_timeout(Some(REPORT_QUIET));
    let mut buf = [0u8; 65_536];
    for _ in 0..repeats {
        let _ = udp.send(&bytes);
        match udp.recv(&mut buf) {
            Ok(n) if n > ACK_LEN => continue,
            _ => return,
        }
    }
}
