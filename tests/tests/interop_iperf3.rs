use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::time::Duration;

use perfpeer_tests::{Running, free_port, have, perfpeer_bin, u64_at, wait_for};

const BLOCK: u64 = 128 * 1024;

/// `perfpeer iperf3 -s` on a free port.
fn our_server(extra: &[&str]) -> (Running, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut args = vec!["iperf3", "-s", "-p", &p];
    args.extend_from_slice(extra);
    let server = Running::spawn(&perfpeer_bin(), &args);
    assert!(wait_for(Duration::from_secs(5), || TcpStream::connect((
        "127.0.0.1",
        port
    ))
    .is_ok()));
    (server, port)
}

/// Stock `iperf3 -s -1` on a free port (not probed: with -1 a probe would be its one test).
fn stock_server() -> (Running, u16) {
    let port = free_port();
    let server = Running::spawn(Path::new("iperf3"), &["-s", "-1", "-p", &port.to_string()]);
    assert!(
        perfpeer_tests::wait_listening(port, Duration::from_secs(10)),
        "stock iperf3 -s never listened on {port}"
    );
    (server, port)
}

fn stock_client(port: u16, args: &[&str]) -> serde_json::Value {
    let p = port.to_string();
    let mut full = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    full.extend_from_slice(args);
    let out = Running::spawn(Path::new("iperf3"), &full).wait(Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stock iperf3 {args:?} failed: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn our_client(port: u16, args: &[&str]) -> serde_json::Value {
    let p = port.to_string();
    let mut full = vec!["iperf3", "-c", "127.0.0.1", "-p", &p, "-J"];
    full.extend_from_slice(args);
    let out = Running::spawn(&perfpeer_bin(), &full).wait(Duration::from_secs(30));
    perfpeer_tests::json_of(&out, args)
}

fn close(a: u64, b: u64, tolerance: u64, what: &str) {
    assert!(
        a.abs_diff(b) <= tolerance,
        "{what}: {a} vs {b} differ by more than {tolerance}"
    );
}

#[test]
fn stock_client_against_our_server() {
    if !have("iperf3") {
        return;
    }
    let (_server, port) = our_server(&[]);
    let v = stock_client(port, &["-t", "2"]);
    close(
        u64_at(&v, "/end/sum_sent/bytes"),
        u64_at(&v, "/end/sum_received/bytes"),
        BLOCK,
        "TCP",
    );
    let v = stock_client(port, &["-t", "2", "-P", "2"]);
    close(
        u64_at(&v, "/end/sum_sent/bytes"),
        u64_at(&v, "/end/sum_received/bytes"),
        2 * BLOCK,
        "TCP -P 2",
    );
    let v = stock_client(port, &["-u", "-b", "10M", "-t", "2"]);
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 2_000_000, "{sent}");
    close(
        sent,
        u64_at(&v, "/end/sum_received/bytes"),
        16 * 1460,
        "UDP",
    );
    assert_eq!(u64_at(&v, "/end/sum/lost_packets"), 0);
    // -R: the stock client stops counting at TEST_END, so what was in flight is sent, not
    // read: the socket buffers' worth, plus what our sender writes until TEST_END reaches it
    // (20 ms at loopback rates on a loaded machine is 80 MB): 16 MiB or 5 %, whichever is more.
    let v = stock_client(port, &["-t", "2", "-R"]);
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    close(
        sent,
        u64_at(&v, "/end/sum_received/bytes"),
        (16 << 20).max(sent / 20),
        "TCP -R",
    );
    let v = stock_client(port, &["-t", "2", "--bidir"]);
    close(
        u64_at(&v, "/end/sum_sent/bytes"),
        u64_at(&v, "/end/sum_received/bytes"),
        BLOCK,
        "bidir forward",
    );
    assert!(u64_at(&v, "/end/sum_received_bidir_reverse/bytes") > 0);
}

#[test]
fn two_stock_clients_at_once() {
    if !have("iperf3") {
        return;
    }
    let (_server, port) = our_server(&[]);
    let other = std::thread::spawn(move || stock_client(port, &["-t", "2", "-u", "-b", "5M"]));
    let first = stock_client(port, &["-t", "2"]);
    let second = other.join().unwrap();
    assert!(u64_at(&first, "/end/sum_received/bytes") > 0);
    assert!(u64_at(&second, "/end/sum_received/bytes") > 0);
}

/// Stock clients from one address at once, UDP and TCP mixed, both directions: UDP hellos carry
/// no cookie, so each must reach its own test (they went to whichever UDP test of the address
/// was found first).
#[test]
fn concurrent_stock_udp_clients_from_one_address_keep_their_own_streams() {
    if !have("iperf3") {
        return;
    }
    let (_server, port) = our_server(&[]);
    let cases: [&[&str]; 4] = [
        &["-u", "-b", "10M", "-t", "2"],
        &["-u", "-b", "20M", "-t", "2", "-R", "-P", "2"],
        &["-b", "200M", "-t", "2"],
        &["-u", "-b", "5M", "-t", "2", "--bidir"],
    ];
    for round in 0..3 {
        let clients: Vec<_> = cases
            .iter()
            .map(|args| {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                std::thread::spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    (args.join(" "), stock_client(port, &args))
                })
            })
            .collect();
        for client in clients {
            let (args, v) = client.join().expect("a stock client failed");
            let streams = v["end"]["streams"].as_array().map_or(0, Vec::len);
            let wanted = if args.contains("-P 2") || args.contains("--bidir") {
                2
            } else {
                1
            };
            assert_eq!(streams, wanted, "round {round}, {args}: {v}");
            for key in ["sum_sent", "sum_received"] {
                let sent = u64_at(&v, &format!("/end/{key}/bytes"));
                assert!(sent > 0, "round {round}, {args}: no bytes in {key}: {v}");
            }
            let sent = u64_at(&v, "/end/sum_sent/bytes");
            let received = u64_at(&v, "/end/sum_received/bytes");
            // Another test's stream would add to one side only; a lost stream would empty it.
            assert!(
                received <= sent && received >= sent / 10 * 9,
                "round {round}, {args}: sent {sent}, received {received}"
            );
            if args.contains("--bidir") {
                let sent = u64_at(&v, "/end/sum_sent_bidir_reverse/bytes");
                let received = u64_at(&v, "/end/sum_received_bidir_reverse/bytes");
                assert!(
                    received <= sent && received >= sent / 10 * 9,
                    "round {round}, {args} reverse: sent {sent}, received {received}"
                );
            }
        }
    }
}

#[test]
fn our_client_against_stock_server() {
    if !have("iperf3") {
        return;
    }
    for args in [
        &["-t", "2"][..],
        &["-t", "2", "-R"],
        &["-t", "2", "--bidir"],
        &["-t", "2", "-P", "2"],
        &["-u", "-b", "10M", "-t", "2"],
    ] {
        let (server, port) = stock_server();
        let v = our_client(port, args);
        assert_eq!(v["perfpeer"]["status"], "complete", "{args:?}: {v}");
        let sent = u64_at(&v, "/end/sum_sent/bytes");
        let received = u64_at(&v, "/end/sum_received/bytes");
        assert!(sent > 0 && received > 0, "{args:?}");
        // A stock iperf3 that also sends stops reading at TEST_END (and, single-threaded, reads
        // little while it sends): what was in flight then is sent but never counted as received.
        let tolerance = if args.contains(&"-R") || args.contains(&"--bidir") {
            (sent / 20).max(16 << 20)
        } else if args.contains(&"-u") {
            16 * 1448
        } else {
            2 * BLOCK
        };
        close(sent, received, tolerance, &format!("{args:?}"));
        let out = server.wait(Duration::from_secs(10));
        assert!(
            out.status.success(),
            "stock iperf3 -s -1 after {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn our_client_reports_a_busy_stock_server() {
    if !have("iperf3") {
        return;
    }
    let (_server, port) = stock_server();
    let p = port.to_string();
    let _busy = Running::spawn(
        Path::new("iperf3"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "8"],
    );
    std::thread::sleep(Duration::from_millis(800));
    let out = Running::spawn(
        &perfpeer_bin(),
        &["iperf3", "-c", "127.0.0.1", "-p", &p, "-t", "1"],
    )
    .wait(Duration::from_secs(15));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("busy"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn send_and_read(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(12))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn bad_input_from_iperf3_clients_is_refused_and_the_server_keeps_serving() {
    if !have("iperf3") {
        return;
    }
    let (_server, port) = our_server(&[]);
    let cookie = b"abcdefghijklmnopqrstuvwxyz2345672345\0";
    // Truncated cookie: nothing is answered.
    assert!(send_and_read(port, &cookie[..10]).is_empty());
    // A cookie without its NUL.
    assert!(send_and_read(port, &[b'a'; 37]).is_empty());
    let params = |body: &[u8]| {
        let mut m = cookie.to_vec();
        m.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
        m.extend_from_slice(body);
        m
    };
    // Not JSON, wrong types, impossible values: PARAM_EXCHANGE, then SERVER_ERROR.
    for body in [
        &b"not json at all"[..],
        br#"{"tcp":"yes","time":10}"#,
        br#"{"udp":true,"len":2}"#,
        br#"{"tcp":true,"parallel":-3}"#,
    ] {
        let reply = send_and_read(port, &params(body));
        assert_eq!(reply.first(), Some(&9), "{}", String::from_utf8_lossy(body));
        assert_eq!(
            reply.get(1),
            Some(&0xfe),
            "{}: {reply:?}",
            String::from_utf8_lossy(body)
        );
    }
    // A 100 MB length prefix: refused without reading it.
    let mut huge = cookie.to_vec();
    huge.extend_from_slice(&(100u32 << 20).to_be_bytes());
    assert_eq!(send_and_read(port, &huge), vec![9]);
    // A wrong state byte where a stream was expected is ignored; UDP garbage gets no answer.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    for len in [1, 3, 4, 1500] {
        u.send_to(&vec![0x42; len], ("127.0.0.1", port)).unwrap();
    }
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(u.recv(&mut [0u8; 16]).is_err(), "UDP garbage was answered");
    // Still serving.
    let v = stock_client(port, &["-t", "1"]);
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);
}
