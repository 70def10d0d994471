//! The store's writer: one thread that runs every write in the order it was asked for, so no
//! SQLite write (with its fsync) ever runs on the async runtime's threads. A write that the
//! caller must see done (a result before it is announced, a sweep before its link) is awaited;
//! the rest (intervals, a test that ended without a result) are queued, and dropped with a
//! warning when the queue is full rather than ever blocking a measurement.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::Store;

/// Writes waiting for the writer thread at most (about 17 minutes of intervals of a full
/// peer's tests); past that, queued writes are dropped.
const QUEUE: usize = 4096;

type Job = Box<dyn FnOnce() + Send>;

/// The sending end of the writer thread's queue (the thread ends when this is dropped and the
/// queue is empty).
#[derive(Debug)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer thread.
    pub(super) fn start() -> Writer {
        let (jobs, mut queue) = mpsc::channel::<Job>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("perfpeer-store".into())
            .spawn(move || {
                while let Some(job) = queue.blocking_recv() {
                    job();
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the store's writer: results are not kept");
        }
        Writer { jobs }
    }
}

impl Store {
    /// Runs `write` on the writer thread after every write asked for before it, and waits for
    /// it; `None` if the writer is gone.
    pub(crate) async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        write: impl FnOnce(&Store) -> T + Send + 'static,
    ) -> Option<T> {
        let (done, result) = oneshot::channel();
        let store = self.clone();
        let job: Job = Box::new(move || {
            let _ = done.send(write(&store));
        });
        self.writer.jobs.send(job).await.ok()?;
        result.await.ok()
    }

    /// Queues `write` for the writer thread without waiting; `false` (logged) when the queue is
    /// full or the writer is gone.
    pub(crate) fn write_later(
        self: &Arc<Self>,
        write: impl FnOnce(&Store) + Send + 'static,
    ) -> bool {
        let store = self.clone();
        let job: Job = Box::new(move || write(&store));
        match self.writer.jobs.try_send(job) {
            Ok(()) => true,
            Err(e) => {
                static DROPPED: crate::admission::LogLimit = crate::admission::LogLimit::new(
                    "the store's writer is behind: a write was dropped",
                    std::time::Duration::from_secs(10),
                );
                DROPPED.warn("the store", e);
                false
            }
        }
    }

    /// Waits until every write asked for so far is done.
    pub(crate) async fn flush(self: &Arc<Self>) {
        let _ = self.write(|_| ()).await;
    }
}
