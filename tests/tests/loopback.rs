use perfpeer_tests::{Peer, f64_at, json_of, perfpeer_json, perfpeer_test, u64_at};

fn assert_iperf3_keys(v: &serde_json::Value) {
    for key in [
        "/start/connected/0/local_host",
        "/start/version",
        "/start/timestamp/timesecs",
        "/start/test_start/protocol",
        "/intervals/0/streams/0/bytes",
        "/intervals/0/sum/bits_per_second",
        "/end/sum_sent/bytes",
        "/end/sum_received/bytes",
        "/end/cpu_utilization_percent/host_total",
        "/end/cpu_utilization_percent/remote_total",
    ] {
        assert!(v.pointer(key).is_some(), "missing {key} in {v}");
    }
}

#[test]
fn tcp_both_ends_agree_and_json_has_iperf3_keys() {
    let peer = Peer::start(&[]);
    let v = perfpeer_json(&[&peer.control, "-t", "2"]);
    assert_iperf3_keys(&v);
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 0);
    // TCP: the receiver reads to EOF, so both ends count exactly the same bytes.
    assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"));
    assert_eq!(v["start"]["test_start"]["protocol"], "TCP");
    assert!(f64_at(&v, "/end/sum_sent/seconds") > 1.9);
    assert!(v["intervals"].as_array().unwrap().len() >= 2);
    assert!(
        v.pointer("/end/streams/0/sender/max_rtt").is_some(),
        "TCP_INFO figures: {v}"
    );
    assert_eq!(v["perfpeer"]["status"], "complete");
}

#[test]
fn udp_at_a_rate_reports_loss_and_jitter() {
    let peer = Peer::start(&[]);
    let v = perfpeer_json(&[&peer.control, "-u", "-b", "20M", "-t", "2"]);
    assert_iperf3_keys(&v);
    for key in [
        "/end/sum/jitter_ms",
        "/end/sum/lost_packets",
        "/end/sum/lost_percent",
        "/end/sum/packets",
    ] {
        assert!(v.pointer(key).is_some(), "missing {key}");
    }
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    let received = u64_at(&v, "/end/sum_received/bytes");
    assert!(received <= sent, "received {received} > sent {sent}");
    let rate = f64_at(&v, "/end/sum_sent/bits_per_second");
    // Never above the rate; below it only when the sender was starved of CPU for longer than
    // its catch-up can make good before the end (a loaded 2-core machine running other tests).
    assert!(
        (16e6..=21e6).contains(&rate),
        "paced rate {rate} is not 20 Mbit/s (+5 %, -20 %)"
    );
    // Received + lost = sent, datagram for datagram.
    let packets_sent = u64_at(&v, "/end/sum_sent/packets");
    let lost = u64_at(&v, "/end/sum_received/lost_packets");
    assert_eq!(received / 1448 + lost, packets_sent, "{v}");
}

#[test]
fn reverse_tcp_agrees() {
    let peer = Peer::start(&[]);
    let v = perfpeer_json(&[&peer.control, "-R", "-t", "2"]);
    assert_eq!(v["start"]["test_start"]["reverse"], 1);
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 0);
    assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"));
    // The server sent: its TCP_INFO shows up as the sender's figures.
    assert!(
        v.pointer("/end/streams/0/sender/retransmits").is_some(),
        "{v}"
    );
}

#[test]
fn bidir_reports_both_directions() {
    let peer = Peer::start(&[]);
    let v = perfpeer_json(&[&peer.control, "--bidir", "-t", "2", "-P", "2"]);
    for (sent, received) in [
        ("/end/sum_sent/bytes", "/end/sum_received/bytes"),
        (
            "/end/sum_sent_bidir_reverse/bytes",
            "/end/sum_received_bidir_reverse/bytes",
        ),
    ] {
        let s = u64_at(&v, sent);
        assert!(s > 0, "{sent}");
        assert_eq!(s, u64_at(&v, received), "{sent} vs {received}");
    }
    assert_eq!(v["end"]["streams"].as_array().unwrap().len(), 4);
}

#[test]
fn four_parallel_streams_sum_up() {
    let peer = Peer::start(&[]);
    let v = perfpeer_json(&[&peer.control, "-P", "4", "-t", "2"]);
    let streams = v["end"]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4);
    let per_stream: u64 = streams
        .iter()
        .map(|s| s["sender"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(per_stream, u64_at(&v, "/end/sum_sent/bytes"));
    assert_eq!(
        u64_at(&v, "/end/sum_sent/bytes"),
        u64_at(&v, "/end/sum_received/bytes")
    );
}

#[test]
fn byte_count_is_exact_in_both_directions() {
    let peer = Peer::start(&[]);
    for extra in [&[][..], &["-R"][..], &["-u", "-b", "0", "-l", "1000"][..]] {
        let mut args = vec![peer.control.as_str(), "-n", "3M"];
        args.extend_from_slice(extra);
        let v = perfpeer_json(&args);
        let sent = u64_at(&v, "/end/sum_sent/bytes");
        if extra.contains(&"-u") {
            // Whole datagrams: the budget is spent in 1000-byte steps.
            assert_eq!(sent, 3 * 1024 * 1024 / 1000 * 1000 + 1000, "{extra:?}");
        } else {
            assert_eq!(sent, 3 * 1024 * 1024, "{extra:?}");
            assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"));
        }
    }
}

#[test]
fn json_stream_writes_one_event_per_line() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "2", "--json-stream"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line is not JSON ({e}): {l}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(kinds.last(), Some(&"end"));
    assert!(
        kinds.iter().filter(|k| **k == "interval").count() >= 2,
        "{kinds:?}"
    );
}

#[test]
fn text_output_reads_like_iperf3() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with("Connecting to host 127.0.0.1, port "),
        "{text}"
    );
    assert!(
        text.contains("[ ID] Interval           Transfer     Bitrate"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.ends_with("sender"))
            && text.lines().any(|l| l.ends_with("receiver")),
        "{text}"
    );
    assert!(text.contains("CPU Utilization: local/sender"), "{text}");
}

#[test]
fn two_tests_at_once_on_one_peer_both_finish() {
    let peer = Peer::start(&[]);
    let control = peer.control.clone();
    let other =
        std::thread::spawn(move || perfpeer_test(&[&control, "-u", "-b", "5M", "-t", "2", "-J"]));
    let first = perfpeer_json(&[&peer.control, "-t", "2"]);
    let second = other.join().unwrap();
    let second = json_of(&second, &["second"]);
    assert!(u64_at(&first, "/end/sum_received/bytes") > 0);
    assert!(u64_at(&second, "/end/sum_received/bytes") > 0);
}

/// The memfd descriptors `perfpeer-payload` a process holds.
fn payload_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter(|target| target.to_string_lossy().contains("memfd:perfpeer-payload"))
                .count()
        })
        .unwrap_or(0)
}

/// A lone TCP sending stream sends its payload with sendfile from a memory file (Linux): the far
/// end's sender (`-R`) holds one such file while it sends and none after; with two streams
/// (`-R -P 2`, where sendfile was slower) the senders write their buffers.
#[test]
fn a_lone_tcp_sender_sends_from_a_memory_file_and_lets_it_go() {
    let peer = Peer::start(&[]);
    for (streams, files) in [("1", 1), ("2", 0)] {
        let control = peer.control.clone();
        let streams_arg = streams.to_string();
        let test = std::thread::spawn(move || {
            perfpeer_test(&[&control, "-t", "2", "-R", "-P", &streams_arg])
        });
        // Seen at the peak: the most payload files the sending end held while it ran.
        let mut most = 0;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        while std::time::Instant::now() < until {
            most = most.max(payload_files(peer.pid()));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = test.join().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(most, files, "-P {streams}");
        assert!(
            perfpeer_tests::wait_for(std::time::Duration::from_secs(5), || {
                payload_files(peer.pid()) == 0
            }),
            "payload files left open after the test"
        );
    }
}

/// What a sendfile sender puts on the wire is its buffer, whole and in order, however the
/// kernel cut the sends: after iperf 2's 60-byte test header, every 128 KiB block our iperf 2
/// client sends to a plain socket is the same.
#[test]
fn a_sendfile_sender_sends_its_buffer_in_order() {
    use std::io::Read;
    const BLOCK: usize = 128 * 1024;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut header = [0u8; 60];
        s.read_exact(&mut header).unwrap();
        let (mut first, mut block) = (vec![0u8; BLOCK], vec![0u8; BLOCK]);
        s.read_exact(&mut first).unwrap();
        let (mut blocks, mut differing) = (1u64, 0u64);
        while s.read_exact(&mut block).is_ok() {
            blocks += 1;
            differing += u64::from(block != first);
        }
        (blocks, differing)
    });
    let out = perfpeer_tests::Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &["iperf", "-c", "127.0.0.1", "-p", &port, "-t", "1"],
    )
    .wait(std::time::Duration::from_secs(20));
    assert!(out.status.success(), "{out:?}");
    let (blocks, differing) = reader.join().unwrap();
    assert!(blocks > 100, "{blocks} blocks");
    assert_eq!(differing, 0, "of {blocks} blocks");
}

/// Each thread of process `pid` as its name and scheduling policy (field 41 of its stat line:
/// 0 the default class, 3 SCHED_BATCH).
fn thread_policies(pid: u32) -> Vec<(String, u32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // The name is in parentheses and may hold spaces; the fields after it start at 3.
            let (name_part, rest) = stat.rsplit_once(')')?;
            let name = name_part.split_once('(')?.1.to_string();
            let policy = rest.split_whitespace().nth(41 - 3)?.parse().ok()?;
            Some((name, policy))
        })
        .collect()
}

/// An unpaced TCP stream's threads, at both ends, run in the batch scheduling class (they take
/// turns by time slice instead of preempting each other at every wake-up); the rest of each
/// process keeps the default class, and so do a paced stream's threads and request/response
/// threads, whose wake-ups are their timing.
#[test]
fn unpaced_tcp_stream_threads_take_turns_and_the_rest_do_not() {
    let peer = Peer::start(&[]);
    let cases: [(&[&str], u32); 3] = [
        (&["-P", "2"], 3),
        (&["-P", "2", "-b", "50M"], 0),
        (&["--rr"], 0),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["test", peer.control.as_str(), "-t", "2"];
        args.extend_from_slice(extra);
        let client = perfpeer_tests::Running::spawn(&perfpeer_tests::perfpeer_bin(), &args);
        let client_pid = client.0.id();
        // Every (process, thread name, policy) seen while the test ran.
        let mut seen = std::collections::BTreeSet::new();
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        while std::time::Instant::now() < until {
            for (end, pid) in [("client", client_pid), ("server", peer.pid())] {
                for (name, policy) in thread_policies(pid) {
                    seen.insert((end, name, policy));
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = client.wait(std::time::Duration::from_secs(20));
        assert!(out.status.success(), "{extra:?}: {out:?}");
        let data = |(_, name, _): &&(&str, String, u32)| name.starts_with("pp-");
        let data_threads: Vec<_> = seen.iter().filter(data).collect();
        for end in ["client", "server"] {
            assert!(
                data_threads.iter().any(|(e, _, _)| *e == end),
                "{extra:?}: no data thread seen at the {end}: {seen:?}"
            );
        }
        assert!(
            data_threads.iter().all(|(_, _, p)| *p == expected),
            "{extra:?}: data threads should have policy {expected}: {seen:?}"
        );
        assert!(
            seen.iter()
                .filter(|t| !data(t))
                .all(|(_, _, policy)| *policy == 0),
            "{extra:?}: only data threads change class: {seen:?}"
        );
    }
}

/// `--bounceback`: bursts of round trips a period apart, each answer held as asked; the round
/// trips carry the hold, the requests a second at their mean follow from it, and what cannot
/// bounce is a usage error.
#[test]
fn bounce_back_runs_bursts_and_holds_each_answer() {
    let peer = Peer::start(&["--open"]);
    let v = perfpeer_json(&[
        &peer.control,
        "-t",
        "2",
        "--bounceback=5",
        "--bounceback-hold",
        "20",
        "--bounceback-period",
        "0.5",
    ]);
    let rr = v.pointer("/perfpeer/rr").expect("request/response figures");
    // A burst at 0, 0.5, 1 and 1.5 s (and perhaps one as the test ends), 5 round trips each.
    let n = rr["transactions"].as_u64().unwrap();
    assert!((20..=25).contains(&n), "{rr}");
    assert_eq!(rr["request_len"], 100, "{rr}");
    let mean_us = f64_at(rr, "/rtt/mean_us");
    assert!((20_000.0..40_000.0).contains(&mean_us), "held 20 ms: {rr}");
    let rps = f64_at(rr, "/requests_per_second_at_mean");
    assert!((rps - 1e6 / mean_us).abs() < 1e-6, "{rr}");
    assert_eq!(u64_at(rr, "/bursts/count"), 5);
    // Unheld, on loopback: round trips well under a millisecond at the median.
    let out = perfpeer_test(&[&peer.control, "-t", "1", "--bounceback"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Bounce-back: bursts of 10 every 1.000 s"),
        "{text}"
    );
    for bad in [
        &["--bounceback", "-u"][..],
        &["--bounceback", "-b", "1M"],
        &["--bounceback=0"],
        &["--bounceback", "--bounceback-hold", "2000"],
        &["--bounceback", "--bounceback-period", "0"],
        &["--bounceback-hold", "5"],
    ] {
        let mut args = vec![peer.control.as_str(), "-t", "1"];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

/// `--bounceback-congest`: a working load of TCP streams to the same peer beside the bursts,
/// for the same time; its rates are kept with the round trips (text, `-J`), one way or both,
/// and a load that cannot run beside bursts is a usage error.
#[test]
fn bounce_back_with_a_working_load_reports_the_load_beside_it() {
    let peer = Peer::start(&["--open"]);
    let v = perfpeer_json(&[
        &peer.control,
        "-t",
        "2",
        "--bounceback=5",
        "--bounceback-period",
        "0.25",
        "--bounceback-congest=bidir,2",
    ]);
    let load = v
        .pointer("/perfpeer/working_load")
        .expect("the load's figures");
    assert_eq!(load["load"], "bidir,2", "{load}");
    assert!(
        !load["result_id"].as_str().unwrap_or("").is_empty(),
        "{load}"
    );
    assert!(load.get("error").is_none(), "{load}");
    // Loopback carries gigabits both ways; the bursts still ran, 5 round trips 4 times a second.
    for way in ["/up_bits_per_second", "/down_bits_per_second"] {
        assert!(f64_at(load, way) > 1e8, "{way}: {load}");
    }
    let n = u64_at(&v, "/perfpeer/rr/transactions");
    assert!((35..=50).contains(&n), "{n} round trips");
    assert_eq!(
        v.pointer("/perfpeer/spec/rr/bursts/congest"),
        Some(&"bidir,2".into())
    );
    // One way only: only that way's rate, in words too.
    let out = perfpeer_test(&[
        &peer.control,
        "-t",
        "1",
        "--bounceback",
        "--bounceback-congest=up",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("Working load: TCP up, 1 stream: "))
        .unwrap_or_else(|| panic!("no working-load line: {text}"));
    assert!(line.ends_with(" up") && !line.contains("down"), "{line}");
    for bad in [
        &["--bounceback", "--bounceback-congest=sideways"][..],
        &["--bounceback", "--bounceback-congest=up,9"],
        &["--bounceback", "--bounceback-congest=down,0"],
        &["--bounceback-congest"],
        &["--bounceback", "--bounceback-congest", "-n", "1M"],
    ] {
        let mut args = vec![peer.control.as_str()];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

/// Without a radio on the path (loopback, and no Wi-Fi in this host's kernel) a test prints
/// no link lines and `-J` has no `wifi`; the Wi-Fi flags are checked as usage (exit 2), and
/// `--no-wifi` changes nothing else.
#[test]
fn no_radio_no_link_lines_and_wifi_flags_are_checked() {
    let peer = Peer::start(&["--wifi-iface", "wlan9"]);
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        !text.contains("wifi") && !text.contains("Wi-Fi"),
        "no radio here: {text}"
    );
    let v = perfpeer_json(&[&peer.control, "-t", "1", "--no-wifi"]);
    assert!(v["end"].get("wifi").is_none() && v["intervals"][0].get("wifi").is_none());
    for bad in [
        &["--wifi-station", "02:00:00:00:01"][..],
        &["--wifi-station", "zz:00:00:00:01:00"],
        &["--wifi-iface", "a/b"],
        &["--no-wifi", "--wifi-iface", "wlan0"],
    ] {
        let mut args = vec![peer.control.as_str(), "-t", "1"];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}
