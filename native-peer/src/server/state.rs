//! Shared state of a serving peer: its configuration and caps, the tests waiting for their data
//! streams (by cookie), the tests running now and the runs served as the far end.

use crate::util::lock;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use perfpeer_shared::control::{PeerInfo, RunningTest};
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::units::BitRate;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::guard::HostPolicy;
use super::token::{FailedAttempts, TooManyFailures, constant_time_eq};
use crate::admission::{Admission, Caps};
use crate::budget::MemoryBudget;
use crate::engine::DataSocket;
use crate::engine::wire::{Cookie, Nonce, random_cookie};

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
    /// Data streams may come from another address than their control connection
    /// (`--data-from-any-address`, for NAT setups that map them apart). Off: the data port takes
    /// a stream only from the IP address that opened the test.
    pub data_from_any_address: bool,
    /// Bytes of buffers the tests this peer serves may hold at once (`--max-memory`).
    pub max_memory: u64,
    /// Host names the control port answers to besides IP literals, `localhost` and this
    /// machine's name (`--host-name`).
    pub host_names: Vec<String>,
    /// Origins whose pages may use `/ws` and the API besides the peer's own (`--allow-origin`).
    pub allowed_origins: Vec<String>,
    /// `/metrics` without the token (`--metrics-open`).
    pub metrics_open: bool,
}

/// A data stream that presented a cookie on the data port.
#[derive(Debug)]
pub(crate) struct IncomingStream {
    /// Stream id it claimed.
    pub id: u32,
    /// Its socket.
    pub socket: DataSocket,
}

/// Why the data port did not take a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StreamRefusal {
    /// No test waits for streams with that cookie.
    #[error("unknown cookie")]
    UnknownCookie,
    /// The stream came from another address than the test's control connection.
    #[error("from another address than the test's control connection")]
    WrongSource,
    /// The test has all its streams, or answered all the hellos it will.
    #[error("the test takes no more streams")]
    Full,
}

/// A test waiting for its data streams.
struct PendingTest {
    tx: mpsc::Sender<IncomingStream>,
    /// The address of the control connection that opened the test.
    client_ip: IpAddr,
    /// Nonces sent in answer to UDP hellos, by stream id and the hello's source.
    challenges: HashMap<(u32, SocketAddr), Nonce>,
    /// Challenges this test may still send: a cookie leaked to a third party cannot turn the
    /// data port into a reflector.
    challenges_left: u32,
}

/// Challenges a pending test may send per stream (a client retries ten times), plus a margin.
const CHALLENGES_PER_STREAM: u32 = 16;

/// Everything the handlers share.
pub struct ServerState {
    /// Limits and token.
    pub(crate) config: ServeConfig,
    /// What this peer tells about itself.
    pub(crate) info: PeerInfo,
    /// One permit per test that may run.
    pub(crate) slots: Arc<Semaphore>,
    /// Cancelled on shutdown.
    pub(crate) shutdown: CancellationToken,
    /// Tests started from a browser with `run`, attachable by test id.
    pub(crate) runs: super::run_log::Runs,
    /// Every task serving a connection or a run: drained on shutdown, so running tests end
    /// with their results kept.
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// What a browser's `run` and `sweep` are handed to.
    pub(crate) runner: Arc<dyn super::runner::Runner>,
    /// Buffers of running tests, within `config.max_memory`.
    pub(crate) memory: Arc<MemoryBudget>,
    /// The names and origins the control port answers to.
    pub(crate) host_policy: Arc<HostPolicy>,
    /// Wrong tokens by source.
    failed_tokens: FailedAttempts,
    /// Tests this peer is the far end of, by the client's address: one address may hold half
    /// the slots (rounded up), so it cannot keep every other client out.
    pub(crate) far_tests: Arc<Admission>,
    /// The runs (sweeps, latency runs) this peer serves as the far end, each kept as one result.
    pub(crate) far_groups: Arc<super::far_groups::FarGroups>,
    pending: Mutex<HashMap<Cookie, PendingTest>>,
    store: std::sync::OnceLock<Arc<crate::store::Store>>,
    running: Mutex<HashMap<String, (RunningTest, Instant)>>,
    /// What `/metrics` tells.
    pub(crate) metrics: Arc<super::metrics::Metrics>,
    /// When the peer started serving, Unix ms.
    started_unix_ms: u64,
}

impl ServerState {
    /// State for a peer with `config`.
    pub fn new(
        config: ServeConfig,
        info: PeerInfo,
        runner: Arc<dyn super::runner::Runner>,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(ServerState {
            slots: Arc::new(Semaphore::new(config.max_tests as usize)),
            memory: MemoryBudget::new(config.max_memory),
            host_policy: Arc::new(HostPolicy::new(
                &info.name,
                &config.host_names,
                &config.allowed_origins,
            )),
            failed_tokens: FailedAttempts::default(),
            far_tests: Admission::new(Caps {
                total: config.max_tests as usize,
                per_source: (config.max_tests as usize).div_ceil(2),
            }),
            far_groups: Arc::default(),
            config,
            info,
            shutdown,
            runs: super::run_log::Runs::default(),
            tasks: tokio_util::task::TaskTracker::new(),
            runner,
            pending: Mutex::new(HashMap::new()),
            store: std::sync::OnceLock::new(),
            running: Mutex::new(HashMap::new()),
            metrics: Arc::default(),
            started_unix_ms: crate::util::unix_ms_now(),
        })
    }

    /// What `/metrics` says now.
    pub(crate) fn metrics_page(&self) -> String {
        self.metrics.render(super::metrics::Readings {
            running_tests: lock(&self.running).len(),
            store_errors: self.store().map_or(0, |s| s.write_failures()),
            #[cfg(feature = "postgres")]
            queued_results: self
                .store()
                .and_then(|s| s.lab())
                .map_or(0, |lab| lab.state().waiting),
            #[cfg(not(feature = "postgres"))]
            queued_results: 0,
            started_unix_s: self.started_unix_ms as f64 / 1e3,
        })
    }

    /// Keeps results in `store` from now on.
    pub(crate) fn set_store(&self, store: Arc<crate::store::Store>) {
        let _ = self.store.set(store);
    }

    /// What this peer tells about itself now: its fixed facts and whether results are kept.
    pub(crate) fn peer_info(&self) -> PeerInfo {
        let store_problem = match self.store() {
            Some(store) => store.problem(),
            None => Some("results are not kept: the data directory could not be opened".into()),
        };
        PeerInfo {
            store_problem,
            #[cfg(feature = "postgres")]
            lab_store: self.store().and_then(|s| s.lab()).map(|lab| lab.state()),
            wifi: crate::wifi::interfaces_for_anyone(),
            ..self.info.clone()
        }
    }

    /// The result store, if this peer keeps results.
    pub(crate) fn store(&self) -> Option<&Arc<crate::store::Store>> {
        self.store.get()
    }

    /// Where the runs this peer serves as the far end are kept, if it keeps results.
    pub(crate) fn keeper(&self) -> Option<super::far_groups::Keeper> {
        self.store().map(|store| super::far_groups::Keeper {
            store: store.clone(),
            shutdown: self.shutdown.clone(),
            tasks: self.tasks.clone(),
        })
    }

    /// Whether `token`, sent from `ip`, grants privileged requests; [`TooManyFailures`] while
    /// that source is held back for guessing.
    pub(crate) fn authorizes(
        &self,
        ip: IpAddr,
        token: Option<&str>,
    ) -> Result<bool, TooManyFailures> {
        match (&self.config.token, token) {
            (None, _) => Ok(true),
            (Some(_), None) => Ok(false),
            (Some(expected), Some(given)) => self.failed_tokens.check(ip, given, expected),
        }
    }

    /// Registers a test waiting for its streams, opened by a control connection from
    /// `client_ip`; they arrive on the returned receiver until the guard is dropped.
    pub(crate) fn expect_streams(
        self: &Arc<Self>,
        cookie: Cookie,
        count: usize,
        client_ip: IpAddr,
    ) -> (PendingGuard, mpsc::Receiver<IncomingStream>) {
        let (tx, rx) = mpsc::channel(count.max(1));
        let streams = u32::try_from(count).unwrap_or(u32::MAX);
        lock(&self.pending).insert(
            cookie,
            PendingTest {
                tx,
                client_ip: client_ip.to_canonical(),
                challenges: HashMap::new(),
                challenges_left: streams
                    .saturating_add(1)
                    .saturating_mul(CHALLENGES_PER_STREAM),
            },
        );
        (
            PendingGuard {
                state: self.clone(),
                cookie,
            },
            rx,
        )
    }

    /// Whether a stream from `from` may join a test opened from `client_ip`.
    fn source_allowed(&self, client_ip: IpAddr, from: SocketAddr) -> bool {
        self.config.data_from_any_address || from.ip().to_canonical() == client_ip
    }

    /// Whether a test opened from `ip`'s source is waiting for its streams: a data connection
    /// from there is expected, and takes an idle place of another source's rather than be
    /// refused. (Only the control connection's own source: `--data-from-any-address` lets
    /// streams come from elsewhere, but gives them no such claim.)
    pub(crate) fn expects_streams_from(&self, ip: IpAddr) -> bool {
        let source = crate::admission::Source::of(ip);
        lock(&self.pending)
            .values()
            .any(|test| crate::admission::Source::of(test.client_ip) == source)
    }

    /// Hands a stream from `from` to the test with `cookie`; gives it back if there is none, or
    /// if the stream came from another address than the test's control connection.
    pub(crate) fn deliver(
        &self,
        cookie: &Cookie,
        from: SocketAddr,
        stream: IncomingStream,
    ) -> Result<(), (StreamRefusal, IncomingStream)> {
        let pending = lock(&self.pending);
        let Some(test) = pending.get(cookie) else {
            return Err((StreamRefusal::UnknownCookie, stream));
        };
        if !self.source_allowed(test.client_ip, from) {
            return Err((StreamRefusal::WrongSource, stream));
        }
        test.tx
            .try_send(stream)
            .map_err(|e| (StreamRefusal::Full, e.into_inner()))
    }

    /// The nonce to challenge a UDP hello from `from` with: the same one for the same stream
    /// and source, so a retried hello is answered alike; an error if the cookie is unknown, the
    /// source is not the test's, or the test has sent all the challenges it may.
    pub(crate) fn challenge(
        &self,
        cookie: &Cookie,
        stream_id: u32,
        from: SocketAddr,
    ) -> Result<Nonce, StreamRefusal> {
        let mut pending = lock(&self.pending);
        let test = pending
            .get_mut(cookie)
            .ok_or(StreamRefusal::UnknownCookie)?;
        if !self.source_allowed(test.client_ip, from) {
            return Err(StreamRefusal::WrongSource);
        }
        if test.challenges_left == 0 {
            return Err(StreamRefusal::Full);
        }
        test.challenges_left -= 1;
        Ok(*test
            .challenges
            .entry((stream_id, from))
            .or_insert_with(random_cookie))
    }

    /// Whether `nonce` is the one sent to `from` for stream `stream_id` of the test with
    /// `cookie`: then `from` has proven it receives there.
    pub(crate) fn confirms(
        &self,
        cookie: &Cookie,
        stream_id: u32,
        from: SocketAddr,
        nonce: &Nonce,
    ) -> bool {
        lock(&self.pending).get(cookie).is_some_and(|test| {
            test.challenges
                .get(&(stream_id, from))
                .is_some_and(|sent| constant_time_eq(sent, nonce))
        })
    }

    /// Lists a running test until the guard is dropped; `attach_id` is the id a browser
    /// follows it by (`None` for a test this peer is the far end of).
    pub(crate) fn track(
        self: &Arc<Self>,
        test_id: &str,
        role: PeerRole,
        peer: String,
        spec: &TestSpec,
        attach_id: Option<&str>,
    ) -> RunningGuard {
        let entry = RunningTest {
            test_id: test_id.to_string(),
            role,
            peer,
            spec: spec.clone(),
            elapsed_s: 0.0,
            attach_id: attach_id.map(str::to_string),
        };
        lock(&self.running).insert(test_id.to_string(), (entry, Instant::now()));
        RunningGuard {
            state: self.clone(),
            test_id: test_id.to_string(),
        }
    }

    /// Test slots free now (of `--max-tests`).
    pub fn free_slots(&self) -> usize {
        self.slots.available_permits()
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

/// Removes a pending test's cookie when dropped.
pub(crate) struct PendingGuard {
    state: Arc<ServerState>,
    cookie: Cookie,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        lock(&self.state.pending).remove(&self.cookie);
    }
}

/// Removes a running test from the list when dropped.
pub(crate) struct RunningGuard {
    state: Arc<ServerState>,
    test_id: String,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        lock(&self.state.running).remove(&self.test_id);
    }
}
