//! The logs of the runs a browser started: everything a run said so far (`started`,
//! `interval`s, then `result` or `error`; for a sweep `sweep_started`, the running size's
//! `interval`s, `sweep_point`s, then `sweep_result`), followed by any number of connections
//! from the start (`attach` after a reconnect replays it), and the peer's runs by id. A run
//! nobody follows for [`DETACHED_GRACE`] is cancelled; a finished run stays attachable for
//! [`KEEP_FINISHED`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use perfpeer_shared::control::ServerMsg;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::util::lock;

/// How long a run goes on with no browser following it.
pub const DETACHED_GRACE: Duration = Duration::from_secs(30);
/// How long a finished run can still be attached to (for its result).
pub const KEEP_FINISHED: Duration = Duration::from_secs(120);

/// The runs this peer knows, by test id (from `started` on).
#[derive(Default)]
pub struct Runs {
    map: Mutex<HashMap<String, Arc<RunLog>>>,
}

impl Runs {
    /// The run with `test_id`, if it is running or finished recently.
    pub fn get(&self, test_id: &str) -> Option<Arc<RunLog>> {
        lock(&self.map).get(test_id).cloned()
    }
    pub(super) fn insert(&self, test_id: &str, log: Arc<RunLog>) {
        lock(&self.map).insert(test_id.to_string(), log);
    }
    pub(super) fn remove(&self, test_id: &str) {
        lock(&self.map).remove(test_id);
    }
}

/// Everything one run said so far, and who follows it.
pub struct RunLog {
    messages: Mutex<Vec<ServerMsg>>,
    len: watch::Sender<usize>,
    cancel: CancellationToken,
    followers: AtomicUsize,
}

impl RunLog {
    pub(super) fn new() -> Arc<RunLog> {
        Arc::new(RunLog {
            messages: Mutex::new(Vec::new()),
            len: watch::channel(0).0,
            cancel: CancellationToken::new(),
            followers: AtomicUsize::new(0),
        })
    }

    pub(super) fn push(&self, msg: ServerMsg) {
        let mut messages = lock(&self.messages);
        messages.push(msg);
        self.len.send_replace(messages.len());
    }

    /// Messages from index `from` on (at most `max`), and whether the last one ends the run.
    pub fn read(&self, from: usize, max: usize) -> (Vec<ServerMsg>, bool) {
        let messages = lock(&self.messages);
        let end = messages.len().min(from.saturating_add(max));
        let slice = messages.get(from..end).unwrap_or_default().to_vec();
        let done = end == messages.len() && messages.last().is_some_and(is_final);
        (slice, done)
    }

    /// Number of messages so far; changes wake [`RunLog::changed`] waiters.
    pub fn subscribe(&self) -> watch::Receiver<usize> {
        self.len.subscribe()
    }

    /// Asks the test to stop early (its partial result follows).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The token the run's test watches (cancelled by [`RunLog::cancel`]).
    pub(super) fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Counts a follower until the guard is dropped.
    pub fn follow(self: &Arc<Self>) -> Following {
        self.followers.fetch_add(1, Ordering::SeqCst);
        Following { log: self.clone() }
    }
}

fn is_final(msg: &ServerMsg) -> bool {
    matches!(
        msg,
        ServerMsg::Result { .. }
            | ServerMsg::Error { .. }
            | ServerMsg::SweepResult { .. }
            | ServerMsg::LatencyResult { .. }
    )
}

/// Cancels a run once nobody has followed it for [`DETACHED_GRACE`].
#[derive(Default)]
pub(super) struct Abandonment {
    alone_since: Option<Instant>,
}

impl Abandonment {
    /// Called every second.
    pub(super) fn check(&mut self, log: &RunLog, id: &str) {
        if log.followers.load(Ordering::SeqCst) > 0 {
            self.alone_since = None;
        } else if self.alone_since.get_or_insert_with(Instant::now).elapsed() >= DETACHED_GRACE {
            tracing::info!(
                id,
                "no browser followed the run for {} s: cancelling",
                DETACHED_GRACE.as_secs()
            );
            log.cancel();
        }
    }
}

/// A connection following a run.
pub struct Following {
    log: Arc<RunLog>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.log.followers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::control::ErrorCode;

    #[test]
    fn a_log_replays_in_chunks_and_knows_its_end() {
        let log = RunLog::new();
        let mut rx = log.subscribe();
        for _ in 0..5 {
            log.push(ServerMsg::SendersDone);
        }
        assert!(rx.has_changed().unwrap());
        assert_eq!(*rx.borrow_and_update(), 5);
        let (first, done) = log.read(0, 3);
        assert_eq!((first.len(), done), (3, false));
        let (rest, done) = log.read(3, 100);
        assert_eq!((rest.len(), done), (2, false));
        log.push(ServerMsg::error(ErrorCode::Unreachable, "x"));
        assert!(log.read(5, 100).1);
        assert!(!log.read(0, 2).1, "not at the end yet");
        assert!(log.read(99, 10).0.is_empty());
    }

    #[test]
    fn followers_are_counted_until_dropped() {
        let log = RunLog::new();
        let a = log.follow();
        let b = log.follow();
        assert_eq!(log.followers.load(Ordering::SeqCst), 2);
        drop(a);
        drop(b);
        assert_eq!(log.followers.load(Ordering::SeqCst), 0);
    }
}
