//! The far ends that are perfpeer peers, and the runs against them: one peer (a unicast test)
//! or a multicast group's receivers, as one type ([`PeerFarEnds`]) so that one copy of the
//! generic driver serves both (a router's binary holds each copy: docs/benchmarks.md,
//! "Multicast, paid for").

use perfpeer_shared::multicast::GroupReceiver;
use perfpeer_shared::report::{SideReport, TestResult};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::working_load::WorkingLoadResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::SessionError;
use super::client::{ClientOptions, PerfpeerFarEnd, open};
use super::driver::{FarEnd, FarEvent, drive};
use super::events::TestEvent;
use super::measure::Measurement;
use super::multicast::{GroupFarEnd, open_group};

/// Runs `spec` against the peer at `target`, sending live events to `events`; `cancel` ends it
/// early with a partial result. A bounce-back test with a working load
/// (`--bounceback-congest`) runs the load beside it as a test of its own, to the same peer and
/// for the same time, and keeps what the load achieved with the round trips.
pub async fn run_test(
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    let Some(load) = spec.rr.and_then(|rr| rr.bursts?.congest) else {
        return run_one(target, spec, opts, &events, &cancel).await;
    };
    let load_spec = ValidSpec::new(load.spec_beside(spec))
        .map_err(|e| SessionError::Internal(format!("the working load: {e}")))?;
    let load_cancel = cancel.child_token();
    let load_task = {
        let (target, opts, cancel) = (target.to_string(), opts.clone(), load_cancel.clone());
        crate::util::spawn_erased(async move {
            // The load's own events are not the test's (its rows would read as the bursts').
            let (quiet, _unread) = mpsc::unbounded_channel();
            run_one(&target, &load_spec, &opts, &quiet, &cancel).await
        })
    };
    let result = run_one(target, spec, opts, &events, &cancel).await;
    // Bursts that failed or ended early take their load with them.
    if result
        .as_ref()
        .map_or(true, |r| r.status.ended_early().is_some())
    {
        load_cancel.cancel();
    }
    let loaded = load_task.await;
    let mut result = result?;
    let loaded = match &loaded {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    result.working_load = Some(WorkingLoadResult::of(load, loaded));
    Ok(result)
}

/// One test against one peer.
async fn run_one(
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: &mpsc::UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<TestResult, SessionError> {
    let (far, ready) = open(target, spec, opts).await?;
    drive(PeerFarEnds::One(far), ready, spec, events, cancel).await
}

/// Runs the multicast test `spec` (its `multicast` set) with `receivers` (host[:port] of each
/// receiving peer's control port), sending live events to `events`.
pub(crate) async fn run_group(
    receivers: &[String],
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    let (far, ready, asked) = open_group(receivers, spec, opts).await?;
    drive(PeerFarEnds::Group(far), ready, &asked, &events, &cancel).await
}

/// The far ends that are perfpeer peers, as one type: `drive` is generic over its far end, and
/// one copy of it serves a unicast test and a group's (a router's binary holds each copy).
pub(crate) enum PeerFarEnds {
    /// One peer: a unicast test.
    One(PerfpeerFarEnd),
    /// A multicast group's receivers.
    Group(GroupFarEnd),
}

impl FarEnd for PeerFarEnds {
    async fn next_event(&mut self) -> FarEvent {
        match self {
            PeerFarEnds::One(far) => far.next_event().await,
            PeerFarEnds::Group(far) => far.next_event().await,
        }
    }

    fn done(&mut self, m: &Measurement, spec: &TestSpec) -> bool {
        match self {
            PeerFarEnds::One(far) => far.done(m, spec),
            PeerFarEnds::Group(far) => far.done(m, spec),
        }
    }

    async fn end(&mut self, m: &Measurement) -> Result<(), SessionError> {
        match self {
            PeerFarEnds::One(far) => far.end(m).await,
            PeerFarEnds::Group(far) => far.end(m).await,
        }
    }

    fn finals_after_cancel(&self) -> bool {
        true
    }

    async fn finals(
        &mut self,
        local: &mut SideReport,
        events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        match self {
            PeerFarEnds::One(far) => far.finals(local, events).await,
            PeerFarEnds::Group(far) => far.finals(local, events).await,
        }
    }

    fn far_stream_errors(&self) -> Option<String> {
        match self {
            PeerFarEnds::One(far) => far.far_stream_errors(),
            PeerFarEnds::Group(far) => far.far_stream_errors(),
        }
    }

    fn group_receivers(&mut self) -> Vec<GroupReceiver> {
        match self {
            PeerFarEnds::One(_) => Vec::new(),
            PeerFarEnds::Group(far) => far.group_receivers(),
        }
    }
}
