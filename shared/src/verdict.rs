//! Expectations on a test (`rx>=300M`, `loss<=0.5%`, …) and the verdict a finished result gets
//! from them: pass, fail (which expectation, by how much) or could not judge. The figures are
//! read from the result model once, here; formatters only print the verdict.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::report::TestResult;

/// Most expectations on one test.
pub const MAX_EXPECTATIONS: usize = 16;

/// A figure an expectation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Throughput as the receiving ends counted it, summed over the directions, bit/s.
    Rx,
    /// Throughput as the sending ends counted it, summed over the directions, bit/s.
    Tx,
    /// Datagrams lost of those sent (UDP, DCCP), %.
    Loss,
    /// Receive jitter, the largest of the directions', ms.
    Jitter,
    /// TCP retransmissions by the senders.
    Retransmits,
    /// Request/response transactions per second.
    Rr,
    /// Latency under load: the 99th percentile round trip of the worst loaded phase, ms.
    P99,
    /// Latency under load: the median round trip added by the worst load, ms.
    Added,
}

impl Metric {
    /// Every metric, in the order the help lists them.
    pub const ALL: [Metric; 8] = [
        Metric::Rx,
        Metric::Tx,
        Metric::Loss,
        Metric::Jitter,
        Metric::Retransmits,
        Metric::Rr,
        Metric::P99,
        Metric::Added,
    ];

    /// The name an expectation spells it with.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Rx => "rx",
            Metric::Tx => "tx",
            Metric::Loss => "loss",
            Metric::Jitter => "jitter",
            Metric::Retransmits => "retransmits",
            Metric::Rr => "rr",
            Metric::P99 => "p99",
            Metric::Added => "added",
        }
    }

    fn unit(self) -> Unit {
        match self {
            Metric::Rx | Metric::Tx => Unit::Rate,
            Metric::Loss => Unit::Percent,
            Metric::Jitter | Metric::P99 | Metric::Added => Unit::Millis,
            Metric::Retransmits => Unit::Count,
            Metric::Rr => Unit::PerSecond,
        }
    }

    /// `value` in the metric's unit, for people ("941 Mbits/sec", "0.5%", "3.2 ms").
    pub fn show(self, value: f64) -> String {
        self.unit().show(value)
    }

    /// Whether more is better (so a shortfall is below the threshold).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Rx | Metric::Tx | Metric::Rr)
    }

    /// Whether a test of this kind measures the figure at all (`latency_run`: a latency
    /// under load run rather than a throughput test).
    pub fn measured_by(self, spec: &crate::spec::TestSpec, latency_run: bool) -> bool {
        use crate::spec::Protocol;
        if latency_run {
            return matches!(self, Metric::P99 | Metric::Added);
        }
        match self {
            Metric::Rx | Metric::Tx => spec.rr.is_none(),
            Metric::Loss | Metric::Jitter => {
                spec.rr.is_none() && matches!(spec.protocol, Protocol::Udp | Protocol::Dccp)
            }
            Metric::Retransmits => spec.rr.is_none() && spec.protocol == Protocol::Tcp,
            Metric::Rr => spec.rr.is_some(),
            Metric::P99 | Metric::Added => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Rate,
    Percent,
    Millis,
    Count,
    PerSecond,
}

impl Unit {
    fn parse(self, text: &str) -> Option<f64> {
        let text = text.trim();
        let value = match self {
            Unit::Rate => crate::units::parse_rate(text).ok()?.0 as f64,
            Unit::Percent => text.strip_suffix('%').unwrap_or(text).trim().parse().ok()?,
            Unit::Millis => {
                let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
                    (n, 1.0)
                } else if let Some(n) = text.strip_suffix("us") {
                    (n, 1e-3)
                } else if let Some(n) = text.strip_suffix('s') {
                    (n, 1e3)
                } else {
                    (text, 1.0)
                };
                number.trim().parse::<f64>().ok()? * scale
            }
            Unit::Count => text.parse::<u64>().ok()? as f64,
            Unit::PerSecond => match text.strip_suffix(['k', 'K']) {
                Some(n) => n.trim().parse::<f64>().ok()? * 1e3,
                None => text.parse().ok()?,
            },
        };
        (value.is_finite() && value >= 0.0).then_some(value)
    }

    fn example(self) -> &'static str {
        match self {
            Unit::Rate => "a rate such as 300M",
            Unit::Percent => "a share such as 0.5%",
            Unit::Millis => "a time such as 20ms",
            Unit::Count => "a whole number",
            Unit::PerSecond => "a rate such as 5000 or 5k",
        }
    }

    fn show(self, value: f64) -> String {
        match self {
            Unit::Rate => crate::units::format_rate(value),
            Unit::Percent => format!("{value:.3}%").replace(".000%", "%"),
            Unit::Millis => format!("{value:.3} ms"),
            Unit::Count => format!("{value:.0}"),
            Unit::PerSecond => format!("{value:.1}/s"),
        }
    }
}

/// At least or at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// `>=`: the figure must reach the threshold.
    AtLeast,
    /// `<=`: the figure must stay within it.
    AtMost,
}

/// One expectation: a figure, a bound and a threshold. Written and sent as its text
/// (`rx>=300M`), so a spec, a plan and a result all carry what the user typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Expectation {
    /// The figure.
    pub metric: Metric,
    /// Which side of the threshold passes.
    pub bound: Bound,
    /// In the metric's base unit: bit/s, %, ms, a count, per second.
    pub threshold: f64,
    /// The threshold as the user wrote it.
    text: String,
}

/// An expectation that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpectationError {
    /// No `>=` or `<=` in it.
    #[error("'{0}' is not an expectation: write a figure, >= or <=, and a value (e.g. rx>=300M)")]
    NoBound(String),
    /// A name that is not a figure.
    #[error(
        "'{0}' is not a figure to expect: one of rx, tx, loss, jitter, retransmits, rr, p99, added"
    )]
    UnknownMetric(String),
    /// A value that is not a number in the figure's unit.
    #[error("'{value}' in '{text}' is not {example}")]
    BadValue {
        /// The whole expectation.
        text: String,
        /// Its value part.
        value: String,
        /// What would do.
        example: &'static str,
    },
    /// The bound that can never fail or never pass (`rx<=…`, `loss>=…`).
    #[error("'{text}': a {better} {metric} is better, so write {metric}{bound}…")]
    WrongWay {
        /// The whole expectation.
        text: String,
        /// The figure's name.
        metric: &'static str,
        /// "higher" or "lower".
        better: &'static str,
        /// The bound that makes sense.
        bound: &'static str,
    },
}

impl Expectation {
    /// Reads `rx>=300M`, `loss <= 0.5%`, `p99<=40ms`, `rr>=5k`.
    pub fn parse(input: &str) -> Result<Expectation, ExpectationError> {
        let text: String = input.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, bound, value) = if let Some((n, v)) = text.split_once(">=") {
            (n, Bound::AtLeast, v)
        } else if let Some((n, v)) = text.split_once("<=") {
            (n, Bound::AtMost, v)
        } else {
            return Err(ExpectationError::NoBound(input.trim().to_string()));
        };
        let metric = Metric::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| ExpectationError::UnknownMetric(name.to_string()))?;
        let wanted = if metric.higher_is_better() {
            Bound::AtLeast
        } else {
            Bound::AtMost
        };
        if bound != wanted {
            return Err(ExpectationError::WrongWay {
                text: text.clone(),
                metric: metric.name(),
                better: if metric.higher_is_better() {
                    "higher"
                } else {
                    "lower"
                },
                bound: if metric.higher_is_better() {
                    ">="
                } else {
                    "<="
                },
            });
        }
        let unit = metric.unit();
        let threshold = unit
            .parse(value)
            .ok_or_else(|| ExpectationError::BadValue {
                text: text.clone(),
                value: value.to_string(),
                example: unit.example(),
            })?;
        Ok(Expectation {
            metric,
            bound,
            threshold,
            text,
        })
    }

    /// Reads a list separated by commas (the browser's field, a plan's string).
    pub fn parse_list(input: &str) -> Result<Vec<Expectation>, ExpectationError> {
        input
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(Expectation::parse)
            .collect()
    }

    /// The expectation as written (without spaces).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The threshold in the figure's unit, for people.
    pub fn threshold_words(&self) -> String {
        self.metric.unit().show(self.threshold)
    }

    /// Whether `value` meets it.
    pub fn met_by(&self, value: f64) -> bool {
        match self.bound {
            Bound::AtLeast => value >= self.threshold,
            Bound::AtMost => value <= self.threshold,
        }
    }
}

impl TryFrom<String> for Expectation {
    type Error = ExpectationError;
    fn try_from(text: String) -> Result<Expectation, ExpectationError> {
        Expectation::parse(&text)
    }
}

impl From<Expectation> for String {
    fn from(e: Expectation) -> String {
        e.text
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The outcome of a verdict or of one of its checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every expectation met.
    Pass,
    /// At least one expectation missed.
    Fail,
    /// A figure an expectation needs was not measured (and none failed).
    Unjudged,
}

impl Outcome {
    /// The word the text output and the badge use.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Unjudged => "COULD NOT JUDGE",
        }
    }

    /// The name JSON gives it (`pass`, `fail`, `unjudged`); the pages style the badge by it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unjudged => "unjudged",
        }
    }
}

/// One expectation against its figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The expectation.
    pub expect: Expectation,
    /// The figure measured, in the metric's base unit; none when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// Met, missed, or not judged.
    pub outcome: Outcome,
    /// How far the figure missed the threshold, % of the threshold (only for a miss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_percent: Option<f64>,
}

impl Check {
    /// "rx>=300M: 212 Mbits/sec, 29.2 % short" and the like.
    pub fn words(&self) -> String {
        match (self.measured_words(), self.miss_words()) {
            (None, _) => format!("{}: not measured", self.expect),
            (Some(value), Some(miss)) => format!("{}: {value}, {miss}", self.expect),
            (Some(value), None) => format!("{}: {value}", self.expect),
        }
    }

    /// The figure measured, in the expectation's unit ("212 Mbits/sec"); none when it was not.
    pub fn measured_words(&self) -> Option<String> {
        self.measured.map(|v| self.expect.metric.unit().show(v))
    }

    /// How far a failed check missed: "29.2 % short" (of a figure that must reach its
    /// threshold) or "200.0 % over" (of one that must stay within it); none otherwise.
    pub fn miss_words(&self) -> Option<String> {
        let percent = self
            .miss_percent
            .filter(|_| self.outcome == Outcome::Fail)?;
        let side = if self.expect.metric.higher_is_better() {
            "short"
        } else {
            "over"
        };
        Some(format!("{percent:.1} % {side}"))
    }
}

/// A finished run judged against its expectations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Pass only when every check passed; fail when any failed.
    pub outcome: Outcome,
    /// Each expectation in the order given.
    pub checks: Vec<Check>,
    /// Why nothing could be judged (the run ended early), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Verdict {
    /// Judges `expectations` against the figures `measure` reads; `ended_early` (the run's
    /// reason) makes every check unjudged, since a part of a run says nothing of the whole.
    pub fn judge(
        expectations: &[Expectation],
        measure: impl Fn(Metric) -> Option<f64>,
        ended_early: Option<&str>,
    ) -> Option<Verdict> {
        if expectations.is_empty() {
            return None;
        }
        let checks: Vec<Check> = expectations
            .iter()
            .map(|expect| {
                let measured = if ended_early.is_some() {
                    None
                } else {
                    measure(expect.metric).filter(|v| v.is_finite())
                };
                let outcome = match measured {
                    None => Outcome::Unjudged,
                    Some(v) if expect.met_by(v) => Outcome::Pass,
                    Some(_) => Outcome::Fail,
                };
                let miss_percent = measured
                    .filter(|_| outcome == Outcome::Fail && expect.threshold > 0.0)
                    .map(|v| (v - expect.threshold).abs() / expect.threshold * 100.0);
                Check {
                    expect: expect.clone(),
                    measured,
                    outcome,
                    miss_percent,
                }
            })
            .collect();
        let outcome = if checks.iter().any(|c| c.outcome == Outcome::Fail) {
            Outcome::Fail
        } else if checks.iter().any(|c| c.outcome == Outcome::Unjudged) {
            Outcome::Unjudged
        } else {
            Outcome::Pass
        };
        Some(Verdict {
            outcome,
            checks,
            reason: ended_early.map(|r| format!("the run ended early: {r}")),
        })
    }

    /// Judges a throughput test by its own expectations (`spec.expect`).
    pub fn of_test(result: &TestResult) -> Option<Verdict> {
        Verdict::judge(
            &result.spec.expect,
            |m| test_figure(result, m),
            result.status.ended_early(),
        )
    }

    /// Judges a latency-under-load run by its request's expectations.
    pub fn of_latency(
        request: &crate::latency::LatencyRequest,
        result: &crate::latency::LatencyResult,
    ) -> Option<Verdict> {
        let failed_phase = result.phases.iter().find_map(|p| p.error.as_deref());
        Verdict::judge(
            &request.expect,
            |m| latency_figure(result, m),
            result.error.as_deref().or(failed_phase),
        )
    }

    /// The checks that missed.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.outcome == Outcome::Fail)
    }

    /// The checks that tell the outcome: the failed ones of a fail, else every one (what
    /// passed, what could not be judged).
    pub fn telling(&self) -> impl Iterator<Item = &Check> {
        let fail = self.outcome == Outcome::Fail;
        self.checks
            .iter()
            .filter(move |c| !fail || c.outcome == Outcome::Fail)
    }

    /// One line: "PASS (rx>=300M: 941 Mbits/sec)" or "FAIL: rx>=300M: 212 Mbits/sec, 29.2 %
    /// short".
    pub fn line(&self) -> String {
        let shown: Vec<String> = self.telling().map(Check::words).collect();
        let mut line = format!("{}: {}", self.outcome.word(), shown.join("; "));
        if let Some(reason) = &self.reason {
            line.push_str(&format!(" ({reason})"));
        }
        line
    }
}

impl TestResult {
    /// This result judged by its spec's expectations; none when it has none.
    pub fn verdict(&self) -> Option<Verdict> {
        Verdict::of_test(self)
    }
}

/// The figure `metric` of a throughput test; none when the test did not measure it.
pub fn test_figure(result: &TestResult, metric: Metric) -> Option<f64> {
    let flows = result.flows();
    let sum = |pick: &dyn Fn(&crate::report::Flow<'_>) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = flows.iter().filter_map(pick).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    match metric {
        Metric::Rx => sum(&|f| f.received.as_ref().map(|t| t.bits_per_second)),
        Metric::Tx => sum(&|f| f.sent.as_ref().map(|t| t.bits_per_second)),
        Metric::Loss => {
            let rx: Vec<_> = flows
                .iter()
                .filter_map(|f| f.received.as_ref()?.udp_rx.as_ref())
                .collect();
            let expected: u64 = rx.iter().map(|r| r.expected()).sum();
            let lost: u64 = rx.iter().map(|r| r.lost).sum();
            (!rx.is_empty()).then(|| {
                if expected == 0 {
                    0.0
                } else {
                    lost as f64 * 100.0 / expected as f64
                }
            })
        }
        Metric::Jitter => flows
            .iter()
            .filter_map(|f| f.received.as_ref()?.udp_rx.as_ref().map(|r| r.jitter_ms))
            .reduce(f64::max),
        Metric::Retransmits => sum(&|f| f.sent.as_ref()?.retransmits.map(|r| r as f64)),
        Metric::Rr => result
            .rr_final()
            .filter(|(_, seconds)| *seconds > 0.0)
            .map(|(rr, seconds)| rr.transactions as f64 / seconds),
        Metric::P99 | Metric::Added => None,
    }
}

/// The figure `metric` of a latency-under-load run: the worst loaded phase's.
pub fn latency_figure(result: &crate::latency::LatencyResult, metric: Metric) -> Option<f64> {
    let loaded = result
        .phases
        .iter()
        .filter(|p| p.phase != crate::latency::Phase::Idle);
    match metric {
        Metric::P99 => loaded.filter_map(|p| p.rtt.map(|r| r.p99)).reduce(f64::max),
        Metric::Added => loaded.filter_map(|p| p.added_rtt).reduce(f64::max),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
