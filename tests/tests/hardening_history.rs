//! The history's budgets against anonymous far ends (issue 39): the owner keeps a few results,
//! then strangers on other loopback addresses run many short far-end tests by hand (one with an
//! 800 KB host name in its report) against a peer with a small history. The owner's results and
//! their share links must all stay, the far-end results keep within their share (and each
//! address within its own), and the long host name is cut.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use perfpeer_proto::wire::{StreamHello, cookie_from_hex};
use perfpeer_shared::control::{ClientMsg, ServerMsg};
use perfpeer_shared::report::{HostInfo, PeerRole, SideReport, StreamFinal, StreamRole};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};
use perfpeer_tests::{Peer, TOKEN, connect_from, perfpeer_bin};
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// A far-end client on `/ws` from a loopback address of its choice, speaking the control
/// protocol by hand so that its final report says whatever the test wants (and its `open` is
/// what an older client sends: no `group`).
pub(super) struct Stranger {
    ws: Ws,
    from: [u8; 4],
}

impl Stranger {
    pub(super) async fn connect(from: [u8; 4], control: &str) -> Stranger {
        let to: SocketAddr = control.parse().expect("a loopback control address");
        let tcp = tokio::task::spawn_blocking(move || connect_from(from, to))
            .await
            .unwrap()
            .expect("a control connection from the stranger's address");
        tcp.set_nonblocking(true).unwrap();
        let tcp = tokio::net::TcpStream::from_std(tcp).unwrap();
        let (ws, _) = tokio_tungstenite::client_async(format!("ws://{control}/ws"), tcp)
            .await
            .expect("WebSocket to the peer");
        let mut s = Stranger { ws, from };
        s.send(&ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: None,
        })
        .await;
        assert!(matches!(s.recv().await, ServerMsg::Welcome { .. }));
        s
    }

    async fn send(&mut self, msg: &ClientMsg) {
        self.ws
            .send(Message::text(msg.to_json()))
            .await
            .expect("send");
    }

    /// The next control message, skipping pings; panics after 20 s or on a close.
    async fn recv(&mut self) -> ServerMsg {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .expect("a message within 20 s")
                .expect("the connection stays open")
                .expect("no WebSocket error");
            if let Message::Text(t) = msg {
                return ServerMsg::parse(t.as_str()).expect("a valid server message");
            }
        }
    }

    /// One short forward TCP test whose final report names `host`; the far end's result id.
    pub(super) async fn one_test(mut self, host: HostInfo) -> String {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.end = EndCondition::Time {
            duration: Duration::from_secs(1),
        };
        self.send(&ClientMsg::Open { spec, group: None }).await;
        let (cookie, data_port) = match self.recv().await {
            ServerMsg::Accepted {
                cookie, data_port, ..
            } => (cookie_from_hex(&cookie).expect("a hex cookie"), data_port),
            other => panic!("expected accepted, got {other:?}"),
        };
        let from = self.from;
        let mut data: TcpStream = tokio::task::spawn_blocking(move || {
            let mut s = connect_from(from, SocketAddr::from(([127, 0, 0, 1], data_port)))
                .expect("a data stream from the control connection's address");
            s.write_all(
                &StreamHello {
                    stream_id: 1,
                    cookie,
                }
                .encode(),
            )
            .unwrap();
            s
        })
        .await
        .unwrap();
        while !matches!(self.recv().await, ServerMsg::Ready) {}
        self.send(&ClientMsg::Begin).await;
        data.write_all(&[0u8; 64 << 10]).unwrap();
        // The client's end of its stream closes as it stops (the far end drains to the close).
        drop(data);
        let report = SideReport {
            streams: vec![StreamFinal {
                id: 1,
                role: StreamRole::Sender,
                bytes: 64 << 10,
                duration: Duration::from_millis(100),
                packets: None,
                writes: None,
                tcp: None,
                udp_rx: None,
                rr: None,
                write_one_way: None,
                write_frames: None,
            }],
            ..SideReport::empty(PeerRole::Client, host)
        };
        self.send(&ClientMsg::Stop).await;
        self.send(&ClientMsg::Final {
            report,
            clock_offset: None,
        })
        .await;

        loop {
            if let ServerMsg::Final { result_id, .. } = self.recv().await {
                return result_id.expect("the far end keeps the test");
            }
        }
    }
}

pub(super) fn host(name: String) -> HostInfo {
    HostInfo {
        hostname: name,
        system: "Linux 6.1 x86_64".into(),
        version: "0.1.0".into(),
    }
}

/// `GET path` with the token.
fn api(peer: &Peer, path: &str) -> (u16, String) {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    perfpeer_tests::http_request(&peer.control, "GET", path, &auth, "")
}

/// The peer's history as (id, origin, peer) lines.
fn history(peer: &Peer) -> Vec<(String, String, String)> {
    let (status, body) = api(peer, "/api/results");
    assert_eq!(status, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (text("id"), text("origin"), text("peer"))
        })
        .collect()
}

/// A browser's `run` on `peer` against `target`; the id `peer` keeps it under.
async fn browser_run(peer: &Peer, target: &str) -> String {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", peer.control))
        .await
        .unwrap();
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Bytes { bytes: 1 << 20 };
    for msg in [
        ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: Some(TOKEN.into()),
        },
        ClientMsg::Run {
            target: target.into(),
            spec,
        },
    ] {
        ws.send(Message::text(msg.to_json())).await.unwrap();
    }
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("the run's messages")
            .expect("open")
            .expect("no error");
        if let Message::Text(t) = msg
            && let Ok(ServerMsg::Stored { result_id, .. }) = ServerMsg::parse(t.as_str())
        {
            return result_id;
        }
    }
}

#[tokio::test]
async fn strangers_far_end_tests_never_evict_the_owners_history() {
    let peer = Peer::start(&["--keep-results", "8", "--max-results-size", "2M"]);
    let other = Peer::start(&[]);
    // The owner's results: two `perfpeer test` runs from this machine's CLI, kept in the
    // peer's data directory, and one browser run on the peer.
    for _ in 0..2 {
        let out = std::process::Command::new(perfpeer_bin())
            .args(["test", &other.control, "-n", "1M", "--data-dir"])
            .arg(&peer.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    browser_run(&peer, &other.control).await;
    let owners: Vec<String> = history(&peer)
        .into_iter()
        .filter(|(_, origin, _)| origin != "far_end")
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(owners.len(), 3, "the owner keeps three results");

    // One test from a neighbour, then a stranger's flood: the first report with an 800 KB
    // host name, then 20 short tests.
    let flood = Instant::now();
    let neighbour = Stranger::connect([127, 0, 0, 3], &peer.control)
        .await
        .one_test(host("neighbour".into()))
        .await;
    let long = Stranger::connect([127, 0, 0, 2], &peer.control)
        .await
        .one_test(host("h".repeat(800_000)))
        .await;
    let (status, kept) = api(&peer, &format!("/r/{long}.json"));
    assert_eq!(status, 200);
    let kept: serde_json::Value = serde_json::from_str(&kept).unwrap();
    let kept_name = kept["remote"]["host"]["hostname"]
        .as_str()
        .unwrap_or_default()
        .len();
    let mut last = String::new();
    for _ in 0..20 {
        last = Stranger::connect([127, 0, 0, 2], &peer.control)
            .await
            .one_test(host("stranger".into()))
            .await;
    }
    // Each test's lines go through a limiter: at most 10 of a kind per 10 s, and a count.
    let periods = usize::try_from(flood.elapsed().as_secs() / 10 + 1).unwrap();
    let log = peer.log();
    for what in ["test begins", "test ended"] {
        let lines = log.lines().filter(|l| l.contains(what)).count();
        assert!(
            lines <= 11 * periods,
            "{lines} lines of {what:?} for 22 tests in {:?}",
            flood.elapsed()
        );
    }

    let lines = history(&peer);
    let ids: Vec<&str> = lines.iter().map(|(id, _, _)| id.as_str()).collect();
    for id in &owners {
        assert!(
            ids.contains(&id.as_str()),
            "the owner's result {id} was evicted; history: {lines:?}"
        );
        let (status, _) =
            perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
        assert_eq!(status, 200, "the share link of the owner's {id}");
    }
    let far: Vec<&(String, String, String)> =
        lines.iter().filter(|(_, o, _)| o == "far_end").collect();
    let from_stranger = far
        .iter()
        .filter(|(_, _, p)| p.starts_with("127.0.0.2:"))
        .count();
    assert!(
        far.len() <= 4,
        "{} far-end results kept, beyond half of --keep-results 8",
        far.len()
    );
    assert!(
        from_stranger <= 2,
        "{from_stranger} results of one address kept, beyond its quarter"
    );
    assert!(
        ids.contains(&last.as_str()),
        "the newest far-end result stays"
    );
    assert!(
        ids.contains(&neighbour.as_str()),
        "the flood of one address evicted another's result"
    );
    assert!(
        (1..=255).contains(&kept_name),
        "a host name of {kept_name} bytes was kept (to be cut to 255, the report kept)"
    );
}
