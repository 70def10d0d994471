//! The outbox's writer: a task that takes the local store's queued changes in order and writes
//! them to the lab store, a batch at a time, removing them from the queue only once PostgreSQL
//! has committed them. A database that cannot be reached leaves them queued: the task tries
//! again after a pause that doubles from half a second to eight, and `/api/info` says how
//! many results wait. Writes are idempotent (a result's row is replaced by id), so a batch
//! written twice (committed, then the connection lost before the queue was told) is one row.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{LabError, LabStore};
use crate::store::Store;

/// Changes written in one transaction at most.
const BATCH: u32 = 100;
/// Pause while nothing is queued.
const IDLE: Duration = Duration::from_millis(500);
/// First and longest pause after a failure.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const LONGEST_BACKOFF: Duration = Duration::from_secs(8);

/// Writes one batch; how many changes it took from the queue.
pub(crate) async fn push_batch(store: &Arc<Store>, lab: &LabStore) -> Result<usize, LabError> {
    let local = store.clone();
    let batch = crate::util::spawn_blocking(move || local.outbox_batch(BATCH))
        .await
        .map_err(|e| LabError::Task(e.to_string()))??;
    if batch.is_empty() {
        return Ok(0);
    }
    lab.write(&batch).await?;
    let done: Vec<(String, i64)> = batch.into_iter().map(|q| (q.id, q.seq)).collect();
    let n = done.len();
    let local = store.clone();
    crate::util::spawn_blocking(move || local.outbox_done(&done))
        .await
        .map_err(|e| LabError::Task(e.to_string()))??;
    Ok(n)
}

/// The results still waiting, noted for `/api/info`.
async fn count_waiting(store: &Arc<Store>, lab: &LabStore) -> u64 {
    let local = store.clone();
    let waiting = crate::util::spawn_blocking(move || local.outbox_waiting())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or(0);
    lab.set_waiting(waiting);
    waiting
}

/// Writes the queue to the lab store until `stop` (a serving peer's background task).
pub(crate) async fn run(store: Arc<Store>, lab: Arc<LabStore>, stop: CancellationToken) {
    let mut backoff = FIRST_BACKOFF;
    let mut failing = false;
    if let Err(e) = lab.reach().await {
        tracing::warn!(error = %e, "the lab database cannot be reached yet");
    }
    loop {
        let pause = match push_batch(&store, &lab).await {
            Ok(0) => {
                backoff = FIRST_BACKOFF;
                failing = false;
                IDLE
            }
            Ok(_) => {
                backoff = FIRST_BACKOFF;
                failing = false;
                Duration::ZERO
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "results wait for the lab database");
                }
                failing = true;
                let pause = backoff;
                backoff = (backoff * 2).min(LONGEST_BACKOFF);
                pause
            }
        };
        count_waiting(&store, &lab).await;
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// Writes the queue to the lab store for at most `limit` (a CLI run before it exits); the
/// results still waiting then (they go with the next run attached to this data directory).
pub(crate) async fn drain(store: &Arc<Store>, lab: &LabStore, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        match tokio::time::timeout_at(deadline.into(), push_batch(store, lab)).await {
            Ok(Ok(0)) => break,
            Ok(Ok(_)) => {}
            Ok(Err(_)) | Err(_) => break,
        }
    }
    count_waiting(store, lab).await
}
