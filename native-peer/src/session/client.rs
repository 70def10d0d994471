//! The client end of a test: connect to a peer's `/ws`, ask it to be the far end, open the data
//! streams, measure, stop when the end condition is met, and combine both ends' reports.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{
    ApiError, ClientMsg, ErrorCode, MAX_CONTROL_MESSAGE, ServerMsg, TestGroup,
};
use perfpeer_shared::one_way::ClockOffset;
use perfpeer_shared::report::{IntervalReport, PeerRole, SideReport};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{self, Message, protocol::WebSocketConfig};

use super::SessionError;
use super::channel::{ControlChannel, Frame, WsMessage};
use super::data_connect;
use super::driver::{FarEnd, FarEvent, Ready};
use super::events::TestEvent;
use super::measure::Measurement;
use super::target::{Family, resolve};
use crate::engine::WireOptions;
use crate::engine::wire::cookie_from_hex;

/// How the client reaches the far peer.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Access token for the far peer (not needed to run a test against it).
    pub token: Option<String>,
    /// Limit for connecting the control and data connections.
    pub connect_timeout: Duration,
    /// `-4` / `-6`.
    pub family: Option<Family>,
    /// Local address for data streams (`-B`).
    pub bind: Option<IpAddr>,
    /// Network interface every connection of the test is bound to (`--bind-dev`).
    pub device: Option<String>,
    /// Local port of the first data stream, the next ones for further streams (iperf3's
    /// `--cport`, netperf's `-- -P`).
    pub data_port: Option<u16>,
    /// The run the test belongs to (a sweep, a latency run), told to a perfpeer far end so it
    /// keeps the run as one result; stock tools are not told.
    pub group: Option<TestGroup>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            token: None,
            connect_timeout: Duration::from_secs(5),
            family: None,
            data_port: None,
            bind: None,
            device: None,
            group: None,
        }
    }
}

/// Wait for the far peer's answer to `hello` and to `open` (it answers at once): a peer that
/// keeps the connection alive but never answers is not waited for forever.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait for the far end's streams and `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait for the far end's final report after `stop` (it drains its receivers first).
const FINAL_TIMEOUT: Duration = Duration::from_secs(15);
/// The far end's stream errors are shown up to this many bytes.
const MAX_FAR_ERRORS: usize = 400;

impl WsMessage for Message {
    fn text(s: String) -> Self {
        Message::text(s)
    }
    fn ping() -> Self {
        Message::Ping(Default::default())
    }
    fn classify(self) -> Option<Frame> {
        match self {
            Message::Text(t) => Some(Frame::Text(t.as_str().to_string())),
            Message::Ping(_) | Message::Pong(_) => Some(Frame::Alive),
            Message::Binary(_) | Message::Frame(_) => Some(Frame::Invalid("binary frame".into())),
            Message::Close(_) => None,
        }
    }
}

/// Opens a control channel to the peer at `server`.
pub(crate) async fn connect(
    server: SocketAddr,
    target: &str,
    bind: Option<IpAddr>,
    device: Option<&str>,
    timeout: Duration,
) -> Result<ControlChannel, SessionError> {
    connect_from(server, target, bind, device, timeout)
        .await
        .map(|(chan, _)| chan)
}

/// Opens a control channel to the peer at `server`, and says which local address it left from.
pub(crate) async fn connect_from(
    server: SocketAddr,
    target: &str,
    bind: Option<IpAddr>,
    device: Option<&str>,
    timeout: Duration,
) -> Result<(ControlChannel, SocketAddr), SessionError> {
    let unreachable = |reason: String| SessionError::Unreachable {
        target: target.to_string(),
        reason,
    };
    // The address it resolved to, where the target did not already say it.
    let at = if target == server.to_string() {
        String::new()
    } else {
        format!(" ({server})")
    };
    let tcp = tokio::time::timeout(timeout, connect_tcp(server, bind, device))
        .await
        .map_err(|_| {
            unreachable(format!(
                "no answer{at} within {} s: is the host up, and is a firewall in the way?",
                timeout.as_secs()
            ))
        })?
        .map_err(|e| {
            unreachable(match e.kind() {
                std::io::ErrorKind::ConnectionRefused => format!(
                    "nothing is listening there{at}: start `perfpeer serve` on that host, or give \
                     its control port (5210 unless it was started with another)"
                ),
                _ => format!("{}{at}", crate::util::plain_error(&e)),
            })
        })?;
    let _ = tcp.set_nodelay(true);
    let local = tcp
        .local_addr()
        .map_err(|e| unreachable(crate::util::plain_error(&e)))?;
    let url = format!("ws://{server}/ws");
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_CONTROL_MESSAGE))
        .max_frame_size(Some(MAX_CONTROL_MESSAGE));
    let (ws, _) = tokio::time::timeout(
        timeout,
        tokio_tungstenite::client_async_with_config(url, tcp, Some(config)),
    )
    .await
    .map_err(|_| {
        unreachable(format!(
            "it took the connection{at} but did not answer as a perfpeer peer: is this its \
             control port (5210 unless it was started with another)? Its data port (5211) takes \
             no control connections"
        ))
    })?
    .map_err(|e| match e {
        tungstenite::Error::Http(resp) if resp.status().as_u16() == 429 => {
            // The peer's own words (`{"error": …}`, fixed and short) say whose places are taken.
            let said = resp
                .body()
                .as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .and_then(|b| serde_json::from_str::<ApiError>(b).ok())
                .map(|e| e.error)
                .filter(|w| (1..=120).contains(&w.len()) && w.chars().all(|c| !c.is_control()));
            let words = said.as_deref().unwrap_or("too many connections");
            unreachable(format!(
                "the peer is busy{at} ({words}): try again in a moment"
            ))
        }
        tungstenite::Error::Http(resp) => {
            unreachable(format!("not a perfpeer peer (HTTP {}){at}", resp.status()))
        }
        other => unreachable(format!(
            "it did not answer as a perfpeer peer{at} ({}): is this its control port (5210 \
             unless it was started with another)? Its data port (5211) takes no control \
             connections",
            crate::util::plain_error(&other)
        )),
    })?;
    Ok((ControlChannel::spawn(ws), local))
}

/// A TCP connection to `server`, from `bind` if given: the far end takes data streams only from
/// the control connection's address, so both leave from the same one (as iperf3's -B does).
pub(crate) async fn connect_tcp(
    server: SocketAddr,
    bind: Option<IpAddr>,
    device: Option<&str>,
) -> std::io::Result<tokio::net::TcpStream> {
    let socket = if server.is_ipv6() {
        tokio::net::TcpSocket::new_v6()?
    } else {
        tokio::net::TcpSocket::new_v4()?
    };
    if let Some(dev) = device {
        crate::sys::bind_device(socket2::SockRef::from(&socket), dev)?;
    }
    if let Some(ip) = bind {
        socket
            .bind(SocketAddr::new(ip, 0))
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot bind to {ip}: {e}")))?;
    }
    socket.connect(server).await
}

/// Says hello and checks the version; returns whether the token was accepted.
pub(crate) async fn hello(
    chan: &mut ControlChannel,
    token: Option<String>,
) -> Result<bool, SessionError> {
    chan.send(&ClientMsg::Hello {
        protocol_version: PROTOCOL_VERSION,
        token,
    })?;
    match answer(chan, "hello").await? {
        ServerMsg::Welcome {
            protocol_version,
            authorized,
            ..
        } if protocol_version == PROTOCOL_VERSION => Ok(authorized),
        ServerMsg::Welcome {
            protocol_version, ..
        } => Err(SessionError::Refused {
            code: ErrorCode::VersionMismatch,
            message: format!(
                "peer speaks protocol {protocol_version}, we speak {PROTOCOL_VERSION}: use the same perfpeer version"
            ),
        }),
        other => Err(refusal_or_protocol(other)),
    }
}

/// Refuses a DCCP test this machine cannot run, naming the cause in one line.
fn check_local_dccp(spec: &TestSpec, ipv6: bool) -> Result<(), SessionError> {
    let support = crate::dccp::support();
    let ccid = spec.dccp.and_then(|d| d.ccid);
    let why = support
        .refusal(ipv6)
        .or_else(|| ccid.and_then(|c| support.ccid_refusal(c)));
    match why {
        Some(message) => Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message,
        }),
        None => Ok(()),
    }
}

/// The far peer's answer to `what`, within [`ANSWER_TIMEOUT`].
async fn answer(chan: &mut ControlChannel, what: &str) -> Result<ServerMsg, SessionError> {
    tokio::time::timeout(ANSWER_TIMEOUT, chan.recv::<ServerMsg>())
        .await
        .map_err(|_| {
            SessionError::PeerLost(format!(
                "no answer to {what} in {} s",
                ANSWER_TIMEOUT.as_secs()
            ))
        })?
}

fn refusal_or_protocol(msg: ServerMsg) -> SessionError {
    match msg {
        ServerMsg::Error { code, message } => SessionError::Refused { code, message },
        other => SessionError::Protocol(format!("unexpected message {other:?}")),
    }
}

/// Connects to the peer at `target`, asks it to be the far end of `spec` and opens the data
/// streams, up to the far end's `ready`.
pub(crate) async fn open(
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
) -> Result<(PerfpeerFarEnd, Ready), SessionError> {
    let server = resolve(target, opts.family).await?;
    if spec.protocol == perfpeer_shared::spec::Protocol::Dccp {
        check_local_dccp(spec, server.is_ipv6())?;
    }
    let mut chan = connect(
        server,
        target,
        opts.bind,
        opts.device.as_deref(),
        opts.connect_timeout,
    )
    .await?;
    hello(&mut chan, opts.token.clone()).await?;
    let (test_id, cookie, data_port, clock_offset) =
        ask_to_open(&mut chan, spec, opts.group.clone()).await?;
    let cookie = cookie_from_hex(&cookie)
        .ok_or_else(|| SessionError::Protocol("malformed cookie".into()))?;
    let data_addr = SocketAddr::new(server.ip(), data_port);
    let (spec_c, timeout) = (spec.clone(), opts.connect_timeout);
    let bind = data_connect::LocalEnd {
        ip: opts.bind,
        device: opts.device.clone(),
        first_port: opts.data_port,
    };
    let setups = crate::util::spawn_blocking(move || {
        data_connect::open_streams(&spec_c, data_addr, &bind, cookie, timeout)
    })
    .await
    .map_err(|e| SessionError::Internal(e.to_string()))?
    .map_err(|e| SessionError::Data(e.to_string()))?;
    match tokio::time::timeout(READY_TIMEOUT, chan.recv::<ServerMsg>()).await {
        Ok(Ok(ServerMsg::Ready)) => {}
        Ok(Ok(other)) => return Err(refusal_or_protocol(other)),
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(SessionError::Data(
                "the peer did not see all data streams (a firewall on the data port?)".into(),
            ));
        }
    }
    chan.send(&ClientMsg::Begin)?;
    let far = PerfpeerFarEnd::new(chan, server, spec.direction.server_sends(), clock_offset);
    let ready = Ready {
        test_id,
        server_addr: server.to_string(),
        setups,
        wire: WireOptions::default(),
        role: PeerRole::Client,
    };
    Ok((far, ready))
}

/// Asks the peer on `chan` (at `server`, said hello to) to receive the multicast test `spec`
/// (its sender port set), up to its `ready`: it has joined the group and counts the flow from
/// this end's address and port. Returns it as a far end, and its test id.
pub(crate) async fn open_receiver(
    mut chan: ControlChannel,
    server: SocketAddr,
    spec: &ValidSpec,
) -> Result<(PerfpeerFarEnd, String), SessionError> {
    let (test_id, _, _, clock_offset) = ask_to_open(&mut chan, spec, None).await?;
    match answer(&mut chan, "the group's join").await? {
        ServerMsg::Ready => {}
        other => return Err(refusal_or_protocol(other)),
    }
    Ok((
        PerfpeerFarEnd::new(chan, server, false, clock_offset),
        test_id,
    ))
}

/// Sends `open{spec, group}` and reads the far peer's `accepted`: its test id, cookie and data
/// port, and for a `trip_times` test the clocks' offset read around the exchange.
async fn ask_to_open(
    chan: &mut ControlChannel,
    spec: &ValidSpec,
    group: Option<TestGroup>,
) -> Result<(String, String, u16, Option<ClockOffset>), SessionError> {
    let opened_us = crate::util::unix_us_now();
    chan.send(&ClientMsg::Open {
        spec: TestSpec::clone(spec),
        group,
    })?;
    match answer(chan, "open").await? {
        ServerMsg::Accepted {
            test_id,
            cookie,
            data_port,
            clock_us,
        } => {
            let answered_us = crate::util::unix_us_now();
            let offset = clock_us
                .filter(|_| spec.trip_times)
                .map(|server_us| ClockOffset::from_round_trip(opened_us, server_us, answered_us));
            Ok((test_id, cookie, data_port, offset))
        }
        other => Err(refusal_or_protocol(other)),
    }
}

/// A perfpeer peer as the far end of a running test: its control channel (closed when this
/// is dropped).
pub(crate) struct PerfpeerFarEnd {
    chan: ControlChannel,
    /// The far peer's control address (for its result page link).
    server: SocketAddr,
    /// Whether the far end has senders (whose byte count's end it announces).
    server_sends: bool,
    remote_intervals: Vec<IntervalReport>,
    remote_senders_done: bool,
    /// What broke the far end's streams, from its finals.
    remote_stream_errors: Vec<String>,
    /// For a `trip_times` test, the clocks' offset read around `open`.
    clock_offset: Option<ClockOffset>,
}

impl FarEnd for PerfpeerFarEnd {
    async fn next_event(&mut self) -> FarEvent {
        match self.chan.recv::<ServerMsg>().await {
            Ok(ServerMsg::Interval { report, .. }) => {
                self.remote_intervals.push(report.clone());
                FarEvent::Interval(report)
            }
            Ok(ServerMsg::SendersDone) => {
                self.remote_senders_done = true;
                FarEvent::SendersDone
            }
            Ok(ServerMsg::Error { message, .. }) => {
                FarEvent::Ended(format!("the far peer stopped the test: {message}"))
            }
            Ok(other) => {
                FarEvent::Ended(format!("unexpected message from the far peer: {other:?}"))
            }
            Err(e) => FarEvent::Ended(e.to_string()),
        }
    }

    fn done(&mut self, m: &Measurement, spec: &TestSpec) -> bool {
        let local = !m.engine().has_senders() || m.engine().senders_done();
        let remote = !self.server_sends || self.remote_senders_done;
        spec.total_time().is_none() && local && remote
    }

    async fn end(&mut self, _m: &Measurement) -> Result<(), SessionError> {
        self.chan.send(&ClientMsg::Stop)
    }

    /// A perfpeer far end answers `stop` and `final` at once (and gives up on its own when the
    /// channel closes), so a cancel still collects its receiver's figures.
    fn finals_after_cancel(&self) -> bool {
        true
    }

    fn far_stream_errors(&self) -> Option<String> {
        (!self.remote_stream_errors.is_empty()).then(|| {
            let mut all = self.remote_stream_errors.join("; ");
            // The far end's words, shown to a user: a few lines at most.
            if all.len() > MAX_FAR_ERRORS {
                let cut = all.floor_char_boundary(MAX_FAR_ERRORS);
                all.truncate(cut);
                all.push('…');
            }
            all
        })
    }

    /// Sends our final report and waits for the far end's.
    async fn finals(
        &mut self,
        local: &mut SideReport,
        events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        if let Some(offset) = self.clock_offset {
            local.set_clock_offset(offset);
        }
        let remote = self.exchange_finals(local, events).await;
        remote.map(Some).map_err(|e| e.to_string())
    }
}

impl PerfpeerFarEnd {
    /// The far peer on `chan` (at `server`), its test open; `server_sends`: whether it has
    /// senders (whose end it announces).
    fn new(
        chan: ControlChannel,
        server: SocketAddr,
        server_sends: bool,
        clock_offset: Option<ClockOffset>,
    ) -> PerfpeerFarEnd {
        PerfpeerFarEnd {
            chan,
            server,
            server_sends,
            remote_intervals: Vec::new(),
            remote_senders_done: false,
            remote_stream_errors: Vec::new(),
            clock_offset,
        }
    }

    /// Tells it the test has begun (its measurement starts).
    pub(crate) fn begin(&mut self) -> Result<(), SessionError> {
        self.chan.send(&ClientMsg::Begin)
    }

    async fn exchange_finals(
        &mut self,
        local: &SideReport,
        events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<SideReport, SessionError> {
        let summary = local.with_link_intervals_only();
        self.chan.send(&ClientMsg::Final {
            report: summary,
            clock_offset: self.clock_offset,
        })?;
        let deadline = tokio::time::Instant::now() + FINAL_TIMEOUT;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.chan.recv::<ServerMsg>())
                .await
                .map_err(|_| {
                    SessionError::PeerLost("no final report from the far peer".into())
                })??;
            match msg {
                ServerMsg::Final {
                    mut report,
                    result_id,
                    stream_errors,
                } => {
                    self.remote_stream_errors = stream_errors;
                    report.intervals = std::mem::take(&mut self.remote_intervals);
                    if let Some(stored) =
                        result_id.and_then(|id| TestEvent::stored(self.server, id))
                    {
                        let _ = events.send(stored);
                    }
                    return Ok(report);
                }
                ServerMsg::Interval { report, .. } => {
                    self.remote_intervals.push(report.clone());
                    let _ = events.send(TestEvent::Interval {
                        role: PeerRole::Server,
                        report,
                    });
                }
                ServerMsg::SendersDone => {}
                other => return Err(refusal_or_protocol(other)),
            }
        }
    }
}
