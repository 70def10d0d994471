//! Packet-size sweeps and constant-bitrate streams over UDP on loopback (the DCCP versions run
//! in the guest, `dccp_vm`): the sweep's rows agree with their own counts, a CBR stream keeps
//! its rate and spacing and reports the longest gap live and at the end.

use perfpeer_tests::{Peer, f64_at, json_of, perfpeer_test};

#[test]
fn udp_sweep_rows_are_consistent() {
    let peer = Peer::start(&["--open"]);
    let args = [
        peer.control.as_str(),
        "--sweep-len",
        "64,...,512",
        "-t",
        "1",
        "-b",
        "20M",
        "-J",
    ];
    let out = perfpeer_test(&args);
    let v = json_of(&out, &args);
    assert_eq!(v["protocol"], "udp", "{v}");
    let points = v["points"].as_array().expect("points");
    let lens: Vec<u64> = points.iter().filter_map(|p| p["len"].as_u64()).collect();
    assert_eq!(lens, vec![64, 128, 256, 512]);
    for p in points {
        assert!(p.get("error").is_none(), "{p}");
        let (len, bytes, packets) = (
            f64_at(p, "/len"),
            f64_at(p, "/bytes"),
            f64_at(p, "/packets"),
        );
        assert!(packets > 0.0 && bytes == len * packets, "{p}");
        let (bps, secs) = (f64_at(p, "/bits_per_second"), f64_at(p, "/seconds"));
        assert!((bytes * 8.0 / secs - bps).abs() <= bps * 0.01, "{p}");
        assert!(bps <= 20e6 * 1.1, "paced at -b 20M: {p}");
    }
    // The text table: a title and one row per size.
    let out = perfpeer_test(&[&peer.control, "--sweep-len", "100,200", "-t", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("Packet-size sweep: UDP"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(" B ")).count(),
        2,
        "{text}"
    );
}

#[test]
fn udp_cbr_keeps_rate_and_reports_gaps() {
    let peer = Peer::start(&["--open"]);
    let out = perfpeer_test(&[&peer.control, "--cbr", "mp3", "-t", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Kbits/s") && l.ends_with(" ms"))
        .collect();
    assert!(live.len() >= 2, "a live line per second: {text}");
    assert!(
        text.contains("Constant bitrate client -> server") && text.contains("longest gap"),
        "{text}"
    );
    let args = [
        peer.control.as_str(),
        "--cbr",
        "64k",
        "--len",
        "160",
        "-t",
        "3",
        "-R",
        "-J",
    ];
    let v = json_of(&perfpeer_test(&args), &args);
    let bps = f64_at(&v, "/end/sum_received/bits_per_second");
    assert!(
        (48e3..80e3).contains(&bps),
        "64 kbit/s stream received at {bps}: {v}"
    );
    // 160-byte packets at 64 kbit/s leave every 20 ms; the longest gap is at least that.
    let gap = f64_at(&v, "/perfpeer/udp/max_gap_ms");
    assert!((15.0..2000.0).contains(&gap), "longest gap {gap} ms");
    let out = perfpeer_test(&[&peer.control, "--cbr", "48k"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--len"));
}

/// Ctrl-C on a long stream ends it as cancelled, and the far end's receiver figures (loss,
/// jitter, longest gap) are still collected: the stream's end line has them.
#[test]
fn a_cancelled_stream_keeps_the_receivers_figures() {
    let peer = Peer::start(&["--open"]);
    let run = perfpeer_tests::Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &["test", &peer.control, "--cbr", "mp3", "-t", "60"],
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(run.0.id().cast_signed(), libc::SIGINT) };
    let out = run.wait(std::time::Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    let end = text
        .lines()
        .find(|l| l.starts_with("Constant bitrate client -> server"))
        .unwrap_or_else(|| panic!("no end line: {text}"));
    assert!(
        end.contains("lost 0/") && end.contains("jitter") && end.contains("longest gap"),
        "the receiver's figures after a cancel: {end}"
    );
    assert!(text.contains("cancelled"), "{text}");
    let secs: f64 = end
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(" s,").next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("a duration: {end}"));
    assert!(
        secs < 10.0,
        "the stream's time so far, not the 60 s asked: {end}"
    );
    assert!(
        !peer.log().contains("went away"),
        "the far peer saw a stop, not a lost peer: {}",
        peer.log()
    );
}

/// `-b RATE/BURST` (iperf3's burst mode): each stream sends BURST datagrams back to back, then
/// waits, at the same average rate — at 2 Mbit/s in 1000-byte datagrams, bursts of 20 leave
/// 80 ms apart where evenly paced ones leave 4 ms apart. Both directions (the far end's sender
/// bursts too), and a burst without a rate is a usage error.
#[test]
fn a_burst_keeps_the_rate_and_spaces_the_groups() {
    let peer = Peer::start(&["--open"]);
    let gap_and_rate = |extra: &[&str]| {
        let mut args = vec![peer.control.as_str(), "-u", "-l", "1000", "-t", "2", "-J"];
        args.extend_from_slice(extra);
        let v = json_of(&perfpeer_test(&args), &args);
        (
            f64_at(&v, "/perfpeer/udp/max_gap_ms"),
            f64_at(&v, "/end/sum_received/bits_per_second"),
        )
    };
    let (even_gap, even_rate) = gap_and_rate(&["-b", "2M"]);
    for reverse in [false, true] {
        let extra: &[&str] = if reverse {
            &["-b", "2M/20", "-R"]
        } else {
            &["-b", "2M/20"]
        };
        let (gap, rate) = gap_and_rate(extra);
        assert!(
            (60.0..400.0).contains(&gap) && gap > 5.0 * even_gap,
            "bursts of 20 at 2 Mbit/s leave ~80 ms apart: {gap} ms (even: {even_gap} ms)"
        );
        assert!(
            (1.6e6..2.4e6).contains(&rate),
            "the average rate is kept: {rate} (even: {even_rate})"
        );
    }
    let out = perfpeer_test(&[&peer.control, "-u", "-b", "0/5"]);
    assert_eq!(out.status.code(), Some(2), "a burst needs a rate");
    let out = perfpeer_test(&[&peer.control, "-u", "-b", "2M/0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--trip-times` over loopback: one clock, every datagram's delay counted, in both directions
/// of `-R`; on TCP a usage error.
#[test]
fn trip_times_count_every_datagram_on_one_clock() {
    let peer = Peer::start(&["--open"]);
    for reverse in [false, true] {
        let mut args = vec![
            peer.control.as_str(),
            "-u",
            "-b",
            "4M",
            "-t",
            "2",
            "--trip-times",
            "-J",
        ];
        if reverse {
            args.push("-R");
        }
        let v = json_of(&perfpeer_test(&args), &args);
        let count = perfpeer_tests::u64_at(&v, "/perfpeer/udp/one_way/count");
        let packets = perfpeer_tests::u64_at(&v, "/end/sum_received/packets");
        assert!(
            count > 0 && count + 2 >= packets,
            "{count} of {packets}: {v}"
        );
        let d = |k: &str| f64_at(&v, &format!("/perfpeer/udp/one_way/{k}"));
        assert!(0.0 <= d("min_ms") && d("min_ms") <= d("mean_ms") && d("mean_ms") <= d("max_ms"));
        // The reader waits for a CPU on a busy host (tens of ms), never for the test's length.
        assert!(d("min_ms") < 10.0 && d("max_ms") < 1000.0, "loopback: {v}");
        assert_eq!(
            v.pointer("/perfpeer/udp/one_way/clock")
                .and_then(|c| c.as_str()),
            Some("same_host")
        );
    }
    // The text and the result page say it too.
    let out = perfpeer_test(&[peer.control.as_str(), "-u", "-t", "1", "--trip-times"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("one-way delay avg/min/max/stdev"), "{text}");
    let id = perfpeer_tests::result_id_from(&text);
    let (status, page) =
        perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200);
    assert!(
        page.contains("One-way delay") && page.contains("one clock (same host)"),
        "{page}"
    );
    let out = perfpeer_test(&[
        peer.control.as_str(),
        "-u",
        "--trip-times",
        "--rr",
        "-t",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `perfpeer test PEER ARGS -J`, with `-R` when `reverse`: its JSON.
fn json_one_way(peer: &Peer, args: &[&str], reverse: bool) -> serde_json::Value {
    let mut all = vec![peer.control.as_str()];
    all.extend_from_slice(args);
    all.push("-J");
    if reverse {
        all.push("-R");
    }
    json_of(&perfpeer_test(&all), &all)
}

/// `--histograms`: every delay counted once, in the bin its value falls in, the same counts in
/// `-J`, the text and the page, and the bin points agreeing with the percentiles.
#[test]
fn histograms_count_every_delay_in_its_bin() {
    let peer = Peer::start(&["--open"]);
    for (reverse, bins) in [(false, "--histograms=20u,300"), (true, "--histograms")] {
        let v = json_one_way(&peer, &["-u", "-b", "4M", "-t", "2", bins], reverse);
        let one_way = v.pointer("/perfpeer/udp/one_way").expect("one-way delays");
        let h = &one_way["histogram"];
        let width = h["bin_width_us"].as_u64().unwrap();
        assert_eq!(
            (width, h["bins"].as_u64().unwrap()),
            if reverse { (100, 10_000) } else { (20, 300) },
            "{h}"
        );
        let counts: Vec<(u64, u64)> = h["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_u64().unwrap(), c[1].as_u64().unwrap()))
            .collect();
        let in_bins: u64 = counts.iter().map(|c| c.1).sum();
        let all = in_bins + h["below"].as_u64().unwrap() + h["above"].as_u64().unwrap();
        assert_eq!(
            all,
            one_way["count"].as_u64().unwrap(),
            "every delay once: {h}"
        );
        // The fastest and slowest delays sit in the first and last bins counted.
        let ms = |k: &str| one_way[k].as_f64().unwrap();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a non-negative delay of well under a second over a width of ≥ 1 µs"
        )]
        let bin_of = |ms: f64| (ms * 1000.0 / width as f64).floor() as u64;
        assert_eq!(counts.first().unwrap().0, bin_of(ms("min_ms")), "{one_way}");
        if h["above"] == 0 {
            assert_eq!(counts.last().unwrap().0, bin_of(ms("max_ms")), "{one_way}");
        }
        // The median (to the percentile's ~3 % precision) lies in the bin where half the
        // delays are counted.
        let p50 = one_way["percentiles"]["p50_ms"].as_f64().unwrap();
        let mut running = 0;
        let half_bin = counts
            .iter()
            .find(|(_, c)| {
                running += c;
                running * 2 >= in_bins
            })
            .unwrap()
            .0;
        let bin_ms = width as f64 / 1000.0;
        let (low, high) = (half_bin as f64 * bin_ms, (half_bin + 1) as f64 * bin_ms);
        assert!(
            p50 >= low * 0.96 - 0.001 && p50 <= high * 1.04 + 0.001,
            "median {p50} outside bin {half_bin} ({low}–{high} ms): {h}"
        );
    }
    // The text prints the bins as iperf 2 does, the page says them and draws them.
    let out = perfpeer_test(&[
        peer.control.as_str(),
        "-u",
        "-t",
        "1",
        "--histograms=50u,1000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.contains("delay histogram bin(w=50us):cnt("))
        .unwrap_or_else(|| panic!("no histogram line: {text}"));
    assert!(line.contains("(5.00/95.00/99.7%="), "{line}");
    let id = perfpeer_tests::result_id_from(&text);
    let (status, page) =
        perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200);
    assert!(
        page.contains("Delay histogram") && page.contains("aria-label='one-way delays ("),
        "{page}"
    );
    // Bins out of range, and bins of a test with no one-way delays, are usage errors.
    for bad in [
        &["-u", "--histograms=0"][..],
        &["-u", "--histograms=1u,10001"],
        &["-u", "--histograms", "--rr"],
    ] {
        let mut args = vec![peer.control.as_str(), "-t", "1"];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

/// `--isochronous`: frames at the asked rate, each sent as a burst of datagrams (or one TCP
/// write) and counted whole on loopback, timed, in both directions; the text and page say
/// them; what cannot carry frames is a usage error.
#[test]
fn video_frames_arrive_whole_at_their_rate() {
    let peer = Peer::start(&["--open"]);
    for reverse in [false, true] {
        let args = ["-u", "--isochronous=50:10m,2m", "-l", "1200", "-t", "2"];
        let v = json_one_way(&peer, &args, reverse);
        let f = |k: &str| perfpeer_tests::u64_at(&v, &format!("/perfpeer/udp/frames/{k}"));
        // 50 frames a second for 2 s, none lost on loopback (a frame is 25 000 bytes on average:
        // about 21 datagrams of 1200 bytes, sent as one burst).
        assert!((95..=105).contains(&f("whole")), "{v}");
        assert_eq!(f("lost"), 0, "{v}");
        assert_eq!(f("latency/count"), f("whole"), "{v}");
        let period = f64_at(&v, "/perfpeer/udp/frames/period_ms");
        assert!((period - 20.0).abs() < 1e-9, "{v}");
        // The datagrams: about 10 Mbit/s of them.
        let bps = f64_at(&v, "/end/sum_received/bits_per_second");
        assert!((8.0e6..12.0e6).contains(&bps), "{bps}: {v}");
        let packets = perfpeer_tests::u64_at(&v, "/end/sum_received/packets");
        assert!(packets > 15 * f("whole"), "{packets} datagrams: {v}");
    }
    let out = perfpeer_test(&[peer.control.as_str(), "-u", "-t", "1", "--isochronous"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains(" whole/0 lost/") && text.contains("frame latency avg/min/max/stdev"),
        "{text}"
    );
    let id = perfpeer_tests::result_id_from(&text);
    let (status, page) =
        perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200);
    assert!(page.contains("Video frames"), "{page}");
    // Over TCP each frame is one write, timed from its send to the read of its last byte.
    for reverse in [false, true] {
        let args = ["--isochronous=50:10m,2m", "-t", "2"];
        let v = json_one_way(&peer, &args, reverse);
        let f = |k: &str| perfpeer_tests::u64_at(&v, &format!("/perfpeer/tcp/frames/{k}"));
        assert!((95..=105).contains(&f("whole")), "{v}");
        assert_eq!((f("lost"), f("latency/count")), (0, f("whole")), "{v}");
        let bps = f64_at(&v, "/end/sum_received/bits_per_second");
        assert!((8.0e6..12.0e6).contains(&bps), "{bps}: {v}");
    }
    for bad in [
        &["--isochronous", "-l", "50"][..],
        &["--isochronous", "--rr"],
        &["-u", "--isochronous", "-b", "5M"],
        &["-u", "--isochronous=0"],
        &["-u", "--isochronous", "-l", "20"],
        &["-u", "--isochronous", "--rr"],
    ] {
        let mut args = vec![peer.control.as_str(), "-t", "1"];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

/// TCP `--trip-times`: each write's one-way delay, from its send to the read of its last byte,
/// counted once per write in both directions; what cannot carry the stamps is a usage error.
#[test]
fn trip_times_of_tcp_writes_count_every_write() {
    let peer = Peer::start(&["--open"]);
    for reverse in [false, true] {
        let args = ["-l", "1000", "-b", "8M", "-t", "2", "--histograms"];
        let v = json_one_way(&peer, &args, reverse);
        let d = v.pointer("/perfpeer/tcp/one_way").expect("write delays");
        let received = perfpeer_tests::u64_at(&v, "/end/sum_received/bytes");
        let count = d["count"].as_u64().unwrap();
        // Every whole write once (2000 of them at 8 Mbit/s for 2 s).
        assert_eq!(count, received / 1000, "{d}");
        assert!((1900..=2100).contains(&count), "{d}");
        let ms = |k: &str| d[k].as_f64().unwrap();
        // Paced below any queue on loopback, so the fastest write takes microseconds; the
        // rest wait only for the reader's turn on a CPU, which a busy CI host stretches to tens
        // of milliseconds (seen: mean 20 ms with three spinning processes on two cores), never
        // to the test's length. A wrong clock basis would be off by far more in either way.
        assert!(
            0.0 <= ms("min_ms")
                && ms("min_ms") < 10.0
                && ms("min_ms") <= ms("mean_ms")
                && ms("mean_ms") <= ms("max_ms")
                && ms("max_ms") < 1000.0,
            "loopback, paced below any queue: {d}"
        );
        assert_eq!(d["clock"], "same_host");
        let bins: u64 = d["histogram"]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[1].as_u64().unwrap())
            .sum();
        assert_eq!(bins, count, "{d}");
    }
    let out = perfpeer_test(&[peer.control.as_str(), "-t", "1", "--trip-times"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("one-way delay avg/min/max/stdev"), "{text}");
    let id = perfpeer_tests::result_id_from(&text);
    let (_, page) = perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert!(page.contains("One-way delay of writes"), "{page}");
    for bad in [
        &["--trip-times", "--skip-rx-copy"][..],
        &["--trip-times", "-l", "8"],
        &["--trip-times", "--rr"],
    ] {
        let mut args = vec![peer.control.as_str(), "-t", "1"];
        args.extend_from_slice(bad);
        let out = perfpeer_test(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}
