//! A browser's regression plans (`perfpeer serve --plans DIR`): `plans` lists DIR's plan files,
//! `plan{name, tags}` runs the listed one on this peer like a `run` (one of its test slots,
//! attachable by its plan id and listed among the running tests by its running repeat, `cancel`
//! stops it after the running case), its events logged as
//! `plan_event`s (each finished case as its table row), `plan_ended` last; the finished run is kept whole, its repeats kept as the browser's tests.
//! Unlike other runs it goes on with nobody following (a regression runs unattended, the
//! phone attaches again when it wakes); shutdown cancels its running test at once.

use std::sync::Arc;

use perfpeer_shared::control::{ErrorCode, ServerMsg};
use perfpeer_shared::history::{Notes, Origin};
use perfpeer_shared::plan::PlanResult;
use perfpeer_shared::plan_progress::PlanProgress;
use perfpeer_shared::report::PeerRole;
use tokio::sync::mpsc;
use tokio::task::JoinError;

use super::handlers::{follow, take_slot};
use super::run_log::RunLog;
use super::runs::{Supervised, spawn_supervised};
use super::state::{RunningGuard, ServerState};
use crate::plan::file::Plan;
use crate::session::SessionError;
use crate::session::channel::ControlChannel;

/// `plans`: the plan files of `--plans DIR`, read now (none without the flag).
pub(super) async fn list(
    chan: &ControlChannel,
    state: &Arc<ServerState>,
) -> Result<(), SessionError> {
    let plans = match state.plans().cloned() {
        Some(shelf) => tokio::task::spawn_blocking(move || shelf.list())
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    chan.send(&ServerMsg::PlanList { plans })
}

/// `plan`: reads the listed plan `name`, checks the tags, takes a slot, runs the plan in the
/// background and follows it on `chan`.
pub(super) async fn start(
    chan: &mut ControlChannel,
    state: &Arc<ServerState>,
    name: String,
    tags: Vec<String>,
) -> Result<(), SessionError> {
    let refused = |code, message: String| SessionError::Refused { code, message };
    let tags = Notes {
        text: String::new(),
        tags,
    }
    .checked()
    .map_err(|e| refused(ErrorCode::InvalidSpec, format!("tags: {e}")))?
    .tags;
    let shelf = state.plans().cloned().ok_or_else(|| {
        refused(
            ErrorCode::UnknownTest,
            "this peer offers no plans (start it with --plans DIR)".into(),
        )
    })?;
    let wanted = name.clone();
    let plan = tokio::task::spawn_blocking(move || shelf.load(&wanted))
        .await
        .map_err(|e| refused(ErrorCode::Internal, e.to_string()))?
        .ok_or_else(|| {
            refused(
                ErrorCode::UnknownTest,
                "no plan by that name on this peer (ask for the list again)".into(),
            )
        })?
        .map_err(|e| refused(ErrorCode::InvalidSpec, e))?;
    let slot = take_slot(state)?;
    let log = RunLog::new();
    let plan_id = crate::util::random_id();
    state.runs.insert(&plan_id, log.clone());
    log.push(ServerMsg::PlanStarted {
        plan_id: plan_id.clone(),
        name,
        cases: u32::try_from(plan.cases.len()).unwrap_or(u32::MAX),
        eta_s: crate::plan::plan_time(&plan.cases).as_secs(),
    });
    let (events_tx, events) = mpsc::unbounded_channel();
    let job = state.runner.plan(
        plan.clone(),
        tags.clone(),
        state.store().cloned(),
        events_tx,
        log.cancel_token(),
        state.shutdown.clone(),
    );
    let run = PlanRun {
        state: state.clone(),
        log: log.clone(),
        plan_id,
        plan,
        tags,
        running: None,
    };
    spawn_supervised(state, slot, run, job, events);
    follow(chan, state, &log).await
}

/// A browser's plan run: attachable by its plan id from the start; kept whole at its end.
struct PlanRun {
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    plan_id: String,
    plan: Plan,
    tags: Vec<String>,
    /// The running repeat, listed among the peer's running tests (attachable by the plan id).
    running: Option<RunningGuard>,
}

impl Supervised for PlanRun {
    type Event = PlanProgress;
    type Output = PlanResult;

    fn log(&self) -> &Arc<RunLog> {
        &self.log
    }

    fn id(&self) -> &str {
        &self.plan_id
    }

    fn cancel_when_unfollowed(&self) -> bool {
        false
    }

    fn on_event(&mut self, event: PlanProgress) {
        if let PlanProgress::Starting { index, repeat, .. } = &event
            && let Some(case) = self.plan.cases.get(*index as usize)
        {
            // Tracked under a key of its own: the guard it replaces untracks its own key.
            self.running = Some(self.state.track(
                &format!("{}-{index}-{repeat}", self.plan_id),
                PeerRole::Client,
                case.peer.clone(),
                &case.spec,
                Some(&self.plan_id),
            ));
        }
        self.log.push(ServerMsg::PlanEvent {
            plan_id: self.plan_id.clone(),
            event,
        });
    }

    async fn on_end(&mut self, joined: Result<PlanResult, JoinError>) -> ServerMsg {
        match joined {
            Ok(result) => {
                let (result, id) = self.judge_and_keep(result).await;
                ServerMsg::PlanEnded {
                    plan_id: self.plan_id.clone(),
                    end: result.end(id),
                }
            }
            Err(e) => ServerMsg::error(ErrorCode::Internal, e.to_string()),
        }
    }
}

impl PlanRun {
    /// Compares the finished run with the plan file's baseline (when it names one and this
    /// peer keeps it) and keeps the run in the store (if this peer keeps results) with the
    /// run's tags; the run, judged, and its result id.
    async fn judge_and_keep(&self, result: PlanResult) -> (PlanResult, Option<String>) {
        let Some(store) = self.state.store().cloned() else {
            return (result, None);
        };
        let peers = crate::plan::peers_of(&self.plan);
        let notes = crate::plan::run_notes(&self.plan.name, &self.tags);
        let baseline = self.plan.baseline.clone();
        let name = self.plan.name.clone();
        let unjudged = result.clone();
        let kept = store
            .write(move |s| {
                let mut result = result;
                // Found before this run is kept: `last` is the run before it.
                match baseline.map(|b| crate::plan::find_baseline(s, &name, &b)) {
                    Some(Ok(Some((base, id)))) => result.compare_with(
                        &base,
                        &id,
                        perfpeer_shared::plan::DEFAULT_MIN_CHANGE_PERCENT,
                    ),
                    Some(Err(e)) => tracing::warn!(error = %e, "the plan's baseline"),
                    _ => {}
                }
                let id = s.save_plan(Origin::Browser, &peers, &result);
                if let Ok(id) = &id {
                    let _ = s.set_notes(id, &notes);
                }
                (result, id)
            })
            .await;
        match kept {
            Some((result, Ok(id))) => (result, Some(id)),
            Some((result, Err(e))) => {
                tracing::warn!(error = %e, "cannot keep the plan run");
                (result, None)
            }
            // The store's writer is gone (shutting down): nothing kept, nothing judged.
            None => (unjudged, None),
        }
    }
}
