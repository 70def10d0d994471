//! A running test's line into the store: created when the test begins, fed each interval as it
//! is measured, closed with the result before the result is announced. Store failures are
//! logged, never fatal: a full disk must not stop a measurement.

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
    /// Writes the test's start; `None` (logged) if the store refused.
    pub fn begin(
        store: &Arc<Store>,
        test_id: &str,
        origin: Origin,
        role: PeerRole,
        peer: &str,
        spec: &TestSpec,
    ) -> Option<Recording> {
        match store.begin(test_id, origin, role, peer, spec, &hostinfo::host_info()) {
            Ok(id) => Some(Recording {
                store: store.clone(),
                id,
                next_seq: HashMap::new(),
                interval_bytes: HashMap::new(),
                finished: false,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot record the test");
                None
            }
        }
    }

    /// The result id (the share link's secret).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Writes one interval of one end (while the test's share of interval space lasts).
    pub fn interval(&mut self, role: PeerRole, report: &IntervalReport) {
        let seq = self.next_seq.entry(role).or_insert(0);
        let written = self.interval_bytes.entry(role).or_insert(0);
        if *written < super::MAX_INTERVAL_BYTES {
            match self.store.append_interval(&self.id, role, *seq, report) {
                Ok(n) => *written += n,
                Err(e) => tracing::warn!(error = %e, "cannot record an interval"),
            }
        }
        *seq += 1;
    }

    /// Writes the result; call before announcing it.
    pub fn finish(mut self, result: &TestResult) {
        if let Err(e) = self.store.finish(&self.id, result) {
            tracing::warn!(error = %e, "cannot record the result");
        }
        self.finished = true;
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.store.fail(&self.id, "the test ended without a result");
        }
    }
}
