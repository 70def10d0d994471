//! `perfpeer netserver` for netperf clients: driven with the control messages a stock netperf
//! 2.7.1 sent (tests/fixtures/netperf-2.7.1/, read with the codec those bytes test) and the data
//! phases netperf runs, and by stock netperf 2.7.0 itself (what Debian, OpenWrt and most
//! distributions ship: scripts/fetch-netperf.sh fetches Debian's build, scripts/test.sh names
//! it in `PERFPEER_NETPERF` and `PERFPEER_NETSERVER`, and then a missing one fails); the
//! reverse too, `perfpeer netperf --netserver` against the stock netserver, and its tables
//! beside stock netperf's. Then what a netperf user or an attacker on the LAN would try:
//! requests the server cannot serve, data from other addresses, too many tests, vanished
//! clients, a passphrase, and the `netserver` name.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use perfpeer_proto::netperf::{
    Message, OmniRequest, OmniResponse, OmniResults, cpu_method, direction, flags, kind,
};
use perfpeer_tests::{connect_from, free_port, perfpeer_bin, skip, wait_for, wait_listening};

/// A `perfpeer netserver -D` on 127.0.0.1 (killed on drop); its stdout goes to a file.
struct Netserver {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Netserver {
    fn start(extra: &[&str]) -> Netserver {
        let port = free_port();
        let log = std::env::temp_dir().join(format!(
            "perfpeer-netserver-{}-{port}.log",
            std::process::id()
        ));
        let out = std::fs::File::create(&log).expect("log file");
        let child = Command::new(perfpeer_bin())
            .args([
                "netserver",
                "-D",
                "-L",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .args(extra)
            .stdout(out)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start perfpeer netserver");
        assert!(
            wait_listening(port, Duration::from_secs(10)),
            "netserver did not listen"
        );
        Netserver { child, port, log }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn control(&self) -> Control {
        Control::connect(self.addr())
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Netserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A control connection, as netperf holds one.
struct Control(TcpStream);

impl Control {
    fn connect(to: SocketAddr) -> Control {
        Control::on(TcpStream::connect(to).expect("control connection"))
    }

    fn on(stream: TcpStream) -> Control {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Control(stream)
    }

    fn send(&mut self, m: &Message) {
        self.0.write_all(&m.encode()).expect("send a request");
    }

    /// The next whole message, or `None` if the server closed the connection.
    fn recv(&mut self) -> Option<Message> {
        let mut buf = [0u8; 656];
        self.0.read_exact(&mut buf).ok()?;
        Some(Message::decode(&buf).expect("656 bytes"))
    }

    /// Sends an OMNI request; the answer (an error's errno in `word2`).
    fn ask(&mut self, r: &OmniRequest) -> Message {
        self.send(&r.encode());
        self.recv().expect("an answer to the request")
    }

    /// Sends an OMNI request that must be taken; its response.
    fn start(&mut self, r: &OmniRequest) -> OmniResponse {
        let answer = self.ask(r);
        assert_eq!(answer.kind, kind::OMNI_RESPONSE);
        assert_eq!(answer.word2, 0, "the server refused {r:?}");
        OmniResponse::decode(&answer).expect("a response")
    }

    fn results(&mut self) -> OmniResults {
        let m = self.recv().expect("results");
        assert_eq!(m.kind, kind::OMNI_RESULTS);
        assert_eq!(m.word2, 0, "the test failed at the server");
        OmniResults::decode(&m)
    }
}

fn fixture(test: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/netperf-2.7.1")
        .join(test)
        .join("request.bin");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The request stock netperf 2.7.1 sent for `test` (`tcp_stream`, …), with its test length.
fn request(test: &str, test_length: i32) -> OmniRequest {
    let mut r = OmniRequest::decode(&Message::decode(&fixture(test)).unwrap()).unwrap();
    r.test_length = test_length;
    r
}

fn data_addr(response: &OmniResponse) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], response.data_port))
}

fn tcp_data(response: &OmniResponse) -> TcpStream {
    let s = TcpStream::connect(data_addr(response)).expect("data connection");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn udp_data(response: &OmniResponse) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(data_addr(response)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// One request/response exchange of `len` bytes each way on a TCP connection.
fn exchange(s: &mut TcpStream, len: usize) {
    s.write_all(&vec![7u8; len]).unwrap();
    let mut back = vec![0u8; len];
    s.read_exact(&mut back).expect("a response");
}

/// Reads until the server's FIN; the bytes read.
fn drain(s: &mut TcpStream) -> u64 {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n as u64,
            Err(e) => panic!("data connection: {e} after {total} bytes"),
        }
    }
}

fn seconds_about(results: &OmniResults, want: f32) {
    assert!(
        results.elapsed_s >= want * 0.9 && results.elapsed_s <= want + 2.0,
        "elapsed {} s for a {want}-s test",
        results.elapsed_s
    );
}

#[test]
fn each_classic_test_as_netperf_runs_it() {
    let server = Netserver::start(&[]);

    // TCP_STREAM: 1 s of data, the client's FIN ends it; what was sent is what was received.
    let mut control = server.control();
    let response = control.start(&request("tcp_stream", 1));
    assert_ne!(
        response.flags & flags::MEASURE_CPU,
        0,
        "the fixture asks for CPU"
    );
    assert!(response.receive_size > 0 && response.recv_buf_size > 0);
    let mut data = tcp_data(&response);
    let chunk = vec![1u8; 64 * 1024];
    let mut sent = 0u64;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        data.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    data.shutdown(Shutdown::Write).unwrap();
    assert_eq!(drain(&mut data), 0);
    let results = control.results();
    assert_eq!(results.bytes_received, sent);
    assert!(results.recv_calls > 0 && results.bytes_sent == 0);
    seconds_about(&results, 1.0);
    let cpu = results.cpu.expect("CPU measured");
    assert_eq!(cpu.method, cpu_method::PROC_STAT);
    assert!(cpu.util > 0.0 && cpu.util <= 100.0, "{cpu:?}");
    assert!(results.num_cpus >= 1);
    assert!(
        !results.cong_control.is_empty(),
        "the data connection's congestion control"
    );

    // TCP_MAERTS: the server sends for 1 s, then its FIN.
    let mut control = server.control();
    let response = control.start(&request("tcp_maerts", 1));
    assert!(response.send_size > 0);
    let mut data = tcp_data(&response);
    let received = drain(&mut data);
    drop(data);
    let results = control.results();
    assert!(received > 0);
    assert_eq!(results.bytes_sent, received);
    seconds_about(&results, 1.0);

    // TCP_RR by count (`-l -500`): 500 transactions, then the client's FIN.
    let mut control = server.control();
    let response = control.start(&request("tcp_rr", -500));
    assert_eq!((response.receive_size, response.send_size), (1, 1));
    let mut data = tcp_data(&response);
    for _ in 0..500 {
        exchange(&mut data, 1);
    }
    let results = control.results();
    assert_eq!(results.transactions, 500);
    assert_eq!((results.bytes_received, results.bytes_sent), (500, 500));
    drop(data);

    // TCP_CRR: a connection per transaction.
    let mut control = server.control();
    let response = control.start(&request("tcp_crr", -40));
    for _ in 0..40 {
        let mut data = tcp_data(&response);
        exchange(&mut data, 1);
        assert_eq!(drain(&mut data), 0, "the server closes after its response");
    }
    let results = control.results();
    assert_eq!(results.transactions, 40);

    // TCP_CC: netperf 2.7 still sends the classic request, and reads the classic answers.
    let mut control = server.control();
    let mut cc = Message::decode(&fixture("tcp_cc")).unwrap();
    cc.data[44..48].copy_from_slice(&(-25i32).to_be_bytes());
    control.send(&cc);
    let answer = control.recv().unwrap();
    assert_eq!((answer.kind, answer.word2), (kind::TCP_CC_RESPONSE, 0));
    let port = u16::try_from(u32::from_be_bytes(answer.data[20..24].try_into().unwrap())).unwrap();
    for _ in 0..25 {
        let mut data = TcpStream::connect(("127.0.0.1", port)).unwrap();
        data.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(drain(&mut data), 0);
    }
    let results = control.recv().unwrap();
    assert_eq!((results.kind, results.word2), (kind::TCP_CC_RESULTS, 0));
    assert_eq!(
        u32::from_be_bytes(results.data[8..12].try_into().unwrap()),
        25
    );

    // UDP_STREAM: paced datagrams, then netperf's three zero-length ones.
    let mut control = server.control();
    let mut udp = request("udp_stream", 1);
    udp.flags &= !flags::MEASURE_CPU;
    let response = control.start(&udp);
    assert_eq!(
        response.flags & flags::MEASURE_CPU,
        0,
        "not asked, not measured"
    );
    let data = udp_data(&response);
    for i in 0..2000 {
        data.send(&[3u8; 1000]).unwrap();
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // The first ends the test and closes the port: the others may meet ECONNREFUSED, which
    // netperf ignores too.
    for _ in 0..3 {
        let _ = data.send(&[]);
    }
    let results = control.results();
    assert!(results.cpu.is_none());
    assert_eq!(results.bytes_received % 1000, 0);
    assert_eq!(results.bytes_received, u64::from(results.recv_calls) * 1000);
    // Paced at 80 Mbit/s on loopback: a debug build on a busy machine may still drop some.
    assert!(
        (1_000_000..=2_000_000).contains(&results.bytes_received),
        "{} of 2000000 bytes on loopback, paced",
        results.bytes_received
    );
    assert!(
        results.elapsed_s < 1.0,
        "ended by the zero-length datagrams"
    );

    // UDP_RR by count.
    let mut control = server.control();
    let response = control.start(&request("udp_rr", -200));
    let data = udp_data(&response);
    let mut back = [0u8; 16];
    for _ in 0..200 {
        data.send(&[9]).unwrap();
        assert_eq!(data.recv(&mut back).expect("a response datagram"), 1);
    }
    let results = control.results();
    assert_eq!(results.transactions, 200);

    // One line per test at the server (printed as the results go out).
    assert!(wait_for(Duration::from_secs(5), || server
        .output()
        .contains(" UDP_RR ")));
    let out = server.output();
    for name in [
        "TCP_STREAM",
        "TCP_MAERTS",
        "TCP_RR",
        "TCP_CRR",
        "TCP_CC",
        "UDP_STREAM",
        "UDP_RR",
    ] {
        assert!(
            out.contains(&format!(" {name} ")),
            "no {name} line in:\n{out}"
        );
    }
}

#[test]
fn requests_it_cannot_serve_are_answered_with_an_errno() {
    let server = Netserver::start(&["--max-duration", "60"]);
    let mut control = server.control();
    let refused = |control: &mut Control, r: &OmniRequest, errno: i32| {
        let answer = control.ask(r);
        assert_eq!(answer.word2, errno, "for {r:?}");
    };
    refused(&mut control, &request("tcp_stream", 61), 34); // ERANGE
    let mut big = request("tcp_rr", 1);
    big.request_size = 2 << 20;
    refused(&mut control, &big, 22); // EINVAL
    let mut udp_send = request("udp_stream", 1);
    udp_send.direction = direction::XMIT;
    refused(&mut control, &udp_send, 95); // EOPNOTSUPP
    let mut low_port = request("tcp_stream", 1);
    low_port.data_port = 80;
    refused(&mut control, &low_port, 13); // EACCES
    let mut sctp = request("tcp_stream", 1);
    sctp.protocol = 132;
    refused(&mut control, &sctp, 93); // EPROTONOSUPPORT
    let mut v6 = request("tcp_stream", 1);
    v6.family = perfpeer_proto::netperf::Family::V6;
    refused(&mut control, &v6, 97); // EAFNOSUPPORT: not the control connection's family
    let mut no_such_cc = request("tcp_stream", 1);
    no_such_cc.cong_control = "no-such-cc".into();
    refused(&mut control, &no_such_cc, 2); // ENOENT
    // netperf's classic TCP_STREAM request and a type nobody knows: netserver's 998.
    for unknown in [kind::DO_TCP_STREAM, -1] {
        control.send(&Message::new(unknown, -1));
        assert_eq!(control.recv().unwrap().word2, 998);
    }
    // An address family netperf never sends: EINVAL.
    let mut bad_family = request("tcp_stream", 1).encode();
    bad_family.data[21 * 4..22 * 4].copy_from_slice(&5u32.to_be_bytes());
    control.send(&bad_family);
    assert_eq!(control.recv().unwrap().word2, 22);
    // None of that changed anything: the same connection runs a test.
    let response = control.start(&request("tcp_rr", -10));
    let mut data = tcp_data(&response);
    for _ in 0..10 {
        exchange(&mut data, 1);
    }
    assert_eq!(control.results().transactions, 10);

    // Garbage and a cut message end their own connection only.
    let mut garbage = TcpStream::connect(server.addr()).unwrap();
    garbage.write_all(&[0xA5; 300]).unwrap();
    drop(garbage);
    let mut cut = Control::connect(server.addr());
    cut.0
        .write_all(&request("tcp_rr", 1).encode().encode()[..400])
        .unwrap();
    cut.0.shutdown(Shutdown::Write).unwrap();
    assert!(cut.recv().is_none(), "a cut message gets no answer");
    // More requests than netperf ever sends on one connection: it is closed.
    let mut chatty = server.control();
    let mut answers = 0;
    for _ in 0..40 {
        chatty.send(&Message::new(kind::DEBUG_ON, -1));
        match chatty.recv() {
            Some(m) => {
                assert_eq!(m.kind, kind::DEBUG_OK);
                answers += 1;
            }
            None => break,
        }
    }
    assert_eq!(answers, 32, "closed after 32 requests");
    let mut control = server.control();
    let response = control.start(&request("tcp_rr", -3));
    let mut data = tcp_data(&response);
    for _ in 0..3 {
        exchange(&mut data, 1);
    }
    assert_eq!(control.results().transactions, 3);
}

#[test]
fn only_the_control_connection_s_address_is_served() {
    let server = Netserver::start(&[]);

    // TCP: a data connection from 127.0.0.2 is closed and not counted.
    let mut control = server.control();
    let response = control.start(&request("tcp_stream", 10));
    let mut stranger = connect_from([127, 0, 0, 2], data_addr(&response)).expect("connect");
    stranger
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = stranger.write_all(&[0u8; 1000]);
    let mut byte = [0u8; 1];
    assert!(
        matches!(stranger.read(&mut byte), Ok(0) | Err(_)),
        "a stranger's data connection is closed"
    );
    let mut data = tcp_data(&response);
    data.write_all(&vec![5u8; 1 << 20]).unwrap();
    data.shutdown(Shutdown::Write).unwrap();
    drain(&mut data);
    let results = control.results();
    assert_eq!(
        results.bytes_received,
        1 << 20,
        "only the client's megabyte"
    );

    // UDP_RR: requests from 127.0.0.2 get no answer and are not transactions.
    let mut control = server.control();
    let response = control.start(&request("udp_rr", -20));
    let stranger = UdpSocket::bind("127.0.0.2:0").unwrap();
    stranger
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut back = [0u8; 16];
    for _ in 0..5 {
        stranger.send_to(&[1], data_addr(&response)).unwrap();
        assert!(stranger.recv(&mut back).is_err(), "a stranger was answered");
    }
    let data = udp_data(&response);
    for _ in 0..20 {
        data.send(&[9]).unwrap();
        data.recv(&mut back).expect("the client is answered");
    }
    for _ in 0..5 {
        stranger.send_to(&[1], data_addr(&response)).unwrap();
        assert!(stranger.recv(&mut back).is_err(), "a stranger was answered");
    }
    assert_eq!(control.results().transactions, 20);
}

#[test]
fn tests_are_capped_and_a_vanished_client_frees_its_place() {
    let server = Netserver::start(&["--max-tests", "2"]);
    // One address may hold half the places: its second test is refused as busy.
    let mut first = server.control();
    let response = first.start(&request("tcp_stream", 60));
    let mut data = tcp_data(&response);
    data.write_all(&[0u8; 10_000]).unwrap();
    let mut second = server.control();
    assert_eq!(second.ask(&request("tcp_rr", -1)).word2, 16, "EBUSY");
    // Another address still gets the other place.
    let mut other = Control::on(connect_from([127, 0, 0, 3], server.addr()).unwrap());
    let response_other = other.start(&request("tcp_rr", -2));
    let mut data_other =
        connect_from([127, 0, 0, 3], data_addr(&response_other)).expect("data from .3");
    data_other
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for _ in 0..2 {
        exchange(&mut data_other, 1);
    }
    assert_eq!(other.results().transactions, 2);
    // The first client vanishes mid-test: its place comes back long before its 60 s.
    drop(first);
    drop(data);
    let started = Instant::now();
    let taken = wait_for(Duration::from_secs(5), || {
        let mut c = server.control();
        c.ask(&request("tcp_maerts", 1)).word2 == 0
    });
    assert!(taken, "the vanished client's place was not freed");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// flent's RRUL runs 8 streams and 3 UDP_RR pings from one host at once: the default places fit.
#[test]
fn flent_s_rrul_fits_the_default_places() {
    let server = Netserver::start(&[]);
    let mut running = Vec::new();
    for i in 0..12 {
        let test = if i % 3 == 0 { "udp_rr" } else { "tcp_stream" };
        let mut control = server.control();
        let answer = control.ask(&request(test, 30));
        assert_eq!(answer.word2, 0, "test {i} of 12 refused");
        running.push(control);
    }
    // The 17th from the same address is over its half of 32.
    for _ in 12..16 {
        let mut control = server.control();
        assert_eq!(control.ask(&request("tcp_stream", 30)).word2, 0);
        running.push(control);
    }
    assert_eq!(server.control().ask(&request("tcp_stream", 30)).word2, 16);
}

#[test]
fn a_client_that_sends_no_data_is_let_go() {
    let server = Netserver::start(&["--max-tests", "1"]);
    for test in ["tcp_stream", "udp_stream"] {
        let mut idle = server.control();
        let started = Instant::now();
        idle.start(&request(test, 60));
        assert_eq!(
            server.control().ask(&request("tcp_rr", -1)).word2,
            16,
            "EBUSY"
        );
        // No data connection or datagram in 10 s: the test ends with ETIMEDOUT, not at 60 s.
        let results = idle.recv().expect("an answer");
        assert_eq!((results.kind, results.word2), (kind::OMNI_RESULTS, 110));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(9) && waited < Duration::from_secs(20),
            "{test}: let go after {waited:?}"
        );
        let mut next = server.control();
        let response = next.start(&request("tcp_rr", -1));
        let mut data = tcp_data(&response);
        exchange(&mut data, 1);
        assert_eq!(next.results().transactions, 1);
    }
}

/// A client that has its results may start its next test at once: the finished test's slot is
/// free before its results are sent. (It was freed just after, so a script running tests back
/// to back against `--max-tests 1` was refused with EBUSY when the server's task was
/// descheduled between the two — seen once in CI, under the whole suite's load; on an idle
/// machine this loop rarely lands in that window.)
#[test]
fn back_to_back_tests_are_each_admitted() {
    let server = Netserver::start(&["--max-tests", "1"]);
    for round in 0..200 {
        let mut control = server.control();
        let response = control.start(&request("tcp_rr", -1));
        let mut data = tcp_data(&response);
        exchange(&mut data, 1);
        assert_eq!(control.results().transactions, 1, "round {round}");
    }
}

#[test]
fn a_passphrase_is_asked_first() {
    let server = Netserver::start(&["-Z", "s3cret"]);
    let mut without = server.control();
    without.send(&request("tcp_rr", -1).encode());
    assert!(without.recv().is_none(), "served without the passphrase");
    let mut wrong = server.control();
    wrong.send(&Message::with_passphrase("guess"));
    wrong.send(&request("tcp_rr", -1).encode());
    assert!(wrong.recv().is_none(), "served with a wrong passphrase");
    let mut right = server.control();
    right.send(&Message::with_passphrase("s3cret"));
    let response = right.start(&request("tcp_rr", -2));
    let mut data = tcp_data(&response);
    for _ in 0..2 {
        exchange(&mut data, 1);
    }
    assert_eq!(right.results().transactions, 2);
}

/// Pids of processes whose command line contains `needle`.
fn pids_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn the_netserver_name_plays_netserver() {
    let dir = std::env::temp_dir().join(format!("perfpeer-netserver-name-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let netserver = dir.join("netserver");
    std::os::unix::fs::symlink(perfpeer_bin(), &netserver).unwrap();

    let version = Command::new(&netserver).arg("-V").output().unwrap();
    assert!(version.status.success());
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(text.starts_with("Netperf version 2.7.1"), "{text}");
    let bad = Command::new(&netserver).arg("-q").output().unwrap();
    assert_eq!(bad.status.code(), Some(1), "netserver's bad flag exits 1");
    let help = Command::new(&netserver).arg("-h").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("netserver") && help.contains("-Z"), "{help}");
    assert!(
        !help.contains("--max-tests"),
        "perfpeer-only flags are hidden: {help}"
    );
    let usage = Command::new(perfpeer_bin())
        .args(["netserver", "-p", "80x"])
        .output()
        .unwrap();
    assert_eq!(
        usage.status.code(),
        Some(2),
        "perfpeer's own subcommand exits 2"
    );

    // Without -D it goes into the background, as netserver does, and serves.
    let port = free_port().to_string();
    let status = Command::new(&netserver)
        .args(["-L", "127.0.0.1", "-p", &port])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let needle = format!("-p {port}");
    let served = wait_listening(port.parse().unwrap(), Duration::from_secs(10)) && {
        let mut control =
            Control::connect(SocketAddr::from(([127, 0, 0, 1], port.parse().unwrap())));
        let response = control.start(&request("tcp_rr", -1));
        let mut data = tcp_data(&response);
        exchange(&mut data, 1);
        control.results().transactions == 1
    };
    // A second one on the same port says so before going into the background, as netserver.
    let again = Command::new(&netserver)
        .args(["-L", "127.0.0.1", "-p", &port])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr).into_owned();
    let pids = pids_with(&needle);
    for pid in &pids {
        // SAFETY: kill(2) on a pid this test's daemon has.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(served, "the daemon did not serve");
    assert!(
        !again.status.success(),
        "a second netserver on a port in use exited 0"
    );
    assert!(said.contains("unable to start netserver"), "{said}");
    assert_eq!(pids.len(), 1, "one daemon: {pids:?}");
}

/// The numbers of the first of `lines` that has at least `min` of them (a table's data line).
fn result_line<'a>(mut lines: impl Iterator<Item = &'a str>, min: usize) -> Option<Vec<f64>> {
    lines.find_map(|l| {
        let n: Vec<f64> = l
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        (n.len() >= min).then_some(n)
    })
}

/// Runs the stock netperf against the server on `port` with `args`.
fn run_netperf(netperf: &std::path::Path, port: u16, args: &[&str]) -> std::process::Output {
    Command::new(netperf)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run netperf")
}

/// A stock netperf 2.x program (`netperf` or `netserver`): the one `var` names (scripts/test.sh
/// names the netperf 2.7.0 of scripts/fetch-netperf.sh), else `name` on PATH. `None` (said)
/// where there is none; where `var` names one, or in CI, a missing one fails.
fn stock_program(var: &str, name: &str) -> Option<PathBuf> {
    let named = std::env::var_os(var).map(PathBuf::from);
    let required = named.is_some() || std::env::var_os("CI").is_some();
    let program = named.unwrap_or_else(|| PathBuf::from(name));
    let version = Command::new(&program)
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if version.contains("Netperf version 2.") && !version.contains("perfpeer") {
        return Some(program);
    }
    let what = format!(
        "no stock {name} at {} (scripts/fetch-netperf.sh fetches netperf 2.7.0; \
         scripts/test.sh names it in {var})",
        program.display()
    );
    assert!(!required, "{what}");
    skip(&what);
    None
}

/// Stock netperf (`PERFPEER_NETPERF`, else `netperf` on PATH), or `None` where it may be missing.
pub(crate) fn stock_netperf() -> Option<PathBuf> {
    stock_program("PERFPEER_NETPERF", "netperf")
}

/// The stock client: every test netperf users run, netperf's own way.
#[test]
fn stock_netperf_against_perfpeer() {
    let Some(netperf) = stock_netperf() else {
        return;
    };
    let server = Netserver::start(&[]);
    for (test, extra) in [
        ("TCP_STREAM", &[][..]),
        ("TCP_MAERTS", &[]),
        ("TCP_RR", &[]),
        ("TCP_CRR", &[]),
        ("TCP_CC", &[]),
        ("UDP_STREAM", &["--", "-m", "1400"]),
        ("UDP_RR", &[]),
    ] {
        let args = [&["-t", test, "-l", "1", "-c", "-C"][..], extra].concat();
        let out = run_netperf(&netperf, server.port, &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{test}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let figures = result_line(stdout.lines().rev(), 6)
            .unwrap_or_else(|| panic!("{test}: no result line in {stdout}"));
        assert!(figures.iter().any(|&f| f > 1000.0), "{test}: {stdout}");
    }
    // flent's way: keyed output selectors and a count of transactions.
    let selectors = "THROUGHPUT,TRANSACTION_RATE,REMOTE_BYTES_RECVD";
    let out = run_netperf(
        &netperf,
        server.port,
        &["-t", "TCP_RR", "-l", "-300", "--", "-k", selectors],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("REMOTE_BYTES_RECVD=300"), "{stdout}");
}

/// `perfpeer netperf --netserver ARGS` against the netserver on `port`.
fn our_netperf(port: u16, args: &[&str]) -> std::process::Output {
    Command::new(perfpeer_bin())
        .args([
            "netperf",
            "--netserver",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .args(args)
        .output()
        .expect("run perfpeer netperf")
}

/// `NAME=value` lines of `-- -k` as pairs.
fn keyed(out: &std::process::Output, what: &str) -> Vec<(String, f64)> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn value(pairs: &[(String, f64)], name: &str) -> f64 {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {pairs:?}"))
        .1
}

/// The last line of `log` with `needle`, waiting up to 5 s for one.
fn last_line_with(log: &dyn Fn() -> String, needle: &str) -> Option<String> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let found = log()
            .lines()
            .rfind(|l| l.contains(needle))
            .map(str::to_string);
        if found.is_some() || Instant::now() >= until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// netperf's side of the protocol (`perfpeer netperf --netserver`) against a netserver: every
/// test netperf has, by count where the server's own line can confirm the count (the client's
/// rate × elapsed time must give it too), and the stream tests by time; CPU from both ends.
fn our_client_runs_every_test(port: u16, server_log: Option<&dyn Fn() -> String>) {
    // Enough transactions that each test spans several of the kernel's CPU-accounting ticks
    // (10 ms): 2000 UDP_RR transactions took 20 ms once (80 000/s) and measured no CPU at all.
    for (test, count) in [
        ("TCP_RR", 20_000),
        ("TCP_CRR", 1000),
        ("TCP_CC", 1000),
        ("UDP_RR", 20_000),
    ] {
        let n = format!("-{count}");
        let out = our_netperf(
            port,
            &[
                "-t",
                test,
                "-l",
                &n,
                "-c",
                "-C",
                "--",
                "-k",
                "TRANSACTION_RATE,ELAPSED_TIME,LOCAL_CPU_UTIL,REMOTE_CPU_UTIL,P50_LATENCY,TEST",
            ],
        );
        let pairs = keyed(&out, test);
        let rate = value(&pairs, "TRANSACTION_RATE");
        let done = rate * value(&pairs, "ELAPSED_TIME");
        // Elapsed time is printed to 10 ms: the product is the count within that rounding.
        assert!(
            (done - f64::from(count)).abs() <= rate * 0.005 + 1.0,
            "{test}: {done} transactions of {count}: {pairs:?}"
        );
        assert!(value(&pairs, "LOCAL_CPU_UTIL") > 0.0, "{test}: {pairs:?}");
        assert!(value(&pairs, "REMOTE_CPU_UTIL") >= 0.0, "{test}: {pairs:?}");
        assert!(value(&pairs, "P50_LATENCY") > 0.0, "{test}: {pairs:?}");
        if let Some(log) = server_log {
            let line = format!(" {test} ");
            let said = last_line_with(log, &line)
                .unwrap_or_else(|| panic!("{test}: no line at the server"));
            assert!(
                said.contains(&format!(": {count} transactions"))
                    || said.contains(&format!(") {count} transactions")),
                "{test}: the server counted otherwise: {said}"
            );
        }
    }
    for (test, extra) in [
        ("TCP_STREAM", &[][..]),
        ("TCP_MAERTS", &[]),
        ("UDP_STREAM", &["--", "-m", "1400"]),
    ] {
        let args = [&["-t", test, "-l", "1", "-c", "-C"][..], extra].concat();
        let out = our_netperf(port, &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{test}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains(&format!("{} TEST from", &test[4..])),
            "{stdout}"
        );
        // The data line: sizes, elapsed time, throughput, both ends' CPU and service demand.
        let figures = result_line(stdout.lines(), 8)
            .unwrap_or_else(|| panic!("{test}: no result line in {stdout}"));
        assert!(figures.iter().all(|&f| f >= 0.0), "{test}: -1 in {stdout}");
        assert!(figures.iter().any(|&f| f > 100.0), "{test}: {stdout}");
    }
}

#[test]
fn perfpeer_netperf_runs_every_test_against_it() {
    let server = Netserver::start(&[]);
    our_client_runs_every_test(server.port, Some(&|| server.output()));
    // A count of bytes: the server received exactly that many.
    let out = our_netperf(
        server.port,
        &["-t", "TCP_STREAM", "-l", "-3000000", "-P", "0"],
    );
    assert!(out.status.success(), "{out:?}");
    let said = last_line_with(&|| server.output(), " TCP_STREAM ").expect("a TCP_STREAM line");
    assert!(said.contains("2.86 MBytes"), "3 000 000 bytes: {said}");
}

/// What a netserver can say no to reaches the user as its errno's words; a netserver that
/// answers nonsense or hangs up is said to, and nothing is printed as a result.
#[test]
fn perfpeer_netperf_reports_a_netserver_s_refusal_and_nonsense() {
    let server = Netserver::start(&["--max-duration", "2"]);
    let out = our_netperf(server.port, &["-t", "TCP_STREAM", "-l", "5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("refused the test") && stderr.contains("errno 34"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Throughput"));

    // A fake netserver: a wrong answer, then a hang-up.
    let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = fake.local_addr().unwrap().port();
    let fake_thread = std::thread::spawn(move || {
        for answer in [Some(Message::new(kind::OMNI_RESULTS, 0)), None] {
            let (mut c, _) = fake.accept().unwrap();
            let mut request = [0u8; 656];
            c.read_exact(&mut request).unwrap();
            if let Some(m) = answer {
                c.write_all(&m.encode()).unwrap();
            }
        }
    });
    for want in ["cannot be used", "closed the connection"] {
        let out = our_netperf(port, &["-t", "TCP_RR", "-l", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(want), "{want}: {stderr}");
    }
    fake_thread.join().unwrap();
}

/// What only a netserver runs is refused against a perfpeer peer (and the reverse) before
/// anything is sent: a usage error, exit 2.
#[test]
fn netserver_only_options_are_usage_errors_elsewhere() {
    for (args, why) in [
        ("-H 127.0.0.1:9 -t TCP_CRR", "--netserver"),
        ("-H 127.0.0.1:9 -t TCP_CC", "--netserver"),
        ("-H 127.0.0.1:9 -- -P 5000,6000", "names its own data port"),
        ("--netserver -H 127.0.0.1 -p 9 -l 1.5", "whole seconds"),
        (
            "--netserver -H 127.0.0.1 -p 9 -t TCP_CRR -- -P 5000",
            "connection per transaction",
        ),
        (
            "--netserver -H 127.0.0.1 -p 9 -t UDP_RR -- -r 70000",
            "size",
        ),
    ] {
        let out = Command::new(perfpeer_bin())
            .arg("netperf")
            .args(args.split_whitespace())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {stderr}");
        assert!(stderr.contains(why), "{args}: {stderr}");
    }
}

/// The stock netserver (`PERFPEER_NETSERVER`, or `netserver` on PATH that is netperf's own) on
/// 127.0.0.1 and a free port, killed on drop.
struct StockNetserver {
    child: Child,
    port: u16,
}

impl StockNetserver {
    fn start() -> Option<StockNetserver> {
        let netserver = stock_program("PERFPEER_NETSERVER", "netserver")?;
        let port = free_port();
        let child = Command::new(&netserver)
            .args(["-D", "-L", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the stock netserver");
        let server = StockNetserver { child, port };
        assert!(wait_listening(port, Duration::from_secs(10)));
        Some(server)
    }
}

impl Drop for StockNetserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Our client against the stock netserver.
#[test]
fn perfpeer_netperf_against_stock_netserver() {
    let Some(server) = StockNetserver::start() else {
        return;
    };
    our_client_runs_every_test(server.port, None);
}

/// The socket sizes of a classic table's data lines: the first one or two figures of each line
/// (a stream test's receive and send socket; an _RR test's send and receive socket, this end's
/// line then the far end's; UDP_STREAM's sending socket, then the receiving one).
fn table_socket_sizes(test: &str, stdout: &str) -> Vec<i64> {
    let data: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.trim().is_empty())
        .filter(|l| !l.trim().is_empty())
        .collect();
    let first = |line: Option<&&str>, n: usize| -> Vec<i64> {
        line.map(|l| {
            l.split_whitespace()
                .take(n)
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default()
    };
    match test {
        "TCP_RR" => [first(data.first(), 2), first(data.get(1), 2)].concat(),
        "UDP_STREAM" => [first(data.first(), 1), first(data.get(1), 1)].concat(),
        _ => first(data.first(), 2),
    }
}

/// `perfpeer netperf --netserver`'s classic tables print the socket sizes stock netperf 2.7
/// prints against the same netserver: each end's data socket as it was made (netperf's lss_size,
/// rsr_size, …: 16384 and 131072 for TCP on Linux's defaults), not what Linux grew it to while
/// the test ran. Against perfpeer netserver and against the stock one.
#[test]
fn perfpeer_netperf_prints_the_socket_sizes_stock_netperf_prints() {
    let Some(netperf) = stock_netperf() else {
        return;
    };
    let ours = Netserver::start(&[]);
    let Some(stock) = StockNetserver::start() else {
        return;
    };
    for port in [ours.port, stock.port] {
        for (test, length) in [
            ("TCP_STREAM", "-20000000"),
            ("TCP_MAERTS", "1"),
            ("TCP_RR", "-2000"),
            ("UDP_STREAM", "1"),
        ] {
            let mut args = vec!["-t", test, "-l", length];
            if test == "UDP_STREAM" {
                args.extend(["--", "-m", "1400"]);
            }
            let theirs = run_netperf(&netperf, port, &args);
            let mine = our_netperf(port, &args);
            let [theirs, mine] = [theirs, mine].map(|out| {
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                assert!(
                    out.status.success(),
                    "{test}: {stdout}{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                stdout
            });
            let sizes = table_socket_sizes(test, &theirs);
            assert!(
                sizes.len() >= 2 && sizes.iter().all(|&s| s > 0),
                "{test}: no socket sizes in stock netperf's\n{theirs}"
            );
            assert_eq!(
                table_socket_sizes(test, &mine),
                sizes,
                "{test}, port {port}: ours\n{mine}\nstock netperf's\n{theirs}"
            );
        }
    }
}

/// netperf's `-y ,PRIO` and `-Y ,TOS`: the server's data socket takes them and the answer says
/// what the kernel holds (netserver's -1 when not asked), TCP and UDP; the test then runs.
#[test]
fn the_data_socket_takes_the_asked_priority_and_tos() {
    let server = Netserver::start(&[]);
    let mut control = server.control();
    for test in ["tcp_rr", "udp_rr"] {
        let mut r = request(test, -1);
        r.socket_prio = 5;
        r.socket_tos = 0x20;
        let response = control.start(&r);
        assert_eq!(
            (response.socket_prio, response.socket_tos),
            (5, 0x20),
            "{test}"
        );
        if test == "tcp_rr" {
            let mut data = tcp_data(&response);
            exchange(&mut data, 1);
        } else {
            let data = udp_data(&response);
            data.send(&[1]).unwrap();
            let mut back = [0u8; 16];
            assert_eq!(data.recv(&mut back).unwrap(), 1);
        }
        assert_eq!(control.results().transactions, 1, "{test}");
    }
    let response = control.start(&request("tcp_rr", -1));
    assert_eq!(response.socket_prio, -1, "not asked");
    exchange(&mut tcp_data(&response), 1);
    control.results();
}
