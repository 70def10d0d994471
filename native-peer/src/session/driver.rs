//! One client run, whatever answers at the far end. A [`FarEnd`] (a perfpeer peer, a stock
//! iperf3, iperf 2 or ttcp) has done its handshake and opened the data streams; [`drive`] then
//! measures, watches the far end and the end condition, ends the test, takes the far end's
//! finals and makes the [`TestResult`], with one rule for what an early end or a broken stream
//! makes of it. Adding a kind of far end is one implementation of [`FarEnd`], nothing else.

use std::time::Duration;

use perfpeer_shared::report::{IntervalReport, PeerRole, SideReport, StreamRole, TestResult};
use perfpeer_shared::spec::{EndCondition, TestSpec};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::SessionError;
use super::events::TestEvent;
use super::measure::{EarlyEnd, Measurement};
use crate::engine::{StreamSetup, WireOptions};

/// How often the end condition is checked when a test is not timed.
const DONE_POLL: Duration = Duration::from_millis(10);

/// A far end that is ready: its streams are open and measurement may start.
pub(crate) struct Ready {
    /// The test's id at the far end (empty where the far end has none).
    pub test_id: String,
    /// The far end's address, for the result.
    pub server_addr: String,
    /// This end's data streams.
    pub setups: Vec<StreamSetup>,
    /// The datagram format the far end speaks.
    pub wire: WireOptions,
    /// Which end of the test this is.
    pub role: PeerRole,
}

/// What a far end says while the test runs.
#[derive(Debug)]
pub(crate) enum FarEvent {
    /// It measured an interval.
    Interval(IntervalReport),
    /// Its senders spent their byte count.
    SendersDone,
    /// It ended the test (why).
    Ended(String),
}

/// One kind of far end, after its handshake: what it says during the test, when the test is
/// done, how it is told the end, and its final figures.
#[allow(async_fn_in_trait)] // used generically in this crate, never as `dyn` or across threads
pub(crate) trait FarEnd {
    /// The next thing the far end says during the test. Must be cancel-safe; a far end with
    /// no control connection during the test never answers.
    async fn next_event(&mut self) -> FarEvent {
        std::future::pending().await
    }

    /// When a timed test ends (`started`: when measurement began, on the runtime's clock).
    fn deadline(&self, spec: &TestSpec, started: Instant) -> Option<Instant> {
        spec.total_time().map(|t| started + t)
    }

    /// Whether the test is done before its deadline (checked every 10 ms). By default: this
    /// end's senders spent their byte count, or, if it only receives, its receivers saw the end.
    fn done(&mut self, m: &Measurement, _spec: &TestSpec) -> bool {
        let e = m.engine();
        if e.has_senders() {
            e.senders_done()
        } else {
            e.receivers_done()
        }
    }

    /// The test ran to its end: tell the far end, before the streams stop.
    async fn end(&mut self, _m: &Measurement) -> Result<(), SessionError> {
        Ok(())
    }

    /// The test ends early (`why`): tell the far end if it can be told.
    async fn abandon(&mut self, _why: &str) {}

    /// Whether a cancel ends the test as its end would (the far end told, the streams drained,
    /// its finals taken), so a cancelled result keeps both ends' figures. Only for far ends
    /// that answer at once; the others are abandoned.
    fn finals_after_cancel(&self) -> bool {
        false
    }

    /// Whether the streams are aborted rather than stopped and drained at the end.
    fn abort_streams(&self, ended_early: bool) -> bool {
        ended_early
    }

    /// After the streams ended: the far end's figures, if it reports any. May adjust this end's
    /// report to the far end's way of counting; an error makes the result partial.
    async fn finals(
        &mut self,
        _local: &mut SideReport,
        _events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        Ok(None)
    }

    /// What broke the far end's own data streams, as it said with its finals: the result is
    /// partial, with both ends' figures kept.
    fn far_stream_errors(&self) -> Option<String> {
        None
    }

    /// After the finals: a multicast group's receivers, each with its report (a far end that
    /// is one peer has none).
    fn group_receivers(&mut self) -> Vec<perfpeer_shared::multicast::GroupReceiver> {
        Vec::new()
    }
}

/// Runs the test with a far end that is ready, sending live events to `events`; `cancel` ends
/// it early with a partial result.
pub(crate) async fn drive(
    far: impl FarEnd,
    ready: Ready,
    spec: &TestSpec,
    events: &mpsc::UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<TestResult, SessionError> {
    // Every log line of the run carries its test id and far end through this span.
    let span = tracing::info_span!("test", test_id = %ready.test_id, far_end = %ready.server_addr);
    run(far, ready, spec, events, cancel).instrument(span).await
}

async fn run(
    mut far: impl FarEnd,
    ready: Ready,
    spec: &TestSpec,
    events: &mpsc::UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<TestResult, SessionError> {
    let Ready {
        test_id,
        server_addr,
        setups,
        wire,
        role,
    } = ready;
    let started_unix_ms = crate::util::unix_ms_now();
    let mut m = Measurement::start_with(role, spec, setups, &wire)?;
    let _ = events.send(TestEvent::Started {
        test_id: test_id.clone(),
        server_addr: server_addr.clone(),
        sockets: m.sockets(),
    });
    let mut ended_early = until_end(&mut far, &mut m, role, spec, events, cancel)
        .await
        .err();
    // The end and an interval boundary came together: the interval is reported as itself,
    // not stretched into the last one.
    if let Some(report) = m.take_due_interval() {
        let _ = events.send(TestEvent::Interval { role, report });
    }
    // A cancel ends the test as its end would where the far end can be asked for its finals:
    // a cancelled stream keeps the receiver's loss and jitter.
    let cancelled = ended_early == Some(EarlyEnd::Cancelled);
    let graceful = ended_early.is_none() || (cancelled && far.finals_after_cancel());
    if graceful {
        if let Err(e) = far.end(&m).await
            && !cancelled
        {
            ended_early = Some(EarlyEnd::Because(e.to_string()));
        }
    } else if let Some(why) = &ended_early {
        far.abandon(&why.to_string()).await;
    }
    let mut finished = m.finish(far.abort_streams(!graceful)).await;
    if let Some(report) = finished.tail.take() {
        let _ = events.send(TestEvent::Interval { role, report });
    }
    let remote = if graceful {
        match far.finals(&mut finished.report, events).await {
            Ok(remote) => remote,
            // A cancelled test stays cancelled: it just has no far-end figures.
            Err(_) if cancelled => None,
            Err(why) => {
                ended_early = Some(EarlyEnd::Because(why));
                None
            }
        }
    } else {
        None
    };
    if ended_early.is_none()
        && let Some(why) = far.far_stream_errors()
    {
        ended_early = Some(EarlyEnd::Because(format!("the far end's {why}")));
    }
    let status = finished.status(ended_early);
    let mut local = finished.report;
    local.intervals.shrink_to_fit();
    Ok(TestResult {
        id: test_id,
        spec: spec.clone(),
        started_unix_ms,
        server_addr,
        local,
        remote,
        group_receivers: far.group_receivers(),
        working_load: None,
        status,
    })
}

/// Measures until the end condition; `Err` if the test ended early.
async fn until_end(
    far: &mut impl FarEnd,
    m: &mut Measurement,
    role: PeerRole,
    spec: &TestSpec,
    events: &mpsc::UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<(), EarlyEnd> {
    let deadline = far.deadline(spec, m.started());
    let mut poll = tokio::time::interval(DONE_POLL);
    loop {
        tokio::select! {
            report = m.next_interval() => {
                let _ = events.send(TestEvent::Interval { role, report });
            }
            event = far.next_event() => match event {
                FarEvent::Interval(report) => {
                    let _ = events.send(TestEvent::Interval { role: role.other(), report });
                }
                FarEvent::SendersDone => {}
                FarEvent::Ended(why) => return Err(EarlyEnd::Because(why)),
            },
            () = sleep_until(deadline) => return Ok(()),
            _ = poll.tick() => {
                if far.done(m, spec) {
                    return Ok(());
                }
            }
            () = cancel.cancelled() => return Err(EarlyEnd::Cancelled),
        }
    }
}

/// Byte-count end for a client whose far end reports nothing during the test: its senders
/// spent the count, or, if it only receives, it received that many bytes.
pub(crate) fn received_byte_count(m: &Measurement, spec: &TestSpec) -> bool {
    let EndCondition::Bytes { bytes } = spec.end else {
        return false;
    };
    let e = m.engine();
    if e.has_senders() {
        e.senders_done()
    } else {
        e.bytes(StreamRole::Receiver) >= bytes
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
