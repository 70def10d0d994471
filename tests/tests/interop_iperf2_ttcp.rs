use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::Duration;

use perfpeer_tests::{
    Running, free_port, have, json_of, our_iperf_client, perfpeer_bin, u64_at, wait_for,
    wait_listening,
};

fn perfpeer(args: &[&str]) -> std::process::Output {
    Running::spawn(&perfpeer_bin(), args).wait(Duration::from_secs(30))
}

/// A plain socket standing in for classic `ttcp -r`: it takes one connection and counts its
/// bytes to EOF; the port, and the count when the connection ends.
fn counting_receiver() -> (u16, std::thread::JoinHandle<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counter = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 65536];
        let mut total = 0u64;
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    (port, counter)
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Bytes from iperf2's CSV report line (`-y C`): the 8th field.
fn csv_bytes(line: &str) -> u64 {
    line.split(',')
        .nth(7)
        .and_then(|b| b.trim().parse().ok())
        .unwrap_or_else(|| panic!("not an iperf2 CSV line: {line}"))
}

/// `PROGRAM ARGS -p PORT` on a free port, once it listens; its port as text.
fn serve_on_free_port(program: &Path, args: &[&str]) -> (Running, String) {
    let port = free_port();
    let p = port.to_string();
    let mut all = args.to_vec();
    all.extend_from_slice(&["-p", &p]);
    let server = Running::spawn(program, &all);
    assert!(wait_for(Duration::from_secs(5), || TcpStream::connect((
        "127.0.0.1",
        port
    ))
    .is_ok()));
    (server, p)
}

/// `perfpeer iperf -s` on a free port, listening; its port as text.
fn our_iperf2_server() -> (Running, String) {
    serve_on_free_port(&perfpeer_bin(), &["iperf", "-s"])
}

#[test]
fn stock_iperf2_client_against_our_server() {
    if !have("iperf") {
        return;
    }
    let (_server, p) = our_iperf2_server();
    for extra in [&[][..], &["-P", "2"], &["-R"]] {
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "2", "-y", "C"];
        args.extend_from_slice(extra);
        let out = Running::spawn(Path::new("iperf"), &args).wait(Duration::from_secs(20));
        assert!(out.status.success(), "{extra:?}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let total: u64 = stdout.lines().last().map(csv_bytes).unwrap_or(0);
        assert!(total > 1_000_000, "{extra:?}: {stdout}");
    }
    // UDP: the stock client prints the report our server sent back.
    let out = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-u", "-b", "5M", "-t", "2"],
    )
    .wait(Duration::from_secs(20));
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Server Report:"), "no server report: {t}");
    assert!(
        t.lines()
            .any(|l| l.contains(" ms 0/") && l.contains("(0%)")),
        "no loss line: {t}"
    );
    assert!(!t.contains("WARNING: did not receive ack"), "{t}");
    // A legacy dual test is refused, not answered with a connection back.
    let out = Running::spawn(
        Path::new("iperf"),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "-d",
            "-L",
            &free_port().to_string(),
        ],
    )
    .wait(Duration::from_secs(20));
    let t = text(&out);
    assert_eq!(
        t.matches("connected with").count(),
        1,
        "only the client's own connection: {t}"
    );
    assert!(t.contains("expected reverse connect did not occur"), "{t}");
}

/// `--full-duplex` runs on the client's own connection (both ends send on it); UDP `-R` cannot
/// be: it is refused, and said once in the server's output, not once per header datagram.
#[test]
fn stock_iperf2_full_duplex_runs_and_udp_reverse_is_refused_once() {
    if !have("iperf") {
        return;
    }
    let (server, p) = our_iperf2_server();
    let out = Running::spawn(
        Path::new("iperf"),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "2",
            "--full-duplex",
            "-y",
            "C",
        ],
    )
    .wait(Duration::from_secs(20));
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let totals: Vec<u64> = stdout.lines().map(csv_bytes).collect();
    assert!(
        totals.len() >= 2 && totals.iter().all(|&b| b > 100_000),
        "both directions carried data: {t}"
    );
    let out = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-u", "-R", "-t", "1"],
    )
    .wait(Duration::from_secs(20));
    assert!(!text(&out).contains("connected with 127.0.0.1 port 0"));
    std::thread::sleep(Duration::from_millis(300));
    let served = text(&server.wait(Duration::from_secs(1)));
    assert_eq!(served.matches("refused a UDP").count(), 1, "{served}");
    assert!(!served.contains("full-duplex test"), "{served}");
}

/// The UDP server report counts datagrams as a stock server does (the fin is a datagram too):
/// the same `-n` gives the same total from both servers.
#[test]
fn our_udp_server_report_counts_as_stock_iperf2s() {
    if !have("iperf") {
        return;
    }
    let total = |p: &str| {
        let out = Running::spawn(
            Path::new("iperf"),
            &["-c", "127.0.0.1", "-p", p, "-u", "-b", "2M", "-n", "100K"],
        )
        .wait(Duration::from_secs(20));
        let t = text(&out);
        let line = t
            .lines()
            .rev()
            .find(|l| l.contains(" ms ") && l.contains('/'))
            .unwrap_or_else(|| panic!("no report line: {t}"))
            .to_string();
        let counts = line.split(" ms ").nth(1).unwrap_or_default();
        counts
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let (_ours, p) = our_iperf2_server();
    let port = free_port();
    let stock_p = port.to_string();
    let _stock = Running::spawn(Path::new("iperf"), &["-s", "-u", "-p", &stock_p]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        total(&p),
        total(&stock_p),
        "lost/total from ours, then stock's"
    );
}

/// `-y C` on both roles: iperf 2's CSV lines, and both ends' byte counts agree (stock counts
/// the test header as data at both ends, and so do we).
#[test]
fn csv_reports_on_both_roles_agree_with_the_other_end() {
    if !have("iperf") {
        return;
    }
    let csv_lines = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.split(',').count() >= 9)
            .map(str::to_string)
            .collect()
    };
    // Our server, a stock client.
    let (server, p) = serve_on_free_port(&perfpeer_bin(), &["iperf", "-s", "-y", "C"]);
    let client = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-y", "C"],
    )
    .wait(Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let served = server.wait(Duration::from_secs(1));
    let (ours, theirs) = (csv_lines(&served), csv_lines(&client));
    assert_eq!(ours.len(), 1, "{}", text(&served));
    assert!(
        !text(&served).contains("Server listening"),
        "CSV only: {}",
        text(&served)
    );
    assert_eq!(
        csv_bytes(&ours[0]),
        csv_bytes(theirs.last().expect("a client line")),
        "{ours:?} {theirs:?}"
    );
    // Our client, a stock server.
    let port = free_port();
    let p = port.to_string();
    let server = Running::spawn(Path::new("iperf"), &["-s", "-p", &p, "-y", "C"]);
    std::thread::sleep(Duration::from_millis(500));
    let client = our_iperf_client(port, &["-t", "1", "-i", "0.5", "-y", "C"]);
    std::thread::sleep(Duration::from_millis(300));
    let served = server.wait(Duration::from_secs(1));
    let (ours, theirs) = (csv_lines(&client), csv_lines(&served));
    assert!(
        ours.len() >= 3,
        "two intervals and the total: {}",
        text(&client)
    );
    let fields: Vec<&str> = ours[0].split(',').collect();
    assert_eq!(fields[0].len(), 14, "{ours:?}");
    assert_eq!(fields[6], "0.0-0.5", "{ours:?}");
    assert_eq!(
        csv_bytes(ours.last().unwrap()),
        csv_bytes(theirs.last().expect("a server line")),
        "{ours:?} {theirs:?}"
    );
}

#[test]
fn our_iperf2_client_against_stock_server() {
    if !have("iperf") {
        return;
    }
    for udp in [false, true] {
        let port = free_port();
        let p = port.to_string();
        let mut sargs = vec!["-s", "-p", &p, "-y", "C"];
        if udp {
            sargs.push("-u");
        }
        let server = Running::spawn(Path::new("iperf"), &sargs);
        assert!(wait_listening(port, Duration::from_secs(10)));
        let target = format!("iperf://127.0.0.1:{port}");
        let mut args = vec!["test", target.as_str(), "-t", "2", "-J"];
        if udp {
            args.extend_from_slice(&["-u", "-b", "5M"]);
        }
        let v = json_of(&perfpeer(&args), &args);
        let sent = u64_at(&v, "/end/sum_sent/bytes");
        std::thread::sleep(Duration::from_millis(300));
        let out = server.wait(Duration::from_millis(100));
        let stock = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.contains(','))
            .map(csv_bytes)
            .expect("the stock server reported the test");
        let tolerance = if udp { 2 * 1470 } else { 128 * 1024 };
        assert!(
            sent.abs_diff(stock) <= tolerance,
            "udp={udp}: we sent {sent}, the stock server counted {stock}"
        );
        if udp {
            // The server's report made it back into our result.
            assert_eq!(u64_at(&v, "/end/sum_received/bytes"), stock, "{v}");
        }
    }
}

/// UDP `-R` against a stock `iperf -s -u`: the stock server sends its flow to our client's
/// socket, and every datagram it says it sent is one we received or counted as lost (its fin,
/// as iperf2 counts it, is the last of its "Sent N datagrams").
#[test]
fn our_udp_reverse_client_against_stock_server() {
    if !have("iperf") {
        return;
    }
    let port = free_port();
    let p = port.to_string();
    let server = Running::spawn(Path::new("iperf"), &["-s", "-u", "-p", &p]);
    assert!(wait_listening(port, Duration::from_secs(10)));
    let args = [
        "iperf",
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-R",
        "-b",
        "10M",
        "-t",
        "2",
    ];
    let out = perfpeer(&args);
    assert!(out.status.success(), "{}", text(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    // "… Jitter   Lost/Total Datagrams" then "… 0.003 ms 0/1729 (0%)".
    let (lost, total) = ours
        .lines()
        .rev()
        .find_map(|l| {
            let field = l
                .split_whitespace()
                .find(|f| f.contains('/') && !f.contains("sec"))?;
            let (a, b) = field.split_once('/')?;
            Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
        })
        .unwrap_or_else(|| panic!("no Lost/Total in {ours}"));
    std::thread::sleep(Duration::from_millis(300));
    let stock = text(&server.wait(Duration::from_millis(100)));
    let sent: u64 = stock
        .lines()
        .find_map(|l| {
            l.split("Sent ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no 'Sent N datagrams' from the stock server: {stock}"));
    assert!(stock.contains("(reverse)"), "{stock}");
    assert_eq!(total + 1, sent, "ours {lost}/{total}, stock sent {sent}");
    // 10 Mbit/s of 1470-byte datagrams for 2 s: 1700.
    assert!((1500..=1900).contains(&total), "{ours}");
    assert!(lost <= total / 20, "{ours}");
}

/// A stock client's `-P 2` ends with the server's `[SUM]`, as a stock server prints it; with
/// `-1` a second address waits until the first one's streams are done.
#[test]
fn our_server_sums_a_clients_streams_and_serves_one_client_at_a_time() {
    if !have("iperf") {
        return;
    }
    let (server, p) = serve_on_free_port(&perfpeer_bin(), &["iperf", "-s", "-1"]);
    let out = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-P", "2"],
    )
    .wait(Duration::from_secs(20));
    assert!(out.status.success(), "{}", text(&out));
    // A 3-s client, then from another address a 1-s one: under -1 the second is served only
    // after the first, so it lasts 2.5 s, not 1.
    let first = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "3"],
    );
    std::thread::sleep(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let second = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-B", "127.0.0.2"],
    )
    .wait(Duration::from_secs(20));
    let waited = started.elapsed();
    let first = first.wait(Duration::from_secs(20));
    assert!(first.status.success() && second.status.success());
    assert!(
        waited >= Duration::from_secs(2),
        "-1: the second address was served while the first one ran ({waited:?})"
    );
    std::thread::sleep(Duration::from_millis(300));
    let log = text(&server.wait(Duration::from_millis(100)));
    let rows: Vec<&str> = log.lines().filter(|l| l.contains(" sec ")).collect();
    // Two stream rows, then their [SUM]; the two single streams after have none.
    assert!(rows.len() >= 5, "{log}");
    assert!(rows[2].starts_with("[SUM] 0.0000-"), "{log}");
    assert_eq!(
        rows.iter().filter(|r| r.starts_with("[SUM]")).count(),
        1,
        "{log}"
    );
}

#[test]
fn iperf3_and_ttcp_targets_in_perfpeer_test() {
    if !have("iperf3") {
        return;
    }
    let port = free_port();
    let _server = Running::spawn(Path::new("iperf3"), &["-s", "-p", &port.to_string()]);
    assert!(wait_listening(port, Duration::from_secs(10)));
    let target = format!("iperf3://127.0.0.1:{port}");
    let v = json_of(
        &perfpeer(&["test", &target, "-t", "1", "-J"]),
        &["iperf3 target"],
    );
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);
    // A stock iperf3 reports process CPU, not host-wide CPU: that figure is absent, not zero.
    assert!(
        v.pointer("/end/cpu_utilization_percent/remote_total")
            .is_some()
    );
    assert!(
        v.pointer("/perfpeer/host_cpu_percent/remote")
            .is_none_or(serde_json::Value::is_null),
        "{}",
        v["perfpeer"]
    );

    // ttcp:// against a plain socket standing in for classic ttcp -r: it counts to EOF.
    let (tport, counter) = counting_receiver();
    let target = format!("ttcp://127.0.0.1:{tport}");
    let v = json_of(
        &perfpeer(&["test", &target, "-n", "1000K", "-l", "1K", "-J"]),
        &["ttcp target"],
    );
    assert_eq!(counter.join().unwrap(), 1000 * 1024);
    assert_eq!(u64_at(&v, "/end/sum_sent/bytes"), 1000 * 1024);
    assert!(
        v["end"].get("sum_received").is_none(),
        "a ttcp receiver reports nothing back: {}",
        v["end"]
    );
}

/// A timed test against a ttcp receiver ends at its time (it used to run until killed: ttcp has
/// no control connection, and nothing stopped the sender).
#[test]
fn timed_ttcp_target_ends_at_its_time() {
    let (tport, counter) = counting_receiver();
    let target = format!("ttcp://127.0.0.1:{tport}");
    let args = ["test", &target, "-t", "1", "-b", "100M", "-J"];
    let out = Running::spawn(&perfpeer_bin(), &args).wait(Duration::from_secs(10));
    assert!(out.status.success(), "{}", text(&out));
    let v = json_of(&out, &args);
    let seconds = v["end"]["sum_sent"]["seconds"].as_f64().unwrap();
    assert!((0.9..1.5).contains(&seconds), "{seconds} s: {}", v["end"]);
    assert_eq!(counter.join().unwrap(), u64_at(&v, "/end/sum_sent/bytes"));
}

#[test]
fn ttcp_transmit_into_receive_tcp_and_udp() {
    for udp in [false, true] {
        let port = free_port().to_string();
        let mut rargs = vec!["ttcp", "-r", "-s", "-p", &port];
        let mut targs = vec![
            "ttcp",
            "-t",
            "-s",
            "-n1000",
            "-l1024",
            "-p",
            &port,
            "127.0.0.1",
        ];
        if udp {
            rargs.push("-u");
            targs.push("-u");
        }
        let receiver = Running::spawn(&perfpeer_bin(), &rargs);
        assert!(wait_listening(
            port.parse().unwrap(),
            Duration::from_secs(10)
        ));
        let t = perfpeer(&targs);
        let r = receiver.wait(Duration::from_secs(10));
        let (tt, rt) = (text(&t), text(&r));
        assert!(t.status.success(), "{tt}");
        let proto = if udp { "udp" } else { "tcp" };
        let lines: Vec<&str> = tt.lines().collect();
        assert_eq!(
            lines[0],
            format!(
                "ttcp-t: buflen=1024, nbuf=1000, align=16384/0, port={port}  {proto}  -> 127.0.0.1"
            )
        );
        assert_eq!(lines[1], "ttcp-t: 1024000 bytes processed");
        assert!(
            lines[2].starts_with("ttcp-t: ")
                && lines[2].contains(" CPU sec  = ")
                && lines[2].ends_with(" Kbits/cpu sec"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].contains(" real sec = ") && lines[3].ends_with(" Kbits/sec"),
            "{}",
            lines[3]
        );
        let got: u64 = rt
            .lines()
            .find_map(|l| {
                l.strip_prefix("ttcp-r: ")?
                    .strip_suffix(" bytes processed")?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{rt}"));
        if udp {
            // ttcp's UDP is unpaced: loss on loopback is possible, more bytes than sent is not.
            assert!(
                got > 0 && got <= 1_024_000 && got.is_multiple_of(1024),
                "{got}"
            );
        } else {
            assert_eq!(got, 1_024_000);
        }
    }
}

#[test]
fn ttcp_udp_uses_four_byte_sentinels() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    let sender = Running::spawn(
        &perfpeer_bin(),
        &[
            "ttcp",
            "-t",
            "-s",
            "-u",
            "-n20",
            "-l500",
            "-p",
            &port,
            "127.0.0.1",
        ],
    );
    let mut sizes = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok(n) = socket.recv(&mut buf) {
        sizes.push(n);
        if sizes.len() >= 25 {
            break;
        }
    }
    drop(sender);
    assert_eq!(sizes.first(), Some(&4), "a start sentinel first: {sizes:?}");
    assert_eq!(sizes.iter().filter(|&&n| n == 500).count(), 20, "{sizes:?}");
    assert!(
        sizes.iter().skip(21).all(|&n| n == 4) && sizes.len() >= 22,
        "end sentinels: {sizes:?}"
    );
}

/// Without `-s`, a UDP transmitter sends stdin and then the end sentinels, and no start
/// sentinel: classic ttcp sends none there, and a classic receiver would write it out as data.
#[test]
fn ttcp_udp_copy_mode_sends_no_start_sentinel() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    let mut sender = std::process::Command::new(perfpeer_bin())
        .args(["ttcp", "-t", "-u", "-p", &port, "127.0.0.1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = sender.stdin.take().unwrap();
        stdin.write_all(b"hello, receiver").unwrap();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok(n) = socket.recv(&mut buf) {
        got.push(buf[..n].to_vec());
        if got.len() >= 5 {
            break;
        }
    }
    let out = sender.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        got.first().map(Vec::as_slice),
        Some(&b"hello, receiver"[..]),
        "{got:?}"
    );
    assert!(
        got[1..].iter().all(|d| d.len() == 4) && got.len() == 5,
        "{got:?}"
    );
    // The set-up line says what the transfer used: -n as given, -A/-O as given.
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("nbuf=2048, align=16384/0"), "{text}");
}

/// `-u -l 4` is padded to 5 bytes as classic ttcp pads it (4 bytes or fewer is a sentinel), and
/// the receiver's set-up line shows its `-n` and `-A/-O`.
#[test]
fn ttcp_pads_short_udp_buffers_and_the_receiver_says_its_nbuf() {
    let port = free_port().to_string();
    let receiver = Running::spawn(
        &perfpeer_bin(),
        &[
            "ttcp", "-r", "-s", "-u", "-n", "77", "-A", "4096", "-O", "8", "-p", &port,
        ],
    );
    std::thread::sleep(Duration::from_millis(400));
    let sent = Running::spawn(
        &perfpeer_bin(),
        &[
            "ttcp",
            "-t",
            "-s",
            "-u",
            "-l",
            "4",
            "-n",
            "30",
            "-p",
            &port,
            "127.0.0.1",
        ],
    )
    .wait(Duration::from_secs(10));
    let sent_text = text(&sent);
    assert!(sent.status.success(), "{sent_text}");
    assert!(sent_text.contains("buflen=5, nbuf=30"), "{sent_text}");
    let received = text(&receiver.wait(Duration::from_secs(10)));
    assert!(
        received.contains("ttcp-r: buflen=8192, nbuf=77, align=4096/8"),
        "{received}"
    );
    assert!(received.contains("150 bytes processed"), "{received}");
}

#[test]
fn invoked_as_iperf3_it_is_iperf3() {
    if !have("iperf3") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("perfpeer-argv0-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("iperf3");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(perfpeer_bin(), &link).unwrap();
    let (_server, p) = serve_on_free_port(&link, &["-s"]);
    let out = Running::spawn(
        Path::new("iperf3"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
    )
    .wait(Duration::from_secs(15));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn bad_input_to_our_iperf2_server_is_dropped_and_it_keeps_serving() {
    if !have("iperf") {
        return;
    }
    use std::io::Write;
    let (_server, p) = our_iperf2_server();
    let port: u16 = p.parse().unwrap();
    // A header whose length field says 2 bytes, a header cut short, and one announcing a
    // legacy dual test with nothing after it.
    for bytes in [
        &[0x40u8, 0x01, 0x00, 0x04][..],
        &[0x40, 0x01, 0x00, 0x78, 0, 0, 0, 1],
        &[0x80, 0, 0, 0],
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = s.write_all(bytes);
        let _ = s.shutdown(std::net::Shutdown::Write);
        s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{bytes:?} was answered with {rest:?}");
    }
    // UDP garbage: runts, a header with a bad length, a stray fin.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    for d in [vec![1u8; 3], vec![0x7f; 40], {
        let mut f = vec![0xff; 4];
        f.extend_from_slice(&[0; 100]);
        f
    }] {
        u.send_to(&d, ("127.0.0.1", port)).unwrap();
    }
    let out = Running::spawn(
        Path::new("iperf"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-y", "C"],
    )
    .wait(Duration::from_secs(15));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(csv_bytes)
            .unwrap_or(0)
            > 0
    );
}

/// Bytes of an iperf 2 transfer column (`2.68 GBytes`).
fn transfer_bytes(number: &str, unit: &str) -> f64 {
    let n: f64 = number.parse().unwrap();
    n * match unit {
        "Bytes" => 1.0,
        "KBytes" => 1024.0,
        "MBytes" => 1024.0 * 1024.0,
        "GBytes" => 1024.0 * 1024.0 * 1024.0,
        other => panic!("unit {other}"),
    }
}

/// A stream's rows (`[  1] …`), split into their fields after `sec`.
fn stream_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with("[  1] ") && l.contains(" sec "))
        .map(|l| {
            l.split_once(" sec ")
                .unwrap()
                .1
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// `-e` on our client, side by side with the stock client against the stock server: the same
/// header and the same columns, and figures that hold together — writes cover the bytes (at most
/// 128 KiB a write), NetPwr is the row's bytes a second over its RTT, a UDP row's writes are
/// the datagrams it says it sent and its PPS their rate.
#[test]
fn our_enhanced_client_rows_are_iperf_2_s() {
    if !have("iperf") {
        return;
    }
    // Each client gets a fresh stock server: iperf 2.1.8's UDP server crashes (SIGSEGV) on
    // its second test, whoever the client is.
    let against_stock_server = |udp: bool, program: &Path, first: &[&str]| {
        let port = free_port();
        let p = port.to_string();
        let mut sargs = vec!["-s", "-p", &p];
        if udp {
            sargs.push("-u");
        }
        let _server = Running::spawn(Path::new("iperf"), &sargs);
        assert!(wait_listening(port, Duration::from_secs(10)));
        let mut args = first.to_vec();
        args.extend_from_slice(&["-c", "127.0.0.1", "-p", &p, "-t", "2", "-i", "1", "-e"]);
        if udp {
            args.extend_from_slice(&["-u", "-b", "5M"]);
        }
        Running::spawn(program, &args).wait(Duration::from_secs(30))
    };
    for udp in [false, true] {
        let stock = text(&against_stock_server(udp, Path::new("iperf"), &[]));
        let out = against_stock_server(udp, &perfpeer_bin(), &["iperf"]);
        assert!(out.status.success(), "{}", text(&out));
        let ours = String::from_utf8_lossy(&out.stdout).into_owned();
        let header = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("[ ID]"))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no header in {t}"))
        };
        assert_eq!(header(&ours), header(&stock), "udp={udp}");
        let (our_rows, stock_rows) = (stream_rows(&ours), stream_rows(&stock));
        // Two intervals and the total (a UDP server's report follows, in its own columns).
        assert!(our_rows.len() >= 3, "{ours}");
        let our_rows = &our_rows[..3];
        let width = |rows: &[Vec<String>]| rows[0].len();
        assert_eq!(
            width(our_rows),
            width(&stock_rows),
            "udp={udp}\n{ours}\n{stock}"
        );
        for row in our_rows {
            let bytes = transfer_bytes(&row[0], &row[1]);
            let (writes, errors) = row[4].split_once('/').unwrap();
            let writes: f64 = writes.parse().unwrap();
            assert_eq!(errors, "0", "{row:?}");
            if udp {
                // 1470-byte datagrams: the transfer, in its units' rounding.
                assert!((writes * 1470.0 - bytes).abs() <= bytes * 0.01, "{row:?}");
                assert_eq!(row[6], "pps", "{row:?}");
            } else {
                assert!(
                    writes > 0.0 && writes * 131_072.0 >= bytes * 0.99,
                    "{row:?}"
                );
                let rtt: f64 = row[6]
                    .split_once('/')
                    .and_then(|(_, r)| r.split_once('('))
                    .map(|(r, _)| r.parse().unwrap())
                    .unwrap();
                let bits: f64 = row[2].parse().unwrap();
                let scale = match &row[3][..1] {
                    "G" => 1e9,
                    "M" => 1e6,
                    "K" => 1e3,
                    _ => 1.0,
                };
                let bytes_per_s = bits * scale / 8.0;
                let power: f64 = row[8].parse().unwrap();
                assert!(
                    (power - bytes_per_s / rtt).abs() <= power * 0.02,
                    "NetPwr {power} vs {bytes_per_s} B/s over {rtt} us: {row:?}"
                );
            }
        }
        if udp {
            let sent: u64 = ours
                .lines()
                .find_map(|l| {
                    l.strip_prefix("[  1] Sent ")?
                        .strip_suffix(" datagrams")?
                        .parse()
                        .ok()
                })
                .expect("Sent N datagrams");
            let last = &our_rows[2];
            assert_eq!(last[4], format!("{sent}/0"), "{ours}");
        }
    }
}
