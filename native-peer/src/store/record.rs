//! A running test's line into the store: created when the test begins, fed each interval as it
//! is measured, closed with the result before the result is announced. Every write goes to the
//! store's writer thread (`writer`), never onto the async runtime; only the result's is
//! awaited. Store failures are logged (through one limiter: a client cycling tests on a full
//! disk cannot flood the log), never fatal: a full disk must not stop a measurement. A test
//! whose row could not be written writes no intervals (they would only fail on the missing
//! row) and tries its row again with its result.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use perfpeer_shared::report::{IntervalReport, PeerRole, TestResult};
use perfpeer_shared::spec::TestSpec;

use super::{NewTest, Origin, Store};
use crate::admission::{LogLimit, Source};
use crate::hostinfo;

/// Writes of a test or its result that failed (a full disk: one per test, or per interval).
static WRITE_FAILURES: LogLimit = LogLimit::new("a result was not kept", Duration::from_secs(10));

/// One test being recorded.
pub(crate) struct Recording {
    store: Arc<Store>,
    id: String,
    row: Arc<NewTest>,
    /// Set by the writer thread once the test's row is written.
    begun: Arc<AtomicBool>,
    next_seq: HashMap<PeerRole, u32>,
    /// Interval JSON written per end; past [`super::MAX_INTERVAL_BYTES`] no more is.
    interval_bytes: HashMap<PeerRole, usize>,
    finished: bool,
}

impl Recording {
    /// Queues the test's start; `None` if this store cannot be written (read-only) or its
    /// writer is behind.
    pub(crate) fn begin(
        store: &Arc<Store>,
        test_id: &str,
        origin: Origin,
        role: PeerRole,
        peer: &str,
        spec: &TestSpec,
    ) -> Option<Recording> {
        Recording::start(
            store,
            NewTest {
                test_id: test_id.to_string(),
                origin,
                role,
                peer: peer.to_string(),
                spec: spec.clone(),
                source: None,
            },
        )
    }

    /// [`Recording::begin`] for a test this peer serves as the far end of an anonymous
    /// `client`: kept within the far end's share of the history, and its client's share of it.
    pub(crate) fn begin_served(
        store: &Arc<Store>,
        test_id: &str,
        client: SocketAddr,
        spec: &TestSpec,
    ) -> Option<Recording> {
        Recording::start(
            store,
            NewTest {
                test_id: test_id.to_string(),
                origin: Origin::FarEnd,
                role: PeerRole::Server,
                // Its name comes with its final report (see the result's server_addr).
                peer: client.ip().to_canonical().to_string(),
                spec: spec.clone(),
                source: Some(Source::of(client.ip())),
            },
        )
    }

    fn start(store: &Arc<Store>, row: NewTest) -> Option<Recording> {
        if store.read_only {
            return None;
        }
        let id = crate::util::random_id();
        let (row, begun) = (Arc::new(row), Arc::new(AtomicBool::new(false)));
        let (job_id, job_row, job_begun) = (id.clone(), row.clone(), begun.clone());
        let queued =
            store.write_later(
                move |s| match s.begin(&job_id, &job_row, &hostinfo::host_info()) {
                    Ok(()) => job_begun.store(true, Ordering::Release),
                    Err(e) => WRITE_FAILURES.warn(&job_row.peer, format_args!("its start: {e}")),
                },
            );
        queued.then(|| Recording {
            store: store.clone(),
            id,
            row,
            begun,
            next_seq: HashMap::new(),
            interval_bytes: HashMap::new(),
            finished: false,
        })
    }

    /// The result id (the share link's secret).
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Queues one interval of one end (while the test's share of interval space lasts).
    pub(crate) fn interval(&mut self, role: PeerRole, report: &IntervalReport) {
        let seq = self.next_seq.entry(role).or_insert(0);
        let written = self.interval_bytes.entry(role).or_insert(0);
        if *written < super::MAX_INTERVAL_BYTES {
            let json = match serde_json::to_string(report) {
                Ok(json) => json,
                Err(e) => {
                    WRITE_FAILURES.warn(&self.row.peer, format_args!("an interval: {e}"));
                    return;
                }
            };
            *written += json.len();
            let (id, at, begun, peer) = (
                self.id.clone(),
                *seq,
                self.begun.clone(),
                self.row.peer.clone(),
            );
            self.store.write_later(move |s| {
                // Without its row (a full disk at its start) an interval has nowhere to go.
                if !begun.load(Ordering::Acquire) {
                    return;
                }
                if let Err(e) = s.append_interval_json(&id, role, at, &json) {
                    WRITE_FAILURES.warn(peer, format_args!("an interval: {e}"));
                }
            });
        }
        *seq += 1;
    }

    /// Writes the result, after every interval queued before it (and the test's row first if
    /// it could not be written at the start); await it before announcing the result.
    pub(crate) async fn finish(mut self, result: &TestResult) {
        self.finished = true;
        let (id, result) = (self.id.clone(), result.clone());
        let (row, begun) = (self.row.clone(), self.begun.clone());
        let written = self
            .store
            .write(move |s| {
                if !begun.load(Ordering::Acquire) {
                    s.begin(&id, &row, &hostinfo::host_info())?;
                    begun.store(true, Ordering::Release);
                }
                s.finish(&id, &result)
            })
            .await;
        if let Some(Err(e)) = written {
            WRITE_FAILURES.warn(&self.row.peer, format_args!("its result: {e}"));
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.finished {
            let id = self.id.clone();
            self.store.write_later(move |s| {
                let _ = s.fail(&id, "the test ended without a result");
            });
        }
    }
}
