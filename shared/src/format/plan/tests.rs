//! The plan's table, comparison and page from a hand-made plan run.

use super::*;
use crate::plan::{CaseRun, Comparison, PlanCase};
use crate::spec::{Protocol, TestSpec};
use crate::verdict::{Expectation, Metric};

fn case(label: &str, expect: &str, rx: &[f64]) -> CaseResult {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.expect = Expectation::parse_list(expect).unwrap();
    CaseResult::build(
        PlanCase {
            label: label.into(),
            peer: "pc".into(),
            spec,
            repeats: 3,
        },
        rx.iter()
            .map(|&v| CaseRun {
                result_id: Some(format!("id{v}")),
                figures: vec![(Metric::Rx, v)],
                error: None,
            })
            .collect(),
    )
}

fn plan(cases: Vec<CaseResult>) -> PlanResult {
    PlanResult {
        name: "nightly".into(),
        started_unix_ms: 0,
        ended_unix_ms: 0,
        tags: vec!["fw=1.2.3".into()],
        planned_cases: 3,
        cases,
        status: PlanStatus::Stopped,
        comparison: None,
        max_drop_percent: None,
    }
}

#[test]
fn the_table_has_a_row_per_case_and_the_verdict() {
    let mut p = plan(vec![
        case("tcp up", "rx>=100M", &[200e6, 210e6, 190e6]),
        case("tcp down", "rx>=300M", &[200e6, 210e6, 190e6]),
    ]);
    let shown = super::text(&p);
    let text = &shown;
    assert!(text.starts_with("Plan nightly [fw=1.2.3]\n"), "{text}");
    assert!(text.contains("tcp up"), "{text}");
    assert!(text.contains("200 Mbit/s"), "{text}");
    assert!(text.contains("3/3  PASS"), "{text}");
    assert!(text.contains("FAIL: rx>=300M"), "{text}");
    assert!(text.contains("Stopped after 2 of 3 cases."), "{text}");
    assert!(
        text.contains("Plan verdict: FAIL (1 case(s) missed"),
        "{text}"
    );
    let before = plan(vec![case("tcp up", "", &[250e6, 251e6, 252e6])]);
    p.comparison = Some(Comparison::of(&before, &p, 5.0));
    let text = super::text(&p);
    assert!(text.contains("-20.3%  worse"), "{text}");
    assert!(
        text.contains("tcp down") && text.contains("cannot say"),
        "{text}"
    );
}

#[test]
fn the_page_shows_the_badge_the_links_and_the_chart() {
    let mut p = plan(vec![case("tcp <up>", "rx>=300M", &[200e6, 210e6, 190e6])]);
    let before = plan(vec![case("tcp <up>", "", &[250e6, 251e6, 252e6])]);
    p.comparison = Some(Comparison::of(&before, &p, 5.0));
    let kept = crate::history::KeptPlan {
        id: "abc".into(),
        created_ms: 0,
        peer: "pc".into(),
        result: p,
        link_enabled: true,
        origin: crate::history::Origin::Cli,
        notes: Default::default(),
    };
    let page = crate::format::html::plan_page(&kept);
    assert!(page.contains("class='verdict fail'><b>FAIL</b>"), "{page}");
    assert!(page.contains("<a href='/r/id200000000'>1</a>"));
    assert!(page.contains("<td>tcp &lt;up&gt;</td>"));
    assert!(page.contains("class='chart plan-chart'"));
    assert!(page.contains("id='perfpeer-plan'"));
}
