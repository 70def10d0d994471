use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::report::{PeerRole, TestStatus};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_tests::{Peer, TOKEN};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(peer: &Peer) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", peer.control))
        .await
        .unwrap();
    ws
}

async fn send(ws: &mut Ws, msg: &ClientMsg) {
    ws.send(Message::text(msg.to_json())).await.unwrap();
}

async fn send_raw(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text.to_string())).await.unwrap();
}

/// Next control message, skipping pings; panics after 20 s.
async fn recv(ws: &mut Ws) -> ServerMsg {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("no message in 20 s");
        match msg.expect("connection closed").expect("WebSocket error") {
            Message::Text(t) => return ServerMsg::parse(t.as_str()).expect("valid server message"),
            Message::Close(_) => panic!("closed"),
            _ => continue,
        }
    }
}

async fn hello(ws: &mut Ws, token: Option<&str>) -> bool {
    send(
        ws,
        &ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: token.map(str::to_string),
        },
    )
    .await;
    match recv(ws).await {
        ServerMsg::Welcome {
            authorized, peer, ..
        } => {
            assert!(peer.data_port > 0);
            authorized
        }
        other => panic!("expected welcome, got {other:?}"),
    }
}

fn short_spec(protocol: Protocol) -> TestSpec {
    let mut spec = TestSpec::new(protocol);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(2),
    };
    spec
}

#[tokio::test]
async fn malformed_messages_get_errors_and_the_connection_stays_usable() {
    let peer = Peer::start(&[]);
    let mut ws = connect(&peer).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    for bad in [
        "not json",
        "{}",
        r#"{"type":"open","spec":{"protocol":"sctp"}}"#,
        "[1,2,3]",
    ] {
        send_raw(&mut ws, bad).await;
        match recv(&mut ws).await {
            ServerMsg::Error {
                code: ErrorCode::BadMessage,
                ..
            } => {}
            other => panic!("{bad}: expected bad_message, got {other:?}"),
        }
    }
    ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    assert!(matches!(
        recv(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::BadMessage,
            ..
        }
    ));
    send(&mut ws, &ClientMsg::ListTests).await;
    assert!(matches!(recv(&mut ws).await, ServerMsg::Tests { .. }));
}

/// A script's hand-written JSON may put `type` (and a spec's `kind`) anywhere in its object;
/// perfpeer writes them first and reads either.
#[tokio::test]
async fn messages_with_their_tags_last_are_read_too() {
    let (pc, peer) = (Peer::start(&[]), Peer::start(&[]));
    let mut ws = connect(&peer).await;
    let version = perfpeer_shared::PROTOCOL_VERSION;
    send_raw(
        &mut ws,
        &format!(r#"{{"token":"{TOKEN}","protocol_version":{version},"type":"hello"}}"#),
    )
    .await;
    assert!(matches!(
        recv(&mut ws).await,
        ServerMsg::Welcome {
            authorized: true,
            ..
        }
    ));
    let mut spec = serde_json::to_value(short_spec(Protocol::Tcp)).unwrap();
    spec["end"] = serde_json::json!({"duration": 1.0, "kind": "time"});
    let run = serde_json::json!({"target": pc.control, "spec": spec, "type": "run"});
    send_raw(&mut ws, &run.to_string()).await;
    let msgs = messages_until(&mut ws, |m| matches!(m, ServerMsg::Result { .. })).await;
    let Some(ServerMsg::Result { result }) = msgs.last() else {
        panic!("no result: {msgs:?}");
    };
    assert_eq!(result.status, TestStatus::Complete, "{result:?}");
    assert_eq!(
        result.spec.end,
        EndCondition::Time {
            duration: Duration::from_secs(1)
        }
    );
}

#[tokio::test]
async fn privileged_requests_need_the_token() {
    let peer = Peer::start(&[]);
    let mut ws = connect(&peer).await;
    assert!(!hello(&mut ws, Some("wrong-token-value")).await);
    assert!(matches!(
        recv(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::Unauthorized,
            ..
        }
    ));
    send(
        &mut ws,
        &ClientMsg::Run {
            target: "127.0.0.1".into(),
            spec: short_spec(Protocol::Tcp),
        },
    )
    .await;
    match recv(&mut ws).await {
        ServerMsg::Error {
            code: ErrorCode::Unauthorized,
            message,
        } => assert!(message.contains("token"), "{message}"),
        other => panic!("expected unauthorized, got {other:?}"),
    }
    // Being the far end of a test needs no token.
    let mut ws = connect(&peer).await;
    assert!(!hello(&mut ws, None).await);
    send(
        &mut ws,
        &ClientMsg::Open {
            spec: short_spec(Protocol::Tcp),
            group: None,
        },
    )
    .await;
    assert!(matches!(recv(&mut ws).await, ServerMsg::Accepted { .. }));
}

#[tokio::test]
async fn run_drives_a_test_to_another_peer_with_live_reports() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        let mut ws = connect(&dut).await;
        assert!(hello(&mut ws, Some(TOKEN)).await);
        send(
            &mut ws,
            &ClientMsg::Run {
                target: pc.control.clone(),
                spec: short_spec(protocol),
            },
        )
        .await;
        let mut intervals = (0, 0);
        let result = loop {
            match recv(&mut ws).await {
                ServerMsg::Started { test_id, .. } => assert!(!test_id.is_empty()),
                ServerMsg::Interval {
                    role: PeerRole::Client,
                    ..
                } => intervals.0 += 1,
                ServerMsg::Interval {
                    role: PeerRole::Server,
                    ..
                } => intervals.1 += 1,
                ServerMsg::Stored { .. } => {}
                ServerMsg::Result { result } => break result,
                other => panic!("unexpected {other:?}"),
            }
        };
        assert_eq!(result.status, TestStatus::Complete);
        assert!(intervals.0 >= 2 && intervals.1 >= 2, "{intervals:?}");
        let flows = result.flows();
        let sent = flows[0].sent.as_ref().unwrap().bytes;
        let received = flows[0].received.as_ref().unwrap().bytes;
        assert!(
            sent > 0 && received > 0 && received <= sent,
            "{protocol:?}: {sent} {received}"
        );
    }
}

/// A browser's `run` of a 60 s TCP test from `dut` to `pc`; the connection that follows it.
async fn start_minute_long_run(dut: &Peer, pc: &Peer) -> Ws {
    let mut ws = connect(dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    let mut spec = short_spec(Protocol::Tcp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(60),
    };
    send(
        &mut ws,
        &ClientMsg::Run {
            target: pc.control.clone(),
            spec,
        },
    )
    .await;
    ws
}

#[tokio::test]
async fn cancel_ends_a_running_test_early() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    let mut ws = start_minute_long_run(&dut, &pc).await;
    loop {
        if let ServerMsg::Interval { .. } = recv(&mut ws).await {
            break;
        }
    }
    send(&mut ws, &ClientMsg::Cancel).await;
    let result = loop {
        if let ServerMsg::Result { result } = recv(&mut ws).await {
            break result;
        }
    };
    assert!(
        result.status == TestStatus::Cancelled,
        "{:?}",
        result.status
    );
}

/// SIGTERM ends a browser's run as a cancel would, and the peer keeps its partial result (with
/// the figures so far) before it exits: the run's task is drained, not dropped with the runtime.
#[tokio::test]
async fn sigterm_keeps_a_browsers_running_test_before_the_peer_exits() {
    let mut dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    let mut ws = start_minute_long_run(&dut, &pc).await;
    let mut intervals = 0;
    while intervals < 2 {
        if let ServerMsg::Interval { .. } = recv(&mut ws).await {
            intervals += 1;
        }
    }
    let pid = libc::pid_t::try_from(dut.pid()).unwrap();
    // SAFETY: signalling the child process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(
        perfpeer_tests::wait_for(Duration::from_secs(15), || !dut.is_running()),
        "the peer exits soon after SIGTERM"
    );
    let store = dut.dir.to_str().unwrap().to_string();
    let list = perfpeer_tests::Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &["results", "--data-dir", &store, "list"],
    )
    .wait(Duration::from_secs(20));
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let line = list
        .lines()
        .find(|l| l.contains("browser"))
        .unwrap_or_else(|| panic!("the run is in the history: {list}"));
    assert!(
        line.contains("cancelled") && line.contains("bit/s"),
        "kept as cancelled with its figures: {line}\n{}",
        dut.log()
    );
}

#[tokio::test]
async fn a_run_survives_its_browser_and_can_be_attached_again() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    let mut spec = short_spec(Protocol::Tcp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(4),
    };
    send(
        &mut ws,
        &ClientMsg::Run {
            target: pc.control.clone(),
            spec,
        },
    )
    .await;
    let test_id = loop {
        if let ServerMsg::Started { test_id, .. } = recv(&mut ws).await {
            break test_id;
        }
    };
    loop {
        if let ServerMsg::Interval { .. } = recv(&mut ws).await {
            break;
        }
    }
    // A network blip: the browser's connection vanishes without a close handshake.
    drop(ws);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut ws = connect(&dut).await;
    // Attaching needs the token like run does.
    assert!(!hello(&mut ws, None).await);
    send(
        &mut ws,
        &ClientMsg::Attach {
            test_id: test_id.clone(),
        },
    )
    .await;
    assert!(matches!(
        recv(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::Unauthorized,
            ..
        }
    ));
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(&mut ws, &ClientMsg::ListTests).await;
    match recv(&mut ws).await {
        ServerMsg::Tests { tests } => {
            assert!(tests.iter().any(|t| t.test_id == test_id), "{tests:?}")
        }
        other => panic!("expected tests, got {other:?}"),
    }
    send(
        &mut ws,
        &ClientMsg::Attach {
            test_id: test_id.clone(),
        },
    )
    .await;
    // The replay starts with `started`, then every interval so far, then the live ones.
    match recv(&mut ws).await {
        ServerMsg::Started { test_id: id, .. } => assert_eq!(id, test_id),
        other => panic!("expected the replayed started, got {other:?}"),
    }
    let mut client_intervals = Vec::new();
    let result = loop {
        match recv(&mut ws).await {
            ServerMsg::Interval {
                test_id: id,
                role,
                report,
            } => {
                assert_eq!(id, test_id);
                if role == PeerRole::Client {
                    client_intervals.push(report);
                }
            }
            // The peer keeps the result (and says where) before announcing it.
            ServerMsg::Stored {
                test_id: id,
                result_id,
            } => {
                assert_eq!(id, test_id);
                assert_eq!(result_id.len(), 32);
            }
            ServerMsg::Result { result } => break result,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(result.id, test_id);
    assert_eq!(
        result.status,
        TestStatus::Complete,
        "the blip did not stop the test"
    );
    assert_eq!(
        client_intervals, result.local.intervals,
        "replayed and live intervals are each sent once, in order"
    );
    // The finished run can still be attached to for its result.
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(
        &mut ws,
        &ClientMsg::Attach {
            test_id: test_id.clone(),
        },
    )
    .await;
    let replayed = loop {
        if let ServerMsg::Result { result } = recv(&mut ws).await {
            break result;
        }
    };
    assert_eq!(replayed, result);
    send(
        &mut ws,
        &ClientMsg::Attach {
            test_id: "no-such-test".into(),
        },
    )
    .await;
    assert!(matches!(
        recv(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::UnknownTest,
            ..
        }
    ));
}

#[tokio::test]
async fn run_can_target_a_stock_iperf3_server() {
    if !perfpeer_tests::have("iperf3") {
        return;
    }
    let dut = Peer::start(&[]);
    let port = perfpeer_tests::free_port();
    let _stock = perfpeer_tests::Running::spawn(
        std::path::Path::new("iperf3"),
        &["-s", "-p", &port.to_string()],
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(
        &mut ws,
        &ClientMsg::Run {
            target: format!("iperf3://127.0.0.1:{port}"),
            spec: short_spec(Protocol::Tcp),
        },
    )
    .await;
    let result = loop {
        match recv(&mut ws).await {
            ServerMsg::Result { result } => break result,
            ServerMsg::Error { message, .. } => panic!("{message}"),
            _ => {}
        }
    };
    assert_eq!(result.status, TestStatus::Complete);
    let received = result.flows()[0]
        .received
        .as_ref()
        .expect("the stock server's results")
        .bytes;
    assert!(received > 0);
}

/// The body of a plain `GET path` to the peer's control port.
fn http_get(peer: &Peer, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(&peer.control).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    answer.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The next message, which must be an `error` with `code`; returns its text.
async fn expect_error(ws: &mut Ws, code: ErrorCode) -> String {
    match recv(ws).await {
        ServerMsg::Error { code: got, message } if got == code => message,
        other => panic!("expected a {code:?} error, got {other:?}"),
    }
}

/// Messages until (and including) the first that `is_last` picks or an error.
async fn messages_until(ws: &mut Ws, is_last: fn(&ServerMsg) -> bool) -> Vec<ServerMsg> {
    let mut seen = Vec::new();
    loop {
        let msg = recv(ws).await;
        let last = is_last(&msg) || matches!(msg, ServerMsg::Error { .. });
        seen.push(msg);
        if last {
            return seen;
        }
    }
}

/// A new connection to `peer` that attaches to the run `id` and reads its log until
/// `is_last`: what a browser sees after a reconnect.
async fn reattach(peer: &Peer, id: &str, is_last: fn(&ServerMsg) -> bool) -> Vec<ServerMsg> {
    let mut ws = connect(peer).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(
        &mut ws,
        &ClientMsg::Attach {
            test_id: id.to_string(),
        },
    )
    .await;
    messages_until(&mut ws, is_last).await
}

/// The result id a run's `stored` message gave.
fn stored_result_id(replay: &[ServerMsg], id: &str) -> String {
    replay
        .iter()
        .find_map(|m| match m {
            ServerMsg::Stored { test_id, result_id } if test_id == id => Some(result_id.clone()),
            _ => None,
        })
        .expect("stored")
}

#[tokio::test]
async fn sweep_runs_one_paced_test_per_size_and_can_be_attached_again() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    let mut ws = connect(&dut).await;
    // Without the token, and as a whole-request refusal (TCP), nothing starts.
    assert!(!hello(&mut ws, None).await);
    let mut spec = short_spec(Protocol::Udp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(1),
    };
    spec.bitrate = Some(perfpeer_shared::units::BitRate(2_000_000));
    let sweep = |spec: &TestSpec, sizes: Vec<u32>| ClientMsg::Sweep {
        target: pc.control.clone(),
        spec: spec.clone(),
        sizes,
    };
    send(&mut ws, &sweep(&spec, vec![64])).await;
    expect_error(&mut ws, ErrorCode::Unauthorized).await;
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(&mut ws, &sweep(&short_spec(Protocol::Tcp), vec![64])).await;
    let message = expect_error(&mut ws, ErrorCode::InvalidSpec).await;
    assert!(message.contains("UDP or DCCP"), "{message}");
    for (sizes, needle) in [
        (vec![64; 65], "1 to 64 sizes"),
        (vec![], "1 to 64 sizes"),
        (vec![64, 0], "out of range"),
    ] {
        send(&mut ws, &sweep(&spec, sizes)).await;
        let message = expect_error(&mut ws, ErrorCode::InvalidSpec).await;
        assert!(message.contains(needle), "{message}");
    }
    // A real sweep; the browser leaves after the first size and attaches again.
    send(&mut ws, &sweep(&spec, vec![200, 1000])).await;
    let sweep_id = match recv(&mut ws).await {
        ServerMsg::SweepStarted {
            sweep_id, sizes, ..
        } => {
            assert_eq!(sizes, vec![200, 1000]);
            sweep_id
        }
        other => panic!("expected sweep_started, got {other:?}"),
    };
    loop {
        if let ServerMsg::SweepPoint { .. } = recv(&mut ws).await {
            break;
        }
    }
    drop(ws);
    let replay = reattach(&dut, &sweep_id, |m| {
        matches!(m, ServerMsg::SweepResult { .. })
    })
    .await;
    assert!(
        matches!(&replay[0], ServerMsg::SweepStarted { sweep_id: id, .. } if *id == sweep_id),
        "the replay starts at the beginning: {:?}",
        replay[0]
    );
    let intervals = replay
        .iter()
        .filter(|m| matches!(m, ServerMsg::Interval { .. }))
        .count();
    assert!(intervals >= 2, "the sizes' live intervals are in the log");
    let points: Vec<_> = replay
        .iter()
        .filter_map(|m| match m {
            ServerMsg::SweepPoint { point, .. } => Some(point.clone()),
            _ => None,
        })
        .collect();
    let Some(ServerMsg::SweepResult { result, .. }) = replay.last() else {
        panic!("no sweep_result: {:?}", replay.last());
    };
    assert_eq!(result.points, points);
    // The peer kept the sweep before announcing it; its link opens without the token.
    let result_id = stored_result_id(&replay, &sweep_id);
    let kept: perfpeer_shared::sweep::SweepResult =
        serde_json::from_str(&http_get(&dut, &format!("/r/{result_id}.json"))).unwrap();
    assert_eq!(&kept, result);
    let page = http_get(&dut, &format!("/r/{result_id}"));
    assert!(
        page.contains("Packet-size sweep: UDP") && page.contains("<td>1000 B</td>"),
        "{page}"
    );
    // `perfpeer results` lists it as a sweep and shows it as the CLI's table or JSON.
    let results = |args: &[&str]| {
        let mut all = vec!["results", "--data-dir", dut.dir.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = perfpeer_tests::Running::spawn(&perfpeer_tests::perfpeer_bin(), &all)
            .wait(Duration::from_secs(20));
        assert!(out.status.success(), "{all:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = results(&["list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with(&result_id) && l.contains(" sweep ")),
        "{list}"
    );
    assert!(results(&["show", &result_id[..8]]).starts_with("Packet-size sweep: UDP"));
    let json: perfpeer_shared::sweep::SweepResult =
        serde_json::from_str(&results(&["show", &result_id, "--format", "json"])).unwrap();
    assert_eq!(&json, result);
    assert_eq!(
        points.iter().map(|p| p.len).collect::<Vec<_>>(),
        vec![200, 1000]
    );
    for p in &points {
        assert!(p.error.is_none(), "{p:?}");
        // Paced at 2 Mbit/s: the receiver's rate and packet rate follow from the size.
        assert!(
            (1.6e6..2.4e6).contains(&p.bits_per_second),
            "{} B at {} bit/s",
            p.len,
            p.bits_per_second
        );
        let expected_pps = p.bits_per_second / 8.0 / f64::from(p.len);
        assert!(
            (p.packets_per_second / expected_pps - 1.0).abs() < 0.05,
            "{p:?}"
        );
    }
}

#[tokio::test]
async fn latency_runs_its_phases_live_is_kept_and_can_be_attached_again() {
    use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, Live, Phase};
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    // The load paced, so the test does not take both cores from the tests beside it.
    let request = LatencyRequest {
        idle_seconds: 1.0,
        load_seconds: 1.0,
        streams: 2,
        load_bits_per_second: Some(300_000_000),
        ..LatencyRequest::default()
    };
    let latency = |request: &LatencyRequest| ClientMsg::Latency {
        target: pc.control.clone(),
        request: request.clone(),
    };
    // Without the token nothing starts; an out-of-bounds request is refused whole.
    let mut ws = connect(&dut).await;
    assert!(!hello(&mut ws, None).await);
    send(&mut ws, &latency(&request)).await;
    expect_error(&mut ws, ErrorCode::Unauthorized).await;
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    for bad in [
        LatencyRequest {
            load_seconds: 3600.0,
            ..request.clone()
        },
        LatencyRequest {
            probe_interval_ms: 0.0,
            ..request.clone()
        },
        LatencyRequest {
            streams: 1000,
            ..request.clone()
        },
    ] {
        send(&mut ws, &latency(&bad)).await;
        expect_error(&mut ws, ErrorCode::InvalidSpec).await;
    }
    // A real run; the browser leaves during it and attaches again.
    send(&mut ws, &latency(&request)).await;
    let latency_id = match recv(&mut ws).await {
        ServerMsg::LatencyStarted { latency_id, .. } => latency_id,
        other => panic!("expected latency_started, got {other:?}"),
    };
    loop {
        if let ServerMsg::LatencyEvent {
            event: LatencyEvent::PhaseDone { .. },
            ..
        } = recv(&mut ws).await
        {
            break;
        }
    }
    drop(ws);
    let replay = reattach(&dut, &latency_id, |m| {
        matches!(m, ServerMsg::LatencyResult { .. })
    })
    .await;
    assert!(
        matches!(&replay[0], ServerMsg::LatencyStarted { latency_id: id, .. } if *id == latency_id)
    );
    // The page folds the events into the same figures the peer sends at the end.
    let mut live = Live::default();
    for m in &replay {
        if let ServerMsg::LatencyEvent { event, .. } = m {
            live.apply(event);
        }
    }
    let Some(ServerMsg::LatencyResult { result, .. }) = replay.last() else {
        panic!("no latency_result: {:?}", replay.last());
    };
    // (Equal but for the last bit of a float that went through JSON on the way.)
    let folded = live.snapshot(None).expect("started");
    assert_eq!(folded.probes.len(), result.probes.len());
    for (a, b) in folded.phases.iter().zip(&result.phases) {
        assert_eq!(
            (a.phase, a.probes_sent, a.probes_lost),
            (b.phase, b.probes_sent, b.probes_lost)
        );
        let (pa, pb) = (a.rtt.expect("rtt"), b.rtt.expect("rtt"));
        assert!((pa.p50 - pb.p50).abs() < 1e-9 && (pa.p99 - pb.p99).abs() < 1e-9);
    }
    let phases: Vec<Phase> = result.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, Phase::ALL);
    assert!(
        result
            .phases
            .iter()
            .all(|p| p.rtt.is_some() && p.error.is_none())
    );
    // Kept before it was announced: its page (timeline and CDF) and JSON open without the
    // token; the history lists it as a latency run.
    let result_id = stored_result_id(&replay, &latency_id);
    let page = http_get(&dut, &format!("/r/{result_id}"));
    assert!(
        page.contains("latency-timeline") && page.contains("latency-cdf"),
        "{page}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&http_get(&dut, &format!("/r/{result_id}.json"))).unwrap();
    assert_eq!(json["phases"].as_array().map(Vec::len), Some(4));
    let (status, list) = perfpeer_tests::http_request(
        &dut.control,
        "GET",
        "/api/results",
        &format!("Authorization: Bearer {TOKEN}\r\n"),
        "",
    );
    assert_eq!(status, 200);
    assert!(list.contains("\"kind\":\"latency\""), "{list}");
}

/// `perfpeer test --from A B`: the CLI asks peer A (with A's token) to run a test against B, as
/// the browser does, and prints the usual output; A keeps the result, and `-J` names its id
/// and page. Without the token the error names A; Ctrl-C cancels the test on A.
#[test]
fn the_cli_runs_a_test_between_two_remote_peers() {
    let a = Peer::start(&[]);
    let b = Peer::start(&["--open"]);
    let args = [
        b.control.as_str(),
        "--from",
        a.control.as_str(),
        "--token",
        TOKEN,
        "-t",
        "1",
        "-u",
        "-b",
        "20M",
        "-J",
    ];
    let json = perfpeer_tests::json_of(&perfpeer_tests::perfpeer_test(&args), &args);
    let id = json["perfpeer"]["result_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a result id: {json}"));
    assert_eq!(
        json["perfpeer"]["result_url"],
        format!("http://{}/r/{id}", a.control),
        "{json}"
    );
    assert!(
        json["end"]["sum"]["packets"].as_u64().unwrap_or(0) > 0,
        "{json}"
    );
    // The page is A's, and it is the same test.
    let (status, body) =
        perfpeer_tests::http_request(&a.control, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200, "{body}");
    let kept: perfpeer_shared::report::TestResult = serde_json::from_str(&body).unwrap();
    assert_eq!(
        kept.server_addr.rsplit(':').next(),
        b.control.rsplit(':').next()
    );
    // Text: the usual table and the page.
    let out = perfpeer_tests::perfpeer_test(&[
        &b.control, "--from", &a.control, "--token", TOKEN, "-t", "1", "-b", "50M",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(" receiver")
            && text.contains(&format!("Result page: http://{}/r/", a.control)),
        "{text}"
    );
    // Without A's token: refused, in words that name A.
    let out = perfpeer_tests::perfpeer_test(&[&b.control, "--from", &a.control, "-t", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&a.control) && err.contains("--token"), "{err}");
    // Not with a stock tool's target.
    let out = perfpeer_tests::perfpeer_test(&["iperf3://127.0.0.1", "--from", &a.control]);
    assert_eq!(out.status.code(), Some(2));
    // Ctrl-C: A cancels the test and the result comes back as cancelled, with figures.
    let run = perfpeer_tests::Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &[
            "test", &b.control, "--from", &a.control, "--token", TOKEN, "-t", "30", "-b", "20M",
        ],
    );
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(run.0.id().cast_signed(), libc::SIGINT) };
    let out = run.wait(Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("receiver") && text.contains("cancelled"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `plan{name, tags}`.
fn plan(name: &str, tags: &[&str]) -> ClientMsg {
    ClientMsg::Plan {
        name: name.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

#[tokio::test]
async fn plans_of_the_peer_are_listed_and_run_case_by_case() {
    let pc = Peer::start(&[]);
    let dir = perfpeer_tests::plans_dir(&pc.control);
    let dut = Peer::start(&["--plans", dir.to_str().unwrap()]);
    // Without the token: refused.
    let mut ws = connect(&dut).await;
    assert!(!hello(&mut ws, None).await);
    send(&mut ws, &ClientMsg::Plans).await;
    expect_error(&mut ws, ErrorCode::Unauthorized).await;
    send(&mut ws, &plan("quick", &[])).await;
    expect_error(&mut ws, ErrorCode::Unauthorized).await;
    // With it: the list, bad files with their error.
    let mut ws = connect(&dut).await;
    assert!(hello(&mut ws, Some(TOKEN)).await);
    send(&mut ws, &ClientMsg::Plans).await;
    let plans = match recv(&mut ws).await {
        ServerMsg::PlanList { plans } => plans,
        other => panic!("expected the plans, got {other:?}"),
    };
    let names: Vec<&str> = plans.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["broken", "quick"]);
    assert!(plans[0].error.is_some());
    assert_eq!((plans[1].cases, plans[1].eta_s), (2, 4));
    // A name not listed (or a path) is refused, and so is the bad file.
    for name in ["nope", "../quick", "quick.toml"] {
        send(&mut ws, &plan(name, &[])).await;
        expect_error(&mut ws, ErrorCode::UnknownTest).await;
    }
    send(&mut ws, &plan("broken", &[])).await;
    expect_error(&mut ws, ErrorCode::InvalidSpec).await;
    // The plan runs: started, each case's start and row, then the whole run, kept.
    send(&mut ws, &plan("quick", &["fw=1.2.3"])).await;
    let seen = messages_until(&mut ws, |m| matches!(m, ServerMsg::PlanEnded { .. })).await;
    let plan_id = match &seen[0] {
        ServerMsg::PlanStarted {
            plan_id,
            name,
            cases,
            ..
        } => {
            assert_eq!((name.as_str(), *cases), ("quick", 2));
            plan_id.clone()
        }
        other => panic!("expected plan_started, got {other:?}"),
    };
    use perfpeer_shared::plan_progress::PlanProgress;
    let events: Vec<String> = seen
        .iter()
        .filter_map(|m| match m {
            ServerMsg::PlanEvent { event, .. } => Some(match event {
                PlanProgress::Starting { index, of, .. } => format!("start {index}/{of}"),
                PlanProgress::CaseDone { index, row } => format!("row {index} {}", row.label),
            }),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0], "start 0/2");
    assert!(events[1].starts_with("row 0 "), "{events:?}");
    assert_eq!(events[2], "start 1/2");
    let rows: Vec<&perfpeer_shared::plan_progress::CaseRow> = seen
        .iter()
        .filter_map(|m| match m {
            ServerMsg::PlanEvent {
                event: PlanProgress::CaseDone { row, .. },
                ..
            } => Some(row),
            _ => None,
        })
        .collect();
    assert!(
        rows.iter()
            .all(|r| r.ran == 1 && r.result_ids.len() == 1 && r.headline.is_some()),
        "each case's repeat ran and was kept: {rows:?}"
    );
    let result_id = match seen.last() {
        Some(ServerMsg::PlanEnded { end, .. }) => {
            assert_eq!(
                (end.status, end.cases, end.planned_cases, end.outcome),
                (
                    perfpeer_shared::plan_progress::PlanStatus::Complete,
                    2,
                    2,
                    Some(perfpeer_shared::verdict::Outcome::Pass)
                ),
                "{end:?}"
            );
            end.result_id.clone().expect("kept")
        }
        other => panic!("expected plan_ended, got {other:?}"),
    };
    let page = http_get(&dut, &format!("/r/{result_id}"));
    assert!(page.contains("quick"), "{page}");
    // The plan's `baseline = "last"`: its first run has none.
    assert!(!page.contains("Against the baseline"), "{page}");
    // Attachable for a while after its end.
    let replay = reattach(&dut, &plan_id, |m| matches!(m, ServerMsg::PlanEnded { .. })).await;
    assert!(matches!(replay[0], ServerMsg::PlanStarted { .. }));
    // Cancel stops it after the running case, which is kept.
    send(&mut ws, &plan("quick", &[])).await;
    let plan_id = match recv(&mut ws).await {
        ServerMsg::PlanStarted { plan_id, .. } => plan_id,
        other => panic!("expected plan_started, got {other:?}"),
    };
    assert!(matches!(recv(&mut ws).await, ServerMsg::PlanEvent { .. }));
    // Its running repeat is listed, attachable by the plan id.
    send(&mut ws, &ClientMsg::ListTests).await;
    let tests = loop {
        match recv(&mut ws).await {
            ServerMsg::Tests { tests } => break tests,
            ServerMsg::PlanEvent { .. } => {}
            other => panic!("expected the running tests, got {other:?}"),
        }
    };
    assert!(
        tests
            .iter()
            .any(|t| t.attach_id.as_deref() == Some(plan_id.as_str())),
        "{tests:?}"
    );
    send(&mut ws, &ClientMsg::Cancel).await;
    let seen = messages_until(&mut ws, |m| matches!(m, ServerMsg::PlanEnded { .. })).await;
    match seen.last() {
        Some(ServerMsg::PlanEnded { end, .. }) => {
            assert_eq!(
                (end.status, end.cases),
                (perfpeer_shared::plan_progress::PlanStatus::Stopped, 1),
                "{end:?}"
            );
            // Judged against the run before it (the plan file's `baseline = "last"`).
            let page = http_get(&dut, &format!("/r/{}", end.result_id.as_deref().unwrap()));
            assert!(
                page.contains(&format!("Against the baseline {result_id}")),
                "{page}"
            );
        }
        other => panic!("expected plan_ended, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}
