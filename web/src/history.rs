//! The history screen and the share box, DOM-free: the peer's `/api/results` list parsed,
//! filtered and worded for its rows, the requests to its result API and how their answers are
//! read, the share link, and the comparison chart's lines. No fetch and no DOM here: the
//! controller sends a [`Request`] and hands the answer back as text.

use perfpeer_shared::format::chart::{self, Series};
use perfpeer_shared::history::{Notes, ResultKind, RunStatus, from_word};
use perfpeer_shared::latency::LatencyResult;
use perfpeer_shared::report::{PeerRole, Sending, TestResult};
use perfpeer_shared::spec::{Direction, Protocol};

use crate::present::rate;

/// One line of the peer's history (`GET /api/results`), newest first: the peer's own type.
pub use perfpeer_shared::history::HistoryEntry as Entry;

/// The list's body parsed.
pub fn parse_list(body: &str) -> Result<Vec<Entry>, String> {
    serde_json::from_str(body).map_err(|e| format!("the peer's history list did not parse: {e}"))
}

/// One stored result with its list facts (`GET /api/results/<id>`): the peer's own type.
pub use perfpeer_shared::history::OpenedResult as Opened;

/// A stored result's body parsed (it holds a test's result or a sweep).
pub fn parse_opened(body: &str) -> Result<Opened, String> {
    let opened: Opened =
        serde_json::from_str(body).map_err(|e| format!("the stored result did not parse: {e}"))?;
    if opened.result.is_none() && opened.sweep.is_none() && opened.latency.is_none() {
        return Err("the stored result holds neither a test, a sweep nor a latency run".into());
    }
    Ok(opened)
}

/// The history filters; an empty field lets everything through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Part of the peer's address or name, any case.
    pub peer: String,
    /// Only this protocol.
    pub protocol: Option<Protocol>,
    /// Only this direction, as the form words it from this peer's side (`normal`: this peer
    /// sent): a result this peer kept as the far end of a `reverse` test passes `normal`.
    pub direction: Option<Direction>,
    /// Only results carrying this tag (asked of the peer; PC builds' UI).
    #[cfg(feature = "lab-store")]
    pub tag: String,
    /// Only results begun at or after this time (ms since the Unix epoch; asked of the peer).
    #[cfg(feature = "lab-store")]
    pub since_ms: Option<u64>,
    /// Why the "since" field could not be read, if it could not.
    #[cfg(feature = "lab-store")]
    pub since_error: Option<String>,
}

/// Lines the History screen asks for a page at a time (PC builds' UI; a DUT lists its newest).
#[cfg(feature = "lab-store")]
pub const PAGE: usize = 200;

impl Filter {
    /// The filters as the page's fields read (`""` for any, else a protocol's or direction's
    /// word; a word that is neither lets everything through).
    #[allow(
        clippy::needless_update,
        reason = "PC builds' UI has more fields: the peer's filters"
    )]
    pub fn from_fields(peer: String, protocol: &str, direction: &str) -> Filter {
        Filter {
            peer,
            protocol: from_word(protocol),
            direction: from_word(direction),
            ..Filter::default()
        }
    }

    /// With the filters the peer applies: a tag, and a time (`since`: as
    /// [`perfpeer_shared::calendar::parse_when`] reads it, in the browser's zone; `now_ms` and
    /// `tz_offset_min` are the browser's clock and `getTimezoneOffset()`).
    #[cfg(feature = "lab-store")]
    pub fn with_asked(mut self, tag: &str, since: &str, now_ms: u64, tz_offset_min: i32) -> Filter {
        self.tag = tag.trim().to_string();
        let since = since.trim();
        (self.since_ms, self.since_error) = if since.is_empty() {
            (None, None)
        } else {
            match perfpeer_shared::calendar::parse_when(since, now_ms / 1000, -tz_offset_min) {
                Ok(secs) => (Some(secs.saturating_mul(1000)), None),
                Err(e) => (None, Some(e)),
            }
        };
        self
    }

    /// Whether an answer to `query` (a next page: `more`) is one to the filters now asked.
    #[cfg(feature = "lab-store")]
    pub fn answers_current(asked: &str, query: &str, more: bool) -> bool {
        match query.strip_prefix(asked) {
            Some(rest) => rest.is_empty() || (more && rest.starts_with("&before=")),
            None => false,
        }
    }

    /// The list's query for these filters: a page of [`PAGE`] lines, after the line whose
    /// cursor is `before` (`?limit=200&peer=…&tag=…&since=…&before=…`).
    #[cfg(feature = "lab-store")]
    pub fn query(&self, before: Option<&str>) -> String {
        let mut query = format!("?limit={PAGE}");
        let peer = self.peer.trim();
        for (key, value) in [("peer", peer), ("tag", self.tag.as_str())] {
            if !value.is_empty() {
                query.push_str(&format!("&{key}={}", url_encoded(value)));
            }
        }
        if let Some(since) = self.since_ms {
            query.push_str(&format!("&since={since}"));
        }
        if let Some(before) = before {
            query.push_str(&format!("&before={}", url_encoded(before)));
        }
        query
    }

    /// Whether `e` passes.
    pub fn matches(&self, e: &Entry) -> bool {
        let peer = self.peer.trim().to_lowercase();
        #[cfg(feature = "lab-store")]
        let kept_by_matches = e
            .kept_by
            .as_ref()
            .is_some_and(|k| k.to_lowercase().contains(&peer));
        #[cfg(not(feature = "lab-store"))]
        let kept_by_matches = false;
        (peer.is_empty() || e.peer.to_lowercase().contains(&peer) || kept_by_matches)
            && self.protocol.is_none_or(|p| e.protocol == p)
            && self
                .direction
                .is_none_or(|d| e.sending_here() == Sending::seen_from(d, PeerRole::Client))
    }
}

/// `text` as a URL query value: every byte but the unreserved ones percent-encoded.
#[cfg(feature = "lab-store")]
fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A request to this peer's result API (all but the page itself need the token), or for what
/// the peer is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// What the peer is now (`/api/info`, no token needed): the Peer screen's refresh.
    Info,
    /// The history list: a page of it (`query`: `""`, or a [`Filter::query`]), the first
    /// (replacing what is shown) or the next (`more`: added below it).
    List {
        /// The query string, `?` included.
        #[cfg(feature = "lab-store")]
        query: String,
        /// The next page.
        #[cfg(feature = "lab-store")]
        more: bool,
    },
    /// One stored result, to show it or to add it to the comparison.
    Get {
        /// Result id.
        id: String,
        /// What it is for.
        purpose: Purpose,
    },
    /// Turn a share link on or off.
    SetLink {
        /// Result id.
        id: String,
        /// On or off.
        enabled: bool,
    },
    /// Delete a result.
    Delete {
        /// Result id.
        id: String,
    },
    /// Write the notes on a result (checked already).
    SetNotes {
        /// Result id.
        id: String,
        /// What to keep.
        notes: Notes,
    },
}

/// Why a stored result is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Show it on the Result screen.
    Open,
    /// Draw it in the comparison chart.
    Compare,
}

impl Request {
    /// HTTP method.
    pub fn method(&self) -> &'static str {
        match self {
            Request::Info | Request::List { .. } | Request::Get { .. } => "GET",
            Request::SetLink { .. } => "POST",
            Request::Delete { .. } => "DELETE",
            Request::SetNotes { .. } => "PUT",
        }
    }

    /// Path on this peer.
    pub fn path(&self) -> String {
        match self {
            Request::Info => "/api/info".into(),
            #[cfg(feature = "lab-store")]
            Request::List { query, .. } => format!("/api/results{query}"),
            #[cfg(not(feature = "lab-store"))]
            Request::List {} => "/api/results".into(),
            Request::Get { id, .. } | Request::Delete { id } => format!("/api/results/{id}"),
            Request::SetLink { id, .. } => format!("/api/results/{id}/link"),
            Request::SetNotes { id, .. } => format!("/api/results/{id}/notes"),
        }
    }

    /// JSON body, if any.
    pub fn body(&self) -> Option<String> {
        match self {
            Request::SetLink { enabled, .. } => Some(format!("{{\"enabled\":{enabled}}}")),
            Request::SetNotes { notes, .. } => serde_json::to_string(notes).ok(),
            _ => None,
        }
    }
}

/// What went wrong with an answer, in plain words (`status` 0: the request never got one).
pub fn failure(status: u16, body: &str) -> String {
    let said = serde_json::from_str::<perfpeer_shared::control::ApiError>(body)
        .ok()
        .map(|e| e.error);
    match (status, said) {
        (0, _) => format!("the peer did not answer ({})", body.trim()),
        (401, _) => "the peer did not accept the token".into(),
        (404, _) => "no such result (deleted?)".into(),
        (_, Some(e)) => format!("the peer said: {e} (HTTP {status})"),
        _ => format!("the peer answered HTTP {status}"),
    }
}

/// The share link: `/r/<id>` on this page's own origin (`http://host:port`).
pub fn share_url(origin: &str, id: &str) -> String {
    format!("{}/r/{id}", origin.trim_end_matches('/'))
}

/// `2026-12-02 14:03:07 UTC+2` in the browser's time zone, the zone said (`tz_offset_min` is
/// JavaScript's `getTimezoneOffset()`: minutes to add to local time to get UTC, so UTC+2 is
/// -120).
pub fn when(created_ms: u64, tz_offset_min: i32) -> String {
    perfpeer_shared::calendar::date_words(created_ms / 1000, -tz_offset_min)
}

/// One history row as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Result id.
    pub id: String,
    /// Local date and time.
    pub when: String,
    /// `TCP TX` (TX: this peer, which kept it, sent), and `(far end)` when this peer served it.
    pub what: String,
    /// The other end.
    pub peer: String,
    /// `941 Mbit/s`, or a dash.
    pub throughput: String,
    /// The lab peer that kept it (`kept by pc-lab-2`), in a lab store's list; else empty.
    pub kept_by: String,
    /// `complete`, `cancelled: reason`, … ; `link off` appended when the share link is off.
    pub status: String,
    /// The notes' tags and first line, or empty.
    pub notes: String,
    /// `Wi-Fi -52 dBm · 144 Mbit/s PHY · 2.1 % retries` (`Wi-Fi (other peer) …` for the other
    /// peer's radio) where a radio carried the test, or empty.
    pub wifi: String,
}

/// The row for `e`.
pub fn row(e: &Entry, tz_offset_min: i32) -> Row {
    let mut what = format!("{} {}", e.protocol.upper_name(), e.sending_here().short());
    if e.role == PeerRole::Server {
        what.push_str(" (far end)");
    }
    if e.is_sweep() {
        what.push_str(" size sweep");
    }
    if e.is_latency() {
        what = "Latency under load".into();
    }
    let mut status = e.status.word();
    if let Some(r) = e
        .reason
        .as_ref()
        .filter(|r| e.status != RunStatus::Complete && **r != status)
    {
        status.push_str(&format!(": {r}"));
    }
    if !e.link_enabled {
        status.push_str(" · link off");
    }
    Row {
        id: e.id.clone(),
        when: when(e.created_ms, tz_offset_min),
        what,
        peer: e.peer.clone(),
        #[cfg(feature = "lab-store")]
        kept_by: e
            .kept_by
            .as_ref()
            .map(|k| format!("kept by {k}"))
            .unwrap_or_default(),
        #[cfg(not(feature = "lab-store"))]
        kept_by: String::new(),
        throughput: match e.bits_per_second {
            None => "–".into(),
            Some(b) if e.is_sweep() || e.is_latency() => format!("best {}", rate(b)),
            Some(b) => rate(b),
        },
        status,
        notes: e.notes.line(80),
        wifi: e
            .wifi
            .as_ref()
            .map(perfpeer_shared::format::wifi::brief_words)
            .unwrap_or_default(),
    }
}

/// The history screen's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// The list as the peer last sent it.
    pub entries: Vec<Entry>,
    /// A list request is on its way.
    pub loading: bool,
    /// The last list or comparison failure.
    pub error: Option<String>,
    /// The filters as typed.
    pub filter: Filter,
    /// The query of the list last asked for: an answer to an older one is dropped.
    #[cfg(feature = "lab-store")]
    pub asked: String,
    /// The cursor of the next page, when the last page was full.
    #[cfg(feature = "lab-store")]
    pub next: Option<String>,
    /// Ids ticked for the comparison, in the order ticked.
    pub picked: Vec<String>,
    /// The comparison chart was asked for (and stays until the picks change).
    pub comparing: bool,
    /// Results fetched for the comparison.
    pub loaded: Vec<TestResult>,
    /// Result id of each of `loaded`.
    pub loaded_ids: Vec<String>,
    /// Latency runs fetched for the comparison, with their result ids.
    pub loaded_latency: Vec<(String, LatencyResult)>,
}

impl History {
    /// The entries that pass the filter, newest first.
    pub fn visible(&self) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| self.filter.matches(e))
            .collect()
    }

    /// Ticks or unticks `id`: tests are overlaid with tests, latency runs with latency runs
    /// (their loaded round trips), sweeps not at all; the comparison chart goes until asked
    /// again.
    pub fn toggle(&mut self, id: &str) {
        let kind_of = |id: &str| self.entries.iter().find(|e| e.id == id).map(|e| e.kind);
        let Some(kind) = kind_of(id) else { return };
        if kind == ResultKind::Sweep {
            return;
        }
        let other_kind = self
            .picked
            .iter()
            .any(|p| p != id && kind_of(p).is_some_and(|k| k != kind));
        if other_kind {
            return;
        }
        match self.picked.iter().position(|p| p == id) {
            Some(i) => {
                self.picked.remove(i);
            }
            None => self.picked.push(id.to_string()),
        }
        self.comparing = false;
    }

    /// Picked ids whose results are not fetched yet.
    pub fn missing(&self) -> Vec<String> {
        self.picked
            .iter()
            .filter(|id| {
                !self.loaded_ids.contains(id) && !self.loaded_latency.iter().any(|(l, _)| l == *id)
            })
            .cloned()
            .collect()
    }

    /// Keeps a fetched latency run for the comparison.
    pub fn keep_latency(&mut self, id: &str, result: LatencyResult) {
        if !self.loaded_latency.iter().any(|(l, _)| l == id) {
            self.loaded_latency.push((id.to_string(), result));
        }
    }

    /// The latency comparison's runs, in the order picked, once all are fetched (`None` when
    /// the picks are tests).
    pub fn latency_overlay(&self, tz_offset_min: i32) -> Option<Vec<(String, &LatencyResult)>> {
        if !self.comparing || self.picked.len() < 2 || !self.missing().is_empty() {
            return None;
        }
        self.picked
            .iter()
            .map(|id| {
                let (_, r) = self.loaded_latency.iter().find(|(l, _)| l == id)?;
                let label = match self.entries.iter().find(|e| &e.id == id) {
                    Some(e) => {
                        let when = when(e.created_ms, tz_offset_min);
                        let time = when.split(' ').nth(1).unwrap_or(&when).to_string();
                        format!("{time} {}{}", e.peer, tags_suffix(&e.notes))
                    }
                    None => r.target.clone(),
                };
                Some((label, r))
            })
            .collect()
    }

    /// Keeps a fetched result for the comparison.
    pub fn keep(&mut self, id: &str, result: TestResult) {
        if !self.loaded_ids.iter().any(|l| l == id) {
            self.loaded_ids.push(id.to_string());
            self.loaded.push(result);
        }
    }

    /// Forgets a result (deleted).
    pub fn forget(&mut self, id: &str) {
        self.entries.retain(|e| e.id != id);
        self.picked.retain(|p| p != id);
        if let Some(i) = self.loaded_ids.iter().position(|l| l == id) {
            self.loaded_ids.remove(i);
            self.loaded.remove(i);
        }
        self.loaded_latency.retain(|(l, _)| l != id);
    }

    /// The comparison chart's lines, one per picked result in the order picked, once all are
    /// fetched; labelled with time and peer (and the test when they differ in kind).
    pub fn overlay(&self, tz_offset_min: i32) -> Option<Vec<Series>> {
        if !self.comparing || self.picked.len() < 2 || !self.missing().is_empty() {
            return None;
        }
        let lines = self
            .picked
            .iter()
            .map(|id| {
                let i = self.loaded_ids.iter().position(|l| l == id)?;
                let label = match self.entries.iter().find(|e| &e.id == id) {
                    Some(e) => overlay_label(e, tz_offset_min),
                    None => self.loaded[i].server_addr.clone(),
                };
                Some(chart::total_line(label, &self.loaded[i].local.intervals))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(lines)
    }
}

/// `14:03:07 pc:5210 TCP TX · ch36 fw-1.2` — the notes' tags tell runs apart (one legend row
/// on a phone, or two).
pub fn overlay_label(e: &Entry, tz_offset_min: i32) -> String {
    let when = when(e.created_ms, tz_offset_min);
    let time = when.split(' ').nth(1).unwrap_or(&when);
    format!(
        "{time} {} {} {}{}",
        e.peer,
        e.protocol.upper_name(),
        e.sending_here().short(),
        tags_suffix(&e.notes)
    )
}

/// ` · ch36 fw-1.2` for a result with tags, else nothing.
fn tags_suffix(notes: &Notes) -> String {
    if notes.tags.is_empty() {
        String::new()
    } else {
        format!(" · {}", notes.tags.join(" "))
    }
}

#[cfg(test)]
mod tests;
