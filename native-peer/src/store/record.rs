//! A running test's line into the store: created when the test begins, fed each interval as it
//! is measured, closed with the result before the result is announced. Every write goes to the
//! store's writer thread (`writer`), never onto the async runtime; only the result's is
//! awaited. Store failures are logged, never fatal: a full disk must not stop a measurement.

use std::collections::HashMap;
use std::sync::Arc;

use perfpeer_shared::report::{IntervalReport, PeerRole, TestResult};
use perfpeer_shared::spec::TestSpec;

use super::{Origin, Store};
use crate::hostinfo;

/// One test being recorded.
pub struct Recording {
    store: Arc<Store>,
    id: String,
    next_seq: HashMap<PeerRole, u32>,
    /// Interval JSON written per end; past [`super::MAX_INTERVAL_BYTES`] no more is.
    interval_bytes: HashMap<PeerRole, usize>,
    finished: bool,
}

impl Recording {
    /// Queues the test's start; `None` if this store cannot be written (read-only) or its
    /// writer is behind.
    pub fn begin(
        store: &Arc<Store>,
        test_id: &str,
        origin: Origin,
        role: PeerRole,
        peer: &str,
        spec: &TestSpec,
    ) -> Option<Recording> {
        if store.read_only {
            return None;
        }
        let id = crate::util::random_id();
        let (row, test_id, peer, spec) = (
            id.clone(),
            test_id.to_string(),
            peer.to_string(),
            spec.clone(),
        );
        let queued = store.write_later(move |s| {
            let host = hostinfo::host_info();
            if let Err(e) = s.begin(&row, &test_id, origin, role, &peer, &spec, &host) {
                tracing::warn!(error = %e, "cannot record the test");
            }
        });
        queued.then(|| Recording {
            store: store.clone(),
            id,
            next_seq: HashMap::new(),
            interval_bytes: HashMap::new(),
            finished: false,
        })
    }

    /// The result id (the share link's secret).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Queues one interval of one end (while the test's share of interval space lasts).
    pub fn interval(&mut self, role: PeerRole, report: &IntervalReport) {
        let seq = self.next_seq.entry(role).or_insert(0);
        let written = self.interval_bytes.entry(role).or_insert(0);
        if *written < super::MAX_INTERVAL_BYTES {
            let json = match serde_json::to_string(report) {
                Ok(json) => json,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot record an interval");
                    return;
                }
            };
            *written += json.len();
            let (id, at) = (self.id.clone(), *seq);
            self.store.write_later(move |s| {
                if let Err(e) = s.append_interval_json(&id, role, at, &json) {
                    tracing::warn!(error = %e, "cannot record an interval");
                }
            });
        }
        *seq += 1;
    }

    /// Writes the result, after every interval queued before it; await it before announcing
    /// the result.
    pub async fn finish(mut self, result: &TestResult) {
        self.finished = true;
        let (id, result) = (self.id.clone(), result.clone());
        let written = self.store.write(move |s| s.finish(&id, &result)).await;
        if let Some(Err(e)) = written {
            tracing::warn!(error = %e, "cannot record the result");
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
