//! The page's state and its one transition function: [`Model::update`] takes a [`Msg`] (from the
//! user, the WebSocket or a timer) and returns the [`Cmd`]s for the controller to carry out
//! (send a message, (re)connect, remember the token). DOM-free and clock-free, so the connect,
//! run, reconnect-and-attach flows are unit-tested on the host. `update` only routes each
//! message to the part of the model it concerns: the link and the token (`link`), the screens
//! and the URL (`nav`), the run in progress (`run`), the result shown (`shown`), the peers
//! tested from this page (`peers`), the Plans screen (`plans`), the results the peer keeps (`results`) and the Peer
//! screen's refresh of what this peer is now, its radios (`info`).

use perfpeer_shared::control::{ClientMsg, ErrorCode, PeerInfo, RunningTest, ServerMsg};
use perfpeer_shared::format::layout::Layout;

use crate::form::{FormError, FormInput};
use crate::history::{Filter, History, Request};
use crate::present::{Notice, explain};
use crate::route::Route;

pub use info::{INFO_REFRESH_MS, radios_text};
pub use link::{Link, backoff_ms};
pub use nav::Screen;
pub use peers::RECENT_PEERS;
#[cfg(feature = "plans")]
pub use plans::{PlanRun, Plans, duration_words};
pub use run::{LatencyRun, Progress, RunState, SweepRun};
pub use shown::{FinishedLatency, FinishedSweep, Share, Shown};

/// Everything the view draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Connection state.
    pub link: Link,
    /// The token in use (being tried, or accepted).
    pub token: Option<String>,
    /// The token remembered in this browser: the last one the peer accepted. A new token (from
    /// a link or typed) replaces it only once accepted; refused, this one is tried again.
    pub saved_token: Option<String>,
    /// A new token was refused and the remembered one is being tried instead.
    pub falling_back: bool,
    /// Whether the peer lets this page run tests and read its results: the token is accepted,
    /// or the peer is open (`--open`) and needs none.
    pub authorized: bool,
    /// The peer said the token is wrong.
    pub token_rejected: bool,
    /// From `welcome`.
    pub peer: Option<PeerInfo>,
    /// From `tests`.
    pub tests: Vec<RunningTest>,
    /// Front screen.
    pub screen: Screen,
    /// The test in progress.
    pub run: Option<RunState>,
    /// The last finished test, sweep or latency run: one at a time.
    pub shown: Option<Shown>,
    /// Selected result tab.
    pub tab: Layout,
    /// An error to show, in plain words.
    pub notice: Option<Notice>,
    /// A form field that needs fixing.
    pub form_error: Option<FormError>,
    /// The history screen.
    pub history: History,
    /// Where the shown result is kept, when it is (its share link).
    pub share: Option<Share>,
    /// Other peers tested from this page, most recent first (remembered across reloads).
    pub recent_peers: Vec<String>,
    /// The last form that started a run, for "Run again" and "Test to <peer>" (remembered
    /// across reloads).
    pub last_input: Option<FormInput>,
    /// The peer and form of the run just started, remembered among the recent peers only once
    /// that peer answered (a target that never did is not offered again).
    pub unconfirmed_peer: Option<(String, FormInput)>,
    /// The result tab a run's result opens on (its preset's tool; iperf3 otherwise).
    pub run_tab: Layout,
    /// What the last preset tap did, in words.
    pub preset_note: Option<String>,
    /// A run asked for by id (a reload on `#/run/<id>`, a tapped running test) whose replay has
    /// not begun yet.
    pub attaching: Option<String>,
    /// Where the URL pointed at load, to go once the peer has greeted this page.
    pub pending_route: Option<Route>,
    /// The Plans screen: the peer's plans and the plan run followed.
    #[cfg(feature = "plans")]
    pub plans: Plans,
    /// A stored result the user opened from the History screen, not arrived yet: when it
    /// comes, its place gets a new entry in the browser's history (Back returns to History).
    pub opening: Option<String>,
}

/// Something that happened.
// A message lives for one update; boxing the large variants would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// Page loaded: the token from the URL fragment and the remembered one.
    Boot {
        /// From `#token=…`: tried first, remembered once the peer accepts it.
        fragment: Option<String>,
        /// From localStorage (the last token the peer accepted).
        stored: Option<String>,
        /// The place the URL names (`#/run/<id>`, …), if it names one.
        route: Option<Route>,
    },
    /// Back or Forward moved to this place.
    Navigate(Route),
    /// The WebSocket opened.
    SocketOpen,
    /// The WebSocket closed or failed.
    SocketClosed,
    /// The reconnect delay passed, or the browser came back online.
    ReconnectDue,
    /// A message from the peer.
    Server(ServerMsg),
    /// A frame that is not a server message.
    BadFrame(String),
    /// The user typed a token.
    SubmitToken(String),
    /// The user picked a screen.
    Show(Screen),
    /// The user picked a result tab.
    SelectTab(Layout),
    /// The user started a test.
    Start(FormInput),
    /// The peers this page tested before and its last test's form (from localStorage at load).
    Recall {
        /// Other peers, most recent first.
        peers: Vec<String>,
        /// The form that started the last run.
        last: Option<FormInput>,
    },
    /// Start the last run again, as it was.
    RunAgain,
    /// The big "Test to <peer>" button: the last test again, or a default test to the peer
    /// tested last.
    QuickTest,
    /// The Peer screen's Start on a first open: a default test to the other peer typed.
    FirstTest {
        /// The other peer's address as typed.
        target: String,
        /// This peer's control address as this page reached it (`host:port`).
        here: String,
    },
    /// A preset was tapped (its id; the target as typed in the form): fill in and start.
    Preset {
        /// Preset id.
        id: String,
        /// The form's target field.
        target: String,
    },
    /// Run the peer's plan of this name (as its list gave it).
    #[cfg(feature = "plans")]
    RunPlan {
        /// As its list gave it.
        name: String,
        /// Tags for the run and each of its tests, separated by spaces or commas.
        tags: String,
    },
    /// Stop the plan run after its running case.
    #[cfg(feature = "plans")]
    StopPlan,
    /// Follow a running test of this peer (its attach id).
    AttachTo(String),
    /// The user cancelled the running test.
    Cancel,
    /// Refresh the list of running tests.
    Refresh,
    /// Close the error box.
    Dismiss,
    /// The history filters changed (as typed: applied to the rows shown).
    SetFilter(Filter),
    /// The history filters the peer applies changed: the list is asked for again.
    #[cfg(feature = "lab-store")]
    FilterHistory(Filter),
    /// Show the next page of the history below the rows shown.
    #[cfg(feature = "lab-store")]
    MoreHistory,
    /// A history row's box was ticked or unticked (result id).
    Pick(String),
    /// Overlay the ticked results.
    Compare,
    /// Open a stored result on the Result screen (result id).
    Open(String),
    /// Turn the shown result's share link off when on, on when off.
    ToggleLink,
    /// Delete the shown result (asks once more first).
    Delete,
    /// The second tap to delete did not come in time: back to a plain Delete.
    DeleteExpired,
    /// Save notes on the shown result (its text and its tags as typed).
    SaveNotes {
        /// Free text.
        text: String,
        /// Tags separated by spaces or commas.
        tags: String,
    },
    /// Time to ask this peer again what it is now (the Peer screen's radios).
    InfoDue,
    /// The peer answered a [`Request`] (status 0: no answer; `body` then says why).
    Reply {
        /// What was asked.
        request: Request,
        /// HTTP status.
        status: u16,
        /// The body as text.
        body: String,
    },
}

impl Msg {
    /// Whether this is the user going somewhere in the page (a screen, a run): the URL then
    /// gets a new history entry, so Back returns. Not for Back itself. A result opened from
    /// History moves the page only when it arrives: that reply says so ([`Cmd::NewEntry`]).
    pub fn is_navigation(&self) -> bool {
        match self {
            Msg::Show(_)
            | Msg::Start(_)
            | Msg::RunAgain
            | Msg::QuickTest
            | Msg::FirstTest { .. }
            | Msg::Preset { .. }
            | Msg::AttachTo(_) => true,
            #[cfg(feature = "plans")]
            Msg::RunPlan { .. } => true,
            _ => false,
        }
    }
}

/// Something for the controller to do.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    /// (Re)open the WebSocket now (closing any open one).
    Connect,
    /// Open it again after this many milliseconds.
    ReconnectIn(u32),
    /// Send a message.
    Send(ClientMsg),
    /// Remember the token in localStorage (the peer accepted it).
    SaveToken(String),
    /// Remember the recent peers and the last test's form in localStorage.
    SaveRecent(Vec<String>, FormInput),
    /// Put these values in the form (a preset's, or the Peer screen's first test).
    FillForm(FormInput),
    /// Send [`Msg::DeleteExpired`] after this many milliseconds (replacing any earlier one).
    ExpireDeleteIn(u32),
    /// Ask this peer's result API, with the token.
    Fetch(Request),
    /// The place the page moved to is the user's doing, though it came with a reply (a result
    /// opened from History): give it a new entry in the browser's history, so Back returns.
    NewEntry,
    /// Send [`Msg::InfoDue`] after this many milliseconds (replacing any earlier one).
    RefreshInfoIn(u32),
    /// Drop the timer of [`Cmd::RefreshInfoIn`]: the Peer screen closed.
    StopInfoRefresh,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            link: Link::Connecting,
            token: None,
            saved_token: None,
            falling_back: false,
            authorized: false,
            token_rejected: false,
            peer: None,
            tests: Vec::new(),
            screen: Screen::Connect,
            run: None,
            shown: None,
            tab: Layout::Iperf3,
            notice: None,
            form_error: None,
            history: History::default(),
            share: None,
            recent_peers: Vec::new(),
            last_input: None,
            unconfirmed_peer: None,
            run_tab: Layout::Iperf3,
            preset_note: None,
            attaching: None,
            pending_route: None,
            opening: None,
            #[cfg(feature = "plans")]
            plans: Plans::default(),
        }
    }
}

/// How long "Tap again to delete" waits for the second tap.
pub const DELETE_CONFIRM_MS: u32 = 4000;

impl Model {
    /// Applies `msg`; returns what the controller must do.
    pub fn update(&mut self, msg: Msg) -> Vec<Cmd> {
        let before = self.screen;
        let mut cmds = self.handle(msg);
        cmds.extend(self.screen_changed(before));
        cmds
    }

    /// Routes `msg` to the part of the model it concerns.
    fn handle(&mut self, msg: Msg) -> Vec<Cmd> {
        match msg {
            Msg::Boot {
                fragment,
                stored,
                route,
            } => self.boot(fragment, stored, route),
            Msg::Navigate(route) => self.navigate(route),
            Msg::SocketOpen => self.socket_open(),
            Msg::SocketClosed => self.socket_closed(),
            Msg::ReconnectDue => self.reconnect_due(),
            Msg::Server(m) => self.on_server(m),
            Msg::BadFrame(e) => {
                self.notice = Some(explain(ErrorCode::BadMessage, &e, None));
                Vec::new()
            }
            Msg::SubmitToken(t) => self.submit_token(&t),
            Msg::Show(screen) => self.show(screen),
            Msg::SelectTab(tab) => {
                self.tab = tab;
                Vec::new()
            }
            Msg::Start(input) => self.start_as_typed(&input),
            Msg::Recall { peers, last } => {
                self.recall(peers, last);
                Vec::new()
            }
            Msg::RunAgain => self.run_again(),
            Msg::QuickTest => self.run_quick_test(),
            Msg::FirstTest { target, here } => self.first_test(&target, &here),
            Msg::Preset { id, target } => self.preset(&id, target),
            Msg::AttachTo(id) => self.attach(id),
            #[cfg(feature = "plans")]
            Msg::RunPlan { name, tags } => self.run_plan(name, &tags),
            #[cfg(feature = "plans")]
            Msg::StopPlan => self.stop_plan(),
            Msg::Cancel => self.cancel(),
            Msg::Refresh if self.can_send() => vec![Cmd::Send(ClientMsg::ListTests)],
            Msg::Refresh => Vec::new(),
            Msg::Dismiss => {
                self.notice = None;
                Vec::new()
            }
            Msg::SetFilter(f) => {
                self.history.filter = f;
                Vec::new()
            }
            #[cfg(feature = "lab-store")]
            Msg::FilterHistory(f) => self.filter_history(f),
            #[cfg(feature = "lab-store")]
            Msg::MoreHistory => self.more_history(),
            Msg::Pick(id) => {
                self.history.toggle(&id);
                Vec::new()
            }
            Msg::Compare => self.compare(),
            Msg::Open(id) => self.open_from_history(id),
            Msg::ToggleLink => self.toggle_link(),
            Msg::Delete => self.delete(),
            Msg::SaveNotes { text, tags } => self.save_notes(&text, &tags),
            Msg::DeleteExpired => {
                self.delete_expired();
                Vec::new()
            }
            Msg::InfoDue => self.info_due(),
            Msg::Reply {
                request,
                status,
                body,
            } => self.on_reply(request, status, &body),
        }
    }

    fn on_server(&mut self, msg: ServerMsg) -> Vec<Cmd> {
        match msg {
            ServerMsg::Welcome {
                peer, authorized, ..
            } => self.on_welcome(peer, authorized),
            ServerMsg::Started {
                test_id,
                target,
                spec,
            } => {
                self.on_started(test_id, target, spec);
                Vec::new()
            }
            ServerMsg::SweepStarted {
                sweep_id,
                target,
                spec,
                sizes,
            } => {
                self.on_sweep_started(sweep_id, target, spec, sizes);
                Vec::new()
            }
            ServerMsg::LatencyStarted {
                latency_id,
                target,
                request,
            } => {
                self.on_latency_started(latency_id, target, request);
                Vec::new()
            }
            ServerMsg::LatencyEvent { latency_id, event } => {
                self.on_latency_event(&latency_id, &event);
                self.peer_answered()
            }
            ServerMsg::LatencyResult { latency_id, result } => {
                self.on_latency_result(latency_id, result)
            }
            ServerMsg::SweepPoint { sweep_id, point } => {
                let measured = point.error.is_none();
                self.on_sweep_point(&sweep_id, point);
                if measured {
                    self.peer_answered()
                } else {
                    Vec::new()
                }
            }
            ServerMsg::SweepResult { sweep_id, result } => self.on_sweep_result(sweep_id, result),
            ServerMsg::Interval {
                test_id,
                role,
                report,
            } => {
                self.on_interval(&test_id, role, report);
                self.peer_answered()
            }
            ServerMsg::Stored { test_id, result_id } => {
                self.on_stored(test_id, result_id);
                Vec::new()
            }
            ServerMsg::Result { result } => {
                // A result with the far end's report, or complete, is an answer from the peer.
                let answered = result.remote.is_some()
                    || result.status == perfpeer_shared::report::TestStatus::Complete;
                let mut cmds = self.on_result(result);
                if answered {
                    cmds.extend(self.peer_answered());
                }
                cmds
            }
            ServerMsg::Tests { tests } => {
                self.tests = tests;
                Vec::new()
            }
            #[cfg(feature = "plans")]
            ServerMsg::PlanList { plans } => {
                self.on_plan_list(plans);
                Vec::new()
            }
            #[cfg(feature = "plans")]
            ServerMsg::PlanStarted {
                plan_id,
                name,
                cases,
                ..
            } => {
                self.on_plan_started(plan_id, name, cases);
                Vec::new()
            }
            #[cfg(feature = "plans")]
            ServerMsg::PlanEvent { plan_id, event } => {
                self.on_plan_event(&plan_id, event);
                Vec::new()
            }
            #[cfg(feature = "plans")]
            ServerMsg::PlanEnded { plan_id, end } => {
                self.on_plan_ended(&plan_id, end);
                Vec::new()
            }
            ServerMsg::Error { code, message } => {
                #[cfg(feature = "plans")]
                {
                    self.plan_refused();
                    if code == ErrorCode::UnknownTest {
                        self.plan_gone();
                    }
                }
                self.on_error(code, &message)
            }
            // Far-end messages are not for a browser.
            _ => Vec::new(),
        }
    }
}

mod info;
mod link;
mod nav;
mod peers;
#[cfg(feature = "plans")]
mod plans;
mod results;
mod run;
mod shown;
#[cfg(test)]
mod tests;
