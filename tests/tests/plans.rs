//! `--expect` and `perfpeer plan` as a regression run uses them: on two hosts joined by a
//! shaped link (tbf), an expectation above the link's rate fails with exit 3 and says by how
//! much, one below passes; a plan runs to its table, is kept, listed and served; a second run
//! on a link 30 % slower is "worse" case by case against the first and one on the same link
//! "same"; bad plan files are refused before anything runs; Ctrl-C keeps the cases that ran.

use std::time::Duration;

use perfpeer_tests::netns::{self, ADDR_B, TwoHosts};
use perfpeer_tests::{Peer, perfpeer_command, perfpeer_with};

/// Two hosts on a 20 Mbit/s link (root and iproute2 needed: a skip, or a failure in CI).
fn hosts(tag: &str) -> Option<TwoHosts> {
    netns::two_hosts_or_skip(tag, "20mbit")
}

fn serve_b(hosts: &TwoHosts) -> Peer {
    Peer::start_with(
        hosts.prefix_b(),
        &format!("{ADDR_B}:5210"),
        "5211",
        &["--open"],
    )
}

/// Both ends' egress shaped to `rate` (the link's own tbf replaced).
fn reshape(hosts: &TwoHosts, rate: &str) {
    for (ns, dev) in [(&hosts.ns_a, &hosts.dev_a), (&hosts.ns_b, &hosts.dev_b)] {
        netns::shape(ns, dev, &[rate, "burst", "32kb", "latency", "300ms"]);
    }
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_expectation_above_the_link_fails_with_exit_3_and_one_below_passes() {
    let Some(hosts) = hosts("x") else { return };
    let _peer = serve_b(&hosts);
    let a = || hosts.prefix_a();
    // 20 Mbit/s link: 30M cannot be met.
    let out = perfpeer_with(a(), &["test", ADDR_B, "-t", "2", "--expect", "rx>=30M"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Verdict: "))
        .expect(&stdout);
    assert!(line.starts_with("Verdict: FAIL: rx>=30M: "), "{line}");
    assert!(line.contains("% short"), "{line}");
    // Below the link, with a second expectation on the same test: exit 0, every check shown.
    let out = perfpeer_with(
        a(),
        &[
            "test",
            ADDR_B,
            "-t",
            "2",
            "--expect",
            "rx>=10M",
            "--expect",
            "retransmits<=100000",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("Verdict: PASS: rx>=10M: "), "{stdout}");
    // UDP over the link: loss and jitter judged, in -J beside the stock keys.
    let out = perfpeer_with(
        a(),
        &[
            "test",
            ADDR_B,
            "-u",
            "-b",
            "10M",
            "-t",
            "2",
            "-J",
            "--expect",
            "loss<=1%,jitter<=20ms,rx>=50M",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"]["outcome"], "fail", "{}", v["verdict"]);
    let checks = v["verdict"]["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0]["outcome"], "pass");
    assert_eq!(checks[2]["expect"], "rx>=50M");
    assert!(
        checks[2]["miss_percent"].as_f64().unwrap() > 50.0,
        "{}",
        checks[2]
    );
    assert!(
        v["end"]["sum_received"]["bits_per_second"].is_f64(),
        "stock keys stay"
    );
    // A figure the test does not measure, or a wrong one: usage, nothing runs.
    for bad in ["loss<=1%", "rx<=5M", "speed>=1"] {
        let out = perfpeer_with(a(), &["test", ADDR_B, "-t", "1", "--expect", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out).1);
    }
}

const PLAN: &str = r#"
name = "link-regression"
peers = ["198.18.0.2"]
time = "1s"
repeats = 3
expect = ["rx>=1M"]

[matrix]
protocol = ["tcp"]
direction = ["up", "down"]
streams = [1, 2]
len = ["64K", "128K"]
"#;

fn write_plan(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write plan");
    path.display().to_string()
}

/// A folder of plan files for one test (tests run in parallel: each removes its own).
fn plan_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("perfpeer-plans-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("plan dir");
    dir
}

/// The kept plan run's id from `Kept as <id>: …`.
fn kept_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("Kept as "))
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("no kept id in: {stdout}"))
        .to_string()
}

#[test]
fn a_plan_runs_to_its_table_and_a_slower_link_is_judged_worse() {
    let Some(hosts) = hosts("p") else { return };
    let peer = serve_b(&hosts);
    assert_eq!(ADDR_B, "198.18.0.2", "the plan names B by its address");
    let dir = plan_dir("run");
    let plan = write_plan(&dir, "link.toml", PLAN);
    let a = || hosts.prefix_a();
    let run = |extra: &[&str]| {
        let mut args = vec!["plan", "run", plan.as_str(), "--tag", "fw=1.0"];
        args.extend_from_slice(extra);
        perfpeer_with(a(), &args)
    };
    // The first run: 8 cases of 3 repeats, each row as its case ends, all passing.
    let out = run(&[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("case 8 of 8: tcp down 2 streams len 128K (repeat 3 of 3)"),
        "{stderr}"
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("tcp ")).collect();
    assert_eq!(rows.len(), 8, "{stdout}");
    assert!(rows.iter().all(|r| r.contains("3/3  PASS")), "{stdout}");
    assert!(stdout.contains("Plan verdict: PASS"), "{stdout}");
    let first = kept_id(&stdout);
    // Kept and listed (a plan row with its verdict), its tests tagged with the run.
    let list = text(&perfpeer_with(a(), &["results", "list"])).0;
    let plan_row = list.lines().find(|l| l.starts_with(&first)).expect(&list);
    assert!(
        plan_row.contains(" plan ") && plan_row.contains("PASS"),
        "{plan_row}"
    );
    assert!(list.contains("[plan:link-regression fw=1.0]"), "{list}");
    let shown = text(&perfpeer_with(
        a(),
        &["results", "show", &first, "--format", "json"],
    ))
    .0;
    let v: serde_json::Value = serde_json::from_str(&shown).expect("plan json");
    assert_eq!(v["cases"].as_array().map(Vec::len), Some(8));
    assert_eq!(v["tags"][0], "fw=1.0");

    // The same link again, against the first: every case "same" (or too noisy to call worse).
    let out = run(&["--baseline", &first]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("Against the baseline {first}:")),
        "{stdout}"
    );
    let judged = |s: &str, word: &str| {
        s.lines()
            .filter(|l| l.starts_with("tcp ") && l.ends_with(word))
            .count()
    };
    assert_eq!(judged(&stdout, "worse"), 0, "{stdout}");
    let second = kept_id(&stdout);

    // 30 % slower: each case worse, and with an allowed drop of 10 % the plan fails (exit 3).
    reshape(&hosts, "14mbit");
    let slow_plan = write_plan(
        &dir,
        "slow.toml",
        &PLAN.replace("[matrix]", "max_drop = \"10%\"\n\n[matrix]"),
    );
    let out = perfpeer_with(a(), &["plan", "run", &slow_plan, "--baseline", &first]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        judged(&stdout, "worse (beyond the allowed drop)"),
        8,
        "{stdout}"
    );
    assert!(stdout.contains("8 worse, 0 better, 0 same"), "{stdout}");
    assert!(
        stdout.contains("Plan verdict: FAIL (8 case(s) worse than the baseline by more than 10%)"),
        "{stdout}"
    );
    let slow = kept_id(&stdout);
    // `plan compare` says the same of the kept runs, and exits 3 for a worse case.
    let out = perfpeer_with(a(), &["plan", "compare", &second, &slow]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out).0.contains("8 worse"), "{}", text(&out).0);
    let out = perfpeer_with(a(), &["plan", "compare", &first, &second, "-J"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).0);
    // Its page (the offline file): the table, the comparison as a table and a chart.
    let html = dir.join("slow.html");
    let html_path = html.display().to_string();
    let out = perfpeer_with(a(), &["results", "export", &slow, "--html", &html_path]);
    assert!(out.status.success(), "{}", text(&out).1);
    let page = std::fs::read_to_string(&html).expect("page");
    assert!(page.contains("class='verdict fail'"), "{page}");
    assert!(page.contains("Against the baseline") && page.contains("class='chart plan-chart'"));
    drop(peer);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_plans_are_refused_before_anything_runs() {
    let dir = plan_dir("bad");
    let peer = Peer::start(&[]);
    let big: String = (1..=100)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for (name, text, needle) in [
        (
            "unknown.toml",
            format!("peers = [\"{}\"]\nspeed = 3\n[matrix]\n", peer.control),
            ":2: unknown field `speed`",
        ),
        (
            "nopeer.toml",
            "time = 1\n[[case]]\nname = \"t\"\n".to_string(),
            ":2: case 't' has no peer",
        ),
        (
            "huge.toml",
            format!(
                "peers = [\"{}\"]\n[matrix]\nstreams = [{big}]\nlen = [{big}]\n",
                peer.control
            ),
            "more than 500 test runs",
        ),
        (
            "negative.toml",
            format!("peers = [\"{}\"]\ntime = -2\n[matrix]\n", peer.control),
            ":2: time -2",
        ),
    ] {
        let path = write_plan(&dir, name, &text);
        let out = perfpeer_with(Vec::new(), &["plan", "run", &path]);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{name}: {stdout}{stderr}");
        assert!(
            stderr.contains(path.as_str()) && stderr.contains(needle),
            "{name}: {stderr}"
        );
        assert!(
            !stderr.contains("case 1 of"),
            "{name}: nothing ran: {stderr}"
        );
    }
    // Nothing reached the peer.
    assert!(!peer.log().contains("test "), "{}", peer.log());
    let missing = perfpeer_with(Vec::new(), &["plan", "run", "/nonexistent/plan.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_stops_after_the_running_case_and_keeps_what_ran() {
    let peer = Peer::start(&[]);
    let dir = plan_dir("stop");
    let plan = write_plan(
        &dir,
        "long.toml",
        &format!(
            "peers = [\"{}\"]\ntime = 2\n[matrix]\nstreams = [1, 2, 3, 4, 5, 6]\n",
            peer.control
        ),
    );
    let data_dir = peer.dir.display().to_string();
    let child = perfpeer_command(
        Vec::new(),
        &[
            "plan",
            "run",
            &plan,
            "--tag",
            "stop",
            "--data-dir",
            &data_dir,
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn");
    // In the middle of the second case.
    std::thread::sleep(Duration::from_millis(3500));
    // SAFETY: signals the child this test started.
    unsafe {
        libc::kill(child.id().cast_signed(), libc::SIGINT);
    }
    let out = child.wait_with_output().expect("wait");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("stopping after this case"), "{stderr}");
    assert!(stdout.contains("Stopped after 2 of 6 cases."), "{stdout}");
    let id = kept_id(&stdout);
    let shown = text(&perfpeer_with(
        Vec::new(),
        &[
            "results",
            "show",
            &id,
            "--format",
            "json",
            "--data-dir",
            &data_dir,
        ],
    ))
    .0;
    let v: serde_json::Value = serde_json::from_str(&shown).expect("plan json");
    assert_eq!(v["status"], "stopped");
    assert_eq!(v["cases"].as_array().map(Vec::len), Some(2));
    assert!(v["cases"][1]["runs"][0]["result_id"].is_string(), "{v}");
    // The peer that shares the data directory serves the kept run's page and its JSON.
    let (status, page) =
        perfpeer_tests::http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Stopped after 2 of 6 cases."), "{page}");
    let _ = std::fs::remove_dir_all(&dir);
}
