use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use perfpeer_tests::{Peer, perfpeer_bin, perfpeer_json, perfpeer_test, u64_at, wait_for};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unreachable_peer_fails_fast_with_a_clear_error() {
    // A port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let out = perfpeer_test(&[&format!("127.0.0.1:{port}"), "-t", "1"]);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("cannot reach 127.0.0.1:"), "{err}");
    // In words, once: what is wrong and what to do, not the address twice and an errno.
    assert!(
        err.contains("nothing is listening there") && err.contains("perfpeer serve"),
        "{err}"
    );
    assert!(
        !err.contains("os error") && err.matches(&format!(":{port}")).count() == 1,
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(6));
    // Pointing at a peer's data port instead of its control port: the hint says so.
    let peer = perfpeer_tests::Peer::start(&["--open"]);
    let out = perfpeer_test(&[&format!("127.0.0.1:{}", peer.data_port), "-t", "1"]);
    let err = stderr_of(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("control port") && err.contains("data port"),
        "{err}"
    );
    let out = perfpeer_test(&["no-such-host.invalid", "-t", "1"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("cannot resolve"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn bad_flags_exit_non_zero_without_a_panic() {
    // Usage errors exit 2 whether clap finds them or the spec's own check does.
    for args in [
        &["127.0.0.1", "-P", "0"][..],
        &["127.0.0.1", "-P", "129"][..],
        &["127.0.0.1", "-u", "-l", "4"][..],
        &["127.0.0.1", "-u", "-l", "70000"][..],
        &["127.0.0.1", "-t", "-5"][..],
        &["127.0.0.1", "-t", "abc"][..],
        &["127.0.0.1", "--connect-timeout", "0"][..],
        &["127.0.0.1", "--sweep-len", "64,x"][..],
        &["127.0.0.1", "--bogus"][..],
    ] {
        let out = perfpeer_test(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.lines().count() <= 8, "a short error, not a dump: {err}");
    }
}

#[test]
fn caps_are_enforced_with_a_reason() {
    let peer = Peer::start(&["--max-duration", "5", "--max-bitrate", "50M"]);
    let out = perfpeer_test(&[&peer.control, "-t", "10", "-u", "-b", "1M"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("at most 5 s"),
        "{}",
        stderr_of(&out)
    );
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    assert!(
        stderr_of(&out).contains("--max-bitrate"),
        "{}",
        stderr_of(&out)
    );
    // A request/response test cannot "pass -b": its refusal says what it can do instead.
    let out = perfpeer_test(&[&peer.control, "-t", "1", "--rr"]);
    assert!(!out.status.success());
    let text = stderr_of(&out);
    assert!(
        text.contains("--max-bitrate") && !text.contains("pass -b"),
        "{text}"
    );
    let v = perfpeer_json(&[&peer.control, "-t", "1", "-b", "10M"]);
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);
    // A video test's rate is its frames' mean: over the cap refused, under it served.
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-u", "--isochronous=30:80m,0"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("--max-bitrate"),
        "{}",
        stderr_of(&out)
    );
    let v = perfpeer_json(&[&peer.control, "-t", "1", "-u", "--isochronous=30:20m,0"]);
    assert!(u64_at(&v, "/perfpeer/udp/frames/whole") > 20, "{v}");
}

/// Starts a long test in the background; returns the child.
fn background_test(control: &str, args: &[&str]) -> std::process::Child {
    Command::new(perfpeer_bin())
        .arg("test")
        .arg(control)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_vanished_client_frees_its_slot_within_seconds() {
    let peer = Peer::start(&["--max-tests", "1"]);
    let mut client = background_test(&peer.control, &["-t", "60"]);
    assert!(
        wait_for(Duration::from_secs(10), || peer
            .log()
            .contains("test begins")),
        "{}",
        peer.log()
    );
    // While it runs, the single slot is taken.
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    assert!(
        stderr_of(&out).contains("maximum of 1 tests"),
        "{}",
        stderr_of(&out)
    );
    client.kill().unwrap();
    client.wait().unwrap();
    let freed = Instant::now();
    let ok = wait_for(Duration::from_secs(12), || {
        perfpeer_test(&[&peer.control, "-t", "1"]).status.success()
    });
    assert!(ok, "slot never freed; log: {}", peer.log());
    assert!(freed.elapsed() < Duration::from_secs(12));
}

#[test]
fn a_dying_far_peer_gives_a_partial_result() {
    let mut peer = Peer::start(&[]);
    let client = background_test(&peer.control, &["-t", "30", "-J"]);
    assert!(wait_for(Duration::from_secs(10), || peer
        .log()
        .contains("test begins")));
    std::thread::sleep(Duration::from_millis(1500));
    let killed = Instant::now();
    peer.kill();
    let out = client.wait_with_output().unwrap();
    assert!(
        killed.elapsed() < Duration::from_secs(15),
        "client hung after the peer died"
    );
    assert!(!out.status.success(), "a partial test must not exit 0");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("JSON even for a partial test");
    assert_eq!(v["perfpeer"]["status"], "partial", "{v}");
    assert!(v["error"].is_string(), "{v}");
    assert!(
        u64_at(&v, "/end/sum_sent/bytes") > 0,
        "the part that ran is reported"
    );
}

fn ws_handshake(stream: &mut TcpStream, host: &str) {
    let req = format!(
        "GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut buf = [0u8; 1024];
    let n = stream.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 101"),
        "no upgrade"
    );
}

#[test]
fn garbage_and_huge_frames_do_not_disturb_a_running_test() {
    let peer = Peer::start(&[]);
    let control = peer.control.clone();
    let running = std::thread::spawn(move || perfpeer_test(&[&control, "-t", "3", "-J"]));
    std::thread::sleep(Duration::from_millis(800));

    // Plain garbage on the control port.
    let mut s = TcpStream::connect(&peer.control).unwrap();
    s.write_all(&[0xffu8; 4096]).unwrap();
    drop(s);
    // A WebSocket frame announcing 100 MB: the peer closes that connection.
    let mut s = TcpStream::connect(&peer.control).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ws_handshake(&mut s, &peer.control);
    let mut frame = vec![0x81u8, 0xff];
    frame.extend_from_slice(&(100u64 << 20).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    frame.extend_from_slice(&[b'x'; 1024]);
    let _ = s.write_all(&frame);
    let mut rest = Vec::new();
    let closed = s.read_to_end(&mut rest).is_ok();
    assert!(
        closed,
        "the peer should close a connection that announces a 100 MB frame"
    );
    // The data port: a 100 MB length prefix and junk over TCP, junk over UDP.
    let data = format!("127.0.0.1:{}", peer.data_port);
    let mut d = TcpStream::connect(&data).unwrap();
    let _ = d.write_all(&(100u32 << 20).to_be_bytes());
    let _ = d.write_all(&[0x55; 64]);
    drop(d);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    for len in [1, 4, 28, 1400] {
        u.send_to(&vec![0x50; len], &data).unwrap();
    }
    u.send_to(b"PPU1\x01\0\0\0\0\0\0\x01wrong-cookie-xx!", &data)
        .unwrap();
    // Nothing came back to the UDP sender: no reply to unauthenticated datagrams.
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        u.recv(&mut [0u8; 64]).is_err(),
        "the data port answered a stranger"
    );

    let out = running.join().unwrap();
    let v = perfpeer_tests::json_of(&out, &["concurrent"]);
    assert_eq!(v["perfpeer"]["status"], "complete");
    // And the peer still serves new tests.
    let v = perfpeer_json(&[&peer.control, "-t", "1"]);
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);
    assert!(!peer.log().contains("panicked"), "{}", peer.log());
}
