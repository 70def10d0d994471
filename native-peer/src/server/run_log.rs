//! The logs of the runs a browser started: everything a run said so far (`started`,
//! `interval`s, then `result` or `error`; for a sweep `sweep_started`, the running size's
//! `interval`s, `sweep_point`s, then `sweep_result`; for a plan `plan_started`, `plan_event`s,
//! then `plan_ended`), followed by any number of connections from the start (`attach` after a
//! reconnect replays it), and the peer's runs by id. A run nobody has followed for
//! [`DETACHED_GRACE`] (counted from when its last follower left) is cancelled (a plan is not:
//! see `plan_runs`); a finished run stays attachable for [`KEEP_FINISHED`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use perfpeer_shared::control::ServerMsg;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::util::lock;

/// How long a run goes on with no browser following it.
pub(crate) const DETACHED_GRACE: Duration = Duration::from_secs(30);
/// How long a finished run can still be attached to (for its result).
pub(crate) const KEEP_FINISHED: Duration = Duration::from_secs(120);

/// The runs this peer knows, by test id (from `started` on).
#[derive(Default)]
pub(crate) struct Runs {
    map: Mutex<HashMap<String, Arc<RunLog>>>,
}

impl Runs {
    /// The run with `test_id`, if it is running or finished recently.
    pub(crate) fn get(&self, test_id: &str) -> Option<Arc<RunLog>> {
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
pub(crate) struct RunLog {
    messages: Mutex<Vec<ServerMsg>>,
    len: watch::Sender<usize>,
    cancel: CancellationToken,
    followers: Mutex<Followers>,
}

/// How many connections follow a run, and since when none has.
struct Followers {
    count: usize,
    /// When the last follower left (or the run began with none); `None` while followed.
    alone_since: Option<Instant>,
}

impl RunLog {
    pub(super) fn new() -> Arc<RunLog> {
        Arc::new(RunLog {
            messages: Mutex::new(Vec::new()),
            len: watch::channel(0).0,
            cancel: CancellationToken::new(),
            followers: Mutex::new(Followers {
                count: 0,
                alone_since: Some(Instant::now()),
            }),
        })
    }

    pub(super) fn push(&self, msg: ServerMsg) {
        let mut messages = lock(&self.messages);
        messages.push(msg);
        self.len.send_replace(messages.len());
    }

    /// Messages from index `from` on (at most `max`), and whether the last one ends the run.
    pub(crate) fn read(&self, from: usize, max: usize) -> (Vec<ServerMsg>, bool) {
        let messages = lock(&self.messages);
        let end = messages.len().min(from.saturating_add(max));
        let slice = messages.get(from..end).unwrap_or_default().to_vec();
        let done = end == messages.len() && messages.last().is_some_and(is_final);
        (slice, done)
    }

    /// Number of messages so far; changes wake [`RunLog::changed`] waiters.
    pub(crate) fn subscribe(&self) -> watch::Receiver<usize> {
        self.len.subscribe()
    }

    /// Asks the test to stop early (its partial result follows).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The token the run's test watches (cancelled by [`RunLog::cancel`]).
    pub(super) fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Counts a follower until the guard is dropped.
    pub(crate) fn follow(self: &Arc<Self>) -> Following {
        let mut followers = lock(&self.followers);
        followers.count += 1;
        followers.alone_since = None;
        Following { log: self.clone() }
    }

    /// Whether nobody has followed the run for [`DETACHED_GRACE`] at `now`.
    pub(super) fn abandoned_at(&self, now: Instant) -> bool {
        lock(&self.followers)
            .alone_since
            .is_some_and(|since| now.saturating_duration_since(since) >= DETACHED_GRACE)
    }
}

fn is_final(msg: &ServerMsg) -> bool {
    match msg {
        ServerMsg::Result { .. }
        | ServerMsg::Error { .. }
        | ServerMsg::SweepResult { .. }
        | ServerMsg::LatencyResult { .. } => true,
        #[cfg(feature = "plans")]
        ServerMsg::PlanEnded { .. } => true,
        _ => false,
    }
}

/// A connection following a run.
pub(crate) struct Following {
    log: Arc<RunLog>,
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut followers = lock(&self.log.followers);
        followers.count -= 1;
        if followers.count == 0 {
            followers.alone_since = Some(Instant::now());
        }
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

    #[tokio::test(start_paused = true)]
    async fn a_run_is_abandoned_30_s_after_its_last_follower_left() {
        let log = RunLog::new();
        let t0 = Instant::now();
        assert!(!log.abandoned_at(t0 + Duration::from_secs(29)));
        assert!(log.abandoned_at(t0 + DETACHED_GRACE), "never followed");
        let (a, b) = (log.follow(), log.follow());
        assert!(
            !log.abandoned_at(t0 + Duration::from_secs(3600)),
            "followed"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        drop(a);
        assert!(
            !log.abandoned_at(t0 + Duration::from_secs(3600)),
            "one follower is left"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        drop(b);
        let left = Instant::now();
        assert!(!log.abandoned_at(left + Duration::from_millis(29_999)));
        assert!(log.abandoned_at(left + DETACHED_GRACE));
    }
}
