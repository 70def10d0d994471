//! The model's side of the result shown: a finished test, sweep or latency run (one at a time,
//! [`Shown`]) as it arrives from the run in progress, and the share facts of a kept one.
//! Results opened from the history are in `results`.

use perfpeer_shared::control::ClientMsg;
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::history::{Notes, SweepContext};
use perfpeer_shared::latency::{LatencyRequest, LatencyResult};
use perfpeer_shared::report::{PeerRole, Sending, TestResult};
use perfpeer_shared::spec::{Protocol, TestSpec};
use perfpeer_shared::sweep::SweepResult;
use perfpeer_shared::verdict::Verdict;

use super::{Cmd, Model, Screen};

/// The result on the Result screen: one kind at a time.
// One per page, in place of the `Option`s it replaces: boxing a kind would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// A finished test.
    Test(TestResult),
    /// A finished packet-size sweep.
    Sweep(FinishedSweep),
    /// A finished latency-under-load run.
    Latency(FinishedLatency),
}

impl Shown {
    /// The id of the run whose result this is (a `stored` message with it gives the share link).
    pub fn id(&self) -> &str {
        match self {
            Shown::Test(result) => &result.id,
            Shown::Sweep(sweep) => &sweep.sweep_id,
            Shown::Latency(latency) => &latency.latency_id,
        }
    }
}

/// A finished latency-under-load run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedLatency {
    /// Its id from `latency_started` (a `stored` message with it gives the share link).
    pub latency_id: String,
    /// What was asked: its expectations judge the run (the result does not carry them).
    pub request: LatencyRequest,
    /// Every figure.
    pub result: LatencyResult,
}

impl FinishedLatency {
    /// The run judged by its request's expectations; none when it had none.
    pub fn verdict(&self) -> Option<Verdict> {
        Verdict::of_latency(&self.request, &self.result)
    }
}

/// A finished sweep with what it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSweep {
    /// Its id from `sweep_started` (a `stored` message with it gives the share link).
    pub sweep_id: String,
    /// Each size's test.
    pub spec: TestSpec,
    /// The rows.
    pub result: SweepResult,
    /// When it was kept, which way, and the peers (the other one is its target), for its page.
    pub context: SweepContext,
}

/// A stored result's share facts, for the Result screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// Result id (`/r/<id>`).
    pub result_id: String,
    /// The test it belongs to (`TestResult::id`): the box is shown only with that result.
    pub test_id: String,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
    /// Delete was tapped once; the next tap deletes.
    pub confirm_delete: bool,
    /// What the token holder wrote on it.
    pub notes: Notes,
    /// Why the notes were not saved (a bound, or the peer's answer).
    pub notes_error: Option<String>,
    /// The notes shown were just saved.
    pub notes_saved: bool,
}

impl Share {
    /// A kept result's share facts: link on or off, notes as kept.
    pub fn new(result_id: String, test_id: String, link_enabled: bool, notes: Notes) -> Share {
        Share {
            result_id,
            test_id,
            link_enabled,
            confirm_delete: false,
            notes,
            notes_error: None,
            notes_saved: false,
        }
    }
}

impl Model {
    /// Whether a finished test, sweep or latency run is there to show.
    pub fn has_result(&self) -> bool {
        self.shown.is_some()
    }

    /// The share facts of the result shown, when the peer keeps it (not another run's).
    pub fn shown_share(&self) -> Option<&Share> {
        let shown = self.shown.as_ref()?;
        self.share.as_ref().filter(|s| s.test_id == shown.id())
    }

    /// The notes on the result shown, as kept (none when it is not kept): its page, `/r/<id>`
    /// and the downloaded file alike, carries them.
    pub fn shown_notes(&self) -> Notes {
        self.shown_share()
            .map(|s| s.notes.clone())
            .unwrap_or_default()
    }

    /// `stored`: the run (still running or just finished) is kept; its share link.
    pub(super) fn on_stored(&mut self, test_id: String, result_id: String) {
        self.share = Some(Share::new(result_id, test_id, true, Notes::default()));
    }

    /// `result`: the test's result, on the tab its run asked for.
    pub(super) fn on_result(&mut self, result: TestResult) -> Vec<Cmd> {
        self.tab = self.run_tab;
        // A datagram tab only exists for datagram tests.
        if self.tab == Layout::Stream && result.spec.protocol == Protocol::Tcp {
            self.tab = Layout::Iperf3;
        }
        self.finished(Shown::Test(result))
    }

    /// `sweep_result`: the rows, with the target and spec the run had.
    pub(super) fn on_sweep_result(&mut self, sweep_id: String, result: SweepResult) -> Vec<Cmd> {
        let (target, spec) = match self.run.take() {
            Some(run) => (run.target, run.spec),
            None => (String::new(), TestSpec::new(result.protocol)),
        };
        let context = SweepContext {
            kept_unix_ms: None,
            sending: Sending::seen_from(spec.direction, PeerRole::Client),
            other_peer: target,
            role: PeerRole::Client,
        };
        self.finished(Shown::Sweep(FinishedSweep {
            sweep_id,
            spec,
            result,
            context,
        }))
    }

    /// `latency_result`: every figure of the latency run, with the request it ran (its
    /// expectations), as `latency_started` gave it.
    pub(super) fn on_latency_result(
        &mut self,
        latency_id: String,
        result: LatencyResult,
    ) -> Vec<Cmd> {
        let request = match self.run.as_ref().map(|run| &run.progress) {
            Some(super::Progress::Latency(run)) => run.request.clone(),
            Some(super::Progress::Test | super::Progress::Sweep(_)) | None => {
                LatencyRequest::default()
            }
        };
        self.finished(Shown::Latency(FinishedLatency {
            latency_id,
            request,
            result,
        }))
    }

    /// The run ended with `shown`: it replaces the result shown on the Result screen. The share
    /// link stays only when it is this run's (the peer kept it: `stored` came just before).
    fn finished(&mut self, shown: Shown) -> Vec<Cmd> {
        self.run = None;
        if self.share.as_ref().is_some_and(|s| s.test_id != shown.id()) {
            self.share = None;
        }
        self.shown = Some(shown);
        self.screen = Screen::Result;
        if self.can_send() {
            vec![Cmd::Send(ClientMsg::ListTests)]
        } else {
            Vec::new()
        }
    }
}
