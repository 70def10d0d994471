//! One line of a peer's result history, as the peer keeps it and the browser and `perfpeer
//! results list` read it (`GET /api/results`): one type for both ends, with enums where the
//! wire carries words (`"far_end"`, `"cancelled"`, …). The words are the JSON and the database
//! columns alike.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::latency::{LatencyRequest, LatencyResult};
use crate::report::{PeerRole, TestResult};
use crate::spec::{Direction, Protocol, TestSpec};
use crate::sweep::SweepResult;

/// What a history line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// One test.
    #[default]
    Test,
    /// A packet-size sweep kept whole (its bytes are its total, its rate its best size's).
    Sweep,
    /// A latency-under-load run kept whole (its rate is its best phase's throughput one way).
    Latency,
}

/// Who started a kept test on this peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `perfpeer test` on this machine.
    Cli,
    /// A browser's `run` on this peer.
    Browser,
    /// This peer was the far end (`perfpeer serve`).
    FarEnd,
}

/// Where a kept test stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still measuring.
    Running,
    /// Ran to its end and both ends reported.
    Complete,
    /// Someone stopped it early (its figures so far are kept).
    Cancelled,
    /// It ended early or broke (the reason says why).
    Failed,
    /// The peer that ran it died during it (found at the next start).
    Aborted,
}

/// The word of a unit-like enum variant as serde writes it.
fn word_of<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Reads one of these enums from its word (`None` for a word it does not have).
pub fn from_word<T: for<'de> Deserialize<'de>>(word: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(word.to_string())).ok()
}

macro_rules! words {
    ($($t:ty),*) => {$(
        impl $t {
            /// Its word, as the JSON and the database carry it.
            pub fn word(self) -> String {
                word_of(&self)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&word_of(self))
            }
        }
    )*};
}

words!(ResultKind, Origin, RunStatus, Protocol, Direction, PeerRole);

/// One line of the history list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Result id (the share link's secret).
    pub id: String,
    /// A test or a kept sweep.
    #[serde(default)]
    pub kind: ResultKind,
    /// When it began, ms since the Unix epoch.
    pub created_ms: u64,
    /// Who started it here.
    pub origin: Origin,
    /// This peer's end of it.
    pub role: PeerRole,
    /// The other end.
    pub peer: String,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its direction, as the client sees it.
    pub direction: Direction,
    /// Where it stands.
    pub status: RunStatus,
    /// Why it did not complete.
    #[serde(default)]
    pub reason: Option<String>,
    /// Bytes received (or sent, when nothing was received).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Throughput of those bytes.
    #[serde(default)]
    pub bits_per_second: Option<f64>,
    /// Whether `/r/<id>` answers.
    #[serde(default)]
    pub link_enabled: bool,
}

impl HistoryEntry {
    /// Whether this line is a kept sweep (opened as a table, not overlaid).
    pub fn is_sweep(&self) -> bool {
        self.kind == ResultKind::Sweep
    }

    /// Whether this line is a kept latency-under-load run.
    pub fn is_latency(&self) -> bool {
        self.kind == ResultKind::Latency
    }
}

/// A kept sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptSweep {
    /// Result id (`/r/<id>`).
    pub id: String,
    /// When it was kept, Unix ms.
    pub created_ms: u64,
    /// The other peer, as given.
    pub peer: String,
    /// What each size ran (its `len` replaced by each size).
    pub spec: TestSpec,
    /// The rows.
    pub result: SweepResult,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
}

impl KeptSweep {
    /// Its page heading: the table's title line and the other peer.
    pub fn title(&self) -> String {
        let service = self.spec.dccp.map(|d| d.service);
        format!(
            "{} → {}",
            crate::format::sweep::title(&self.result, service),
            self.peer
        )
    }

    /// Its line in the history list: kind `sweep`, its total bytes and its best size's rate;
    /// `complete` when every size has figures, else `failed` saying how many did not.
    pub fn summary(&self) -> HistoryEntry {
        let points = &self.result.points;
        let failed = points.iter().filter(|p| p.error.is_some()).count();
        HistoryEntry {
            id: self.id.clone(),
            kind: ResultKind::Sweep,
            created_ms: self.created_ms,
            origin: Origin::Browser,
            role: PeerRole::Client,
            peer: self.peer.clone(),
            protocol: self.spec.protocol,
            direction: self.spec.direction,
            status: if failed == 0 {
                RunStatus::Complete
            } else {
                RunStatus::Failed
            },
            reason: (failed > 0).then(|| format!("{failed} of {} sizes failed", points.len())),
            bytes: Some(points.iter().map(|p| p.bytes).sum()),
            bits_per_second: points
                .iter()
                .filter(|p| p.error.is_none())
                .map(|p| p.bits_per_second)
                .reduce(f64::max),
            link_enabled: self.link_enabled,
        }
    }
}

/// One kept result as the token holder opens it (`GET /api/results/<id>`): its history line and
/// either a test's result (with both ends' intervals) or a kept sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenedResult {
    /// The history line (its link state included).
    pub summary: HistoryEntry,
    /// A test's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TestResult>,
    /// A kept sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<KeptSweep>,
    /// A kept latency-under-load run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<KeptLatency>,
}

/// A kept latency-under-load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptLatency {
    /// Result id (`/r/<id>`).
    pub id: String,
    /// When it was kept, Unix ms.
    pub created_ms: u64,
    /// The other peer, as given.
    pub peer: String,
    /// What was asked for.
    pub request: LatencyRequest,
    /// Every figure.
    pub result: LatencyResult,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
    /// Who started it here (a browser's run or `perfpeer test` on this machine).
    #[serde(default = "browser")]
    pub origin: Origin,
}

fn browser() -> Origin {
    Origin::Browser
}

impl KeptLatency {
    /// Its page heading.
    pub fn title(&self) -> String {
        crate::format::latency::title(&self.result)
    }

    /// Its line in the history list: kind `latency`, TCP both ways; `complete` when every phase
    /// ran, else `failed` with the first reason; the best throughput of any phase one way.
    pub fn summary(&self) -> HistoryEntry {
        let r = &self.result;
        let reason = r
            .error
            .clone()
            .or_else(|| r.phases.iter().find_map(|p| p.error.clone()))
            .or_else(|| (r.phases.len() < 4).then(|| "not every phase ran".to_string()));
        HistoryEntry {
            id: self.id.clone(),
            kind: ResultKind::Latency,
            created_ms: self.created_ms,
            origin: self.origin,
            role: PeerRole::Client,
            peer: self.peer.clone(),
            protocol: Protocol::Tcp,
            direction: Direction::Bidir,
            status: if reason.is_none() {
                RunStatus::Complete
            } else {
                RunStatus::Failed
            },
            reason,
            bytes: None,
            bits_per_second: r
                .phases
                .iter()
                .flat_map(|p| [p.down_bits_per_second, p.up_bits_per_second])
                .flatten()
                .reduce(f64::max),
            link_enabled: self.link_enabled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_and_pad_like_strings() {
        for s in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Cancelled,
            RunStatus::Failed,
            RunStatus::Aborted,
        ] {
            assert_eq!(from_word::<RunStatus>(&s.word()), Some(s));
        }
        assert_eq!(Origin::FarEnd.word(), "far_end");
        assert_eq!(format!("[{:8}]", Origin::Cli), "[cli     ]");
        assert_eq!(from_word::<Origin>("nobody"), None);
    }

    #[test]
    fn a_line_parses_from_the_peers_json() {
        let line: HistoryEntry = serde_json::from_str(
            r#"{"id":"ab","created_ms":5,"origin":"far_end","role":"server","peer":"pc",
               "protocol":"udp","direction":"reverse","status":"cancelled","reason":"cancelled"}"#,
        )
        .unwrap();
        assert_eq!(line.kind, ResultKind::Test, "kind defaults to a test");
        assert_eq!(
            (
                line.origin,
                line.role,
                line.protocol,
                line.direction,
                line.status
            ),
            (
                Origin::FarEnd,
                PeerRole::Server,
                Protocol::Udp,
                Direction::Reverse,
                RunStatus::Cancelled
            )
        );
        assert!(serde_json::from_str::<HistoryEntry>(r#"{"id":"x","status":"weird"}"#).is_err());
    }
}
