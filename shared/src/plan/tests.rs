//! The plan's statistics by hand: medians, the rank test's exact p-values, judgements of
//! change, and the plan's verdict.

use super::*;
use crate::spec::Protocol;

#[test]
fn spread_is_median_and_range() {
    let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
    assert_eq!((s.count, s.median, s.min, s.max), (3, 2.0, 1.0, 3.0));
    assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().median, 2.5);
    assert_eq!(Spread::of(&[]), None);
    assert_eq!(Spread::of(&[f64::NAN]), None);
    assert!(
        (Spread::of(&[90.0, 100.0, 110.0])
            .unwrap()
            .range_percent()
            .unwrap()
            - 20.0)
            .abs()
            < 1e-9
    );
}

#[test]
fn the_rank_test_counts_arrangements_exactly() {
    // 3 against 3, wholly apart: 1 arrangement of C(6,3) = 20.
    assert!((mann_whitney_less(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.05).abs() < 1e-12);
    // The other way it is certain.
    assert!((mann_whitney_less(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]) - 1.0).abs() < 1e-12);
    // One swap (U = 8 of 9): 2 arrangements of 20.
    assert!((mann_whitney_less(&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]) - 0.10).abs() < 1e-12);
    // 5 against 5 apart: 1 / C(10,5) = 1/252.
    let p = mann_whitney_less(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
    assert!((p - 1.0 / 252.0).abs() < 1e-12);
    assert_eq!(mann_whitney_less(&[], &[1.0]), 1.0);
}

#[test]
fn a_small_wobble_is_same_and_a_real_drop_is_worse() {
    let before = [940.0, 950.0, 945.0];
    // 3 % lower and apart: steady, but under the least change that counts.
    let c = judge_change("tcp", Metric::Rx, &before, &[912.0, 915.0, 918.0], 5.0);
    assert_eq!(c.judgement, Judgement::Same);
    // 20 % lower: worse.
    let c = judge_change("tcp", Metric::Rx, &before, &[750.0, 760.0, 755.0], 5.0);
    assert_eq!(c.judgement, Judgement::Worse, "{c:?}");
    assert!((c.change_percent.unwrap() + 20.105_820_105_820_1).abs() < 1e-6);
    // 20 % higher: better; for loss, lower is better.
    let c = judge_change("tcp", Metric::Rx, &before, &[1130.0, 1140.0, 1135.0], 5.0);
    assert_eq!(c.judgement, Judgement::Better);
    let c = judge_change("udp", Metric::Loss, &[1.0, 1.1, 1.2], &[5.0, 5.1, 5.2], 5.0);
    assert_eq!(c.judgement, Judgement::Worse);
    // A big move within noisy repeats: same.
    let c = judge_change(
        "x",
        Metric::Rx,
        &[100.0, 300.0, 200.0],
        &[150.0, 120.0, 400.0],
        5.0,
    );
    assert_eq!(c.judgement, Judgement::Same);
    // One sample a side is never a verdict.
    let c = judge_change("x", Metric::Rx, &[100.0], &[50.0], 5.0);
    assert_eq!(c.judgement, Judgement::Unjudged);
    let c = judge_change("x", Metric::Rx, &[], &[50.0, 51.0, 52.0], 5.0);
    assert_eq!(c.judgement, Judgement::Unjudged);
}

fn case(label: &str, expect: &str) -> PlanCase {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.expect = crate::verdict::Expectation::parse_list(expect).unwrap();
    PlanCase {
        label: label.into(),
        peer: "pc".into(),
        spec,
        repeats: 3,
    }
}

fn run(rx: f64) -> CaseRun {
    CaseRun {
        result_id: None,
        figures: vec![(Metric::Rx, rx)],
        error: None,
    }
}

fn plan(cases: Vec<CaseResult>) -> PlanResult {
    PlanResult {
        name: "p".into(),
        started_unix_ms: 0,
        ended_unix_ms: 0,
        tags: vec![],
        planned_cases: u32::try_from(cases.len()).unwrap(),
        cases,
        status: PlanStatus::Complete,
        comparison: None,
        max_drop_percent: None,
    }
}

#[test]
fn a_case_is_judged_on_the_median_of_its_repeats() {
    // One slow repeat does not fail a case whose median meets the expectation.
    let c = CaseResult::build(
        case("a", "rx>=100"),
        vec![run(150.0), run(50.0), run(120.0)],
    );
    assert_eq!(c.headline.unwrap().median, 120.0);
    assert_eq!(c.verdict.as_ref().unwrap().outcome, Outcome::Pass);
    let c = CaseResult::build(
        case("b", "rx>=130"),
        vec![run(150.0), run(50.0), run(120.0)],
    );
    assert_eq!(c.verdict.as_ref().unwrap().outcome, Outcome::Fail);
    // A case none of whose repeats ran cannot be judged.
    let c = CaseResult::build(case("c", "rx>=1"), vec![CaseRun::failed("refused".into())]);
    assert_eq!(c.verdict.as_ref().unwrap().outcome, Outcome::Unjudged);
    assert_eq!(c.headline, None);
}

#[test]
fn a_plan_fails_on_a_failed_case_or_a_drop_beyond_its_allowance() {
    let good = |label: &str, rx: [f64; 3]| {
        CaseResult::build(case(label, ""), rx.iter().map(|&v| run(v)).collect())
    };
    let before = plan(vec![
        good("a", [100.0, 101.0, 102.0]),
        good("b", [50.0, 51.0, 52.0]),
    ]);
    let mut after = plan(vec![
        good("a", [80.0, 81.0, 82.0]),
        good("b", [50.0, 51.0, 52.5]),
    ]);
    assert_eq!(after.outcome(), None, "nothing expected");
    after.max_drop_percent = Some(10.0);
    after.compare_with(&before, "base", DEFAULT_MIN_CHANGE_PERCENT);
    let cmp = after.comparison.as_ref().unwrap();
    assert_eq!(cmp.cases[0].judgement, Judgement::Worse);
    assert_eq!(cmp.cases[0].drop_outcome, Some(Outcome::Fail));
    assert_eq!(cmp.cases[1].judgement, Judgement::Same);
    assert_eq!(after.outcome(), Some(Outcome::Fail));
    after.max_drop_percent = Some(30.0);
    after.compare_with(&before, "base", DEFAULT_MIN_CHANGE_PERCENT);
    assert_eq!(after.outcome(), Some(Outcome::Pass));
    // A case only one run has is listed and cannot be judged.
    let fewer = plan(vec![good("a", [100.0, 101.0, 102.0])]);
    let cmp = Comparison::of(&fewer, &before, 5.0);
    assert_eq!(cmp.cases.len(), 2);
    assert_eq!(cmp.cases[1].judgement, Judgement::Unjudged);
}
