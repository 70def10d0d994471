use std::time::Duration;

use perfpeer_tests::{
    Peer, Running, TOKEN, json_of, perfpeer_bin, perfpeer_test, result_id_from, u64_at, wait_for,
};

/// A plain HTTP/1.0 request; returns the status code and the body.
fn http(peer: &Peer, method: &str, path: &str, headers: &str, body: &str) -> (u16, String) {
    perfpeer_tests::http_request(&peer.control, method, path, headers, body)
}

#[test]
fn a_served_test_has_a_page_and_json_without_the_token() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let id = result_id_from(&stdout);
    assert_eq!(id.len(), 32);
    let (status, page) = http(&peer, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<svg") && page.contains("iperf3") && page.contains("netperf"),
        "page lacks chart or renderings"
    );
    let (status, json) = http(&peer, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["status"], "complete");
    assert!(
        v["local"]["intervals"].as_array().unwrap().len() >= 2,
        "the far end's intervals are kept"
    );
    let bytes = v["local"]["streams"][0]["bytes"].as_u64().unwrap();
    assert!(bytes > 0);
    // Unknown and malformed ids: a 404 page, not a crash.
    for bad in [
        "/r/0123456789abcdef0123456789abcdef",
        "/r/nope",
        "/r/..%2F..%2Fetc%2Fpasswd",
        "/r/0123456789abcdef0123456789abcdef.json",
    ] {
        assert_eq!(http(&peer, "GET", bad, "", "").0, 404, "{bad}");
    }
}

#[test]
fn the_token_holder_lists_turns_off_and_deletes() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-u", "-b", "2M"]);
    let id = result_id_from(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        http(&peer, "GET", "/api/results", "", "").0,
        401,
        "the list needs the token"
    );
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, list) = http(&peer, "GET", "/api/results", &auth, "");
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["origin"], "far_end");
    assert_eq!(list[0]["protocol"], "udp");
    let link = format!("/api/results/{id}/link");
    assert_eq!(
        http(&peer, "POST", &link, "", r#"{"enabled":false}"#).0,
        401
    );
    assert_eq!(
        http(
            &peer,
            "POST",
            &link,
            &format!("{auth}Content-Type: application/json\r\n"),
            r#"{"enabled":false}"#
        )
        .0,
        204
    );
    assert_eq!(
        http(&peer, "GET", &format!("/r/{id}"), "", "").0,
        404,
        "a turned-off link stops working"
    );
    assert_eq!(
        http(
            &peer,
            "POST",
            &link,
            &format!("{auth}Content-Type: application/json\r\n"),
            "not json"
        )
        .0,
        400
    );
    assert_eq!(
        http(&peer, "DELETE", &format!("/api/results/{id}"), &auth, "").0,
        204
    );
    assert_eq!(
        http(&peer, "DELETE", &format!("/api/results/{id}"), &auth, "").0,
        404
    );
}

#[test]
fn a_peer_killed_mid_test_shows_the_test_aborted_after_restart() {
    let mut peer = Peer::start(&[]);
    let client = Running::spawn(&perfpeer_bin(), &["test", &peer.control, "-t", "30"]);
    assert!(wait_for(Duration::from_secs(10), || peer
        .log()
        .contains("test begins")));
    std::thread::sleep(Duration::from_millis(2500));
    peer.kill();
    drop(client);
    let peer = peer.restart();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, list) = http(&peer, "GET", "/api/results", &auth, "");
    assert_eq!(status, 200, "{list}");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["status"], "aborted", "{list}");
    let id = list[0]["id"].as_str().unwrap();
    let (status, json) = http(&peer, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["local"]["intervals"].as_array().unwrap().len() >= 2,
        "intervals so far are kept: {v}"
    );
}

/// SIGTERM is not SIGKILL: the peer ends its running tests, keeps them (with why they ended)
/// and only then exits, instead of leaving them `running` for the next start to mark aborted.
#[test]
fn a_peer_stopped_with_sigterm_keeps_its_running_test_before_it_exits() {
    let mut peer = Peer::start(&[]);
    let client = Running::spawn(&perfpeer_bin(), &["test", &peer.control, "-t", "30"]);
    assert!(wait_for(Duration::from_secs(10), || peer
        .log()
        .contains("test begins")));
    std::thread::sleep(Duration::from_millis(1500));
    let pid = libc::pid_t::try_from(peer.pid()).unwrap();
    // SAFETY: signalling the child process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(
        wait_for(Duration::from_secs(10), || !peer.is_running()),
        "the peer exits soon after SIGTERM"
    );
    drop(client);
    // Read the store as it was left, before a restart could mark anything.
    let store = peer.dir.to_str().unwrap().to_string();
    let list = Running::spawn(&perfpeer_bin(), &["results", "--data-dir", &store, "list"])
        .wait(Duration::from_secs(20));
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let line = list
        .lines()
        .find(|l| l.contains("far_end"))
        .unwrap_or_else(|| {
            panic!("the test is in the history: {list}");
        });
    assert!(
        line.contains("failed") && !line.contains("running"),
        "ended and kept as failed, not left running: {line}"
    );
}

#[test]
fn results_cli_lists_shows_and_exports_a_self_contained_page() {
    let peer = Peer::start(&[]);
    let store = peer.dir.to_str().unwrap().to_string();
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-J"]);
    let v = json_of(&out, &["history"]);
    let bytes = u64_at(&v, "/end/sum_received/bytes");
    let run = |args: &[&str]| Running::spawn(&perfpeer_bin(), args).wait(Duration::from_secs(20));
    let list = run(&["results", "--data-dir", &store, "list"]);
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let id = list
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("empty list"))
        .to_string();
    assert!(
        list.contains("far_end") && list.contains("complete"),
        "{list}"
    );
    let show = run(&[
        "results",
        "--data-dir",
        &store,
        "show",
        &id[..8],
        "--format",
        "iperf2",
    ]);
    assert!(
        String::from_utf8_lossy(&show.stdout)
            .contains("[ ID] Interval       Transfer     Bandwidth"),
        "{:?}",
        show
    );
    let file = peer.dir.join("export.html");
    let export = run(&[
        "results",
        "--data-dir",
        &store,
        "export",
        &id,
        "--html",
        file.to_str().unwrap(),
    ]);
    assert!(export.status.success(), "{export:?}");
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.contains("<svg"));
    assert!(
        !html.contains("src=") && !html.contains("href='http"),
        "nothing is fetched"
    );
    // The embedded result carries the same byte count the client saw.
    let embedded = html
        .split("<script type='application/json' id='perfpeer-result'>")
        .nth(1)
        .and_then(|r| r.split("</script>").next())
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&embedded.replace("<\\/", "</")).unwrap();
    assert_eq!(stored["local"]["streams"][0]["bytes"].as_u64(), Some(bytes));
    let missing = run(&["results", "--data-dir", &store, "show", "ffff"]);
    assert!(
        !missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("no result")
    );
}

/// Notes on a kept result: written by the token holder (API and `perfpeer results note`),
/// bounded, escaped, and shown in the list, on `/r/<id>` and by `perfpeer results list`.
#[test]
fn the_token_holder_writes_notes_that_the_list_and_the_page_show() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "1", "-u", "-b", "2M"]);
    let id = result_id_from(&String::from_utf8_lossy(&out.stdout));
    let path = format!("/api/results/{id}/notes");
    let auth = format!("Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n");
    let notes = r#"{"text":"fw 1.2 <script>x</script>","tags":["ch36","lab-board"]}"#;
    let json = "Content-Type: application/json\r\n";
    assert_eq!(
        http(&peer, "PUT", &path, json, notes).0,
        401,
        "needs the token"
    );
    for (bad, why) in [
        (r#"{"text":"","tags":["two words"]}"#, "tag"),
        (r#"{"text":"a\u0007b","tags":[]}"#, "control character"),
        (
            r#"{"text":"","tags":["a","b","c","d","e","f","g","h","i"]}"#,
            "at most 8",
        ),
    ] {
        let (status, body) = http(&peer, "PUT", &path, &auth, bad);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains(why), "{bad}: {body}");
    }
    let huge = format!(r#"{{"text":"{}","tags":[]}}"#, "x".repeat(20_000));
    assert_eq!(
        http(&peer, "PUT", &path, &auth, &huge).0,
        413,
        "a bounded body"
    );
    let unknown = "/api/results/0123456789abcdef0123456789abcdef/notes";
    assert_eq!(http(&peer, "PUT", unknown, &auth, notes).0, 404);
    assert_eq!(http(&peer, "PUT", &path, &auth, notes).0, 204);
    let (_, list) = http(&peer, "GET", "/api/results", &auth, "");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["notes"]["tags"][0], "ch36", "{list}");
    let (status, page) = http(&peer, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200);
    assert!(
        page.contains("<span class='tag'>lab-board</span>")
            && page.contains("fw 1.2 &lt;script&gt;x&lt;/script&gt;")
            && !page.contains("<script>x"),
        "{page}"
    );
    // The command line, on the peer's own data directory.
    let dir = peer.dir.to_str().unwrap().to_string();
    let results = |args: &[&str]| {
        let mut all = vec!["results", "--data-dir", dir.as_str()];
        all.extend_from_slice(args);
        Running::spawn(&perfpeer_bin(), &all).wait(Duration::from_secs(20))
    };
    let listed = results(&["list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("[ch36 lab-board · fw 1.2"),
        "{listed:?}"
    );
    let bad = results(&["note", &id, "--tag", "no spaces please"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let cleared = results(&["note", &id[..8]]);
    assert!(cleared.status.success(), "{cleared:?}");
    let (_, list) = http(&peer, "GET", "/api/results", &auth, "");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert!(list[0].get("notes").is_none(), "cleared: {list}");
}

/// The far end's history as JSON lines (with the token).
fn far_history(peer: &Peer) -> Vec<serde_json::Value> {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, list) = http(peer, "GET", "/api/results", &auth, "");
    assert_eq!(status, 200, "{list}");
    serde_json::from_str::<serde_json::Value>(&list)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_far_end_keeps_a_sweep_and_a_latency_run_as_one_result_each() {
    let peer = Peer::start(&[]);
    // A sweep, then a latency run (paced, so its load does not take both cores from the
    // tests beside it).
    for run in [
        "--sweep-len 64,...,256 -t 1 -b 5M",
        "--latency-under-load --idle-time 1 -t 1 -P 1 -b 100M",
    ] {
        let mut args = vec![peer.control.as_str()];
        args.extend(run.split(' '));
        let out = perfpeer_test(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{run}: {err}");
    }
    // Kept before the client's last test ended: one row for each run, of its kind.
    let list = far_history(&peer);
    let rows: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default();
            (text("kind"), text("origin"), text("role"))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("latency", "far_end", "server"),
            ("sweep", "far_end", "server")
        ],
        "{list:#?}"
    );
    for line in &list {
        let peer_name = line["peer"].as_str().unwrap();
        assert!(
            peer_name.ends_with("(127.0.0.1)"),
            "named as its client: {peer_name}"
        );
    }
    let (latency, sweep) = (
        list[0]["id"].as_str().unwrap(),
        list[1]["id"].as_str().unwrap(),
    );
    // The sweep's page and JSON: a row per size, as this peer received it.
    let (status, json) = http(&peer, "GET", &format!("/r/{sweep}.json"), "", "");
    assert_eq!(status, 200, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let lens: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["len"].as_u64().unwrap())
        .collect();
    assert_eq!(lens, [64, 128, 256], "{v}");
    assert!(
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p.get("error").is_none() && u64_at(p, "/packets") > 0),
        "{v}"
    );
    let (status, page) = http(&peer, "GET", &format!("/r/{sweep}"), "", "");
    assert_eq!(status, 200);
    assert!(page.contains("this peer was its far end"), "{page}");
    // The latency run's: its phases' load, and no probe figures (the client times the probe).
    let (status, json) = http(&peer, "GET", &format!("/r/{latency}.json"), "", "");
    assert_eq!(status, 200, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let phases: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["idle", "download", "upload", "both"], "{v}");
    assert_eq!(v["probes"].as_array().map(Vec::len), Some(0));
    assert!(v["phases"][1]["down_bits_per_second"].as_f64().unwrap() > 0.0);
    assert!(v["phases"][2]["up_bits_per_second"].as_f64().unwrap() > 0.0);
    assert!(
        v["phases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["rtt"].is_null())
    );
    let (status, page) = http(&peer, "GET", &format!("/r/{latency}"), "", "");
    assert_eq!(status, 200);
    assert!(
        page.contains("round trips are measured by the client"),
        "{page}"
    );
}

#[tokio::test]
async fn an_older_clients_tests_are_kept_one_by_one() {
    use super::hardening_history::{Stranger, host};
    let peer = Peer::start(&[]);
    // An older client names no run in its `open`: each of its tests is a result of its own.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let stranger = Stranger::connect([127, 0, 0, 1], &peer.control).await;
        ids.push(stranger.one_test(host("old".into())).await);
    }
    let list = far_history(&peer);
    assert_eq!(list.len(), 2, "{list:#?}");
    for line in &list {
        assert_eq!(
            (line["kind"].as_str(), line["origin"].as_str()),
            (Some("test"), Some("far_end"))
        );
        assert!(ids.iter().any(|id| line["id"] == id.as_str()));
    }
    for id in &ids {
        assert_eq!(http(&peer, "GET", &format!("/r/{id}.json"), "", "").0, 200);
    }
}
