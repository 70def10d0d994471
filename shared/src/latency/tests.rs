//! Tests of the latency model: percentiles, one-way delays above the idle minimum, loss each way,
//! the request's bounds, and live events folded into the same result.

use super::*;

const MS: u64 = 1_000_000;

/// A probe sent at `t_ms`, out `up_ms` and back `down_ms`, on a far clock `offset_ms` ahead.
fn answered(seq: u64, t_ms: u64, up_ms: u64, down_ms: u64, far_count: u64) -> ProbeSample {
    let offset = 5_000 * MS;
    ProbeSample {
        seq,
        sent_ns: t_ms * MS,
        echo: Some(ProbeEcho {
            far_received_ns: offset + (t_ms + up_ms) * MS,
            far_sent_ns: offset + (t_ms + up_ms) * MS + 10_000,
            received_ns: (t_ms + up_ms + down_ms) * MS + 10_000,
            far_count,
        }),
    }
}

fn lost(seq: u64, t_ms: u64) -> ProbeSample {
    ProbeSample {
        seq,
        sent_ns: t_ms * MS,
        echo: None,
    }
}

fn settings() -> LoadSettings {
    LoadSettings {
        idle_seconds: 1.0,
        load_seconds: 1.0,
        streams: 1,
        congestion: Some("cubic".into()),
        udp_bits_per_second: None,
        load_bits_per_second: None,
        probe_interval_ms: 10.0,
        probe_bytes: 64,
        probe_bits_per_second: probe_bits_per_second(64, 28, 10.0),
        probe_tos: None,
    }
}

fn window(phase: Phase, start: f64, end: f64) -> PhaseWindow {
    PhaseWindow {
        phase,
        start,
        end,
        load: PhaseLoad::default(),
    }
}

#[test]
fn percentiles_are_nearest_rank() {
    let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
    let p = Percentiles::of(&mut v).unwrap();
    assert_eq!(
        (p.min, p.p50, p.p90, p.p99, p.max),
        (1.0, 50.0, 90.0, 99.0, 100.0)
    );
    assert_eq!(p.count, 100);
    assert_eq!(Percentiles::of(&mut [7.0]).unwrap().p99, 7.0);
    assert!(Percentiles::of(&mut []).is_none());
}

#[test]
fn queue_on_the_way_out_shows_up_one_way_and_in_the_round_trip() {
    // Idle: 1 ms each way. Upload: the request waits 80 ms in a queue; answers come back fast.
    let mut probes = vec![];
    let mut count = 0;
    for i in 0..100u64 {
        count += 1;
        probes.push(answered(i + 1, i * 10, 1, 1, count));
    }
    for i in 100..200u64 {
        count += 1;
        probes.push(answered(i + 1, i * 10, 81, 1, count));
    }
    let r = LatencyResult::build(LatencyInputs {
        target: "pc".into(),
        started_unix_ms: 0,
        settings: settings(),
        probes,
        phases: vec![
            window(Phase::Idle, 0.0, 1.0),
            window(Phase::Upload, 1.0, 2.0),
        ],
        throughput: vec![],
        error: None,
    });
    assert_eq!(r.baseline, Baseline::IdleMinimum);
    let idle = r.phase(Phase::Idle).unwrap();
    let up = r.phase(Phase::Upload).unwrap();
    assert!((idle.rtt.unwrap().p50 - 2.0).abs() < 1e-6, "{idle:?}");
    assert!((up.rtt.unwrap().p50 - 82.0).abs() < 1e-6);
    assert!((up.added_rtt.unwrap() - 80.0).abs() < 1e-6);
    assert!((up.up_delay.unwrap().p50 - 80.0).abs() < 1e-6);
    assert!(up.down_delay.unwrap().max.abs() < 1e-6);
    assert!((up.rpm.unwrap() - 60_000.0 / 82.0).abs() < 1e-6);
    assert!(idle.added_rtt.is_none());
    assert_eq!(up.probes_sent, 100);
    assert_eq!(r.worst_loaded().unwrap().phase, Phase::Upload);
}

#[test]
fn loss_is_split_by_the_far_count() {
    // Probes 2 and 3 are lost: 2 never reached the far end (its count does not move), 3's
    // answer was lost (the count at probe 4 includes it). 6 is lost after the last answer.
    let probes = vec![
        answered(1, 0, 1, 1, 1),
        lost(2, 10),
        lost(3, 20),
        answered(4, 30, 1, 1, 3),
        answered(5, 40, 1, 1, 4),
        lost(6, 50),
    ];
    let r = LatencyResult::build(LatencyInputs {
        target: "pc".into(),
        started_unix_ms: 0,
        settings: settings(),
        probes,
        phases: vec![window(Phase::Idle, 0.0, 1.0)],
        throughput: vec![],
        error: None,
    });
    let idle = r.phase(Phase::Idle).unwrap();
    assert_eq!(
        (
            idle.probes_sent,
            idle.probes_lost,
            idle.lost_up,
            idle.lost_down
        ),
        (6, 3, 1, 1)
    );
    assert_eq!(r.probes[5].lost, Some(LostWay::Unknown));
}

#[test]
fn without_idle_answers_the_baseline_is_the_test_minimum() {
    let r = LatencyResult::build(LatencyInputs {
        target: "pc".into(),
        started_unix_ms: 0,
        settings: settings(),
        probes: vec![
            lost(1, 0),
            answered(2, 1500, 30, 2, 1),
            answered(3, 1510, 40, 2, 2),
        ],
        phases: vec![
            window(Phase::Idle, 0.0, 1.0),
            window(Phase::Download, 1.0, 2.0),
        ],
        throughput: vec![],
        error: None,
    });
    assert_eq!(r.baseline, Baseline::TestMinimum);
    let d = r.phase(Phase::Download).unwrap();
    assert_eq!(d.up_delay.unwrap().max, 10.0);
    assert!(d.added_rtt.is_none(), "no idle round trip to compare with");
}

#[test]
fn requests_are_bounded_and_their_specs_valid() {
    let r = LatencyRequest::default();
    assert_eq!(r.check(), Ok(()));
    assert!(r.probe_spec(30.0).validate().is_ok());
    for phase in [Phase::Download, Phase::Upload, Phase::Both] {
        assert!(r.tcp_load_spec(phase).unwrap().validate().is_ok());
    }
    assert!(r.tcp_load_spec(Phase::Idle).is_none());
    assert!(r.udp_load_spec(Phase::Upload).is_none());
    let bad = |f: fn(&mut LatencyRequest)| {
        let mut r = LatencyRequest::default();
        f(&mut r);
        r.check().unwrap_err()
    };
    assert_eq!(
        bad(|r| r.load_seconds = 0.5),
        LatencyRequestError::PhaseLength("load", 0.5)
    );
    assert!(matches!(
        bad(|r| r.idle_seconds = f64::NAN),
        LatencyRequestError::PhaseLength("idle", _)
    ));
    assert_eq!(bad(|r| r.streams = 0), LatencyRequestError::Streams(0));
    assert!(matches!(
        bad(|r| {
            r.probe_interval_ms = 1.0;
            r.load_seconds = 60.0;
        }),
        LatencyRequestError::TooManyProbes(_)
    ));
    assert_eq!(
        bad(|r| r.probe_bytes = 39),
        LatencyRequestError::ProbeBytes(39)
    );
    assert_eq!(
        bad(|r| r.udp_bits_per_second = Some(0)),
        LatencyRequestError::UdpRate
    );
}

#[test]
fn live_folds_events_into_the_same_result() {
    let mut live = Live::default();
    assert!(live.snapshot(None).is_none());
    let events = vec![
        LatencyEvent::Started {
            target: "pc".into(),
            started_unix_ms: 5,
            settings: settings(),
        },
        LatencyEvent::PhaseStarted {
            phase: Phase::Idle,
            at: 0.0,
        },
        LatencyEvent::Probes {
            samples: vec![answered(2, 10, 1, 1, 2), answered(1, 0, 1, 1, 1)],
        },
        LatencyEvent::PhaseDone {
            window: window(Phase::Idle, 0.0, 1.0),
            congestion_used: Some("reno".into()),
        },
        LatencyEvent::PhaseStarted {
            phase: Phase::Upload,
            at: 1.0,
        },
        LatencyEvent::Probes {
            samples: vec![answered(3, 1500, 41, 1, 3)],
        },
    ];
    for ev in &events {
        // Events travel as JSON to a browser.
        let again: LatencyEvent =
            serde_json::from_str(&serde_json::to_string(ev).unwrap()).unwrap();
        live.apply(&again);
    }
    let r = live.snapshot(None).unwrap();
    assert_eq!(r.settings.congestion.as_deref(), Some("reno"));
    assert_eq!(r.phases.len(), 2, "the running phase is shown too");
    let upload = r.phase(Phase::Upload).unwrap();
    assert_eq!((upload.start, upload.end), (1.0, 1.51));
    assert_eq!(upload.rtt.unwrap().count, 1);
    assert!((r.probes[2].up.unwrap() - 40.0).abs() < 1e-6);
}

#[test]
fn probe_rate_on_the_wire() {
    // 64 bytes + 28 of IPv4 and UDP + 38 of Ethernet framing, 100 a second: 104 kbit/s.
    assert!((probe_bits_per_second(64, 28, 10.0) - 104_000.0).abs() < 1e-6);
}

#[test]
fn a_served_run_is_its_load_told_by_its_specs_and_no_probe_figures() {
    let req = LatencyRequest {
        udp_bits_per_second: Some(10_000_000),
        ..LatencyRequest::default()
    };
    assert_eq!(
        req.tests(),
        7,
        "the probe, and a TCP and a UDP load per phase"
    );
    assert_eq!(LatencyRequest::default().tests(), 4);
    let probe_spec = req.probe_spec(30.0);
    assert!(is_probe(&probe_spec) && load_phase(&probe_spec).is_none());
    let loaded = |phase: Phase, start: f64, tcp_bps: f64, udp_error: Option<&str>| {
        let tcp = req.tcp_load_spec(phase).unwrap();
        let udp = req.udp_load_spec(phase).unwrap();
        assert_eq!(
            (load_phase(&tcp), load_phase(&udp)),
            (Some(phase), Some(phase))
        );
        let load = |bps: f64, error: Option<&str>| PhaseLoad {
            down_bits_per_second: (phase != Phase::Upload).then_some(bps),
            up_bits_per_second: (phase != Phase::Download).then_some(bps),
            flow_rtt_ms: Vec::new(),
            error: error.map(str::to_string),
        };
        [
            ServedTest {
                spec: tcp,
                start,
                load: load(tcp_bps, None),
                seconds: 5.0,
                congestion: Some("bbr".into()),
            },
            ServedTest {
                spec: udp,
                start: start + 0.01,
                load: load(1e7, udp_error),
                seconds: 5.0,
                congestion: None,
            },
        ]
    };
    let mut tests = vec![ServedTest::failed(&probe_spec, 0.0, "answered only")];
    tests.extend(loaded(Phase::Download, 2.5, 9e7, None));
    tests.extend(loaded(Phase::Upload, 8.0, 4e7, Some("refused")));
    let (request, r) = served_run("laptop (10.0.0.2)", 7, false, &tests);
    assert_eq!(
        (
            request.idle_seconds,
            request.load_seconds,
            request.streams,
            request.udp_bits_per_second,
            request.probe_bytes,
            request.probe_interval_ms
        ),
        (2.5, 5.0, 4, Some(10_000_000), 64, 10.0)
    );
    assert_eq!(
        r.settings.congestion.as_deref(),
        Some("bbr"),
        "as its kernel used"
    );
    assert_eq!(r.target, "laptop (10.0.0.2)");
    let phases: Vec<Phase> = r.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, [Phase::Idle, Phase::Download, Phase::Upload]);
    let down = r.phase(Phase::Download).unwrap();
    assert_eq!((down.start, down.end), (2.5, 7.5));
    assert_eq!(down.down_bits_per_second, Some(1e8), "TCP and UDP added");
    assert_eq!(down.up_bits_per_second, None);
    let up = r.phase(Phase::Upload).unwrap();
    assert_eq!(up.error.as_deref(), Some("UDP load: refused"));
    assert!(r.probes.is_empty() && r.phases.iter().all(|p| p.rtt.is_none()));
    assert_eq!(r.worst_loaded(), None, "no round trip, no headline");
}
