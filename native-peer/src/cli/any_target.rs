//! What `perfpeer serve` hands the server for a browser's `run`, `sweep` and `latency`: the
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
}
