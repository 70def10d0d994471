//! Regression plans: a plan file's cases run in order against their peers, each repeat kept
//! as a test result tagged with the plan run, the repeats summarised and judged, and the plan
//! run kept whole (its own result id and page) with its comparison to a baseline.

pub(crate) mod file;
pub(crate) mod shelf;

use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::history::{Notes, Origin};
use perfpeer_shared::plan::{CaseResult, CaseRun, PlanCase, PlanResult, PlanStatus};
use perfpeer_shared::spec::ValidSpec;
use perfpeer_shared::verdict::Metric;
use tokio_util::sync::CancellationToken;

use crate::session::client::ClientOptions;
use crate::store::{Recording, Store};

/// What a plan run tells its follower as it goes.
#[derive(Debug, Clone)]
pub(crate) enum PlanEvent<'a> {
    /// A repeat of a case starts: its place, and the time the rest should take.
    Starting {
        /// The case, from 0.
        index: usize,
        /// How many cases.
        of: usize,
        /// The case.
        case: &'a PlanCase,
        /// The repeat, from 1.
        repeat: u32,
        /// The plan's testing time still ahead, this repeat included.
        eta: Duration,
    },
    /// A case ran all its repeats (or could not run).
    CaseDone {
        /// The case, from 0.
        index: usize,
        /// Its repeats summarised.
        case: &'a CaseResult,
    },
}

/// `ev` as a browser's plan run sends it.
pub(crate) fn progress(ev: &PlanEvent<'_>) -> perfpeer_shared::plan_progress::PlanProgress {
    use perfpeer_shared::plan_progress::PlanProgress;
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    match ev {
        PlanEvent::Starting {
            index,
            of,
            case,
            repeat,
            eta,
        } => PlanProgress::Starting {
            index: n(*index),
            of: n(*of),
            label: case.label.clone(),
            repeat: *repeat,
            repeats: case.repeats,
            eta_s: eta.as_secs(),
        },
        PlanEvent::CaseDone { index, case } => PlanProgress::CaseDone {
            index: n(*index),
            row: case.row(),
        },
    }
}

/// How a plan run is stopped: `after_case` (a first Ctrl-C) lets the running case finish;
/// `now` (a second) cancels the running test, which then counts as ended early.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop {
    /// Stop once the running case is done.
    pub(crate) after_case: CancellationToken,
    /// Cancel the running test.
    pub(crate) now: CancellationToken,
}

/// Seconds a run takes beyond its test time (connecting, the far end's finals).
const RUN_OVERHEAD: Duration = Duration::from_secs(1);

/// Runs `plan`'s cases in order, keeping each repeat in `store` (as `origin`'s, tagged
/// `plan:<name>` and with `tags`), and returns the plan run (kept by the caller, which may compare it first).
pub(crate) async fn run(
    plan: &file::Plan,
    origin: Origin,
    tags: &[String],
    opts: &ClientOptions,
    store: Option<&Arc<Store>>,
    stop: &Stop,
    mut on_event: impl FnMut(PlanEvent<'_>),
) -> PlanResult {
    let started_unix_ms = crate::util::unix_ms_now();
    let notes = run_notes(&plan.name, tags);
    let mut left = plan_time(&plan.cases);
    let mut cases = Vec::new();
    for (index, case) in plan.cases.iter().enumerate() {
        if stop.after_case.is_cancelled() {
            break;
        }
        let spec = match ValidSpec::new(case.spec.clone()) {
            Ok(spec) => spec,
            // The file's reader validated every case; a spec refused now is a bug, said as
            // the case's error rather than a panic.
            Err(e) => {
                let done = CaseResult::build(case.clone(), vec![CaseRun::failed(e.to_string())]);
                on_event(PlanEvent::CaseDone { index, case: &done });
                cases.push(done);
                continue;
            }
        };
        let metrics = metrics_of(case);
        let mut runs = Vec::new();
        for repeat in 1..=case.repeats {
            on_event(PlanEvent::Starting {
                index,
                of: plan.cases.len(),
                case,
                repeat,
                eta: left,
            });
            left = left.saturating_sub(run_time(case));
            if stop.now.is_cancelled() {
                runs.push(CaseRun::failed("stopped".into()));
                continue;
            }
            let (events, _ignored) = tokio::sync::mpsc::unbounded_channel();
            let outcome =
                crate::targets::run(&case.peer, &spec, opts, events, stop.now.child_token()).await;
            runs.push(match outcome {
                Ok(result) => {
                    let mut run = CaseRun::of(&result, &metrics);
                    if let Some(store) = store {
                        run.result_id = keep(store, origin, &result, &case.peer, &notes).await;
                    }
                    run
                }
                Err(e) => CaseRun::failed(e.to_string()),
            });
        }
        let done = CaseResult::build(case.clone(), runs);
        on_event(PlanEvent::CaseDone { index, case: &done });
        cases.push(done);
    }
    let stopped = cases.len() < plan.cases.len();
    PlanResult {
        name: plan.name.clone(),
        started_unix_ms,
        ended_unix_ms: crate::util::unix_ms_now(),
        tags: tags.to_vec(),
        cases,
        planned_cases: u32::try_from(plan.cases.len()).unwrap_or(u32::MAX),
        status: if stopped {
            PlanStatus::Stopped
        } else {
            PlanStatus::Complete
        },
        comparison: None,
        max_drop_percent: plan.max_drop_percent,
    }
}

/// The figures a case's repeats keep: its headline and its expectations'.
fn metrics_of(case: &PlanCase) -> Vec<Metric> {
    let mut metrics = vec![case.headline()];
    for e in &case.spec.expect {
        if !metrics.contains(&e.metric) {
            metrics.push(e.metric);
        }
    }
    metrics
}

fn run_time(case: &PlanCase) -> Duration {
    case.spec.total_time().unwrap_or_default() + RUN_OVERHEAD
}

/// The whole plan's time, repeats and overheads included.
pub(crate) fn plan_time(cases: &[PlanCase]) -> Duration {
    cases.iter().map(|c| run_time(c) * c.repeats).sum()
}

/// A browser's finished run of `plan` (tagged `tags`): compared with the plan file's baseline
/// when it names one (found before this run is kept, so `last` is the run before it), then
/// kept in `store` as the browser's with the run's notes; the run, judged, and its id.
pub(crate) async fn judge_and_keep(
    store: Option<&Arc<Store>>,
    plan: &file::Plan,
    tags: &[String],
    result: PlanResult,
) -> (PlanResult, Option<String>) {
    let Some(store) = store else {
        return (result, None);
    };
    let peers = peers_of(plan);
    let notes = run_notes(&plan.name, tags);
    let baseline = plan.baseline.clone();
    let name = plan.name.clone();
    let unjudged = result.clone();
    let kept = store
        .write(move |s| {
            let mut result = result;
            match baseline.map(|b| find_baseline(s, &name, &b)) {
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

/// The baseline `which` names for a run of the plan `plan_name`, read from `store`, with its
/// id: none for `last` before any complete run of the plan is kept.
pub(crate) fn find_baseline(
    store: &Store,
    plan_name: &str,
    which: &file::Baseline,
) -> Result<Option<(PlanResult, String)>, String> {
    let kept = match which {
        file::Baseline::Last => store.latest_plan(plan_name).map_err(|e| e.to_string())?,
        file::Baseline::Id(id) => Some(
            store
                .plan(id)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no kept plan run {id}"))?,
        ),
    };
    Ok(kept.map(|k| (k.result, k.id)))
}

/// The far peers of `plan`'s cases, as its kept run names them (`a,b`).
pub(crate) fn peers_of(plan: &file::Plan) -> String {
    // Each peer once, in the order the cases name them (they alternate with several).
    let mut peers: Vec<&str> = Vec::new();
    for case in &plan.cases {
        if !peers.contains(&case.peer.as_str()) {
            peers.push(&case.peer);
        }
    }
    peers.join(",")
}

/// The notes every repeat of the run is kept with: `plan:<name>` and the run's tags (as many
/// as a result may carry).
pub(crate) fn run_notes(name: &str, tags: &[String]) -> Notes {
    let word: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(perfpeer_shared::history::MAX_TAG - 5)
        .collect();
    let mut all = vec![format!("plan:{word}")];
    all.extend(tags.iter().cloned());
    all.truncate(perfpeer_shared::history::MAX_TAGS);
    Notes {
        text: String::new(),
        tags: all,
    }
    .checked()
    .unwrap_or_default()
}

/// Keeps one repeat's result with the run's notes; its id, when it was kept.
async fn keep(
    store: &Arc<Store>,
    origin: Origin,
    result: &perfpeer_shared::report::TestResult,
    peer: &str,
    notes: &Notes,
) -> Option<String> {
    let rec = Recording::begin(
        store,
        &result.id,
        origin,
        result.local.role,
        peer,
        &result.spec,
    )?;
    let id = rec.id().to_string();
    rec.finish(result).await;
    let _ = store.set_notes(&id, notes);
    Some(id)
}
