//! `perfpeer iperf3 -s` and `perfpeer netserver` as an attacker on the LAN would try them:
//! floods of refused requests and of tests against their output (a few lines per 10 s, then a
//! count), forged UDP sources against amplification (netserver's UDP_RR from another port of
//! the client's address, iperf3's reverse UDP from a hello that is not the client's), and a
//! whole /24 of addresses (127.0.0.2-255) stalling and hammering against iperf3's places.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use perfpeer_proto::netperf::{Message, OmniRequest, OmniResults, kind};
use perfpeer_tests::{
    Running, connect_from, free_port, have, perfpeer_bin, raise_fd_limit, wait_listening,
};

/// A `perfpeer` server persona on 127.0.0.1 (killed on drop), its stdout and stderr in files.
struct Server {
    child: Child,
    port: u16,
    out: PathBuf,
    err: PathBuf,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let port = free_port();
        let tag = format!("perfpeer-personas-{}-{port}", std::process::id());
        let out = std::env::temp_dir().join(format!("{tag}.out"));
        let err = std::env::temp_dir().join(format!("{tag}.err"));
        let p = port.to_string();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "PORT" { p.as_str() } else { a })
            .collect();
        let child = Command::new(perfpeer_bin())
            .args(&args)
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("start the server");
        assert!(
            wait_listening(port, Duration::from_secs(10)),
            "{args:?} did not listen"
        );
        Server {
            child,
            port,
            out,
            err,
        }
    }

    /// `perfpeer iperf3 -s` with `extra` flags.
    fn iperf3(extra: &[&str]) -> Server {
        Server::start(&[&["iperf3", "-s", "-p", "PORT"][..], extra].concat())
    }

    /// `perfpeer netserver -D` on 127.0.0.1.
    fn netserver() -> Server {
        Server::start(&["netserver", "-D", "-L", "127.0.0.1", "-p", "PORT"])
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Everything it wrote, stdout then stderr.
    fn output(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!("{}{}", read(&self.out), read(&self.err))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.err);
    }
}

/// Runs `attack` on `threads` threads until `for_how_long` has passed; the attacks they made.
fn flood(threads: usize, for_how_long: Duration, attack: impl Fn(usize) + Sync) -> u64 {
    let until = Instant::now() + for_how_long;
    let made = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (attack, made) = (&attack, &made);
            s.spawn(move || {
                while Instant::now() < until {
                    attack(t);
                    made.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    made.into_inner()
}

// ---- netserver ----

/// The request stock netperf 2.7.1 sent for `test` (`tcp_rr`, `udp_rr`, …), with its length.
fn netperf_request(test: &str, test_length: i32) -> OmniRequest {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/netperf-2.7.1")
        .join(test)
        .join("request.bin");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = OmniRequest::decode(&Message::decode(&bytes).unwrap()).unwrap();
    r.test_length = test_length;
    r
}

/// A netperf control connection.
struct NetperfControl(TcpStream);

impl NetperfControl {
    fn connect(to: SocketAddr) -> NetperfControl {
        let s = TcpStream::connect(to).expect("control connection");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        NetperfControl(s)
    }

    fn send(&mut self, m: &Message) -> bool {
        self.0.write_all(&m.encode()).is_ok()
    }

    fn recv(&mut self) -> Option<Message> {
        let mut buf = [0u8; 656];
        self.0.read_exact(&mut buf).ok()?;
        Message::decode(&buf).ok()
    }

    /// An OMNI request's answer: (errno, data port).
    fn ask(&mut self, r: &OmniRequest) -> (i32, u16) {
        assert!(self.send(&r.encode()), "send a request");
        let answer = self.recv().expect("an answer");
        let port =
            perfpeer_proto::netperf::OmniResponse::decode(&answer).map_or(0, |r| r.data_port);
        (answer.word2, port)
    }

    fn results(&mut self) -> OmniResults {
        let m = self.recv().expect("results");
        assert_eq!(
            (m.kind, m.word2),
            (kind::OMNI_RESULTS, 0),
            "the test failed"
        );
        OmniResults::decode(&m)
    }
}

/// One TCP_RR test of one transaction from start to results.
fn one_tcp_rr(to: SocketAddr) -> bool {
    let mut control = NetperfControl::connect(to);
    let (errno, port) = control.ask(&netperf_request("tcp_rr", -1));
    if errno != 0 {
        return false;
    }
    let Ok(mut data) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = data.set_read_timeout(Some(Duration::from_secs(10)));
    let mut one = [0u8; 1];
    data.write_all(&[1]).is_ok()
        && data.read_exact(&mut one).is_ok()
        && control.results().transactions == 1
}

/// Item 1 (netserver): 3 s of unknown request types (32 on each connection, as many
/// connections as 4 threads open) and of back-to-back tests wrote about 147,000 lines.
#[test]
fn a_flood_of_refused_netperf_requests_and_of_tests_writes_a_few_lines() {
    let server = Server::netserver();
    let to = server.addr();
    let tests = AtomicU64::new(0);
    let requests = flood(5, Duration::from_secs(3), |thread| {
        if thread == 0 {
            if one_tcp_rr(to) {
                tests.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        let mut control = NetperfControl::connect(to);
        for _ in 0..32 {
            if !control.send(&Message::new(4242, -1)) {
                break;
            }
        }
        for _ in 0..32 {
            if control.recv().is_none() {
                break;
            }
        }
    });
    let tests = tests.into_inner();
    assert!(
        requests > 200 && tests > 20,
        "a flood: {requests} connections, {tests} tests"
    );
    std::thread::sleep(Duration::from_millis(300));
    let out = server.output();
    let lines = out.lines().count();
    // The banner, 5 refusals and 20 tests per 10 s, a line from the log at most.
    assert!(
        lines <= 30,
        "{lines} lines for {requests} connections of 32 requests and {tests} tests:\n{}",
        out.lines().take(60).collect::<Vec<_>>().join("\n")
    );
    assert!(out.contains("request type 4242 is not served"), "{out}");
    assert!(out.contains(" TCP_RR "), "{out}");
    // The next period says how many went unsaid.
    std::thread::sleep(Duration::from_secs(8));
    let mut control = NetperfControl::connect(to);
    control.send(&Message::new(4242, -1));
    assert_eq!(control.recv().map(|m| m.word2), Some(998));
    assert!(one_tcp_rr(to));
    assert!(
        perfpeer_tests::wait_for(Duration::from_secs(5), || {
            let out = server.output();
            out.contains("netperf requests refused or connections closed: ")
                && out.contains("netperf tests served: ")
                && out.contains("more in the last 10 s, not shown")
        }),
        "no count lines:\n{}",
        server.output()
    );
}

/// Item 5 (netserver): UDP_RR answered every datagram from the control connection's address,
/// from any port; a request of 1 byte could ask for a response of 65,507.
#[test]
fn forged_udp_rr_requests_get_nothing_and_responses_are_at_most_three_times_the_requests() {
    let server = Server::netserver();
    let mut control = NetperfControl::connect(server.addr());
    let (errno, port) = control.ask(&netperf_request("udp_rr", -200));
    assert_eq!(errno, 0);
    let data_addr = SocketAddr::from(([127, 0, 0, 1], port));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(data_addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut back = [0u8; 64];
    client.send(&[9]).unwrap();
    assert_eq!(client.recv(&mut back).expect("the first answer"), 1);
    // Another port of the same address: 1,000 requests, not one answer.
    let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..1000 {
        forger.send_to(&[9], data_addr).unwrap();
    }
    let received = count_udp(&forger, Duration::from_millis(700));
    assert_eq!(received, (0, 0), "the forged port got answers");
    // The client's test runs on.
    for _ in 1..200 {
        client.send(&[9]).unwrap();
        assert_eq!(client.recv(&mut back).expect("an answer"), 1);
    }
    assert_eq!(control.results().transactions, 200);

    // A response over 3 times the request is refused up front, with EINVAL; 3 times is served.
    let mut amplifying = netperf_request("udp_rr", -10);
    amplifying.request_size = 1;
    amplifying.response_size = 65_507;
    assert_eq!(control.ask(&amplifying).0, 22, "EINVAL");
    let mut triple = netperf_request("udp_rr", 5);
    triple.request_size = 100;
    triple.response_size = 300;
    let (errno, port) = control.ask(&triple);
    assert_eq!(errno, 0);
    // A source that sends shorter requests than its test's gets no more than 3 times them:
    // 1-byte requests get nothing back; then 100-byte ones get 300 bytes each.
    let short = UdpSocket::bind("127.0.0.1:0").unwrap();
    short.connect(("127.0.0.1", port)).unwrap();
    for _ in 0..50 {
        short.send(&[1]).unwrap();
    }
    assert_eq!(count_udp(&short, Duration::from_millis(500)), (0, 0));
    short
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut big = [0u8; 1024];
    for _ in 0..5 {
        short.send(&[2u8; 100]).unwrap();
        assert_eq!(short.recv(&mut big).expect("an answer"), 300);
    }
    drop(control);
    assert!(
        perfpeer_tests::wait_for(Duration::from_secs(5), || server
            .output()
            .contains("at most 3 times the request")),
        "{}",
        server.output()
    );
    // The 1,000 forged datagrams and 50 short requests: a line or two, not one each.
    let lines = server.output().lines().count();
    assert!(lines <= 10, "{lines} lines:\n{}", server.output());
}

/// Bytes and datagrams `socket` receives in `window`.
fn count_udp(socket: &UdpSocket, window: Duration) -> (u64, u64) {
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let until = Instant::now() + window;
    let (mut bytes, mut datagrams) = (0, 0);
    let mut buf = vec![0u8; 65_536];
    while Instant::now() < until {
        if let Ok(n) = socket.recv(&mut buf) {
            bytes += n as u64;
            datagrams += 1;
        }
    }
    (bytes, datagrams)
}

// ---- iperf3 -s ----

/// A 37-byte iperf3 cookie, different for each `n`.
fn cookie(n: u64) -> [u8; 37] {
    let mut c = [b'a'; 37];
    let digits = format!("{n:036}");
    c[..36].copy_from_slice(&digits.as_bytes()[digits.len() - 36..]);
    for b in &mut c[..36] {
        *b = b'a' + (*b - b'0');
    }
    c[36] = 0;
    c
}

const PARAM_EXCHANGE: u8 = 9;
const CREATE_STREAMS: u8 = 10;
const TEST_START: u8 = 1;
const TEST_RUNNING: u8 = 2;
const TEST_END: u8 = 4;
const EXCHANGE_RESULTS: u8 = 13;
const ACCESS_DENIED: u8 = 0xff;

/// An iperf3 control connection spoken by hand.
struct Iperf3Control(TcpStream);

impl Iperf3Control {
    fn open(port: u16, n: u64) -> Iperf3Control {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("control connection");
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        s.write_all(&cookie(n)).unwrap();
        Iperf3Control(s)
    }

    fn state(&mut self) -> u8 {
        let mut b = [0u8; 1];
        self.0.read_exact(&mut b).expect("a state byte");
        b[0]
    }

    fn json(&mut self, v: &serde_json::Value) {
        let body = v.to_string().into_bytes();
        let mut m = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        m.extend_from_slice(&body);
        self.0.write_all(&m).unwrap();
    }

    fn read_json(&mut self) -> serde_json::Value {
        let mut len = [0u8; 4];
        self.0.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.0.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).expect("JSON")
    }

    /// Up to CREATE_STREAMS for a reverse UDP test at `rate` for `secs`.
    fn reverse_udp(port: u16, n: u64, rate: u64, secs: u64) -> Iperf3Control {
        let mut c = Iperf3Control::open(port, n);
        assert_eq!(c.state(), PARAM_EXCHANGE);
        c.json(&serde_json::json!({
            "udp": true, "reverse": true, "time": secs, "parallel": 1, "len": 1460,
            "bandwidth": rate, "omit": 0, "pacing_timer": 1000, "client_version": "3.12"
        }));
        assert_eq!(c.state(), CREATE_STREAMS);
        c
    }

    /// After the streams: TEST_START and TEST_RUNNING, `secs` of test, TEST_END, the results
    /// exchange; the bytes the server says it sent, and how long it had to send them.
    fn run_and_results(&mut self, secs: u64) -> (u64, Duration) {
        assert_eq!(self.state(), TEST_START);
        assert_eq!(self.state(), TEST_RUNNING);
        let running = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        self.0.write_all(&[TEST_END]).unwrap();
        let ran = running.elapsed();
        assert_eq!(self.state(), EXCHANGE_RESULTS);
        self.json(&serde_json::json!({
            "cpu_util_total": 0, "cpu_util_user": 0, "cpu_util_system": 0,
            "sender_has_retransmits": -1,
            "streams": [{"id": 1, "bytes": 0, "retransmits": -1, "jitter": 0, "errors": 0,
                         "omitted_errors": 0, "packets": 0, "omitted_packets": 0,
                         "start_time": 0, "end_time": secs}]
        }));
        let theirs = self.read_json();
        let sent = theirs["streams"][0]["bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("no stream bytes in {theirs}"));
        (sent, ran)
    }
}

/// A UDP socket on a free privileged port of 127.0.0.1 (the tests run as root).
fn privileged_udp() -> Option<UdpSocket> {
    (600..1024).find_map(|p| UdpSocket::bind(("127.0.0.1", p)).ok())
}

/// Item 5 (iperf3): one forged 4-byte hello made `iperf3 -s` send a reverse UDP stream of
/// 43.75 MB at 100 Mbit/s to another port of the control connection's address. Nothing in
/// iperf3's UDP shows that a port receives, so what holds is docs/security.md's bound: no hello
/// from a service's (privileged) port is taken; a port that refuses (ICMP unreachable) stops
/// its stream within a few datagrams; any other port gets no more than the test asked for.
#[test]
fn a_forged_iperf3_hello_gets_no_more_than_the_stock_protocol_allows() {
    let server = Server::iperf3(&[]);
    let port = server.port;
    let hello_to = SocketAddr::from(([127, 0, 0, 1], port));

    // A service's port (here 600-1023): not even the 4-byte reply, let alone a stream; and a
    // thousand such hellos are one line in the log.
    let service = privileged_udp().expect("a free port below 1024 (run as root)");
    let control = Iperf3Control::reverse_udp(port, 1, 100_000_000, 3);
    for _ in 0..1000 {
        service.send_to(b"9876", hello_to).unwrap();
    }
    let got = count_udp(&service, Duration::from_secs(4));
    assert_eq!(got, (0, 0), "a service's port got a stream");
    drop(control);
    let lines = server.output().lines().count();
    assert!(lines <= 6, "{lines} lines:\n{}", server.output());

    // A port that is closed: the stream stops after a few ICMP port unreachables.
    let mut control = Iperf3Control::reverse_udp(port, 2, 100_000_000, 2);
    let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
    gone.send_to(b"9876", hello_to).unwrap();
    drop(gone);
    let (sent, _) = control.run_and_results(2);
    assert!(
        sent <= 64 * 1460,
        "{sent} bytes sent to a closed port (100 Mbit/s for 2 s is 25 MB)"
    );

    // An open port that is not the client's: the test's own rate and time, no more.
    let mut control = Iperf3Control::reverse_udp(port, 3, 4_000_000, 1);
    let victim = UdpSocket::bind("127.0.0.1:0").unwrap();
    victim.send_to(b"9876", hello_to).unwrap();
    let counted = std::thread::spawn(move || count_udp(&victim, Duration::from_secs(3)));
    let (sent, ran) = control.run_and_results(1);
    let (bytes, _) = counted.join().unwrap();
    // What it received: the stream and the 4-byte reply to the hello; what was sent: the
    // test's rate for as long as the test ran (a sender may run 20 % ahead for a moment).
    let asked = 4_000_000.0 / 8.0 * ran.as_secs_f64();
    assert!(
        bytes <= sent + 4 && (sent as f64) <= asked * 1.2 + 4.0 * 1460.0,
        "{bytes} bytes received of {sent} sent for 4 Mbit/s for {ran:?}"
    );
    drop(control);

    // A stock client's reverse UDP test still runs.
    if have("iperf3") {
        let p = port.to_string();
        let out = Running::spawn(
            Path::new("iperf3"),
            &[
                "-c",
                "127.0.0.1",
                "-p",
                &p,
                "-u",
                "-R",
                "-b",
                "20M",
                "-t",
                "2",
                "-J",
            ],
        )
        .wait(Duration::from_secs(30));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "iperf3 -c -u -R: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert!(
            perfpeer_tests::u64_at(&v, "/end/sum/bytes") > 2_000_000,
            "{text}"
        );
    }
}

/// Item 1 (iperf3): 5 s of connections refused as busy wrote 44,000-52,000 lines.
#[test]
fn a_flood_of_busy_iperf3_connections_writes_a_few_lines() {
    let server = Server::iperf3(&["--max-tests", "1"]);
    let port = server.port;
    let p = port.to_string();
    // One running test holds the one place.
    let holder = Running::spawn(
        &perfpeer_bin(),
        &["iperf3", "-c", "127.0.0.1", "-p", &p, "-t", "6"],
    );
    assert!(
        perfpeer_tests::wait_for(Duration::from_secs(5), || server.output().contains("sec")),
        "the holder's test did not start: {}",
        server.output()
    );
    let n = AtomicU64::new(100);
    let to = server.addr();
    let denied = AtomicU64::new(0);
    let attempts = flood(4, Duration::from_secs(3), |t| {
        let from = [127, 0, 0, u8::try_from(t % 2 + 1).unwrap()];
        let Some(mut s) = connect_from(from, to) else {
            return;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.write_all(&cookie(n.fetch_add(1, Ordering::Relaxed)));
        let mut b = [0u8; 1];
        if s.read_exact(&mut b).is_ok() && b[0] == ACCESS_DENIED {
            denied.fetch_add(1, Ordering::Relaxed);
        }
    });
    let denied = denied.into_inner();
    assert!(denied > 500, "a flood: {denied} of {attempts} denied");
    let out = holder.wait(Duration::from_secs(15));
    assert!(out.status.success(), "the holder's test failed");
    std::thread::sleep(Duration::from_millis(300));
    let said = server.output();
    let lines = said.lines().count();
    // The banner (3 lines), the holder's test (about 15), 5 refusals, a line from the log.
    assert!(
        lines <= 40,
        "{lines} lines for {denied} refusals:\n{}",
        said.lines().take(80).collect::<Vec<_>>().join("\n")
    );
    assert!(said.contains("busy"), "{said}");
    // Tests served: the first 20 of a 10 s period are shown, the others counted. A fresh
    // server, so the period starts with the first of them; on a slow machine the 25 may
    // take more than one period, and each period shows its own 20.
    let server = Server::iperf3(&[]);
    let p = server.port.to_string();
    let started = Instant::now();
    for _ in 0..25 {
        let out = Running::spawn(
            &perfpeer_bin(),
            &["iperf3", "-c", "127.0.0.1", "-p", &p, "-n", "100K"],
        )
        .wait(Duration::from_secs(15));
        assert!(out.status.success(), "a short test failed");
    }
    let periods = 1 + started.elapsed().as_secs() / 10;
    std::thread::sleep(Duration::from_millis(300));
    let shown = server.output().matches("Accepted connection from").count();
    let most = usize::try_from(periods * 20).unwrap().min(25);
    assert!(
        (1..=most).contains(&shown),
        "{shown} of 25 tests shown in {periods} periods"
    );
    if periods == 1 {
        assert_eq!(shown, 20, "the first 20 of the period are shown");
    }
}

/// Item 7 (iperf3): two addresses could hold every place of `iperf3 -s`. Here every address of
/// 127.0.0.2-255 opens a test and stalls, and opens another at once when refused or shed; a
/// client from 127.0.0.1 still runs its test.
#[test]
fn a_whole_24_stalling_and_hammering_does_not_deny_an_iperf3_client() {
    raise_fd_limit();
    let server = Server::iperf3(&[]);
    let to = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let held = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(1000));
    let attackers: Vec<_> = (2..=255u8)
        .map(|last| {
            let (stop, held, next) = (stop.clone(), held.clone(), next.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(mut s) = connect_from([127, 0, 0, last], to) else {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    };
                    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
                    if s.write_all(&cookie(next.fetch_add(1, Ordering::Relaxed)))
                        .is_err()
                    {
                        continue;
                    }
                    // Stall on whatever place it got until the server lets go of it.
                    let mut got_place = false;
                    let mut b = [0u8; 1];
                    while !stop.load(Ordering::Relaxed) {
                        match s.read(&mut b) {
                            Ok(1) if b[0] == PARAM_EXCHANGE => {
                                got_place = true;
                                held.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => break,
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                    if !got_place {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            })
        })
        .collect();
    // Longer than a stalled test is protected.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        held.load(Ordering::Relaxed) >= 8,
        "the attackers took the places"
    );
    let p = server.port.to_string();
    let stock = have("iperf3");
    let out = if stock {
        Running::spawn(
            Path::new("iperf3"),
            &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"],
        )
    } else {
        Running::spawn(
            &perfpeer_bin(),
            &["iperf3", "-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"],
        )
    }
    .wait(Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        let _ = a.join();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "a client from 127.0.0.1 was denied: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        perfpeer_tests::u64_at(&v, "/end/sum_received/bytes") > 0,
        "{text}"
    );
    // And the flood wrote a few lines, not a line per attempt.
    let lines = server.output().lines().count();
    assert!(lines <= 40, "{lines} lines:\n{}", server.output());
}

/// Item 7 (netserver): a test held its place from its request, and two addresses could hold
/// every place (half each) by asking for tests and sending no data. Here every address of
/// 127.0.0.2-255 does that, and asks again at once when refused or let go; a netperf client
/// from 127.0.0.1 still runs its test.
#[test]
fn a_whole_24_asking_for_tests_and_sending_nothing_does_not_deny_a_netperf_client() {
    raise_fd_limit();
    let server = Server::netserver();
    let to = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let held = Arc::new(AtomicU64::new(0));
    let attackers: Vec<_> = (2..=255u8)
        .map(|last| {
            let (stop, held) = (stop.clone(), held.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(s) = connect_from([127, 0, 0, last], to) else {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    };
                    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                    let mut control = NetperfControl(s);
                    if !control.send(&netperf_request("tcp_stream", 30).encode()) {
                        continue;
                    }
                    // The answer, then (if it was taken) its results when the server lets go.
                    let mut answers = 0;
                    while answers < 2 && !stop.load(Ordering::Relaxed) {
                        let mut buf = [0u8; 656];
                        match control.0.read_exact(&mut buf) {
                            Ok(()) => {
                                let m = Message::decode(&buf).expect("a message");
                                if answers == 0 && m.word2 != 0 {
                                    break;
                                }
                                if answers == 0 {
                                    held.fetch_add(1, Ordering::Relaxed);
                                }
                                answers += 1;
                            }
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                    if answers == 0 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            })
        })
        .collect();
    // Longer than a test that just began is protected.
    std::thread::sleep(Duration::from_secs(3));
    let took = held.load(Ordering::Relaxed);
    let ran = one_tcp_rr(to);
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        let _ = a.join();
    }
    assert!(took >= 32, "the attackers took the places ({took})");
    assert!(ran, "a netperf client from 127.0.0.1 was refused");
    let lines = server.output().lines().count();
    assert!(lines <= 40, "{lines} lines:\n{}", server.output());
}
