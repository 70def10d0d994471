//! The far end of a test (what `iperf3 -s` is): accept a spec within the caps, collect the data
//! streams, measure until the client says stop, report. A client that vanishes ends the test
//! within [`crate::session::channel::PEER_TIMEOUT`] and frees its slot. Every line a test logs
//! goes through a [`LogLimit`]: a client cycling short tests cannot flood the log. A test that
//! names its run (`open{group}`) is kept as part of that run (`far_groups`), not alone.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg, TestGroup};
use perfpeer_shared::report::{PeerRole, SideReport, StreamRole, TestResult, TestStatus};
use perfpeer_shared::spec::{EndCondition, TestSpec};
use socket2::SockRef;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::metrics::{Refusal, TestKind};
use super::state::{IncomingStream, ServerState};
use crate::admission::{LogLimit, Source};
use crate::engine::wire::{Cookie, cookie_to_hex, random_cookie};
use crate::engine::{DataSocket, StreamSetup, sockopt};
use crate::session::SessionError;
use crate::session::channel::ControlChannel;
use crate::session::measure::Measurement;
use crate::store::Recording;

/// Wait for all data streams after `accepted`.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait for `begin` after `ready`.
const BEGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait for the client's final report.
const CLIENT_FINAL_TIMEOUT: Duration = Duration::from_secs(5);
/// Tests begun (a line each, up to 10 per 10 s, then a count).
static TEST_BEGINS: LogLimit = LogLimit::with_burst("test begins", Duration::from_secs(10), 10);
/// Tests ended, as [`TEST_BEGINS`].
static TEST_ENDED: LogLimit = LogLimit::with_burst("test ended", Duration::from_secs(10), 10);
/// Tests whose data streams broke.
static STREAM_ERRORS: LogLimit =
    LogLimit::with_burst("data streams ended with errors", Duration::from_secs(10), 5);
/// Socket options a data stream refused (a client's congestion control, window, TOS).
static SOCKET_OPTIONS: LogLimit = LogLimit::new(
    "could not apply a socket option on a data stream",
    Duration::from_secs(10),
);

/// Grace past the test's own length before the far end stops it by itself.
pub(crate) const OVERRUN_GRACE: Duration = Duration::from_secs(10);

/// When a far end (ours, or a stock-tool server's) stops a test by itself, whatever its client
/// does: the test's own length (its time, or its byte count at its rate), capped by the peer's
/// longest test, plus a grace.
pub(crate) fn far_end_limit(spec: &TestSpec, max_duration: Duration) -> Duration {
    spec.expected_duration()
        .map_or(max_duration, |t| t.min(max_duration))
        + OVERRUN_GRACE
}

/// Refuses a test longer than the peer's longest: by time, or by its byte count at its rate.
pub(crate) fn check_duration(spec: &TestSpec, max_duration: Duration) -> Result<(), String> {
    match spec.expected_duration() {
        Some(t) if t > max_duration => Err(match spec.end {
            EndCondition::Bytes { .. } => format!(
                "this test's byte count takes about {:.0} s at its rate, and this peer accepts tests of at most {} s (its --max-duration): send fewer bytes or at a higher rate",
                t.as_secs_f64(),
                max_duration.as_secs()
            ),
            EndCondition::Time { .. } => format!(
                "this peer accepts tests of at most {} s (its --max-duration)",
                max_duration.as_secs()
            ),
        }),
        _ => Ok(()),
    }
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> SessionError {
    SessionError::Refused {
        code,
        message: message.into(),
    }
}

/// Checks `spec` against the peer's caps (and, for DCCP, this kernel's DCCP in the client's
/// address family: the data streams use the control connection's).
pub(crate) fn check_caps(
    spec: &TestSpec,
    state: &ServerState,
    client: SocketAddr,
) -> Result<(), SessionError> {
    spec.validate()
        .map_err(|e| refuse(ErrorCode::InvalidSpec, e.to_string()))?;
    let ipv6 = client.ip().to_canonical().is_ipv6();
    if spec.protocol == perfpeer_shared::spec::Protocol::Dccp
        && let Some(why) = super::dccp_listener::refusal(spec, ipv6)
    {
        return Err(refuse(ErrorCode::InvalidSpec, why));
    }
    let cfg = &state.config;
    check_duration(spec, cfg.max_duration).map_err(|why| refuse(ErrorCode::OverLimit, why))?;
    if let Some(cap) = cfg.max_bitrate {
        if spec.rr.is_some() {
            return Err(refuse(
                ErrorCode::OverLimit,
                format!(
                    "this peer caps every test at {cap} per direction (its --max-bitrate), and a request/response test has no rate to cap: run --rr against a peer without --max-bitrate"
                ),
            ));
        }
        // A video test's rate is its frames' mean (a frame is never above 4 × the mean).
        let asked = spec
            .bitrate
            .filter(|b| b.0 > 0)
            .or(spec.video.map(|v| v.mean));
        if asked.is_none_or(|b| b > cap) {
            return Err(refuse(
                ErrorCode::OverLimit,
                format!(
                    "this peer accepts at most {cap} per direction (its --max-bitrate): pass -b (or a lower --isochronous mean)"
                ),
            ));
        }
    }
    Ok(())
}

/// Serves one test for the client on `chan`, which has just sent `open{spec, group}`.
pub(crate) async fn serve(
    chan: &mut ControlChannel,
    spec: TestSpec,
    group: Option<TestGroup>,
    state: &Arc<ServerState>,
    client: SocketAddr,
) -> Result<(), SessionError> {
    check_caps(&spec, state, client).inspect_err(|e| {
        if e.code() == ErrorCode::OverLimit {
            state.metrics.refused(Refusal::Caps);
        }
    })?;
    let _slot = state.slots.clone().try_acquire_owned().map_err(|_| {
        state.metrics.refused(Refusal::Busy);
        refuse(
            ErrorCode::OverLimit,
            format!(
                "this peer is running its maximum of {} tests; try again shortly",
                state.config.max_tests
            ),
        )
    })?;
    let _place = state
        .far_tests
        .admit_without_shedding(client.ip())
        .map_err(|_| {
            state.metrics.refused(Refusal::Busy);
            refuse(
                ErrorCode::OverLimit,
                "this peer is running as many tests for your address as it runs for one; try again when one ends",
            )
        })?;
    let plan = spec.stream_plan();
    let _memory = state
        .memory
        .charge(memory_needed(&spec, &plan))
        .map_err(|e| {
            state.metrics.refused(Refusal::Caps);
            refuse(ErrorCode::OverLimit, e.to_string())
        })?;
    let cookie = random_cookie();
    let test_id = cookie_to_hex(&random_cookie())[..12].to_string();
    // Every log line of the test carries its id and client through this span.
    let span = tracing::info_span!("far_end_test", test_id = %test_id, %client);
    run_accepted(chan, spec, group, state, client, cookie, test_id)
        .instrument(span)
        .await
}

/// The accepted test (of the run `group`, if it names one), from its `accepted` to its `final`.
async fn run_accepted(
    chan: &mut ControlChannel,
    spec: TestSpec,
    group: Option<TestGroup>,
    state: &Arc<ServerState>,
    client: SocketAddr,
    cookie: Cookie,
    test_id: String,
) -> Result<(), SessionError> {
    // Read the clock as it is sent: the client takes the round trip around it.
    let accepted = || ServerMsg::Accepted {
        test_id: test_id.clone(),
        cookie: cookie_to_hex(&cookie),
        data_port: state.info.data_port,
        clock_us: spec.trip_times.then(crate::util::unix_us_now),
    };
    let setups = match spec.multicast {
        // A group's receiver: joined before it says yes (a join that fails is a refusal); no
        // data stream comes to the data port.
        Some(group) => {
            let setups = vec![join_group(group, client, &spec)?];
            chan.send(&accepted())?;
            setups
        }
        None => {
            let (pending, incoming) =
                state.expect_streams(cookie, spec.stream_plan().len(), client.ip());
            chan.send(&accepted())?;
            let setups = collect_streams(chan, incoming, &spec).await?;
            drop(pending);
            setups
        }
    };
    chan.send(&ServerMsg::Ready)?;
    match tokio::time::timeout(BEGIN_TIMEOUT, chan.recv::<ClientMsg>()).await {
        Ok(Ok(ClientMsg::Begin)) => {}
        Ok(Ok(other)) => {
            return Err(SessionError::Protocol(format!(
                "expected begin, got {other:?}"
            )));
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(SessionError::PeerLost("no begin after ready".into())),
    }
    let _running = state.track(&test_id, PeerRole::Server, client.to_string(), &spec, None);
    // Counted as failed if it ends without a result.
    let counted = state.metrics.test_started(TestKind::Served);
    let source = Source::of(client.ip());
    TEST_BEGINS.info(
        source,
        format_args!(
            "{} {}, {} streams",
            spec.protocol.word(),
            spec.direction.word(),
            spec.streams
        ),
    );
    let started_unix_ms = crate::util::unix_ms_now();
    let mut m = Measurement::start(PeerRole::Server, &spec, setups)?;
    let limit = far_end_limit(&spec, state.config.max_duration);
    // Part of a run (kept whole when the run ends), or kept alone.
    let member = group.as_ref().and_then(|g| {
        state
            .far_groups
            .join(state.keeper().as_ref(), g, client, &spec)
    });
    let mut rec = match member {
        Some(_) => None,
        None => state
            .store()
            .and_then(|s| Recording::begin_served(s, &test_id, client, &spec)),
    };
    let outcome = run_until_stop(chan, &mut m, &test_id, limit, state, &mut rec).await;
    let finished = m.finish(outcome.is_err()).await;
    outcome?;
    if !finished.stream_errors.is_empty() {
        STREAM_ERRORS.warn(source, finished.stream_errors.join("; "));
    }
    let status_of_streams = finished.status(None);
    let (tail, mut report) = (finished.tail, finished.report);
    if let Some(report) = tail {
        chan.send(&ServerMsg::Interval {
            test_id: test_id.clone(),
            role: PeerRole::Server,
            report,
        })?;
    }
    // The client sends its final report without waiting for ours: take it first, so the test
    // is kept (with both ends' figures) before our `final` announces where.
    let (remote, status) =
        match tokio::time::timeout(CLIENT_FINAL_TIMEOUT, chan.recv::<ClientMsg>()).await {
            Ok(Ok(ClientMsg::Final {
                report: theirs,
                clock_offset,
            })) => {
                // Our one-way figures rest on both clocks too: the client's estimate goes
                // beside them.
                if let Some(offset) = clock_offset.filter(|_| spec.trip_times) {
                    report.set_clock_offset(offset);
                }
                (Some(theirs), status_of_streams)
            }
            _ => (
                None,
                TestStatus::Partial {
                    reason: "the client sent no final report".into(),
                },
            ),
        };
    let how = if remote.is_some() {
        "complete"
    } else {
        "without the client's report"
    };
    TEST_ENDED.info(source, how);
    let summary = report.with_link_intervals_only();
    let result = TestResult {
        id: test_id,
        spec,
        started_unix_ms,
        server_addr: client_name(client, remote.as_ref()),
        local: report,
        remote,
        group_receivers: Vec::new(),
        working_load: None,
        status,
    };
    counted.finished(&result, &client.ip().to_canonical().to_string());
    let result_id = match (rec, member) {
        (Some(rec), _) => {
            let id = rec.id().to_string();
            rec.finish(&result).await;
            Some(id)
        }
        // The run's id once its last test ends (the run is kept first).
        (None, Some(member)) => member.end(&result).await,
        (None, None) => None,
    };
    chan.send(&ServerMsg::Final {
        report: summary,
        result_id,
        stream_errors: finished.stream_errors,
    })?;
    Ok(())
}

/// How a result this peer kept as the far end names its client: the host name the client
/// reported (at most 64 characters, control characters dropped) and its address, e.g.
/// `laptop (192.168.1.5)`; the address alone without a report. Not the control connection's
/// port: that is the client's ephemeral one, which names nothing.
fn client_name(client: SocketAddr, remote: Option<&SideReport>) -> String {
    let ip = client.ip().to_canonical();
    let name: String = remote
        .map(|r| r.host.hostname.trim())
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect();
    if name.is_empty() {
        ip.to_string()
    } else {
        format!("{name} ({ip})")
    }
}

/// The receiving stream of a multicast test for `client`: the group joined on the interface
/// that faces the client (for the client's address only if source-specific), the socket
/// connected to the client's sending port, so the kernel hands it that flow's datagrams and
/// no other sender's. It only receives: nothing goes back to the group or the client.
fn join_group(
    group: perfpeer_shared::multicast::MulticastSpec,
    client: SocketAddr,
    spec: &TestSpec,
) -> Result<StreamSetup, SessionError> {
    let refused = |why: String| refuse(ErrorCode::InvalidSpec, why);
    let sender = client.ip().to_canonical();
    if sender.is_ipv6() != group.group.is_ipv6() {
        return Err(refused(format!(
            "the group {} and your address {sender} are not one family: reach this peer over \
             the group's",
            group.group
        )));
    }
    if group.sender_port == 0 {
        return Err(refused(
            "the test does not say the port it sends from".into(),
        ));
    }
    let join = crate::multicast::Join {
        group: group.group,
        device: None,
        local: Some(crate::multicast::local_toward(sender).map_err(|e| {
            refused(format!(
                "no route back to {sender} to join the group on: {e}"
            ))
        })?),
        source: group.source_specific.then_some(sender),
    };
    let socket = crate::multicast::bind_and_join(&join, group.port)
        .and_then(|s| {
            s.set_nonblocking(false)?;
            s.connect(SocketAddr::new(sender, group.sender_port))?;
            Ok(s)
        })
        .map_err(|e| {
            refused(format!(
                "cannot receive {} here: {}",
                group.address(),
                crate::util::plain_error(&e)
            ))
        })?;
    let socket = DataSocket::Udp(Arc::new(socket));
    apply_server_options(&socket, spec);
    let (id, _) = spec.stream_plan()[0];
    Ok(StreamSetup {
        id,
        role: StreamRole::Receiver,
        socket,
    })
}

async fn collect_streams(
    chan: &mut ControlChannel,
    mut incoming: mpsc::Receiver<IncomingStream>,
    spec: &TestSpec,
) -> Result<Vec<StreamSetup>, SessionError> {
    let plan: HashMap<u32, bool> = spec.stream_plan().into_iter().collect();
    let mut got: HashMap<u32, DataSocket> = HashMap::new();
    let deadline = tokio::time::Instant::now() + STREAMS_TIMEOUT;
    while got.len() < plan.len() {
        tokio::select! {
            s = incoming.recv() => {
                let Some(s) = s else { break };
                if plan.contains_key(&s.id) && !got.contains_key(&s.id) {
                    apply_server_options(&s.socket, spec);
                    got.insert(s.id, s.socket);
                }
            }
            msg = chan.recv::<ClientMsg>() => {
                return Err(match msg {
                    Err(e) => e,
                    Ok(other) => SessionError::Protocol(format!("expected data streams, got {other:?}")),
                });
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(SessionError::Data(format!("only {} of {} data streams arrived", got.len(), plan.len())));
            }
        }
    }
    let mut setups: Vec<StreamSetup> = got
        .into_iter()
        .map(|(id, socket)| {
            let client_sends = plan[&id];
            StreamSetup {
                id,
                role: if client_sends {
                    StreamRole::Receiver
                } else {
                    StreamRole::Sender
                },
                socket,
            }
        })
        .collect();
    setups.sort_by_key(|s| s.id);
    Ok(setups)
}

/// Memory the far end's streams of `plan` (`(id, client_sends)`) take: the client's senders
/// are our receivers.
pub(crate) fn memory_needed(spec: &TestSpec, plan: &[(u32, bool)]) -> u64 {
    crate::engine::memory_needed(
        spec,
        plan.iter().map(|&(_, client_sends)| {
            if client_sends {
                StreamRole::Receiver
            } else {
                StreamRole::Sender
            }
        }),
    )
}

/// The server sets the per-test options after accept (MSS is the client's to set before connect).
/// Shared with the stock-tool servers, which accept data streams the same way.
pub(crate) fn apply_server_options(socket: &DataSocket, spec: &TestSpec) {
    let mut server_spec = spec.clone();
    server_spec.mss = None;
    let result = match socket {
        DataSocket::Tcp(s) => sockopt::apply(
            SockRef::from(&**s),
            &server_spec,
            s.local_addr().is_ok_and(|a| a.is_ipv6()),
        ),
        DataSocket::Udp(s) => sockopt::apply(
            SockRef::from(&**s),
            &server_spec,
            s.local_addr().is_ok_and(|a| a.is_ipv6()),
        ),
        DataSocket::Dccp(s) => sockopt::apply(
            s.sock_ref(),
            &server_spec,
            s.local_addr().is_ok_and(|a| a.is_ipv6()),
        ),
    };
    if let Err(e) = result {
        let peer = match socket {
            DataSocket::Tcp(s) => s.peer_addr().ok(),
            DataSocket::Udp(s) => s.peer_addr().ok(),
            DataSocket::Dccp(s) => s.peer_addr().ok(),
        };
        match peer {
            Some(peer) => SOCKET_OPTIONS.warn(Source::of(peer.ip()), e),
            None => SOCKET_OPTIONS.warn("a data stream", e),
        }
    }
}

async fn run_until_stop(
    chan: &mut ControlChannel,
    m: &mut Measurement,
    test_id: &str,
    limit: Duration,
    state: &ServerState,
    rec: &mut Option<Recording>,
) -> Result<(), SessionError> {
    let deadline = m.started() + limit;
    let mut poll = tokio::time::interval(Duration::from_millis(10));
    let mut told_senders_done = !m.engine().has_senders();
    loop {
        tokio::select! {
            report = m.next_interval() => {
                if let Some(rec) = rec.as_mut() {
                    rec.interval(PeerRole::Server, &report);
                }
                chan.send(&ServerMsg::Interval { test_id: test_id.to_string(), role: PeerRole::Server, report })?;
            }
            msg = chan.recv::<ClientMsg>() => match msg? {
                ClientMsg::Stop => {
                    // A boundary that passed with the stop is reported, not folded into the last.
                    if let Some(report) = m.take_due_interval() {
                        if let Some(rec) = rec.as_mut() {
                            rec.interval(PeerRole::Server, &report);
                        }
                        chan.send(&ServerMsg::Interval { test_id: test_id.to_string(), role: PeerRole::Server, report })?;
                    }
                    return Ok(());
                }
                other => return Err(SessionError::Protocol(format!("unexpected {other:?} during a test"))),
            },
            _ = poll.tick() => {
                if !told_senders_done && m.engine().senders_done() {
                    told_senders_done = true;
                    chan.send(&ServerMsg::SendersDone)?;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(SessionError::PeerLost("the client never stopped the test".into()));
            }
            _ = state.shutdown.cancelled() => {
                return Err(refuse(ErrorCode::Internal, "the peer is shutting down"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::report::HostInfo;

    #[test]
    fn a_client_is_named_by_its_host_name_and_address() {
        let client: SocketAddr = "[::ffff:192.168.1.5]:49348".parse().unwrap();
        assert_eq!(client_name(client, None), "192.168.1.5");
        let mut report = SideReport::empty(PeerRole::Client, HostInfo::default());
        report.host.hostname = " laptop\u{1b}[31m ".into();
        assert_eq!(
            client_name(client, Some(&report)),
            "laptop[31m (192.168.1.5)"
        );
        report.host.hostname = "x".repeat(1000);
        assert_eq!(
            client_name(client, Some(&report)),
            format!("{} (192.168.1.5)", "x".repeat(64))
        );
    }
}
