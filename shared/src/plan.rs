//! Regression plans as results: the cases a plan expanded to, each case's repeats summarised
//! (median, spread, verdict), the plan's own verdict, and the comparison of two plan runs case by
//! case, judged beyond the noise of their repeats. Reading a plan file is the peer's (TOML);
//! everything derived from the runs is computed here, once.

use serde::{Deserialize, Serialize};

use crate::plan_progress::{CaseRow, PlanEnd};
pub use crate::plan_progress::{PlanStatus, Spread};
use crate::spec::TestSpec;
use crate::verdict::{Expectation, Metric, Outcome, Verdict};

/// Most test runs one plan may ask for (cases × repeats).
pub const MAX_PLAN_RUNS: usize = 500;
/// Most repeats of one case.
pub const MAX_REPEATS: u32 = 20;
/// A change smaller than this (%) is "same" however steady the repeats: loopback and a quiet
/// LAN wobble by a few percent from run to run.
pub const DEFAULT_MIN_CHANGE_PERCENT: f64 = 5.0;
/// The one-sided significance level of the rank test.
pub const ALPHA: f64 = 0.05;

/// One case of a plan: a test against one peer, repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanCase {
    /// Names the case in tables and comparisons: its settings in words, unique in the plan.
    pub label: String,
    /// The far peer (host[:port], or a stock tool's URL).
    pub peer: String,
    /// What runs (its `expect` judged on the medians of the repeats).
    pub spec: TestSpec,
    /// How many times.
    pub repeats: u32,
}

impl PlanCase {
    /// The figure a case is summarised and compared by: transactions/s for request/response,
    /// else the received throughput.
    pub fn headline(&self) -> Metric {
        if self.spec.rr.is_some() {
            Metric::Rr
        } else {
            Metric::Rx
        }
    }
}

/// One repeat of a case as the plan keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// The test's kept result (its own `/r/<id>`), when it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
    /// Each figure the case needs (its headline and its expectations'), where measured.
    pub figures: Vec<(Metric, f64)>,
    /// Why it did not run to its end, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CaseRun {
    /// The run of `result`: its figures for `metrics`, or why it ended early.
    pub fn of(result: &crate::report::TestResult, metrics: &[Metric]) -> CaseRun {
        let error = result.status.ended_early().map(str::to_string);
        let figures = if error.is_some() {
            Vec::new()
        } else {
            metrics
                .iter()
                .filter_map(|&m| crate::verdict::test_figure(result, m).map(|v| (m, v)))
                .collect()
        };
        CaseRun {
            result_id: None,
            figures,
            error,
        }
    }

    /// A run that could not start.
    pub fn failed(error: String) -> CaseRun {
        CaseRun {
            result_id: None,
            figures: Vec::new(),
            error: Some(error),
        }
    }

    fn figure(&self, metric: Metric) -> Option<f64> {
        self.figures
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|(_, v)| *v)
    }
}

/// A case with its repeats and what they add up to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case.
    pub case: PlanCase,
    /// Each repeat, in order.
    pub runs: Vec<CaseRun>,
    /// The headline figure over the repeats that ran to their end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Spread>,
    /// The case's expectations judged on the repeats' medians; none without expectations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

impl CaseResult {
    /// Summarises the repeats of `case`.
    pub fn build(case: PlanCase, runs: Vec<CaseRun>) -> CaseResult {
        let median_of = |metric: Metric| {
            let values: Vec<f64> = runs.iter().filter_map(|r| r.figure(metric)).collect();
            Spread::of(&values).map(|s| s.median)
        };
        let headline = {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.figure(case.headline()))
                .collect();
            Spread::of(&values)
        };
        let none_ran = runs.iter().all(|r| r.error.is_some());
        let reason = none_ran.then(|| {
            runs.iter()
                .find_map(|r| r.error.clone())
                .unwrap_or_else(|| "no repeat ran".into())
        });
        let verdict = Verdict::judge(&case.spec.expect, median_of, reason.as_deref());
        CaseResult {
            case,
            runs,
            headline,
            verdict,
        }
    }

    /// The case as the Plans screen's table shows it.
    pub fn row(&self) -> CaseRow {
        CaseRow {
            label: self.case.label.clone(),
            metric: self.case.headline(),
            headline: self.headline,
            ran: u32::try_from(self.runs.iter().filter(|r| r.error.is_none()).count())
                .unwrap_or(u32::MAX),
            repeats: self.case.repeats,
            result_ids: self
                .runs
                .iter()
                .filter_map(|r| r.result_id.clone())
                .collect(),
            outcome: self.verdict.as_ref().map(|v| v.outcome),
            verdict_line: self
                .verdict
                .as_ref()
                .map_or_else(|| "-".to_string(), Verdict::line),
        }
    }

    /// Every figure `metric` of the repeats that ran.
    pub fn values(&self, metric: Metric) -> Vec<f64> {
        self.runs.iter().filter_map(|r| r.figure(metric)).collect()
    }
}

/// A plan run, kept whole: its cases, their verdicts, and the comparison with a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanResult {
    /// The plan's name.
    pub name: String,
    /// When it started, Unix ms.
    pub started_unix_ms: u64,
    /// When it ended, Unix ms.
    pub ended_unix_ms: u64,
    /// `key=value` tags given to the run (a firmware version, a board).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The cases that ran, in order.
    pub cases: Vec<CaseResult>,
    /// How many cases the plan had.
    pub planned_cases: u32,
    /// Whether it ran to its end.
    pub status: PlanStatus,
    /// Each case against the baseline, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// "Worse than the baseline by more than this %" fails a case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_drop_percent: Option<f64>,
}

impl PlanResult {
    /// The plan's verdict: fail when any case failed (its expectations, or a drop beyond
    /// `max_drop_percent` against the baseline), could not judge when a case could not be,
    /// pass when every case passed; none when nothing was expected.
    pub fn outcome(&self) -> Option<Outcome> {
        let mut outcomes: Vec<Outcome> = self
            .cases
            .iter()
            .filter_map(|c| c.verdict.as_ref().map(|v| v.outcome))
            .collect();
        if let (Some(cmp), Some(_)) = (&self.comparison, self.max_drop_percent) {
            outcomes.extend(cmp.cases.iter().filter_map(|c| c.drop_outcome));
        }
        if outcomes.is_empty() {
            None
        } else if outcomes.contains(&Outcome::Fail) {
            Some(Outcome::Fail)
        } else if outcomes.contains(&Outcome::Unjudged) || self.status == PlanStatus::Stopped {
            Some(Outcome::Unjudged)
        } else {
            Some(Outcome::Pass)
        }
    }

    /// How the run ended, as a browser following it is told; `result_id` where it is kept.
    pub fn end(&self, result_id: Option<String>) -> PlanEnd {
        PlanEnd {
            status: self.status,
            cases: u32::try_from(self.cases.len()).unwrap_or(u32::MAX),
            planned_cases: self.planned_cases,
            outcome: self.outcome(),
            result_id,
        }
    }

    /// Compares this run with `baseline` and keeps the comparison (and the drop allowed).
    pub fn compare_with(&mut self, baseline: &PlanResult, baseline_id: &str, min_change: f64) {
        let mut cmp = Comparison::of(baseline, self, min_change);
        cmp.baseline_id = Some(baseline_id.to_string());
        if let Some(max_drop) = self.max_drop_percent {
            for case in &mut cmp.cases {
                case.drop_outcome = Some(match (case.judgement, case.change_percent) {
                    (Judgement::Worse, Some(change)) if -change > max_drop => Outcome::Fail,
                    (Judgement::Unjudged, _) => Outcome::Unjudged,
                    _ => Outcome::Pass,
                });
            }
        }
        self.comparison = Some(cmp);
    }
}

/// A case's change between two runs, as judged from their repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// Within the noise, or smaller than the least change that counts.
    Same,
    /// Better beyond the noise.
    Better,
    /// Worse beyond the noise.
    Worse,
    /// Too few repeats on a side (one sample says nothing of the noise), or the case is
    /// missing from a run.
    Unjudged,
}

impl Judgement {
    /// The word tables print.
    pub fn word(self) -> &'static str {
        match self {
            Judgement::Same => "same",
            Judgement::Better => "better",
            Judgement::Worse => "worse",
            Judgement::Unjudged => "cannot say",
        }
    }
}

/// One case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseComparison {
    /// The case's label.
    pub label: String,
    /// The figure compared.
    pub metric: Metric,
    /// In the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Spread>,
    /// In the run judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Spread>,
    /// Median after over median before, as a change in %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    /// One-sided exact Mann–Whitney p-value of the change's direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Same, better, worse.
    pub judgement: Judgement,
    /// Against the plan's allowed drop, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_outcome: Option<Outcome>,
}

/// Two plan runs case by case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's id (a kept plan result), or its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_id: Option<String>,
    /// The least change that counts, %.
    pub min_change_percent: f64,
    /// Every case of either run, in the later run's order, then the baseline's others.
    pub cases: Vec<CaseComparison>,
}

impl Comparison {
    /// Compares `after` with `before`, case by case (matched by label).
    pub fn of(before: &PlanResult, after: &PlanResult, min_change_percent: f64) -> Comparison {
        let mut labels: Vec<&str> = after.cases.iter().map(|c| c.case.label.as_str()).collect();
        for c in &before.cases {
            if !labels.contains(&c.case.label.as_str()) {
                labels.push(&c.case.label);
            }
        }
        let find = |run: &'_ PlanResult, label: &str| {
            run.cases
                .iter()
                .find(|c| c.case.label == label)
                .map(|c| (c.case.headline(), c.values(c.case.headline())))
        };
        let cases = labels
            .into_iter()
            .map(|label| {
                let b = find(before, label);
                let a = find(after, label);
                let metric = a.as_ref().or(b.as_ref()).map_or(Metric::Rx, |(m, _)| *m);
                let before_values = b.map(|(_, v)| v).unwrap_or_default();
                let after_values = a.map(|(_, v)| v).unwrap_or_default();
                judge_change(
                    label,
                    metric,
                    &before_values,
                    &after_values,
                    min_change_percent,
                )
            })
            .collect();
        Comparison {
            baseline_id: None,
            min_change_percent,
            cases,
        }
    }

    /// How many cases were judged `j`.
    pub fn count(&self, j: Judgement) -> usize {
        self.cases.iter().filter(|c| c.judgement == j).count()
    }
}

/// Judges one case's change: "worse" (or "better") only when the median moved by at least
/// `min_change_percent` in the metric's bad (good) direction *and* a one-sided exact
/// Mann–Whitney rank test of the two sets of repeats says the move is unlikely to be noise
/// (p ≤ [`ALPHA`]). With fewer than 3 repeats on a side no such p-value exists, so it says
/// "cannot say".
pub fn judge_change(
    label: &str,
    metric: Metric,
    before: &[f64],
    after: &[f64],
    min_change_percent: f64,
) -> CaseComparison {
    let b = Spread::of(before);
    let a = Spread::of(after);
    let change_percent = match (b, a) {
        (Some(b), Some(a)) if b.median > 0.0 => Some((a.median - b.median) / b.median * 100.0),
        _ => None,
    };
    let mut p_value = None;
    let judgement = match change_percent {
        Some(change) if before.len() >= 3 && after.len() >= 3 => {
            // The direction the medians moved, tested one-sided.
            let p = if change < 0.0 {
                mann_whitney_less(after, before)
            } else {
                mann_whitney_less(before, after)
            };
            p_value = Some(p);
            let good_way = (change > 0.0) == metric.higher_is_better();
            if change.abs() < min_change_percent || p > ALPHA {
                Judgement::Same
            } else if good_way {
                Judgement::Better
            } else {
                Judgement::Worse
            }
        }
        _ => Judgement::Unjudged,
    };
    CaseComparison {
        label: label.to_string(),
        metric,
        before: b,
        after: a,
        change_percent,
        p_value,
        judgement,
        drop_outcome: None,
    }
}

/// The exact one-sided p-value that samples of `x` tend to be smaller than those of `y`:
/// the share of all ways to split the pooled values into groups of their sizes whose U
/// statistic (pairs with x below y, ties counting one half) is at least the observed one.
/// Counted by dynamic programming over the pooled ranks (ties given mid-ranks are counted
/// as the observed arrangement only, a conservative choice for the few ties timings have).
pub fn mann_whitney_less(x: &[f64], y: &[f64]) -> f64 {
    let (n, m) = (x.len(), y.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    // U counts pairs (x below y), ties as one half: in half-units to stay in integers.
    let mut u2: usize = 0;
    for &a in x {
        for &b in y {
            if a < b {
                u2 += 2;
            } else if a == b {
                u2 += 1;
            }
        }
    }
    // ways[i][j][u]: arrangements of i x's and j y's with U (whole pairs) = u, built by
    // appending the largest value: a y appended last is above all i x's (adds i to U).
    let max_u = n * m;
    let mut ways = vec![vec![vec![0f64; max_u + 1]; m + 1]; n + 1];
    ways[0][0][0] = 1.0;
    for i in 0..=n {
        for j in 0..=m {
            if i == 0 && j == 0 {
                continue;
            }
            let mut row = vec![0f64; max_u + 1];
            if i > 0 {
                for (u, w) in ways[i - 1][j].iter().enumerate() {
                    row[u] += w;
                }
            }
            if j > 0 {
                for (u, w) in ways[i][j - 1].iter().enumerate() {
                    if *w > 0.0 && u + i <= max_u {
                        row[u + i] += w;
                    }
                }
            }
            ways[i][j] = row;
        }
    }
    let all: f64 = ways[n][m].iter().sum();
    let at_least: f64 = ways[n][m]
        .iter()
        .enumerate()
        .filter(|(u, _)| 2 * u >= u2)
        .map(|(_, w)| w)
        .sum();
    at_least / all
}

/// Expectations of a plan that a case cannot measure are left out of that case (a plan's
/// `loss<=1%` means its UDP cases): the ones that apply to `spec`.
pub fn applicable(expect: &[Expectation], spec: &TestSpec) -> Vec<Expectation> {
    expect
        .iter()
        .filter(|e| e.metric.measured_by(spec, false))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
