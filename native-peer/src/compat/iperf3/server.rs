//! `perfpeer iperf3 -s`: an iperf3 server for stock clients (3.12 onwards) that, unlike
//! iperf3's own, serves several tests at once. Control and data share one port: a new TCP
//! connection whose cookie belongs to a test waiting for streams is a data stream, any other is
//! a new test. UDP streams announce themselves with a 4-byte datagram that carries no cookie,
//! each from the stream's own socket: it is matched to the one UDP test of that client address
//! that is creating its streams. Only one UDP test per client address creates its streams at a
//! time (another waits for its turn before it is told CREATE_STREAMS), so concurrent UDP tests
//! from one host never get each other's streams; a hello from a source address that already
//! has a stream, or beyond the test's stream count, is ignored.
//!
//! What a client cannot make it do (docs/security.md): send to another address than the
//! control connection's; send a stream to more than the one port (5-tuple) its first hello came
//! from, or on after that port refuses it (ICMP unreachable); answer a hello from a privileged
//! port (below 1024, where services live); hold more than its share of the tests (idle ones are
//! shed for newcomers: [`super::slots`]); or write more than a few lines per 10 s of refusals
//! and of tests served.

use crate::util::lock;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use perfpeer_shared::format::iperf3 as fmt;
use perfpeer_shared::report::{
    IntervalReport, PeerRole, SocketInfo, StreamRole, TestResult, TestStatus,
};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::codec::{
    CodecError, Cookie, MAX_PARAMS_LEN, MAX_RESULTS_LEN, OutputKind, Params, Results, State,
    UDP_REPLY,
};
use super::control::{Control, Iperf3Error, STEP_TIMEOUT};
use crate::admission::{Admission, Admitted, Caps, LogLimit, LogLine, accept_admitted};
use crate::budget::MemoryBudget;
use crate::compat::slots::{Slot, Slots};
use crate::compat::{REFUSALS_SHOWN, SHOWN_PERIOD, TESTS_SHOWN};
use crate::engine::wire::DatagramFormat;
use crate::engine::{DataSocket, StreamSetup, WireOptions};
use crate::server::far_end;
use crate::session::measure::Measurement;

/// Limits of the server.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    /// Tests at once; one more is answered ACCESS_DENIED, as a busy iperf3 does, unless a
    /// test that is stalled in its setup can be shed for it. One client address may hold half
    /// of them (rounded up).
    pub max_tests: u32,
    /// Longest test accepted.
    pub max_duration: Duration,
    /// Serve one test, then stop (`-1`).
    pub one_off: bool,
    /// Bytes of buffers the tests may hold at once (`--max-memory`).
    pub max_memory: u64,
    /// How this server shows a test (its own `-J` or not), for clients that ask for it.
    pub output: OutputKind,
}

/// Connections that have not sent their cookie yet, from all sources and from one.
const UNIDENTIFIED_CAPS: Caps = Caps {
    total: 512,
    per_source: 512,
};

static DROPPED: LogLimit = LogLimit::new(
    "iperf3 connections dropped before their cookie",
    Duration::from_secs(10),
);
static STREAM_ERRORS: LogLimit = LogLimit::new(
    "iperf3 data streams that could not be set up",
    Duration::from_secs(10),
);
static PRIVILEGED_HELLOS: LogLimit = LogLimit::new(
    "iperf3 UDP stream hellos from a privileged port (below 1024), ignored",
    Duration::from_secs(10),
);

/// The lowest port a UDP stream hello is taken from: below it live services (DNS, NTP, …),
/// which a forged hello must not turn a stream on, and no stock client sends from one unless
/// run by root with `--cport`.
const LOWEST_HELLO_PORT: u16 = 1024;

/// What the server reports to its printer.
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// A test's streams are up.
    Started {
        /// The test's number at this server (1, 2, …), for telling concurrent tests apart.
        test: u64,
        /// The client's control address.
        client: SocketAddr,
        /// The test.
        spec: TestSpec,
        /// Data sockets.
        sockets: Vec<SocketInfo>,
    },
    /// An interval of a running test.
    Interval {
        /// The test's number.
        test: u64,
        /// The test.
        spec: TestSpec,
        /// The interval.
        report: IntervalReport,
    },
    /// A test finished (or ended early): its number and result.
    Finished(u64, Box<TestResult>),
    /// Events of a kind that were not shown in the period before this one.
    Unshown {
        /// What they were.
        what: &'static str,
        /// How many.
        count: u64,
        /// The period, seconds.
        secs: u64,
    },
    /// A connection was refused, a test failed before it began, or a shown test failed.
    Failed {
        /// The test's number, if it had been given one (refused connections have none).
        test: Option<u64>,
        /// The client's control address.
        client: SocketAddr,
        /// Why.
        error: String,
    },
}

/// A test waiting for its data streams.
struct Pending {
    cookie: Cookie,
    client_ip: IpAddr,
    udp: bool,
    /// Streams the test has.
    streams: usize,
    /// UDP streams' source addresses (ip, port) taken so far.
    udp_sources: Vec<SocketAddr>,
    /// Streams as they arrive, each with its place in arrival order.
    tx: mpsc::Sender<(u64, DataSocket)>,
}

struct Shared {
    config: ServerConfig,
    slots: Arc<Slots>,
    /// Tests shown to the printer (each test's lines: all or none).
    tests_shown: LogLimit,
    /// Refusals and early failures shown to the printer.
    refusals_shown: LogLimit,
    memory: Arc<MemoryBudget>,
    pending: Mutex<Vec<Pending>>,
    /// Woken when a pending test leaves `pending` (a UDP test waiting for its turn looks again).
    pending_left: tokio::sync::Notify,
    /// Tests begun so far (each gets the next number).
    tests_begun: portable_atomic::AtomicU64,
    events: mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
}

/// Binds `addr` for TCP and UDP (the same port) and serves until `shutdown`.
pub(crate) async fn run(
    addr: SocketAddr,
    config: ServerConfig,
    events: mpsc::UnboundedSender<ServerEvent>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let (tcp, udp) = crate::server::data_listener::bind(addr)?;
    let shared = Arc::new(Shared {
        slots: Slots::new(
            config.max_tests as usize,
            (config.max_tests as usize).div_ceil(2),
        ),
        tests_shown: LogLimit::with_burst("iperf3 tests served", SHOWN_PERIOD, TESTS_SHOWN),
        refusals_shown: LogLimit::with_burst(
            "iperf3 clients refused or failed before their test",
            SHOWN_PERIOD,
            REFUSALS_SHOWN,
        ),
        memory: MemoryBudget::new(config.max_memory),
        config,
        pending: Mutex::new(Vec::new()),
        pending_left: tokio::sync::Notify::new(),
        tests_begun: portable_atomic::AtomicU64::new(0),
        events,
        shutdown,
    });
    let local = udp.local_addr()?;
    let tasks = TaskTracker::new();
    tasks.spawn(crate::util::boxed(udp_connects(udp, local, shared.clone())));
    let unidentified = Admission::new(UNIDENTIFIED_CAPS);
    let mut arrivals = 0u64;
    while let Some((stream, from, place)) =
        accept_admitted(&tcp, &unidentified, &DROPPED, &shared.shutdown).await
    {
        let shared = shared.clone();
        // Connections are numbered as accepted: a stock client connects its streams one after
        // another, and the tasks that read their cookies may finish in any order, so a test
        // orders its streams by this number (stream i has role i of the plan).
        let arrival = arrivals;
        arrivals += 1;
        tasks.spawn(crate::util::boxed(async move {
            on_connection(stream, from, place, arrival, shared).await
        }));
    }
    // Running tests end at the shutdown; their results are reported before the server exits.
    crate::server::drain(&tasks).await;
    Ok(())
}

impl Shared {
    /// Sends `event` if `limit` lets its line be written now (after a count of those it did
    /// not); whether it was sent.
    fn show(&self, limit: &LogLimit, event: ServerEvent) -> bool {
        match limit.admit() {
            LogLine::Write { suppressed } => {
                if suppressed > 0 {
                    let _ = self.events.send(ServerEvent::Unshown {
                        what: limit.what(),
                        count: suppressed,
                        secs: limit.period_secs(),
                    });
                }
                let _ = self.events.send(event);
                true
            }
            LogLine::Suppress => false,
        }
    }

    /// A refusal, or a test that ended before it began, as one rate-limited line.
    fn refused(&self, test: Option<u64>, client: SocketAddr, error: String) {
        self.show(
            &self.refusals_shown,
            ServerEvent::Failed {
                test,
                client,
                error,
            },
        );
    }
}

/// Whether a test's lines are shown: not yet known before its streams are up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    NotStarted,
    Yes,
    No,
}

async fn on_connection(
    stream: TcpStream,
    from: SocketAddr,
    place: Admitted,
    arrival: u64,
    shared: Arc<Shared>,
) {
    let from = SocketAddr::new(from.ip().to_canonical(), from.port());
    let mut control = Control::new(stream);
    let cookie = tokio::select! {
        c = control.read_cookie() => c,
        _ = place.evicted().cancelled() => Err(Iperf3Error::Aborted("shed for another source's connection".into())),
    };
    drop(place);
    let cookie = match cookie {
        Ok(c) => c,
        Err(e) => {
            DROPPED.warn(from, e);
            return;
        }
    };
    // A data stream joins its test only from the address of the test's control connection.
    let waiting = lock(&shared.pending)
        .iter()
        .find(|p| p.cookie == cookie && !p.udp && p.client_ip == from.ip())
        .map(|p| p.tx.clone());
    if let Some(tx) = waiting {
        match control_into_std(control) {
            Ok(s) => drop(tx.try_send((arrival, DataSocket::Tcp(Arc::new(s))))),
            Err(e) => STREAM_ERRORS.warn(from, e),
        }
        return;
    }
    let slot = match shared.slots.admit(from.ip()) {
        Ok((slot, _)) => slot,
        Err(busy) => {
            let _ = control.write_state(State::AccessDenied).await;
            shared.refused(None, from, format!("refused: busy ({busy})"));
            return;
        }
    };
    let test = shared
        .tests_begun
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let mut shown = Shown::NotStarted;
    let result = serve_test(&mut control, cookie, from, test, &slot, &mut shown, &shared).await;
    let shed = slot.shed().is_cancelled();
    drop(slot);
    match (result, shown) {
        (Ok(r), Shown::Yes) => drop(shared.events.send(ServerEvent::Finished(test, Box::new(r)))),
        (Ok(_), _) => {}
        (Err(e), Shown::Yes) => drop(shared.events.send(ServerEvent::Failed {
            test: Some(test),
            client: from,
            error: e.to_string(),
        })),
        (Err(_), Shown::No) => {}
        (Err(e), Shown::NotStarted) => {
            if shed {
                // As a busy iperf3 answers: the client prints "the server is busy".
                let _ = control.write_state(State::AccessDenied).await;
            }
            shared.refused(Some(test), from, e.to_string());
        }
    }
    if shared.config.one_off {
        shared.shutdown.cancel();
    }
}

/// `step`, unless the test's place is taken for a newcomer first (the test is idle: being set
/// up, or exchanging its results).
async fn unless_shed<T>(
    slot: &Slot,
    step: impl Future<Output = Result<T, Iperf3Error>>,
) -> Result<T, Iperf3Error> {
    tokio::select! {
        r = step => r,
        () = slot.shed().cancelled() => Err(shed_error()),
    }
}

fn shed_error() -> Iperf3Error {
    Iperf3Error::Aborted(format!(
        "busy: its place went to a newcomer after it sat idle (in its setup or its results) for {} s or more",
        crate::compat::slots::SHED_AFTER.as_secs()
    ))
}

fn control_into_std(control: Control) -> std::io::Result<std::net::TcpStream> {
    let s = control.into_inner().into_std()?;
    s.set_nonblocking(false)?;
    Ok(s)
}

/// Removes a pending test when dropped.
struct PendingGuard<'a> {
    shared: &'a Shared,
    cookie: Cookie,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).retain(|p| p.cookie != self.cookie);
        self.shared.pending_left.notify_waiters();
    }
}

/// Enters `pending` as a test waiting for its streams. A UDP test first waits (until
/// `deadline`) for no other UDP test of the same client address to be waiting: UDP hellos
/// carry no cookie, so two such tests at once could not be told apart.
async fn enter_pending<'a>(
    shared: &'a Shared,
    entry: Pending,
    deadline: tokio::time::Instant,
) -> Result<PendingGuard<'a>, Iperf3Error> {
    loop {
        let notified = shared.pending_left.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut pending = lock(&shared.pending);
            let taken = entry.udp
                && pending
                    .iter()
                    .any(|p| p.udp && p.client_ip == entry.client_ip);
            if !taken {
                let cookie = entry.cookie;
                pending.push(entry);
                return Ok(PendingGuard { shared, cookie });
            }
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline) => {
                return Err(Iperf3Error::Timeout("another UDP test from this address to create its streams"));
            }
            _ = shared.shutdown.cancelled() => {
                return Err(Iperf3Error::Aborted("the server is shutting down".into()));
            }
        }
    }
}

async fn serve_test(
    control: &mut Control,
    cookie: Cookie,
    client: SocketAddr,
    test: u64,
    slot: &Slot,
    shown: &mut Shown,
    shared: &Shared,
) -> Result<TestResult, Iperf3Error> {
    control.write_state(State::ParamExchange).await?;
    let params = unless_shed(slot, control.read_json(MAX_PARAMS_LEN)).await?;
    let requested = match Params::parse(&params).and_then(Params::into_requested) {
        Ok(r) => r,
        Err(e) => {
            // iperf3's own answer to bad parameters: SERVER_ERROR with its "bad parameters" code.
            write_server_error(control, IE_PARAMS).await;
            return Err(e.into());
        }
    };
    let mut spec = requested.spec;
    if requested.until_stopped {
        // `-t 0`: until the client ends it, or this server's longest test.
        spec.end = EndCondition::Time {
            duration: shared.config.max_duration,
        };
    }
    if let Err(why) = far_end::check_duration(&spec, shared.config.max_duration) {
        // A stock client prints its own words for this code ("test duration too long"); the
        // server's limit is in its own output.
        write_server_error(control, IE_DURATION).await;
        return Err(Iperf3Error::Aborted(format!("refused: {why}")));
    }
    let plan = spec.stream_plan();
    let _memory = match shared.memory.charge(far_end::memory_needed(&spec, &plan)) {
        Ok(charge) => charge,
        Err(e) => {
            let _ = control.write_state(State::AccessDenied).await;
            return Err(Iperf3Error::Aborted(format!("refused: {e}")));
        }
    };
    let count = usize::from(spec.total_streams());
    let (tx, mut rx) = mpsc::channel(count);
    let udp = spec.protocol == Protocol::Udp;
    let entry = Pending {
        cookie,
        client_ip: client.ip(),
        udp,
        streams: count,
        udp_sources: Vec::new(),
        tx,
    };
    let guard = unless_shed(
        slot,
        enter_pending(shared, entry, tokio::time::Instant::now() + STEP_TIMEOUT),
    )
    .await?;
    control.write_state(State::CreateStreams).await?;
    let mut sockets = Vec::with_capacity(count);
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    while sockets.len() < count {
        tokio::select! {
            s = tokio::time::timeout_at(deadline, rx.recv()) => match s {
                Ok(Some(s)) => sockets.push(s),
                _ => return Err(Iperf3Error::Timeout("data streams")),
            },
            // The client says nothing while it connects its streams: a closed control
            // connection (or anything else) ends the test now and frees its slot.
            state = control.next_state() => {
                return Err(match state {
                    Err(e) => e,
                    Ok(other) => Iperf3Error::Codec(CodecError::BadState(i8::from_ne_bytes([other.byte()]))),
                });
            }
            () = slot.shed().cancelled() => return Err(shed_error()),
        }
    }
    drop(guard);
    if !slot.run() {
        return Err(shed_error());
    }
    // In arrival order: the client's creation order, which the plan's roles follow.
    sockets.sort_by_key(|(arrival, _)| *arrival);
    let setups = assign_roles(&spec, sockets.into_iter().map(|(_, s)| s).collect());
    control.write_state(State::TestStart).await?;
    control.write_state(State::TestRunning).await?;
    let wire = WireOptions {
        format: DatagramFormat::Iperf3 {
            counter64: requested.counter64,
        },
        payload_template: None,
        first_datagrams: Vec::new(),
        one_way: None,
    };
    let started_unix_ms = crate::util::unix_ms_now();
    let mut m = Measurement::start_with(PeerRole::Server, &spec, setups, &wire)
        .map_err(|e| Iperf3Error::Aborted(e.to_string()))?;
    let started = ServerEvent::Started {
        test,
        client,
        spec: spec.clone(),
        sockets: m.sockets(),
    };
    let show = shared.show(&shared.tests_shown, started);
    *shown = if show { Shown::Yes } else { Shown::No };
    let outcome = run_until_test_end(control, &mut m, &spec, test, show, shared).await;
    if outcome.is_ok() {
        m.stop_senders();
        drain_receivers(&m).await;
    }
    let finished = m.finish(true).await;
    slot.idle();
    let status = finished.status(None);
    let (tail, local) = (finished.tail, finished.report);
    if let Some(report) = tail.filter(|_| show) {
        let _ = shared.events.send(ServerEvent::Interval {
            test,
            spec: spec.clone(),
            report,
        });
    }
    if let Err(e) = outcome {
        return Ok(partial(
            cookie,
            spec,
            started_unix_ms,
            client,
            local,
            e.to_string(),
        ));
    }
    control.write_state(State::ExchangeResults).await?;
    let theirs = Results::parse(&unless_shed(slot, control.read_json(MAX_RESULTS_LEN)).await?)?;
    let mut ours = Results::from_report(&local, spec.protocol);
    let remote = theirs.into_report(&local, PeerRole::Client, spec.protocol);
    let result = TestResult {
        id: cookie.as_str().to_string(),
        spec,
        started_unix_ms,
        server_addr: control
            .stream()
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        local,
        remote: Some(remote),
        group_receivers: Vec::new(),
        working_load: None,
        status,
    };
    // `--get-server-output`: this test as this server shows it, in the client's style.
    match (requested.server_output, shared.config.output) {
        (true, OutputKind::Json) => ours.server_output_json = Some(fmt::json(&result)),
        (true, OutputKind::Text) => {
            ours.server_output_text = Some(fmt::text_whole(
                &result,
                fmt::Voice::Stock {
                    verbose: false,
                    rate: fmt::RateFormat::Adaptive,
                },
            ));
        }
        (false, _) => {}
    }
    control
        .write_json(&perfpeer_shared::format::json_value(&ours))
        .await?;
    control.write_state(State::DisplayResults).await?;
    // The client answers IPERF_DONE and closes; either way the test is over.
    let _ = unless_shed(slot, control.read_state()).await;
    Ok(result)
}

/// SERVER_ERROR with iperf3's error `code` (and errno 0), which a stock client prints in its
/// own words.
async fn write_server_error(control: &mut Control, code: i32) {
    let mut msg = vec![State::ServerError.byte()];
    msg.extend_from_slice(&code.to_be_bytes());
    msg.extend_from_slice(&0i32.to_be_bytes());
    let _ = control.write(&msg).await;
}

/// iperf3's i_errno IEDURATION ("test duration too long").
const IE_DURATION: i32 = 5;

/// iperf3's i_errno IERECVPARAMS ("unable to receive parameters from client"), which stock
/// clients print when we refuse their parameters.
const IE_PARAMS: i32 = 114;

fn partial(
    cookie: Cookie,
    spec: TestSpec,
    started_unix_ms: u64,
    client: SocketAddr,
    local: perfpeer_shared::report::SideReport,
    reason: String,
) -> TestResult {
    TestResult {
        id: cookie.as_str().to_string(),
        spec,
        started_unix_ms,
        server_addr: client.to_string(),
        local,
        remote: None,
        group_receivers: Vec::new(),
        working_load: None,
        status: TestStatus::Partial { reason },
    }
}

/// The server's role per stream: the client's senders are created first.
fn assign_roles(spec: &TestSpec, sockets: Vec<DataSocket>) -> Vec<StreamSetup> {
    let plan = spec.stream_plan();
    sockets
        .into_iter()
        .zip(plan)
        .map(|(socket, (id, client_sends))| {
            crate::server::far_end::apply_server_options(&socket, spec);
            let role = if client_sends {
                StreamRole::Receiver
            } else {
                StreamRole::Sender
            };
            StreamSetup { id, role, socket }
        })
        .collect()
}

/// After TEST_END the client has stopped sending, but what it sent last may still be in our
/// receive queues: read on until nothing has arrived for [`QUIET`] (at most [`DRAIN_MAX`]), so
/// both ends count the same bytes. The client keeps its data sockets open until the end, so
/// there is no EOF to wait for.
async fn drain_receivers(m: &Measurement) {
    const QUIET: Duration = Duration::from_millis(30);
    const DRAIN_MAX: Duration = Duration::from_millis(500);
    let start = Instant::now();
    let mut last = m.engine().bytes(StreamRole::Receiver);
    let mut still_since = Instant::now();
    while start.elapsed() < DRAIN_MAX && still_since.elapsed() < QUIET {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = m.engine().bytes(StreamRole::Receiver);
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
    }
}

async fn run_until_test_end(
    control: &mut Control,
    m: &mut Measurement,
    spec: &TestSpec,
    test: u64,
    show: bool,
    shared: &Shared,
) -> Result<(), Iperf3Error> {
    // The client ends the test; we give up when it should have, plus a grace.
    let limit = far_end::far_end_limit(spec, shared.config.max_duration);
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        tokio::select! {
            report = m.next_interval() => {
                if show {
                    let _ = shared.events.send(ServerEvent::Interval { test, spec: spec.clone(), report });
                }
            }
            state = control.next_state() => match state? {
                State::TestEnd => {
                    if let Some(report) = m.take_due_interval().filter(|_| show) {
                        let _ = shared.events.send(ServerEvent::Interval { test, spec: spec.clone(), report });
                    }
                    return Ok(());
                }
                State::ClientTerminate => return Err(Iperf3Error::Aborted("the client was interrupted".into())),
                other => return Err(Iperf3Error::Codec(CodecError::BadState(i8::from_ne_bytes([other.byte()])))),
            },
            // The client never ended the test: tell it, as a stopping server does.
            _ = tokio::time::sleep_until(deadline) => {
                let _ = control.write_state(State::ServerTerminate).await;
                return Err(Iperf3Error::Timeout("the client to end the test"));
            }
            _ = shared.shutdown.cancelled() => {
                let _ = control.write_state(State::ServerTerminate).await;
                return Err(Iperf3Error::Aborted("the server is shutting down".into()));
            }
        }
    }
}

/// Answers UDP stream announcements: each gets its own socket on the port, connected to the
/// hello's source (its 5-tuple: the stream never goes to another port, and stops after the
/// port refuses it with ICMP unreachable a few times), and the "6789" reply from it — 4 bytes
/// for 4. Nothing in iperf3's UDP shows that the source port receives (docs/security.md says
/// what follows); a hello from a privileged port is not taken at all.
async fn udp_connects(socket: UdpSocket, local: SocketAddr, shared: Arc<Shared>) {
    let mut buf = [0u8; 2048];
    let mut arrivals = 0u64;
    loop {
        let (n, from) = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            r = socket.recv_from(&mut buf) => match r { Ok(x) => x, Err(_) => continue },
        };
        if n != 4 {
            continue; // stray data from an earlier test
        }
        let source = SocketAddr::new(from.ip().to_canonical(), from.port());
        if source.port() < LOWEST_HELLO_PORT {
            PRIVILEGED_HELLOS.warn(source, "a service's port, not a client's");
            continue;
        }
        // At most one UDP test per client address is pending (`enter_pending`); a source that
        // already has a stream is a repeated hello, not a new stream.
        let tx = {
            let mut pending = lock(&shared.pending);
            let Some(test) = pending
                .iter_mut()
                .find(|p| p.udp && p.client_ip == source.ip())
            else {
                continue;
            };
            if test.udp_sources.len() >= test.streams || test.udp_sources.contains(&source) {
                continue;
            }
            test.udp_sources.push(source);
            test.tx.clone()
        };
        match crate::server::data_listener::connected_udp_socket(local, from) {
            Ok(s) => {
                let _ = s.send(&UDP_REPLY);
                arrivals += 1;
                let _ = tx.try_send((arrivals, DataSocket::Udp(Arc::new(s))));
            }
            Err(e) => STREAM_ERRORS.warn(from, e),
        }
    }
}
