//! A latency-under-load run as it happens: [`LatencyEvent`], what the runner tells its caller, and
//! [`Live`], which folds the events into the result so far (at the runner and in a browser alike).

use serde::Serialize;

use super::{
    LatencyInputs, LatencyResult, LoadSettings, Phase, PhaseLoad, PhaseWindow, ProbeSample,
    ThroughputPoint,
};

crate::tagged_enum! {
    tag = "event", rename_all = "snake_case";
    /// What a running latency test tells its caller, live: the CLI prints from it, a browser's run
    /// logs it for the page (which folds it into a [`Live`] as the runner does).
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum LatencyEvent {
        /// The probe runs: what the run is.
        Started {
            /// The target, as given.
            target: String,
            /// When it started, Unix ms.
            started_unix_ms: u64,
            /// The settings (congestion control as asked until a phase reports it).
            settings: LoadSettings,
        },
        /// A phase started (seconds on the timeline).
        PhaseStarted {
            /// Which.
            phase: Phase,
            /// When.
            at: f64,
        },
        /// Probes settled (answered or given up), in no particular order.
        Probes {
            /// The probes.
            samples: Vec<ProbeSample>,
        },
        /// Load throughput over an interval.
        Throughput {
            /// The point.
            point: ThroughputPoint,
        },
        /// A phase ended.
        PhaseDone {
            /// Its window and load.
            window: PhaseWindow,
            /// The congestion control its load used, as the kernel reported it.
            congestion_used: Option<String>,
        },
    }
}

/// A run as its events tell it so far: what the runner keeps, and what a page following the run
/// keeps; [`Live::snapshot`] is the result so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// From `Started`.
    pub started: Option<(String, u64, LoadSettings)>,
    /// Every probe settled so far.
    pub probes: Vec<ProbeSample>,
    /// Phases done.
    pub windows: Vec<PhaseWindow>,
    /// The phase running now and when it began.
    pub running: Option<(Phase, f64)>,
    /// Throughput points so far.
    pub throughput: Vec<ThroughputPoint>,
}

impl Live {
    /// Takes in one event.
    pub fn apply(&mut self, ev: &LatencyEvent) {
        match ev {
            LatencyEvent::Started {
                target,
                started_unix_ms,
                settings,
            } => self.started = Some((target.clone(), *started_unix_ms, settings.clone())),
            LatencyEvent::PhaseStarted { phase, at } => self.running = Some((*phase, *at)),
            LatencyEvent::Probes { samples } => self.probes.extend_from_slice(samples),
            LatencyEvent::Throughput { point } => self.throughput.push(*point),
            LatencyEvent::PhaseDone {
                window,
                congestion_used,
            } => {
                self.running = None;
                self.windows.push(window.clone());
                if let (Some(cc), Some((_, _, settings))) = (congestion_used, &mut self.started) {
                    settings.congestion = Some(cc.clone());
                }
            }
        }
    }

    /// The result so far (`None` before `Started`). The running phase is shown up to its last
    /// probe, without load figures yet.
    pub fn snapshot(&self, error: Option<String>) -> Option<LatencyResult> {
        let (target, started_unix_ms, settings) = self.started.clone()?;
        let mut phases = self.windows.clone();
        if let Some((phase, at)) = self.running {
            // Up to the next probe's due time, so the last one sent is inside.
            let last = self
                .probes
                .iter()
                .map(|p| p.sent_ns as f64 / 1e9)
                .fold(at, f64::max);
            phases.push(PhaseWindow {
                phase,
                start: at,
                end: last + settings.probe_interval_ms / 1000.0,
                load: PhaseLoad::default(),
            });
        }
        let mut throughput = self.throughput.clone();
        throughput.sort_by(|a, b| a.t.total_cmp(&b.t));
        Some(LatencyResult::build(LatencyInputs {
            target,
            started_unix_ms,
            settings,
            probes: self.probes.clone(),
            phases,
            throughput,
            error,
        }))
    }
}
