//! The client session in-process, over real loopback sockets: a far end that follows a script
//! (a WebSocket server written here, answering as a perfpeer peer would, or as a broken one
//! would) and a data port that takes the streams, or the real far end (`perfpeer serve`'s
//! server, started in this process). Each case runs in milliseconds: handshake refusals, a far
//! end that vanishes, the finals exchange, and what stream errors make of a result.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use perfpeer::in_process::SessionError;
use perfpeer::in_process::TestEvent;
use perfpeer::in_process::{ClientOptions, run_test};
use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::report::{
    IntervalReport, PeerRole, SideReport, StreamRole, TestResult, TestStatus,
};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec, ValidSpec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod common;
use common::{DataPort, bytes_spec, real_peer, run_as_client, scripted};

/// Runs `spec` against `addr`; the outcome, every event, and how long it took.
async fn run(
    addr: SocketAddr,
    spec: &TestSpec,
) -> (Result<TestResult, SessionError>, Vec<TestEvent>, Duration) {
    let start = Instant::now();
    let (outcome, events) =
        tokio::time::timeout(Duration::from_secs(20), run_as_client(addr, spec))
            .await
            .expect("the client ends by itself");
    (outcome, events, start.elapsed())
}

fn interval(start_s: u64) -> IntervalReport {
    IntervalReport {
        start: Duration::from_secs(start_s),
        end: Duration::from_secs(start_s + 1),
        omitted: false,
        streams: Vec::new(),
        wifi: None,
    }
}

fn partial_reason(result: &TestResult) -> &str {
    match &result.status {
        TestStatus::Partial { reason } => reason,
        other => panic!("expected a partial result, not {other:?}: {result:?}"),
    }
}

#[tokio::test]
async fn a_peer_of_another_protocol_version_is_refused_by_name() {
    let addr = scripted(|mut s| async move {
        s.welcome(PROTOCOL_VERSION + 1).await;
        let _ = s.recv().await;
    })
    .await;
    let (outcome, events, _) = run(addr, &bytes_spec(1 << 20)).await;
    match outcome {
        Err(SessionError::Refused { code, message }) => {
            assert_eq!(code, ErrorCode::VersionMismatch);
            assert!(message.contains("same perfpeer version"), "{message}");
        }
        other => panic!("expected a version refusal, got {other:?}"),
    }
    assert!(events.is_empty(), "nothing started: {events:?}");
}

#[tokio::test]
async fn a_refused_open_is_the_far_ends_words() {
    let addr = scripted(|mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        assert!(matches!(s.recv().await, Some(ClientMsg::Open { .. })));
        s.send(&ServerMsg::error(
            ErrorCode::OverLimit,
            "this peer is running its maximum of 1 tests",
        ))
        .await;
        let _ = s.recv().await;
    })
    .await;
    let (outcome, _, _) = run(addr, &bytes_spec(1 << 20)).await;
    match outcome {
        Err(e @ SessionError::Refused { .. }) => {
            assert_eq!(e.code(), ErrorCode::OverLimit);
            assert_eq!(e.to_string(), "this peer is running its maximum of 1 tests");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn something_that_is_not_a_peer_is_unreachable_with_its_http_status() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 2048];
        let _ = tcp.read(&mut buf).await;
        let _ = tcp
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            .await;
    });
    let (outcome, _, took) = run(addr, &bytes_spec(1 << 20)).await;
    let err = outcome.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unreachable);
    assert!(
        err.to_string().contains("not a perfpeer peer (HTTP 404"),
        "{err}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn a_far_end_that_vanishes_mid_test_leaves_a_partial_result_at_once() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.send(&ServerMsg::Interval {
            test_id: "t1".into(),
            role: PeerRole::Server,
            report: interval(0),
        })
        .await;
        // Gone: the connection drops with the script.
    })
    .await;
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(30),
    };
    spec.bitrate = Some(perfpeer_shared::units::BitRate(10_000_000));
    let (outcome, events, took) = run(addr, &spec).await;
    let result = outcome.expect("a result, partial");
    assert!(
        took < Duration::from_secs(5),
        "noticed at once, not at 30 s: {took:?}"
    );
    assert!(result.remote.is_none());
    let reason = partial_reason(&result);
    assert!(
        reason.contains("went away") || reason.contains("closed"),
        "{reason}"
    );
    assert!(matches!(events.first(), Some(TestEvent::Started { test_id, .. }) if test_id == "t1"));
    assert!(
        events.iter().any(|e| matches!(
            e,
            TestEvent::Interval {
                role: PeerRole::Server,
                ..
            }
        )),
        "the far end's interval was passed on: {events:?}"
    );
}

#[tokio::test]
async fn finals_are_exchanged_and_the_far_ends_intervals_joined_to_its_report() {
    let data = DataPort::reading();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        for start in 0..2 {
            s.send(&ServerMsg::Interval {
                test_id: "t1".into(),
                role: PeerRole::Server,
                report: interval(start),
            })
            .await;
        }
        let client_final = s.stop_and_final().await;
        let _ = seen_tx.send(client_final);
        let mut report = SideReport::empty(PeerRole::Server, Default::default());
        report.intervals.push(interval(9)); // must be replaced by the live ones
        s.send(&ServerMsg::Final {
            report,
            result_id: Some("00ff".into()),
            stream_errors: Vec::new(),
        })
        .await;
        let _ = s.recv().await;
    })
    .await;
    let (outcome, events, took) = run(addr, &bytes_spec(1 << 20)).await;
    let result = outcome.unwrap();
    assert_eq!(result.status, TestStatus::Complete, "{:?}", result.status);
    assert!(took < Duration::from_secs(5), "{took:?}");
    let client_final = seen_rx.recv().await.unwrap();
    assert!(
        client_final.intervals.is_empty(),
        "the final travels without intervals"
    );
    assert_eq!(client_final.streams[0].role, StreamRole::Sender);
    assert_eq!(client_final.streams[0].bytes, 1 << 20);
    assert_eq!(result.local.streams[0].bytes, 1 << 20);
    let remote = result.remote.expect("the far end's report");
    let starts: Vec<u64> = remote.intervals.iter().map(|i| i.start.as_secs()).collect();
    assert_eq!(starts, [0, 1], "the live intervals, not the final's");
    assert!(
        events.iter().any(
            |e| matches!(e, TestEvent::Stored { url, id } if url == &format!("http://{addr}/r/00ff") && id == "00ff")
        ),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_result_id_that_is_not_hex_makes_no_link() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.stop_and_final().await;
        s.final_then_close(Some("../../evil")).await;
    })
    .await;
    let (outcome, events, _) = run(addr, &bytes_spec(1 << 16)).await;
    assert_eq!(outcome.unwrap().status, TestStatus::Complete);
    assert!(
        !events.iter().any(|e| matches!(e, TestEvent::Stored { .. })),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_far_end_that_stops_the_test_is_a_partial_result_with_its_words() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.send(&ServerMsg::error(
            ErrorCode::OverLimit,
            "test ran past its deadline",
        ))
        .await;
        let _ = s.recv().await;
    })
    .await;
    let mut spec = bytes_spec(u64::MAX / 4);
    spec.bitrate = Some(perfpeer_shared::units::BitRate(1_000_000));
    let (outcome, _, took) = run(addr, &spec).await;
    let result = outcome.unwrap();
    assert_eq!(
        partial_reason(&result),
        "the far peer stopped the test: test ran past its deadline"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A 30 s TCP test against `addr`, cancelled after 300 ms; how long it took to end.
async fn cancelled_after_300_ms(addr: SocketAddr) -> (TestResult, Duration) {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(30),
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    });
    let spec = ValidSpec::new(spec).unwrap();
    let started = Instant::now();
    let result = run_test(
        &addr.to_string(),
        &spec,
        &ClientOptions::default(),
        tx,
        cancel,
    )
    .await
    .unwrap();
    (result, started.elapsed())
}

#[tokio::test]
async fn a_cancel_ends_the_test_as_cancelled_with_the_figures_so_far() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        let _ = s.recv().await;
    })
    .await;
    let (result, _) = cancelled_after_300_ms(addr).await;
    assert_eq!(result.status, TestStatus::Cancelled);
    assert_eq!(result.status.ended_early(), Some("cancelled"));
    assert!(
        result.local.streams[0].bytes > 0,
        "the figures so far are kept"
    );
    assert!(
        result.remote.is_none(),
        "a far end that closes instead of answering gives no finals"
    );
}

/// A cancel ends the test as its end would: `stop`, then the far end's `final`, so the result
/// keeps the receiver's figures, and stays "cancelled".
#[tokio::test]
async fn a_cancelled_test_keeps_the_far_ends_finals() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.stop_and_final().await;
        s.final_then_close(Some("0123abcd")).await;
    })
    .await;
    let (result, took) = cancelled_after_300_ms(addr).await;
    assert_eq!(result.status, TestStatus::Cancelled);
    let remote = result.remote.expect("the far end's finals after a cancel");
    assert_eq!(remote.role, PeerRole::Server);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn a_far_end_that_closes_instead_of_its_final_makes_the_result_partial() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.stop_and_final().await;
        // Closes without a final.
    })
    .await;
    let (outcome, _, took) = run(addr, &bytes_spec(1 << 16)).await;
    let result = outcome.unwrap();
    assert!(result.remote.is_none());
    let reason = partial_reason(&result);
    assert!(
        reason.contains("went away") || reason.contains("closed"),
        "{reason}"
    );
    assert!(
        took < Duration::from_secs(5),
        "not the 15 s final timeout: {took:?}"
    );
}

#[tokio::test]
async fn a_broken_stream_makes_a_finished_test_partial_and_names_the_stream() {
    let data = DataPort::resetting();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.stop_and_final().await;
        s.final_then_close(None).await;
    })
    .await;
    let (outcome, _, took) = run(addr, &bytes_spec(1 << 30)).await;
    let result = outcome.unwrap();
    assert!(result.remote.is_some(), "the finals were exchanged");
    let reason = partial_reason(&result);
    assert!(reason.starts_with("stream 1: "), "{reason}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn a_far_end_whose_streams_broke_makes_the_result_partial_with_its_words() {
    let data = DataPort::reading();
    let addr = scripted(move |mut s| async move {
        s.welcome(PROTOCOL_VERSION).await;
        s.accept(&data).await;
        s.stop_and_final().await;
        let long = format!("stream 1: cannot receive {}", "x".repeat(2000));
        s.final_with_errors_then_close(None, vec![long]).await;
    })
    .await;
    let (outcome, _, _) = run(addr, &bytes_spec(1 << 16)).await;
    let result = outcome.unwrap();
    assert!(result.remote.is_some(), "its figures are kept");
    let reason = partial_reason(&result);
    assert!(
        reason.starts_with("the far end's stream 1: cannot receive"),
        "{reason}"
    );
    assert!(reason.len() < 500, "cut to a few lines: {}", reason.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_the_real_far_end_both_ends_count_the_same_bytes() {
    let (addr, shutdown) = real_peer().await;
    for direction in [
        perfpeer_shared::spec::Direction::Normal,
        perfpeer_shared::spec::Direction::Reverse,
    ] {
        let mut spec = bytes_spec(4 << 20);
        spec.direction = direction;
        let (outcome, _, took) = run(addr, &spec).await;
        let result = outcome.unwrap();
        assert_eq!(result.status, TestStatus::Complete, "{direction:?}");
        let remote = result.remote.as_ref().expect("the far end's report");
        let flows = result.flows();
        assert_eq!(flows.len(), 1);
        assert_eq!(
            result.local.streams[0].bytes, remote.streams[0].bytes,
            "{direction:?}"
        );
        assert_eq!(result.local.streams[0].bytes, 4 << 20, "{direction:?}");
        assert!(took < Duration::from_secs(5), "{direction:?}: {took:?}");
    }
    // A test the real far end must refuse: longer than its --max-duration (60 s here).
    let mut spec = bytes_spec(1 << 20);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(120),
    };
    let (outcome, _, _) = run(addr, &spec).await;
    let refused = outcome.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::OverLimit, "{refused}");
    shutdown.cancel();
}
