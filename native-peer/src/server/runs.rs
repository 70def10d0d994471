//! Tests, sweeps and latency runs a browser started with `run`, `sweep` or `latency`, kept apart
//! from the connection that asked for them, so a network blip does not kill them. One
//! supervisor loop serves every kind:
//! it writes the run's events to its [`RunLog`], cancels it when nobody followed it for the
//! grace period or on shutdown, writes its end, and keeps the finished log attachable for a
//! while. What a run is (a test against any target, a sweep, latency under load) is handed in
//! from above as a [`Runner`](super::runner::Runner), so this layer does not import `targets`,
//! `sweep` or `latency`.

use std::any::Any;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use perfpeer_shared::control::{ErrorCode, ServerMsg};
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult};
use perfpeer_shared::report::{PeerRole, TestResult};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::SweepResult;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::{JoinError, JoinHandle};

use super::metrics::{TestCount, TestKind};
use super::run_log::{DETACHED_GRACE, KEEP_FINISHED, RunLog};
use super::state::{RunningGuard, ServerState};
use crate::session::SessionError;
use crate::session::events::{SweepEvent, TestEvent};
use crate::store::{Origin, Recording};

/// Starts a run in the background (it holds `slot` until it ends) and returns its log.
pub(crate) fn start(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    target: String,
    spec: ValidSpec,
) -> Arc<RunLog> {
    let log = RunLog::new();
    let (events_tx, events) = mpsc::unbounded_channel();
    let job = state
        .runner
        .run(target.clone(), spec.clone(), events_tx, log.cancel_token());
    let run = TestRun {
        state: state.clone(),
        log: log.clone(),
        target,
        spec: spec.into_inner(),
        test_id: String::new(),
        running: None,
        rec: None,
        counted: None,
    };
    spawn_supervised(state, slot, run, job, events);
    log
}

/// Starts a packet-size sweep in the background (holding `slot` until it ends) and returns its
/// log, already attachable under its `sweep_id`.
pub(crate) fn start_sweep(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    target: String,
    spec: TestSpec,
    sizes: Vec<u32>,
) -> Arc<RunLog> {
    let log = RunLog::new();
    let sweep_id = crate::util::random_id();
    state.runs.insert(&sweep_id, log.clone());
    log.push(ServerMsg::SweepStarted {
        sweep_id: sweep_id.clone(),
        target: target.clone(),
        spec: spec.clone(),
        sizes: sizes.clone(),
    });
    let (events_tx, events) = mpsc::unbounded_channel();
    let job = state.runner.sweep(
        target.clone(),
        spec.clone(),
        sizes,
        events_tx,
        log.cancel_token(),
    );
    let run = SweepRun {
        state: state.clone(),
        log: log.clone(),
        sweep_id,
        target,
        spec,
        test_id: String::new(),
        running: None,
    };
    spawn_supervised(state, slot, run, job, events);
    log
}

/// Starts latency under load in the background (holding `slot` until it ends) and returns its
/// log, already attachable under its `latency_id`.
pub(crate) fn start_latency(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    target: String,
    request: LatencyRequest,
) -> Arc<RunLog> {
    let log = RunLog::new();
    let latency_id = crate::util::random_id();
    state.runs.insert(&latency_id, log.clone());
    log.push(ServerMsg::LatencyStarted {
        latency_id: latency_id.clone(),
        target: target.clone(),
        request: request.clone(),
    });
    // Listed among the running tests as its heaviest phase: TCP both ways.
    let shown = request
        .tcp_load_spec(perfpeer_shared::latency::Phase::Both)
        .unwrap_or_else(|| TestSpec::new(perfpeer_shared::spec::Protocol::Tcp));
    let running = Some(state.track(
        &latency_id,
        PeerRole::Client,
        target.clone(),
        &shown,
        Some(&latency_id),
    ));
    let (events_tx, events) = mpsc::unbounded_channel();
    let job = state.runner.latency(
        target.clone(),
        request.clone(),
        events_tx,
        log.cancel_token(),
    );
    let run = LatencyRun {
        state: state.clone(),
        log: log.clone(),
        latency_id,
        target,
        request,
        _running: running,
    };
    spawn_supervised(state, slot, run, job, events);
    log
}

/// One kind of run as the supervisor sees it: what its events and its end write to its log.
pub(super) trait Supervised: Send + 'static {
    /// What the running job reports.
    type Event: Send;
    /// What the job ends with.
    type Output: Send + 'static;
    /// The run's log.
    fn log(&self) -> &Arc<RunLog>;
    /// The id the run is attachable under (empty until its test has started).
    fn id(&self) -> &str;
    /// Whether nobody following it for [`DETACHED_GRACE`] cancels it (a plan runs on
    /// unattended: a phone that sleeps through a regression attaches again when it wakes).
    fn cancel_when_unfollowed(&self) -> bool {
        true
    }
    /// Logs one event.
    fn on_event(&mut self, ev: Self::Event);
    /// Keeps what is to be kept and says how the run ended.
    fn on_end(
        &mut self,
        joined: Result<Self::Output, JoinError>,
    ) -> impl Future<Output = ServerMsg> + Send;
}

/// A run with its job and its events, as the one [`supervise`] loop drives every kind: that
/// loop is compiled once, not once per kind (14 KB of a MIPS build were its three copies).
trait Supervision: Send {
    /// The run's log.
    fn log(&self) -> &Arc<RunLog>;
    /// The id the run is attachable under (empty until its test has started).
    fn id(&self) -> &str;
    /// Whether nobody following it for [`DETACHED_GRACE`] cancels it.
    fn cancel_when_unfollowed(&self) -> bool;
    /// Logs the run's next event (`Ready(false)`), or says its job has ended (`Ready(true)`).
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<bool>;
    /// After the job's end: logs the events still queued, keeps what is to be kept and says
    /// how the run ended.
    fn end(&mut self) -> BoxFuture<'_, ServerMsg>;
}

/// A run of kind `S`, its job's task and the events the job sends. The task's output is
/// boxed as `Any` (and read back as `S::Output`), so tokio's task code is compiled once for
/// every kind of run.
struct Supervisee<S: Supervised> {
    run: S,
    job: JoinHandle<Box<dyn Any + Send>>,
    joined: Option<Result<S::Output, JoinError>>,
    events: mpsc::UnboundedReceiver<S::Event>,
}

impl<S: Supervised> Supervision for Supervisee<S> {
    fn log(&self) -> &Arc<RunLog> {
        self.run.log()
    }

    fn id(&self) -> &str {
        self.run.id()
    }

    fn cancel_when_unfollowed(&self) -> bool {
        self.run.cancel_when_unfollowed()
    }

    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        if let Poll::Ready(joined) = std::pin::Pin::new(&mut self.job).poll(cx) {
            self.joined = Some(joined.map(|output| {
                *output
                    .downcast::<S::Output>()
                    .expect("a run's job ends with its kind's output")
            }));
            return Poll::Ready(true);
        }
        match self.events.poll_recv(cx) {
            Poll::Ready(Some(ev)) => {
                self.run.on_event(ev);
                Poll::Ready(false)
            }
            // No more events: the job's end is what is left to wait for.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }

    fn end(&mut self) -> BoxFuture<'_, ServerMsg> {
        Box::pin(async move {
            // Events sent just before the end are still queued: log them first.
            while let Ok(ev) = self.events.try_recv() {
                self.run.on_event(ev);
            }
            let joined = self
                .joined
                .take()
                .expect("end is called after the job ended");
            self.run.on_end(joined).await
        })
    }
}

/// Runs [`supervise`] as a task of the peer's, with `job` running as a task of its own.
pub(super) fn spawn_supervised<S: Supervised>(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    run: S,
    job: BoxFuture<'static, S::Output>,
    events: mpsc::UnboundedReceiver<S::Event>,
) {
    let run = Box::new(Supervisee {
        run,
        job: crate::util::spawn(async move { Box::new(job.await) as Box<dyn Any + Send> }),
        joined: None,
        events,
    });
    state
        .tasks
        .spawn(crate::util::boxed(supervise(state.clone(), slot, run)));
}

/// Drives one run to its end: its events into the log as they come, a cancel when nobody
/// followed it for the grace period or on shutdown; then its last message, its slot given
/// back, and the finished log kept attachable for [`KEEP_FINISHED`].
async fn supervise(
    state: Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    mut run: Box<dyn Supervision>,
) {
    let log = run.log().clone();
    let mut check = tokio::time::interval(Duration::from_secs(1));
    // Shutdown cancels the run once; the branch is then off, or it would be ready on every
    // turn and spin this task, starving the run it is waiting for.
    let mut cancelled_for_shutdown = false;
    let last = loop {
        tokio::select! {
            ended = std::future::poll_fn(|cx| run.poll_step(cx)) => {
                if ended {
                    break run.end().await;
                }
            }
            now = check.tick() => {
                if run.cancel_when_unfollowed()
                    && log.abandoned_at(now)
                    && !log.cancel_token().is_cancelled()
                {
                    tracing::info!(
                        id = run.id(),
                        "no browser followed the run for {} s: cancelling",
                        DETACHED_GRACE.as_secs()
                    );
                    log.cancel();
                }
            }
            () = state.shutdown.cancelled(), if !cancelled_for_shutdown => {
                cancelled_for_shutdown = true;
                log.cancel();
            }
        }
    };
    log.push(last);
    let id = run.id().to_string();
    drop(run);
    drop(slot);
    if !id.is_empty() {
        tokio::select! {
            () = tokio::time::sleep(KEEP_FINISHED) => {}
            () = state.shutdown.cancelled() => {}
        }
        state.runs.remove(&id);
    }
}

/// A browser's test: attachable by its test id from `started` on, kept in the history.
struct TestRun {
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    target: String,
    spec: TestSpec,
    test_id: String,
    running: Option<RunningGuard>,
    rec: Option<Recording>,
    /// The test counted for `/metrics` from its start, with its far peer's address.
    counted: Option<(TestCount, String)>,
}

impl Supervised for TestRun {
    type Event = TestEvent;
    type Output = Result<TestResult, SessionError>;

    fn log(&self) -> &Arc<RunLog> {
        &self.log
    }

    fn id(&self) -> &str {
        &self.test_id
    }

    fn on_event(&mut self, ev: TestEvent) {
        match ev {
            TestEvent::Started {
                test_id,
                server_addr,
                ..
            } => {
                let (state, target, spec) = (&self.state, &self.target, &self.spec);
                self.running = Some(state.track(
                    &test_id,
                    PeerRole::Client,
                    target.clone(),
                    spec,
                    Some(&test_id),
                ));
                state.runs.insert(&test_id, self.log.clone());
                self.counted = Some((
                    state.metrics.test_started(TestKind::Run),
                    far_peer_address(&server_addr),
                ));
                self.rec = state.store().and_then(|s| {
                    Recording::begin(s, &test_id, Origin::Browser, PeerRole::Client, target, spec)
                });
                self.test_id.clone_from(&test_id);
                self.log.push(ServerMsg::Started {
                    test_id,
                    target: target.clone(),
                    spec: spec.clone(),
                });
            }
            TestEvent::Interval { role, report } => {
                if let Some(r) = self.rec.as_mut() {
                    r.interval(role, &report);
                }
                self.log.push(ServerMsg::Interval {
                    test_id: self.test_id.clone(),
                    role,
                    report,
                });
            }
            TestEvent::Stored { .. } | TestEvent::FarEndOutput { .. } => {}
        }
    }

    async fn on_end(&mut self, joined: Result<Self::Output, JoinError>) -> ServerMsg {
        match joined {
            Ok(Ok(result)) => {
                if let Some((counted, far_peer)) = self.counted.take() {
                    counted.finished(&result, &far_peer);
                }
                // Kept before it is announced.
                if let Some(r) = self.rec.take() {
                    let result_id = r.id().to_string();
                    r.finish(&result).await;
                    self.log.push(ServerMsg::Stored {
                        test_id: self.test_id.clone(),
                        result_id,
                    });
                }
                ServerMsg::Result { result }
            }
            Ok(Err(e)) => ServerMsg::error(e.code(), e.to_string()),
            Err(e) => ServerMsg::error(ErrorCode::Internal, e.to_string()),
        }
    }
}

/// The far peer of a run as `/metrics` labels it: the address of `ip:port`, without the port
/// (a stock tool's far end may say something else: kept as it is, cut to the label's length).
fn far_peer_address(server_addr: &str) -> String {
    server_addr.parse::<std::net::SocketAddr>().map_or_else(
        |_| server_addr.to_string(),
        |a| a.ip().to_canonical().to_string(),
    )
}

/// A browser's sweep: attachable by its sweep id from the start; kept whole at its end (its
/// rows are its result; its sizes' tests are not kept one by one) with a share link.
struct SweepRun {
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    sweep_id: String,
    target: String,
    spec: TestSpec,
    /// The running size's test.
    test_id: String,
    running: Option<RunningGuard>,
}

impl Supervised for SweepRun {
    type Event = SweepEvent;
    type Output = SweepResult;

    fn log(&self) -> &Arc<RunLog> {
        &self.log
    }

    fn id(&self) -> &str {
        &self.sweep_id
    }

    fn on_event(&mut self, ev: SweepEvent) {
        match ev {
            SweepEvent::Test(TestEvent::Started { test_id, .. }) => {
                let (state, target, spec) = (&self.state, &self.target, &self.spec);
                self.running = Some(state.track(
                    &test_id,
                    PeerRole::Client,
                    target.clone(),
                    spec,
                    Some(&self.sweep_id),
                ));
                self.test_id = test_id;
            }
            SweepEvent::Test(TestEvent::Interval { role, report }) => {
                self.log.push(ServerMsg::Interval {
                    test_id: self.test_id.clone(),
                    role,
                    report,
                });
            }
            SweepEvent::Point(point) => {
                self.running = None;
                self.log.push(ServerMsg::SweepPoint {
                    sweep_id: self.sweep_id.clone(),
                    point,
                });
            }
            SweepEvent::Test(TestEvent::Stored { .. } | TestEvent::FarEndOutput { .. }) => {}
        }
    }

    async fn on_end(&mut self, joined: Result<SweepResult, JoinError>) -> ServerMsg {
        match joined {
            Ok(result) => {
                // Kept before it is announced, like a test.
                if let Some(result_id) = self.keep(&result).await {
                    self.log.push(ServerMsg::Stored {
                        test_id: self.sweep_id.clone(),
                        result_id,
                    });
                }
                ServerMsg::SweepResult {
                    sweep_id: self.sweep_id.clone(),
                    result,
                }
            }
            Err(e) => ServerMsg::error(ErrorCode::Internal, e.to_string()),
        }
    }
}

/// A browser's latency-under-load run: attachable by its id from the start; kept whole at its
/// end (its probe and load tests are not kept one by one) with a share link.
struct LatencyRun {
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    latency_id: String,
    target: String,
    request: LatencyRequest,
    _running: Option<RunningGuard>,
}

impl Supervised for LatencyRun {
    type Event = LatencyEvent;
    type Output = Result<LatencyResult, SessionError>;

    fn log(&self) -> &Arc<RunLog> {
        &self.log
    }

    fn id(&self) -> &str {
        &self.latency_id
    }

    fn on_event(&mut self, event: LatencyEvent) {
        self.log.push(ServerMsg::LatencyEvent {
            latency_id: self.latency_id.clone(),
            event,
        });
    }

    async fn on_end(&mut self, joined: Result<Self::Output, JoinError>) -> ServerMsg {
        match joined {
            Ok(Ok(result)) => {
                if let Some(result_id) = self.keep(&result).await {
                    self.log.push(ServerMsg::Stored {
                        test_id: self.latency_id.clone(),
                        result_id,
                    });
                }
                ServerMsg::LatencyResult {
                    latency_id: self.latency_id.clone(),
                    result,
                }
            }
            Ok(Err(e)) => ServerMsg::error(e.code(), e.to_string()),
            Err(e) => ServerMsg::error(ErrorCode::Internal, e.to_string()),
        }
    }
}

impl LatencyRun {
    /// Keeps the finished run in the store (if this peer keeps results); its result id.
    async fn keep(&self, result: &LatencyResult) -> Option<String> {
        let store = self.state.store()?;
        let (target, request, result) = (self.target.clone(), self.request.clone(), result.clone());
        let kept = store
            .write(move |s| {
                s.save_latency(crate::store::Origin::Browser, &target, &request, &result)
            })
            .await?;
        kept.inspect_err(|e| tracing::warn!(error = %e, "cannot keep the latency run"))
            .ok()
    }
}

impl SweepRun {
    /// Keeps the finished sweep in the store (if this peer keeps results); its result id.
    async fn keep(&self, result: &SweepResult) -> Option<String> {
        let store = self.state.store()?;
        let (target, spec, result) = (self.target.clone(), self.spec.clone(), result.clone());
        let kept = store
            .write(move |s| s.save_sweep(&target, &spec, &result))
            .await?;
        kept.inspect_err(|e| tracing::warn!(error = %e, "cannot keep the sweep"))
            .ok()
    }
}
