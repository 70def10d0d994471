//! Plan files read: the matrix expanded, settings inherited, and every kind of bad plan refused
//! with its line before anything runs.

use super::*;

const FULL: &str = r#"
name = "ap-regression"
peers = ["dut:5210"]
time = "2s"
repeats = 3
expect = ["rx>=100M", "loss<=1%"]
max_drop = "10%"

[matrix]
protocol = ["tcp", "udp"]
direction = ["up", "down"]
streams = [1, 4]

[[case]]
name = "voice"
protocol = "udp"
bitrate = "1M"
len = 160
tos = "vo"
time = 5
repeats = 5
expect = ["jitter<=5ms"]
"#;

#[test]
fn a_matrix_and_a_case_expand_in_order() {
    let plan = parse("ap.toml", FULL).unwrap();
    assert_eq!(plan.name, "ap-regression");
    assert_eq!(plan.cases.len(), 9);
    assert_eq!(plan.max_drop_percent, Some(10.0));
    let first = &plan.cases[0];
    assert_eq!(first.label, "tcp up 1 stream");
    assert_eq!((first.peer.as_str(), first.repeats), ("dut:5210", 3));
    assert_eq!(first.spec.total_time(), Some(Duration::from_secs(2)));
    // TCP keeps rx>=100M and leaves loss to the UDP cases.
    let texts = |c: &PlanCase| {
        c.spec
            .expect
            .iter()
            .map(|e| e.text().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(first), ["rx>=100M"]);
    let udp = plan
        .cases
        .iter()
        .find(|c| c.label == "udp down 4 streams")
        .unwrap();
    assert_eq!(udp.spec.direction, Direction::Reverse);
    assert_eq!(udp.spec.streams, 4);
    assert_eq!(texts(udp), ["rx>=100M", "loss<=1%"]);
    let voice = plan.cases.last().unwrap();
    assert_eq!(voice.label, "voice");
    assert_eq!(
        (voice.spec.tos, voice.spec.len, voice.repeats),
        (Some(0xc0), 160, 5)
    );
    assert_eq!(texts(voice), ["jitter<=5ms"], "its own replace the top's");
    assert_eq!(
        crate::plan::plan_time(&plan.cases),
        Duration::from_secs(8 * 3 * 3 + 5 * 6)
    );
}

#[test]
fn several_peers_multiply_the_cases() {
    let plan = parse(
        "p.toml",
        "peers = [\"a\", \"b\"]\ntime = 1\n[matrix]\nprotocol = [\"tcp\"]\n",
    )
    .unwrap();
    let labels: Vec<&str> = plan.cases.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["tcp up → a", "tcp up → b"]);
    assert_eq!(plan.name, "p");
}

#[test]
fn bad_plans_are_refused_with_their_line() {
    for (text, line, needle) in [
        (
            "peers = [\"a\"]\ncolour = 3\n[matrix]\n",
            2,
            "unknown field `colour`",
        ),
        (
            "peers = [\"a\"]\n[matrix]\nprotocol = [\"tcp\"]\nspeed = [1]\n",
            4,
            "unknown field `speed`",
        ),
        ("time = 1\n[[case]]\nname = \"x\"\n", 2, "has no peer"),
        ("peers = []\n[matrix]\n", 1, "peers is empty"),
        (
            "peers = [\"a\"]\ntime = -1\n[matrix]\n",
            2,
            "positive number of seconds",
        ),
        (
            "peers = [\"a\"]\ntime = \"soon\"\n[matrix]\n",
            2,
            "positive number of seconds",
        ),
        (
            "peers = [\"a\"]\nrepeats = 0\n[matrix]\n",
            2,
            "repeats must be 1 to 20",
        ),
        ("peers = [\"a\"]\n", 1, "no cases"),
        (
            "peers = [\"a\"]\n[matrix]\nprotocol = [\"sctp\"]\n",
            2,
            "protocol 'sctp'",
        ),
        (
            "peers = [\"a\"]\n\n[[case]]\nname = \"t\"\nexpect = [\"loss<=1%\"]\n",
            3,
            "does not measure",
        ),
        (
            "peers = [\"a\"]\nexpect = [\"rx>>1\"]\n[matrix]\n",
            2,
            "not an expectation",
        ),
        (
            "peers = [\"a\"]\n[[case]]\nname = \"t\"\n[[case]]\nname = \"t\"\n",
            4,
            "two cases are named 't'",
        ),
        (
            "peers = [\"a\"]\nmax_drop = \"lots\"\n[matrix]\n",
            2,
            "max_drop",
        ),
        (
            "peers = [\"a\"]\nbaseline = \"../../etc/passwd\"\n[matrix]\n",
            2,
            "\"last\" or a kept plan run's whole id",
        ),
        (
            "peers = [\"a\"]\nbaseline = \"82ce66\"\n[matrix]\n",
            2,
            "whole id",
        ),
        ("peers = [\"a\"\n", 1, ""),
    ] {
        let err = parse("bad.toml", text).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("bad.toml:{line}: ")),
            "{text:?}: {shown}"
        );
        assert!(shown.contains(needle), "{text:?}: {shown}");
    }
}

#[test]
fn ten_thousand_cases_are_refused_before_anything_runs() {
    let streams: Vec<String> = (1..=100).map(|n| n.to_string()).collect();
    let text = format!(
        "peers = [\"a\"]\n[matrix]\nstreams = [{s}]\nlen = [{s}]\n",
        s = streams.join(",")
    );
    let err = parse("big.toml", &text).unwrap_err().to_string();
    assert!(err.contains("more than 500 test runs"), "{err}");
}

#[test]
fn a_baseline_is_last_or_a_whole_id() {
    let plan = parse("p.toml", "peers = [\"a\"]\nbaseline = \"last\"\n[matrix]\n").unwrap();
    assert_eq!(plan.baseline, Some(Baseline::Last));
    let plan = parse(
        "p.toml",
        "peers = [\"a\"]\nbaseline = \"82CE669470F5550F685E23EF12C503F8\"\n[matrix]\n",
    )
    .unwrap();
    assert_eq!(
        plan.baseline,
        Some(Baseline::Id("82ce669470f5550f685e23ef12c503f8".into()))
    );
    assert_eq!(
        parse("p.toml", "peers = [\"a\"]\n[matrix]\n")
            .unwrap()
            .baseline,
        None
    );
}
