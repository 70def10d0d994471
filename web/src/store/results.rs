//! The model's side of stored results: loading the history, the comparison, opening a stored
//! result, the share link switch and delete, and reading the peer's answers (`/api/info`'s go
//! to `info`). Only [`Request`]s go out; the controller does the fetching.

use perfpeer_shared::report::TestResult;

use super::{Cmd, FinishedLatency, FinishedSweep, Model, Screen, Share, Shown};
use crate::history::{self, Purpose, Request};
use crate::present::Notice;
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::history::{KeptLatency, Notes};

impl Model {
    /// Asks for the list again (each time the screen opens: new tests may have been stored).
    pub(super) fn load_history(&mut self) -> Vec<Cmd> {
        // An open peer (`--open`) authorizes this page without a token.
        if !self.authorized {
            self.history.error = Some("The history needs this peer's token.".into());
            return Vec::new();
        }
        #[cfg(feature = "lab-store")]
        if let Some(e) = &self.history.filter.since_error {
            self.history.error = Some(format!("Not listed: {e}."));
            return Vec::new();
        }
        self.history.loading = true;
        #[cfg(feature = "lab-store")]
        let request = {
            let query = self.history.filter.query(None);
            self.history.asked = query.clone();
            // The next page is the new list's, once it is here.
            self.history.next = None;
            Request::List { query, more: false }
        };
        #[cfg(not(feature = "lab-store"))]
        let request = Request::List {};
        vec![Cmd::Fetch(request)]
    }

    /// The history filters the peer applies changed (a field left, or Enter): the list is
    /// asked for again with them.
    #[cfg(feature = "lab-store")]
    pub(super) fn filter_history(&mut self, filter: history::Filter) -> Vec<Cmd> {
        self.history.filter = filter;
        self.load_history()
    }

    /// The next page of the list, below what is shown.
    #[cfg(feature = "lab-store")]
    pub(super) fn more_history(&mut self) -> Vec<Cmd> {
        let Some(next) = self.history.next.clone().filter(|_| self.authorized) else {
            return Vec::new();
        };
        self.history.loading = true;
        vec![Cmd::Fetch(Request::List {
            query: self.history.filter.query(Some(&next)),
            more: true,
        })]
    }

    pub(super) fn compare(&mut self) -> Vec<Cmd> {
        if self.history.picked.len() < 2 {
            return Vec::new();
        }
        self.history.comparing = true;
        self.history.error = None;
        self.history
            .missing()
            .into_iter()
            .map(|id| {
                Cmd::Fetch(Request::Get {
                    id,
                    purpose: Purpose::Compare,
                })
            })
            .collect()
    }

    /// The user tapped a History row: the result is asked for, and its arrival is a place of
    /// its own (Back returns to History).
    pub(super) fn open_from_history(&mut self, id: String) -> Vec<Cmd> {
        self.opening = Some(id.clone());
        self.open(id)
    }

    /// Asks for stored result `id`, to show on the Result screen.
    pub(super) fn open(&mut self, id: String) -> Vec<Cmd> {
        vec![Cmd::Fetch(Request::Get {
            id,
            purpose: Purpose::Open,
        })]
    }

    pub(super) fn toggle_link(&mut self) -> Vec<Cmd> {
        match &self.share {
            Some(s) if self.authorized => vec![Cmd::Fetch(Request::SetLink {
                id: s.result_id.clone(),
                enabled: !s.link_enabled,
            })],
            _ => Vec::new(),
        }
    }

    pub(super) fn delete(&mut self) -> Vec<Cmd> {
        match &mut self.share {
            Some(s) if self.authorized && !s.confirm_delete => {
                s.confirm_delete = true;
                vec![Cmd::ExpireDeleteIn(super::DELETE_CONFIRM_MS)]
            }
            Some(s) if self.authorized => vec![Cmd::Fetch(Request::Delete {
                id: s.result_id.clone(),
            })],
            _ => Vec::new(),
        }
    }

    /// The second tap to delete did not come in time: back to a plain Delete.
    pub(super) fn delete_expired(&mut self) {
        if let Some(s) = &mut self.share {
            s.confirm_delete = false;
        }
    }

    /// Checks the notes as typed and asks the peer to keep them on the shown result.
    pub(super) fn save_notes(&mut self, text: &str, tags: &str) -> Vec<Cmd> {
        let authorized = self.authorized;
        let Some(share) = self.share.as_mut().filter(|_| authorized) else {
            return Vec::new();
        };
        share.notes_saved = false;
        match Notes::from_input(text, tags) {
            Ok(notes) => {
                share.notes_error = None;
                vec![Cmd::Fetch(Request::SetNotes {
                    id: share.result_id.clone(),
                    notes,
                })]
            }
            Err(e) => {
                share.notes_error = Some(format!("Not saved: {e}."));
                Vec::new()
            }
        }
    }

    pub(super) fn on_reply(&mut self, request: Request, status: u16, body: &str) -> Vec<Cmd> {
        let ok = (200..300).contains(&status);
        match request {
            // What the peer is now: the Peer screen's refresh.
            Request::Info => return self.on_info(status, body),
            #[cfg(feature = "lab-store")]
            Request::List { query, more } => {
                // An answer to filters since changed: the newer list is on its way.
                if !history::Filter::answers_current(&self.history.asked, &query, more) {
                    return Vec::new();
                }
                self.on_list(status, body, more);
            }
            #[cfg(not(feature = "lab-store"))]
            Request::List {} => self.on_list(status, body, false),
            Request::Get {
                id,
                purpose: Purpose::Open,
            } => return self.on_opened(id, status, body),
            Request::Get { id, .. } => match history::parse_opened(body).ok().filter(|_| ok) {
                Some(history::Opened {
                    result: Some(result),
                    ..
                }) => self.history.keep(&id, result),
                Some(history::Opened {
                    latency: Some(kept),
                    ..
                }) => self.history.keep_latency(&id, kept.result),
                _ => {
                    self.history.comparing = false;
                    self.history.error = Some(format!(
                        "Could not load a result to compare: {}.",
                        history::failure(status, body)
                    ));
                }
            },
            Request::SetLink { id, enabled } if ok => {
                if let Some(s) = self.share.as_mut().filter(|s| s.result_id == id) {
                    s.link_enabled = enabled;
                }
                if let Some(e) = self.history.entries.iter_mut().find(|e| e.id == id) {
                    e.link_enabled = enabled;
                }
            }
            Request::SetLink { .. } => {
                self.notice = Some(failed("Could not switch the link", status, body));
            }
            Request::SetNotes { id, notes } => {
                if let Some(s) = self.share.as_mut().filter(|s| s.result_id == id) {
                    if ok {
                        s.notes = notes.clone();
                        s.notes_saved = true;
                    } else {
                        s.notes_error =
                            Some(format!("Not saved: {}.", history::failure(status, body)));
                    }
                }
                if let (true, Some(e)) = (ok, self.history.entries.iter_mut().find(|e| e.id == id))
                {
                    e.notes = notes;
                }
            }
            // Gone already (404) is as good as deleted.
            Request::Delete { id } if ok || status == 404 => {
                self.history.forget(&id);
                if self.share.as_ref().is_some_and(|s| s.result_id == id) {
                    self.share = None;
                    self.shown = None;
                    self.screen = Screen::History;
                }
            }
            Request::Delete { .. } => {
                if let Some(s) = &mut self.share {
                    s.confirm_delete = false;
                }
                self.notice = Some(failed("Could not delete the result", status, body));
            }
        }
        Vec::new()
    }

    /// A page of the history arrived (or not): the list, or the next page below it (`more`).
    fn on_list(&mut self, status: u16, body: &str, more: bool) {
        let ok = (200..300).contains(&status);
        #[cfg(not(feature = "lab-store"))]
        let _ = more;
        self.history.loading = false;
        match history::parse_list(body).ok().filter(|_| ok) {
            Some(entries) => {
                self.history.error = None;
                #[cfg(feature = "lab-store")]
                {
                    self.history.next = entries
                        .last()
                        .filter(|_| entries.len() == history::PAGE)
                        .map(history::Entry::cursor_after);
                    if more {
                        let h = &mut self.history;
                        for e in entries {
                            if !h.entries.iter().any(|had| had.id == e.id) {
                                h.entries.push(e);
                            }
                        }
                        return;
                    }
                }
                self.history
                    .picked
                    .retain(|p| entries.iter().any(|e| &e.id == p));
                self.history.entries = entries;
            }
            None => {
                self.history.error = Some(format!(
                    "Could not load the history: {}.",
                    history::failure(status, body)
                ))
            }
        }
    }

    /// A stored result asked for to be shown arrived (or not). One the user tapped in History
    /// is a place of their own: the URL gets a new entry. One asked for before the row tapped
    /// last is not shown over it.
    fn on_opened(&mut self, id: String, status: u16, body: &str) -> Vec<Cmd> {
        if self.opening.as_ref().is_some_and(|tapped| *tapped != id) {
            return Vec::new();
        }
        let tapped = self.opening.take().is_some();
        let opened = history::parse_opened(body)
            .ok()
            .filter(|_| (200..300).contains(&status));
        match opened {
            Some(history::Opened {
                summary,
                sweep: Some(sweep),
                ..
            }) => self.show_stored_sweep(id, &summary, sweep),
            Some(history::Opened {
                summary,
                latency: Some(kept),
                ..
            }) => self.show_stored_latency(id, &summary, kept),
            Some(history::Opened {
                summary,
                result: Some(result),
                ..
            }) => self.show_stored(id, &summary, result),
            _ => {
                self.notice = Some(failed("Could not open the result", status, body));
                return Vec::new();
            }
        }
        if tapped {
            vec![Cmd::NewEntry]
        } else {
            Vec::new()
        }
    }

    fn show_stored_sweep(
        &mut self,
        id: String,
        summary: &history::Entry,
        kept: perfpeer_shared::history::KeptSweep,
    ) {
        self.share = Some(shared(&id, &id, summary));
        self.shown = Some(Shown::Sweep(FinishedSweep {
            context: kept.context(),
            sweep_id: id,
            spec: kept.spec,
            result: kept.result,
        }));
        self.screen = Screen::Result;
    }

    fn show_stored(&mut self, id: String, summary: &history::Entry, result: TestResult) {
        self.share = Some(shared(&id, &result.id, summary));
        self.shown = Some(Shown::Test(result));
        self.tab = Layout::Iperf3;
        self.screen = Screen::Result;
    }

    fn show_stored_latency(&mut self, id: String, summary: &history::Entry, kept: KeptLatency) {
        self.share = Some(shared(&id, &id, summary));
        self.shown = Some(Shown::Latency(FinishedLatency {
            latency_id: id,
            request: kept.request,
            result: kept.result,
        }));
        self.screen = Screen::Result;
    }
}

/// The share facts of a kept result opened from the history (its list line).
fn shared(result_id: &str, test_id: &str, summary: &history::Entry) -> Share {
    Share::new(
        result_id.to_string(),
        test_id.to_string(),
        summary.link_enabled,
        summary.notes.clone(),
    )
}

fn failed(title: &str, status: u16, body: &str) -> Notice {
    Notice {
        title: title.into(),
        detail: history::failure(status, body),
        hint: if status == 401 {
            "Enter the token the peer printed at start on the Connect screen.".into()
        } else {
            "Reload the history and try again.".into()
        },
    }
}
