//! What a `/ws` connection can do: say hello, then either be the far end of a test (open to
//! anyone within the caps) or, with the token, run a test from this peer to another, cancel it,
//! or list running tests. Malformed frames get an error reply; the connection stays up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::TestSpec;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use warp::ws::{Message, WebSocket};

use super::state::ServerState;
use crate::session::SessionError;
use crate::session::channel::{ControlChannel, Frame, WsMessage};
use crate::session::client::{self, ClientOptions, TestEvent};
use crate::session::far_end;

/// Time a new connection has to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection stays open after its last reply, for the client to read it and close.
const LINGER: Duration = Duration::from_secs(2);
/// Malformed frames tolerated on one connection before it is closed.
const MAX_BAD_FRAMES: u32 = 16;

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

/// Serves one WebSocket connection until it closes.
pub async fn on_socket(ws: WebSocket, state: Arc<ServerState>, remote: SocketAddr) {
    let mut chan = ControlChannel::spawn(ws);
    let authorized =
        match tokio::time::timeout(HELLO_TIMEOUT, expect_hello(&mut chan, &state)).await {
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
    let mut bad_frames = 0;
    loop {
        let msg = match chan.recv::<ClientMsg>().await {
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
            ClientMsg::Open { spec } => {
                // One test per connection: the connection ends with it.
                let r = far_end::serve(&mut chan, spec, &state, remote).await;
                if let Err(e) = &r {
                    tracing::info!(%remote, error = %e, "far-end test ended with an error");
                    reply_error(&chan, e);
                }
                chan.linger(LINGER).await;
                break;
            }
            ClientMsg::Run { target, spec } if authorized => {
                run_from_here(&mut chan, &state, target, spec).await
            }
            ClientMsg::ListTests if authorized => chan.send(&ServerMsg::Tests {
                tests: state.running_tests(),
            }),
            ClientMsg::Run { .. } | ClientMsg::ListTests | ClientMsg::Cancel => {
                Err(SessionError::Refused {
                    code: ErrorCode::Unauthorized,
                    message:
                        "this needs the peer's access token (see the URL the peer printed at start)"
                            .into(),
                })
            }
            other => Err(SessionError::Protocol(format!(
                "{} is not expected now",
                message_name(&other)
            ))),
        };
        if let Err(e) = result {
            reply_error(&chan, &e);
            if matches!(e, SessionError::PeerLost(_)) {
                break;
            }
        }
    }
    chan.close();
}

fn message_name(msg: &ClientMsg) -> String {
    serde_json::to_value(msg)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "message".into())
}

async fn expect_hello(
    chan: &mut ControlChannel,
    state: &ServerState,
) -> Result<bool, SessionError> {
    match chan.recv::<ClientMsg>().await? {
        ClientMsg::Hello {
            protocol_version,
            token,
        } => {
            let authorized = state.authorizes(token.as_deref());
            chan.send(&ServerMsg::Welcome {
                protocol_version: PROTOCOL_VERSION,
                peer: state.info.clone(),
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

/// Runs a test from this peer to `target`, streaming its events to the browser on `chan`.
async fn run_from_here(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    target: String,
    spec: TestSpec,
) -> Result<(), SessionError> {
    spec.validate().map_err(|e| SessionError::Refused {
        code: ErrorCode::InvalidSpec,
        message: e.to_string(),
    })?;
    let _slot = state
        .slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| SessionError::Refused {
            code: ErrorCode::OverLimit,
            message: format!(
                "this peer is running its maximum of {} tests",
                state.config.max_tests
            ),
        })?;
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let test = {
        let (target, spec, cancel) = (target.clone(), spec.clone(), cancel.clone());
        tokio::spawn(async move {
            client::run_test(&target, &spec, &ClientOptions::default(), events_tx, cancel).await
        })
    };
    let mut _running = None;
    let mut test_id = String::new();
    let mut events_open = true;
    let mut test = std::pin::pin!(test);
    loop {
        tokio::select! {
            joined = &mut test => {
                // Events sent just before the end are still queued: forward them first.
                while let Ok(TestEvent::Interval { role, report }) = events.try_recv() {
                    chan.send(&ServerMsg::Interval { test_id: test_id.clone(), role, report })?;
                }
                let result = joined.map_err(|e| SessionError::Internal(e.to_string()))??;
                return chan.send(&ServerMsg::Result { result });
            }
            ev = events.recv(), if events_open => match ev {
                Some(TestEvent::Started { test_id: id, .. }) => {
                    _running = Some(state.track(&id, PeerRole::Client, target.clone(), &spec));
                    test_id = id.clone();
                    chan.send(&ServerMsg::Started { test_id: id, target: target.clone(), spec: spec.clone() })?;
                }
                Some(TestEvent::Interval { role, report }) => {
                    chan.send(&ServerMsg::Interval { test_id: test_id.clone(), role, report })?;
                }
                None => events_open = false,
            },
            msg = chan.recv::<ClientMsg>() => match msg {
                Ok(ClientMsg::Cancel) => cancel.cancel(),
                Ok(ClientMsg::ListTests) => chan.send(&ServerMsg::Tests { tests: state.running_tests() })?,
                Ok(other) => reply_error(chan, &SessionError::Protocol(format!("{} is not expected during a test", message_name(&other)))),
                Err(SessionError::BadMessage(e)) => reply_error(chan, &SessionError::BadMessage(e)),
                Err(e) => {
                    // The browser went away: stop the test, it has no one to report to.
                    cancel.cancel();
                    return Err(e);
                }
            },
        }
    }
}
