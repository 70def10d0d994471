//! `perfpeer iperf -s` as an attacker on the LAN would try it: a flood of refused dual-test
//! headers (log lines), thousands of TCP streams from one address and idle streams from a /24 of
//! addresses (threads), and UDP flows forged from hundreds of addresses (flow places). Every
//! attack comes from addresses in 127.0.0.0/8 other than the stock client's own.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use perfpeer_tests::fuzz::rss_and_threads;
use perfpeer_tests::{Running, connect_from, have, perfpeer_bin, wait_for};

/// `perfpeer iperf -s` on a free port with its stdout and stderr in files, killed on drop.
struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Server {
    fn start() -> Server {
        let port = perfpeer_tests::free_port();
        let dir =
            std::env::temp_dir().join(format!("perfpeer-e2e-{}-iperf2-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = |name: &str| std::fs::File::create(dir.join(name)).expect("log file");
        let child = Command::new(perfpeer_bin())
            .args(["iperf", "-s", "-p", &port.to_string()])
            .stdout(Stdio::from(file("stdout")))
            .stderr(Stdio::from(file("stderr")))
            .spawn()
            .expect("start perfpeer iperf -s");
        let server = Server { child, port, dir };
        assert!(
            wait_for(Duration::from_secs(5), || TcpStream::connect(server.addr())
                .is_ok()),
            "perfpeer iperf -s does not listen"
        );
        server
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Everything it wrote so far, stdout then stderr.
    fn output(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        read("stdout") + &read("stderr")
    }

    fn threads(&self) -> u64 {
        rss_and_threads(self.child.id()).1
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An iperf 2 test header of 24 bytes (a 2.0 client's) with the first word `flags`, one thread
/// and a time of `centis` hundredths of a second.
fn header(flags: u32, centis: i32) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&flags.to_be_bytes());
    h[4..8].copy_from_slice(&1i32.to_be_bytes());
    h[8..12].copy_from_slice(&5001i32.to_be_bytes());
    h[12..16].copy_from_slice(&131_072i32.to_be_bytes());
    h[20..24].copy_from_slice(&(-centis).to_be_bytes());
    h
}

/// A stock `iperf -c` from 127.0.0.3 with `extra` flags; its output as text.
fn stock_client(server: &Server, extra: &[&str]) -> (bool, String) {
    let p = server.port.to_string();
    let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-B", "127.0.0.3", "-t", "2"];
    args.extend_from_slice(extra);
    let out = Running::spawn(Path::new("iperf"), &args).wait(Duration::from_secs(30));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// Dual-test (`-d`) headers, a connection each, for 3 s from 127.0.0.2: each is refused, and
/// the refusals are said in a few lines, then with their count once the 10 s period is over
/// (before: a line per header, some 5,000 a second).
#[test]
fn a_flood_of_refused_dual_tests_writes_a_few_lines() {
    let server = Server::start();
    let dual = header(0x8000_0000, 1000);
    let refuse = || {
        connect_from([127, 0, 0, 2], server.addr()).is_some_and(|mut s| s.write_all(&dual).is_ok())
    };
    let start = Instant::now();
    let mut sent = 0u32;
    while start.elapsed() < Duration::from_secs(3) {
        sent += u32::from(refuse());
    }
    // Lines of the last moment of the flood still come out.
    std::thread::sleep(Duration::from_secs(1));
    let out = server.output();
    let lines = out.lines().count();
    eprintln!("{sent} dual-test headers in 3 s: {lines} lines:\n{out}");
    assert!(sent > 300, "the flood sent only {sent} headers");
    assert!(
        out.contains("refused a dual"),
        "the refusal is said at least once: {out}"
    );
    assert!(lines <= 12, "{lines} lines for {sent} refusals");
    // The next period's first refusal comes with the count of the flood's.
    std::thread::sleep(Duration::from_secs(11).saturating_sub(start.elapsed()));
    assert!(refuse());
    let counted = wait_for(Duration::from_secs(5), || {
        server
            .output()
            .contains("more iperf 2 dual tests refused in the last 10 s")
    });
    assert!(counted, "no count line: {}", server.output());
}

/// Opens `per_address` TCP streams from each of `from`, each sending a header for a 30 s test
/// and then nothing; they stay open until the returned streams drop.
fn idle_streams(server: &Server, from: &[[u8; 4]], per_address: usize) -> Vec<TcpStream> {
    let h = header(0, 3000);
    let mut streams = Vec::new();
    for _ in 0..per_address {
        for &ip in from {
            let Some(mut s) = connect_from(ip, server.addr()) else {
                continue;
            };
            if s.write_all(&h).is_ok() {
                streams.push(s);
            }
        }
    }
    streams
}

/// The most threads the server had over `span`.
fn peak_threads(server: &Server, span: Duration) -> u64 {
    let until = Instant::now() + span;
    let mut peak = 0;
    while Instant::now() < until {
        peak = peak.max(server.threads());
        std::thread::sleep(Duration::from_millis(100));
    }
    peak
}

/// 3,000 TCP streams from 127.0.0.2, each past its header: the server's threads stay bounded
/// (before: a thread per stream, 3,003) and a stock client from another address still runs.
#[test]
fn three_thousand_streams_from_one_address_are_capped() {
    if !have("iperf") {
        return;
    }
    perfpeer_tests::raise_fd_limit();
    let server = Server::start();
    let flood = idle_streams(&server, &[[127, 0, 0, 2]], 3000);
    let peak = peak_threads(&server, Duration::from_secs(3));
    eprintln!("{} streams open: at most {peak} threads", flood.len());
    assert!(flood.len() > 2500, "only {} streams opened", flood.len());
    assert!(peak < 150, "{peak} threads for {} streams", flood.len());
    let (ok, text) = stock_client(&server, &[]);
    assert!(
        ok && text.contains("Bytes"),
        "the stock client failed: {text}"
    );
    drop(flood);
}

/// Two idle streams from each of 254 addresses (a /24 of neighbours): the totals hold, and a
/// stock client from another address still runs, taking the place of an idle stream.
#[test]
fn idle_streams_from_254_addresses_do_not_deny_a_client() {
    if !have("iperf") {
        return;
    }
    perfpeer_tests::raise_fd_limit();
    let server = Server::start();
    let from: Vec<[u8; 4]> = (1..=254).map(|n| [127, 0, 5, n]).collect();
    let flood = idle_streams(&server, &from, 2);
    let peak = peak_threads(&server, Duration::from_secs(3));
    eprintln!("{} streams open: at most {peak} threads", flood.len());
    assert!(flood.len() > 480, "only {} streams opened", flood.len());
    assert!(peak < 250, "{peak} threads for {} streams", flood.len());
    let (ok, text) = stock_client(&server, &[]);
    assert!(
        ok && text.contains("Bytes"),
        "the stock client failed: {text}"
    );
    drop(flood);
}

/// An iperf 2 UDP datagram: sequence number `seq`, then a header for a 10 s test at offset 16,
/// 1470 bytes in all, as a stock client's.
fn udp_datagram(seq: i32) -> Vec<u8> {
    let mut d = vec![0u8; 1470];
    d[0..4].copy_from_slice(&seq.to_be_bytes());
    d[16..40].copy_from_slice(&header(0, 1000));
    d
}

/// UDP `-R` datagrams (the server would send: refused) from 250 forged addresses, a new flow
/// each, for 2 s: a few lines (before: a line per flow).
#[test]
fn a_flood_of_refused_udp_flows_writes_a_few_lines() {
    let server = Server::start();
    let mut reverse = udp_datagram(1);
    reverse[16..20].copy_from_slice(&0x0400_0000u32.to_be_bytes()); // VERSION2
    reverse[48..50].copy_from_slice(&0x0400u16.to_be_bytes()); // upper flags: reverse
    let start = Instant::now();
    let mut sent = 0u32;
    while start.elapsed() < Duration::from_secs(2) {
        for n in 1..=250u8 {
            let forged = UdpSocket::bind(SocketAddr::from(([127, 0, 7, n], 0))).expect("bind");
            sent += u32::from(forged.send_to(&reverse, server.addr()).is_ok());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let out = server.output();
    let lines = out.lines().count();
    eprintln!("{sent} refused UDP flows in 2 s: {lines} lines:\n{out}");
    assert!(
        out.contains("refused a UDP -R"),
        "the refusal is said: {out}"
    );
    assert!(lines <= 12, "{lines} lines for {sent} refused flows");
}

/// UDP flows forged from 250 addresses, a new flow (a new source port) with each datagram, 100
/// a second: a stock `iperf -c -u` from another address still gets its server report (before:
/// each forged flow took the place of the oldest, the stock client's among them, and it got
/// none).
#[test]
fn forged_udp_flows_from_250_addresses_do_not_deny_a_client() {
    if !have("iperf") {
        return;
    }
    let server = Server::start();
    let stop = Arc::new(AtomicBool::new(false));
    let to = server.addr();
    let forging = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // 100 a second, on a schedule (a late one is sent at once).
            let start = Instant::now();
            let mut sent = 0u32;
            for seq in 1.. {
                for n in 1..=250u8 {
                    if stop.load(Ordering::Relaxed) {
                        return (sent, start.elapsed());
                    }
                    let forged = UdpSocket::bind(SocketAddr::from(([127, 0, 6, n], 0)))
                        .expect("bind a forged source");
                    sent += u32::from(forged.send_to(&udp_datagram(seq), to).is_ok());
                    let due = start + Duration::from_millis(10) * sent;
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                }
            }
            (sent, start.elapsed())
        })
    };
    // The forged flows take every place first.
    std::thread::sleep(Duration::from_secs(2));
    let (ok, text) = stock_client(&server, &["-u", "-b", "1M"]);
    let threads = server.threads();
    stop.store(true, Ordering::Relaxed);
    let (sent, took) = forging.join().expect("the forging thread");
    let rate = f64::from(sent) / took.as_secs_f64();
    eprintln!("stock client beside {sent} forged flows in {took:?} ({threads} threads):\n{text}");
    assert!(rate > 80.0, "only {rate:.0} forged flows a second");
    assert!(ok, "the stock client failed: {text}");
    assert!(text.contains("Server Report:"), "no server report: {text}");
    assert!(threads < 250, "{threads} threads");
}

/// Sends a UDP flow of `datagrams` datagrams of `len` bytes from 127.0.0.8, then a fin every
/// 100 ms for 2 s; returns the bytes sent and the bytes the server sent back.
fn flow_and_fins(server: &Server, datagrams: i32, len: usize) -> (usize, usize) {
    let socket = UdpSocket::bind("127.0.0.8:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let mut sent = 0;
    for seq in 1..=datagrams {
        let mut d = udp_datagram(seq);
        d.truncate(len);
        sent += socket.send_to(&d, server.addr()).expect("send");
    }
    let mut fin = udp_datagram(-(datagrams + 1));
    fin.truncate(len);
    let (mut back, mut buf) = (0, [0u8; 2048]);
    for _ in 0..20 {
        sent += socket.send_to(&fin, server.addr()).expect("send");
        if let Ok(n) = socket.recv(&mut buf) {
            back += n;
        }
    }
    (sent, back)
}

/// iperf 2's UDP cannot prove a source: the server report (128 bytes) goes only to a flow that
/// ended with its fin, once per fin and at most 9 times, and never more bytes of reports than
/// the flow sent (QUIC's rule allows 3 times).
#[test]
fn the_udp_report_never_reflects_more_than_the_flow_sent() {
    let server = Server::start();
    let (sent, back) = flow_and_fins(&server, 1, 40);
    eprintln!("one 40-byte datagram and 20 fins: {sent} bytes sent, {back} back");
    assert_eq!(back, 0, "a report larger than the flow's data");
    let (sent, back) = flow_and_fins(&server, 10, 100);
    eprintln!("ten 100-byte datagrams and 20 fins: {sent} bytes sent, {back} back");
    assert!(back > 0, "the flow got no report");
    // Fins are the flow's bytes too: the rule is at most what it sent, and at most 9 reports.
    assert!(
        back <= sent && back <= 9 * 128,
        "{back} bytes back for {sent}"
    );
}
