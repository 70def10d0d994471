//! The page's state and its one transition function: [`Model::update`] takes a [`Msg`] (from the
//! user, the WebSocket or a timer) and returns the [`Cmd`]s for the controller to carry out
//! (send a message, (re)connect, remember the token). DOM-free and clock-free, so the connect,
//! run, reconnect-and-attach flows are unit-tested on the host.

use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, PeerInfo, RunningTest, ServerMsg};
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::latency::{LatencyRequest, LatencyResult, Live, Phase};
use perfpeer_shared::report::{IntervalReport, PeerRole, TestResult};
use perfpeer_shared::spec::{Protocol, TestSpec};
use perfpeer_shared::sweep::{SweepPoint, SweepResult};

use crate::form::{self, FormError, FormInput, TestRequest};
use crate::history::{Filter, History, Request};
use crate::present::{Notice, explain};
use crate::route::Route;
use perfpeer_shared::history::Notes;

/// Which screen is in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Token entry and connection state.
    Connect,
    /// What this peer is and runs.
    Peer,
    /// The new-test form.
    NewTest,
    /// A test in progress.
    Running,
    /// The last result.
    Result,
    /// The results this peer keeps (needs the token).
    History,
}

/// The WebSocket to this peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Opening.
    Connecting,
    /// Open and greeted.
    Open,
    /// Dropped; a reconnect is scheduled (attempt number, from 1).
    Lost {
        /// Reconnect attempts since the drop.
        attempt: u32,
    },
}

/// A test started from this page.
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    /// The other peer.
    pub target: String,
    /// What runs.
    pub spec: TestSpec,
    /// Known once `started` (or `sweep_started`) arrived; needed to `attach` after a reconnect.
    pub test_id: Option<String>,
    /// A packet-size sweep's progress, when this run is one.
    pub sweep: Option<SweepRun>,
    /// A latency-under-load run's progress, when this run is one.
    pub latency: Option<LatencyRun>,
    /// The client's (this peer's) intervals (of the running size, in a sweep).
    pub client: Vec<IntervalReport>,
    /// The far end's intervals.
    pub server: Vec<IntervalReport>,
    /// Cancel was asked for.
    pub cancelling: bool,
}

impl RunState {
    /// A run that has shown nothing yet; `sizes` makes it a sweep.
    fn new(
        target: String,
        spec: TestSpec,
        test_id: Option<String>,
        sizes: Option<Vec<u32>>,
    ) -> Self {
        RunState {
            target,
            spec,
            test_id,
            sweep: sizes.map(|sizes| SweepRun {
                sizes,
                points: Vec::new(),
                current_test: None,
            }),
            latency: None,
            client: Vec::new(),
            server: Vec::new(),
            cancelling: false,
        }
    }

    /// A latency-under-load run that has shown nothing yet.
    fn latency(target: String, request: LatencyRequest, latency_id: Option<String>) -> Self {
        let spec = request
            .tcp_load_spec(Phase::Both)
            .unwrap_or_else(|| TestSpec::new(Protocol::Tcp));
        RunState {
            latency: Some(LatencyRun {
                request,
                live: Live::default(),
            }),
            ..RunState::new(target, spec, latency_id, None)
        }
    }
}

/// A latency-under-load run in progress: what was asked and its events so far.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRun {
    /// What runs.
    pub request: LatencyRequest,
    /// Its events, folded.
    pub live: Live,
}

/// A finished latency-under-load run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedLatency {
    /// Its id from `latency_started` (a `stored` message with it gives the share link).
    pub latency_id: String,
    /// Every figure.
    pub result: LatencyResult,
}

/// A sweep in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRun {
    /// Every size, in order.
    pub sizes: Vec<u32>,
    /// Rows of the sizes done so far.
    pub points: Vec<SweepPoint>,
    /// Test id of the running size, whose intervals are in the run's lists.
    pub current_test: Option<String>,
}

impl SweepRun {
    /// The size running now, if any is left.
    pub fn running_size(&self) -> Option<u32> {
        self.sizes.get(self.points.len()).copied()
    }
}

/// A finished sweep with what it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSweep {
    /// Its id from `sweep_started` (a `stored` message with it gives the share link).
    pub sweep_id: String,
    /// The other peer.
    pub target: String,
    /// Each size's test.
    pub spec: TestSpec,
    /// The rows.
    pub result: SweepResult,
}

/// Everything the view draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Connection state.
    pub link: Link,
    /// The token in use.
    pub token: Option<String>,
    /// Whether the peer accepted it.
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
    /// The last finished test (`None` while a finished sweep is shown).
    pub result: Option<TestResult>,
    /// The last finished sweep (`None` while a test's result is shown).
    pub sweep: Option<FinishedSweep>,
    /// The last finished latency-under-load run (`None` while another result is shown).
    pub latency: Option<FinishedLatency>,
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
    /// The result tab a run's result opens on (its preset's tool; iperf3 otherwise).
    pub run_tab: Layout,
    /// What the last preset tap did, in words.
    pub preset_note: Option<String>,
    /// A run asked for by id (a reload on `#/run/<id>`, a tapped running test) whose replay has
    /// not begun yet.
    pub attaching: Option<String>,
    /// Where the URL pointed at load, to go once the peer has greeted this page.
    pub pending_route: Option<Route>,
}

/// How many other peers the page remembers.
pub const RECENT_PEERS: usize = 5;

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

/// Something that happened.
// A message lives for one update; boxing the large variants would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// Page loaded: the token from the URL fragment and the remembered one.
    Boot {
        /// From `#token=…`.
        fragment: Option<String>,
        /// From localStorage.
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
    /// A preset was tapped (its id; the target as typed in the form): fill in and start.
    Preset {
        /// Preset id.
        id: String,
        /// The form's target field.
        target: String,
    },
    /// Follow a running test of this peer (its attach id).
    AttachTo(String),
    /// The user cancelled the running test.
    Cancel,
    /// Refresh the list of running tests.
    Refresh,
    /// Close the error box.
    Dismiss,
    /// The history filters changed.
    SetFilter(Filter),
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
    /// Whether this is the user going somewhere in the page (a screen, a result, a run): the
    /// URL then gets a new history entry, so Back returns. Not for Back itself.
    pub fn is_navigation(&self) -> bool {
        matches!(
            self,
            Msg::Show(_)
                | Msg::Open(_)
                | Msg::Start(_)
                | Msg::RunAgain
                | Msg::QuickTest
                | Msg::Preset { .. }
                | Msg::AttachTo(_)
        )
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
    /// Remember the token in localStorage.
    SaveToken(String),
    /// Remember the recent peers and the last test's form in localStorage.
    SaveRecent(Vec<String>, FormInput),
    /// Put these values in the form (a preset's).
    FillForm(FormInput),
    /// Send [`Msg::DeleteExpired`] after this many milliseconds (replacing any earlier one).
    ExpireDeleteIn(u32),
    /// Ask this peer's result API, with the token.
    Fetch(Request),
}

/// Delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, then every 3 s.
pub fn backoff_ms(attempt: u32) -> u32 {
    match attempt {
        0 | 1 => 500,
        2 => 1000,
        3 => 2000,
        _ => 3000,
    }
}

impl Default for Model {
    fn default() -> Self {
        Model {
            link: Link::Connecting,
            token: None,
            authorized: false,
            token_rejected: false,
            peer: None,
            tests: Vec::new(),
            screen: Screen::Connect,
            run: None,
            result: None,
            sweep: None,
            latency: None,
            tab: Layout::Iperf3,
            notice: None,
            form_error: None,
            history: History::default(),
            share: None,
            recent_peers: Vec::new(),
            last_input: None,
            run_tab: Layout::Iperf3,
            preset_note: None,
            attaching: None,
            pending_route: None,
        }
    }
}

/// How long "Tap again to delete" waits for the second tap.
pub const DELETE_CONFIRM_MS: u32 = 4000;

impl Model {
    /// Applies `msg`; returns what the controller must do.
    pub fn update(&mut self, msg: Msg) -> Vec<Cmd> {
        match msg {
            Msg::Boot {
                fragment,
                stored,
                route,
            } => {
                let mut cmds = Vec::new();
                if let Some(t) = &fragment {
                    cmds.push(Cmd::SaveToken(t.clone()));
                }
                self.token = fragment.or(stored);
                self.pending_route = route;
                cmds.push(Cmd::Connect);
                cmds
            }
            Msg::Navigate(route) => self.navigate(route),
            Msg::SocketOpen => vec![Cmd::Send(ClientMsg::Hello {
                protocol_version: PROTOCOL_VERSION,
                token: self.token.clone(),
            })],
            Msg::SocketClosed => {
                let attempt = match self.link {
                    Link::Lost { attempt } => attempt + 1,
                    _ => 1,
                };
                self.link = Link::Lost { attempt };
                vec![Cmd::ReconnectIn(backoff_ms(attempt))]
            }
            Msg::ReconnectDue => match self.link {
                Link::Lost { .. } => vec![Cmd::Connect],
                _ => Vec::new(),
            },
            Msg::Server(m) => self.on_server(m),
            Msg::BadFrame(e) => {
                self.notice = Some(explain(ErrorCode::BadMessage, &e, None));
                Vec::new()
            }
            Msg::SubmitToken(t) => {
                let t = t.trim().to_string();
                if t.is_empty() {
                    return Vec::new();
                }
                self.token = Some(t.clone());
                self.token_rejected = false;
                self.link = Link::Connecting;
                // `hello` is the first message only: a new token needs a new connection.
                vec![Cmd::SaveToken(t), Cmd::Connect]
            }
            Msg::Show(screen) => {
                self.screen = screen;
                self.form_error = None;
                if screen != Screen::NewTest {
                    self.preset_note = None;
                }
                if screen == Screen::Peer && self.can_send() {
                    return vec![Cmd::Send(ClientMsg::ListTests)];
                }
                if screen == Screen::History {
                    return self.load_history();
                }
                Vec::new()
            }
            Msg::SelectTab(tab) => {
                self.tab = tab;
                Vec::new()
            }
            Msg::Start(input) => {
                self.run_tab = Layout::Iperf3;
                self.preset_note = None;
                self.start(&input)
            }
            Msg::Recall { peers, last } => {
                self.recent_peers = peers
                    .into_iter()
                    .filter(|p| form::check_target(p).is_ok())
                    .take(RECENT_PEERS)
                    .collect();
                // Only a form that still makes a test, to a peer still remembered.
                self.last_input = last.filter(|input| {
                    self.recent_peers.first() == Some(&input.target)
                        && (form::to_latency(input).is_some_and(|r| r.is_ok())
                            || form::to_request(input).is_ok())
                });
                Vec::new()
            }
            Msg::RunAgain => match self.last_input.clone() {
                Some(input) if self.run.is_none() => self.start(&input),
                _ => Vec::new(),
            },
            Msg::QuickTest => match self.quick_test() {
                Some(input) if self.run.is_none() => self.start(&input),
                _ if self.run.is_some() => {
                    self.screen = Screen::Running;
                    Vec::new()
                }
                _ => Vec::new(),
            },
            Msg::Preset { id, target } => self.preset(&id, target),
            Msg::AttachTo(id) => self.attach(id),
            Msg::Cancel => match &mut self.run {
                Some(run) if self.link == Link::Open => {
                    run.cancelling = true;
                    vec![Cmd::Send(ClientMsg::Cancel)]
                }
                _ => Vec::new(),
            },
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
            Msg::Pick(id) => {
                self.history.toggle(&id);
                Vec::new()
            }
            Msg::Compare => self.compare(),
            Msg::Open(id) => self.open(id),
            Msg::ToggleLink => self.toggle_link(),
            Msg::Delete => self.delete(),
            Msg::SaveNotes { text, tags } => self.save_notes(&text, &tags),
            Msg::DeleteExpired => {
                if let Some(s) = &mut self.share {
                    s.confirm_delete = false;
                }
                Vec::new()
            }
            Msg::Reply {
                request,
                status,
                body,
            } => self.on_reply(request, status, &body),
        }
    }

    fn can_send(&self) -> bool {
        self.link == Link::Open && self.authorized
    }

    fn start(&mut self, input: &FormInput) -> Vec<Cmd> {
        let asked = match form::to_latency(input) {
            Some(latency) => latency.map(|(target, request)| {
                (
                    RunState::latency(target.clone(), request.clone(), None),
                    ClientMsg::Latency { target, request },
                )
            }),
            None => form::to_request(input)
                .and_then(|r| self.check_dccp(r))
                .map(|request| {
                    let run = RunState::new(
                        request.target.clone(),
                        TestSpec::clone(&request.spec),
                        None,
                        request.sweep.clone(),
                    );
                    (run, request.message())
                }),
        };
        match asked {
            Err(e) => {
                self.form_error = Some(e);
                Vec::new()
            }
            Ok(_) if self.run.is_some() => {
                self.screen = Screen::Running;
                Vec::new()
            }
            Ok(_) if !self.can_send() => {
                self.notice = Some(not_connected(self.link == Link::Open));
                Vec::new()
            }
            Ok((run, message)) => {
                self.form_error = None;
                self.notice = None;
                let target = run.target.clone();
                self.recent_peers.retain(|p| *p != target);
                self.recent_peers.insert(0, target);
                self.recent_peers.truncate(RECENT_PEERS);
                self.last_input = Some(input.clone());
                self.run = Some(run);
                self.attaching = None;
                self.screen = Screen::Running;
                vec![
                    Cmd::Send(message),
                    Cmd::SaveRecent(self.recent_peers.clone(), input.clone()),
                ]
            }
        }
    }

    /// A DCCP request to a peer that cannot open DCCP sockets is refused here, with the reason
    /// the peer gave (the far peer's support is checked when the test starts).
    fn check_dccp(&self, request: TestRequest) -> Result<TestRequest, FormError> {
        match &self.peer {
            Some(peer) if request.spec.protocol == Protocol::Dccp && !peer.dccp.available => {
                Err(FormError {
                    field: "protocol",
                    message: format!(
                        "This peer cannot run DCCP: {}",
                        peer.dccp
                            .reason
                            .as_deref()
                            .unwrap_or("its kernel offers no DCCP sockets")
                    ),
                })
            }
            _ => Ok(request),
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
                // Also the first message of an `attach` replay: start the interval lists afresh.
                self.restart_run(RunState::new(target, spec, Some(test_id), None));
                Vec::new()
            }
            ServerMsg::SweepStarted {
                sweep_id,
                target,
                spec,
                sizes,
            } => {
                // Also the first message of an `attach` replay: start afresh.
                self.restart_run(RunState::new(target, spec, Some(sweep_id), Some(sizes)));
                Vec::new()
            }
            ServerMsg::LatencyStarted {
                latency_id,
                target,
                request,
            } => {
                // Also the first message of an `attach` replay: start afresh.
                self.restart_run(RunState::latency(target, request, Some(latency_id)));
                Vec::new()
            }
            ServerMsg::LatencyEvent { latency_id, event } => {
                if let Some(run) = &mut self.run
                    && run.test_id.as_deref() == Some(latency_id.as_str())
                    && let Some(latency) = &mut run.latency
                {
                    latency.live.apply(&event);
                }
                Vec::new()
            }
            ServerMsg::LatencyResult { latency_id, result } => {
                self.run = None;
                self.result = None;
                self.sweep = None;
                if self.share.as_ref().is_some_and(|s| s.test_id != latency_id) {
                    self.share = None;
                }
                self.latency = Some(FinishedLatency { latency_id, result });
                self.screen = Screen::Result;
                if self.can_send() {
                    vec![Cmd::Send(ClientMsg::ListTests)]
                } else {
                    Vec::new()
                }
            }
            ServerMsg::SweepPoint { sweep_id, point } => {
                if let Some(run) = &mut self.run
                    && run.test_id.as_deref() == Some(sweep_id.as_str())
                    && let Some(sweep) = &mut run.sweep
                {
                    sweep.points.push(point);
                }
                Vec::new()
            }
            ServerMsg::SweepResult { sweep_id, result } => {
                let (target, spec) = match self.run.take() {
                    Some(run) => (run.target, run.spec),
                    None => (String::new(), TestSpec::new(result.protocol)),
                };
                self.result = None;
                self.latency = None;
                // The peer kept the sweep (`stored` came just before): keep its share link.
                if self.share.as_ref().is_some_and(|s| s.test_id != sweep_id) {
                    self.share = None;
                }
                self.sweep = Some(FinishedSweep {
                    sweep_id,
                    target,
                    spec,
                    result,
                });
                self.screen = Screen::Result;
                if self.can_send() {
                    vec![Cmd::Send(ClientMsg::ListTests)]
                } else {
                    Vec::new()
                }
            }
            ServerMsg::Interval {
                test_id,
                role,
                report,
            } => {
                if let Some(run) = &mut self.run {
                    if let Some(sweep) = &mut run.sweep {
                        // Each size is a test of its own: its intervals start the lists afresh.
                        if sweep.current_test.as_deref() != Some(test_id.as_str()) {
                            sweep.current_test = Some(test_id.clone());
                            run.client.clear();
                            run.server.clear();
                        }
                    } else if run.test_id.as_deref().is_some_and(|id| id != test_id) {
                        return Vec::new();
                    }
                    match role {
                        PeerRole::Client => run.client.push(report),
                        PeerRole::Server => run.server.push(report),
                    }
                }
                Vec::new()
            }
            ServerMsg::Stored { test_id, result_id } => {
                self.share = Some(Share::new(result_id, test_id, true, Notes::default()));
                Vec::new()
            }
            ServerMsg::Result { result } => {
                self.run = None;
                if self.share.as_ref().is_some_and(|s| s.test_id != result.id) {
                    self.share = None;
                }
                self.result = Some(result);
                self.sweep = None;
                self.latency = None;
                self.tab = self.run_tab;
                // A datagram tab only exists for datagram tests.
                if self.tab == Layout::Stream
                    && self
                        .result
                        .as_ref()
                        .is_some_and(|r| r.spec.protocol == Protocol::Tcp)
                {
                    self.tab = Layout::Iperf3;
                }
                self.screen = Screen::Result;
                if self.can_send() {
                    vec![Cmd::Send(ClientMsg::ListTests)]
                } else {
                    Vec::new()
                }
            }
            ServerMsg::Tests { tests } => {
                self.tests = tests;
                Vec::new()
            }
            ServerMsg::Error { code, message } => self.on_error(code, &message),
            // Far-end messages are not for a browser.
            _ => Vec::new(),
        }
    }

    /// Replaces the run's state, keeping a cancel already asked for. An attach asked for is
    /// answered: its replay begins.
    fn restart_run(&mut self, mut run: RunState) {
        run.cancelling = self.run.as_ref().is_some_and(|r| r.cancelling);
        self.run = Some(run);
        if self.attaching.take().is_some() {
            self.screen = Screen::Running;
        }
    }

    /// What "Test to <peer>" runs: the last test again, or a default one to the peer tested
    /// last; `None` when no peer was tested from this page.
    pub fn quick_test(&self) -> Option<FormInput> {
        self.last_input.clone().or_else(|| {
            self.recent_peers.first().map(|target| FormInput {
                target: target.clone(),
                ..FormInput::default()
            })
        })
    }

    /// A preset tap: its values in the form (the target kept), and the test started when the
    /// form names a target; the note says which happened.
    fn preset(&mut self, id: &str, target: String) -> Vec<Cmd> {
        let Some(preset) = form::preset(id) else {
            return Vec::new();
        };
        let mut input = FormInput {
            target,
            ..preset.input
        };
        // An unpaced preset to a peer that caps the rate: at the cap, or the peer refuses it.
        if let Some(cap) = self.peer.as_ref().map(|p| p.max_bitrate).filter(|c| *c > 0)
            && input.bitrate.trim() == "0"
        {
            input.bitrate = cap.to_string();
        }
        let mut cmds = vec![Cmd::FillForm(input.clone())];
        if input.target.trim().is_empty() {
            self.form_error = Some(FormError {
                field: "target",
                message: "Type the other peer's address, then tap Start test.".into(),
            });
            self.preset_note = Some(format!("Filled in: {}.", preset.label));
            return cmds;
        }
        self.run_tab = preset.tab;
        cmds.extend(self.start(&input));
        self.preset_note = Some(if self.screen == Screen::Running {
            format!("Started: {}.", preset.label)
        } else {
            format!("Filled in: {}.", preset.label)
        });
        cmds
    }

    /// Follows run `id` of this peer: at once on an idle connection; on one that follows
    /// another run, over a new connection (a connection follows one run at a time).
    fn attach(&mut self, id: String) -> Vec<Cmd> {
        if self.run.as_ref().and_then(|r| r.test_id.as_deref()) == Some(id.as_str()) {
            self.screen = Screen::Running;
            return Vec::new();
        }
        if !self.can_send() {
            self.pending_route = Some(Route::Run(id));
            return Vec::new();
        }
        self.attaching = Some(id.clone());
        self.screen = Screen::Running;
        if self.run.take().is_some() {
            self.link = Link::Connecting;
            return vec![Cmd::Connect];
        }
        vec![Cmd::Send(ClientMsg::Attach { test_id: id })]
    }

    /// Goes where a route points (Back, Forward, or the URL at load once greeted).
    fn navigate(&mut self, route: Route) -> Vec<Cmd> {
        if !self.can_send() && !matches!(route, Route::Connect | Route::Peer) {
            self.pending_route = Some(route);
            return Vec::new();
        }
        let show = |model: &mut Model, screen| model.update(Msg::Show(screen));
        match route {
            Route::Connect => show(self, Screen::Connect),
            Route::Peer => show(self, Screen::Peer),
            Route::New => show(self, Screen::NewTest),
            Route::History => show(self, Screen::History),
            Route::Run(id) => self.attach(id),
            Route::Starting if self.run.is_some() => show(self, Screen::Running),
            Route::Starting => show(self, Screen::NewTest),
            Route::Result(Some(id)) if self.share.as_ref().is_some_and(|s| s.result_id == id) => {
                show(self, Screen::Result)
            }
            Route::Result(Some(id)) => {
                self.screen = Screen::Result;
                self.open(id)
            }
            Route::Result(None) if self.has_result() => show(self, Screen::Result),
            Route::Result(None) => show(self, Screen::Peer),
        }
    }

    /// Whether a finished test, sweep or latency run is there to show.
    pub fn has_result(&self) -> bool {
        self.result.is_some() || self.sweep.is_some() || self.latency.is_some()
    }

    /// Where the page is, for the URL: a run by its id, a stored result by its result id; before
    /// the peer's greeting, where the URL pointed at load (not to lose it).
    pub fn route(&self) -> Route {
        if let Some(route) = &self.pending_route {
            return route.clone();
        }
        match self.screen {
            Screen::Connect => Route::Connect,
            Screen::Peer => Route::Peer,
            Screen::NewTest => Route::New,
            Screen::History => Route::History,
            Screen::Running => match self
                .run
                .as_ref()
                .and_then(|r| r.test_id.clone())
                .or_else(|| self.attaching.clone())
            {
                Some(id) => Route::Run(id),
                None => Route::Starting,
            },
            Screen::Result => Route::Result(
                self.share
                    .as_ref()
                    .filter(|s| self.shown_id() == Some(s.test_id.as_str()))
                    .map(|s| s.result_id.clone()),
            ),
        }
    }

    /// The id of the run whose result is shown.
    fn shown_id(&self) -> Option<&str> {
        self.result
            .as_ref()
            .map(|r| r.id.as_str())
            .or(self.sweep.as_ref().map(|s| s.sweep_id.as_str()))
            .or(self.latency.as_ref().map(|l| l.latency_id.as_str()))
    }

    fn on_welcome(&mut self, peer: PeerInfo, authorized: bool) -> Vec<Cmd> {
        self.peer = Some(peer);
        self.link = Link::Open;
        self.authorized = authorized;
        self.token_rejected = self.token.is_some() && !authorized;
        if !authorized {
            self.screen = Screen::Connect;
            return Vec::new();
        }
        let mut cmds = vec![Cmd::Send(ClientMsg::ListTests)];
        if self.run.is_none()
            && let Some(id) = &self.attaching
        {
            cmds.push(Cmd::Send(ClientMsg::Attach {
                test_id: id.clone(),
            }));
            return cmds;
        }
        // The token works: a reload on the token screen lands on the Peer screen instead.
        if self.run.is_none()
            && let Some(route) = self.pending_route.take().filter(|r| *r != Route::Connect)
        {
            if self.screen == Screen::Connect {
                self.screen = Screen::Peer;
            }
            cmds.extend(self.navigate(route));
            return cmds;
        }
        match &self.run {
            Some(RunState {
                test_id: Some(id), ..
            }) => cmds.push(Cmd::Send(ClientMsg::Attach {
                test_id: id.clone(),
            })),
            Some(run) => {
                // Dropped before `started`: the test may run on, but it cannot be identified.
                self.notice = Some(Notice {
                    title: "The connection dropped while the test was starting".into(),
                    detail: format!("test to {}", run.target),
                    hint:
                        "It may still be running: see This peer's running tests, or start it again."
                            .into(),
                });
                self.run = None;
                self.screen = Screen::NewTest;
            }
            None if self.screen == Screen::Connect => self.screen = Screen::Peer,
            None => {}
        }
        cmds
    }

    fn on_error(&mut self, code: ErrorCode, message: &str) -> Vec<Cmd> {
        if code == ErrorCode::Unauthorized {
            self.token_rejected = self.token.is_some();
            self.authorized = false;
            self.screen = Screen::Connect;
            return Vec::new();
        }
        if let Some(id) = self.attaching.take() {
            // The run asked for by id is gone (finished a while ago, or the peer restarted).
            if self.screen == Screen::Running {
                self.screen = Screen::Peer;
            }
            self.notice = Some(Notice {
                title: format!("Test {id} is no longer on this peer"),
                detail: message.to_string(),
                hint: "A finished test's result is in History when the peer kept it.".into(),
            });
            return Vec::new();
        }
        let target = self.run.as_ref().map(|r| r.target.clone());
        let ends_run = !matches!(code, ErrorCode::BadMessage | ErrorCode::UnexpectedMessage);
        if ends_run && self.run.take().is_some() {
            self.screen = Screen::NewTest;
        }
        self.notice = Some(explain(code, message, target.as_deref()));
        Vec::new()
    }
}

/// Starting a test needs the connection and the token: says which one is missing.
fn not_connected(link_open: bool) -> Notice {
    if link_open {
        Notice {
            title: "This page has no token for the peer".into(),
            detail: "Running tests from a browser needs the token the peer printed at start."
                .into(),
            hint: "Enter it on the Connect screen, or open the link the peer printed (it \
                   carries the token after #token=)."
                .into(),
        }
    } else {
        Notice {
            title: "Not connected to the peer".into(),
            detail: String::new(),
            hint: "Wait for the connection to come back (it retries by itself), then start \
                   the test again."
                .into(),
        }
    }
}

mod results;
#[cfg(test)]
mod tests;
