//! Expectations read from their text and judged against results built by hand.

use super::*;
use crate::report::{PeerRole, StreamRole, TestStatus, UdpRxFinal};
use crate::spec::{Protocol, TestSpec};

fn result_with(spec: TestSpec, rx_bytes: u64, udp: Option<UdpRxFinal>) -> TestResult {
    let mut client = crate::report::service_demand_tests::side(PeerRole::Client, vec![]);
    let mut server = crate::report::service_demand_tests::side(PeerRole::Server, vec![]);
    let mut sent = crate::report::service_demand_tests::stream(1, StreamRole::Sender, rx_bytes);
    let mut got = crate::report::service_demand_tests::stream(1, StreamRole::Receiver, rx_bytes);
    got.udp_rx = udp;
    sent.packets = Some(1000);
    client.streams.push(sent);
    server.streams.push(got);
    crate::report::service_demand_tests::result(spec, client, server)
}

#[test]
fn expectations_read_in_their_units() {
    let e = Expectation::parse("rx >= 300M").unwrap();
    assert_eq!(
        (e.metric, e.bound, e.threshold),
        (Metric::Rx, Bound::AtLeast, 300e6)
    );
    assert_eq!(e.text(), "rx>=300M");
    assert_eq!(Expectation::parse("loss<=0.5%").unwrap().threshold, 0.5);
    assert_eq!(Expectation::parse("jitter<=500us").unwrap().threshold, 0.5);
    assert_eq!(Expectation::parse("p99<=0.04s").unwrap().threshold, 40.0);
    assert_eq!(Expectation::parse("added<=20").unwrap().threshold, 20.0);
    assert_eq!(Expectation::parse("rr>=5k").unwrap().threshold, 5000.0);
    assert_eq!(
        Expectation::parse("RETRANSMITS<=10").unwrap().metric,
        Metric::Retransmits
    );
    let list = Expectation::parse_list("rx>=1G, loss<=1%,").unwrap();
    assert_eq!(list.len(), 2);
    // Round trip through serde keeps the text.
    let json = serde_json::to_string(&list).unwrap();
    assert_eq!(json, r#"["rx>=1G","loss<=1%"]"#);
    assert_eq!(
        serde_json::from_str::<Vec<Expectation>>(&json).unwrap(),
        list
    );
}

#[test]
fn bad_expectations_say_why() {
    for (text, needle) in [
        ("rx=300M", "not an expectation"),
        ("speed>=3", "not a figure"),
        ("rx>=fast", "a rate such as"),
        ("loss<=-1%", "a share"),
        ("retransmits<=1.5", "whole number"),
        ("rx<=300M", "a higher rx is better"),
        ("loss>=1%", "a lower loss is better"),
        ("jitter<=NaN", "a time"),
        ("rx>=", "a rate"),
    ] {
        let err = Expectation::parse(text).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
    assert!(serde_json::from_str::<Expectation>(r#""rx>>3""#).is_err());
}

#[test]
fn a_test_spec_refuses_figures_it_does_not_measure() {
    let mut tcp = TestSpec::new(Protocol::Tcp);
    tcp.expect = Expectation::parse_list("loss<=1%").unwrap();
    assert!(tcp.validate().unwrap_err().to_string().contains("loss<=1%"));
    tcp.expect = Expectation::parse_list("rx>=1M,retransmits<=0").unwrap();
    tcp.validate().unwrap();
    tcp.expect = vec![Expectation::parse("rx>=1").unwrap(); MAX_EXPECTATIONS + 1];
    assert!(tcp.validate().is_err());
    let mut udp = TestSpec::new(Protocol::Udp);
    udp.expect = Expectation::parse_list("retransmits<=0").unwrap();
    assert!(udp.validate().is_err());
    udp.expect = Expectation::parse_list("loss<=1%,jitter<=2ms,tx>=1M").unwrap();
    udp.validate().unwrap();
    udp.expect = Expectation::parse_list("p99<=10ms").unwrap();
    assert!(
        udp.validate().is_err(),
        "p99 is a latency-under-load figure"
    );
}

#[test]
fn a_pass_a_fail_by_how_much_and_an_early_end() {
    let mut spec = TestSpec::new(Protocol::Tcp);
    // 2 s streams: 250 MB is 1000 Mbit/s.
    spec.expect = Expectation::parse_list("rx>=800M").unwrap();
    let r = result_with(spec.clone(), 250_000_000, None);
    let v = Verdict::of_test(&r).unwrap();
    assert_eq!(v.outcome, Outcome::Pass, "{v:?}");
    assert_eq!(v.checks[0].measured, Some(1e9));

    spec.expect = Expectation::parse_list("rx>=800M,tx>=1250M").unwrap();
    let v = Verdict::of_test(&result_with(spec.clone(), 250_000_000, None)).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    let failed: Vec<&Check> = v.failed().collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].expect.metric, Metric::Tx);
    assert!((failed[0].miss_percent.unwrap() - 20.0).abs() < 1e-9);
    assert!(v.line().starts_with("FAIL: tx>=1250M"), "{}", v.line());
    assert!(v.line().contains("20.0 % short"), "{}", v.line());
    // What a page shows of it: the failed check alone tells a fail; its figure and miss.
    let telling: Vec<&Check> = v.telling().collect();
    assert_eq!(telling, failed);
    assert_eq!(
        (telling[0].measured_words(), telling[0].miss_words()),
        (Some("1.00 Gbit/s".into()), Some("20.0 % short".into()))
    );
    assert_eq!(v.checks[0].miss_words(), None, "the pass missed nothing");
    assert_eq!(
        (v.outcome.name(), v.checks[0].outcome.name()),
        ("fail", "pass")
    );

    let mut early = result_with(spec.clone(), 250_000_000, None);
    early.status = TestStatus::Partial {
        reason: "the far end stopped answering".into(),
    };
    let v = Verdict::of_test(&early).unwrap();
    assert_eq!(v.outcome, Outcome::Unjudged);
    assert!(v.reason.unwrap().contains("stopped answering"));

    spec.expect.clear();
    assert_eq!(Verdict::of_test(&result_with(spec, 1, None)), None);
}

#[test]
fn loss_and_jitter_of_udp() {
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.expect = Expectation::parse_list("loss<=1%,jitter<=2ms").unwrap();
    let rx = UdpRxFinal {
        received: 970,
        sender_packets: Some(1000),
        lost: 30,
        out_of_order: 0,
        duplicates: 0,
        jitter_ms: 0.5,
        max_gap_ms: None,
        one_way: None,
        frames: None,
    };
    let v = Verdict::of_test(&result_with(spec, 1_000_000, Some(rx))).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.checks[0].measured, Some(3.0));
    assert_eq!(v.checks[1].outcome, Outcome::Pass);
    assert!((v.checks[0].miss_percent.unwrap() - 200.0).abs() < 1e-9);
}

#[test]
fn a_figure_missing_from_the_result_is_not_judged() {
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.expect = Expectation::parse_list("loss<=1%").unwrap();
    // No receiver figures arrived (a stock far end that sent none).
    let v = Verdict::of_test(&result_with(spec, 1_000, None)).unwrap();
    assert_eq!(v.outcome, Outcome::Unjudged);
    assert!(v.line().contains("not measured"), "{}", v.line());
}
