//! Runs a packet-size sweep: one short test per size against any target (perfpeer, stock
//! iperf3/iperf2/ttcp), in order, each finished test turned into a [`SweepPoint`]. Shared by
//! `perfpeer test --sweep-len` and a browser's `sweep` run, which differ only in what they do
//! with the [`SweepEvent`]s.

use perfpeer_shared::control::{GroupKind, TestGroup};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use perfpeer_shared::sweep::{SweepPoint, SweepResult};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::client::ClientOptions;
use crate::session::events::SweepEvent;

/// Runs `spec` once per size (its `len` replaced), sending events to `events`; a cancel ends the
/// running size's test early and skips the rest. A size whose test fails is a row saying why,
/// and the sweep goes on. Every size's test names the sweep ([`TestGroup`]), so a perfpeer far
/// end keeps the sweep as one result.
pub(crate) async fn run(
    target: &str,
    spec: &TestSpec,
    sizes: &[u32],
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<SweepEvent>,
    cancel: CancellationToken,
) -> SweepResult {
    // Each size is a new spec, checked as its own: one that does not fit fails alone.
    let specs: Vec<(u32, Result<ValidSpec, _>)> = sizes
        .iter()
        .map(|&len| {
            let mut one = spec.clone();
            one.len = len;
            (len, ValidSpec::new(one))
        })
        .collect();
    let opts = ClientOptions {
        group: Some(TestGroup {
            id: crate::util::random_id(),
            kind: GroupKind::Sweep,
            tests: u32::try_from(specs.iter().filter(|(_, s)| s.is_ok()).count())
                .unwrap_or(u32::MAX),
        }),
        ..opts.clone()
    };
    let mut points = Vec::with_capacity(sizes.len());
    for (len, one) in specs {
        if cancel.is_cancelled() {
            break;
        }
        let point = match one {
            Err(e) => SweepPoint::failed(len, e.to_string()),
            Ok(one) => match one_size(target, &one, &opts, &events, cancel.clone()).await {
                Ok(r) => SweepPoint::of_test(len, &r),
                Err(e) => SweepPoint::failed(len, e.to_string()),
            },
        };
        let _ = events.send(SweepEvent::Point(point.clone()));
        points.push(point);
    }
    SweepResult::new(spec, points)
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
