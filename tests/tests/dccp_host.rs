//! DCCP on a host whose kernel has none (Linux ≥ 6.16, like this machine's): `perfpeer test
//! --dccp` fails with a one-line error naming the cause, the peer announces DCCP as unavailable
//! with the reason, and a far peer refuses a DCCP `open` with that reason (what a browser shows).
//! On a kernel that has DCCP these tests only check that the answers are consistent.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::dccp::DccpSpec;
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_tests::{Peer, perfpeer_test};
use tokio_tungstenite::tungstenite::Message;

const CAUSE: &str = "this kernel has no DCCP (removed from Linux in 6.16";

/// Whether this kernel is one without DCCP at all (≥ 6.16).
fn kernel_without_dccp() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 16)
}

#[test]
fn cli_names_the_cause_in_one_line() {
    let peer = Peer::start(&["--open"]);
    for extra in [
        &["-t", "1"][..],
        &["--ccid", "3", "-t", "1"],
        &["--sweep-len", "64,128"],
        &["--cbr", "mp3", "-t", "1"],
    ] {
        let mut args = vec![peer.control.as_str(), "--dccp"];
        args.extend_from_slice(extra);
        let out = perfpeer_test(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !kernel_without_dccp() {
            perfpeer_tests::skip(&format!(
                "the cause check: this kernel may have DCCP ({stderr})"
            ));
            return;
        }
        assert!(!out.status.success(), "{args:?}: {stdout}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let text = format!("{stdout}{stderr}");
        assert!(text.contains(CAUSE), "{args:?}: {text}");
        if extra.len() == 2 && extra[0] == "-t" {
            assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        }
    }
    // With -J the error is the JSON answer.
    let out = perfpeer_test(&[&peer.control, "--dccp", "-t", "1", "-J"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["error"].as_str().unwrap_or_default().contains(CAUSE),
        "{v}"
    );
}

#[test]
fn peer_info_says_dccp_is_unavailable_and_why() {
    if !kernel_without_dccp() {
        return perfpeer_tests::skip("this kernel may have DCCP");
    }
    let peer = Peer::start(&["--open"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (welcome, refusal) = rt.block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", peer.control))
            .await
            .unwrap();
        let hello = ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: None,
        };
        ws.send(Message::text(hello.to_json())).await.unwrap();
        let welcome = next(&mut ws).await;
        let mut spec = TestSpec::new(Protocol::Dccp);
        spec.end = EndCondition::Time {
            duration: Duration::from_secs(1),
        };
        spec.dccp = Some(DccpSpec {
            ccid: Some(2),
            ..DccpSpec::default()
        });
        ws.send(Message::text(
            ClientMsg::Open { spec, group: None }.to_json(),
        ))
        .await
        .unwrap();
        (welcome, next(&mut ws).await)
    });
    match welcome {
        ServerMsg::Welcome { peer: info, .. } => {
            assert!(!info.dccp.available, "{:?}", info.dccp);
            assert!(info.dccp.reason.unwrap_or_default().contains(CAUSE));
        }
        other => panic!("expected welcome, got {other:?}"),
    }
    match refusal {
        ServerMsg::Error { code, message } => {
            assert_eq!(code, ErrorCode::InvalidSpec);
            assert!(message.contains(CAUSE), "{message}");
            assert_eq!(message.lines().count(), 1, "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!peer.log().contains("panicked"));
}

async fn next(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> ServerMsg {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an answer within 10 s")
            .expect("open connection")
            .expect("no WebSocket error");
        if let Message::Text(t) = msg {
            return ServerMsg::parse(t.as_str()).expect("a server message");
        }
    }
}
