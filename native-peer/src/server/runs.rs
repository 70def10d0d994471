//! Tests and sweeps a browser started with `run` or `sweep`, kept apart from the connection that
//! asked for them, so a network blip does not kill them: each run writes its messages
//! (`started`, `interval`s, then `result` or `error`; for a sweep `sweep_started`, the running
//! size's `interval`s, `sweep_point`s, then `sweep_result`) to a [`RunLog`] that any number of
//! connections follow, from the start (`attach` after a reconnect replays it). A run nobody
//! follows for [`DETACHED_GRACE`] is cancelled; a finished run stays attachable for
//! [`KEEP_FINISHED`].

use crate::util::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use perfpeer_shared::control::ServerMsg;
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::TestSpec;
use tokio::sync::{OwnedSemaphorePermit, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::state::ServerState;
use crate::session::client::{ClientOptions, TestEvent};
use crate::store::{Origin, Recording};
use crate::sweep::SweepEvent;

/// How long a run goes on with no browser following it.
pub const DETACHED_GRACE: Duration = Duration::from_secs(30);
/// How long a finished run can still be attached to (for its result).
pub const KEEP_FINISHED: Duration = Duration::from_secs(120);

/// The runs this peer knows, by test id (from `started` on).
#[derive(Default)]
pub struct Runs {
    map: Mutex<HashMap<String, Arc<RunLog>>>,
}

impl Runs {
    /// The run with `test_id`, if it is running or finished recently.
    pub fn get(&self, test_id: &str) -> Option<Arc<RunLog>> {
        lock(&self.map).get(test_id).cloned()
    }
    fn insert(&self, test_id: &str, log: Arc<RunLog>) {
        lock(&self.map).insert(test_id.to_string(), log);
    }
    fn remove(&self, test_id: &str) {
        lock(&self.map).remove(test_id);
    }
}

/// Everything one run said so far, and who follows it.
pub struct RunLog {
    messages: Mutex<Vec<ServerMsg>>,
    len: watch::Sender<usize>,
    cancel: CancellationToken,
    followers: AtomicUsize,
}

impl RunLog {
    fn new() -> Arc<RunLog> {
        Arc::new(RunLog {
            messages: Mutex::new(Vec::new()),
            len: watch::channel(0).0,
            cancel: CancellationToken::new(),
            followers: AtomicUsize::new(0),
        })
    }

    fn push(&self, msg: ServerMsg) {
        let mut messages = lock(&self.messages);
        messages.push(msg);
        self.len.send_replace(messages.len());
    }

    /// Messages from index `from` on (at most `max`), and whether the last one ends the run.
    pub fn read(&self, from: usize, max: usize) -> (Vec<ServerMsg>, bool) {
        let messages = lock(&self.messages);
        let end = messages.len().min(from.saturating_add(max));
        let slice = messages.get(from..end).unwrap_or_default().to_vec();
        let done = end == messages.len() && messages.last().is_some_and(is_final);
        (slice, done)
    }

    /// Number of messages so far; changes wake [`RunLog::changed`] waiters.
    pub fn subscribe(&self) -> watch::Receiver<usize> {
        self.len.subscribe()
    }

    /// Asks the test to stop early (its partial result follows).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Counts a follower until the guard is dropped.
    pub fn follow(self: &Arc<Self>) -> Following {
        self.followers.fetch_add(1, Ordering::SeqCst);
        Following { log: self.clone() }
    }
}

fn is_final(msg: &ServerMsg) -> bool {
    matches!(
        msg,
        ServerMsg::Result { .. } | ServerMsg::Error { .. } | ServerMsg::SweepResult { .. }
    )
}

/// Cancels a run once nobody has followed it for [`DETACHED_GRACE`].
#[derive(Default)]
struct Abandonment {
    alone_since: Option<Instant>,
}

impl Abandonment {
    /// Called every second.
    fn check(&mut self, log: &RunLog, id: &str) {
        if log.followers.load(Ordering::SeqCst) > 0 {
            self.alone_since = None;
        } else if self.alone_since.get_or_insert_with(Instant::now).elapsed() >= DETACHED_GRACE {
            tracing::info!(
                id,
                "no browser followed the run for {} s: cancelling",
                DETACHED_GRACE.as_secs()
            );
            log.cancel();
        }
    }
}

/// Keeps a finished run attachable for [`KEEP_FINISHED`] (or until shutdown), then forgets it.
async fn linger(state: &ServerState, id: &str) {
    tokio::select! {
        _ = tokio::time::sleep(KEEP_FINISHED) => {}
        _ = state.shutdown.cancelled() => {}
    }
    state.runs.remove(id);
}

/// A connection following a run.
pub struct Following {
    log: Arc<RunLog>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.log.followers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Starts a run in the background (it holds `slot` until it ends) and returns its log.
pub fn start(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    target: String,
    spec: TestSpec,
) -> Arc<RunLog> {
    let log = RunLog::new();
    tokio::spawn(drive(state.clone(), log.clone(), slot, target, spec));
    log
}

/// Runs the test, writing its events to `log`; cancels it when nobody followed for the grace
/// period or on shutdown; keeps the finished log attachable for a while.
async fn drive(
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    slot: OwnedSemaphorePermit,
    target: String,
    spec: TestSpec,
) {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let test = {
        let (target, spec, cancel) = (target.clone(), spec.clone(), log.cancel.clone());
        tokio::spawn(async move {
            crate::targets::run(&target, &spec, &ClientOptions::default(), events_tx, cancel).await
        })
    };
    let mut test = std::pin::pin!(test);
    let mut test_id = String::new();
    let mut running = None;
    let mut rec: Option<Recording> = None;
    let mut check = tokio::time::interval(Duration::from_secs(1));
    let mut abandonment = Abandonment::default();
    let last = loop {
        tokio::select! {
            joined = &mut test => {
                // Events sent just before the end are still queued: log them first.
                while let Ok(ev) = events.try_recv() {
                    if let TestEvent::Interval { role, report } = ev {
                        if let Some(r) = rec.as_mut() {
                            r.interval(role, &report);
                        }
                        log.push(ServerMsg::Interval { test_id: test_id.clone(), role, report });
                    }
                }
                break match joined {
                    Ok(Ok(result)) => {
                        // Kept before it is announced.
                        if let Some(r) = rec.take() {
                            let result_id = r.id().to_string();
                            r.finish(&result);
                            log.push(ServerMsg::Stored { test_id: test_id.clone(), result_id });
                        }
                        ServerMsg::Result { result }
                    }
                    Ok(Err(e)) => ServerMsg::error(e.code(), e.to_string()),
                    Err(e) => ServerMsg::error(perfpeer_shared::control::ErrorCode::Internal, e.to_string()),
                };
            }
            Some(ev) = events.recv() => match ev {
                TestEvent::Started { test_id: id, .. } => {
                    running = Some(state.track(&id, PeerRole::Client, target.clone(), &spec));
                    state.runs.insert(&id, log.clone());
                    test_id = id.clone();
                    rec = state.store().and_then(|s| Recording::begin(s, &id, Origin::Browser, PeerRole::Client, &target, &spec));
                    log.push(ServerMsg::Started { test_id: id, target: target.clone(), spec: spec.clone() });
                }
                TestEvent::Interval { role, report } => {
                    if let Some(r) = rec.as_mut() {
                        r.interval(role, &report);
                    }
                    log.push(ServerMsg::Interval { test_id: test_id.clone(), role, report });
                }
                TestEvent::Stored { .. } => {}
            },
            _ = check.tick() => abandonment.check(&log, &test_id),
            _ = state.shutdown.cancelled() => log.cancel(),
        }
    };
    log.push(last);
    drop(running);
    drop(slot);
    if !test_id.is_empty() {
        linger(&state, &test_id).await;
    }
}

/// Starts a packet-size sweep in the background (holding `slot` until it ends) and returns its
/// log, already attachable under its `sweep_id`.
pub fn start_sweep(
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
    tokio::spawn(drive_sweep(
        state.clone(),
        log.clone(),
        slot,
        sweep_id,
        target,
        spec,
        sizes,
    ));
    log
}

/// Keeps a finished sweep in the store (if this peer keeps results); its result id.
async fn keep_sweep(
    state: &ServerState,
    target: &str,
    spec: &TestSpec,
    result: &perfpeer_shared::sweep::SweepResult,
) -> Option<String> {
    let store = state.store()?.clone();
    let (target, spec, result) = (target.to_string(), spec.clone(), result.clone());
    let kept = tokio::task::spawn_blocking(move || store.save_sweep(&target, &spec, &result))
        .await
        .map_err(|e| e.to_string())
        .and_then(|saved| saved.map_err(|e| e.to_string()));
    kept.inspect_err(|e| tracing::warn!(error = %e, "cannot keep the sweep"))
        .ok()
}

/// Runs the sweep, writing the running size's intervals and each size's row to `log`; the
/// same abandonment and shutdown rules as a single run. The finished sweep is kept whole (its
/// rows are its result; its sizes' tests are not kept one by one) with a share link.
async fn drive_sweep(
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    slot: OwnedSemaphorePermit,
    sweep_id: String,
    target: String,
    spec: TestSpec,
    sizes: Vec<u32>,
) {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let sweep = {
        let (target, spec, cancel) = (target.clone(), spec.clone(), log.cancel.clone());
        tokio::spawn(async move {
            crate::sweep::run(
                &target,
                &spec,
                &sizes,
                &ClientOptions::default(),
                events_tx,
                cancel,
            )
            .await
        })
    };
    let mut sweep = std::pin::pin!(sweep);
    let mut running = None;
    let mut test_id = String::new();
    let mut check = tokio::time::interval(Duration::from_secs(1));
    let mut abandonment = Abandonment::default();
    let mut on_event = |ev: SweepEvent, running: &mut Option<_>| match ev {
        SweepEvent::Test(TestEvent::Started { test_id: id, .. }) => {
            *running = Some(state.track(&id, PeerRole::Client, target.clone(), &spec));
            test_id = id;
        }
        SweepEvent::Test(TestEvent::Interval { role, report }) => log.push(ServerMsg::Interval {
            test_id: test_id.clone(),
            role,
            report,
        }),
        SweepEvent::Point(point) => {
            *running = None;
            log.push(ServerMsg::SweepPoint {
                sweep_id: sweep_id.clone(),
                point,
            });
        }
        SweepEvent::Test(TestEvent::Stored { .. }) => {}
    };
    let last = loop {
        tokio::select! {
            joined = &mut sweep => {
                while let Ok(ev) = events.try_recv() {
                    on_event(ev, &mut running);
                }
                break match joined {
                    Ok(result) => {
                        // Kept before it is announced, like a test.
                        if let Some(result_id) = keep_sweep(&state, &target, &spec, &result).await {
                            log.push(ServerMsg::Stored { test_id: sweep_id.clone(), result_id });
                        }
                        ServerMsg::SweepResult { sweep_id: sweep_id.clone(), result }
                    }
                    Err(e) => ServerMsg::error(perfpeer_shared::control::ErrorCode::Internal, e.to_string()),
                };
            }
            Some(ev) = events.recv() => on_event(ev, &mut running),
            _ = check.tick() => abandonment.check(&log, &sweep_id),
            _ = state.shutdown.cancelled() => log.cancel(),
        }
    };
    log.push(last);
    drop(running);
    drop(slot);
    linger(&state, &sweep_id).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::control::ErrorCode;

    #[test]
    fn a_log_replays_in_chunks_and_knows_its_end() {
        let log = RunLog::new();
        let mut rx = log.subscribe();
        for _ in 0..5 {
            log.push(ServerMsg::SendersDone);
        }
        assert!(rx.has_changed().unwrap());
        assert_eq!(*rx.borrow_and_update(), 5);
        let (first, done) = log.read(0, 3);
        assert_eq!((first.len(), done), (3, false));
        let (rest, done) = log.read(3, 100);
        assert_eq!((rest.len(), done), (2, false));
        log.push(ServerMsg::error(ErrorCode::Unreachable, "x"));
        assert!(log.read(5, 100).1);
        assert!(!log.read(0, 2).1, "not at the end yet");
        assert!(log.read(99, 10).0.is_empty());
    }

    #[test]
    fn followers_are_counted_until_dropped() {
        let log = RunLog::new();
        let a = log.follow();
        let b = log.follow();
        assert_eq!(log.followers.load(Ordering::SeqCst), 2);
        drop(a);
        drop(b);
        assert_eq!(log.followers.load(Ordering::SeqCst), 0);
    }
}
