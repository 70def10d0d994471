//! A browser's regression plans (`perfpeer serve --plans DIR`): `plans` lists them, `plan{name,
//! tags}` runs the listed one on this peer like a `run` (one of its test slots, attachable by
//! its plan id and listed among the running tests by its running repeat, `cancel` stops it
//! after the running case), its events logged as `plan_event`s (each finished case as its
//! table row) and `plan_ended` last. Reading the plan, running it, judging it against its
//! baseline and keeping it are the [`Runner`](super::runner::Runner)'s: the server knows no
//! plan file. Unlike other runs it goes on with nobody following (a regression runs
//! unattended, the phone attaches again when it wakes); shutdown cancels its running test at
//! once.

use std::sync::Arc;

use perfpeer_shared::control::{ErrorCode, ServerMsg};
use perfpeer_shared::history::Notes;
use perfpeer_shared::plan_progress::{PlanEnd, PlanProgress};
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::TestSpec;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::JoinError;

use super::run_log::RunLog;
use super::runner::{PlanJob, PlanRefusal};
use super::runs::{Supervised, spawn_supervised};
use super::state::{RunningGuard, ServerState};
use crate::session::SessionError;
use crate::session::channel::ControlChannel;

/// `plans`: the plans the runner offers, read now (none without `--plans`).
pub(super) async fn list(
    chan: &ControlChannel,
    state: &Arc<ServerState>,
) -> Result<(), SessionError> {
    let plans = state.runner.plans().await;
    chan.send(&ServerMsg::PlanList { plans })
}

/// A plan read and ready to start once a slot is taken.
pub(super) struct Ready {
    name: String,
    log: Arc<RunLog>,
    job: PlanJob,
    events: mpsc::UnboundedReceiver<PlanProgress>,
}

/// `plan`, before a slot is taken: the tags checked, the listed plan `name` read (a refusal
/// saying why it cannot run).
pub(super) async fn prepare(
    state: &Arc<ServerState>,
    name: String,
    tags: Vec<String>,
) -> Result<Ready, SessionError> {
    let refused = |code, message: String| SessionError::Refused { code, message };
    let tags = Notes {
        text: String::new(),
        tags,
    }
    .checked()
    .map_err(|e| refused(ErrorCode::InvalidSpec, format!("tags: {e}")))?
    .tags;
    let log = RunLog::new();
    let (events_tx, events) = mpsc::unbounded_channel();
    let job = state
        .runner
        .plan(
            name.clone(),
            tags,
            state.store().cloned(),
            events_tx,
            log.cancel_token(),
            state.shutdown.clone(),
        )
        .await
        .map_err(|refusal| match refusal {
            PlanRefusal::NoPlans => refused(
                ErrorCode::UnknownTest,
                "this peer offers no plans (start it with --plans DIR)".into(),
            ),
            PlanRefusal::Unknown => refused(
                ErrorCode::UnknownTest,
                "no plan by that name on this peer (ask for the list again)".into(),
            ),
            PlanRefusal::Invalid(why) => refused(ErrorCode::InvalidSpec, why),
        })?;
    Ok(Ready {
        name,
        log,
        job,
        events,
    })
}

/// Starts the plan in `ready` in the background, holding `slot`; its log, to follow.
pub(super) fn start(
    state: &Arc<ServerState>,
    slot: OwnedSemaphorePermit,
    ready: Ready,
) -> Arc<RunLog> {
    let Ready {
        name,
        log,
        job,
        events,
    } = ready;
    let plan_id = crate::util::random_id();
    state.runs.insert(&plan_id, log.clone());
    log.push(ServerMsg::PlanStarted {
        plan_id: plan_id.clone(),
        name,
        cases: u32::try_from(job.case_tests.len()).unwrap_or(u32::MAX),
        eta_s: job.eta_s,
    });
    let run = PlanRun {
        state: state.clone(),
        log: log.clone(),
        plan_id,
        case_tests: job.case_tests,
        running: None,
    };
    spawn_supervised(state, slot, run, job.run, events);
    log
}

/// A browser's plan run: attachable by its plan id from the start.
struct PlanRun {
    state: Arc<ServerState>,
    log: Arc<RunLog>,
    plan_id: String,
    /// Each case's far peer and test.
    case_tests: Vec<(String, TestSpec)>,
    /// The running repeat, listed among the peer's running tests (attachable by the plan id).
    running: Option<RunningGuard>,
}

impl Supervised for PlanRun {
    type Event = PlanProgress;
    type Output = PlanEnd;

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
            && let Some((peer, spec)) = self.case_tests.get(*index as usize)
        {
            // Tracked under a key of its own: the guard it replaces untracks its own key.
            self.running = Some(self.state.track(
                &format!("{}-{index}-{repeat}", self.plan_id),
                PeerRole::Client,
                peer.clone(),
                spec,
                Some(&self.plan_id),
            ));
        }
        self.log.push(ServerMsg::PlanEvent {
            plan_id: self.plan_id.clone(),
            event,
        });
    }

    async fn on_end(&mut self, joined: Result<PlanEnd, JoinError>) -> ServerMsg {
        match joined {
            Ok(end) => ServerMsg::PlanEnded {
                plan_id: self.plan_id.clone(),
                end,
            },
            Err(e) => ServerMsg::error(ErrorCode::Internal, e.to_string()),
        }
    }
}
