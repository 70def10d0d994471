//! Shared state of a serving peer: its configuration and caps, the tests waiting for their data
//! streams (by cookie), and the tests running now.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use perfpeer_shared::control::{PeerInfo, RunningTest};
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::units::BitRate;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::engine::DataSocket;
use crate::engine::wire::Cookie;

/// Limits and access settings of `perfpeer serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Tests that may run at once.
    pub max_tests: u32,
    /// Longest test accepted.
    pub max_duration: Duration,
    /// Highest rate accepted per direction (`None` = no cap).
    pub max_bitrate: Option<BitRate>,
    /// Token for privileged requests; `None` means open (`--open`).
    pub token: Option<String>,
}

/// A data stream that presented a cookie on the data port.
#[derive(Debug)]
pub struct IncomingStream {
    /// Stream id it claimed.
    pub id: u32,
    /// Its socket.
    pub socket: DataSocket,
}

/// Everything the handlers share.
pub struct ServerState {
    /// Limits and token.
    pub config: ServeConfig,
    /// What this peer tells about itself.
    pub info: PeerInfo,
    /// One permit per test that may run.
    pub slots: Arc<Semaphore>,
    /// Cancelled on shutdown.
    pub shutdown: CancellationToken,
    /// Tests started from a browser with `run`, attachable by test id.
    pub runs: super::runs::Runs,
    pending: Mutex<HashMap<Cookie, mpsc::Sender<IncomingStream>>>,
    store: std::sync::OnceLock<Arc<crate::store::Store>>,
    running: Mutex<HashMap<String, (RunningTest, Instant)>>,
}

impl ServerState {
    /// State for a peer with `config`.
    pub fn new(config: ServeConfig, info: PeerInfo, shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(ServerState {
            slots: Arc::new(Semaphore::new(config.max_tests as usize)),
            config,
            info,
            shutdown,
            runs: super::runs::Runs::default(),
            pending: Mutex::new(HashMap::new()),
            store: std::sync::OnceLock::new(),
            running: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps results in `store` from now on.
    pub fn set_store(&self, store: Arc<crate::store::Store>) {
        let _ = self.store.set(store);
    }

    /// The result store, if this peer keeps results.
    pub fn store(&self) -> Option<&Arc<crate::store::Store>> {
        self.store.get()
    }

    /// Whether `token` grants privileged requests.
    pub fn authorizes(&self, token: Option<&str>) -> bool {
        match &self.config.token {
            None => true,
            Some(expected) => {
                token.is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes()))
            }
        }
    }

    /// Registers a test waiting for its streams; they arrive on the returned receiver until the
    /// guard is dropped.
    pub fn expect_streams(
        self: &Arc<Self>,
        cookie: Cookie,
        count: usize,
    ) -> (PendingGuard, mpsc::Receiver<IncomingStream>) {
        let (tx, rx) = mpsc::channel(count.max(1));
        lock(&self.pending).insert(cookie, tx);
        (
            PendingGuard {
                state: self.clone(),
                cookie,
            },
            rx,
        )
    }

    /// Hands a stream to the test with `cookie`; gives it back if there is none.
    pub fn deliver(&self, cookie: &Cookie, stream: IncomingStream) -> Result<(), IncomingStream> {
        let tx = lock(&self.pending).get(cookie).cloned();
        match tx {
            Some(tx) => tx.try_send(stream).map_err(|e| e.into_inner()),
            None => Err(stream),
        }
    }

    /// Whether a test is waiting for streams with `cookie`.
    pub fn is_pending(&self, cookie: &Cookie) -> bool {
        lock(&self.pending).contains_key(cookie)
    }

    /// Lists a running test until the guard is dropped.
    pub fn track(
        self: &Arc<Self>,
        test_id: &str,
        role: PeerRole,
        peer: String,
        spec: &TestSpec,
    ) -> RunningGuard {
        let entry = RunningTest {
            test_id: test_id.to_string(),
            role,
            peer,
            spec: spec.clone(),
            elapsed_s: 0.0,
        };
        lock(&self.running).insert(test_id.to_string(), (entry, Instant::now()));
        RunningGuard {
            state: self.clone(),
            test_id: test_id.to_string(),
        }
    }

    /// Tests running now, oldest first.
    pub fn running_tests(&self) -> Vec<RunningTest> {
        let mut tests: Vec<RunningTest> = lock(&self.running)
            .values()
            .map(|(t, since)| RunningTest {
                elapsed_s: since.elapsed().as_secs_f64(),
                ..t.clone()
            })
            .collect();
        tests.sort_by(|a, b| b.elapsed_s.total_cmp(&a.elapsed_s));
        tests
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Removes a pending test's cookie when dropped.
pub struct PendingGuard {
    state: Arc<ServerState>,
    cookie: Cookie,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        lock(&self.state.pending).remove(&self.cookie);
    }
}

/// Removes a running test from the list when dropped.
pub struct RunningGuard {
    state: Arc<ServerState>,
    test_id: String,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        lock(&self.state.running).remove(&self.test_id);
    }
}
