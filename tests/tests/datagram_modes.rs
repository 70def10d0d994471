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
        assert!(d("mean_ms") < 20.0, "loopback: {v}");
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
    let out = perfpeer_test(&[peer.control.as_str(), "--trip-times", "-t", "1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
