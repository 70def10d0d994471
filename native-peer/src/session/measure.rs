//! One end's measurement of a test: starts the engine, ticks the sampler at each interval, and
//! at the end stops, drains, joins the workers and assembles the [`SideReport`].

use std::time::{Duration, Instant};

use perfpeer_shared::report::{
    IntervalReport, PeerRole, SideReport, SocketInfo, StreamRole, TestStatus,
};
use perfpeer_shared::spec::TestSpec;
use socket2::SockRef;

use crate::engine::cpu::CpuSnapshot;
use crate::engine::sampler::Sampler;
use crate::engine::{DataSocket, Engine, StreamSetup, WireOptions, sockopt};
use crate::hostinfo;
use crate::wifi::LinkWatch;

use super::SessionError;

/// Longest wait for workers to end after stop (receivers drain at most 10 s themselves).
const JOIN_LIMIT: Duration = Duration::from_secs(12);

/// Why a test ended before its end condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EarlyEnd {
    /// Someone cancelled it (Ctrl-C, a browser's cancel, the peer shutting down).
    Cancelled,
    /// It could not go on (the far end stopped it or went away, a final that never came, …).
    Because(String),
}

impl std::fmt::Display for EarlyEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EarlyEnd::Cancelled => f.write_str("cancelled"),
            EarlyEnd::Because(why) => f.write_str(why),
        }
    }
}

/// What a measurement is at its end.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The last, short interval, if there was one (also the last of `report.intervals`).
    pub tail: Option<IntervalReport>,
    /// This end's report.
    pub report: SideReport,
    /// The errors that ended streams early, as `stream N: message`.
    pub stream_errors: Vec<String>,
}

impl Finished {
    /// The one rule for every kind of test: one that was cancelled is cancelled; one that
    /// ended early for another reason is partial for it; one that ran to its end is partial if
    /// a stream broke on the way (reset, unreachable), naming the streams, and complete
    /// otherwise.
    pub(crate) fn status(&self, ended_early: Option<EarlyEnd>) -> TestStatus {
        match ended_early {
            Some(EarlyEnd::Cancelled) => TestStatus::Cancelled,
            Some(EarlyEnd::Because(reason)) => TestStatus::Partial { reason },
            None if !self.stream_errors.is_empty() => TestStatus::Partial {
                reason: self.stream_errors.join("; "),
            },
            None => TestStatus::Complete,
        }
    }
}

/// A running measurement at one end.
pub(crate) struct Measurement {
    role: PeerRole,
    engine: Engine,
    sampler: Sampler,
    cpu_start: CpuSnapshot,
    /// When measurement began on the runtime's clock. The schedule runs on it (interval
    /// boundaries, a test's length, a far end's limit), so tests can pause and move it; the
    /// figures use the real clock of the engine's epoch.
    started: tokio::time::Instant,
    next_tick: tokio::time::Instant,
    interval: Duration,
    intervals: Vec<IntervalReport>,
    /// Each stream's (local, peer) address, read at the start: once the far end has closed a
    /// stream its peer address can no longer be asked for.
    addresses: Vec<(String, String)>,
    /// The Wi-Fi link, where a radio of this host carries the test.
    wifi: Option<LinkWatch>,
}

impl Measurement {
    /// Starts the streams now.
    pub(crate) fn start(
        role: PeerRole,
        spec: &TestSpec,
        setups: Vec<StreamSetup>,
    ) -> Result<Self, SessionError> {
        Measurement::start_with(role, spec, setups, &WireOptions::default())
    }

    /// Starts the streams now, speaking a stock tool's wire format.
    pub(crate) fn start_with(
        role: PeerRole,
        spec: &TestSpec,
        setups: Vec<StreamSetup>,
        wire: &WireOptions,
    ) -> Result<Self, SessionError> {
        let cpu_start = CpuSnapshot::take();
        let epoch = Instant::now();
        let started = tokio::time::Instant::now();
        let engine = Engine::start_with(spec, setups, epoch, wire)
            .map_err(|e| SessionError::Internal(e.to_string()))?;
        let sampler = Sampler::new(&engine, spec.omit, spec.interval);
        let addresses: Vec<(String, String)> = engine
            .streams()
            .iter()
            .map(|s| s.socket.addresses())
            .collect();
        let wifi = addresses
            .first()
            .and_then(|(local, far)| LinkWatch::start(local, far));
        Ok(Measurement {
            addresses,
            wifi,
            role,
            engine,
            sampler,
            cpu_start,
            started,
            next_tick: started + spec.interval,
            interval: spec.interval,
            intervals: Vec::new(),
        })
    }

    /// The engine (to check whether senders or receivers are done).
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Stops the senders now (they close their direction); receivers go on until `finish`.
    pub(crate) fn stop_senders(&self) {
        self.engine.stop();
    }

    /// When measurement began (the real clock the figures are measured on).
    pub(crate) fn epoch(&self) -> Instant {
        self.engine.epoch()
    }

    /// When measurement began on the runtime's clock, which a test's schedule follows.
    pub(crate) fn started(&self) -> tokio::time::Instant {
        self.started
    }

    /// Sockets as report entries.
    pub(crate) fn sockets(&self) -> Vec<SocketInfo> {
        self.engine
            .streams()
            .iter()
            .zip(&self.addresses)
            .map(|(s, (local, remote))| {
                let (local, remote) = (local.clone(), remote.clone());
                SocketInfo {
                    id: s.id,
                    local,
                    remote,
                    dccp: match &s.socket {
                        DataSocket::Dccp(d) => Some(d.info(s.role == StreamRole::Sender)),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// The interval whose boundary has passed but was not yet reported (the end of the test
    /// and the boundary came together), if any.
    pub(crate) fn take_due_interval(&mut self) -> Option<IntervalReport> {
        let now = tokio::time::Instant::now();
        (self.next_tick <= now).then(|| self.tick_at(now))
    }

    /// Waits for the next interval boundary and reports it.
    pub(crate) async fn next_interval(&mut self) -> IntervalReport {
        tokio::time::sleep_until(self.next_tick).await;
        self.tick_at(tokio::time::Instant::now())
    }

    /// Reports the interval that ends now (`now` on the runtime's clock: a boundary that has
    /// passed) and sets the next one; its figures are read on the real clock.
    fn tick_at(&mut self, now: tokio::time::Instant) -> IntervalReport {
        self.next_tick += self.interval;
        if self.next_tick < now {
            // We were starved for more than an interval: skip ahead instead of bursting reports.
            self.next_tick = now + self.interval;
        }
        let mut report = self.sampler.tick(Instant::now());
        report.wifi = self.wifi.as_mut().and_then(LinkWatch::sample).map(Box::new);
        self.intervals.push(report.clone());
        report
    }

    /// Stops (or aborts) the streams, waits for them to drain, and reports.
    pub(crate) async fn finish(mut self, abort: bool) -> Finished {
        if abort {
            self.engine.abort();
        } else {
            self.engine.stop();
        }
        // The streams drain in real time: wait for them off the runtime, on the real clock (a
        // runtime whose clock is paused, in tests, would otherwise run through the limit).
        let all_done = self.engine.all_done_check();
        let _ = crate::util::spawn_blocking(move || {
            let deadline = Instant::now() + JOIN_LIMIT;
            while !all_done() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await;
        let end = Instant::now();
        let (mut tail, streams) = self.sampler.finish(end);
        if let Some(t) = tail.as_mut() {
            t.wifi = self.wifi.as_mut().and_then(LinkWatch::sample).map(Box::new);
        }
        let cpu = CpuSnapshot::take().usage_since(&self.cpu_start);
        let sockets = self.sockets();
        let (sndbuf_actual, rcvbuf_actual, tcp_mss, congestion_used) = socket_facts(&self.engine);
        let mut engine = self.engine;
        // Workers have ended (or will within their poll timeout once aborted): join off the runtime.
        engine.abort();
        let stream_errors = crate::util::spawn_blocking(move || {
            engine.join();
            engine.errors()
        })
        .await
        .unwrap_or_default();
        let mut intervals = self.intervals;
        intervals.extend(tail.clone());
        let report = SideReport {
            role: self.role,
            host: hostinfo::host_info(),
            sockets,
            sndbuf_actual,
            rcvbuf_actual,
            tcp_mss,
            congestion_used,
            intervals,
            streams,
            cpu,
        };
        Finished {
            tail,
            report,
            stream_errors,
        }
    }
}

fn socket_facts(engine: &Engine) -> (Option<u32>, Option<u32>, Option<u32>, Option<String>) {
    let Some(first) = engine.streams().first() else {
        return (None, None, None, None);
    };
    match &first.socket {
        DataSocket::Tcp(s) => {
            let (snd, rcv) = sockopt::buffer_sizes(SockRef::from(&**s));
            let (mss, cc) = sockopt::tcp_mss_and_congestion(SockRef::from(&**s));
            (snd, rcv, mss, cc)
        }
        DataSocket::Udp(s) => {
            let (snd, rcv) = sockopt::buffer_sizes(SockRef::from(&**s));
            (snd, rcv, None, None)
        }
        DataSocket::Dccp(s) => {
            let (snd, rcv) = sockopt::buffer_sizes(s.sock_ref());
            (snd, rcv, None, None)
        }
    }
}
