//! What a `/ws` connection can do: say hello, then either be the far end of a test (open to
//! anyone within the caps) or, with the token, run a test (or a sweep, a latency run, a plan of
//! `--plans DIR`) from this peer to another, follow it again after a reconnect (`attach`),
//! cancel it, or list running tests and plans. Malformed frames get an error reply; the
//! connection stays up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use warp::ws::{Message, WebSocket};

use super::far_end;
use super::metrics::Refusal;
use super::run_log::{KEEP_FINISHED, RunLog};
use super::runs;
use super::state::ServerState;
use crate::admission::{Admitted, LogLimit};
use crate::session::SessionError;
use crate::session::channel::{ControlChannel, Frame, WsMessage};

/// Time a new connection has to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection stays open after its last reply, for the client to read it and close.
const LINGER: Duration = Duration::from_secs(2);
/// A connection that sends no request for this long (pings do not count) is closed; the
/// browser's page reconnects by itself when it needs the peer again.
const IDLE_LIMIT: Duration = Duration::from_secs(600);
/// Malformed frames tolerated on one connection before it is closed.
const MAX_BAD_FRAMES: u32 = 16;
/// Far-end tests refused or ended with an error (a refused `open`, a client gone mid-test):
/// a few lines every 10 s, then a count, however fast anonymous clients open them.
static FAR_END_ERRORS: LogLimit = LogLimit::with_burst(
    "far-end tests refused or ended with an error",
    Duration::from_secs(10),
    5,
);
/// Messages of a run's log sent at once when replaying it (the outgoing queue holds 256).
const REPLAY_CHUNK: usize = 64;
/// Pause between replay chunks, for the writer to drain the queue.
const REPLAY_PAUSE: Duration = Duration::from_millis(20);

impl WsMessage for Message {
    fn text(s: String) -> Self {
        Message::text(s)
    }
    fn ping() -> Self {
        Message::ping(Vec::new())
    }
    fn classify(self) -> Option<Frame> {
        if self.is_close() {
            None
        } else if self.is_ping() || self.is_pong() {
            Some(Frame::Alive)
        } else {
            match self.to_str() {
                Ok(t) => Some(Frame::Text(t.to_string())),
                Err(()) => Some(Frame::Invalid(
                    "binary frames are not control messages".into(),
                )),
            }
        }
    }
}

/// Serves one WebSocket connection until it closes, until its place is taken by another
/// source's (see [`crate::admission`]), or [`SHUTDOWN_GRACE`] after the peer starts shutting
/// down (a far-end test ends at once and keeps its result; a browser following a run sees
/// its end).
pub(crate) async fn on_socket(
    ws: WebSocket,
    state: Arc<ServerState>,
    remote: SocketAddr,
    place: Admitted,
) {
    let shutdown = state.shutdown.clone();
    let _open = state.metrics.websocket_opened();
    tokio::select! {
        _ = serve_socket(ws, &state, remote, &place) => {}
        _ = place.evicted().cancelled() => {
            tracing::debug!(%remote, "WebSocket shed for another source's");
        }
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {}
    }
}

/// How long a WebSocket stays open once the peer shuts down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// A socket's place is idle (the first kind shed when every place is taken) until it is the
/// token holder's (then never shed) or the control connection of a far-end test (busy).
async fn serve_socket(
    ws: WebSocket,
    state: &Arc<ServerState>,
    remote: SocketAddr,
    place: &Admitted,
) {
    let state = state.clone();
    let mut chan = ControlChannel::spawn(ws);
    let authorized =
        match tokio::time::timeout(HELLO_TIMEOUT, expect_hello(&mut chan, &state, remote)).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                reply_error(&chan, &e);
                return chan.linger(LINGER).await;
            }
            Err(_) => {
                reply_error(&chan, &SessionError::Protocol("no hello".into()));
                return chan.linger(LINGER).await;
            }
        };
    // The token holder's socket is never shed (on an `--open` peer everyone is authorized,
    // so nobody's is protected).
    if authorized && state.config.token.is_some() {
        place.protect();
    }
    let mut bad_frames = 0;
    loop {
        let Ok(received) = tokio::time::timeout(IDLE_LIMIT, chan.recv::<ClientMsg>()).await else {
            let _ = chan.send(&ServerMsg::error(
                ErrorCode::PeerLost,
                format!(
                    "closing: no request for {} minutes (reconnect to go on)",
                    IDLE_LIMIT.as_secs() / 60
                ),
            ));
            chan.linger(LINGER).await;
            break;
        };
        let msg = match received {
            Ok(m) => m,
            Err(SessionError::BadMessage(e)) => {
                bad_frames += 1;
                let _ = chan.send(&ServerMsg::error(
                    ErrorCode::BadMessage,
                    format!("bad control message: {e}"),
                ));
                if bad_frames >= MAX_BAD_FRAMES {
                    break;
                }
                continue;
            }
            Err(_) => break,
        };
        let result = match msg {
            ClientMsg::Open { spec, group } => {
                // One test per connection: the connection ends with it.
                let _busy = place.busy();
                let r = far_end::serve(&mut chan, spec, group, &state, remote).await;
                if let Err(e) = &r {
                    FAR_END_ERRORS.info(remote, e);
                    reply_error(&chan, e);
                }
                chan.linger(LINGER).await;
                break;
            }
            ClientMsg::Run { target, spec } if authorized => {
                start_run(&mut chan, &state, target, spec).await
            }
            ClientMsg::Sweep {
                target,
                spec,
                sizes,
            } if authorized => start_sweep(&mut chan, &state, target, spec, sizes).await,
            ClientMsg::Latency { target, request } if authorized => {
                start_latency(&mut chan, &state, target, request).await
            }
            ClientMsg::Attach { test_id } if authorized => {
                attach(&mut chan, &state, &test_id).await
            }
            ClientMsg::ListTests if authorized => chan.send(&ServerMsg::Tests {
                tests: state.running_tests(),
            }),
            #[cfg(feature = "plans")]
            ClientMsg::Plans if authorized => super::plan_runs::list(&chan, &state).await,
            #[cfg(feature = "plans")]
            ClientMsg::Plan { name, tags } if authorized => {
                start_plan(&mut chan, &state, name, tags).await
            }
            #[cfg(feature = "plans")]
            ClientMsg::Plans | ClientMsg::Plan { .. } => Err(SessionError::Refused {
                code: ErrorCode::Unauthorized,
                message:
                    "this needs the peer's access token (see the URL the peer printed at start)"
                        .into(),
            }),
            ClientMsg::Run { .. }
            | ClientMsg::Sweep { .. }
            | ClientMsg::Latency { .. }
            | ClientMsg::ListTests
            | ClientMsg::Cancel
            | ClientMsg::Attach { .. } => Err(SessionError::Refused {
                code: ErrorCode::Unauthorized,
                message:
                    "this needs the peer's access token (see the URL the peer printed at start)"
                        .into(),
            }),
            other => Err(SessionError::Protocol(format!(
                "{} is not expected now",
                message_name(&other)
            ))),
        };
        if let Err(e) = result {
            if matches!(
                e,
                SessionError::Refused {
                    code: ErrorCode::Unauthorized,
                    ..
                }
            ) {
                state.metrics.refused(Refusal::Token);
            }
            reply_error(&chan, &e);
            if matches!(e, SessionError::PeerLost(_)) {
                break;
            }
        }
    }
    chan.close();
}

/// The message's type as it is spelled on the wire (its `type`; the control module's test
/// checks each spelling against serde's).
fn message_name(msg: &ClientMsg) -> &'static str {
    match msg {
        ClientMsg::Hello { .. } => "hello",
        ClientMsg::Open { .. } => "open",
        ClientMsg::Begin => "begin",
        ClientMsg::Stop => "stop",
        ClientMsg::Final { .. } => "final",
        ClientMsg::Run { .. } => "run",
        ClientMsg::Sweep { .. } => "sweep",
        ClientMsg::Latency { .. } => "latency",
        #[cfg(feature = "plans")]
        ClientMsg::Plans => "plans",
        #[cfg(feature = "plans")]
        ClientMsg::Plan { .. } => "plan",
        ClientMsg::Cancel => "cancel",
        ClientMsg::ListTests => "list_tests",
        ClientMsg::Attach { .. } => "attach",
    }
}

async fn expect_hello(
    chan: &mut ControlChannel,
    state: &ServerState,
    remote: SocketAddr,
) -> Result<bool, SessionError> {
    match chan.recv::<ClientMsg>().await? {
        ClientMsg::Hello {
            protocol_version,
            token,
        } => {
            let authorized = state
                .authorizes(remote.ip(), token.as_deref())
                .map_err(|e| {
                    state.metrics.refused(Refusal::Token);
                    SessionError::Refused {
                        code: ErrorCode::Unauthorized,
                        message: e.to_string(),
                    }
                })?;
            chan.send(&ServerMsg::Welcome {
                protocol_version: PROTOCOL_VERSION,
                peer: state.peer_info(),
                authorized,
            })?;
            if protocol_version != PROTOCOL_VERSION {
                return Err(SessionError::Refused {
                    code: ErrorCode::VersionMismatch,
                    message: format!(
                        "this peer speaks protocol {PROTOCOL_VERSION}, you speak {protocol_version}"
                    ),
                });
            }
            if token.is_some() && !authorized {
                state.metrics.refused(Refusal::Token);
                chan.send(&ServerMsg::error(
                    ErrorCode::Unauthorized,
                    "wrong access token",
                ))?;
            }
            Ok(authorized)
        }
        other => Err(SessionError::Protocol(format!(
            "the first message must be hello, not {}",
            message_name(&other)
        ))),
    }
}

fn reply_error(chan: &ControlChannel, e: &SessionError) {
    let _ = chan.send(&ServerMsg::error(e.code(), e.to_string()));
}

/// Starts a test from this peer to `target` and follows it on `chan`. The test belongs to the
/// peer, not to this connection: if the browser drops, it runs on (see [`runs`]).
async fn start_run(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    target: String,
    spec: TestSpec,
) -> Result<(), SessionError> {
    let spec = ValidSpec::new(spec).map_err(|e| SessionError::Refused {
        code: ErrorCode::InvalidSpec,
        message: e.to_string(),
    })?;
    let slot = take_slot(state)?;
    let log = runs::start(state, slot, target, spec);
    follow(chan, state, &log).await
}

/// `sweep`: checks the request as a whole (each size is checked when its turn comes, and a
/// size that does not fit fails alone), then runs it like a `run` and follows it on `chan`.
async fn start_sweep(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    target: String,
    spec: TestSpec,
    sizes: Vec<u32>,
) -> Result<(), SessionError> {
    perfpeer_shared::sweep::check_request(&spec, &sizes).map_err(|message| {
        SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message,
        }
    })?;
    let slot = take_slot(state)?;
    let log = runs::start_sweep(state, slot, target, spec, sizes);
    follow(chan, state, &log).await
}

/// `latency`: checks the request (its phases, load and probe bounds), then runs it like a
/// `run` and follows it on `chan`.
async fn start_latency(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    target: String,
    request: perfpeer_shared::latency::LatencyRequest,
) -> Result<(), SessionError> {
    request.check().map_err(|e| SessionError::Refused {
        code: ErrorCode::InvalidSpec,
        message: e.to_string(),
    })?;
    let slot = take_slot(state)?;
    let log = runs::start_latency(state, slot, target, request);
    follow(chan, state, &log).await
}

/// `plan`: reads the listed plan, takes a slot, runs it in the background and follows it.
#[cfg(feature = "plans")]
async fn start_plan(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    name: String,
    tags: Vec<String>,
) -> Result<(), SessionError> {
    let ready = super::plan_runs::prepare(state, name, tags).await?;
    let slot = take_slot(state)?;
    let log = super::plan_runs::start(state, slot, ready);
    follow(chan, state, &log).await
}

/// One of the peer's test slots, or a refusal naming the cap.
fn take_slot(state: &Arc<ServerState>) -> Result<tokio::sync::OwnedSemaphorePermit, SessionError> {
    state.slots.clone().try_acquire_owned().map_err(|_| {
        state.metrics.refused(Refusal::Busy);
        SessionError::Refused {
            code: ErrorCode::OverLimit,
            message: format!(
                "this peer is running its maximum of {} tests",
                state.config.max_tests
            ),
        }
    })
}

/// `attach`: follows a run started earlier (typically by this browser before a network blip).
async fn attach(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    test_id: &str,
) -> Result<(), SessionError> {
    match state.runs.get(test_id) {
        Some(log) => follow(chan, state, &log).await,
        None => Err(SessionError::Refused {
            code: ErrorCode::UnknownTest,
            message: format!(
                "no test {test_id} on this peer: it ended more than {} s ago, was never run here, \
                 or the peer restarted",
                KEEP_FINISHED.as_secs()
            ),
        }),
    }
}

/// Sends the run's messages from the first on (a replay for a late follower), then the live ones,
/// until its `result` or `error`; meanwhile answers `cancel` and `list_tests`. Returns an error
/// only when this connection fails; the run itself goes on.
async fn follow(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    log: &Arc<RunLog>,
) -> Result<(), SessionError> {
    let _following = log.follow();
    let mut len = log.subscribe();
    let mut next = 0;
    loop {
        let (batch, done) = log.read(next, REPLAY_CHUNK);
        next += batch.len();
        for msg in &batch {
            chan.send(msg)?;
        }
        if done {
            return Ok(());
        }
        // More than one chunk behind: give the writer time to drain before the next chunk.
        let behind = next < *len.borrow_and_update();
        tokio::select! {
            _ = tokio::time::sleep(REPLAY_PAUSE), if behind => {}
            _ = len.changed(), if !behind => {}
            msg = chan.recv::<ClientMsg>() => match msg {
                Ok(ClientMsg::Cancel) => log.cancel(),
                Ok(ClientMsg::ListTests) => chan.send(&ServerMsg::Tests { tests: state.running_tests() })?,
                Ok(other) => reply_error(chan, &SessionError::Protocol(format!("{} is not expected during a test", message_name(&other)))),
                Err(SessionError::BadMessage(e)) => reply_error(chan, &SessionError::BadMessage(e)),
                // The browser went away; the run goes on for a grace period, for it to attach.
                Err(e) => return Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use perfpeer_shared::control::ClientMsg;
    use perfpeer_shared::report::{HostInfo, PeerRole, SideReport};
    use perfpeer_shared::spec::{Protocol, TestSpec};

    #[test]
    fn each_message_is_named_as_serde_spells_its_type() {
        let spec = TestSpec::new(Protocol::Tcp);
        let target = String::from("pc");
        for msg in [
            ClientMsg::Hello {
                protocol_version: 2,
                token: None,
            },
            ClientMsg::Open {
                spec: spec.clone(),
                group: None,
            },
            ClientMsg::Begin,
            ClientMsg::Stop,
            ClientMsg::Final {
                report: SideReport::empty(PeerRole::Client, HostInfo::default()),
                clock_offset: None,
            },
            ClientMsg::Run {
                target: target.clone(),
                spec: spec.clone(),
            },
            ClientMsg::Sweep {
                target: target.clone(),
                spec,
                sizes: vec![16],
            },
            ClientMsg::Latency {
                target: target.clone(),
                request: Default::default(),
            },
            #[cfg(feature = "plans")]
            ClientMsg::Plans,
            #[cfg(feature = "plans")]
            ClientMsg::Plan {
                name: target.clone(),
                tags: Vec::new(),
            },
            ClientMsg::Cancel,
            ClientMsg::ListTests,
            ClientMsg::Attach { test_id: target },
        ] {
            let json = serde_json::to_value(&msg).unwrap();
            assert_eq!(json["type"], super::message_name(&msg), "{json}");
        }
    }
}
