//! Multicast UDP on a switched LAN of network namespaces: one sender, receivers that joined the
//! group (`perfpeer iperf -s -u -B GROUP%lan0`, and stock `iperf -s` in the same role) each
//! count the stream, a host that did not join gets nothing, and no receiver sends anything
//! back. Stock iperf 2.1.8 and `perfpeer iperf -c` take turns as the sender. A
//! source-specific receiver (`-H`) takes its source's stream and not another sender's.
//! perfpeer's own group test (`perfpeer test --multicast GROUP R1 R2`, and `--from`, the
//! browser's `run`): perfpeer receivers each report on their own row, IPv4 and IPv6, and count
//! only the asking sender's flow while another host sends to the same group and port.

use std::path::Path;
use std::time::Duration;

use perfpeer_tests::netns::{Bridged, LAN_DEV, available};
use perfpeer_tests::{Running, have, perfpeer_bin, skip};

const GROUP: &str = "239.255.1.1";
const PORT: &str = "5101";

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `PROGRAM ARGS` in host `k` of `lan`.
fn spawn_in(lan: &Bridged, k: usize, program: &Path, args: &[&str]) -> Running {
    let mut all: Vec<String> = lan.prefix(k)[1..].to_vec();
    all.push(program.display().to_string());
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    Running::spawn(Path::new("ip"), &all)
}

/// Packets host `k` has sent on its LAN interface.
fn tx_packets(lan: &Bridged, k: usize) -> u64 {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &lan.hosts[k], "cat"])
        .arg(format!("/sys/class/net/{LAN_DEV}/statistics/tx_packets"))
        .output()
        .expect("cat");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(u64::MAX)
}

/// The bytes of the first result row (`[  1] 0.0000-2.0 sec  488 KBytes …`) a server printed,
/// and its `lost/total`.
fn received(output: &str) -> Option<(f64, String)> {
    let row = output
        .lines()
        .find(|l| l.starts_with('[') && l.contains(" sec ") && l.contains(" ms "))?;
    let words: Vec<&str> = row.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "sec")?;
    let amount: f64 = words.get(at + 1)?.parse().ok()?;
    let unit = words.get(at + 2)?;
    let kib = match *unit {
        "Bytes" => amount / 1024.0,
        "KBytes" => amount,
        "MBytes" => amount * 1024.0,
        _ => return None,
    };
    let loss = words.iter().find(|w| {
        w.split_once('/')
            .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok())
    })?;
    Some((kib, loss.to_string()))
}

#[test]
fn group_receivers_each_count_the_stream_and_a_host_that_did_not_join_gets_nothing() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    if !have("iperf") {
        return;
    }
    // Host 0 sends; 1 and 2 join (ours, then stock in host 2 for the second round); 3 serves
    // unicast only.
    let lan = Bridged::new("mc", 4).expect("LAN");
    let ours = perfpeer_bin();
    let bind = format!("{GROUP}%{LAN_DEV}");
    let senders: [(&str, Vec<&str>); 2] = [
        ("stock iperf -c", vec!["iperf"]),
        ("perfpeer iperf -c", vec![ours.to_str().unwrap(), "iperf"]),
    ];
    for (round, (who, program)) in senders.iter().enumerate() {
        let receiver_2: (&Path, Vec<&str>) = if round == 0 {
            (
                ours.as_path(),
                vec!["iperf", "-s", "-u", "-B", &bind, "-p", PORT],
            )
        } else {
            (
                Path::new("iperf"),
                vec!["-s", "-u", "-B", &bind, "-p", PORT],
            )
        };
        let r1 = spawn_in(
            &lan,
            1,
            &ours,
            &["iperf", "-s", "-u", "-B", &bind, "-p", PORT],
        );
        let r2 = spawn_in(&lan, 2, receiver_2.0, &receiver_2.1);
        let bystander = spawn_in(&lan, 3, &ours, &["iperf", "-s", "-p", PORT]);
        std::thread::sleep(Duration::from_millis(1500));
        let sent_before = [1, 2, 3].map(|k| tx_packets(&lan, k));
        let mut args: Vec<&str> = program[1..].to_vec();
        args.extend([
            "-c", GROUP, "-u", "-T", "1", "-b", "2M", "-t", "2", "-p", PORT,
        ]);
        let sender = spawn_in(&lan, 0, Path::new(program[0]), &args);
        let sent = sender.wait(Duration::from_secs(20));
        assert!(sent.status.success(), "{who}: {}", text(&sent));
        std::thread::sleep(Duration::from_millis(1500));
        let sent_after = [1, 2, 3].map(|k| tx_packets(&lan, k));
        let outputs: Vec<String> = [r1, r2, bystander]
            .into_iter()
            .map(|r| text(&r.wait(Duration::from_millis(500))))
            .collect();
        // 2 Mbit/s for 2 s is 488 KiB.
        for (k, out) in outputs[..2].iter().enumerate() {
            let (kib, loss) = received(out)
                .unwrap_or_else(|| panic!("{who}: receiver {} printed no result: {out}", k + 1));
            assert!(
                (400.0..600.0).contains(&kib),
                "{who}: receiver {}: {out}",
                k + 1
            );
            assert!(
                loss.starts_with("0/"),
                "{who}: receiver {} lost some: {out}",
                k + 1
            );
        }
        assert!(
            received(&outputs[2]).is_none(),
            "{who}: a host that did not join got the stream: {}",
            outputs[2]
        );
        // Our receivers answer nothing: no packet left them during the test (their IGMP
        // reports went out when they joined, before it). A stock receiver rejoins the group
        // when a flow ends (IGMP reports of its own), so it is not counted.
        for (i, (before, after)) in sent_before.iter().zip(sent_after).enumerate() {
            if i == 1 && round == 1 {
                continue;
            }
            assert!(
                after == *before,
                "{who}: host {} sent {} packets during the test",
                i + 1,
                after - before
            );
        }
        if round == 0 {
            assert!(
                outputs[0].contains(&format!("Joining multicast group {GROUP} on {LAN_DEV}")),
                "{}",
                outputs[0]
            );
        }
    }
}

#[test]
fn a_source_specific_receiver_takes_its_source_only() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    if !have("iperf") {
        return;
    }
    // Host 1 joins (S,G) with S = host 0; hosts 0 and 2 both send to the group.
    let lan = Bridged::new("ssm", 3).expect("LAN");
    source_specific(&lan, "232.1.1.1", &Bridged::addr(0), &[]);
}

/// IPv6 source-specific multicast (MLDv2 (S,G), `-H` with an IPv6 group), as above.
#[test]
fn an_ipv6_source_specific_receiver_takes_its_source_only() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    if !have("iperf") {
        return;
    }
    let lan = Bridged::with_ipv6("ssm6", 3).expect("LAN");
    source_specific(&lan, "ff3e::8000:1", &Bridged::addr6(0), &["-V"]);
}

/// Host 1 runs our receiver joined to (`source`, `group`); hosts 0 (the source) and 2 send to
/// the group with stock iperf (`family`: `-V` for IPv6): only host 0's stream is received.
fn source_specific(lan: &Bridged, group: &str, source: &str, family: &[&str]) {
    let bind = format!("{group}%{LAN_DEV}");
    let mut args = vec!["iperf", "-s", "-u", "-B", &bind, "-H", source, "-p", PORT];
    args.extend_from_slice(family);
    let receiver = spawn_in(lan, 1, &perfpeer_bin(), &args);
    std::thread::sleep(Duration::from_millis(1500));
    let send = |k: usize| {
        let mut args = vec![
            "-c", group, "-u", "-T", "1", "-b", "1M", "-t", "2", "-p", PORT,
        ];
        args.extend_from_slice(family);
        spawn_in(lan, k, Path::new("iperf"), &args)
    };
    let (wanted, other) = (send(0), send(2));
    for (who, sender) in [("host 0", wanted), ("host 2", other)] {
        let out = sender.wait(Duration::from_secs(20));
        assert!(out.status.success(), "{who}: {}", text(&out));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let out = text(&receiver.wait(Duration::from_millis(500)));
    assert!(
        out.contains(&format!(
            "Joining multicast (S,G)={source},{group} on {LAN_DEV}"
        )),
        "{out}"
    );
    let from: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" connected with "))
        .collect();
    assert_eq!(from.len(), 1, "one flow, from the source joined: {out}");
    assert!(
        from[0].contains(&format!("connected with {source} ")),
        "{out}"
    );
    let (kib, loss) = received(&out).unwrap_or_else(|| panic!("no result: {out}"));
    assert!(
        (200.0..300.0).contains(&kib) && loss.starts_with("0/"),
        "{out}"
    );
}

/// perfpeer's own multicast test: `perfpeer test --multicast GROUP R1 R2` sends one stream to
/// the group; R1 and R2, perfpeer peers asked over their control connections, join it and
/// each report what they received, on their own rows at the sender. Another host sends its
/// own stream to the same group and port all the while: no receiver counts a datagram of it
/// (each takes the asking sender's flow only), with an any-source join and a source-specific
/// one. A receiver that cannot be reached is a row with its reason, and the rest still report.
#[test]
fn perfpeer_receivers_report_a_group_test_each_on_its_row() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    let lan = Bridged::new("mcp", 4).expect("LAN");
    group_test_round_trip(
        &lan,
        GROUP,
        &[Bridged::addr(1), Bridged::addr(2)],
        &Bridged::addr(3),
    );
}

/// The same over IPv6 (MLD joins on the interface that faces the sender, hop limit 1).
#[test]
fn perfpeer_receivers_report_an_ipv6_group_test() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    let lan = Bridged::with_ipv6("mcp6", 4).expect("LAN");
    let bracket = |k| format!("[{}]", Bridged::addr6(k));
    group_test_round_trip(&lan, "ff05::1:3", &[bracket(1), bracket(2)], &bracket(3));
}

/// Hosts 1 and 2 serve (their addresses `receivers`), host 0 runs the group test, host 3
/// (`stray`, serving nothing) sends to the group's port during it.
fn group_test_round_trip(lan: &Bridged, group: &str, receivers: &[String], stray: &str) {
    let sender = if group.contains(':') {
        format!("[{}]", Bridged::addr6(0))
    } else {
        Bridged::addr(0)
    };
    let ours = perfpeer_bin();
    let _peers: Vec<perfpeer_tests::Peer> = receivers
        .iter()
        .enumerate()
        .map(|(i, addr)| {
            perfpeer_tests::Peer::start_with(
                lan.prefix(i + 1),
                &format!("{addr}:5210"),
                "5211",
                &["--open"],
            )
        })
        .collect();
    let family: &[&str] = if group.contains(':') { &["-V"] } else { &[] };
    for ssm in [false, true] {
        let mut stray_args = vec![
            "iperf", "-c", group, "-u", "-p", "5212", "-b", "1M", "-t", "4",
        ];
        stray_args.extend_from_slice(family);
        let stray_sender = spawn_in(lan, 3, &ours, &stray_args);
        std::thread::sleep(Duration::from_millis(300));
        let mut args: Vec<&str> = receivers.iter().map(String::as_str).collect();
        args.extend([
            "--multicast",
            group,
            "-u",
            "-b",
            "2M",
            "-t",
            "2",
            "-J",
            "--no-store",
        ]);
        if ssm {
            args.push("--ssm");
        }
        let out = perfpeer_tests::perfpeer_test_with(lan.prefix(0), &args);
        let v = perfpeer_tests::json_of(&out, &args);
        assert!(out.status.success(), "{args:?}: {v}");
        let sent = perfpeer_tests::u64_at(&v, "/end/sum_sent/packets");
        // 2 Mbit/s of 1448-byte datagrams for 2 s.
        assert!((330..=370).contains(&sent), "{v}");
        let m = &v["perfpeer"]["multicast"];
        assert_eq!(m["source_specific"], ssm, "{m}");
        let rows = m["receivers"].as_array().expect("receivers");
        assert_eq!(rows.len(), 2, "{m}");
        for (row, addr) in rows.iter().zip(receivers) {
            assert_eq!(row["peer"], addr.as_str(), "{m}");
            // Every datagram the sender sent, none of the stray sender's.
            assert_eq!(
                (
                    row["sum_received"]["packets"].as_u64(),
                    row["sum_received"]["lost_packets"].as_u64()
                ),
                (Some(sent), Some(0)),
                "ssm {ssm}: {row}"
            );
            assert!(
                row["result_id"].as_str().is_some_and(|id| id.len() == 32),
                "{row}"
            );
            assert!(row.get("error").is_none(), "{row}");
        }
        let stray_out = stray_sender.wait(Duration::from_secs(10));
        assert!(stray_out.status.success(), "{}", text(&stray_out));
    }
    // Asked of the sender over its /ws (`run`, as the browser's form asks it): the same rows.
    let _sender_peer = perfpeer_tests::Peer::start_with(
        lan.prefix(0),
        &format!("{sender}:5210"),
        "5211",
        &["--open"],
    );
    let mut args: Vec<&str> = vec!["--from", &sender];
    args.extend(receivers.iter().map(String::as_str));
    args.extend(["--multicast", group, "-u", "-b", "1M", "-t", "1", "-J"]);
    let out = perfpeer_tests::perfpeer_test_with(lan.prefix(0), &args);
    let v = perfpeer_tests::json_of(&out, &args);
    assert!(out.status.success(), "{args:?}: {v}");
    let sent = perfpeer_tests::u64_at(&v, "/end/sum_sent/packets");
    let rows = v["perfpeer"]["multicast"]["receivers"]
        .as_array()
        .expect("receivers");
    assert_eq!(rows.len(), 2, "{v}");
    for row in rows {
        assert_eq!(row["sum_received"]["packets"].as_u64(), Some(sent), "{row}");
    }
    // The text names the group and a row per receiver; one that cannot be reached is a row
    // with its reason, the others still report, and the test is partial.
    let mut args: Vec<&str> = receivers.iter().map(String::as_str).collect();
    args.extend([
        stray,
        "--multicast",
        group,
        "-u",
        "-b",
        "1M",
        "-t",
        "1",
        "--no-store",
    ]);
    let out = perfpeer_tests::perfpeer_test_with(lan.prefix(0), &args);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    let port = if group.contains(':') {
        format!("[{group}]:5212")
    } else {
        format!("{group}:5212")
    };
    assert!(
        shown.contains(&format!("Multicast group {port} (TTL 1), 3 receivers:")),
        "{shown}"
    );
    for addr in receivers {
        let row = shown
            .lines()
            .find(|l| l.ends_with(&format!("receiver {addr}")))
            .unwrap_or_else(|| panic!("no row for {addr}: {shown}"));
        assert!(row.contains(" 0/"), "{row}");
    }
    assert!(
        shown.contains(&format!("receiver {stray}: cannot reach")),
        "{shown}"
    );
    assert!(shown.contains("Test ended early: "), "{shown}");
}

/// What cannot be a group test is a usage error, before anything is sent.
#[test]
fn a_group_test_refuses_what_a_group_cannot_take() {
    for bad in [
        &["127.0.0.1", "--multicast", GROUP][..],
        &["127.0.0.1", "--multicast", GROUP, "-u", "-R"],
        &["127.0.0.1", "--multicast", GROUP, "-u", "-P", "2"],
        &["127.0.0.1", "--multicast", "224.0.0.1", "-u"],
        &["127.0.0.1", "--multicast", "10.0.0.1", "-u"],
        &["127.0.0.1", "--multicast", "ff02::1", "-u"],
        &["127.0.0.1", "--multicast", GROUP, "-u", "--ttl", "0"],
        &["127.0.0.1", "127.0.0.2", "-u"],
        &["127.0.0.1", "-u", "--ssm"],
        &["iperf3://127.0.0.1", "--multicast", GROUP, "-u"],
    ] {
        let out = perfpeer_tests::perfpeer_test(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out));
    }
}
