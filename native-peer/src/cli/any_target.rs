//! What `perfpeer serve` hands the server for a browser's `run`, `sweep`, `latency`, `plans` and
//! `plan`: the server knows no kind of target and no plan file, so the implementation of its
//! `Runner` lives up here, where `targets`, `sweep`, `latency` and `plan` are all in reach.

#[cfg(feature = "plans")]
use std::sync::Arc;

use futures_util::future::BoxFuture;
#[cfg(feature = "plans")]
use perfpeer_shared::history::Origin;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult};
#[cfg(feature = "plans")]
use perfpeer_shared::plan_progress::{ListedPlan, PlanProgress};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::SweepResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::server::runner::Runner;
#[cfg(feature = "plans")]
use crate::server::runner::{PlanJob, PlanRefusal};
use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::events::{SweepEvent, TestEvent};

/// A browser's `run`, `sweep` and `latency` against any kind of target, and the plans of
/// `--plans DIR`: what `perfpeer serve` hands the server (which knows no targets itself).
#[derive(Debug, Default)]
pub struct AnyTarget {
    /// The plans a browser may run.
    #[cfg(feature = "plans")]
    plans: Option<Arc<crate::plan::shelf::Shelf>>,
}

impl AnyTarget {
    /// Offering the plans of `shelf` to browsers.
    #[cfg(feature = "plans")]
    pub(crate) fn with_plans(shelf: crate::plan::shelf::Shelf) -> AnyTarget {
        AnyTarget {
            plans: Some(Arc::new(shelf)),
        }
    }
}

impl Runner for AnyTarget {
    fn run(
        &self,
        target: String,
        spec: ValidSpec,
        events: mpsc::UnboundedSender<TestEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<TestResult, SessionError>> {
        Box::pin(async move {
            crate::targets::run(&target, &spec, &ClientOptions::default(), events, cancel).await
        })
    }

    fn sweep(
        &self,
        target: String,
        spec: TestSpec,
        sizes: Vec<u32>,
        events: mpsc::UnboundedSender<SweepEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, SweepResult> {
        Box::pin(async move {
            crate::sweep::run(
                &target,
                &spec,
                &sizes,
                &ClientOptions::default(),
                events,
                cancel,
            )
            .await
        })
    }

    fn latency(
        &self,
        target: String,
        request: LatencyRequest,
        events: mpsc::UnboundedSender<LatencyEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<LatencyResult, SessionError>> {
        Box::pin(async move {
            crate::latency::run(&target, &request, &ClientOptions::default(), events, cancel).await
        })
    }

    #[cfg(feature = "plans")]
    fn plans(&self) -> BoxFuture<'static, Vec<ListedPlan>> {
        let shelf = self.plans.clone();
        Box::pin(async move {
            match shelf {
                Some(shelf) => tokio::task::spawn_blocking(move || shelf.list())
                    .await
                    .unwrap_or_default(),
                None => Vec::new(),
            }
        })
    }

    #[cfg(feature = "plans")]
    // The store is the crate's own type: only the crate's server calls this.
    #[allow(private_interfaces)]
    fn plan(
        &self,
        name: String,
        tags: Vec<String>,
        store: Option<Arc<crate::store::Store>>,
        events: mpsc::UnboundedSender<PlanProgress>,
        stop: CancellationToken,
        now: CancellationToken,
    ) -> BoxFuture<'static, Result<PlanJob, PlanRefusal>> {
        let shelf = self.plans.clone();
        Box::pin(async move {
            let shelf = shelf.ok_or(PlanRefusal::NoPlans)?;
            let plan = tokio::task::spawn_blocking(move || shelf.load(&name))
                .await
                .map_err(|e| PlanRefusal::Invalid(e.to_string()))?
                .ok_or(PlanRefusal::Unknown)?
                .map_err(PlanRefusal::Invalid)?;
            Ok(PlanJob {
                case_tests: plan
                    .cases
                    .iter()
                    .map(|c| (c.peer.clone(), c.spec.clone()))
                    .collect(),
                eta_s: crate::plan::plan_time(&plan.cases).as_secs(),
                run: Box::pin(async move {
                    let stop = crate::plan::Stop {
                        after_case: stop,
                        now,
                    };
                    let result = crate::plan::run(
                        &plan,
                        Origin::Browser,
                        &tags,
                        &ClientOptions::default(),
                        store.as_ref(),
                        &stop,
                        |ev| {
                            let _ = events.send(crate::plan::progress(&ev));
                        },
                    )
                    .await;
                    let (result, id) =
                        crate::plan::judge_and_keep(store.as_ref(), &plan, &tags, result).await;
                    result.end(id)
                }),
            })
        })
    }
}
