//! The runs this peer serves as the far end, kept whole: the tests a client says belong together
//! (`open{group}`: a sweep's sizes, a latency run's probe and loads) become one result, a
//! `SweepResult` of the sizes as this peer kept them or the latency run's load as it served it,
//! instead of one result per test.
//!
//! Bounded, whatever a client claims: at most [`MAX_SWEEP_POINTS`] (a sweep) or
//! [`MAX_LATENCY_TESTS`] (a latency run) tests per run, [`MAX_PER_SOURCE`] runs open per client
//! source and [`MAX_OPEN`] in all; a test beyond them (or of a kind, id or spec that does not
//! fit) is kept alone, as an older client's is. A run is kept when the last test it announced
//! ends, or once none of its tests has run for [`IDLE`] (a cancelled sweep), or at shutdown;
//! an id this peer does not hold (never seen, or kept already) starts a new run. Kept runs count
//! as the client's results in the far end's share of the history.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use perfpeer_shared::control::{GroupKind, TestGroup};
use perfpeer_shared::latency::{ServedTest, is_probe, load_phase, served_run};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{Protocol, TestSpec};
use perfpeer_shared::sweep::{MAX_SWEEP_POINTS, SweepPoint, SweepResult, check_request};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::{LogLimit, Source};
use crate::store::{Served, Store, StoreError, checked_remote};
use crate::util::lock;

/// Most tests one latency run keeps: the probe, and a TCP and a UDP load per loaded phase, with
/// one to spare.
pub(crate) const MAX_LATENCY_TESTS: u32 = 8;
/// Runs open at once per client source.
pub(crate) const MAX_PER_SOURCE: usize = 4;
/// Runs open at once in all.
pub(crate) const MAX_OPEN: usize = 32;
/// A run none of whose tests has run for this long is kept with the tests it had.
pub(crate) const IDLE: Duration = Duration::from_secs(30);
/// Longest run id taken.
const MAX_ID: usize = 64;
/// Flow RTT samples kept per test of a latency run (its percentiles are drawn from them).
const MAX_RTT_SAMPLES: usize = 1024;

/// Runs this peer could not keep (a full disk).
static NOT_KEPT: LogLimit = LogLimit::new("a served run was not kept", Duration::from_secs(10));

/// A run's key: the client's source and the id it gave.
type Key = (Source, String);

/// The runs open now.
#[derive(Debug, Default)]
pub(crate) struct FarGroups {
    open: Mutex<HashMap<Key, Group>>,
}

/// One open run.
#[derive(Debug)]
struct Group {
    /// Tests the client announced.
    tests: u32,
    joined: u32,
    ended: u32,
    /// When the run's first test began (the timeline of a latency run), and in Unix ms.
    started: Instant,
    started_unix_ms: u64,
    /// When a test of it last began or ended.
    last_activity: Instant,
    /// The client, as the far end names it (its host name comes with each final report).
    peer: String,
    client: SocketAddr,
    /// The first test's spec (a sweep's, with its first size).
    first: TestSpec,
    parts: Parts,
}

/// What a run has kept of its tests so far.
#[derive(Debug)]
enum Parts {
    /// A sweep's rows, in the order the sizes ended.
    Sweep(Vec<SweepPoint>),
    /// A latency run's tests.
    Latency(Vec<ServedTest>),
}

impl Group {
    fn running(&self) -> u32 {
        self.joined - self.ended
    }

    /// Whether a test of `spec` fits this run: a sweep's sizes share a protocol and direction.
    fn fits(&self, spec: &TestSpec) -> bool {
        match self.parts {
            Parts::Sweep(_) => {
                spec.protocol == self.first.protocol && spec.direction == self.first.direction
            }
            Parts::Latency(_) => true,
        }
    }
}

/// Whether a test of `spec` can be part of a run of `kind`, and the most tests such a run keeps.
fn kind_fits(kind: GroupKind, spec: &TestSpec) -> Option<u32> {
    match kind {
        GroupKind::Sweep => check_request(spec, &[spec.len])
            .is_ok()
            .then(|| u32::try_from(MAX_SWEEP_POINTS).unwrap_or(u32::MAX)),
        GroupKind::Latency => (spec.protocol != Protocol::Dccp
            && (is_probe(spec) || load_phase(spec).is_some()))
        .then_some(MAX_LATENCY_TESTS),
        GroupKind::Unknown => None,
    }
}

/// Where runs are kept, and what their watches follow: the peer's store, its shutdown and its
/// tasks (drained at shutdown).
#[derive(Clone)]
pub(crate) struct Keeper {
    /// The result store.
    pub store: Arc<Store>,
    /// Cancelled when the peer shuts down: open runs are kept once their tests end.
    pub shutdown: CancellationToken,
    /// Where each run's watch runs.
    pub tasks: TaskTracker,
}

/// A test that is part of a run: ends it with [`Member::end`], or (dropped) as a test that
/// ended without a result.
pub(crate) struct Member {
    groups: Arc<FarGroups>,
    store: Arc<Store>,
    key: Key,
    spec: TestSpec,
    /// When it began, seconds into the run.
    start: f64,
    done: bool,
}

impl FarGroups {
    /// Makes the test of `spec` from `client` part of the run `group` names, when this peer keeps
    /// results (`keeper`) and the run's bounds allow; `None`: the test is kept alone. The first
    /// test of a run starts the watch that keeps it once it has been idle.
    pub(crate) fn join(
        self: &Arc<Self>,
        keeper: Option<&Keeper>,
        group: &TestGroup,
        client: SocketAddr,
        spec: &TestSpec,
    ) -> Option<Member> {
        let keeper = keeper.filter(|k| k.store.writable())?;
        let most = kind_fits(group.kind, spec)?;
        let id_ok = (1..=MAX_ID).contains(&group.id.len())
            && group
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok || group.tests == 0 || group.tests > most {
            return None;
        }
        let source = Source::of(client.ip());
        let key = (source, group.id.clone());
        let now = Instant::now();
        let mut open = lock(&self.open);
        let start = match open.get_mut(&key) {
            Some(g) => {
                if g.joined >= g.tests || !g.fits(spec) {
                    return None;
                }
                g.joined += 1;
                g.last_activity = now;
                now.saturating_duration_since(g.started).as_secs_f64()
            }
            None => {
                let of_source = open.keys().filter(|(s, _)| *s == source).count();
                if open.len() >= MAX_OPEN || of_source >= MAX_PER_SOURCE {
                    return None;
                }
                open.insert(
                    key.clone(),
                    Group {
                        tests: group.tests,
                        joined: 1,
                        ended: 0,
                        started: now,
                        started_unix_ms: crate::util::unix_ms_now(),
                        last_activity: now,
                        peer: client.ip().to_canonical().to_string(),
                        client,
                        first: spec.clone(),
                        parts: match group.kind {
                            GroupKind::Sweep => Parts::Sweep(Vec::new()),
                            _ => Parts::Latency(Vec::new()),
                        },
                    },
                );
                keeper.tasks.spawn(crate::util::boxed(watch(
                    self.clone(),
                    keeper.clone(),
                    key.clone(),
                )));
                0.0
            }
        };
        drop(open);
        Some(Member {
            groups: self.clone(),
            store: keeper.store.clone(),
            key,
            spec: spec.clone(),
            start,
            done: false,
        })
    }
}

impl Member {
    /// The test ended with `result` (its client named, as a test's own result): the run's
    /// result id if it was the run's last test (the run is kept before this returns).
    pub(crate) async fn end(mut self, result: &TestResult) -> Option<String> {
        self.done = true;
        let finished = self.settle(Ok(result))?;
        keep(&self.store, finished).await
    }

    /// Adds this test's part to its run; the run, taken out, if it is complete now.
    fn settle(&self, result: Result<&TestResult, &str>) -> Option<Finished> {
        let mut open = lock(&self.groups.open);
        let group = open.get_mut(&self.key)?;
        group.ended += 1;
        group.last_activity = Instant::now();
        match result {
            Ok(r) => {
                let r = checked_remote(r);
                group.peer.clone_from(&r.server_addr);
                match &mut group.parts {
                    Parts::Sweep(points) => points.push(SweepPoint::of_test(r.spec.len, &r)),
                    Parts::Latency(tests) => {
                        let mut served = ServedTest::of(self.start, &r);
                        served.load.flow_rtt_ms.truncate(MAX_RTT_SAMPLES);
                        tests.push(served);
                    }
                }
            }
            Err(why) => match &mut group.parts {
                Parts::Sweep(points) => points.push(SweepPoint::failed(self.spec.len, why)),
                Parts::Latency(tests) => {
                    tests.push(ServedTest::failed(&self.spec, self.start, why));
                }
            },
        }
        if group.ended >= group.tests && group.running() == 0 {
            return open.remove(&self.key).map(|g| Finished::of(g, self.key.0));
        }
        None
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(finished) = self.settle(Err("the test ended without a result")) {
            self.store.write_later(move |s| {
                if let Err(e) = finished.keep(s) {
                    NOT_KEPT.warn(finished.source, e);
                }
            });
        }
    }
}

/// Keeps the run `key` once it has been idle for [`IDLE`] (or, at shutdown, once its tests have
/// ended); returns when the run is kept, by this or by its last test.
async fn watch(groups: Arc<FarGroups>, keeper: Keeper, key: Key) {
    let finished = loop {
        let shutting = keeper.shutdown.is_cancelled();
        let wait = {
            let mut open = lock(&groups.open);
            let group = open.get(&key);
            let Some(group) = group else { return };
            let idle_for = group.last_activity.elapsed();
            if group.running() == 0 && (shutting || idle_for >= IDLE) {
                let group = open.remove(&key).expect("just seen");
                break Finished::of(group, key.0);
            }
            if shutting {
                Duration::from_millis(100)
            } else if group.running() > 0 {
                IDLE
            } else {
                IDLE - idle_for
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = keeper.shutdown.cancelled(), if !shutting => {}
        }
    };
    keep(&keeper.store, finished).await;
}

/// Writes a finished run; its result id.
async fn keep(store: &Arc<Store>, finished: Finished) -> Option<String> {
    let source = finished.source;
    match store.write(move |s| finished.keep(s)).await {
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => {
            NOT_KEPT.warn(source, e);
            None
        }
        None => None,
    }
}

/// A run taken out of the open ones, to be kept.
struct Finished {
    source: Source,
    peer: String,
    group: Group,
}

impl Finished {
    fn of(group: Group, source: Source) -> Finished {
        Finished {
            source,
            peer: group.peer.clone(),
            group,
        }
    }

    /// Writes it as one result; its id.
    fn keep(&self, store: &Store) -> Result<String, StoreError> {
        let g = &self.group;
        let run = match &g.parts {
            Parts::Sweep(points) => {
                Served::Sweep(g.first.clone(), SweepResult::new(&g.first, points.clone()))
            }
            Parts::Latency(tests) => {
                let ipv6 = g.client.ip().to_canonical().is_ipv6();
                let (request, result) = served_run(&self.peer, g.started_unix_ms, ipv6, tests);
                Served::Latency(request, result)
            }
        };
        store.save_served(self.source, &self.peer, &run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::history::{Origin, ResultKind};
    use perfpeer_shared::latency::Phase;
    use perfpeer_shared::report::{PeerRole, SideReport, StreamFinal, StreamRole, TestStatus};
    use perfpeer_shared::spec::Direction;

    /// A far end's runs, kept in a fresh store.
    struct Peer {
        groups: Arc<FarGroups>,
        keeper: Keeper,
        dir: std::path::PathBuf,
    }

    impl Peer {
        fn new(tag: &str) -> Peer {
            let dir = std::env::temp_dir()
                .join(format!("perfpeer-far-groups-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let (store, _) = Store::open(&dir).unwrap();
            let keeper = Keeper {
                store: Arc::new(store),
                shutdown: CancellationToken::new(),
                tasks: TaskTracker::new(),
            };
            Peer {
                groups: Arc::default(),
                keeper,
                dir,
            }
        }

        fn join(&self, group: &TestGroup, at: SocketAddr, spec: &TestSpec) -> Option<Member> {
            self.groups.join(Some(&self.keeper), group, at, spec)
        }

        fn store(&self) -> &Arc<Store> {
            &self.keeper.store
        }

        fn open(&self) -> usize {
            lock(&self.groups.open).len()
        }
    }

    impl Drop for Peer {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn group(kind: GroupKind, tests: u32) -> TestGroup {
        TestGroup {
            id: "0123456789abcdef0123456789abcdef".into(),
            kind,
            tests,
        }
    }

    fn client(ip: &str) -> SocketAddr {
        format!("{ip}:40000").parse().unwrap()
    }

    fn udp(len: u32) -> TestSpec {
        let mut spec = TestSpec::new(Protocol::Udp);
        spec.len = len;
        spec
    }

    /// The far end's result of `spec`: its streams moved 1 MB in 1 s each (received where the
    /// client sends, sent where it receives).
    fn served(spec: &TestSpec) -> TestResult {
        let mut local = SideReport::empty(PeerRole::Server, Default::default());
        local.streams = spec
            .stream_plan()
            .into_iter()
            .map(|(id, client_sends)| StreamFinal {
                id,
                role: if client_sends {
                    StreamRole::Receiver
                } else {
                    StreamRole::Sender
                },
                bytes: 1_000_000,
                duration: Duration::from_secs(1),
                packets: None,
                tcp: None,
                udp_rx: None,
                rr: None,
                writes: None,
                write_one_way: None,
                write_frames: None,
            })
            .collect();
        TestResult {
            id: "t".into(),
            spec: spec.clone(),
            started_unix_ms: 1,
            server_addr: "laptop (10.0.0.2)".into(),
            local,
            remote: None,
            group_receivers: Vec::new(),
            working_load: None,
            status: TestStatus::Complete,
        }
    }

    #[tokio::test]
    async fn a_sweeps_tests_are_kept_as_one_result_when_the_last_ends() {
        let peer = Peer::new("sweep");
        let g = group(GroupKind::Sweep, 3);
        let mut ids = Vec::new();
        for len in [64, 128, 256] {
            let spec = udp(len);
            let member = peer.join(&g, client("10.0.0.2"), &spec).expect("joins");
            ids.push(member.end(&served(&spec)).await);
        }
        let id = ids.pop().unwrap().expect("the last test keeps the run");
        assert_eq!(ids, [None, None], "the run is kept once, by its last test");
        let list = peer.store().list(10).unwrap();
        assert_eq!(list.len(), 1, "one row for the sweep: {list:?}");
        let line = &list[0];
        assert_eq!(
            (
                line.id.as_str(),
                line.kind,
                line.origin,
                line.role,
                line.peer.as_str()
            ),
            (
                id.as_str(),
                ResultKind::Sweep,
                Origin::FarEnd,
                PeerRole::Server,
                "laptop (10.0.0.2)"
            )
        );
        let kept = peer.store().sweep(&id).unwrap().unwrap();
        let lens: Vec<u32> = kept.result.points.iter().map(|p| p.len).collect();
        assert_eq!(lens, [64, 128, 256]);
        assert!(
            kept.result
                .points
                .iter()
                .all(|p| p.error.is_none() && (p.bits_per_second - 8e6).abs() < 1.0)
        );
        assert!(
            kept.title().contains("this peer was its far end"),
            "{}",
            kept.title()
        );
        // The id is no longer held: the next test with it starts a new run.
        assert!(peer.open() == 0);
        assert!(peer.join(&g, client("10.0.0.2"), &udp(64)).is_some());
    }

    #[tokio::test]
    async fn what_does_not_fit_a_run_is_kept_alone() {
        let peer = Peer::new("bounds");
        let at = client("10.0.0.2");
        let spec = udp(64);
        let alone = |g: &TestGroup, spec: &TestSpec| peer.join(g, at, spec).is_none();
        assert!(
            alone(&group(GroupKind::Unknown, 2), &spec),
            "a kind not known"
        );
        assert!(alone(&group(GroupKind::Sweep, 0), &spec), "no tests");
        assert!(
            alone(&group(GroupKind::Sweep, 65), &spec),
            "beyond 64 sizes"
        );
        assert!(
            alone(&group(GroupKind::Latency, 9), &spec),
            "beyond 8 tests"
        );
        assert!(
            alone(&group(GroupKind::Sweep, 2), &TestSpec::new(Protocol::Tcp)),
            "a sweep runs over UDP or DCCP"
        );
        for id in ["", "a b", "<script>", &"a".repeat(65)] {
            let g = TestGroup {
                id: id.to_string(),
                ..group(GroupKind::Sweep, 2)
            };
            assert!(alone(&g, &spec), "id {id:?}");
        }
        // A run takes the tests it announced, of its own protocol and direction.
        let one = group(GroupKind::Sweep, 2);
        let first = peer.join(&one, at, &spec).unwrap();
        let mut reverse = udp(128);
        reverse.direction = Direction::Reverse;
        assert!(alone(&one, &reverse));
        let second = peer.join(&one, at, &udp(128)).unwrap();
        assert!(alone(&one, &udp(256)), "the run has its two tests");
        // Runs per source, and in all.
        let numbered = |n: usize| TestGroup {
            id: format!("run{n}"),
            ..group(GroupKind::Sweep, 2)
        };
        let mut held: Vec<Member> = (1..MAX_PER_SOURCE)
            .map(|n| peer.join(&numbered(n), at, &spec).unwrap())
            .collect();
        assert!(alone(&numbered(MAX_PER_SOURCE), &spec), "one source's runs");
        for n in 0..MAX_OPEN - MAX_PER_SOURCE {
            let other = client(&format!("10.1.{}.{}", n / 200, n % 200 + 1));
            held.push(peer.join(&numbered(n), other, &spec).unwrap());
        }
        assert_eq!(peer.open(), MAX_OPEN);
        assert!(peer.join(&numbered(0), client("10.9.9.9"), &spec).is_none());
        // A peer that keeps no results keeps no runs.
        let bare = Arc::new(FarGroups::default());
        assert!(bare.join(None, &numbered(0), at, &spec).is_none());
        drop((first, second, held));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_run_is_kept_with_the_tests_it_had() {
        let peer = Peer::new("idle");
        // A sweep of three sizes cancelled after its second: the first ended, the second broke.
        let g = group(GroupKind::Sweep, 3);
        let spec = udp(64);
        let m = peer.join(&g, client("10.0.0.2"), &spec).unwrap();
        assert_eq!(m.end(&served(&spec)).await, None);
        drop(peer.join(&g, client("10.0.0.2"), &udp(128)).unwrap());
        // (Nothing here awaits the store's thread before the run is idle: the paused clock
        // would move on meanwhile.)
        tokio::time::sleep(IDLE - Duration::from_secs(1)).await;
        assert_eq!(peer.open(), 1, "not idle yet");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(peer.open() == 0, "idle: taken out");
        peer.store().flush().await;
        let list = peer.store().list(10).unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        let kept = peer.store().sweep(&list[0].id).unwrap().unwrap();
        let rows: Vec<(u32, Option<&str>)> = kept
            .result
            .points
            .iter()
            .map(|p| (p.len, p.error.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [(64, None), (128, Some("the test ended without a result"))]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_latency_run_is_kept_as_its_load_without_probe_figures() {
        let peer = Peer::new("latency");
        let request = perfpeer_shared::latency::LatencyRequest::default();
        let g = group(GroupKind::Latency, request.tests());
        assert_eq!(g.tests, 4, "the probe and three TCP loads");
        let at = client("10.0.0.2");
        let probe_spec = request.probe_spec(40.0);
        let probe = peer.join(&g, at, &probe_spec).unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        for phase in [Phase::Download, Phase::Upload, Phase::Both] {
            let spec = request.tcp_load_spec(phase).unwrap();
            let load = peer.join(&g, at, &spec).unwrap();
            tokio::time::advance(Duration::from_secs(5)).await;
            assert_eq!(load.end(&served(&spec)).await, None);
        }
        let id = probe
            .end(&served(&probe_spec))
            .await
            .expect("the probe ends last");
        let kept = peer.store().latency(&id).unwrap().unwrap();
        assert_eq!(kept.origin, Origin::FarEnd);
        let names: Vec<Phase> = kept.result.phases.iter().map(|p| p.phase).collect();
        assert_eq!(
            names,
            [Phase::Idle, Phase::Download, Phase::Upload, Phase::Both]
        );
        let idle = &kept.result.phases[0];
        assert!((idle.end - idle.start - 2.0).abs() < 0.01, "{idle:?}");
        for p in &kept.result.phases {
            assert!(
                p.rtt.is_none() && p.probes_sent == 0,
                "no probe figures: {p:?}"
            );
        }
        let both = &kept.result.phases[3];
        assert!(both.down_bits_per_second.is_some() && both.up_bits_per_second.is_some());
        assert!(kept.result.probes.is_empty());
        assert_eq!(kept.request.streams, request.streams);
        assert_eq!(kept.request.load_seconds, request.load_seconds);
        assert_eq!(kept.request.probe_interval_ms, request.probe_interval_ms);
        let line = kept.summary();
        assert_eq!(
            (line.kind, line.role),
            (ResultKind::Latency, PeerRole::Server)
        );
        assert!(
            kept.title()
                .contains("round trips are measured by the client"),
            "{}",
            kept.title()
        );
    }
}
