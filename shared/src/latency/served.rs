//! A latency-under-load run as its far end served it, kept there as one result: the tests it
//! served ([`ServedTest`]: the probe's and each phase's loads) made into the request their specs
//! tell and a result of the load alone ([`served_run`]). The far end answers the probe without
//! seeing a round trip (the client times it), so the result has no probe figures: they are
//! absent, not zero.

use crate::report::TestResult;
use crate::spec::{Direction, Protocol, TestSpec};

use super::{
    LatencyInputs, LatencyRequest, LatencyResult, Phase, PhaseLoad, PhaseWindow, sender_rtts_ms,
};

/// One test of a latency run as the far end served it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTest {
    /// What ran.
    pub spec: TestSpec,
    /// When it began, seconds after the run's first test began (the far end's clock).
    pub start: f64,
    /// Its load's figures (each way as its receivers measured it; the RTTs of the far end's own
    /// TCP senders); nothing of the probe's.
    pub load: PhaseLoad,
    /// How long its longest flow ran, seconds.
    pub seconds: f64,
    /// The congestion control the far end's side used, as its kernel reported it.
    pub congestion: Option<String>,
}

impl ServedTest {
    /// A finished test, begun `start` seconds into the run, from the far end's result.
    pub fn of(start: f64, result: &TestResult) -> ServedTest {
        let (mut load, seconds) = PhaseLoad::of_test(result);
        load.flow_rtt_ms = result
            .local
            .intervals
            .iter()
            .flat_map(sender_rtts_ms)
            .collect();
        ServedTest {
            spec: result.spec.clone(),
            start,
            load,
            seconds,
            congestion: result.local.congestion_used.clone(),
        }
    }

    /// A test that ended without a result, `why`.
    pub fn failed(spec: &TestSpec, start: f64, why: &str) -> ServedTest {
        ServedTest {
            spec: spec.clone(),
            start,
            load: PhaseLoad {
                error: Some(why.to_string()),
                ..PhaseLoad::default()
            },
            seconds: 0.0,
            congestion: None,
        }
    }

    /// Whether it is the probe's test (request/response at a probe interval).
    pub fn is_probe(&self) -> bool {
        is_probe(&self.spec)
    }

    /// The phase whose load it is, by its direction as the runner sets it; `None` for the probe.
    pub fn phase(&self) -> Option<Phase> {
        load_phase(&self.spec)
    }
}

/// Whether `spec` is a latency run's probe (request/response at a probe interval).
pub fn is_probe(spec: &TestSpec) -> bool {
    spec.rr.is_some_and(|rr| rr.probe_interval_us.is_some())
}

/// The phase whose load `spec` is (its direction, as [`LatencyRequest::tcp_load_spec`] sets it);
/// `None` for a request/response test.
pub fn load_phase(spec: &TestSpec) -> Option<Phase> {
    if spec.rr.is_some() {
        return None;
    }
    Some(match spec.direction {
        Direction::Reverse => Phase::Download,
        Direction::Normal => Phase::Upload,
        Direction::Bidir => Phase::Both,
    })
}

/// The run a far end served for `client` (as it names it), begun at `started_unix_ms`, over
/// IPv6 if `ipv6`: the request its tests' specs tell (the idle phase: while the probe ran alone)
/// and a result with each phase's window and load and no probe figures.
pub fn served_run(
    client: &str,
    started_unix_ms: u64,
    ipv6: bool,
    tests: &[ServedTest],
) -> (LatencyRequest, LatencyResult) {
    let probe = tests.iter().find(|t| t.is_probe());
    let load = |phase: Phase, protocol: Protocol| {
        tests
            .iter()
            .find(|t| t.phase() == Some(phase) && t.spec.protocol == protocol)
    };
    let any_load = |protocol: Protocol| {
        tests
            .iter()
            .find(|t| t.phase().is_some() && t.spec.protocol == protocol)
    };
    let (tcp, udp) = (any_load(Protocol::Tcp), any_load(Protocol::Udp));
    let first_load = tests
        .iter()
        .filter(|t| t.phase().is_some())
        .map(|t| t.start)
        .reduce(f64::min);
    let idle = probe.map(|p| (p.start, first_load.unwrap_or(p.start + p.seconds)));
    let seconds = |t: &ServedTest| t.spec.total_time().map_or(0.0, |d| d.as_secs_f64());
    let rr = probe.and_then(|p| p.spec.rr);
    let request = LatencyRequest {
        idle_seconds: idle.map_or(0.0, |(start, end)| end - start),
        load_seconds: tcp.map_or(0.0, seconds),
        streams: tcp.map_or(0, |t| t.spec.streams),
        congestion: tcp.and_then(|t| t.spec.congestion.clone()),
        udp_bits_per_second: udp.and_then(|t| t.spec.bitrate).map(|b| b.0),
        load_bits_per_second: tcp.and_then(|t| t.spec.bitrate).map(|b| b.0),
        probe_interval_ms: rr
            .and_then(|rr| rr.probe_interval_us)
            .map_or(0.0, |us| f64::from(us) / 1000.0),
        probe_bytes: probe.map_or(0, |p| p.spec.len),
        probe_tos: probe.and_then(|p| p.spec.tos),
        expect: Vec::new(),
    };
    let mut settings = request.settings(ipv6);
    if let Some(used) = tcp.and_then(|t| t.congestion.clone()) {
        settings.congestion = Some(used);
    }
    let mut phases: Vec<PhaseWindow> = idle
        .map(|(start, end)| PhaseWindow {
            phase: Phase::Idle,
            start,
            end,
            load: PhaseLoad::default(),
        })
        .into_iter()
        .collect();
    for phase in [Phase::Download, Phase::Upload, Phase::Both] {
        let (tcp, udp) = (load(phase, Protocol::Tcp), load(phase, Protocol::Udp));
        let Some(timed) = tcp.or(udp) else { continue };
        let tcp_load = tcp.map_or_else(PhaseLoad::default, |t| t.load.clone());
        phases.push(PhaseWindow {
            phase,
            start: timed.start,
            end: timed.start + timed.seconds,
            load: match udp {
                Some(u) => tcp_load.with_udp(u.load.clone()),
                None => tcp_load,
            },
        });
    }
    let result = LatencyResult::build(LatencyInputs {
        target: client.to_string(),
        started_unix_ms,
        settings,
        probes: Vec::new(),
        phases,
        throughput: Vec::new(),
        error: None,
    });
    (request, result)
}
