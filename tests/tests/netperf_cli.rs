//! `perfpeer netperf` against a live `perfpeer serve` on loopback: netperf's table layout, and
//! figures that are the ones the far end recorded for the same run (its stored result, read back
//! with `perfpeer results`), never a comparison between two timed runs on a busy machine.

use std::process::{Command, Output};

use std::time::Duration;

use perfpeer_tests::{Peer, Running, f64_at, perfpeer_bin};

fn netperf(args: &[&str]) -> Output {
    Command::new(perfpeer_bin())
        .arg("netperf")
        .args(args)
        .output()
        .expect("run perfpeer netperf")
}

/// Stdout of a run that must have succeeded.
fn stdout_of(out: &Output, args: &[&str]) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "perfpeer netperf {args:?} failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The whitespace-separated numbers of a data line.
fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .map(|f| {
            f.parse()
                .unwrap_or_else(|_| panic!("'{f}' in {line:?} is not a number"))
        })
        .collect()
}

/// The far end's stored record of the one test this peer served, as `perfpeer results show`
/// renders it in `format` (netperf, json, ...). The far end keeps the test before it sends its
/// final report, so the record is complete once the client has printed.
fn stored(peer: &Peer, format: &str) -> String {
    let store = peer.dir.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Running::spawn(&perfpeer_bin(), args).wait(Duration::from_secs(20));
        assert!(out.status.success(), "perfpeer {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = run(&["results", "--data-dir", store, "list"]);
    let ids: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 1, "one stored test: {list}");
    assert!(list.contains("complete"), "kept as complete: {list}");
    run(&[
        "results",
        "--data-dir",
        store,
        "show",
        ids[0],
        "--format",
        format,
    ])
}

/// The figures line of a netperf table (the first line after the blank one).
fn figures(text: &str) -> Vec<f64> {
    let mut lines = text.lines().skip_while(|l| !l.trim().is_empty());
    numbers(
        lines
            .nth(1)
            .unwrap_or_else(|| panic!("no figures in {text}")),
    )
}

#[test]
fn tcp_stream_with_cpu_prints_netperfs_table() {
    let peer = Peer::start(&[]);
    let args = [
        "-H",
        &peer.control,
        "-t",
        "TCP_STREAM",
        "-l",
        "2",
        "-c",
        "-C",
        "--",
        "-m",
        "16K",
    ];
    let text = stdout_of(&netperf(&args), &args);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert!(
        lines[0].starts_with("MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 (127.0.0.1) port 0 AF_INET"),
        "{text}"
    );
    assert_eq!(
        lines[1..6].join("\n"),
        "Recv   Send    Send                          Utilization       Service Demand\n\
         Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n\
         Size   Size    Size     Time     Throughput  local    remote   local   remote\n\
         bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n"
    );
    let f = numbers(lines[6]);
    assert_eq!(f.len(), 9, "{text}");
    let [rsr, lss, msg, elapsed, mbits, lcpu, rcpu, lsd, rsd] = f[..] else {
        unreachable!()
    };
    assert!(rsr > 0.0 && lss > 0.0, "socket sizes: {text}");
    assert_eq!(msg, 16384.0);
    assert!((1.9..2.5).contains(&elapsed), "{text}");
    for v in [mbits, lcpu, rcpu, lsd, rsd] {
        assert!(v > 0.0, "{text}");
    }
    assert!(lcpu <= 100.0 && rcpu <= 100.0, "{text}");
    // Service demand is netperf's CPU% × 10^4 / (KB/s) × CPUs, and KB/s = Mbit/s × 10^6 / 8 / 1024,
    // so SD × Mbit/s / CPU% = 81.92 × CPUs (the CPU window runs a little past the data's).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let k = lsd * mbits / lcpu / (81.92 * cpus);
    assert!(
        (0.95..1.15).contains(&k),
        "local SD {lsd} off by {k}: {text}"
    );
    // The far end recorded the same run: its table carries the same figures (CPU columns in
    // the same local/remote order), and its byte count gives the throughput.
    let far = figures(&stored(&peer, "netperf"));
    assert_eq!(far[3..], f[3..], "stored {far:?} vs printed {f:?}");
    let v: serde_json::Value = serde_json::from_str(&stored(&peer, "json")).unwrap();
    let json_mbits = f64_at(&v, "/end/sum_received/bits_per_second") / 1e6;
    assert!(
        (json_mbits / mbits - 1.0).abs() < 0.02,
        "netperf {mbits} vs stored {json_mbits} Mbit/s"
    );
}

#[test]
fn udp_rr_prints_transactions_per_second() {
    let peer = Peer::start(&[]);
    let args = [
        "-H",
        &peer.control,
        "-t",
        "UDP_RR",
        "-l",
        "2",
        "--",
        "-r",
        "1,1",
    ];
    let text = stdout_of(&netperf(&args), &args);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(
            "MIGRATED UDP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1"
        ),
        "{text}"
    );
    let f = numbers(lines[6]);
    assert_eq!(f.len(), 6, "{text}");
    assert_eq!(
        (f[2], f[3]),
        (1.0, 1.0),
        "request and response sizes: {text}"
    );
    assert!(f[5] > 100.0, "transactions per second: {text}");
    let far = figures(&stored(&peer, "netperf"));
    assert_eq!(far[5], f[5], "stored {far:?} vs printed {f:?}");
}

#[test]
fn tcp_rr_prints_transactions_per_second() {
    let peer = Peer::start(&[]);
    let args = [
        "-H",
        &peer.control,
        "-t",
        "TCP_RR",
        "-l",
        "2",
        "--",
        "-r",
        "32,64",
    ];
    let text = stdout_of(&netperf(&args), &args);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    assert!(
        lines[0].starts_with(
            "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1"
        ),
        "{text}"
    );
    assert_eq!(
        lines[1..6].join("\n"),
        "Local /Remote\n\
         Socket Size   Request  Resp.   Elapsed  Trans.\n\
         Send   Recv   Size     Size    Time     Rate         \n\
         bytes  Bytes  bytes    bytes   secs.    per sec   \n"
    );
    let f = numbers(lines[6]);
    assert_eq!(f.len(), 6, "{text}");
    assert_eq!(
        (f[2], f[3]),
        (32.0, 64.0),
        "request and response sizes: {text}"
    );
    assert!((1.9..2.5).contains(&f[4]), "{text}");
    let tps = f[5];
    assert!(tps > 100.0, "{text}");
    let remote = numbers(lines[7]);
    assert!(
        remote.len() == 2 && remote.iter().all(|&s| s > 0.0),
        "{text}"
    );
    let far = figures(&stored(&peer, "netperf"));
    assert_eq!(
        (far[4], far[5]),
        (f[4], tps),
        "stored {far:?} vs printed {f:?}"
    );
}

#[test]
fn bad_flags_are_refused_before_connecting() {
    for (args, needle) in [
        (
            vec!["-H", "127.0.0.1:1", "-t", "UDP_RR", "--", "-m", "64"],
            "-m applies to stream tests",
        ),
        (
            vec!["-H", "127.0.0.1:1", "-l", "-1.5"],
            "negative -l is a count",
        ),
        (
            vec!["-H", "127.0.0.1:1", "--", "-k", "THROUGHPUT,NO_SUCH"],
            "unknown output selector 'NO_SUCH'",
        ),
        (vec!["-H", "127.0.0.1:1", "-f", "x"], "not a netperf unit"),
        (
            vec!["-H", "127.0.0.1:1", "--", "-s", "64K", "-S", "1M"],
            "one socket buffer size",
        ),
    ] {
        let out = netperf(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `-l -N` counts bytes (stream) or transactions (_RR); `-v 0` prints the headline alone; the
/// output selectors (`-k`, `-o`, `-O`, from a list or a file) print the same figures.
#[test]
fn counts_terse_output_and_selectors() {
    let peer = Peer::start(&[]);
    // 50 MB exactly, as the far end counted them; -v 0 -P 0: one number, in MBytes/s.
    let args = [
        "-H",
        &peer.control,
        "-l",
        "-50000000",
        "-f",
        "M",
        "-P",
        "0",
        "-v",
        "0",
    ];
    let text = stdout_of(&netperf(&args), &args);
    assert_eq!(text.lines().count(), 1, "{text}");
    let rate: f64 = text.trim().parse().unwrap_or_else(|_| panic!("{text}"));
    assert!(rate > 1.0, "{text}");
    let far: serde_json::Value = serde_json::from_str(&stored(&peer, "json")).unwrap();
    assert_eq!(
        f64_at(&far, "/end/sum_received/bytes"),
        50_000_000.0,
        "{far}"
    );
    // -k: NAME=value lines for an _RR test of 2000 transactions.
    let args = [
        "-H",
        &peer.control,
        "-t",
        "TCP_RR",
        "-l",
        "-2000",
        "-P",
        "0",
        "--",
        "-k",
        "THROUGHPUT,THROUGHPUT_UNITS,TRANSACTION_RATE,RT_LATENCY,P99_LATENCY,REQUEST_SIZE",
    ];
    let text = stdout_of(&netperf(&args), &args);
    let kv: std::collections::HashMap<&str, &str> =
        text.lines().filter_map(|l| l.split_once('=')).collect();
    assert_eq!(kv.len(), 6, "{text}");
    assert_eq!(kv["THROUGHPUT_UNITS"], "Trans/s", "{text}");
    assert_eq!(kv["THROUGHPUT"], kv["TRANSACTION_RATE"], "{text}");
    assert_eq!(kv["REQUEST_SIZE"], "1", "{text}");
    let tps: f64 = kv["THROUGHPUT"].parse().unwrap();
    let rt: f64 = kv["RT_LATENCY"].parse().unwrap();
    assert!((rt * tps / 1e6 - 1.0).abs() < 0.01, "{text}");
    assert!(kv["P99_LATENCY"].parse::<f64>().unwrap() > 0.0, "{text}");
    // -o from a file of selectors, with titles: two CSV lines.
    let list = peer.dir.join("selectors");
    std::fs::write(&list, "THROUGHPUT\nTHROUGHPUT_UNITS,ELAPSED_TIME\n").unwrap();
    let args = [
        "-H",
        &peer.control,
        "-l",
        "1",
        "-f",
        "g",
        "--",
        "-o",
        list.to_str().unwrap(),
    ];
    let text = stdout_of(&netperf(&args), &args);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("MIGRATED TCP STREAM TEST"), "{text}");
    assert_eq!(
        lines[1], "Throughput,Throughput Units,Elapsed Time (sec)",
        "{text}"
    );
    let values: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(values[1], "10^9bits/s", "{text}");
    assert!(values[0].parse::<f64>().unwrap() > 0.0, "{text}");
}

/// Whether a TCP connection from local port `port` to `peer_port` is in /proc/net/tcp now.
fn connection_from_port(port: u16, peer_port: u16) -> bool {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    text.lines().skip(1).any(|line| {
        let mut fields = line.split_whitespace().skip(1);
        let port_of = |f: Option<&str>| {
            f.and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok())
        };
        port_of(fields.next()) == Some(port) && port_of(fields.next()) == Some(peer_port)
    })
}

#[test]
fn test_option_p_binds_the_local_data_port() {
    let peer = Peer::start(&[]);
    let port = perfpeer_tests::free_port();
    let p = port.to_string();
    let run = Running::spawn(
        &perfpeer_bin(),
        &[
            "netperf",
            "-H",
            &peer.control,
            "-t",
            "TCP_STREAM",
            "-l",
            "3",
            "--",
            "-P",
            &p,
        ],
    );
    let seen = perfpeer_tests::wait_for(Duration::from_secs(3), || {
        connection_from_port(port, peer.data_port)
    });
    let out = run.wait(Duration::from_secs(20));
    stdout_of(&out, &["-P", &p]);
    assert!(seen, "no data connection from local port {port}");
    // A remote data port cannot be chosen at a perfpeer peer: said, exit 2.
    let remote = netperf(&[
        "-H",
        &peer.control,
        "-t",
        "TCP_STREAM",
        "--",
        "-P",
        ",40000",
    ]);
    assert_eq!(remote.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&remote.stderr).contains("names its own data port"),
        "{}",
        String::from_utf8_lossy(&remote.stderr)
    );
}
