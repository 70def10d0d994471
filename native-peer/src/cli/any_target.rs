//! What `perfpeer serve` hands the server for a browser's `run`, `sweep`, `latency` and `plan`: the
//! server knows no kind of target, so the implementation of its `Runner` lives up here, where
//! `targets`, `sweep` and `latency` are all in reach.

use futures_util::future::BoxFuture;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::SweepResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::server::runner::Runner;
use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::events::{SweepEvent, TestEvent};

/// A browser's `run`, `sweep` and `latency` against any kind of target: what `perfpeer serve` hands the
/// server (which knows no targets itself).
pub struct AnyTarget;

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
    // A plan and the store are the crate's own types: only the crate's server calls this.
    #[allow(private_interfaces)]
    fn plan(
        &self,
        plan: crate::plan::file::Plan,
        tags: Vec<String>,
        store: Option<std::sync::Arc<crate::store::Store>>,
        events: mpsc::UnboundedSender<perfpeer_shared::plan_progress::PlanProgress>,
        stop: CancellationToken,
        now: CancellationToken,
    ) -> BoxFuture<'static, perfpeer_shared::plan::PlanResult> {
        Box::pin(async move {
            let stop = crate::plan::Stop {
                after_case: stop,
                now,
            };
            crate::plan::run(
                &plan,
                perfpeer_shared::history::Origin::Browser,
                &tags,
                &ClientOptions::default(),
                store.as_ref(),
                &stop,
                |ev| {
                    let _ = events.send(crate::plan::progress(&ev));
                },
            )
            .await
        })
    }
}
