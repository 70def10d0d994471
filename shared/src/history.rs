//! One line of a peer's result history, as the peer keeps it and the browser and `perfpeer
//! results list` read it (`GET /api/results`): one type for both ends, with enums where the
//! wire carries words (`"far_end"`, `"cancelled"`, …). The words are the JSON and the database
//! columns alike.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::latency::{LatencyRequest, LatencyResult};
use crate::report::{PeerRole, Sending, TestResult};
use crate::spec::{Direction, Protocol, TestSpec};
use crate::sweep::SweepResult;
use crate::wifi::LinkBrief;

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
    /// A regression plan's run kept whole (its cases' results are kept as tests too).
    Plan,
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
    crate::format::json_value(value)
        .as_str()
        .map(str::to_string)
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

/// What the token holder wrote on a kept result (driver version, channel, board): free text and
/// a few tags. Shown in the history, on `/r/<id>` and in the comparison chart's legend.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Notes {
    /// Free text (at most [`MAX_NOTES_TEXT`] characters).
    pub text: String,
    /// Short words to find and tell results apart by (`ch36`, `fw-1.2.3`).
    pub tags: Vec<String>,
}

/// Longest note text, in characters.
pub const MAX_NOTES_TEXT: usize = 1000;
/// Most tags on one result.
pub const MAX_TAGS: usize = 8;
/// Longest tag, in characters.
pub const MAX_TAG: usize = 32;

/// Why notes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotesError {
    /// The text is too long.
    #[error("the note is {0} characters: at most {MAX_NOTES_TEXT}")]
    TextTooLong(usize),
    /// A control character other than a line break or tab.
    #[error("the note has a control character")]
    ControlCharacter,
    /// Too many tags.
    #[error("{0} tags: at most {MAX_TAGS}")]
    TooManyTags(usize),
    /// A tag that is empty, too long or has a character tags do not: its place among the tags
    /// (from 1). The error names the place, never the tag: the words go back to whoever sent it.
    #[error(
        "tag {0}: 1 to {MAX_TAG} letters, digits or . _ - : / + = (no spaces: a space separates tags)"
    )]
    BadTag(usize),
}

impl Notes {
    /// Notes from a text and the tags as typed (separated by spaces or commas).
    pub fn from_input(text: &str, tags: &str) -> Result<Notes, NotesError> {
        Notes {
            text: text.to_string(),
            tags: tags
                .split([' ', ',', '\n', '\t'])
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
        }
        .checked()
    }

    /// The notes trimmed, tags without repeats, each within its bounds.
    pub fn checked(self) -> Result<Notes, NotesError> {
        let text = self.text.trim().to_string();
        let chars = text.chars().count();
        if chars > MAX_NOTES_TEXT {
            return Err(NotesError::TextTooLong(chars));
        }
        if text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(NotesError::ControlCharacter);
        }
        let mut tags: Vec<String> = Vec::new();
        for (place, tag) in self.tags.into_iter().enumerate() {
            let tag = tag.trim().to_string();
            let ok = (1..=MAX_TAG).contains(&tag.chars().count())
                && tag
                    .chars()
                    .all(|c| c.is_alphanumeric() || "._-:/+=".contains(c));
            if !ok {
                return Err(NotesError::BadTag(place + 1));
            }
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        if tags.len() > MAX_TAGS {
            return Err(NotesError::TooManyTags(tags.len()));
        }
        Ok(Notes { text, tags })
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.tags.is_empty()
    }

    /// One short line: the tags, then the text's first line (at most `max` characters).
    pub fn line(&self, max: usize) -> String {
        let first = self.text.lines().next().unwrap_or_default();
        let mut line = self.tags.join(" ");
        if !first.is_empty() {
            if !line.is_empty() {
                line.push_str(" · ");
            }
            line.push_str(first);
        }
        match line.char_indices().nth(max) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line,
        }
    }
}

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
    /// What the token holder wrote on it.
    #[serde(default, skip_serializing_if = "Notes::is_empty")]
    pub notes: Notes,
    /// A test's Wi-Fi link in three figures, where a radio carried it (none for sweeps,
    /// latency runs and results kept before rows had it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<LinkBrief>,
    /// Its verdict, when it had expectations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::verdict::Outcome>,
    /// The peer that kept it, in a lab's shared store (`--store postgres://…`); absent from
    /// a peer's own history.
    #[cfg(feature = "lab-store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_by: Option<String>,
}

impl HistoryEntry {
    /// The cursor of the list's page after this line (`<created_ms>_<id>`: a list is newest
    /// first, ties by id): `GET /api/results?before=…`, `perfpeer results list --before …`.
    #[cfg(feature = "lab-store")]
    pub fn cursor_after(&self) -> String {
        format!("{}_{}", self.created_ms, self.id)
    }

    /// Which way the data went, seen from the peer that kept the result.
    pub fn sending_here(&self) -> Sending {
        Sending::seen_from(self.direction, self.role)
    }

    /// Whether this line is a kept sweep (opened as a table, not overlaid).
    pub fn is_sweep(&self) -> bool {
        self.kind == ResultKind::Sweep
    }

    /// Whether this line is a kept latency-under-load run.
    pub fn is_latency(&self) -> bool {
        self.kind == ResultKind::Latency
    }
}

/// A kept sweep: one this peer ran, or one it served as the far end (its rows then are each
/// size's test as this peer kept it: the receiving end's figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptSweep {
    /// Result id (`/r/<id>`).
    pub id: String,
    /// When it was kept, Unix ms.
    pub created_ms: u64,
    /// The other peer: as given, or the client this peer was the far end of.
    pub peer: String,
    /// What each size ran (its `len` replaced by each size).
    pub spec: TestSpec,
    /// The rows.
    pub result: SweepResult,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
    /// Who started it here: a browser's run, or a client this peer was the far end of.
    #[serde(default = "browser")]
    pub origin: Origin,
    /// What the token holder wrote on it.
    #[serde(default, skip_serializing_if = "Notes::is_empty")]
    pub notes: Notes,
}

/// What a sweep's page says besides its table: when it was kept, which way the data went from
/// the page's peer, and the other peer.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepContext {
    /// When it was kept, Unix ms (none for a sweep shown before it was kept).
    pub kept_unix_ms: Option<u64>,
    /// Which way the data went, seen from the page's peer.
    pub sending: crate::report::Sending,
    /// The other peer: the target as given, or the client this peer was the far end of.
    pub other_peer: String,
    /// This peer's part: it started the sweep, or it was the far end.
    pub role: PeerRole,
}

impl KeptSweep {
    /// What its page says besides the table.
    pub fn context(&self) -> SweepContext {
        let role = self.origin.role();
        SweepContext {
            kept_unix_ms: Some(self.created_ms),
            sending: crate::report::Sending::seen_from(self.spec.direction, role),
            other_peer: self.peer.clone(),
            role,
        }
    }

    /// Its page heading: the table's title line and the other peer (the client, where this
    /// peer was the far end).
    pub fn title(&self) -> String {
        let service = self.spec.dccp.map(|d| d.service);
        let table = crate::format::sweep::title(&self.result, service);
        match self.origin {
            Origin::FarEnd => format!("{table} from {} (this peer was its far end)", self.peer),
            _ => format!("{table} → {}", self.peer),
        }
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
            origin: self.origin,
            role: self.origin.role(),
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
            notes: self.notes.clone(),
            wifi: None,
            verdict: None,
            #[cfg(feature = "lab-store")]
            kept_by: None,
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
    /// A kept plan run.
    #[cfg(feature = "plans")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<KeptPlan>,
}

/// A regression plan's run kept whole (`perfpeer plan run`).
#[cfg(feature = "plans")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptPlan {
    /// Result id (`/r/<id>`).
    pub id: String,
    /// When it was kept, Unix ms.
    pub created_ms: u64,
    /// The peers its cases ran against, as given (commas between them).
    pub peer: String,
    /// Its cases, their repeats and verdicts, and the comparison with its baseline.
    pub result: crate::plan::PlanResult,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
    /// Who started it here.
    pub origin: Origin,
    /// What the token holder wrote on it.
    #[serde(default, skip_serializing_if = "Notes::is_empty")]
    pub notes: Notes,
}

#[cfg(feature = "plans")]
impl KeptPlan {
    /// Its page heading.
    pub fn title(&self) -> String {
        format!("Plan {} against {}", self.result.name, self.peer)
    }

    /// Its line in the history list: kind `plan`, the first case's protocol and direction,
    /// `complete` or `cancelled` (stopped after a case), the first case's median.
    pub fn summary(&self) -> HistoryEntry {
        let r = &self.result;
        let first = r.cases.first();
        let stopped = r.status == crate::plan::PlanStatus::Stopped;
        HistoryEntry {
            id: self.id.clone(),
            kind: ResultKind::Plan,
            created_ms: self.created_ms,
            origin: self.origin,
            role: PeerRole::Client,
            peer: self.peer.clone(),
            protocol: first.map_or(Protocol::Tcp, |c| c.case.spec.protocol),
            direction: first.map_or(Direction::Normal, |c| c.case.spec.direction),
            status: if stopped {
                RunStatus::Cancelled
            } else {
                RunStatus::Complete
            },
            reason: stopped.then(|| {
                format!(
                    "stopped after {} of {} cases",
                    r.cases.len(),
                    r.planned_cases
                )
            }),
            bytes: None,
            bits_per_second: first
                .filter(|c| c.case.headline() == crate::verdict::Metric::Rx)
                .and_then(|c| c.headline.map(|h| h.median)),
            link_enabled: self.link_enabled,
            notes: self.notes.clone(),
            wifi: None,
            verdict: self.result.outcome(),
            #[cfg(feature = "lab-store")]
            kept_by: None,
        }
    }
}

/// A kept latency-under-load run: one this peer ran, or one it served as the far end (the load
/// alone then: the probe's round trips are the client's to measure, so there are none).
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
    /// Who started it here (a browser's run or `perfpeer test` on this machine), or the
    /// far end's client.
    #[serde(default = "browser")]
    pub origin: Origin,
    /// What the token holder wrote on it.
    #[serde(default, skip_serializing_if = "Notes::is_empty")]
    pub notes: Notes,
}

fn browser() -> Origin {
    Origin::Browser
}

impl Origin {
    /// This peer's end of what it started so: the far end's, or the client's.
    pub fn role(self) -> PeerRole {
        match self {
            Origin::FarEnd => PeerRole::Server,
            Origin::Cli | Origin::Browser => PeerRole::Client,
        }
    }
}

impl KeptLatency {
    /// The run judged by its request's expectations; none when it had none.
    pub fn verdict(&self) -> Option<crate::verdict::Verdict> {
        crate::verdict::Verdict::of_latency(&self.request, &self.result)
    }

    /// Its page heading; a far end's says that it has the load alone.
    pub fn title(&self) -> String {
        match self.origin {
            Origin::FarEnd => format!(
                "Latency under load from {}, as its far end saw it: the load only (the probe's \
                 round trips are measured by the client, not here)",
                self.peer
            ),
            _ => crate::format::latency::title(&self.result),
        }
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
            role: self.origin.role(),
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
            notes: self.notes.clone(),
            wifi: None,
            verdict: crate::verdict::Verdict::of_latency(&self.request, &self.result)
                .map(|v| v.outcome),
            #[cfg(feature = "lab-store")]
            kept_by: None,
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
    fn notes_are_bounded_and_tidied() {
        let n = Notes::from_input(
            "  fw 1.2.3 on the lab board\nsecond line ",
            "ch36, fw-1.2.3 ch36",
        )
        .unwrap();
        assert_eq!(n.text, "fw 1.2.3 on the lab board\nsecond line");
        assert_eq!(n.tags, ["ch36", "fw-1.2.3"]);
        assert_eq!(n.line(100), "ch36 fw-1.2.3 · fw 1.2.3 on the lab board");
        assert_eq!(n.line(8), "ch36 fw-…");
        assert!(Notes::default().is_empty());
        assert!(matches!(
            Notes::from_input(&"x".repeat(MAX_NOTES_TEXT + 1), ""),
            Err(NotesError::TextTooLong(_))
        ));
        assert_eq!(
            Notes::from_input("a\u{7}b", ""),
            Err(NotesError::ControlCharacter)
        );
        assert!(matches!(
            Notes::from_input("", "a b c d e f g h i"),
            Err(NotesError::TooManyTags(9))
        ));
        for bad in ["<b>", &"t".repeat(MAX_TAG + 1), "a;b"] {
            assert!(
                matches!(Notes::from_input("", bad), Err(NotesError::BadTag(_))),
                "{bad}"
            );
        }
        // The error names the tag's place, never the tag (the words go back to the sender).
        let refused = Notes::from_input("", "ok <script>").unwrap_err();
        assert_eq!(refused, NotesError::BadTag(2));
        assert!(!refused.to_string().contains("script"), "{refused}");
        // Through JSON, tags with spaces are refused too (a space separates typed tags).
        let sent = Notes {
            text: String::new(),
            tags: vec!["two words".into()],
        };
        assert!(sent.checked().is_err());
    }

    #[test]
    fn a_kept_sweep_says_whose_it_is() {
        let spec = serde_json::to_string(&TestSpec::new(Protocol::Udp)).unwrap();
        let result = r#"{"protocol":"udp","bitrate":null,"seconds_per_size":1.0,"points":[]}"#;
        // A peer's JSON from before far ends kept sweeps: the browser's.
        let old = format!(
            r#"{{"id":"ab","created_ms":5,"peer":"pc","spec":{spec},"result":{result},"link_enabled":true}}"#
        );
        let mut sweep: KeptSweep = serde_json::from_str(&old).unwrap();
        assert_eq!(
            (sweep.summary().origin, sweep.summary().role),
            (Origin::Browser, PeerRole::Client)
        );
        assert!(sweep.title().ends_with("→ pc"), "{}", sweep.title());
        sweep.origin = Origin::FarEnd;
        sweep.peer = "laptop (10.0.0.2)".into();
        assert_eq!(
            (sweep.summary().origin, sweep.summary().role),
            (Origin::FarEnd, PeerRole::Server)
        );
        assert!(
            sweep
                .title()
                .ends_with("from laptop (10.0.0.2) (this peer was its far end)"),
            "{}",
            sweep.title()
        );
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
        assert_eq!(
            line.wifi, None,
            "a line without a radio, or kept before rows had one"
        );
        let mut with_radio = line.clone();
        with_radio.wifi = Some(LinkBrief {
            signal_dbm: Some(-52.0),
            phy_mbps: Some(144.4),
            retries_percent: None,
            far: true,
        });
        let json = serde_json::to_string(&with_radio).unwrap();
        assert!(
            json.contains(r#""wifi":{"signal_dbm":-52.0,"phy_mbps":144.4,"far":true}"#),
            "{json}"
        );
        assert_eq!(
            serde_json::from_str::<HistoryEntry>(&json).unwrap(),
            with_radio
        );
        assert!(!serde_json::to_string(&line).unwrap().contains("wifi"));
    }
}
