//! What a browser's `run`, `sweep`, `latency`, `plans` and `plan` are handed to. The server knows
//! no kind of target and no plan file: the layers above it (`targets`, `sweep`, `latency`,
//! `plan`) implement [`Runner`] and `perfpeer serve` installs it in the server's state.

use futures_util::future::BoxFuture;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult};
#[cfg(feature = "plans")]
use perfpeer_shared::plan_progress::{ListedPlan, PlanEnd, PlanProgress};
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

    /// The plans this peer offers (`perfpeer serve --plans DIR`), read now; none without.
    #[cfg(feature = "plans")]
    fn plans(&self) -> BoxFuture<'static, Vec<ListedPlan>>;

    /// Reads the listed plan `name` for a browser's run with `tags`, keeping its repeats and
    /// the whole run in `store` as the browser's; the run starts when its future is first
    /// polled. `stop` ends it after the running case, `now` cancels the running test too.
    #[cfg(feature = "plans")]
    // The store is the crate's own type: only the crate's server calls this.
    #[allow(private_interfaces)]
    fn plan(
        &self,
        name: String,
        tags: Vec<String>,
        store: Option<std::sync::Arc<crate::store::Store>>,
        events: mpsc::UnboundedSender<PlanProgress>,
        stop: CancellationToken,
        now: CancellationToken,
    ) -> BoxFuture<'static, Result<PlanJob, PlanRefusal>>;
}

/// A plan read for a browser's run: what the server says and lists of it, and the run.
#[cfg(feature = "plans")]
pub struct PlanJob {
    /// Its cases' far peers and tests, in order (the running repeat is listed among the
    /// peer's running tests).
    pub case_tests: Vec<(String, TestSpec)>,
    /// Its testing time, seconds.
    pub eta_s: u64,
    /// Runs the cases, judges the run against the plan's baseline, keeps it: how it ended.
    pub run: BoxFuture<'static, PlanEnd>,
}

/// Why a browser's plan cannot run.
#[cfg(feature = "plans")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanRefusal {
    /// The peer offers no plans (no `--plans DIR`).
    NoPlans,
    /// No plan is listed by that name.
    Unknown,
    /// The plan file cannot run: its line and reason.
    Invalid(String),
}
