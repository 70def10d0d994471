//! A test between two other peers, followed from here (third-party mode, as the browser does):
//! ask peer A over its `/ws` to `run` a test against B, relay A's live messages as the events
//! a local run gives, and end with A's result. Nothing is measured in this process; A keeps
//! the result and says where (`stored`).

use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::SessionError;
use super::client::{ClientOptions, connect, hello};
use super::events::TestEvent;
use super::target::resolve;

/// Asks the peer at `from` (its control port; `opts.token` is its token) to run `spec` against
/// `target`, and follows it to its result. `cancel` asks `from` to cancel the test; the result
/// then comes as cancelled with the figures so far.
pub(crate) async fn run(
    from: &str,
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    let server = resolve(from, opts.family).await?;
    let mut chan = connect(
        server,
        from,
        None,
        opts.device.as_deref(),
        opts.connect_timeout,
    )
    .await?;
    hello(&mut chan, opts.token.clone()).await?;
    chan.send(&ClientMsg::Run {
        target: target.to_string(),
        spec: TestSpec::clone(spec),
    })?;
    let mut cancel_sent = false;
    loop {
        let msg = tokio::select! {
            msg = chan.recv::<ServerMsg>() => msg?,
            () = cancel.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                chan.send(&ClientMsg::Cancel)?;
                continue;
            }
        };
        let event = match msg {
            ServerMsg::Started {
                test_id, target, ..
            } => TestEvent::Started {
                test_id,
                server_addr: target,
                // The sockets are the driving peer's: its result lists them.
                sockets: Vec::new(),
            },
            ServerMsg::Interval { role, report, .. } => TestEvent::Interval { role, report },
            ServerMsg::Stored { result_id, .. } => match TestEvent::stored(server, result_id) {
                Some(stored) => stored,
                None => continue,
            },
            ServerMsg::Result { result } => return Ok(result),
            ServerMsg::Error { code, message } => {
                let message = if code == ErrorCode::Unauthorized {
                    format!(
                        "{from} runs tests for its token holder only: give its token with --token \
                         (it printed it at start)"
                    )
                } else {
                    message
                };
                return Err(SessionError::Refused { code, message });
            }
            // The list of running tests, and anything a newer peer adds: not this run's.
            _ => continue,
        };
        let _ = events.send(event);
    }
}
