//! A lab's nightly run on the machine's own scheduler (docs/lab/): the systemd service and
//! timer (and the peer's own unit) pass `systemd-analyze verify` with the binary where they
//! install it; the example plan they run reads with `perfpeer plan check`; `--baseline last`
//! judges a run against the newest complete run of the same plan, and the first run of a plan
//! says it becomes the baseline.

use std::path::{Path, PathBuf};
use std::process::Command;

use perfpeer_tests::{Peer, perfpeer_bin, perfpeer_with, temp_dir};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

#[test]
fn the_lab_units_pass_systemd_analyze_verify() {
    let dir = temp_dir("units");
    let bin = perfpeer_bin();
    let units = [
        "docs/lab/perfpeer-nightly.service",
        "docs/lab/perfpeer-nightly.timer",
        "docs/perfpeer.service",
    ];
    let mut paths = Vec::new();
    for unit in units {
        let text = std::fs::read_to_string(repo().join(unit)).expect(unit);
        assert!(text.contains("/usr/local/bin/perfpeer") || unit.ends_with(".timer"));
        // verify checks that ExecStart's program exists: the one just built stands in for the
        // installed one.
        let text = text.replace("/usr/local/bin/perfpeer", bin.to_str().expect("utf-8 path"));
        let path = dir.join(Path::new(unit).file_name().expect("a file"));
        std::fs::write(&path, text).expect("unit copy");
        paths.push(path);
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .output()
        .expect("systemd-analyze (package systemd; scripts/setup.sh installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Warnings (an unknown key, a bad value) do not fail verify: none may name these units.
    let ours: Vec<&str> = stderr.lines().filter(|l| l.contains("perfpeer")).collect();
    assert!(ours.is_empty(), "{ours:#?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_nightly_plan_reads_and_a_wrong_one_is_refused_by_plan_check() {
    let plan = repo().join("docs/lab/nightly.toml");
    let out = perfpeer_with(Vec::new(), &["plan", "check", plan.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("plan lab-nightly, 9 cases, 27 test runs"),
        "{stdout}"
    );
    let dir = temp_dir("check");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "peers = [\"a\"]\ntime = -2\n[[case]]\nname = \"x\"\n").unwrap();
    let out = perfpeer_with(Vec::new(), &["plan", "check", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.toml:2:"), "{stderr}");
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn baseline_last_judges_a_run_against_the_newest_complete_run_of_its_plan() {
    let peer = Peer::start(&[]);
    let dir = temp_dir("nightly");
    let plan = perfpeer_tests::nightly_plan(&dir, &peer.control, 1);
    let data = dir.join("data");
    let run = || {
        let out = perfpeer_with(
            Vec::new(),
            &[
                "plan",
                "run",
                plan.to_str().unwrap(),
                "--data-dir",
                data.to_str().unwrap(),
                "--baseline",
                "last",
                "-J",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let json: Value = serde_json::from_slice(&out.stdout).expect("-J");
        (json, stderr)
    };
    let (first, stderr) = run();
    assert!(
        stderr.contains("no complete run of plan nightly is kept yet"),
        "{stderr}"
    );
    assert!(first.get("comparison").is_none(), "{first}");
    let first_id = first["result_id"].as_str().expect("kept").to_string();
    let (second, _) = run();
    assert_eq!(
        second["comparison"]["baseline_id"].as_str(),
        Some(first_id.as_str()),
        "{second}"
    );
    // The third is judged against the second, not the first.
    let (third, _) = run();
    assert_eq!(
        third["comparison"]["baseline_id"].as_str(),
        second["result_id"].as_str(),
        "{third}"
    );
    // Without a store there is nothing to find: a usage error before anything runs.
    let out = perfpeer_with(
        Vec::new(),
        &[
            "plan",
            "run",
            plan.to_str().unwrap(),
            "--no-store",
            "--baseline",
            "last",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}
