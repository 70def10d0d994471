//! The timeouts users rely on, each tested on tokio's paused clock in this process: real
//! loopback sockets and real peers, but a runtime clock that jumps to the next timer whenever
//! nothing is ready (and stands still while blocking work, such as joining the data plane's
//! threads, runs), so a 120 s rule takes milliseconds and is measured to the timer. Each case
//! checks both sides of its rule: not before its time, and not (much) after. Every socket here
//! sets TCP_NODELAY as the peers do: a reply held back 40 ms by Nagle's algorithm would let
//! the clock jump a whole ping interval meanwhile.
//!
//! The rules: a silent peer is gone after 5 s (both ends); a far peer that never answers
//! `hello` or `open` is given up after 10 s; `ready` is awaited 10 s, the far end's `final`
//! 15 s; a far end waits 10 s for the data streams and for `begin`, 5 s for the client's
//! `final`, and stops a test 10 s past its length; a `/ws` with no `hello` is closed after
//! 10 s; a browser's run nobody follows is cancelled after 30 s; a finished run stays
//! attachable for 120 s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use perfpeer::in_process::ServerState;
use perfpeer::in_process::SessionError;
use perfpeer_proto::wire::StreamHello;
use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::report::{TestResult, TestStatus};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_shared::units::BitRate;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

mod common;
use common::{DataPort, Script, bytes_spec, real_peer_with, run_as_client, scripted};

/// Awaits `fut`; its output and how far the clock moved meanwhile.
async fn timed<F: Future>(fut: F) -> (F::Output, Duration) {
    let start = Instant::now();
    let out = fut.await;
    (out, start.elapsed())
}

/// How often a condition is looked at.
const STEP: Duration = Duration::from_millis(50);

/// Asserts that `took` is at least `rule` and less than `rule` + `slack`.
#[track_caller]
fn assert_took(took: Duration, rule: Duration, slack: Duration) {
    assert!(
        took >= rule && took < rule + slack,
        "took {took:?}, the rule is {rule:?} (+ up to {slack:?})"
    );
}

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

/// Runs `spec` against `addr` as `perfpeer test` does; the outcome and how long it took on the
/// runtime's clock.
async fn client_run(
    addr: SocketAddr,
    spec: TestSpec,
) -> (Result<TestResult, SessionError>, Duration) {
    let ((outcome, _), took) = timed(run_as_client(addr, &spec)).await;
    (outcome, took)
}

/// Reads what the client sends (answering its pings) until it closes.
async fn listen_until_closed(script: &mut Script) {
    while script.recv().await.is_some() {}
}

// ---- the client's rules, against a far end that follows a script ----

#[tokio::test(start_paused = true)]
async fn a_silent_far_peer_is_lost_after_5_s() {
    // Takes the WebSocket, then neither reads (so no pong) nor writes.
    let addr = scripted(|script| async move {
        tokio::time::sleep(S(600)).await;
        drop(script);
    })
    .await;
    let (outcome, took) = client_run(addr, bytes_spec(1 << 20)).await;
    let e = outcome.unwrap_err();
    assert!(matches!(e, SessionError::PeerLost(_)), "{e}");
    assert!(e.to_string().contains("no word for 5 s"), "{e}");
    assert_took(took, S(5), MS(500));
}

#[tokio::test(start_paused = true)]
async fn a_far_peer_that_never_answers_hello_is_given_up_after_10_s() {
    // Alive (it answers pings) but says nothing.
    let addr = scripted(|mut script| async move { listen_until_closed(&mut script).await }).await;
    let (outcome, took) = client_run(addr, bytes_spec(1 << 20)).await;
    let e = outcome.unwrap_err();
    assert!(e.to_string().contains("no answer to hello in 10 s"), "{e}");
    assert_took(took, S(10), MS(500));
}

#[tokio::test(start_paused = true)]
async fn a_far_peer_that_never_answers_open_is_given_up_after_10_s() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let addr = scripted(|mut script| async move {
        script.welcome(PROTOCOL_VERSION).await;
        let _ = tx.send(Instant::now());
        listen_until_closed(&mut script).await;
    })
    .await;
    let (outcome, _) = client_run(addr, bytes_spec(1 << 20)).await;
    let welcomed = rx.await.unwrap();
    let e = outcome.unwrap_err();
    assert!(e.to_string().contains("no answer to open in 10 s"), "{e}");
    assert_took(welcomed.elapsed(), S(10), MS(500));
}

#[tokio::test(start_paused = true)]
async fn ready_is_awaited_10_s() {
    let data = DataPort::reading();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let addr = scripted(move |mut script| async move {
        script.welcome(PROTOCOL_VERSION).await;
        assert!(matches!(script.recv().await, Some(ClientMsg::Open { .. })));
        script
            .send(&ServerMsg::Accepted {
                test_id: "t1".into(),
                cookie: "00112233445566778899aabbccddeeff".into(),
                data_port: data.port,
                clock_us: None,
            })
            .await;
        let _ = tx.send(Instant::now());
        listen_until_closed(&mut script).await;
    })
    .await;
    let (outcome, _) = client_run(addr, bytes_spec(1 << 20)).await;
    let accepted = rx.await.unwrap();
    let e = outcome.unwrap_err();
    assert!(
        e.to_string().contains("did not see all data streams"),
        "{e}"
    );
    assert_took(accepted.elapsed(), S(10), MS(500));
}

#[tokio::test(start_paused = true)]
async fn the_far_peers_final_is_awaited_15_s_then_the_result_is_partial() {
    let data = DataPort::reading();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let addr = scripted(move |mut script| async move {
        script.welcome(PROTOCOL_VERSION).await;
        script.accept(&data).await;
        script.stop_and_final().await;
        let _ = tx.send(Instant::now());
        // Alive, but no final of its own.
        listen_until_closed(&mut script).await;
    })
    .await;
    let (outcome, _) = client_run(addr, bytes_spec(1 << 20)).await;
    let client_final = rx.await.unwrap();
    let result = outcome.expect("a result with what ran");
    match &result.status {
        TestStatus::Partial { reason } => {
            assert!(
                reason.contains("no final report from the far peer"),
                "{reason}"
            );
        }
        other => panic!("expected a partial result, got {other:?}"),
    }
    assert!(result.remote.is_none());
    assert_took(client_final.elapsed(), S(15), MS(500));
}

// ---- the far end's rules (`perfpeer serve`), against a client written here ----

/// A hand-driven client of a peer's `/ws`: it reads (and so answers pings) only when asked.
struct HandClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl HandClient {
    async fn connect(peer: SocketAddr) -> HandClient {
        // Without Nagle, as a peer's client: a message is not held back for an ACK.
        let (ws, _) =
            tokio_tungstenite::connect_async_with_config(format!("ws://{peer}/ws"), None, true)
                .await
                .expect("the peer takes a WebSocket");
        HandClient { ws }
    }

    /// Connects and says hello.
    async fn hello(peer: SocketAddr) -> HandClient {
        let mut c = HandClient::connect(peer).await;
        c.send(&ClientMsg::Hello {
            protocol_version: PROTOCOL_VERSION,
            token: None,
        })
        .await;
        assert!(matches!(c.recv().await, Some(ServerMsg::Welcome { .. })));
        c
    }

    async fn send(&mut self, msg: &ClientMsg) {
        let text = serde_json::to_string(msg).unwrap();
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// The next message; `None` once the peer closed.
    async fn recv(&mut self) -> Option<ServerMsg> {
        loop {
            match self.ws.next().await? {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// The next message that is not an interval or `senders_done`.
    async fn recv_news(&mut self) -> Option<ServerMsg> {
        loop {
            match self.recv().await? {
                ServerMsg::Interval { .. } | ServerMsg::SendersDone => {}
                other => return Some(other),
            }
        }
    }

    /// Opens `spec` (one TCP stream); the cookie and the data port.
    async fn open(&mut self, spec: TestSpec) -> ([u8; 16], u16) {
        self.send(&ClientMsg::Open { spec, group: None }).await;
        match self.recv().await {
            Some(ServerMsg::Accepted {
                cookie, data_port, ..
            }) => (
                perfpeer_proto::wire::cookie_from_hex(&cookie).unwrap(),
                data_port,
            ),
            other => panic!("expected accepted, got {other:?}"),
        }
    }

    /// Opens `spec`, connects its one TCP stream and waits for `ready`; the stream.
    async fn open_until_ready(&mut self, spec: TestSpec) -> TcpStream {
        let (cookie, data_port) = self.open(spec).await;
        let mut stream = TcpStream::connect(("127.0.0.1", data_port)).await.unwrap();
        let hello = StreamHello {
            stream_id: 1,
            cookie,
        };
        stream.write_all(&hello.encode()).await.unwrap();
        assert!(matches!(self.recv().await, Some(ServerMsg::Ready)));
        stream
    }
}

/// A one-stream TCP test of `secs` seconds, client to far end.
fn timed_tcp(secs: u64) -> TestSpec {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Time { duration: S(secs) };
    spec
}

/// Lets the clock move on until `state` has a free test slot (at most `max`); how long that
/// took.
async fn slot_freed(state: &ServerState, max: Duration) -> Duration {
    let start = Instant::now();
    while state.free_slots() == 0 {
        assert!(
            start.elapsed() < max,
            "the slot is still taken after {max:?}"
        );
        tokio::time::sleep(STEP).await;
    }
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_ws_without_hello_is_closed_after_10_s() {
    let (peer, _state) = real_peer_with(1).await;
    let mut c = HandClient::connect(peer).await;
    match timed(c.recv()).await {
        (Some(ServerMsg::Error { message, .. }), took) => {
            assert!(message.contains("no hello"), "{message}");
            assert_took(took, S(10), MS(500));
        }
        (other, _) => panic!("expected the no-hello error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_far_end_waits_10_s_for_the_data_streams_then_frees_the_slot() {
    let (peer, state) = real_peer_with(1).await;
    let mut c = HandClient::hello(peer).await;
    let _ = c.open(timed_tcp(5)).await;
    match timed(c.recv()).await {
        (Some(ServerMsg::Error { code, message }), took) => {
            assert_eq!(code, ErrorCode::DataPlane);
            assert!(
                message.contains("only 0 of 1 data streams arrived"),
                "{message}"
            );
            assert_took(took, S(10), MS(500));
        }
        (other, _) => panic!("expected the streams error, got {other:?}"),
    }
    slot_freed(&state, S(1)).await;
}

#[tokio::test(start_paused = true)]
async fn the_far_end_waits_10_s_for_begin_then_frees_the_slot() {
    let (peer, state) = real_peer_with(1).await;
    let mut c = HandClient::hello(peer).await;
    let _stream = c.open_until_ready(timed_tcp(5)).await;
    match timed(c.recv()).await {
        (Some(ServerMsg::Error { message, .. }), took) => {
            assert!(message.contains("no begin after ready"), "{message}");
            assert_took(took, S(10), MS(500));
        }
        (other, _) => panic!("expected the begin error, got {other:?}"),
    }
    slot_freed(&state, S(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_client_gone_silent_mid_test_loses_its_slot_after_5_s() {
    let (peer, state) = real_peer_with(1).await;
    let mut c = HandClient::hello(peer).await;
    let _stream = c.open_until_ready(timed_tcp(50)).await;
    c.send(&ClientMsg::Begin).await;
    // From here the client neither reads nor writes: no pongs.
    tokio::time::sleep(MS(4_900)).await;
    assert_eq!(state.free_slots(), 0, "freed before 5 s of silence");
    let took = slot_freed(&state, S(3)).await + MS(4_900);
    assert_took(took, S(5), MS(500));
    drop(c);
}

#[tokio::test(start_paused = true)]
async fn the_far_end_waits_5_s_for_the_clients_final() {
    let (peer, state) = real_peer_with(1).await;
    let mut c = HandClient::hello(peer).await;
    let mut stream = c.open_until_ready(timed_tcp(50)).await;
    c.send(&ClientMsg::Begin).await;
    // Read meanwhile (pongs), as a live client does.
    let _ = tokio::time::timeout(MS(1_500), c.recv_news()).await;
    c.send(&ClientMsg::Stop).await;
    stream.shutdown().await.unwrap();
    match timed(c.recv_news()).await {
        (Some(ServerMsg::Final { .. }), took) => assert_took(took, S(5), MS(500)),
        (other, _) => panic!("expected the far end's final, got {other:?}"),
    }
    slot_freed(&state, S(1)).await;
}

#[tokio::test(start_paused = true)]
async fn the_far_end_stops_a_test_10_s_past_its_length_whatever_the_client_sends() {
    let (peer, state) = real_peer_with(1).await;
    let mut c = HandClient::hello(peer).await;
    let mut stream = c.open_until_ready(timed_tcp(1)).await;
    c.send(&ClientMsg::Begin).await;
    // A byte every 100 ms keeps the stream alive; the client never says stop.
    let trickle = tokio::spawn(async move {
        while stream.write_all(b"x").await.is_ok() {
            tokio::time::sleep(MS(100)).await;
        }
    });
    match timed(c.recv_news()).await {
        (Some(ServerMsg::Error { message, .. }), took) => {
            assert!(message.contains("never stopped the test"), "{message}");
            assert_took(took, S(11), MS(500));
        }
        (other, _) => panic!("expected the overrun error, got {other:?}"),
    }
    slot_freed(&state, S(1)).await;
    trickle.abort();
}

// ---- a browser's runs on `perfpeer serve` ----

/// A slow UDP test (1 Mbit/s) of `secs` seconds: light on the machine, whatever the clock.
fn slow_udp(secs: u64) -> TestSpec {
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.bitrate = Some(BitRate(1_000_000));
    spec.end = EndCondition::Time { duration: S(secs) };
    spec
}

/// Asks `runner` to run `spec` against `far`; returns the browser's connection and the test id.
async fn start_run(runner: SocketAddr, far: SocketAddr, spec: TestSpec) -> (HandClient, String) {
    let mut browser = HandClient::hello(runner).await;
    browser
        .send(&ClientMsg::Run {
            target: far.to_string(),
            spec,
        })
        .await;
    match browser.recv_news().await {
        Some(ServerMsg::Started { test_id, .. }) => (browser, test_id),
        other => panic!("expected started, got {other:?}"),
    }
}

/// Whether `state` lists the test `id` as running.
fn is_running(state: &Arc<ServerState>, id: &str) -> bool {
    state.running_tests().iter().any(|t| t.test_id == id)
}

/// Attaches to run `id` on `peer`; the run's last message (its result or error).
async fn attach_for_end(peer: SocketAddr, id: &str) -> ServerMsg {
    let mut c = HandClient::hello(peer).await;
    c.send(&ClientMsg::Attach {
        test_id: id.to_string(),
    })
    .await;
    loop {
        match c.recv().await.expect("the peer answers attach") {
            ServerMsg::Started { .. } | ServerMsg::Interval { .. } | ServerMsg::Stored { .. } => {}
            last => return last,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_nobody_follows_is_cancelled_after_30_s_and_a_followed_one_is_not() {
    let (runner, state) = real_peer_with(4).await;
    let (far, _far_state) = real_peer_with(4).await;

    // Followed all along: runs its 45 s to the end.
    let (mut followed, followed_id) = start_run(runner, far, slow_udp(45)).await;
    // Left at once: cancelled 30 s later.
    let (left, left_id) = start_run(runner, far, slow_udp(45)).await;
    drop(left);
    let alone = Instant::now();
    let follower = tokio::spawn(async move {
        loop {
            match followed.recv().await {
                Some(ServerMsg::Result { result }) => return result,
                Some(ServerMsg::Error { message, .. }) => {
                    panic!("the followed run failed: {message}")
                }
                Some(_) => {}
                None => panic!("the followed run's connection closed"),
            }
        }
    });

    tokio::time::sleep(MS(29_900)).await;
    assert!(is_running(&state, &left_id), "cancelled before 30 s");
    while is_running(&state, &left_id) {
        assert!(
            alone.elapsed() < S(32),
            "still running after {:?}",
            alone.elapsed()
        );
        tokio::time::sleep(STEP).await;
    }
    // Checked every second: cancelled at the first check 30 s after its follower left.
    assert_took(alone.elapsed(), S(30), MS(1_000));
    assert!(
        is_running(&state, &followed_id),
        "the followed run was cancelled too"
    );
    match attach_for_end(runner, &left_id).await {
        ServerMsg::Result { result } => assert_eq!(result.status, TestStatus::Cancelled),
        other => panic!("expected the cancelled run's result, got {other:?}"),
    }

    let result = follower.await.unwrap();
    assert_eq!(result.status, TestStatus::Complete, "{:?}", result.status);
    assert!(alone.elapsed() >= S(44), "the followed run ended early");
}

#[tokio::test(start_paused = true)]
async fn a_finished_run_stays_attachable_for_120_s() {
    let (runner, _state) = real_peer_with(4).await;
    let (far, _far_state) = real_peer_with(4).await;
    let (mut browser, id) = start_run(runner, far, bytes_spec(1 << 20)).await;
    loop {
        match browser.recv().await.expect("the run's result") {
            ServerMsg::Result { .. } => break,
            ServerMsg::Error { message, .. } => panic!("the run failed: {message}"),
            _ => {}
        }
    }
    let ended = Instant::now();
    drop(browser);
    tokio::time::sleep(S(119)).await;
    assert!(matches!(
        attach_for_end(runner, &id).await,
        ServerMsg::Result { .. }
    ));
    tokio::time::sleep_until(ended + S(121)).await;
    match attach_for_end(runner, &id).await {
        ServerMsg::Error { code, .. } => assert_eq!(code, ErrorCode::UnknownTest),
        other => panic!("expected unknown test after 120 s, got {other:?}"),
    }
}
