//! What a browser's `run`, `sweep`, `latency` and `plan` are handed to. The server knows no kind of
//! target: the layers above it (`targets`, `sweep`, `latency`) implement [`Runner`] and `perfpeer serve` installs it
//! in the server's state.

use futures_util::future::BoxFuture;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::SweepResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::SessionError;
use crate::session::events::{SweepEvent, TestEvent};

/// How a browser's `run` and `sweep` reach their target: any kind of far end for a test, one
/// test per size for a sweep. `perfpeer serve` installs the one that `targets` and `sweep`
/// provide.
pub trait Runner: Send + Sync {
    /// Runs `spec` against `target`.
    fn run(
        &self,
        target: String,
        spec: ValidSpec,
        events: mpsc::UnboundedSender<TestEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<TestResult, SessionError>>;

    /// Runs `spec` against `target` once per size.
    fn sweep(
        &self,
        target: String,
        spec: TestSpec,
        sizes: Vec<u32>,
        events: mpsc::UnboundedSender<SweepEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, SweepResult>;

    /// Runs latency under load against `target`.
    fn latency(
        &self,
        target: String,
        request: LatencyRequest,
        events: mpsc::UnboundedSender<LatencyEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<LatencyResult, SessionError>>;

    /// Runs a plan read from this peer's plans directory (each case against its own peer),
    /// keeping its repeats in `store` as the browser's; `stop` ends it after the running case,
    /// `now` cancels the running test too.
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
    ) -> BoxFuture<'static, perfpeer_shared::plan::PlanResult>;
}
