use perfpeer_tests::netns::{self, ADDR_B, TwoHosts};
use perfpeer_tests::{Peer, f64_at, json_of, perfpeer_test_with, u64_at};

/// Two hosts on a 20 Mbit/s link (root and iproute2 needed: a skip, or a failure in CI).
fn hosts(tag: &str) -> Option<TwoHosts> {
    netns::two_hosts_or_skip(tag, "20mbit")
}

/// Puts a `tbf` of `rate` (its rate, then the rest of its arguments) on A's way out in place
/// of the link's own, and starts an open peer on B.
fn shape_a_and_serve_b(hosts: &TwoHosts, rate: &[&str]) -> Peer {
    netns::shape(&hosts.ns_a, &hosts.dev_a, rate);
    Peer::start_with(
        hosts.prefix_b(),
        &format!("{ADDR_B}:5210"),
        "5211",
        &["--open"],
    )
}

#[test]
fn shaped_20mbit_link_tcp_and_udp_land_where_the_link_allows() {
    let Some(hosts) = hosts("s") else { return };
    let _peer = Peer::start_with(
        hosts.prefix_b(),
        &format!("{ADDR_B}:5210"),
        "5211",
        &["--open"],
    );

    // TCP: goodput is the link rate less Ethernet/IP/TCP headers (1448 of every 1514 bytes ≈ 19.1 Mbit/s).
    let out = perfpeer_test_with(hosts.prefix_a(), &[ADDR_B, "-t", "4", "-O", "1", "-J"]);
    let v = json_of(&out, &["tcp over the shaped link"]);
    let goodput = f64_at(&v, "/end/sum_received/bits_per_second");
    assert!(
        (18e6..=20e6).contains(&goodput),
        "TCP goodput {goodput} not within 10% of 20 Mbit/s"
    );
    // With -O the two ends start counting at their own omit boundary, so only an order holds.
    assert!(u64_at(&v, "/end/sum_received/bytes") <= u64_at(&v, "/end/sum_sent/bytes") + 2_000_000);

    // UDP at 15 Mbit/s, below the link rate: it all arrives.
    let out = perfpeer_test_with(
        hosts.prefix_a(),
        &[ADDR_B, "-u", "-b", "15M", "-t", "4", "-J"],
    );
    let v = json_of(&out, &["udp over the shaped link"]);
    let received = f64_at(&v, "/end/sum_received/bits_per_second");
    assert!(
        (13.5e6..=16.5e6).contains(&received),
        "UDP received {received} not within 10% of 15 Mbit/s"
    );
    assert_eq!(
        u64_at(&v, "/end/sum_received/lost_packets"),
        0,
        "loss below the link rate: {v}"
    );
}

/// `--bind-dev` binds every connection of the test to an interface: over the link's interface
/// the test runs; bound to `lo`, where the other host is not, it cannot reach it — so the
/// binding is applied, not just accepted. A name the kernel has no interface for is said so.
#[test]
fn bind_dev_sends_the_test_out_of_that_interface_only() {
    let Some(hosts) = hosts("b") else { return };
    let _peer = Peer::start_with(
        hosts.prefix_b(),
        &format!("{ADDR_B}:5210"),
        "5211",
        &["--open"],
    );
    for udp in [false, true] {
        let mut args = vec![ADDR_B, "--bind-dev", hosts.dev_a.as_str(), "-t", "1", "-J"];
        if udp {
            args.extend_from_slice(&["-u", "-b", "5M"]);
        }
        let v = json_of(&perfpeer_test_with(hosts.prefix_a(), &args), &args);
        assert!(f64_at(&v, "/end/sum_received/bits_per_second") > 1e6, "{v}");
    }
    let out = perfpeer_test_with(
        hosts.prefix_a(),
        &[
            ADDR_B,
            "--bind-dev",
            "lo",
            "-t",
            "1",
            "--connect-timeout",
            "2",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "bound to lo, {ADDR_B} is out of reach: {err}"
    );
    let out = perfpeer_test_with(
        hosts.prefix_a(),
        &[ADDR_B, "--bind-dev", "nosuchdev0", "-t", "1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("cannot bind to device nosuchdev0"),
        "{err}"
    );
    let out = perfpeer_test_with(hosts.prefix_a(), &[ADDR_B, "--bind-dev", "no/slash"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The one-way delay of a direction with a standing queue, and of the other: each
/// `--trip-times` figure lands where the link puts it (the namespaces share one clock). This
/// kernel has no `netem`, so the delay is a full `tbf` queue on A's way out: 4 Mbit/s with 40 ms
/// of latency and a 16 KB burst hold (4 Mbit/s × 40 ms + 16 KB) = 36 KB, 72 ms at the rate,
/// kept full by 8 Mbit/s of UDP; B's way out keeps its 20 Mbit/s and no queue.
#[test]
fn trip_times_show_a_delay_on_one_direction_only() {
    let Some(hosts) = hosts("t") else { return };
    let _peer = shape_a_and_serve_b(&hosts, &["4mbit", "burst", "16kb", "latency", "40ms"]);
    let mut delays = Vec::new();
    for reverse in [false, true] {
        let mut args = vec![ADDR_B, "-u", "-b", "8M", "-t", "3", "--trip-times", "-J"];
        if reverse {
            args.push("-R");
        }
        let v = json_of(&perfpeer_test_with(hosts.prefix_a(), &args), &args);
        let d = |k: &str| f64_at(&v, &format!("/perfpeer/udp/one_way/{k}"));
        assert_eq!(
            v.pointer("/perfpeer/udp/one_way/clock")
                .and_then(|c| c.as_str()),
            Some("synchronised_clocks"),
            "two addresses: the clocks' agreement is what the figure rests on"
        );
        // The clocks' offset read around `open`, beside the figure in both directions (the
        // far end measured A → B, we measured B → A): one kernel's clock, so it is 0 within
        // the half round trip it was read in.
        let offset = d("clock_offset/server_minus_client_ms");
        let within = d("clock_offset/within_ms");
        assert!(
            offset.abs() <= within + 0.05 && within < 200.0,
            "{offset} ± {within}: {v}"
        );
        delays.push((d("mean_ms"), d("min_ms"), d("max_ms")));
    }
    let ((a_to_b, _, a_max), (b_to_a, _, _)) = (delays[0], delays[1]);
    assert!(
        (55.0..80.0).contains(&a_to_b),
        "A → B through the queue: {delays:?}"
    );
    // The worst datagram also carries any stall of the receiving process: under the full
    // suite's load (the Wi-Fi VM beside it) one read 85 ms; the mean above is the queue's figure.
    assert!(a_max <= 100.0, "the queue holds 72 ms: {delays:?}");
    assert!(
        (0.0..5.0).contains(&b_to_a),
        "B → A without a queue: {delays:?}"
    );
}

/// Video-like frames (`--isochronous=30:8m,4m`) through 9 Mbit/s one way and 100 Mbit/s the
/// other. The mean (8 Mbit/s, 33 KB frames) fits both, but a frame much larger than the mean
/// takes longer than a frame period (33 ms) to pass 9 Mbit/s after tbf's 16 KB burst, and a
/// queue of them makes the next ones later still: some of A → B's frames arrive late. At 100
/// Mbit/s no frame can be (the largest drawn, 4 × the mean, passes in 11 ms). Every frame the
/// sender started is counted, whole or lost.
#[test]
fn video_frames_arrive_late_where_the_link_is_slower_than_their_bursts() {
    let Some(hosts) = hosts("v") else { return };
    let _peer = shape_a_and_serve_b(&hosts, &["9mbit", "burst", "16kb", "latency", "200ms"]);
    netns::shape(
        &hosts.ns_b,
        &hosts.dev_b,
        &["100mbit", "burst", "64kb", "latency", "50ms"],
    );
    let mut seen = Vec::new();
    for reverse in [false, true] {
        let mut args = vec![ADDR_B, "-u", "--isochronous=30:8m,4m", "-t", "4", "-J"];
        if reverse {
            args.push("-R");
        }
        let v = json_of(&perfpeer_test_with(hosts.prefix_a(), &args), &args);
        let f = |k: &str| u64_at(&v, &format!("/perfpeer/udp/frames/{k}"));
        let (whole, lost, late) = (f("whole"), f("lost"), f("late"));
        // 30 frames a second for 4 s.
        assert!(
            (115..=125).contains(&(whole + lost)),
            "{whole} whole + {lost} lost: {v}"
        );
        let mean = f64_at(&v, "/perfpeer/udp/frames/latency/mean_ms");
        seen.push((whole, lost, late, mean));
    }
    println!("(whole, lost, late, mean latency ms) A → B, B → A: {seen:?}");
    let ((ab_whole, _, ab_late, ab_mean), (_, ba_lost, ba_late, ba_mean)) = (seen[0], seen[1]);
    assert!(ab_late >= 3, "late A → B (9 Mbit/s): {seen:?}");
    assert_eq!(
        (ba_late, ba_lost),
        (0, 0),
        "none late B → A (100 Mbit/s): {seen:?}"
    );
    assert!(
        ab_whole >= 80,
        "the queue holds 200 ms: most frames arrive whole: {seen:?}"
    );
    assert!(ab_mean > ba_mean, "{seen:?}");
}

/// The same frames over TCP (`--isochronous` without `-u`): each frame one write, timed from its
/// send to the read of its last byte. Through 9 Mbit/s the large ones and the queue behind them
/// make frames late; none is lost (TCP delivers every one); at 100 Mbit/s none is late.
#[test]
fn video_frames_over_tcp_are_late_but_never_lost_through_a_slow_link() {
    let Some(hosts) = hosts("w") else { return };
    let _peer = shape_a_and_serve_b(&hosts, &["9mbit", "burst", "16kb", "latency", "200ms"]);
    netns::shape(
        &hosts.ns_b,
        &hosts.dev_b,
        &["100mbit", "burst", "64kb", "latency", "50ms"],
    );
    let mut seen = Vec::new();
    for reverse in [false, true] {
        let mut args = vec![ADDR_B, "--isochronous=30:8m,4m", "-t", "4", "-J"];
        if reverse {
            args.push("-R");
        }
        let v = json_of(&perfpeer_test_with(hosts.prefix_a(), &args), &args);
        let f = |k: &str| u64_at(&v, &format!("/perfpeer/tcp/frames/{k}"));
        let (whole, lost, late) = (f("whole"), f("lost"), f("late"));
        assert_eq!(lost, 0, "TCP loses no frame: {v}");
        let mean = f64_at(&v, "/perfpeer/tcp/frames/latency/mean_ms");
        seen.push((whole, late, mean));
    }
    println!("(whole, late, mean latency ms) A → B, B → A: {seen:?}");
    let ((ab_whole, ab_late, ab_mean), (ba_whole, ba_late, ba_mean)) = (seen[0], seen[1]);
    // 30 frames a second for 4 s; through 9 Mbit/s the last ones may still be queued at the end.
    assert!((100..=125).contains(&ab_whole), "{seen:?}");
    assert!((115..=125).contains(&ba_whole), "{seen:?}");
    assert!(ab_late >= 3, "late A → B (9 Mbit/s): {seen:?}");
    assert_eq!(ba_late, 0, "none late B → A (100 Mbit/s): {seen:?}");
    assert!(ab_mean > ba_mean, "{seen:?}");
}
