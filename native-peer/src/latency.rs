//! Runs a latency-under-load test against a perfpeer peer: the probe (a UDP request/response
//! test with time-stamped answers, `engine::probe`) starts first and runs through every phase;
//! the phases follow one another — idle, then a TCP load test for download, upload and both
//! (and a UDP load beside it if asked) — each an ordinary test against the same peer. The probe's
//! samples and the load tests' figures are put on one timeline (0 = the probe's start) and
//! handed to `shared::latency::LatencyResult::build`, which derives every figure.

use std::time::{Duration, Instant};

use perfpeer_shared::control::{GroupKind, TestGroup};
use perfpeer_shared::latency::{
    LatencyEvent, LatencyRequest, LatencyResult, Live, Phase, PhaseLoad, PhaseWindow, ProbeSample,
    ThroughputPoint, sender_rtts_ms,
};
use perfpeer_shared::report::{PeerRole, StreamRole, TestResult};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::events::TestEvent;

/// Pause between phases, so one load's queue drains before the next starts.
const SETTLE: Duration = Duration::from_millis(500);
/// Time the probe test is given beyond the phases for their setups and pauses; the runner ends it
/// as soon as the phases are done.
const PROBE_SLACK: Duration = Duration::from_secs(30);

/// The run's events go to the caller and into the run's own [`Live`], whose snapshot is the
/// result.
struct Emitter {
    live: Live,
    out: mpsc::UnboundedSender<LatencyEvent>,
}

impl Emitter {
    fn emit(&mut self, ev: LatencyEvent) {
        self.live.apply(&ev);
        let _ = self.out.send(ev);
    }
}

/// The probe's test, running.
struct ProbeRun {
    events: mpsc::UnboundedReceiver<TestEvent>,
    /// The probe test's task, its output type erased ([`probe_outcome`] reads it): tokio's
    /// task code is then not compiled once more for this output type (a router's binary).
    task: tokio::task::JoinHandle<Box<dyn std::any::Any + Send>>,
    cancel: CancellationToken,
    started: Instant,
    ipv6: bool,
}

/// Takes in one event of the probe test: its settled probes are passed on.
fn take_probes(ev: TestEvent, out: &mut Emitter) {
    if let TestEvent::Interval {
        role: PeerRole::Client,
        report,
    } = ev
    {
        let samples: Vec<ProbeSample> = report.streams.into_iter().flat_map(|s| s.probes).collect();
        if !samples.is_empty() {
            out.emit(LatencyEvent::Probes { samples });
        }
    }
}

/// The largest round trip seen, for the wait at the end.
fn max_rtt(live: &Live) -> Duration {
    let ns = live
        .probes
        .iter()
        .filter_map(|p| p.echo.map(|e| e.rtt_ns(p.sent_ns)))
        .max()
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// Runs the test; an error only if it could not start (the probe refused or unreachable).
/// Later failures (a phase's load refused, a cancel) are in the result.
pub(crate) async fn run(
    target: &str,
    req: &LatencyRequest,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<LatencyEvent>,
    cancel: CancellationToken,
) -> Result<LatencyResult, SessionError> {
    let refuse = |message: String| SessionError::Refused {
        code: perfpeer_shared::control::ErrorCode::InvalidSpec,
        message,
    };
    req.check().map_err(|e| refuse(e.to_string()))?;
    let (kind, _, _) =
        crate::targets::parse(target).map_err(|reason| SessionError::Unreachable {
            target: target.to_string(),
            reason,
        })?;
    if kind != crate::targets::Kind::Perfpeer {
        return Err(refuse(
            "latency under load needs a perfpeer peer at the far end (stock tools do not answer the probe)"
                .into(),
        ));
    }
    // Every test of the run names it, so a perfpeer far end keeps the run as one result.
    let opts = &ClientOptions {
        group: Some(TestGroup {
            id: crate::util::random_id(),
            kind: GroupKind::Latency,
            tests: req.tests(),
        }),
        ..opts.clone()
    };
    let started_unix_ms = crate::util::unix_ms_now();
    let probe_secs = req.total_seconds() + PROBE_SLACK.as_secs_f64();
    let probe_spec =
        ValidSpec::new(req.probe_spec(probe_secs)).map_err(|e| refuse(e.to_string()))?;
    let mut probe = start_probe(target, probe_spec, opts).await?;
    let mut out = Emitter {
        live: Live::default(),
        out: events,
    };
    out.emit(LatencyEvent::Started {
        target: target.to_string(),
        started_unix_ms,
        settings: req.settings(probe.ipv6),
    });
    let mut error = None;
    for phase in Phase::ALL {
        if cancel.is_cancelled() {
            error = Some("cancelled".to_string());
            break;
        }
        let at = probe.started.elapsed().as_secs_f64();
        out.emit(LatencyEvent::PhaseStarted { phase, at });
        let (tx, mut loads) = mpsc::unbounded_channel();
        let phase_run = run_phase(target, req, phase, opts, &cancel, probe.started, tx);
        tokio::pin!(phase_run);
        let (window, congestion_used) = loop {
            tokio::select! {
                done = &mut phase_run => break done,
                Some(ev) = probe.events.recv() => take_probes(ev, &mut out),
                Some(point) = loads.recv() => out.emit(LatencyEvent::Throughput { point }),
            }
        };
        while let Ok(point) = loads.try_recv() {
            out.emit(LatencyEvent::Throughput { point });
        }
        out.emit(LatencyEvent::PhaseDone {
            window,
            congestion_used,
        });
        if probe.task.is_finished() {
            error = Some("the probe ended before the phases did".into());
            break;
        }
    }
    // Answers still on their way back: wait for the slowest seen, then end the probe.
    let wait =
        (max_rtt(&out.live) + Duration::from_millis(100)).min(crate::engine::probe::LOSS_TIMEOUT);
    let until = tokio::time::sleep(wait);
    tokio::pin!(until);
    loop {
        tokio::select! {
            () = &mut until => break,
            Some(ev) = probe.events.recv() => take_probes(ev, &mut out),
        }
    }
    probe.cancel.cancel();
    let ended = probe_outcome((&mut probe.task).await);
    while let Ok(ev) = probe.events.try_recv() {
        take_probes(ev, &mut out);
    }
    if let Ok(Err(e)) = ended
        && error.is_none()
    {
        error = Some(format!("probe: {e}"));
    }
    out.live
        .snapshot(error)
        .ok_or_else(|| SessionError::Internal("the run has no start".into()))
}

/// Starts the probe's test and waits until its streams run.
async fn start_probe(
    target: &str,
    spec: ValidSpec,
    opts: &ClientOptions,
) -> Result<ProbeRun, SessionError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let mut task = {
        let (target, opts, cancel) = (target.to_string(), opts.clone(), cancel.clone());
        crate::util::spawn(async move {
            let ran = crate::targets::run(&target, &spec, &opts, tx, cancel).await;
            Box::new(ran) as Box<dyn std::any::Any + Send>
        })
    };
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(TestEvent::Started { sockets, .. }) => {
                    let ipv6 = sockets.first().is_some_and(|s| {
                        s.remote.parse::<std::net::SocketAddr>().is_ok_and(|a| a.is_ipv6())
                    });
                    return Ok(ProbeRun {
                        events: rx,
                        task,
                        cancel,
                        started: Instant::now(),
                        ipv6,
                    });
                }
                Some(_) => {}
                None => break,
            },
            ended = &mut task => {
                return Err(match probe_outcome(ended) {
                    Ok(Err(e)) => e,
                    Ok(Ok(_)) => SessionError::Internal("the probe ended before it started".into()),
                    Err(e) => SessionError::Internal(e.to_string()),
                });
            }
        }
    }
    match probe_outcome(task.await) {
        Ok(Err(e)) => Err(e),
        Ok(Ok(_)) => Err(SessionError::Internal(
            "the probe ended before it started".into(),
        )),
        Err(e) => Err(SessionError::Internal(e.to_string())),
    }
}

/// The probe test's outcome from its type-erased task.
fn probe_outcome(
    ended: Result<Box<dyn std::any::Any + Send>, tokio::task::JoinError>,
) -> Result<Result<TestResult, SessionError>, tokio::task::JoinError> {
    ended.map(|output| {
        *output
            .downcast::<Result<TestResult, SessionError>>()
            .expect("the probe task's output is a test's outcome")
    })
}

/// One phase: idle waits; a loaded phase runs its TCP load (and UDP load) test to its end.
/// Returns its window on the timeline, its throughput points and the congestion control used.
async fn run_phase(
    target: &str,
    req: &LatencyRequest,
    phase: Phase,
    opts: &ClientOptions,
    cancel: &CancellationToken,
    origin: Instant,
    points: mpsc::UnboundedSender<ThroughputPoint>,
) -> (PhaseWindow, Option<String>) {
    let since = |at: Instant| at.saturating_duration_since(origin).as_secs_f64();
    let Some(tcp) = req.tcp_load_spec(phase) else {
        let start = since(Instant::now());
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs_f64(req.idle_seconds)) => {}
            () = cancel.cancelled() => {}
        }
        let window = PhaseWindow {
            phase,
            start,
            end: since(Instant::now()),
            load: PhaseLoad::default(),
        };
        return (window, None);
    };
    tokio::time::sleep(SETTLE).await;
    let udp = req.udp_load_spec(phase);
    // The timeline's throughput is the TCP load's; a UDP load beside it adds to the phase's
    // totals.
    let (tcp_out, udp_out) = tokio::join!(
        one_load(target, tcp, opts, cancel, origin, Some(&points)),
        async {
            match udp {
                Some(spec) => Some(one_load(target, spec, opts, cancel, origin, None).await),
                None => None,
            }
        }
    );
    let load = match udp_out {
        Some(u) => tcp_out.load.with_udp(u.load),
        None => tcp_out.load,
    };
    let window = PhaseWindow {
        phase,
        start: tcp_out.start.unwrap_or_else(|| since(Instant::now())),
        end: tcp_out.end.unwrap_or_else(|| since(Instant::now())),
        load,
    };
    (window, tcp_out.congestion)
}

/// What one load test gave.
struct LoadOutcome {
    start: Option<f64>,
    end: Option<f64>,
    load: PhaseLoad,
    congestion: Option<String>,
}

/// Runs one load test, its intervals turned into throughput points and flow RTTs on the
/// timeline as they come.
async fn one_load(
    target: &str,
    spec: TestSpec,
    opts: &ClientOptions,
    cancel: &CancellationToken,
    origin: Instant,
    points: Option<&mpsc::UnboundedSender<ThroughputPoint>>,
) -> LoadOutcome {
    let mut out = LoadOutcome {
        start: None,
        end: None,
        load: PhaseLoad::default(),
        congestion: None,
    };
    let spec = match ValidSpec::new(spec) {
        Ok(s) => s,
        Err(e) => {
            out.load.error = Some(e.to_string());
            return out;
        }
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let test = crate::targets::run(target, &spec, opts, tx, cancel.child_token());
    tokio::pin!(test);
    let take = |ev: TestEvent, out: &mut LoadOutcome| match ev {
        TestEvent::Started { .. } => {
            out.start = Some(
                Instant::now()
                    .saturating_duration_since(origin)
                    .as_secs_f64(),
            );
        }
        TestEvent::Interval { role, report } => {
            let Some(start) = out.start else { return };
            out.load.flow_rtt_ms.extend(sender_rtts_ms(&report));
            if let Some(sum) = report.sum(StreamRole::Receiver) {
                let bps = Some(sum.bits_per_second);
                let point = ThroughputPoint {
                    t: start + report.end.as_secs_f64(),
                    seconds: report.seconds(),
                    down: bps.filter(|_| role == PeerRole::Client),
                    up: bps.filter(|_| role == PeerRole::Server),
                };
                if let Some(points) = points {
                    let _ = points.send(point);
                }
            }
        }
        TestEvent::Stored { .. } | TestEvent::FarEndOutput { .. } => {}
    };
    let result = loop {
        tokio::select! {
            r = &mut test => break r,
            Some(ev) = rx.recv() => take(ev, &mut out),
        }
    };
    while let Ok(ev) = rx.try_recv() {
        take(ev, &mut out);
    }
    match result {
        Err(e) => out.load.error = Some(e.to_string()),
        Ok(r) => {
            out.congestion = r.local.congestion_used.clone();
            let (load, longest) = PhaseLoad::of_test(&r);
            out.load = PhaseLoad {
                flow_rtt_ms: std::mem::take(&mut out.load.flow_rtt_ms),
                ..load
            };
            out.end = out.start.map(|s| s + longest);
        }
    }
    out
}
