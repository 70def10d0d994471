//! A fuzz target per listener, run for a fixed number of cases with a fixed seed: the control
//! port (HTTP, and WebSocket frames after a real upgrade), the data port (TCP and UDP),
//! `perfpeer iperf3 -s` and `perfpeer iperf -s` (TCP and UDP each), and `perfpeer netserver`.
//! Every target first replays its corpus (`tests/fuzz-corpus/<listener>/`: inputs that once hurt
//! the peer, or would have), then mutations of valid messages. After each target the process must be alive, within memory and thread bounds,
//! and still serve a real test. (DCCP's listener needs a kernel with DCCP: the dccp_vm test
//! drives it.)

#![allow(
    clippy::cast_possible_truncation,
    reason = "frames built by hand with lengths that fit their fields"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;

use perfpeer_tests::fuzz::{Rng, corpus, mutate, rss_and_threads};
use perfpeer_tests::{Peer, Running, perfpeer_bin, perfpeer_test, wait_for};

/// Generated cases per target (after the corpus).
const CASES: usize = 200;
/// The seed of every target: a failure names its case, and the same case comes back.
const SEED: u64 = 0x0005_eed0_ffee;
/// Memory a peer may hold after a target (KiB).
const MAX_RSS_KIB: u64 = 300 * 1024;
/// Threads a peer may hold right after a target (a thread per stream or flow it took on: the
/// caps per source must keep a flood from one address well under this).
const MAX_THREADS: u64 = 100;

/// Sends `input` on a fresh TCP connection to `to`, reads whatever comes back for a moment,
/// and closes.
fn poke_tcp(to: SocketAddr, input: &[u8]) {
    let Ok(mut s) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) else {
        return;
    };
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let _ = s.write_all(input);
    let mut buf = [0u8; 4096];
    let _ = s.read(&mut buf);
}

/// Sends `input` as one datagram from a fresh socket (a new source port each time).
fn poke_udp(to: SocketAddr, input: &[u8]) {
    if let Ok(s) = UdpSocket::bind("127.0.0.1:0") {
        let _ = s.send_to(input, to);
    }
}

/// Runs a target: the corpus, then `CASES` mutations of `seeds`, each through `send`.
fn run_target(listener: &str, seeds: &[Vec<u8>], mut send: impl FnMut(&[u8])) {
    let kept = corpus(listener);
    for (name, input) in &kept {
        eprintln!("fuzz {listener}: corpus {name} ({} bytes)", input.len());
        send(input);
    }
    let mut rng = Rng::new(SEED);
    for case in 0..CASES {
        let seed = &seeds[case % seeds.len()];
        send(&mutate(&mut rng, seed));
    }
    eprintln!(
        "fuzz {listener}: {} corpus inputs and {CASES} cases from seed {SEED:#x}",
        kept.len()
    );
}

/// The checks after a target on process `pid`: alive, bounded, still serving.
fn check_process(listener: &str, pid: u32, alive: bool, serves: impl Fn() -> bool) {
    assert!(alive, "{listener}: the process died");
    let (rss, threads) = rss_and_threads(pid);
    eprintln!("fuzz {listener}: {rss} KiB resident, {threads} threads right after the target");
    assert!(
        rss < MAX_RSS_KIB && threads < MAX_THREADS,
        "{listener}: {rss} KiB resident, {threads} threads right after the target"
    );
    // Then what the target started (flows, pre-hello connections) ends by itself.
    let settled = wait_for(Duration::from_secs(15), || {
        let (rss, threads) = rss_and_threads(pid);
        rss < MAX_RSS_KIB && threads < MAX_THREADS
    });
    let (rss, threads) = rss_and_threads(pid);
    assert!(
        settled,
        "{listener}: {rss} KiB resident, {threads} threads after the target"
    );
    // Still serving: a test within 30 s (a place the target left idle is shed to a newcomer
    // only once its protection runs out).
    assert!(
        wait_for(Duration::from_secs(30), &serves),
        "{listener}: no longer serves a test"
    );
}

fn http_seeds(control: &str) -> Vec<Vec<u8>> {
    vec![
        format!("GET / HTTP/1.1\r\nHost: {control}\r\nAccept-Encoding: gzip\r\n\r\n").into_bytes(),
        format!(
            "POST /api/results/0123456789abcdef0123456789abcdef/link HTTP/1.1\r\nHost: {control}\r\n\
             Authorization: Bearer x\r\nContent-Length: 17\r\n\r\n{{\"enabled\":false}}"
        )
        .into_bytes(),
        upgrade_request(control).into_bytes(),
    ]
}

fn upgrade_request(control: &str) -> String {
    format!(
        "GET /ws HTTP/1.1\r\nHost: {control}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
}

/// A masked client text frame.
fn text_frame(text: &str) -> Vec<u8> {
    let payload = text.as_bytes();
    let mut f = vec![0x81];
    if payload.len() < 126 {
        f.push(0x80 | payload.len() as u8);
    } else {
        f.push(0x80 | 126);
        f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    }
    let mask = [0x11, 0x22, 0x33, 0x44];
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

#[test]
fn the_control_port_survives_fuzzed_http_and_websocket_frames() {
    let mut peer = Peer::start(&[]);
    let to: SocketAddr = peer.control.parse().unwrap();
    run_target("http", &http_seeds(&peer.control), |input| {
        poke_tcp(to, input)
    });
    let hello = format!(
        "{{\"type\":\"hello\",\"protocol_version\":{}}}",
        perfpeer_shared::PROTOCOL_VERSION
    );
    let open = r#"{"type":"open","spec":{"protocol":"tcp","direction":"reverse","streams":2,"len":131072,"end":{"time":{"duration":1.0}}}}"#;
    let ws_seeds = vec![
        text_frame(&hello),
        [text_frame(&hello), text_frame(open)].concat(),
        [text_frame(&hello), text_frame(r#"{"type":"list_tests"}"#)].concat(),
    ];
    let upgrade = upgrade_request(&peer.control);
    run_target("ws", &ws_seeds, |frames| {
        let Ok(mut s) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) else {
            return;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = s.write_all(upgrade.as_bytes());
        let mut buf = [0u8; 1024];
        if s.read(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"HTTP/1.1 101"))
        {
            let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
            let _ = s.write_all(frames);
            let _ = s.read(&mut buf);
        }
    });
    let alive = peer.is_running();
    check_process("control port", peer.pid(), alive, || {
        perfpeer_test(&[&peer.control, "-n", "1M"]).status.success()
    });
}

#[test]
fn the_data_port_survives_fuzzed_hellos_and_datagrams() {
    let mut peer = Peer::start(&[]);
    let data = SocketAddr::from(([127, 0, 0, 1], peer.data_port));
    let cookie: Vec<u8> = (0u8..16).collect();
    let tcp_hello = [b"PPT1".as_slice(), &1u32.to_be_bytes(), &cookie].concat();
    run_target("data_tcp", &[tcp_hello], |input| poke_tcp(data, input));
    let udp_seeds = vec![
        [b"PPU1\x01\0\0\0".as_slice(), &1u32.to_be_bytes(), &cookie].concat(),
        [
            b"PPU1\x05\0\0\0".as_slice(),
            &1u32.to_be_bytes(),
            &cookie,
            &cookie,
        ]
        .concat(),
        [
            b"PPU1\x03\0\0\0".as_slice(),
            &1u32.to_be_bytes(),
            &7u64.to_be_bytes(),
        ]
        .concat(),
        [1u64.to_be_bytes().as_slice(), &[0; 1400]].concat(),
    ];
    run_target("data_udp", &udp_seeds, |input| poke_udp(data, input));
    let alive = peer.is_running();
    check_process("data port", peer.pid(), alive, || {
        perfpeer_test(&[&peer.control, "-n", "1M"]).status.success()
            && perfpeer_test(&[&peer.control, "-u", "-t", "1"])
                .status
                .success()
    });
}

/// Starts `perfpeer ROLE -s -p PORT` and waits for its port.
fn stock_role_server(role: &str) -> (Running, u16) {
    let port = perfpeer_tests::free_port();
    let server = Running::spawn(&perfpeer_bin(), &[role, "-s", "-p", &port.to_string()]);
    assert!(wait_for(Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    (server, port)
}

fn client_of(role: &str, port: u16, extra: &[&str]) -> bool {
    let p = port.to_string();
    let mut args = vec![role, "-c", "127.0.0.1", "-p", &p, "-t", "1"];
    args.extend_from_slice(extra);
    Command::new(perfpeer_bin())
        .args(&args)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_iperf3_server_survives_fuzzed_control_and_stream_hellos() {
    let (mut server, port) = stock_role_server("iperf3");
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let params =
        br#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":131072,"client_version":"3.12"}"#;
    let mut control = vec![b'a'; 36];
    control.push(0);
    control.extend_from_slice(&(params.len() as u32).to_be_bytes());
    control.extend_from_slice(params);
    run_target("iperf3_tcp", &[control], |input| poke_tcp(to, input));
    run_target("iperf3_udp", &[b"9876".to_vec()], |input| {
        poke_udp(to, input)
    });
    let alive = matches!(server.0.try_wait(), Ok(None));
    check_process("iperf3 -s", server.0.id(), alive, || {
        client_of("iperf3", port, &[]) && client_of("iperf3", port, &["-u"])
    });
}

#[test]
fn the_iperf2_server_survives_fuzzed_headers_and_flows() {
    let (mut server, port) = stock_role_server("iperf");
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let mut header = [0u8; 60];
    header[0..4].copy_from_slice(&0x4000_0000u32.to_be_bytes());
    header[4..8].copy_from_slice(&1i32.to_be_bytes());
    header[12..16].copy_from_slice(&131_072i32.to_be_bytes());
    header[20..24].copy_from_slice(&(-100i32).to_be_bytes());
    run_target("iperf2_tcp", &[header.to_vec()], |input| {
        poke_tcp(to, input)
    });
    let mut datagram = vec![0u8; 16];
    datagram[..4].copy_from_slice(&1i32.to_be_bytes());
    datagram.extend_from_slice(&header[..24]);
    datagram.resize(1470, 0);
    let mut fin = datagram.clone();
    fin[..4].copy_from_slice(&(-2i32).to_be_bytes());
    run_target("iperf2_udp", &[datagram, fin], |input| poke_udp(to, input));
    let alive = matches!(server.0.try_wait(), Ok(None));
    check_process("iperf -s", server.0.id(), alive, || {
        client_of("iperf", port, &[]) && client_of("iperf", port, &["-u", "-b", "1M"])
    });
}

/// netserver's control port: mutations of the requests a stock netperf 2.7.1 sent. A mutated
/// request that is still a test starts one; the connection's close ends it.
#[test]
fn the_netserver_survives_fuzzed_control_messages() {
    let port = perfpeer_tests::free_port();
    let mut server = Running::spawn(
        &perfpeer_bin(),
        &[
            "netserver",
            "-D",
            "-L",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ],
    );
    assert!(wait_for(Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let fixture = |test: &str| {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        std::fs::read(
            dir.join("fixtures/netperf-2.7.1")
                .join(test)
                .join("request.bin"),
        )
        .expect("fixture")
    };
    let seeds: Vec<Vec<u8>> = [
        "tcp_stream",
        "tcp_maerts",
        "tcp_rr",
        "tcp_crr",
        "tcp_cc",
        "udp_rr",
    ]
    .into_iter()
    .map(fixture)
    .collect();
    run_target("netserver", &seeds, |input| poke_tcp(to, input));
    let alive = matches!(server.0.try_wait(), Ok(None));
    check_process("netserver", server.0.id(), alive, || {
        netperf_rr_works(to, &fixture("tcp_rr"))
    });
}

/// One TCP_RR transaction with the captured request, counted by the server.
fn netperf_rr_works(to: SocketAddr, request: &[u8]) -> bool {
    let word =
        |b: &[u8], i: usize| i32::from_be_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap());
    let mut request = request.to_vec();
    request[8 + 14 * 4..8 + 15 * 4].copy_from_slice(&(-1i32).to_be_bytes());
    let Ok(mut control) = TcpStream::connect(to) else {
        return false;
    };
    let _ = control.set_read_timeout(Some(Duration::from_secs(10)));
    let mut answer = [0u8; 656];
    if control.write_all(&request).is_err() || control.read_exact(&mut answer).is_err() {
        return false;
    }
    let Ok(data_port) = u16::try_from(word(&answer, 11)) else {
        return false;
    };
    if answer[4..8] != [0; 4] {
        return false;
    }
    let Ok(mut data) = TcpStream::connect(("127.0.0.1", data_port)) else {
        return false;
    };
    let _ = data.set_read_timeout(Some(Duration::from_secs(10)));
    let mut one = [0u8; 1];
    let exchanged = data.write_all(&[1]).is_ok() && data.read_exact(&mut one).is_ok();
    let mut results = [0u8; 656];
    exchanged && control.read_exact(&mut results).is_ok() && word(&results, 9) == 1
}

#[test]
fn the_corpus_is_there_for_every_target() {
    for listener in [
        "http",
        "ws",
        "data_tcp",
        "data_udp",
        "iperf3_tcp",
        "iperf3_udp",
        "iperf2_tcp",
        "iperf2_udp",
        "netserver",
    ] {
        assert!(
            !corpus(listener).is_empty(),
            "tests/fuzz-corpus/{listener} is empty"
        );
    }
}
