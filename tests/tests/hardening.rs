//! The far end as an attacker on the same network would try it: UDP reflection with a forged
//! source (in network namespaces of the test's own), a stream whose receiver went away, a
//! trickling client against the deadline, byte counts that outlast --max-duration, a pre-hello
//! flood from one address while another tests, and buffers a client asks for beyond the peer's
//! memory budget.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "raw packets built by hand: small constants and lengths under 64 KiB in 16-bit fields"
)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use perfpeer_shared::control::{ClientMsg, ErrorCode, ServerMsg};
use perfpeer_shared::spec::{Direction, EndCondition, Protocol, TestSpec};
use perfpeer_shared::units::BitRate;
use perfpeer_tests::netns::{self, ADDR_A, ADDR_B, TwoHosts};
use perfpeer_tests::{Peer, Running, connect_from, have, perfpeer_test, raise_fd_limit, wait_for};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A far-end client speaking the control protocol by hand, so it can misbehave.
struct FarClient {
    ws: Ws,
}

impl FarClient {
    async fn connect(control: &str) -> FarClient {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{control}/ws"))
            .await
            .expect("WebSocket to the peer");
        let mut c = FarClient { ws };
        c.send(&ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: None,
        })
        .await;
        assert!(matches!(c.recv().await, ServerMsg::Welcome { .. }));
        c
    }

    async fn send(&mut self, msg: &ClientMsg) {
        self.ws
            .send(Message::text(msg.to_json()))
            .await
            .expect("send");
    }

    /// The next message within `limit`, skipping pings; `None` on time-out or close.
    async fn recv_within(&mut self, limit: Duration) -> Option<ServerMsg> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()??;
            match msg.ok()? {
                Message::Text(t) => return ServerMsg::parse(t.as_str()).ok(),
                Message::Close(_) => return None,
                _ => continue,
            }
        }
    }

    async fn recv(&mut self) -> ServerMsg {
        self.recv_within(Duration::from_secs(20))
            .await
            .expect("a message from the peer")
    }

    /// Opens a test; returns its cookie and data port.
    async fn open(&mut self, spec: &TestSpec) -> ([u8; 16], u16) {
        self.send(&ClientMsg::Open {
            spec: spec.clone(),
            group: None,
        })
        .await;
        match self.recv().await {
            ServerMsg::Accepted {
                cookie, data_port, ..
            } => (cookie_bytes(&cookie), data_port),
            other => panic!("expected accepted, got {other:?}"),
        }
    }

    /// Waits for `ready`, then begins; false if `ready` does not come within `limit`.
    async fn begin_when_ready(&mut self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.recv_within(left).await {
                Some(ServerMsg::Ready) => break,
                Some(ServerMsg::Error { .. }) | None => return false,
                Some(_) => continue,
            }
        }
        self.send(&ClientMsg::Begin).await;
        true
    }
}

fn cookie_bytes(hex: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex cookie");
    }
    out
}

/// perfpeer's UDP hello datagram (proto/src/wire.rs): "PPU1", kind 1, stream id, cookie.
fn udp_hello(stream_id: u32, cookie: &[u8; 16]) -> Vec<u8> {
    let mut d = b"PPU1\x01\0\0\0".to_vec();
    d.extend_from_slice(&stream_id.to_be_bytes());
    d.extend_from_slice(cookie);
    d
}

/// perfpeer's TCP stream hello (proto/src/wire.rs): "PPT1", stream id, cookie.
fn tcp_hello(stream_id: u32, cookie: &[u8; 16]) -> Vec<u8> {
    let mut d = b"PPT1".to_vec();
    d.extend_from_slice(&stream_id.to_be_bytes());
    d.extend_from_slice(cookie);
    d
}

/// A one-second TCP test.
fn one_second_tcp() -> TestSpec {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(1),
    };
    spec
}

/// A UDP datagram with a forged source, sent through a raw socket (needs root).
fn send_forged(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) {
    let udp_len = 8 + payload.len();
    let mut packet = vec![0u8; 20 + udp_len];
    packet[0] = 0x45; // IPv4, 5-word header; total length, id and checksum: filled in by Linux
    packet[8] = 64; // TTL
    packet[9] = libc::IPPROTO_UDP as u8;
    packet[12..16].copy_from_slice(&from.ip().octets());
    packet[16..20].copy_from_slice(&to.ip().octets());
    packet[20..22].copy_from_slice(&from.port().to_be_bytes());
    packet[22..24].copy_from_slice(&to.port().to_be_bytes());
    packet[24..26].copy_from_slice(&(udp_len as u16).to_be_bytes());
    // UDP checksum 0: none, allowed over IPv4.
    packet[28..].copy_from_slice(payload);
    // SAFETY: a raw IPv4 socket, one sendto of an owned buffer to a valid sockaddr_in, closed
    // after.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW);
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        let dest = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(*to.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let sent = libc::sendto(
            fd,
            packet.as_ptr().cast(),
            packet.len(),
            0,
            (&dest as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        assert_eq!(sent, packet.len() as isize, "raw sendto: {err}");
    }
}

/// Bytes and datagrams `socket` receives until `until`.
fn count_received(socket: &UdpSocket, until: Instant) -> (u64, u64) {
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let (mut bytes, mut datagrams) = (0u64, 0u64);
    let mut buf = [0u8; 65_536];
    while Instant::now() < until {
        if let Ok(n) = socket.recv(&mut buf) {
            bytes += n as u64;
            datagrams += 1;
        }
    }
    (bytes, datagrams)
}

fn reverse_udp(rate: u64, secs: u64) -> TestSpec {
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.direction = Direction::Reverse;
    spec.bitrate = Some(BitRate(rate));
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(secs),
    };
    spec
}

/// A reverse UDP test opened by host A, whose stream hello is forged: once from a third party's
/// address on the link, once from host A's own address but another port (a socket that never
/// asked). Neither victim may receive the test's data; the second gets at most the one
/// challenge, no larger than the forged hello.
#[test]
fn a_forged_udp_hello_reflects_nothing() {
    if !netns::available() {
        perfpeer_tests::skip("network namespaces need root and iproute2");
        return;
    }
    let hosts = TwoHosts::new("rf", "1gbit").expect("test hosts");
    const VICTIM: &str = "198.18.0.3";
    hosts.add_address_a(VICTIM).expect("third address");
    let peer = Peer::start_with(hosts.prefix_b(), &format!("{ADDR_B}:0"), "0", &[]);
    let control = peer.control.clone();
    let worker = std::thread::spawn(move || {
        hosts.enter_a().expect("enter host A");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let victim_ip: Ipv4Addr = VICTIM.parse().unwrap();
        let a_ip: Ipv4Addr = ADDR_A.parse().unwrap();
        let b_ip: Ipv4Addr = ADDR_B.parse().unwrap();
        let third_party = UdpSocket::bind((victim_ip, 0)).unwrap();
        let own_other_port = UdpSocket::bind((a_ip, 0)).unwrap();
        let mut seen = Vec::new();
        for victim in [&third_party, &own_other_port] {
            let SocketAddr::V4(victim_addr) = victim.local_addr().unwrap() else {
                unreachable!()
            };
            rt.block_on(async {
                let mut client = FarClient::connect(&control).await;
                let (cookie, data_port) = client.open(&reverse_udp(200_000_000, 3)).await;
                let server = SocketAddrV4::new(b_ip, data_port);
                for _ in 0..3 {
                    send_forged(victim_addr, server, &udp_hello(1, &cookie));
                }
                // Before the fix the stream was bound at once: begin, and the data flowed.
                let began = client.begin_when_ready(Duration::from_secs(3)).await;
                let counted = count_received(victim, Instant::now() + Duration::from_secs(4));
                seen.push((victim_addr, began, counted));
            });
        }
        (hosts, seen)
    });
    let (_hosts, seen) = worker.join().expect("host A's thread");
    let (third, began, (bytes, _)) = seen[0];
    assert_eq!(bytes, 0, "{third}, a third party, was sent {bytes} bytes");
    assert!(!began, "a stream bound from a forged source ({third})");
    let (other_port, began, (bytes, datagrams)) = seen[1];
    assert!(
        !began,
        "a stream bound from {other_port}, which never confirmed"
    );
    assert!(
        datagrams <= 3 && bytes <= 3 * 28,
        "{other_port} was sent {datagrams} datagrams, {bytes} bytes: more than the challenges \
         its three hellos asked for"
    );
    drop(peer);
}

/// Does perfpeer's UDP stream handshake by hand (hello, challenge, confirm, ack) on a socket of
/// the test's own; returns it connected to the data port.
fn bind_udp_stream(data: SocketAddr, stream_id: u32, cookie: &[u8; 16]) -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(data).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let mut outgoing = udp_hello(stream_id, cookie);
    for _ in 0..20 {
        socket.send(&outgoing).unwrap();
        let Ok(n) = socket.recv(&mut buf) else {
            continue;
        };
        match (&buf[..4], buf[4]) {
            (b"PPU1", 4) if n >= 28 => {
                // The challenge: echo its nonce in a confirm (kind 5) with the cookie.
                outgoing = b"PPU1\x05\0\0\0".to_vec();
                outgoing.extend_from_slice(&stream_id.to_be_bytes());
                outgoing.extend_from_slice(cookie);
                outgoing.extend_from_slice(&buf[12..28]);
            }
            (b"PPU1", 2) => return socket,
            _ => {}
        }
    }
    panic!("the UDP stream was never acked");
}

/// A reverse UDP stream whose receiver closes its socket: the ICMP port-unreachable errors stop
/// the far end's sender well before the test's time is up.
#[tokio::test]
async fn a_udp_sender_stops_when_its_receiver_is_gone() {
    let peer = Peer::start(&[]);
    let mut client = FarClient::connect(&peer.control).await;
    let (cookie, data_port) = client.open(&reverse_udp(20_000_000, 20)).await;
    let data = SocketAddr::from(([127, 0, 0, 1], data_port));
    let socket = tokio::task::spawn_blocking(move || bind_udp_stream(data, 1, &cookie))
        .await
        .unwrap();
    assert!(client.begin_when_ready(Duration::from_secs(5)).await);
    let mut buf = [0u8; 2048];
    socket
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    assert!(socket.recv(&mut buf).is_ok(), "the stream's data arrives");
    drop(socket);
    let closed = Instant::now();
    loop {
        match client.recv_within(Duration::from_secs(8)).await {
            Some(ServerMsg::SendersDone) => break,
            Some(ServerMsg::Interval { .. }) => continue,
            other => panic!(
                "expected senders_done within seconds of the receiver closing, got {other:?} after {:?}",
                closed.elapsed()
            ),
        }
    }
    assert!(
        closed.elapsed() < Duration::from_secs(8),
        "the sender went on for {:?}",
        closed.elapsed()
    );
}

/// A byte count that would take longer than --max-duration at its rate is refused at once, by
/// our far end and by our iperf3 server (a stock client).
#[test]
fn a_byte_count_beyond_max_duration_at_its_rate_is_refused() {
    let peer = Peer::start(&["--max-duration", "5"]);
    let started = Instant::now();
    let out = perfpeer_test(&[&peer.control, "-n", "2000G", "-b", "100M"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(text.contains("--max-duration"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(peer);

    if !have("iperf3") {
        return;
    }
    let port = perfpeer_tests::free_port();
    let p = port.to_string();
    let _server = Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &["iperf3", "-s", "-p", &p, "--max-duration", "5"],
    );
    assert!(wait_for(Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    let started = Instant::now();
    let out = Running::spawn(
        Path::new("iperf3"),
        &["-c", "127.0.0.1", "-p", &p, "-n", "10G", "-b", "100M"],
    )
    .wait(Duration::from_secs(30));
    assert!(
        !out.status.success(),
        "a stock client's 800 s byte count ran"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refusing took {:?}",
        started.elapsed()
    );
}

/// 700 connections from 127.0.0.2 to the data port that never send a hello (more than the
/// port's places for unidentified connections): a test from 127.0.0.1 still gets its stream,
/// and the peer logs the flood as counts, not a line per connection.
#[test]
fn a_pre_hello_flood_from_one_address_does_not_deny_another() {
    raise_fd_limit();
    let peer = Peer::start(&[]);
    let data = SocketAddr::from(([127, 0, 0, 1], peer.data_port));
    let flood: Vec<TcpStream> = (0..700)
        .filter_map(|_| connect_from([127, 0, 0, 2], data))
        .collect();
    assert!(flood.len() >= 600, "only {} flood connections", flood.len());
    std::thread::sleep(Duration::from_millis(500));
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-P", "4"]);
    assert!(
        out.status.success(),
        "the second address was denied: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = peer.log();
    let lines = log.lines().filter(|l| l.contains("dropped")).count();
    assert!(
        lines < 20,
        "{lines} log lines about dropped connections: not rate-limited"
    );
    drop(flood);
}

/// A reverse test of 128 streams with 16 MiB writes needs about 2 GiB of buffers on the far
/// end: a peer with --max-memory 256M refuses it with a reason, before allocating anything.
#[tokio::test]
async fn buffers_beyond_the_memory_budget_are_refused() {
    let peer = Peer::start(&["--max-memory", "256M"]);
    let mut client = FarClient::connect(&peer.control).await;
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.direction = Direction::Reverse;
    spec.streams = 128;
    spec.len = 16 << 20;
    client.send(&ClientMsg::Open { spec, group: None }).await;
    match client.recv().await {
        ServerMsg::Error { code, message } => {
            assert_eq!(code, ErrorCode::OverLimit);
            assert!(message.contains("--max-memory"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // A test that fits still runs.
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-R"]);
    assert!(out.status.success());
}

/// Resident memory of process `pid`, in KiB (VmRSS).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// An iperf 2 test header (60 bytes, extended) asking for a reverse stream with a buffer length
/// of 2 GiB: `perfpeer iperf -s` must not take the client's word for its memory (before: RSS
/// grew past 1 GB from one header).
#[test]
fn an_iperf2_header_bomb_does_not_grow_the_server() {
    let port = perfpeer_tests::free_port();
    let p = port.to_string();
    let server = Running::spawn(&perfpeer_tests::perfpeer_bin(), &["iperf", "-s", "-p", &p]);
    let pid = server.0.id();
    assert!(wait_for(Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    let before = rss_kib(pid);
    let mut header = [0u8; 60];
    header[0..4].copy_from_slice(&0x4400_0000u32.to_be_bytes()); // EXTEND | VERSION2
    header[4..8].copy_from_slice(&1i32.to_be_bytes());
    header[12..16].copy_from_slice(&i32::MAX.to_be_bytes()); // buffer length: 2 GiB
    header[20..24].copy_from_slice(&(-300i32).to_be_bytes()); // 3 s
    header[32..34].copy_from_slice(&0x0400u16.to_be_bytes()); // reverse
    let bombs: Vec<TcpStream> = (0..4)
        .map(|_| {
            use std::io::Write;
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(&header).unwrap();
            s
        })
        .collect();
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(bombs);
    assert!(
        peak < before + 100 * 1024,
        "RSS went from {before} KiB to {peak} KiB on four headers"
    );
}

/// A TCP data stream from another address than the control connection's is refused, unless the
/// peer was started with --data-from-any-address (for NAT setups that map them apart).
#[tokio::test]
async fn data_from_another_address_needs_the_switch() {
    for (flags, joins) in [(&[][..], false), (&["--data-from-any-address"][..], true)] {
        let peer = Peer::start(flags);
        let mut client = FarClient::connect(&peer.control).await;
        let (cookie, data_port) = client.open(&one_second_tcp()).await;
        let hello = tcp_hello(1, &cookie);
        let data = SocketAddr::from(([127, 0, 0, 1], data_port));
        // The control connection came from 127.0.0.1; the stream comes from 127.0.0.2.
        let _stream = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut s = connect_from([127, 0, 0, 2], data).expect("connect");
            s.write_all(&hello).unwrap();
            s
        })
        .await
        .unwrap();
        let ready = client.begin_when_ready(Duration::from_secs(3)).await;
        assert_eq!(ready, joins, "flags {flags:?}");
    }
}

/// The 600 attacking addresses of the many-address tests: 127.3.0.1 and on (more than a /24:
/// the totals must hold for more neighbours than a LAN has).
fn attacker(i: usize) -> [u8; 4] {
    let i = u16::try_from(i + 1).expect("a few hundred");
    let [hi, lo] = i.to_be_bytes();
    [127, 3, hi, lo]
}

/// Holds one connection from each of `sources` to `to`, saying nothing, and opens it again
/// whenever the peer closes it, until `stop`: the places of a listener kept full by many
/// addresses at once.
fn hold_idle_connections(
    to: SocketAddr,
    sources: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    use std::io::Read;
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut held: Vec<Option<TcpStream>> = (0..sources).map(|_| None).collect();
        let mut opened = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for (i, slot) in held.iter_mut().enumerate() {
                let closed = slot.as_mut().is_none_or(|s| {
                    let mut byte = [0u8; 1];
                    !matches!(s.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                });
                if closed {
                    *slot = connect_from(attacker(i), to).inspect(|s| {
                        s.set_nonblocking(true).unwrap();
                    });
                    opened += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        opened
    })
}

/// Holds one `/ws` from each of `sources` after its hello (answering pings, so the peer sees
/// a live client that asks for nothing), opening it again when the peer closes it.
fn hold_idle_websockets(
    control: SocketAddr,
    sources: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    (0..sources)
        .map(|i| {
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let Some(tcp) = connect_from(attacker(i), control) else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    tcp.set_nonblocking(true).unwrap();
                    let tcp = tokio::net::TcpStream::from_std(tcp).unwrap();
                    let url = format!("ws://{control}/ws");
                    let Ok((mut ws, _)) = tokio_tungstenite::client_async(url, tcp).await else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    let hello = ClientMsg::Hello {
                        protocol_version: perfpeer_shared::PROTOCOL_VERSION,
                        token: None,
                    };
                    let _ = ws.send(Message::text(hello.to_json())).await;
                    // Reading answers the peer's pings; the loop ends when the peer closes.
                    while !stop.load(Ordering::Relaxed) {
                        match tokio::time::timeout(Duration::from_millis(200), ws.next()).await {
                            Ok(Some(Ok(_))) | Err(_) => continue,
                            Ok(_) => break,
                        }
                    }
                }
            })
        })
        .collect()
}

/// 600 addresses each holding an idle connection to the control port, an idle `/ws` after
/// its hello, and a data connection that never sends its hello — more places than every
/// listener has, from more addresses than a LAN's /24: a newcomer still loads the page and
/// runs a test (it takes an idle place; a busy one is kept), and the peer's log stays short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_addresses_holding_idle_places_do_not_deny_a_newcomer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    raise_fd_limit();
    let peer = Peer::start(&[]);
    let control: SocketAddr = peer.control.parse().unwrap();
    let data = SocketAddr::from(([127, 0, 0, 1], peer.data_port));
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let http = hold_idle_connections(control, 600, stop.clone());
    let streams = hold_idle_connections(data, 600, stop.clone());
    let sockets = hold_idle_websockets(control, 600, stop.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let control_addr = peer.control.clone();
    let (page, test) = tokio::task::spawn_blocking(move || {
        let page = perfpeer_tests::http_request(&control_addr, "GET", "/", "", "");
        // Once in five full runs (2026-12-07, beside the Wi-Fi VM) the newcomer's control
        // connection was shed while it was still idle, before its test began ("control
        // connection closed"): a newcomer is only as safe as any idle place until its hello.
        // A second try is allowed, the first failure printed; docs/security.md says so.
        let mut test = perfpeer_test(&[&control_addr, "-t", "1", "-P", "2"]);
        if !test.status.success() {
            eprintln!(
                "the newcomer's first test failed: {}",
                String::from_utf8_lossy(&test.stderr)
            );
            test = perfpeer_test(&[&control_addr, "-t", "1", "-P", "2"]);
        }
        (page, test)
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    let opened = http.join().unwrap() + streams.join().unwrap();
    for s in sockets {
        let _ = s.await;
    }
    assert_eq!(page.0, 200, "the page was denied");
    assert!(
        test.status.success(),
        "the newcomer's test was denied: {}\nlog: {}",
        String::from_utf8_lossy(&test.stderr),
        peer.log()
    );
    assert!(opened >= 1200, "only {opened} attacking connections");
    let lines = peer.log().lines().count();
    assert!(lines < 60, "{lines} log lines:\n{}", peer.log());
}

/// An anonymous client opening tests as fast as it can for 3 s — some the peer must refuse
/// (a spec it does not take), some beyond `--max-tests` — writes a few lines and counts, not a
/// line per open.
#[tokio::test]
async fn a_flood_of_refused_opens_writes_a_bounded_log() {
    let peer = Peer::start(&["--max-tests", "1"]);
    // One test holds the only place (it waits for its streams).
    let mut holder = FarClient::connect(&peer.control).await;
    let _ = holder.open(&one_second_tcp()).await;
    let before = peer.log().lines().count();
    let mut bad = one_second_tcp();
    bad.streams = 0;
    let started = Instant::now();
    let mut opens = 0u32;
    while started.elapsed() < Duration::from_secs(3) {
        let mut c = FarClient::connect(&peer.control).await;
        let spec = if opens.is_multiple_of(2) {
            &bad
        } else {
            &one_second_tcp()
        };
        c.send(&ClientMsg::Open {
            spec: spec.clone(),
            group: None,
        })
        .await;
        assert!(
            matches!(c.recv().await, ServerMsg::Error { .. }),
            "the open was not refused"
        );
        opens += 1;
    }
    assert!(opens >= 50, "only {opens} opens in 3 s");
    let written = peer.log().lines().count() - before;
    assert!(
        written <= 12,
        "{written} log lines for {opens} refused opens:\n{}",
        peer.log()
    );
}
