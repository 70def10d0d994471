//! The model's side of the run in progress: starting one (from the form, again, by one tap, by
//! a preset, by the Peer screen's first-open Start to the other peer typed), following one by
//! id, cancelling, and the peer's messages while it runs (started, intervals, sweep points,
//! latency events). Its end is in `shown`.

use perfpeer_shared::control::{ClientMsg, ErrorCode};
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, Live, Phase};
use perfpeer_shared::report::{IntervalReport, PeerRole};
use perfpeer_shared::spec::{Protocol, TestSpec};
use perfpeer_shared::sweep::SweepPoint;

use super::{Cmd, Link, Model, Screen};
use crate::form::{self, FormError, FormInput, TestRequest, host_and_port};
use crate::present::{Notice, explain};
use crate::route::Route;

/// A test started from this page.
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    /// The other peer.
    pub target: String,
    /// What runs.
    pub spec: TestSpec,
    /// Known once `started` (or `sweep_started`) arrived; needed to `attach` after a reconnect.
    pub test_id: Option<String>,
    /// What kind of run this is, with the progress only that kind has.
    pub progress: Progress,
    /// The client's (this peer's) intervals (of the running size, in a sweep).
    pub client: Vec<IntervalReport>,
    /// The far end's intervals.
    pub server: Vec<IntervalReport>,
    /// Cancel was asked for.
    pub cancelling: bool,
}

/// What kind of run is in progress, with what only that kind keeps.
// One per run, in place of the `Option`s it replaces: boxing a kind would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// One test (a stream and request/response too): its progress is the run's intervals.
    Test,
    /// A packet-size sweep: the sizes done so far.
    Sweep(SweepRun),
    /// A latency-under-load run: its events so far.
    Latency(LatencyRun),
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
            progress: match sizes {
                Some(sizes) => Progress::Sweep(SweepRun {
                    sizes,
                    points: Vec::new(),
                    current_test: None,
                }),
                None => Progress::Test,
            },
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
            progress: Progress::Latency(LatencyRun {
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

impl Model {
    /// The user started a test from the form: its result opens on the iperf3 tab.
    pub(super) fn start_as_typed(&mut self, input: &FormInput) -> Vec<Cmd> {
        self.run_tab = Layout::Iperf3;
        self.preset_note = None;
        self.start(input)
    }

    /// "Run again": the last run as it was, when none runs.
    pub(super) fn run_again(&mut self) -> Vec<Cmd> {
        match self.last_input.clone() {
            Some(input) if self.run.is_none() => self.start(&input),
            _ => Vec::new(),
        }
    }

    /// "Test to <peer>": starts [`Model::quick_test`], or shows the run that runs.
    pub(super) fn run_quick_test(&mut self) -> Vec<Cmd> {
        match self.quick_test() {
            Some(input) if self.run.is_none() => self.start(&input),
            _ if self.run.is_some() => {
                self.screen = Screen::Running;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Whether the Peer screen asks for the other peer's address: a first open (no peer tested
    /// from this page, so no "Test to <peer>"), nothing running, and the page may run tests.
    pub fn offers_first_test(&self) -> bool {
        self.authorized
            && self.run.is_none()
            && self.attaching.is_none()
            && self.quick_test().is_none()
    }

    /// The Peer screen's Start on a first open: a default test (TCP, this peer sends, 10 s) to
    /// the other peer typed, which the New test form then holds too. This peer's own address
    /// (`here`, or one of its addresses at that port) is refused: the other peer is the one
    /// at the far end of the link.
    pub(super) fn first_test(&mut self, typed: &str, here: &str) -> Vec<Cmd> {
        let input = FormInput {
            target: typed.trim().to_string(),
            ..FormInput::default()
        };
        if !input.target.is_empty() && self.is_this_peer(&input.target, here) {
            self.form_error = Some(FormError {
                field: "target",
                message: format!(
                    "{} is this peer: type the other peer's address, the peer at the far end \
                     of the link to test",
                    input.target
                ),
            });
            return Vec::new();
        }
        let cmds = self.start_as_typed(&input);
        if !cmds.iter().any(|c| matches!(c, Cmd::Send(_))) {
            return cmds;
        }
        std::iter::once(Cmd::FillForm(input)).chain(cmds).collect()
    }

    /// Whether `target` names this peer: the address this page came from, or one of the peer's
    /// addresses at the same port.
    fn is_this_peer(&self, target: &str, here: &str) -> bool {
        let (host, port) = host_and_port(target);
        let (here_host, here_port) = host_and_port(here);
        let listed = self
            .peer
            .as_ref()
            .is_some_and(|p| p.addresses.iter().any(|a| a.eq_ignore_ascii_case(&host)));
        port == here_port && (host == here_host || listed)
    }

    pub(super) fn cancel(&mut self) -> Vec<Cmd> {
        match &mut self.run {
            Some(run) if self.link == Link::Open => {
                run.cancelling = true;
                vec![Cmd::Send(ClientMsg::Cancel)]
            }
            _ => Vec::new(),
        }
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
                self.notice = Some(not_connected(self.link == Link::Open, self.token_rejected));
                Vec::new()
            }
            Ok((run, message)) => {
                self.form_error = None;
                self.notice = None;
                self.run_started(run.target.clone(), input);
                self.run = Some(run);
                self.attaching = None;
                self.screen = Screen::Running;
                vec![Cmd::Send(message)]
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

    /// A preset tap: its values in the form (the target kept), and the test started when the
    /// form names a target; the note says which happened.
    pub(super) fn preset(&mut self, id: &str, target: String) -> Vec<Cmd> {
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
    pub(super) fn attach(&mut self, id: String) -> Vec<Cmd> {
        if self.run.as_ref().and_then(|r| r.test_id.as_deref()) == Some(id.as_str()) {
            self.screen = Screen::Running;
            return Vec::new();
        }
        #[cfg(feature = "plans")]
        if self.follows_plan(&id) {
            self.screen = Screen::Plans;
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

    /// Replaces the run's state, keeping a cancel already asked for. An attach asked for is
    /// answered: its replay begins.
    fn restart_run(&mut self, mut run: RunState) {
        run.cancelling = self.run.as_ref().is_some_and(|r| r.cancelling);
        self.run = Some(run);
        if self.attaching.take().is_some() {
            self.screen = Screen::Running;
        }
    }

    /// `started`, also the first message of an `attach` replay: the interval lists start afresh.
    pub(super) fn on_started(&mut self, test_id: String, target: String, spec: TestSpec) {
        self.restart_run(RunState::new(target, spec, Some(test_id), None));
    }

    /// `sweep_started`, also the first message of an `attach` replay: start afresh.
    pub(super) fn on_sweep_started(
        &mut self,
        sweep_id: String,
        target: String,
        spec: TestSpec,
        sizes: Vec<u32>,
    ) {
        self.restart_run(RunState::new(target, spec, Some(sweep_id), Some(sizes)));
    }

    /// `latency_started`, also the first message of an `attach` replay: start afresh.
    pub(super) fn on_latency_started(
        &mut self,
        latency_id: String,
        target: String,
        request: LatencyRequest,
    ) {
        self.restart_run(RunState::latency(target, request, Some(latency_id)));
    }

    /// The run in progress, when it is run `id`.
    fn run_with_id(&mut self, id: &str) -> Option<&mut RunState> {
        self.run
            .as_mut()
            .filter(|run| run.test_id.as_deref() == Some(id))
    }

    pub(super) fn on_latency_event(&mut self, latency_id: &str, event: &LatencyEvent) {
        let Some(run) = self.run_with_id(latency_id) else {
            return;
        };
        match &mut run.progress {
            Progress::Latency(latency) => latency.live.apply(event),
            // Only a latency run has latency events.
            Progress::Test | Progress::Sweep(_) => {}
        }
    }

    pub(super) fn on_sweep_point(&mut self, sweep_id: &str, point: SweepPoint) {
        let Some(run) = self.run_with_id(sweep_id) else {
            return;
        };
        match &mut run.progress {
            Progress::Sweep(sweep) => sweep.points.push(point),
            // Only a sweep has sweep points.
            Progress::Test | Progress::Latency(_) => {}
        }
    }

    pub(super) fn on_interval(&mut self, test_id: &str, role: PeerRole, report: IntervalReport) {
        let Some(run) = &mut self.run else {
            return;
        };
        match &mut run.progress {
            Progress::Sweep(sweep) => {
                // Each size is a test of its own: its intervals start the lists afresh.
                if sweep.current_test.as_deref() != Some(test_id) {
                    sweep.current_test = Some(test_id.to_string());
                    run.client.clear();
                    run.server.clear();
                }
            }
            Progress::Test | Progress::Latency(_) => {
                if run.test_id.as_deref().is_some_and(|id| id != test_id) {
                    return;
                }
            }
        }
        match role {
            PeerRole::Client => run.client.push(report),
            PeerRole::Server => run.server.push(report),
        }
    }
}

/// Starting a test needs the connection and the token: says which one is missing, or that the
/// peer refused the token this page has (in the Connect screen's words).
fn not_connected(link_open: bool, token_rejected: bool) -> Notice {
    if link_open && token_rejected {
        Notice {
            detail: "Running tests from a browser needs the token the peer printed at start; \
                     it refused the one this page has."
                .into(),
            ..explain(ErrorCode::Unauthorized, "", None)
        }
    } else if link_open {
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
