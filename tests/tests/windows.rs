//! The Windows build of scripts/build-windows.sh, run under Debian's wine on loopback with the
//! native Linux peer: the Windows peer as the far end (TCP, reverse, UDP at a rate, CPU figures
//! from the Windows API, `/` serves the UI, a result stored and served at `/r/<id>`, DCCP refused
//! in words), as the client of the Linux peer, and its iperf3 and iperf 2 personas against the
//! stock tools both ways. (Its web UI in Chromium is in the browser test, `browser::windows`.)
//!
//! scripts/test.sh builds the .exe and sets `PERFPEER_WINDOWS=1`, and then a missing .exe or
//! wine fails; run alone without them, each test says it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use perfpeer_tests::{
    Peer, Running, f64_at, free_port, have, http_request, json_of, perfpeer_test, u64_at,
    wait_listening, windows_build,
};

/// `perfpeer ARGS` on the Windows build under wine, to completion.
fn run_windows(exe: &Path, prefix: &[String], args: &[&str]) -> Output {
    Command::new(&prefix[0])
        .args(&prefix[1..])
        .arg(exe)
        .args(args)
        .output()
        .expect("run the Windows build under wine")
}

/// `perfpeer test ARGS -J` from the native build; its JSON.
fn native_json(args: &[&str]) -> serde_json::Value {
    let mut full = args.to_vec();
    full.push("-J");
    json_of(&perfpeer_test(&full), args)
}

fn windows() -> Option<(PathBuf, Vec<String>)> {
    windows_build()
}

#[test]
fn the_windows_peer_is_the_far_end_of_the_linux_peer() {
    let Some((exe, prefix)) = windows() else {
        return;
    };
    let peer = Peer::start_binary(&exe, prefix, &[]);
    let (status, page) = http_request(&peer.control, "GET", "/", "", "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("/boot.js"), "the UI is not embedded: {page}");
    let (status, info) = http_request(&peer.control, "GET", "/api/info", "", "");
    assert_eq!(status, 200, "{info}");
    assert!(
        info.contains("Windows"),
        "the peer names its system: {info}"
    );

    // TCP to the Windows peer: both ends count the same bytes, and its CPU figures (from
    // GetProcessTimes and GetSystemTimes) make a service demand.
    let v = native_json(&[&peer.control, "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 0);
    assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"));
    let remote_cpu = f64_at(&v, "/end/cpu_utilization_percent/remote_total");
    assert!(remote_cpu > 0.0, "the Windows end measured its CPU: {v}");

    // Reverse: the Windows peer sends.
    let v = native_json(&[&peer.control, "-R", "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let received = u64_at(&v, "/end/sum_received/bytes");
    assert!(received > 0);
    assert_eq!(received, u64_at(&v, "/end/sum_sent/bytes"));

    // UDP at a rate, both ways: paced, every datagram accounted for (one at a time there: no
    // recvmmsg on Windows). The Windows end sends at 2 Mbit/s: under wine every send is a trip
    // through wineserver, and with the other tests loading this machine's two cores 10 Mbit/s
    // was seen to come out at 7.5.
    for (reverse, rate_asked) in [(false, 10e6), (true, 2e6)] {
        let bitrate = if reverse { "2M" } else { "10M" };
        let mut args = vec![peer.control.as_str(), "-u", "-b", bitrate, "-t", "2"];
        if reverse {
            args.push("-R");
        }
        let v = native_json(&args);
        assert_eq!(
            v["perfpeer"]["status"], "complete",
            "reverse={reverse}: {v}"
        );
        let rate = f64_at(&v, "/end/sum_sent/bits_per_second");
        assert!(
            (0.8 * rate_asked..=1.05 * rate_asked).contains(&rate),
            "reverse={reverse}: rate {rate}"
        );
        let received = u64_at(&v, "/end/sum_received/bytes");
        let lost = u64_at(&v, "/end/sum_received/lost_packets");
        assert!(received > 0, "reverse={reverse}: {v}");
        assert_eq!(
            received / 1448 + lost,
            u64_at(&v, "/end/sum_sent/packets"),
            "reverse={reverse}: {v}"
        );
    }

    // A result kept by the Windows peer (in its SQLite store) and served at /r/<id>.
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let id = perfpeer_tests::result_id_from(&stdout);
    let (status, page) = http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<svg"), "no chart on the result page");
    let (status, json) = http_request(&peer.control, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200);
    assert!(json.contains("\"status\":\"complete\""), "{json}");

    // What Windows lacks is refused in words, and the peer goes on serving.
    let out = perfpeer_test(&[&peer.control, "--dccp", "-t", "1"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("DCCP"), "{said}");
    let v = native_json(&[&peer.control, "-t", "1"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "still serving: {v}");
}

#[test]
fn the_windows_peer_tests_the_linux_peer() {
    let Some((exe, prefix)) = windows() else {
        return;
    };
    let linux = Peer::start(&[]);
    let json = |args: &[&str]| {
        let mut full = vec!["test"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-J", "--no-store"]);
        json_of(&run_windows(&exe, &prefix, &full), &full)
    };
    // TCP both ways; the Linux end's TCP_INFO and CPU figures come back to the Windows client.
    let v = json(&[&linux.control, "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 0);
    assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"));
    assert!(
        f64_at(&v, "/end/cpu_utilization_percent/host_total") > 0.0,
        "{v}"
    );
    let v = json(&[&linux.control, "-R", "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);

    // UDP at a rate, the Windows end sending one datagram per call (2 Mbit/s: see above).
    let v = json(&[&linux.control, "-u", "-b", "2M", "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let rate = f64_at(&v, "/end/sum_sent/bits_per_second");
    assert!((1.6e6..=2.1e6).contains(&rate), "rate {rate}");
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0, "{v}");

    // A name, resolved by the Windows resolver.
    let port = linux.control.rsplit_once(':').unwrap().1;
    let v = json(&[&format!("localhost:{port}"), "-4", "-t", "1"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");

    // The version line says what it is.
    let out = run_windows(&exe, &prefix, &["--version"]);
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.contains("windows") && version.contains("web UI embedded"),
        "{version}"
    );
}

#[test]
fn the_windows_personas_speak_to_stock_iperf3_and_iperf2() {
    let Some((exe, prefix)) = windows() else {
        return;
    };
    let exe_str = exe.to_string_lossy().to_string();
    // `perfpeer ARGS` on the Windows build, in the background.
    let spawn_windows = |args: &[&str]| {
        let mut full: Vec<&str> = prefix[1..].iter().map(String::as_str).collect();
        full.push(&exe_str);
        full.extend_from_slice(args);
        Running::spawn(Path::new(&prefix[0]), &full)
    };
    if have("iperf3") {
        // The Windows iperf3 client against stock `iperf3 -s`. Under the full suite's load the
        // stock one-off server once reset the wine client's control connection ("recvmsg:
        // Connection reset by peer", 2026-12-07): a second try with a fresh server, the first
        // failure printed so that a failure that repeats is seen.
        let mut tries = Vec::new();
        for _ in 0..2 {
            let port = free_port();
            let p = port.to_string();
            let _stock = Running::spawn(Path::new("iperf3"), &["-s", "-1", "-p", &p]);
            assert!(wait_listening(port, Duration::from_secs(10)));
            let args = ["iperf3", "-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"];
            let out = spawn_windows(&args).wait(Duration::from_secs(60));
            let done = out.status.success();
            tries.push((args.map(str::to_string), out));
            if done {
                break;
            }
            eprintln!(
                "the Windows iperf3 client's first try failed: {}",
                String::from_utf8_lossy(&tries[0].1.stderr)
            );
        }
        let (args, out) = tries.pop().expect("one try at least");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let v = json_of(&out, &args);
        assert!(u64_at(&v, "/end/sum_received/bytes") > 0, "{v}");

        // Stock `iperf3 -c` against the Windows `iperf3 -s`.
        let port = free_port();
        let p = port.to_string();
        let _server =
            windows_server_listening(spawn_windows(&["iperf3", "-s", "-1", "-p", &p]), port);
        let out = Running::spawn(
            Path::new("iperf3"),
            &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"],
        )
        .wait(Duration::from_secs(60));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stock iperf3: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        assert!(u64_at(&v, "/end/sum_received/bytes") > 0, "{v}");
    }
    if have("iperf") {
        // The Windows iperf 2 client against stock `iperf -s`.
        let port = free_port();
        let p = port.to_string();
        let _stock = Running::spawn(Path::new("iperf"), &["-s", "-p", &p]);
        assert!(wait_listening(port, Duration::from_secs(10)));
        let out = spawn_windows(&["iperf", "-c", "127.0.0.1", "-p", &p, "-t", "2"])
            .wait(Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("bits/sec"), "an iperf 2 report: {text}");
    }
}

/// `server` once it listens on `port`. wine starts slowly on a loaded machine (a clean-clone CI
/// run saw more than 30 s while other tests ran), so it gets 90 s; if it never listens, the
/// test fails with what the server printed.
fn windows_server_listening(server: Running, port: u16) -> Running {
    if !wait_listening(port, Duration::from_secs(90)) {
        let out = server.wait(Duration::ZERO);
        panic!(
            "the Windows server never listened on {port}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    server
}
