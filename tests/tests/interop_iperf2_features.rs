//! iperf 2.1's Wi-Fi-era client features against `perfpeer iperf -s`, with Debian's stock iperf
//! 2.1.8 as the client: bounce-back round trips, UDP one-way latency (`--trip-times`) in the
//! server report, video frames (`--isochronous`) and TCP write latency (`--trip-times`) both
//! ways, and every client flag `iperf --help` lists run with a time limit — none may hang
//! against our server unless it hangs against the stock server too (a bug of the client's).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use perfpeer_tests::{Running, free_port, have, our_iperf_client, perfpeer_bin, wait_for};

/// Test length of every client invocation, seconds.
const TEST_SECS: &str = "2";
/// Longest a 2 s client may take to end: iperf 2's own slowest ending (UDP `-R` waits 5 s for
/// data that never comes) with a margin.
const LIMIT: Duration = Duration::from_secs(12);

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A server on a free port once it answers TCP; its port.
fn server(program: &Path, args: &[&str]) -> (Vec<Running>, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut all = args.to_vec();
    all.extend_from_slice(&["-p", &p]);
    let running = vec![Running::spawn(program, &all)];
    assert!(wait_for(Duration::from_secs(5), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    (running, port)
}

/// `perfpeer iperf -s` (TCP and UDP on one port).
fn ours() -> (Vec<Running>, u16) {
    server(&perfpeer_bin(), &["iperf", "-s"])
}

/// Stock `iperf -s` and `iperf -s -u` on one port (a 2.1.8 server takes one protocol).
fn stock() -> (Vec<Running>, u16) {
    let (mut running, port) = server(Path::new("iperf"), &["-s"]);
    let p = port.to_string();
    running.push(Running::spawn(Path::new("iperf"), &["-s", "-u", "-p", &p]));
    std::thread::sleep(Duration::from_millis(300));
    (running, port)
}

/// Runs `iperf -c HOST -p PORT -t 2 ARGS` (stdin empty) for at most [`LIMIT`]; its output, and
/// whether it ended by itself in time.
fn client(host: &str, port: u16, args: &[String]) -> (Output, bool) {
    let started = Instant::now();
    let mut command = Command::new("iperf");
    command
        .args(["-c", host, "-p", &port.to_string(), "-t", TEST_SECS])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = Running(command.spawn().expect("start iperf"));
    let out = child.wait(LIMIT);
    let ended = started.elapsed() < LIMIT;
    (out, ended)
}

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn a_stock_bounceback_client_completes_with_its_round_trips() {
    if !have("iperf") {
        return;
    }
    let (_server, port) = ours();
    for (extra, hold_ms) in [("", 0.0), ("--bounceback-hold 20", 20.0)] {
        let line = format!("--bounceback -i 1 {extra}");
        let (out, ended) = client("127.0.0.1", port, &args(&line));
        let t = text(&out);
        assert!(ended && out.status.success(), "{line}: {t}");
        // `[  1] 0.0000-2.00 sec  3.91 KBytes  16.0 Kbits/sec    20=0.04/0.01/0.2/0.05 ms …`
        let total = t
            .lines()
            .rfind(|l| l.contains(" ms ") && l.contains("0.0000-"))
            .unwrap_or_else(|| panic!("no total row: {t}"));
        let (count, avg) = total
            .split_whitespace()
            .find_map(|w| {
                let (n, figures) = w.split_once('=')?;
                Some((
                    n.parse::<u64>().ok()?,
                    figures.split('/').next()?.parse::<f64>().ok()?,
                ))
            })
            .unwrap_or_else(|| panic!("no round trips: {total}"));
        assert!(count >= 10, "{total}");
        assert!(avg >= hold_ms && avg < hold_ms + 10.0, "{total}");
        assert!(t.contains("BB8(f)-PDF"), "the client's histogram: {t}");
    }
}

/// A server row's `avg/min/max/stdev` latency figures, ms.
fn latency_of(row: &str) -> [f64; 4] {
    let figures = row
        .split_whitespace()
        .find(|w| w.matches('/').count() == 3)
        .unwrap_or_else(|| panic!("no latency figures: {row}"));
    let v: Vec<f64> = figures
        .split('/')
        .map(|f| f.parse().unwrap_or_else(|_| panic!("not figures: {row}")))
        .collect();
    [v[0], v[1], v[2], v[3]]
}

#[test]
fn stock_udp_trip_times_get_latency_in_the_server_report() {
    if !have("iperf") {
        return;
    }
    let (mut server, port) = ours();
    let (out, ended) = client("127.0.0.1", port, &args("-u --trip-times -b 2M -l 1000 -e"));
    let t = text(&out);
    assert!(ended && out.status.success(), "{t}");
    let report = t
        .lines()
        .skip_while(|l| !l.contains("Server Report:"))
        .find(|l| l.contains(" pps"))
        .unwrap_or_else(|| panic!("no server report with latency: {t}"));
    assert!(!report.contains("-/-/-/-"), "{report}");
    let theirs = latency_of(report);
    // Loopback: one clock, a delay well under a millisecond on average, min ≤ avg ≤ max.
    assert!(
        theirs[1] >= 0.0 && theirs[1] <= theirs[0] && theirs[0] <= theirs[2],
        "{report}"
    );
    assert!(theirs[0] < 5.0, "{report}");
    let pps: f64 = report
        .split_whitespace()
        .rev()
        .skip_while(|w| *w != "pps")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no pps: {report}"));
    // 2 Mbit/s of 1000-byte datagrams: 250 a second.
    assert!((200.0..300.0).contains(&pps), "{report}");
    // Our server printed the same figures it sent.
    std::thread::sleep(Duration::from_millis(500));
    let _ = server[0].0.kill();
    let ours = server.remove(0).wait(Duration::from_secs(5));
    let ours = text(&ours);
    let row = ours
        .lines()
        .find(|l| l.contains(" pps"))
        .unwrap_or_else(|| panic!("our server printed no latency: {ours}"));
    let mine = latency_of(row);
    for (a, b) in mine.iter().zip(theirs) {
        assert!((a - b).abs() < 0.002, "ours {row} / theirs {report}");
    }
}

/// A `T8(f)-PDF` (or `F8(f)-PDF`) histogram line as iperf 2.1 prints it: its count, its bins
/// `(bin, count)` and the 5 / 95 / 99.7 % bins; panics on any other shape.
fn histogram_of(line: &str) -> (u64, Vec<(u64, u64)>, [u64; 3]) {
    let rest = line
        .split_once("8(f)-PDF: bin(w=")
        .and_then(|(_, r)| r.split_once("us):cnt("))
        .unwrap_or_else(|| panic!("not a histogram line: {line}"))
        .1;
    let (count, rest) = rest.split_once(")=").unwrap();
    let (bins, rest) = rest.split_once(" (5.00/95.00/99.7%=").unwrap();
    let bins = bins
        .split(',')
        .map(|b| {
            let (bin, n) = b.split_once(':').unwrap();
            (bin.parse().unwrap(), n.parse().unwrap())
        })
        .collect();
    let (points, rest) = rest.split_once(",Outliers=").unwrap();
    assert!(rest.contains(",obl/obu="), "{line}");
    let p: Vec<u64> = points.split('/').map(|p| p.parse().unwrap()).collect();
    (count.parse().unwrap(), bins, [p[0], p[1], p[2]])
}

/// `--histograms` on the server: ours prints iperf 2.1's `T8(f)` line for a stock client's
/// `--trip-times` flow, counting every datagram; a stock server prints one for our client's
/// flow (our time stamps are iperf 2's).
#[test]
fn server_histograms_count_every_datagram_both_ways() {
    if !have("iperf") {
        return;
    }
    let (mut our_server, our_port) =
        server(&perfpeer_bin(), &["iperf", "-s", "--histograms=50u,2000"]);
    let (out, ended) = client(
        "127.0.0.1",
        our_port,
        &args("-u --trip-times -b 2M -l 1000"),
    );
    assert!(ended && out.status.success(), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(500));
    let _ = our_server[0].0.kill();
    let printed = text(&our_server.remove(0).wait(Duration::from_secs(5)));
    assert!(
        printed.contains("Enabled receive histograms bin-width=0.050 ms, bins=2000"),
        "{printed}"
    );
    // Stock's own layout; both the histogram and the row are our server's.
    let stock_port = free_port();
    let p = stock_port.to_string();
    let mut stock_server = Running::spawn(
        Path::new("iperf"),
        &["-s", "-u", "-p", &p, "-e", "--histograms=50u,2000"],
    );
    std::thread::sleep(Duration::from_millis(300));
    let ours_out = our_iperf_client(
        stock_port,
        &["-u", "--trip-times", "-b", "2M", "-l", "1000", "-t", "2"],
    );
    assert!(ours_out.status.success(), "{}", text(&ours_out));
    std::thread::sleep(Duration::from_millis(500));
    let _ = stock_server.0.kill();
    let stock_printed = text(&stock_server.wait(Duration::from_secs(5)));
    for (who, printed) in [("ours", &printed), ("stock", &stock_printed)] {
        let line = printed
            .lines()
            .find(|l| l.contains("T8(f)-PDF"))
            .unwrap_or_else(|| panic!("{who}: no histogram: {printed}"));
        assert!(
            line.contains(" sec T8(f)-PDF: bin(w=50us):"),
            "{who}: {line}"
        );
        let (count, bins, [lower, upper, p99_7]) = histogram_of(line);
        // 2 Mbit/s (iperf 2 reads 2M as 2 × 2^20) of 1000-byte datagrams for 2 s: about 524,
        // every one in a bin.
        assert!((480..=560).contains(&count), "{who}: {line}");
        assert_eq!(
            bins.iter().map(|b| b.1).sum::<u64>(),
            count,
            "{who}: {line}"
        );
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0), "{who}: {line}");
        assert!(
            1 <= lower && lower <= upper && upper <= p99_7,
            "{who}: {line}"
        );
        // Loopback: every delay under 20 ms (bin 400 of 50 µs).
        assert!(bins.last().unwrap().0 <= 400, "{who}: {line}");
        // The row's datagram count is the histogram's.
        let total: u64 = printed
            .lines()
            .find(|l| l.contains(" pps"))
            .and_then(|row| {
                row.split_whitespace().find_map(|w| {
                    let (lost, total) = w.split_once('/')?;
                    lost.parse::<u64>().ok()?;
                    total.parse::<u64>().ok()
                })
            })
            .unwrap_or_else(|| panic!("{who}: no Lost/Total: {printed}"));
        assert_eq!(total, count, "{who}: {printed}");
    }
}

/// One invocation per client flag of `iperf --help`, each with what it needs to run.
const INVOCATIONS: &[&str] = &[
    "",
    "-u",
    "-b 5M",
    "-u -b 100pps",
    "-e",
    "-u -e",
    "-f k",
    "--hide-ips",
    "-i 1",
    "-l 1000",
    "-u -l 20 --trip-times",
    "-m",
    "--permit-key=abcdef",
    "-u --permit-key=abcdef",
    "--sum-only -P 2",
    "-w 256K",
    "-z",
    "-B 127.0.0.1",
    "-C",
    "-M 1400",
    "-N",
    "-S 0x10",
    "-Z cubic",
    "--bounceback",
    "--bounceback --bounceback-congest",
    "--bounceback --bounceback-hold 5",
    "--bounceback --bounceback-period 0.5",
    "--bounceback --bounceback-no-quickack",
    "--bounceback -l 40",
    "--connect-only",
    "--connect-retries 2",
    "-d",
    "-u -d",
    "-d -L 0",
    "--fq-rate 10M",
    "--full-duplex",
    "-u --full-duplex",
    "-u --isochronous 60:2m,0 --ipg 1",
    "--isochronous 60:2m,0",
    "-u --isochronous 30:1m,100k",
    "-P 2 --incr-dstip",
    "-P 2 --incr-dstport",
    "-P 2 --incr-srcip",
    "-P 2 --incr-srcport",
    "--local-only",
    "--near-congestion",
    "-P 2 --no-connect-sync",
    "-u --no-udp-fin",
    "-n 10M",
    "-r",
    "-u -r",
    "--tcp-quickack",
    "--tcp-write-prefetch 64K",
    "-R --tcp-write-prefetch 64K",
    "--tcp-write-times",
    "--trip-times",
    "-u --trip-times",
    "--txdelay-time 1",
    "--txstart-time {now+1}",
    "-u --txstart-time {now+1}",
    "-F {file}",
    "-u -T 2",
    "-P 3",
    "-R",
    "-u -R",
    "-X",
    "-x CDMSV",
    "-y C",
    "-o {out}",
    "-I",
    "-V",
    "-u -V",
    "-u -H 127.0.0.1",
    "-v",
];

#[test]
fn no_stock_client_invocation_hangs_against_our_server() {
    if !have("iperf") {
        return;
    }
    // Every long option of the help's client sections is exercised above.
    let help = Command::new("iperf")
        .arg("--help")
        .output()
        .expect("iperf --help");
    let help = text(&help);
    let mut listed = BTreeSet::new();
    let mut in_client = false;
    for line in help.lines() {
        if line.ends_with(':') && !line.starts_with(' ') {
            in_client = line.starts_with("Client");
            continue;
        }
        let option = line.split_whitespace().find(|w| w.starts_with("--"));
        if let (true, Some(option)) = (in_client, option) {
            let name = option.trim_end_matches(',');
            listed.insert(name.split('=').next().unwrap_or(name).to_string());
        }
    }
    assert!(listed.len() > 30, "the help's client options: {help}");
    let unexercised: Vec<&String> = listed
        .iter()
        .filter(|o| !INVOCATIONS.iter().any(|i| i.contains(o.as_str())))
        .filter(|o| {
            !SHORT_ONLY.iter().any(|(long, short)| {
                long == o
                    && INVOCATIONS
                        .iter()
                        .any(|i| i.split_whitespace().any(|w| w == *short))
            })
        })
        .collect();
    let long_ones: Vec<&String> = unexercised
        .into_iter()
        .filter(|o| !matches!(o.as_str(), "--client" | "--time" | "--port" | "--help"))
        .collect();
    assert!(
        long_ones.is_empty(),
        "client options of `iperf --help` with no invocation here: {long_ones:?}"
    );
    let dir = std::env::temp_dir().join(format!("perfpeer-iperf2-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _cleanup = RemoveOnDrop(dir.clone());
    let file = dir.join("input");
    std::fs::write(&file, vec![b'x'; 1 << 20]).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expand = |line: &str, n: usize| {
        line.replace("{now+1}", &(now + 30).to_string())
            .replace("{file}", &file.display().to_string())
            .replace("{out}", &dir.join(format!("out{n}")).display().to_string())
    };
    let (_ours, port) = ours();
    // Four at a time: the machine has two cores and each client runs 2 s.
    let hung: Vec<(String, String)> = std::thread::scope(|scope| {
        let mut hung = Vec::new();
        for (batch_no, batch) in INVOCATIONS.chunks(4).enumerate() {
            let handles: Vec<_> = batch
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    let line = expand(line, batch_no * 4 + i);
                    scope.spawn(move || {
                        let (out, ended) = client(host_for(&line), port, &args(&line));
                        (line, ended, text(&out))
                    })
                })
                .collect();
            for h in handles {
                let (line, ended, out) = h.join().unwrap();
                eprintln!(
                    "iperf -c … {line}: {}",
                    if ended { "ended" } else { "HUNG" }
                );
                if !ended {
                    hung.push((line, out));
                }
            }
        }
        hung
    });
    // Those that hung against ours must hang against the stock server too.
    let (_stock, stock_port) = stock();
    for (line, out) in &hung {
        let (_, ended) = client(host_for(line), stock_port, &args(line));
        assert!(
            !ended,
            "`iperf -c … {line}` hangs against perfpeer iperf -s but not against stock iperf -s: {out}"
        );
        eprintln!("`iperf -c … {line}` hangs against the stock server too (the client's own)");
    }
}

/// Removes a directory when dropped (the test's scratch files, whatever happens).
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `-V` runs over IPv6.
fn host_for(line: &str) -> &'static str {
    if line.split_whitespace().any(|w| w == "-V") {
        "::1"
    } else {
        "127.0.0.1"
    }
}

/// Client options the help lists by a long name that the invocations above give by their short
/// letter.
const SHORT_ONLY: &[(&str, &str)] = &[
    ("--bandwidth", "-b"),
    ("--enhanced", "-e"),
    ("--format", "-f"),
    ("--interval", "-i"),
    ("--len", "-l"),
    ("--print_mss", "-m"),
    ("--output", "-o"),
    ("--udp", "-u"),
    ("--window", "-w"),
    ("--realtime", "-z"),
    ("--bind", "-B"),
    ("--compatibility", "-C"),
    ("--mss", "-M"),
    ("--nodelay", "-N"),
    ("--tos", "-S"),
    ("--tcp-congestion", "-Z"),
    ("--dualtest", "-d"),
    ("--num", "-n"),
    ("--tradeoff", "-r"),
    ("--fileinput", "-F"),
    ("--ssm-host", "-H"),
    ("--stdin", "-I"),
    ("--listenport", "-L"),
    ("--parallel", "-P"),
    ("--reverse", "-R"),
    ("--ttl", "-T"),
    ("--ipv6_domain", "-V"),
    ("--peer-detect", "-X"),
    ("--reportexclude", "-x"),
    ("--reportstyle", "-y"),
    ("--version", "-v"),
];

#[test]
fn our_udp_trip_times_client_prints_the_servers_latency() {
    if !have("iperf") {
        return;
    }
    let (_stock, stock_port) = stock();
    let (_ours, our_port) = ours();
    for (server, port) in [
        ("stock iperf -s -u", stock_port),
        ("perfpeer iperf -s", our_port),
    ] {
        let out = our_iperf_client(port, &["-u", "--trip-times", "-b", "2M", "-t", "2"]);
        let t = text(&out);
        assert!(out.status.success(), "{server}: {t}");
        let row = t
            .lines()
            .skip_while(|l| !l.contains("Server Report:"))
            .find(|l| l.ends_with(" pps"))
            .unwrap_or_else(|| panic!("{server}: no latency in the server report: {t}"));
        let [avg, min, max, _] = latency_of(row);
        assert!(
            min >= 0.0 && min <= avg && avg <= max && avg < 5.0,
            "{server}: {row}"
        );
    }
    // Our client's limits are usage errors, said before any traffic.
    for (host, bad) in [
        ("127.0.0.1", &["--trip-times", "-l", "50"][..]),
        ("127.0.0.1", &["-u", "--trip-times", "-l", "100"]),
        ("127.0.0.1", &["-u", "--isochronous=60:2m", "-l", "100"]),
        ("127.0.0.1", &["-u", "--isochronous=60:2m", "-R"]),
        ("127.0.0.1", &["-u", "--isochronous=60:2m", "-b", "1m"]),
        ("239.255.1.1", &[]),
        ("239.255.1.1", &["-u", "-R"]),
    ] {
        let p = our_port.to_string();
        let mut args = vec!["iperf", "-c", host, "-p", &p, "-t", "1"];
        args.extend_from_slice(bad);
        let out = Running::spawn(&perfpeer_bin(), &args).wait(Duration::from_secs(10));
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{host} {bad:?}: {t}");
        assert!(
            ["trip-times", "multicast", "isochronous"]
                .iter()
                .any(|w| t.contains(w)),
            "{t}"
        );
    }
}

#[test]
fn our_bounceback_client_times_round_trips_against_stock_and_our_server() {
    if !have("iperf") {
        return;
    }
    let (_stock, stock_port) = stock();
    let (_ours, our_port) = ours();
    for (server, port) in [
        ("stock iperf -s", stock_port),
        ("perfpeer iperf -s", our_port),
    ] {
        for (extra, hold_ms) in [(&[][..], 0.0), (&["--bounceback-hold", "20"][..], 20.0)] {
            let p = port.to_string();
            let mut args = vec![
                "iperf",
                "-c",
                "127.0.0.1",
                "-p",
                &p,
                "--bounceback",
                "-t",
                "2",
            ];
            args.extend_from_slice(extra);
            let out = Running::spawn(&perfpeer_bin(), &args).wait(Duration::from_secs(20));
            let t = text(&out);
            assert!(out.status.success(), "{server} {extra:?}: {t}");
            // `[  1] 0.0000-2.0001 sec  3.91 KBytes  16.0 Kbits/sec    20=0.056/0.020/… ms  17932 rps`
            let row = t
                .lines()
                .find(|l| l.ends_with(" rps"))
                .unwrap_or_else(|| panic!("{server}: no round-trip row: {t}"));
            let (count, figures) = row
                .split_whitespace()
                .find_map(|w| w.split_once('='))
                .unwrap_or_else(|| panic!("{server}: {row}"));
            // Two bursts of ten in 2 s.
            assert_eq!(count, "20", "{server}: {row}");
            let avg: f64 = figures.split('/').next().unwrap().parse().unwrap();
            assert!(
                avg >= hold_ms && avg < hold_ms + 10.0,
                "{server} {extra:?}: {row}"
            );
            assert!(
                row.contains("3.91 KBytes"),
                "20 requests and replies of 100 B: {row}"
            );
        }
    }
}

/// The `rx/lost` pair and the frame latency figures after `pps` in a frames row
/// (`… 1740 pps  119/2  0.224/0.101/0.423/0.062 ms`), from stock's server or ours.
fn frames_of(row: &str) -> (u64, u64, [f64; 4]) {
    let after = row
        .split_once(" pps")
        .unwrap_or_else(|| panic!("no pps: {row}"))
        .1;
    let mut words = after.split_whitespace();
    let (rx, lost) = words
        .next()
        .and_then(|w| w.split_once('/'))
        .unwrap_or_else(|| panic!("no frames: {row}"));
    let latency = latency_of(words.next().unwrap_or_else(|| panic!("no latency: {row}")));
    (rx.parse().unwrap(), lost.parse().unwrap(), latency)
}

/// A TCP `--trip-times` receiver's row: writes timed, their size, and the avg/min/max/stdev of
/// their delays (`… 0.888/0.013/47.058/4.846 ms (2001/1000) …`), from stock's output or ours.
fn write_delays_of(row: &str) -> (u64, u64, [f64; 4]) {
    let (_, rest) = row
        .split_once(" ms (")
        .unwrap_or_else(|| panic!("no (cnt/size): {row}"));
    let (count, size) = rest
        .split_once(')')
        .and_then(|(c, _)| c.split_once('/'))
        .unwrap_or_else(|| panic!("no (cnt/size): {row}"));
    (
        count.parse().unwrap(),
        size.parse().unwrap(),
        latency_of(row.split_once(" ms (").unwrap().0),
    )
}

/// A stock server's report, once it has printed it (killed, then read).
fn stock_output(mut server: Running) -> String {
    std::thread::sleep(Duration::from_millis(500));
    let _ = server.0.kill();
    text(&server.wait(Duration::from_secs(5)))
}

/// Video frames (`--isochronous`) both ways: a stock client's frames counted by our server
/// (frames whole and lost, their latency and iperf 2's `F8` histogram), ours by a stock server.
#[test]
fn video_frames_are_counted_both_ways() {
    if !have("iperf") {
        return;
    }
    // 60 frames a second for 2 s: 120 or so, every one whole on loopback.
    let frames_in_two_seconds = 110..=125;
    let (mut our_server, port) = server(&perfpeer_bin(), &["iperf", "-s", "--histograms"]);
    let (out, ended) = client(
        "127.0.0.1",
        port,
        &args("-u --isochronous=60:8m,1m --trip-times -e"),
    );
    assert!(ended && out.status.success(), "{}", text(&out));
    // perfpeer's own test to an iperf 2 server sends the same frames.
    let target = format!("iperf://127.0.0.1:{port}");
    let ours = Running::spawn(
        &perfpeer_bin(),
        &[
            "test",
            &target,
            "-u",
            "--isochronous=60:8m,1m",
            "-t",
            "2",
            "--no-store",
        ],
    )
    .wait(Duration::from_secs(20));
    assert!(ours.status.success(), "{}", text(&ours));
    // Without --trip-times a stock client's frames carry no times: a plain row, no frames.
    let (out, ended) = client("127.0.0.1", port, &args("-u --isochronous=60:2m"));
    assert!(ended && out.status.success(), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(500));
    let _ = our_server[0].0.kill();
    let printed = text(&our_server.remove(0).wait(Duration::from_secs(5)));
    assert!(printed.contains("Frame:rx/lost  latency"), "{printed}");
    let rows: Vec<&str> = printed
        .lines()
        .filter(|l| l.ends_with(" pps") || l.ends_with(" ms"))
        .collect();
    let frames_rows: Vec<&&str> = rows.iter().filter(|l| l.contains(" pps  ")).collect();
    assert_eq!(
        frames_rows.len(),
        2,
        "the stock client's and perfpeer test's: {printed}"
    );
    for row in &frames_rows[1..] {
        let (rx, lost, _) = frames_of(row);
        assert!(frames_in_two_seconds.contains(&rx) && lost <= 1, "{row}");
    }
    let frames_row = frames_rows[0];
    let (rx, lost, [avg, min, max, _]) = frames_of(frames_row);
    assert!(
        frames_in_two_seconds.contains(&rx) && lost <= 1,
        "{frames_row}"
    );
    // The first frame's burst reaches the listening socket before the flow has its own: it is
    // handed over, not lost (12 datagrams of 1470 bytes at 8 Mbit/s, 60 frames a second).
    let lost_datagrams: u64 = frames_row
        .split_whitespace()
        .find_map(|w| {
            let (lost, total) = w.split_once('/')?;
            (total.parse::<u64>().ok()? > 500).then(|| lost.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no Lost/Total: {frames_row}"));
    assert!(lost_datagrams < 10, "{frames_row}");
    assert!(
        0.0 <= min && min <= avg && avg <= max && avg < 100.0,
        "{frames_row}"
    );
    let f8 = printed
        .lines()
        .find(|l| l.contains("F8(f)-PDF"))
        .unwrap_or_else(|| panic!("no frame histogram: {printed}"));
    assert_eq!(histogram_of(f8).0, rx, "{f8}");
    let plain = printed
        .lines()
        .rfind(|l| l.contains("0.0000-"))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(!plain.contains("pps"), "no times, no latency: {plain}");

    // Ours to a stock server, which prints its frame columns (a stock 2.1.8 server crashes
    // after an isochronous --trip-times flow, its own client's too: one server per flow).
    let stock_port = free_port();
    let p = stock_port.to_string();
    let stock_server = Running::spawn(Path::new("iperf"), &["-s", "-u", "-e", "-p", &p]);
    std::thread::sleep(Duration::from_millis(300));
    let ours = our_iperf_client(
        stock_port,
        &["-u", "--isochronous=60:8m,1m", "--trip-times", "-t", "2"],
    );
    let t = text(&ours);
    assert!(ours.status.success(), "{t}");
    assert!(
        t.contains("Isochronous: 60.00 frames/sec mean=8.00 Mbit/s"),
        "{t}"
    );
    let stock_printed = stock_output(stock_server);
    assert!(
        stock_printed.contains("(isoch) (trip-times)"),
        "{stock_printed}"
    );
    let row = stock_printed
        .lines()
        .rfind(|l| l.contains(" pps "))
        .unwrap_or_else(|| panic!("no row: {stock_printed}"));
    let (rx, lost, [avg, ..]) = frames_of(row);
    assert!(frames_in_two_seconds.contains(&rx) && lost <= 1, "{row}");
    assert!(avg < 100.0, "{row}");
}

/// TCP `--trip-times` both ways and in both roles: a stock client's writes timed by our server
/// (and ours, stamped, timed by a stock client in `-R` and `--full-duplex`), our client's
/// writes timed by a stock server, and a stock server's by our `-R` client.
#[test]
fn tcp_write_delays_are_timed_both_ways() {
    if !have("iperf") {
        return;
    }
    let sane = |who: &str, row: &str, (count, size, [avg, min, max, _]): (u64, u64, [f64; 4])| {
        assert!(count > 0 && size >= 92, "{who}: {row}");
        assert!(
            0.0 <= min && min <= avg && avg <= max && max < 5_000.0,
            "{who}: {row}"
        );
    };
    let (mut our_server, port) = server(&perfpeer_bin(), &["iperf", "-s"]);
    // 8 Mbit/s of 1000-byte writes for 2 s: 2000 of them.
    let (out, ended) = client("127.0.0.1", port, &args("--trip-times -l 1000 -b 8m"));
    assert!(ended && out.status.success(), "{}", text(&out));
    for line in ["--trip-times -R", "--trip-times --full-duplex"] {
        let (out, ended) = client("127.0.0.1", port, &args(line));
        let t = text(&out);
        assert!(ended && out.status.success(), "{line}: {t}");
        let row = t
            .lines()
            .find(|l| l.contains(" ms (") && l.contains("0.0000-"))
            .unwrap_or_else(|| panic!("{line}: the client timed no writes: {t}"));
        sane(line, row, write_delays_of(row));
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = our_server[0].0.kill();
    let printed = text(&our_server.remove(0).wait(Duration::from_secs(5)));
    let rows: Vec<&str> = printed.lines().filter(|l| l.contains(" ms (")).collect();
    assert_eq!(
        rows.len(),
        2,
        "the paced stream and the full-duplex one: {printed}"
    );
    let paced = write_delays_of(rows[0]);
    assert!(
        (1900..=2100).contains(&paced.0) && paced.1 == 1000,
        "{}",
        rows[0]
    );
    sane("ours", rows[0], paced);
    sane("ours", rows[1], write_delays_of(rows[1]));

    // Our client against stock servers, one per test (to read each report).
    for (line, reverse) in [
        (
            &["--trip-times", "-l", "1000", "-b", "8m", "-t", "2"][..],
            false,
        ),
        (&["--trip-times", "-R", "-t", "2"][..], true),
    ] {
        let stock_port = free_port();
        let p = stock_port.to_string();
        let stock_server = Running::spawn(Path::new("iperf"), &["-s", "-e", "-p", &p]);
        assert!(wait_for(Duration::from_secs(5), || {
            std::net::TcpStream::connect(("127.0.0.1", stock_port)).is_ok()
        }));
        let out = our_iperf_client(stock_port, line);
        let t = text(&out);
        assert!(out.status.success(), "{line:?}: {t}");
        let stock_printed = stock_output(stock_server);
        assert!(stock_printed.contains("(trip-times)"), "{stock_printed}");
        if reverse {
            assert!(t.contains("Burst Latency"), "{t}");
            let row = t
                .lines()
                .find(|l| l.contains(" ms ("))
                .unwrap_or_else(|| panic!("our -R client timed no writes: {t}"));
            sane("our -R client", row, write_delays_of(row));
        } else {
            let row = stock_printed
                .lines()
                .find(|l| l.contains(" ms ("))
                .unwrap_or_else(|| panic!("stock timed no writes: {stock_printed}"));
            let timed = write_delays_of(row);
            assert!((1900..=2100).contains(&timed.0) && timed.1 == 1000, "{row}");
            sane("stock", row, timed);
        }
    }
}

/// Our client's `--full-duplex` (TCP, both ways on one connection, with `--trip-times` too)
/// and `--bounceback-congest` (a working load beside the bursts), against a stock server and
/// ours.
#[test]
fn our_full_duplex_and_congested_bounceback_clients() {
    if !have("iperf") {
        return;
    }
    let (_stock, stock_port) = stock();
    let (_ours, our_port) = ours();
    let rate_of = |row: &str| -> f64 {
        let w: Vec<&str> = row.split_whitespace().collect();
        let at = w
            .iter()
            .position(|x| x.ends_with("bits/sec"))
            .unwrap_or_else(|| panic!("no rate: {row}"));
        w[at - 1]
            .parse()
            .unwrap_or_else(|_| panic!("no rate: {row}"))
    };
    for (server, port) in [
        ("stock iperf -s", stock_port),
        ("perfpeer iperf -s", our_port),
    ] {
        // A stock 2.1.8 server now and then never starts its side of a full-duplex stream
        // (seen 1 run in 5 here: it reads ours and sends nothing): stock's gets a second try.
        let mut out = our_iperf_client(port, &["--full-duplex", "-t", "2"]);
        if !out.status.success() && server.starts_with("stock") {
            out = our_iperf_client(port, &["--full-duplex", "-t", "2"]);
        }
        let t = text(&out);
        assert!(out.status.success(), "{server}: {t}");
        let rows: Vec<&str> = t.lines().filter(|l| l.contains(" sec ")).collect();
        assert_eq!(rows.len(), 2, "{server}: a row each way: {t}");
        assert!(rows.iter().all(|r| rate_of(r) > 0.0), "{server}: {t}");
        let mut out = our_iperf_client(port, &["--full-duplex", "--trip-times", "-t", "2"]);
        if !out.status.success() && server.starts_with("stock") {
            out = our_iperf_client(port, &["--full-duplex", "--trip-times", "-t", "2"]);
        }
        let t = text(&out);
        assert!(out.status.success(), "{server}: {t}");
        let row = t
            .lines()
            .find(|l| l.contains(" ms ("))
            .unwrap_or_else(|| panic!("{server}: the server's writes untimed: {t}"));
        let (count, _, [avg, ..]) = write_delays_of(row);
        assert!(count > 10 && avg < 1000.0, "{server}: {row}");

        let p = port.to_string();
        let args = [
            "iperf",
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "--bounceback",
            "--bounceback-congest",
            "-t",
            "2",
        ];
        let run = || text(&Running::spawn(&perfpeer_bin(), &args).wait(Duration::from_secs(20)));
        let mut t = run();
        // The load is a full-duplex stream, which stock 2.1.8 sometimes never starts, and on a
        // loaded 2-core host its bounce-back answers can miss the client's read timeout
        // (EAGAIN): stock gets up to two more tries.
        let whole = |t: &str| t.contains(" down\n") && t.lines().any(|l| l.ends_with(" rps"));
        for _ in 0..2 {
            if !server.starts_with("stock") || whole(&t) {
                break;
            }
            t = run();
        }
        assert!(
            t.lines().any(|l| l.ends_with(" rps") && l.contains(" 20=")),
            "{server}: two bursts of ten beside the load: {t}"
        );
        let load = t
            .lines()
            .find(|l| l.starts_with("Working load: TCP both ways, 1 stream each way: "))
            .unwrap_or_else(|| panic!("{server}: no working load: {t}"));
        assert!(load.contains(" up, ") && load.ends_with(" down"), "{load}");
    }
}
