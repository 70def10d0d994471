//! A plan run as a serving peer tells a browser about it (`perfpeer serve --plans DIR`): the
//! plans it offers, each repeat as it starts, each finished case as one table row, and how the
//! run ended. Light on purpose: every build serves the browser UI, DUT builds too, so these
//! carry only the figures the Plans screen's table shows, already derived by the plan model;
//! the whole run (every repeat's figures, the comparison with a baseline) is the kept plan's
//! page at `/r/<id>`.

use serde::{Deserialize, Serialize};

use crate::verdict::{Metric, Outcome};

/// A plan a serving peer offers, as its `plans` answer lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedPlan {
    /// What a client names it by: its file's stem (never a path).
    pub name: String,
    /// The plan's own name (its `name =`, else the stem).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// Its cases (0 when it cannot be read).
    pub cases: u32,
    /// Its testing time, repeats and overheads included, seconds.
    pub eta_s: u64,
    /// Why it cannot run (a parse error naming its line), if so: listed, not runnable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Median and range of a case's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Repeats with the figure.
    pub count: u32,
    /// Their median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Of `values`; none when empty.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            count: u32::try_from(n).unwrap_or(u32::MAX),
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// The range as a share of the median, %.
    pub fn range_percent(&self) -> Option<f64> {
        (self.median > 0.0).then(|| (self.max - self.min) / self.median * 100.0)
    }
}

/// How a plan run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Every case ran.
    Complete,
    /// Stopped (Ctrl-C, or Stop in the browser) after the case that was running: the cases
    /// that ran are kept.
    Stopped,
}

/// A finished case as the Plans screen's table shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    /// The case's label.
    pub label: String,
    /// The figure the case is summarised by.
    pub metric: Metric,
    /// That figure over the repeats that ran to their end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Spread>,
    /// Repeats that ran to their end.
    pub ran: u32,
    /// Repeats asked for.
    pub repeats: u32,
    /// Each kept repeat's result id, in order (its own `/r/<id>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub result_ids: Vec<String>,
    /// The case's verdict, when it had expectations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// That verdict in words (what missed and by how much), or "-".
    pub verdict_line: String,
}

crate::tagged_enum! {
    tag = "event", rename_all = "snake_case";
    /// What a plan run on a peer tells its browser as it goes.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum PlanProgress {
        /// A repeat of a case starts.
        Starting {
            /// The case, from 0.
            index: u32,
            /// How many cases.
            of: u32,
            /// The case's label.
            label: String,
            /// The repeat, from 1.
            repeat: u32,
            /// The case's repeats.
            repeats: u32,
            /// The plan's testing time still ahead, this repeat included, seconds.
            eta_s: u64,
        },
        /// A case ran all its repeats: its row.
        CaseDone {
            /// The case, from 0.
            index: u32,
            /// Its row.
            row: CaseRow,
        },
    }
}

/// How a plan run on a peer ended: the last message of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEnd {
    /// Whether every case ran.
    pub status: PlanStatus,
    /// Cases that ran.
    pub cases: u32,
    /// Cases the plan had.
    pub planned_cases: u32,
    /// The plan's verdict, when anything was expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Where the peer keeps the whole run (`/r/<result_id>`), if it keeps results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
}
