//! What the in-process tests share: a far end that follows a script (a WebSocket server
//! answering as a perfpeer peer would, or as a broken one would), a data port that takes the
//! streams, and the real far end (`perfpeer serve`'s server, started in this process).

// Each test file uses its own part of this.
#![allow(dead_code)]

use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use perfpeer::in_process::SessionError;
use perfpeer::in_process::TestEvent;
use perfpeer::in_process::{self as server, ServeConfig, ServerState};
use perfpeer::in_process::{ClientOptions, run_test};
use perfpeer_shared::control::{ClientMsg, PeerInfo, ServerMsg};
use perfpeer_shared::report::{PeerRole, SideReport, TestResult};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec, ValidSpec};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// A test of `bytes` bytes, client to far end, one TCP stream.
pub fn bytes_spec(bytes: u64) -> TestSpec {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Bytes { bytes };
    spec
}

/// Runs `spec` against the peer at `addr` as `perfpeer test` does; the outcome and every event.
pub async fn run_as_client(
    addr: SocketAddr,
    spec: &TestSpec,
) -> (Result<TestResult, SessionError>, Vec<TestEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let spec = ValidSpec::new(spec.clone()).expect("a valid spec");
    let outcome = run_test(
        &addr.to_string(),
        &spec,
        &ClientOptions::default(),
        tx,
        CancellationToken::new(),
    )
    .await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (outcome, events)
}

/// A data port that takes every stream and reads it to its end (or resets it at once).
pub struct DataPort {
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

impl DataPort {
    pub fn reading() -> DataPort {
        DataPort::start(false)
    }

    /// Resets every stream as soon as it has sent something: its sender sees a broken stream.
    pub fn resetting() -> DataPort {
        DataPort::start(true)
    }

    fn start(reset: bool) -> DataPort {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    if reset {
                        let _ = conn.read(&mut buf);
                        // Unread data in the receive queue makes close send a reset.
                        std::thread::sleep(Duration::from_millis(20));
                        let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
                        return;
                    }
                    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
                    let _ = conn.shutdown(Shutdown::Both);
                });
            }
        });
        DataPort { port }
    }
}

/// The far end's side of the control connection.
pub struct Script {
    /// Its side of the control connection.
    pub ws: WebSocketStream<TcpStream>,
}

impl Script {
    pub async fn recv(&mut self) -> Option<ClientMsg> {
        loop {
            match self.ws.next().await? {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    pub async fn send(&mut self, msg: &ServerMsg) {
        let text = serde_json::to_string(msg).unwrap();
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// Answers the hello as a peer of `version`.
    pub async fn welcome(&mut self, version: u32) {
        assert!(matches!(self.recv().await, Some(ClientMsg::Hello { .. })));
        self.send(&ServerMsg::Welcome {
            protocol_version: version,
            peer: PeerInfo::default(),
            authorized: false,
        })
        .await;
    }

    /// Takes the `open`, accepts it with the data port, and says `ready` (the client reads it
    /// once its streams are open).
    pub async fn accept(&mut self, data: &DataPort) {
        assert!(matches!(self.recv().await, Some(ClientMsg::Open { .. })));
        self.send(&ServerMsg::Accepted {
            test_id: "t1".into(),
            cookie: "00112233445566778899aabbccddeeff".into(),
            data_port: data.port,
            clock_us: None,
        })
        .await;
        self.send(&ServerMsg::Ready).await;
        assert!(matches!(self.recv().await, Some(ClientMsg::Begin)));
    }

    /// Waits for the client's `stop` and `final`; returns its final report.
    pub async fn stop_and_final(&mut self) -> SideReport {
        loop {
            match self.recv().await {
                Some(ClientMsg::Stop) => {}
                Some(ClientMsg::Final { report, .. }) => return report,
                other => panic!("expected stop and final, got {other:?}"),
            }
        }
    }

    /// Answers the client's `final` with an empty report of its own and `result_id`, then
    /// waits for the client to close.
    pub async fn final_then_close(&mut self, result_id: Option<&str>) {
        self.final_with_errors_then_close(result_id, Vec::new())
            .await;
    }

    /// The same, with the far end's own stream errors in its final.
    pub async fn final_with_errors_then_close(
        &mut self,
        result_id: Option<&str>,
        stream_errors: Vec<String>,
    ) {
        self.send(&ServerMsg::Final {
            report: SideReport::empty(PeerRole::Server, Default::default()),
            result_id: result_id.map(str::to_string),
            stream_errors,
        })
        .await;
        let _ = self.recv().await;
    }
}

/// A far end on loopback that runs `script` on the first control connection.
pub async fn scripted<F, Fut>(script: F) -> SocketAddr
where
    F: FnOnce(Script) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        // As a peer does: a reply is not held back waiting for an ACK (Nagle).
        tcp.set_nodelay(true).unwrap();
        let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        script(Script { ws }).await;
    });
    addr
}

/// The real far end, in this process: `perfpeer serve`'s server on loopback ports, with its
/// shutdown token.
pub async fn real_peer() -> (SocketAddr, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (addr, _) = serve_in_process(4, shutdown.clone()).await;
    (addr, shutdown)
}

/// The same, taking at most `max_tests` tests at once; its state, to look inside.
pub async fn real_peer_with(max_tests: u32) -> (SocketAddr, Arc<ServerState>) {
    serve_in_process(max_tests, CancellationToken::new()).await
}

/// The real peer, taking at most `max_tests` tests at once and stopping when `shutdown` is
/// cancelled.
async fn serve_in_process(
    max_tests: u32,
    shutdown: CancellationToken,
) -> (SocketAddr, Arc<ServerState>) {
    let bound = server::bind("127.0.0.1:0".parse().unwrap(), 0).unwrap();
    let control = bound.control_addr().unwrap();
    let config = ServeConfig {
        max_tests,
        max_duration: Duration::from_secs(60),
        max_bitrate: None,
        token: None,
        data_from_any_address: false,
        max_memory: 256 << 20,
        host_names: Vec::new(),
        allowed_origins: Vec::new(),
        metrics_open: false,
    };
    let info = PeerInfo {
        name: "in-process".into(),
        data_port: bound.data_addr().unwrap().port(),
        max_tests,
        ..Default::default()
    };
    let state = ServerState::new(
        config,
        info,
        Arc::new(perfpeer::in_process::AnyTarget::default()),
        shutdown,
    );
    tokio::spawn(server::serve(bound, state.clone()));
    (control, state)
}
