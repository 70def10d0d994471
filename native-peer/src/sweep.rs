//! Runs a packet-size sweep: one short test per size against any target (perfpeer, stock
//! iperf3/iperf2/ttcp), in order, each finished test turned into a [`SweepPoint`]. Shared by
//! `perfpeer test --sweep-len` and a browser's `sweep` run, which differ only in what they do
//! with the [`SweepEvent`]s.

use perfpeer_shared::report::{TestResult, TestStatus};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::{SweepPoint, SweepResult};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::client::ClientOptions;
use crate::session::events::SweepEvent;

/// Runs `spec` once per size (its `len` replaced), sending events to `events`; a cancel ends the
/// running size's test early and skips the rest. A size whose test fails is a row saying why,
/// and the sweep goes on.
pub(crate) async fn run(
    target: &str,
    spec: &TestSpec,
    sizes: &[u32],
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<SweepEvent>,
    cancel: CancellationToken,
) -> SweepResult {
    let mut points = Vec::with_capacity(sizes.len());
    for &len in sizes {
        if cancel.is_cancelled() {
            break;
        }
        let mut one = spec.clone();
        one.len = len;
        // Each size is a new spec, checked as its own: one that does not fit fails alone.
        let point = match ValidSpec::new(one) {
            Err(e) => SweepPoint::failed(len, e.to_string()),
            Ok(one) => match one_size(target, &one, opts, &events, cancel.clone()).await {
                Ok(r) if r.status == TestStatus::Complete => SweepPoint::from_result(len, &r)
                    .unwrap_or_else(|| SweepPoint::failed(len, "no receiver report")),
                Ok(r) => SweepPoint::failed(len, partial_reason(&r)),
                Err(e) => SweepPoint::failed(len, e.to_string()),
            },
        };
        let _ = events.send(SweepEvent::Point(point.clone()));
        points.push(point);
    }
    SweepResult {
        protocol: spec.protocol,
        ccid: spec.dccp.and_then(|d| d.ccid),
        bitrate: spec.bitrate.map(|b| b.0),
        seconds_per_size: spec.total_time().map_or(0.0, |t| t.as_secs_f64()),
        points,
    }
}

/// One size's test, its events forwarded as [`SweepEvent::Test`].
async fn one_size(
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: &mpsc::UnboundedSender<SweepEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, crate::session::SessionError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let test = crate::targets::run(target, spec, opts, tx, cancel);
    tokio::pin!(test);
    let outcome = loop {
        tokio::select! {
            r = &mut test => break r,
            Some(ev) = rx.recv() => { let _ = events.send(SweepEvent::Test(ev)); }
        }
    };
    while let Ok(ev) = rx.try_recv() {
        let _ = events.send(SweepEvent::Test(ev));
    }
    outcome
}

fn partial_reason(r: &TestResult) -> String {
    r.status.ended_early().unwrap_or_default().to_string()
}
