//! What `/metrics` tells Prometheus about this peer: counters kept as atomics as things happen
//! (tests started and finished, bytes and datagrams moved, refusals, connections), the last
//! finished test per far peer ([`super::last_tests`], bounded), and at each scrape the
//! process's CPU time, memory and open files read from /proc with std. Every label value is
//! one of a fixed set, or a far peer's address within the series cap: nothing a client sends
//! becomes a label. The page is written by `perfpeer_proto::prometheus`; help lines are short
//! (the DUT's budget), the README says what each metric and label is.

use std::sync::{Arc, Mutex};

use perfpeer_proto::prometheus::{Exposition, MetricType};
use perfpeer_shared::report::{StreamRole, TestResult, TestStatus};
use perfpeer_shared::spec::Protocol;
use portable_atomic::{AtomicU64, Ordering::Relaxed};

use super::last_tests::{LastFigures, LastTests, SeriesKey};
use crate::util::lock;

/// How this peer took part in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestKind {
    /// As the far end of another peer's test (`open` on `/ws`).
    Served,
    /// As the client of a browser's `run`.
    Run,
}
const KINDS: [&str; 2] = ["served", "run"];

/// How a test ended: its result's status, or `failed` when it ended without a result.
const OUTCOMES: [&str; 4] = ["complete", "partial", "cancelled", "failed"];
const FAILED: usize = 3;

/// Why the peer said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A test beyond the caps (`--max-duration`, `--max-bitrate`, `--max-memory`).
    Caps,
    /// A request without the token, with a wrong one, or from a source held back for guessing.
    Token,
    /// Every test slot taken, or the client's address holding its share of them.
    Busy,
    /// A connection beyond the per-source or total caps of a listener.
    Admission,
}
const REFUSALS: [&str; 4] = ["caps", "token", "busy", "admission"];

/// The data port's transports; also the protocols of the bytes moved.
const TRANSPORTS: [&str; 3] = ["tcp", "udp", "dccp"];

fn transport_index(protocol: Protocol) -> usize {
    match protocol {
        Protocol::Tcp => 0,
        Protocol::Udp => 1,
        Protocol::Dccp => 2,
    }
}

/// The peer's counters and last tests.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    started: [AtomicU64; 2],
    finished: [[AtomicU64; 4]; 2],
    refusals: [AtomicU64; 4],
    moved_bytes: [AtomicU64; 3],
    moved_datagrams: [AtomicU64; 3],
    http_connections: AtomicU64,
    websockets: AtomicU64,
    websockets_open: AtomicU64,
    data_connections: [AtomicU64; 3],
    last: Mutex<LastTests>,
}

/// What the server state adds to the page at a scrape.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Readings {
    /// Tests running now (either kind).
    pub running_tests: usize,
    /// The result store's failed writes so far.
    pub store_errors: u64,
    /// Results kept here that wait for the lab's shared store (`--store`).
    pub queued_results: u64,
    /// When the peer started, Unix seconds.
    pub started_unix_s: f64,
}

impl Metrics {
    /// Counts a test of `kind` as started; the guard counts its end (as failed unless
    /// [`TestCount::finished`] is given its result).
    pub(crate) fn test_started(self: &Arc<Self>, kind: TestKind) -> TestCount {
        self.started[kind as usize].fetch_add(1, Relaxed);
        TestCount {
            metrics: self.clone(),
            kind,
            counted: false,
        }
    }

    /// Counts a refusal.
    pub(crate) fn refused(&self, reason: Refusal) {
        self.refusals[reason as usize].fetch_add(1, Relaxed);
    }

    /// Counts an HTTP connection the control port took.
    pub(crate) fn http_connection(&self) {
        self.http_connections.fetch_add(1, Relaxed);
    }

    /// Counts a data connection (a TCP or DCCP stream accepted, a UDP stream bound).
    pub(crate) fn data_connection(&self, protocol: Protocol) {
        self.data_connections[transport_index(protocol)].fetch_add(1, Relaxed);
    }

    /// Counts an upgraded `/ws` as open until the guard drops.
    pub(crate) fn websocket_opened(self: &Arc<Self>) -> OpenWebSocket {
        self.websockets.fetch_add(1, Relaxed);
        self.websockets_open.fetch_add(1, Relaxed);
        OpenWebSocket(self.clone())
    }

    /// The page: every family, its samples within the caps.
    pub(crate) fn render(&self, readings: Readings) -> String {
        let mut page = Exposition::with_capacity(8 * 1024);
        self.render_tests(&mut page, readings);
        self.render_connections(&mut page);
        render_process(&mut page, readings.started_unix_s);
        self.render_last(&mut page);
        page.into_text()
    }

    fn render_tests(&self, page: &mut Exposition, readings: Readings) {
        use MetricType::{Counter, Gauge};
        let name = "perfpeer_tests_started_total";
        page.family(name, Counter, "Tests begun.");
        for (kind, count) in KINDS.iter().zip(&self.started) {
            page.count(name, &[("kind", kind)], count.load(Relaxed));
        }
        let name = "perfpeer_tests_finished_total";
        page.family(name, Counter, "Tests ended.");
        for (kind, counts) in KINDS.iter().zip(&self.finished) {
            for (outcome, count) in OUTCOMES.iter().zip(counts) {
                let labels = [("kind", *kind), ("outcome", *outcome)];
                page.count(name, &labels, count.load(Relaxed));
            }
        }
        let name = "perfpeer_tests_running";
        page.family(name, Gauge, "Tests running.");
        page.count(name, &[], readings.running_tests as u64);
        for (name, help, counts) in [
            (
                "perfpeer_data_bytes_total",
                "Bytes finished tests moved here.",
                &self.moved_bytes,
            ),
            (
                "perfpeer_datagrams_total",
                "Datagrams finished tests moved here.",
                &self.moved_datagrams,
            ),
        ] {
            page.family(name, Counter, help);
            for (protocol, count) in TRANSPORTS.iter().zip(counts) {
                page.count(name, &[("protocol", protocol)], count.load(Relaxed));
            }
        }
        let name = "perfpeer_refusals_total";
        page.family(name, Counter, "Refusals.");
        for (reason, count) in REFUSALS.iter().zip(&self.refusals) {
            page.count(name, &[("reason", reason)], count.load(Relaxed));
        }
        let name = "perfpeer_store_errors_total";
        page.family(name, Counter, "Failed result writes.");
        page.count(name, &[], readings.store_errors);
        let name = "perfpeer_store_queued_results";
        page.family(name, Gauge, "Results queued for a database.");
        page.count(name, &[], readings.queued_results);
    }

    fn render_connections(&self, page: &mut Exposition) {
        use MetricType::{Counter, Gauge};
        let name = "perfpeer_control_connections_total";
        page.family(name, Counter, "HTTP connections.");
        page.count(name, &[], self.http_connections.load(Relaxed));
        let name = "perfpeer_websockets_total";
        page.family(name, Counter, "WebSockets opened.");
        page.count(name, &[], self.websockets.load(Relaxed));
        let name = "perfpeer_websockets_open";
        page.family(name, Gauge, "WebSockets open.");
        page.count(name, &[], self.websockets_open.load(Relaxed));
        let name = "perfpeer_data_connections_total";
        page.family(name, Counter, "Data streams taken.");
        for (transport, count) in TRANSPORTS.iter().zip(&self.data_connections) {
            page.count(name, &[("transport", transport)], count.load(Relaxed));
        }
    }

    fn render_last(&self, page: &mut Exposition) {
        let last = lock(&self.last);
        type Pick = fn(&LastFigures) -> Option<f64>;
        let gauges: [(&str, &str, Pick); 5] = [
            (
                "perfpeer_last_test_throughput_bytes_per_second",
                "Last test's received rate.",
                |f| f.bits_per_second.map(|b| b / 8.0),
            ),
            ("perfpeer_last_test_loss_ratio", "Last test's loss.", |f| {
                f.loss_ratio
            }),
            (
                "perfpeer_last_test_jitter_seconds",
                "Last test's jitter.",
                |f| f.jitter_seconds,
            ),
            (
                "perfpeer_last_test_loaded_rtt_seconds",
                "Last test's RTT under load.",
                |f| f.loaded_rtt_seconds,
            ),
            (
                "perfpeer_last_test_finished_seconds",
                "Last test's end.",
                |f| Some(f.finished_unix_s),
            ),
        ];
        for (name, help, pick) in gauges {
            page.family(name, MetricType::Gauge, help);
            for (key, figures) in last.iter() {
                if let Some(value) = pick(figures) {
                    page.real(name, &series_labels(key), value);
                }
            }
        }
        let name = "perfpeer_last_test_verdict";
        page.family(name, MetricType::Gauge, "Last test's verdict.");
        for (key, figures) in last.iter() {
            if let Some(verdict) = figures.verdict {
                let [a, b, c] = series_labels(key);
                page.count(name, &[a, b, c, ("verdict", verdict)], 1);
            }
        }
    }
}

fn series_labels(key: &SeriesKey) -> [(&'static str, &str); 3] {
    [
        ("far_peer", key.far_peer.as_str()),
        ("protocol", key.protocol),
        ("direction", key.direction),
    ]
}

/// The process's figures, under the names every Prometheus client uses; a figure this system
/// does not give is left out.
fn render_process(page: &mut Exposition, started_unix_s: f64) {
    use MetricType::{Counter, Gauge};
    if let Some((user, system)) = crate::sys::process_cpu_times() {
        let name = "process_cpu_seconds_total";
        page.family(name, Counter, "CPU time.");
        page.real(name, &[], (user + system).as_secs_f64());
    }
    if let Some(bytes) = resident_bytes() {
        let name = "process_resident_memory_bytes";
        page.family(name, Gauge, "Resident memory.");
        page.count(name, &[], bytes);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let name = "process_open_fds";
        page.family(name, Gauge, "Open files.");
        page.count(name, &[], fds.count() as u64);
    }
    let name = "process_start_time_seconds";
    page.family(name, Gauge, "Start time.");
    page.real(name, &[], started_unix_s);
}

/// Resident memory from /proc/self/status (`VmRSS:` in kB).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_rss(&status)
}

fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A test counted as started; its end is counted once, as failed if it is dropped without its
/// result.
#[derive(Debug)]
pub(crate) struct TestCount {
    metrics: Arc<Metrics>,
    kind: TestKind,
    counted: bool,
}

impl TestCount {
    /// Counts the test's end with its `result`: its outcome, this end's bytes and datagrams, and
    /// its figures as the last test with `far_peer` (an address, no port).
    pub(crate) fn finished(mut self, result: &TestResult, far_peer: &str) {
        self.counted = true;
        let m = &self.metrics;
        let outcome = match result.status {
            TestStatus::Complete => 0,
            TestStatus::Partial { .. } => 1,
            TestStatus::Cancelled => 2,
        };
        m.finished[self.kind as usize][outcome].fetch_add(1, Relaxed);
        let protocol = transport_index(result.spec.protocol);
        m.moved_bytes[protocol].fetch_add(result.bytes_moved_by(result.local.role), Relaxed);
        let datagrams: u64 = result
            .local
            .streams
            .iter()
            .map(|s| match s.role {
                StreamRole::Sender => s.packets.unwrap_or(0),
                StreamRole::Receiver => s.udp_rx.as_ref().map_or(0, |r| r.received),
            })
            .sum();
        m.moved_datagrams[protocol].fetch_add(datagrams, Relaxed);
        let now = crate::util::unix_ms_now() as f64 / 1e3;
        lock(&m.last).record(
            SeriesKey::new(far_peer, &result.spec),
            LastFigures::of(result, now),
        );
    }
}

impl Drop for TestCount {
    fn drop(&mut self) {
        if !self.counted {
            self.metrics.finished[self.kind as usize][FAILED].fetch_add(1, Relaxed);
        }
    }
}

/// An open `/ws`, counted until dropped.
#[derive(Debug)]
pub(crate) struct OpenWebSocket(Arc<Metrics>);

impl Drop for OpenWebSocket {
    fn drop(&mut self) {
        self.0.websockets_open.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_dropped_without_its_result_is_failed() {
        let metrics = Arc::new(Metrics::default());
        drop(metrics.test_started(TestKind::Served));
        let page = metrics.render(Readings::default());
        assert!(page.contains("perfpeer_tests_started_total{kind=\"served\"} 1\n"));
        assert!(
            page.contains("perfpeer_tests_finished_total{kind=\"served\",outcome=\"failed\"} 1\n")
        );
        assert!(
            page.contains("perfpeer_tests_finished_total{kind=\"run\",outcome=\"complete\"} 0\n")
        );
    }

    #[test]
    fn refusals_and_connections_are_counted_by_their_fixed_words() {
        let metrics = Arc::new(Metrics::default());
        metrics.refused(Refusal::Token);
        metrics.refused(Refusal::Token);
        metrics.refused(Refusal::Admission);
        metrics.data_connection(Protocol::Udp);
        let open = metrics.websocket_opened();
        let page = metrics.render(Readings {
            running_tests: 2,
            store_errors: 5,
            queued_results: 3,
            started_unix_s: 1.5,
        });
        for line in [
            "perfpeer_refusals_total{reason=\"token\"} 2\n",
            "perfpeer_refusals_total{reason=\"admission\"} 1\n",
            "perfpeer_refusals_total{reason=\"busy\"} 0\n",
            "perfpeer_data_connections_total{transport=\"udp\"} 1\n",
            "perfpeer_websockets_open 1\n",
            "perfpeer_tests_running 2\n",
            "perfpeer_store_errors_total 5\n",
            "perfpeer_store_queued_results 3\n",
            "process_start_time_seconds 1.5\n",
        ] {
            assert!(page.contains(line), "{line} not in\n{page}");
        }
        drop(open);
        let page = metrics.render(Readings::default());
        assert!(page.contains("perfpeer_websockets_open 0\n"));
    }

    #[test]
    fn the_page_stays_bounded_with_the_series_cap_full() {
        let metrics = Metrics::default();
        let spec = perfpeer_shared::spec::TestSpec::new(Protocol::Tcp);
        for n in 0..1000u32 {
            let figures = LastFigures {
                bits_per_second: Some(1e9),
                loss_ratio: Some(0.0),
                jitter_seconds: Some(0.001),
                loaded_rtt_seconds: Some(0.002),
                verdict: Some("pass"),
                finished_unix_s: f64::from(n),
            };
            let peer = std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string();
            lock(&metrics.last).record(SeriesKey::new(&peer, &spec), figures);
        }
        let page = metrics.render(Readings::default());
        let series = |name: &str| {
            page.lines()
                .filter(|l| l.starts_with(name) && l.contains("far_peer="))
                .count()
        };
        assert_eq!(
            series("perfpeer_last_test_throughput_bytes_per_second{"),
            32
        );
        assert_eq!(series("perfpeer_last_test_verdict{"), 32);
        assert!(page.len() < 32 * 1024, "{} bytes", page.len());
    }

    #[test]
    fn resident_memory_is_read_in_bytes() {
        assert_eq!(vm_rss("Name:\tx\nVmRSS:\t  1234 kB\n"), Some(1234 * 1024));
        assert_eq!(vm_rss("Name:\tx\n"), None);
    }
}
