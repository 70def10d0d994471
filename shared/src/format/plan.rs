//! A plan run as text and as page parts: one row per case (median of the repeats, their
//! spread, the verdict), the comparison with a baseline (each case's change and whether it is
//! beyond the noise), and a chart of each case's two medians with their ranges. Every figure
//! comes from `crate::plan`.

use std::fmt::Write;

use crate::format::markup::escape;
use crate::plan::{CaseComparison, CaseResult, Comparison, Judgement, PlanResult, PlanStatus};
use crate::verdict::Outcome;

/// The table's head, as `row` lines up under it.
pub fn table_head() -> String {
    format!(
        "{:<34} {:>16} {:>8} {:>5}  Verdict\n",
        "Case", "Median", "Range", "Runs"
    )
}

/// One case's row: its label, the headline median, the range as % of it, the repeats that ran
/// of those asked, and its verdict (or the first repeat's error).
pub fn row(case: &CaseResult) -> String {
    let metric = case.case.headline();
    let median = case
        .headline
        .map_or_else(|| "-".to_string(), |h| metric.show(h.median));
    let range = case
        .headline
        .and_then(|h| h.range_percent())
        .map_or_else(|| "-".to_string(), |p| format!("±{:.1}%", p / 2.0));
    let ran = case.runs.iter().filter(|r| r.error.is_none()).count();
    let verdict = match &case.verdict {
        Some(v) if v.outcome == Outcome::Pass => v.outcome.word().to_string(),
        Some(v) => v.line(),
        None => match case.runs.iter().find_map(|r| r.error.as_deref()) {
            Some(e) if ran == 0 => format!("did not run: {e}"),
            _ => "-".into(),
        },
    };
    format!(
        "{:<34} {:>16} {:>8} {:>5}  {}\n",
        clip(&case.case.label, 34),
        median,
        range,
        format!("{ran}/{}", case.case.repeats),
        verdict
    )
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut - 1]),
        None => text.to_string(),
    }
}

/// The plan's verdict in one line, or none when nothing was expected of it.
pub fn verdict_line(result: &PlanResult) -> Option<String> {
    let outcome = result.outcome()?;
    let failed = result
        .cases
        .iter()
        .filter(|c| {
            c.verdict
                .as_ref()
                .is_some_and(|v| v.outcome == Outcome::Fail)
        })
        .count();
    let dropped = result.comparison.as_ref().map_or(0, |c| {
        c.cases
            .iter()
            .filter(|c| c.drop_outcome == Some(Outcome::Fail))
            .count()
    });
    let mut line = format!("Plan verdict: {}", outcome.word());
    if failed > 0 {
        let _ = write!(line, " ({failed} case(s) missed an expectation)");
    }
    if dropped > 0 {
        let _ = write!(
            line,
            " ({dropped} case(s) worse than the baseline by more than {}%)",
            result.max_drop_percent.unwrap_or(0.0)
        );
    }
    Some(line)
}

/// The whole plan run as text: its table, the comparison with its baseline, its verdict.
pub fn text(result: &PlanResult) -> String {
    let mut out = format!("Plan {}", result.name);
    if !result.tags.is_empty() {
        let _ = write!(out, " [{}]", result.tags.join(" "));
    }
    out.push('\n');
    out.push_str(&table_head());
    for case in &result.cases {
        out.push_str(&row(case));
    }
    if result.status == PlanStatus::Stopped {
        let _ = writeln!(
            out,
            "Stopped after {} of {} cases.",
            result.cases.len(),
            result.planned_cases
        );
    }
    if let Some(cmp) = &result.comparison {
        out.push('\n');
        out.push_str(&comparison_text(cmp));
    }
    if let Some(line) = verdict_line(result) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Each case before and after, the change and the judgement, and the rule that judged it.
pub fn comparison_text(cmp: &Comparison) -> String {
    let mut out = match &cmp.baseline_id {
        Some(id) => format!("Against the baseline {id}:\n"),
        None => "Compared:\n".to_string(),
    };
    let _ = writeln!(
        out,
        "{:<34} {:>16} {:>16} {:>8}  Judged",
        "Case", "Before", "After", "Change"
    );
    for c in &cmp.cases {
        let median = |s: Option<crate::plan::Spread>| {
            s.map_or_else(|| "-".to_string(), |s| c.metric.show(s.median))
        };
        let change = c
            .change_percent
            .map_or_else(|| "-".to_string(), |p| format!("{p:+.1}%"));
        let _ = writeln!(
            out,
            "{:<34} {:>16} {:>16} {:>8}  {}{}",
            clip(&c.label, 34),
            median(c.before),
            median(c.after),
            change,
            c.judgement.word(),
            match c.drop_outcome {
                Some(Outcome::Fail) => " (beyond the allowed drop)",
                _ => "",
            }
        );
    }
    let _ = writeln!(
        out,
        "{} worse, {} better, {} same, {} cannot say (a change counts when it is at least {}% \
         and a one-sided rank test of the repeats gives p <= {})",
        cmp.count(Judgement::Worse),
        cmp.count(Judgement::Better),
        cmp.count(Judgement::Same),
        cmp.count(Judgement::Unjudged),
        cmp.min_change_percent,
        crate::plan::ALPHA
    );
    out
}

/// The plan's table as HTML rows, each verdict with its class (`pass`, `fail`, `unjudged`).
pub fn html_table(result: &PlanResult) -> String {
    let mut h = String::from(
        "<table class='plan'><tr><th>Case</th><th>Median</th><th>Range</th><th>Runs</th>\
         <th>Verdict</th></tr>",
    );
    for case in &result.cases {
        let metric = case.case.headline();
        let ran = case.runs.iter().filter(|r| r.error.is_none()).count();
        let (class, words) = match &case.verdict {
            Some(v) => (outcome_class(v.outcome), v.line()),
            None => ("", String::from("-")),
        };
        let runs: String = case
            .runs
            .iter()
            .filter_map(|r| r.result_id.as_deref())
            .enumerate()
            .map(|(i, id)| format!(" <a href='/r/{id}'>{}</a>", i + 1))
            .collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{ran}/{}{runs}</td>\
             <td class='{class}'>{}</td></tr>",
            escape(&case.case.label),
            case.headline
                .map_or_else(|| "-".into(), |s| metric.show(s.median)),
            case.headline.map_or_else(
                || "-".into(),
                |s| format!("{} – {}", metric.show(s.min), metric.show(s.max))
            ),
            case.case.repeats,
            escape(&words)
        );
    }
    h.push_str("</table>");
    h
}

/// The CSS class of an outcome.
pub fn outcome_class(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Unjudged => "unjudged",
    }
}

/// The comparison as HTML rows.
pub fn html_comparison(cmp: &Comparison) -> String {
    let mut h = String::from(
        "<table class='plan'><tr><th>Case</th><th>Before</th><th>After</th><th>Change</th>\
         <th>Judged</th></tr>",
    );
    for c in &cmp.cases {
        let median = |s: Option<crate::plan::Spread>| {
            s.map_or_else(|| "-".to_string(), |s| c.metric.show(s.median))
        };
        let class = match c.judgement {
            Judgement::Worse => "fail",
            Judgement::Better => "pass",
            _ => "",
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class='{class}'>{}</td></tr>",
            escape(&c.label),
            median(c.before),
            median(c.after),
            c.change_percent
                .map_or_else(|| "-".to_string(), |p| format!("{p:+.1}%")),
            c.judgement.word()
        );
    }
    h.push_str("</table>");
    h
}

const W: f64 = 640.0;
const ROW_H: f64 = 26.0;
const LEFT: f64 = 200.0;

/// Each case as two bars (baseline grey, this run blue) at their medians, with a whisker over
/// each run's range, on the case's own scale: a drop shows as a shorter blue bar whose whisker
/// clears the grey one's.
pub fn comparison_svg(cmp: &Comparison) -> String {
    let height = ROW_H * cmp.cases.len() as f64 + 24.0;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='each case: the baseline median and this run median with their ranges' \
         class='chart plan-chart'>"
    );
    for (i, c) in cmp.cases.iter().enumerate() {
        case_bars(&mut s, i, c);
    }
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='legend' fill='#888'>■ baseline</text>\
         <text x='{:.1}' y='{:.1}' class='legend' fill='#1f77b4'>■ this run</text></svg>",
        height - 6.0,
        LEFT + 90.0,
        height - 6.0
    );
    s
}

fn case_bars(s: &mut String, i: usize, c: &CaseComparison) {
    let top = i as f64 * ROW_H + 4.0;
    let max = [c.before, c.after]
        .iter()
        .flatten()
        .map(|s| s.max)
        .fold(0.0, f64::max);
    // Each case on its own scale (cases differ by orders of magnitude): its largest value
    // fills the row, so the bars show the change, not the case's size.
    let x_max = if max > 0.0 { max } else { 1.0 };
    let x = |v: f64| LEFT + v / x_max * (W - LEFT - 110.0);
    let _ = write!(
        s,
        "<text x='4' y='{:.1}' class='legend'>{}</text>",
        top + 15.0,
        escape(&clip(&c.label, 28))
    );
    for (k, (spread, color)) in [(c.before, "#888"), (c.after, "#1f77b4")]
        .iter()
        .enumerate()
    {
        let Some(sp) = spread else { continue };
        let y = top + k as f64 * 10.0;
        let _ = write!(
            s,
            "<rect x='{LEFT}' y='{y:.1}' width='{:.1}' height='8' fill='{color}'/>\
             <line x1='{:.1}' x2='{:.1}' y1='{:.1}' y2='{:.1}' stroke='#000' stroke-width='1'/>",
            (x(sp.median) - LEFT).max(0.5),
            x(sp.min),
            x(sp.max),
            y + 4.0,
            y + 4.0
        );
    }
    if let Some(p) = c.change_percent {
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='legend'>{p:+.1}% {}</text>",
            W - 100.0,
            top + 15.0,
            c.judgement.word()
        );
    }
}

#[cfg(test)]
mod tests;
