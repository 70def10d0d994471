//! A bounce-back test's working load (iperf 2's `--bounceback-congest[=up|down|bidir][,N]`):
//! TCP streams to the same peer for the same time, beside the bursts of round trips, so the
//! round trips are timed on a loaded link. [`WorkingLoad`] is what was asked (in the spec's
//! bounce-back bursts), [`LoadSpec`] the load test it becomes, and [`WorkingLoadResult`] what
//! the load achieved, kept with the bounce-back result.

use serde::{Deserialize, Serialize};

use crate::report::TestResult;
use crate::spec::{Direction, Protocol, TestSpec};
use crate::units::format_rate;

/// Most TCP streams of a working load.
pub const MAX_LOAD_STREAMS: u16 = 8;

/// The load beside a bounce-back test; in JSON as iperf 2 writes it, `"bidir,1"` (read with
/// [`WorkingLoad::parse`]: a string's reader is in every build already, a struct's would be
/// code of its own on a router).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkingLoad {
    /// Which way the load's streams send: `Normal` up (client to peer), `Reverse` down,
    /// `Bidir` both ways (iperf 2's default).
    pub direction: Direction,
    /// TCP streams each way.
    pub streams: u16,
}

impl WorkingLoad {
    /// Reads iperf 2's `--bounceback-congest` value: `[up|down|bidir][,N]` (empty: both ways,
    /// one stream).
    pub fn parse(text: &str) -> Result<WorkingLoad, String> {
        let (way, count) = match text.split_once(',') {
            Some((w, n)) => (w.trim(), Some(n.trim())),
            None => (text.trim(), None),
        };
        let direction = match way {
            "" | "bidir" => Direction::Bidir,
            "up" => Direction::Normal,
            "down" => Direction::Reverse,
            other => {
                return Err(format!(
                    "'{other}': the working load goes up, down or bidir (both ways)"
                ));
            }
        };
        let streams = match count {
            None => 1,
            Some(n) => n
                .parse::<u16>()
                .ok()
                .filter(|n| (1..=MAX_LOAD_STREAMS).contains(n))
                .ok_or_else(|| format!("'{n}': 1 to {MAX_LOAD_STREAMS} working-load streams"))?,
        };
        Ok(WorkingLoad { direction, streams })
    }

    /// Whether the load is one a peer takes: 1 to [`MAX_LOAD_STREAMS`] streams.
    pub fn is_valid(&self) -> bool {
        (1..=MAX_LOAD_STREAMS).contains(&self.streams)
    }

    /// The load test beside the bounce-back test `beside`: TCP, as many streams each way, for
    /// its time (a bounce-back test with a load runs for a time: [`TestSpec::validate`]), at
    /// best effort (no TOS, as iperf 2's working load).
    pub fn spec_beside(&self, beside: &TestSpec) -> TestSpec {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.direction = self.direction;
        spec.streams = self.streams;
        spec.end = beside.end;
        spec.window = beside.window;
        spec.congestion.clone_from(&beside.congestion);
        spec
    }

    /// `TCP both ways, 1 stream each way`.
    pub fn words(&self) -> String {
        let way = match self.direction {
            Direction::Normal => "up",
            Direction::Reverse => "down",
            Direction::Bidir => "both ways",
        };
        let each = if self.direction == Direction::Bidir {
            " each way"
        } else {
            ""
        };
        let plural = if self.streams == 1 { "" } else { "s" };
        format!("TCP {way}, {} stream{plural}{each}", self.streams)
    }
}

impl TryFrom<String> for WorkingLoad {
    type Error = String;
    fn try_from(text: String) -> Result<WorkingLoad, String> {
        WorkingLoad::parse(&text)
    }
}

impl From<WorkingLoad> for String {
    fn from(load: WorkingLoad) -> String {
        let way = match load.direction {
            Direction::Normal => "up",
            Direction::Reverse => "down",
            Direction::Bidir => "bidir",
        };
        format!("{way},{}", load.streams)
    }
}

/// What a bounce-back test's working load achieved (or why it did not run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkingLoadResult {
    /// What was asked.
    pub load: WorkingLoad,
    /// The load test's own result id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
    /// Its rate client to peer, bit/s (as received).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_bits_per_second: Option<f64>,
    /// Its rate peer to client, bit/s (as received).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_bits_per_second: Option<f64>,
    /// Why the load did not run, or ended early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl WorkingLoadResult {
    /// The figures of the load test's `outcome`: each direction's rate as its receiver
    /// counted it (its sender's where no receiver reported).
    pub fn of(load: WorkingLoad, outcome: Result<&TestResult, String>) -> WorkingLoadResult {
        let mut r = WorkingLoadResult {
            load,
            result_id: None,
            up_bits_per_second: None,
            down_bits_per_second: None,
            error: None,
        };
        match outcome {
            Ok(result) => {
                r.result_id = Some(result.id.clone());
                for flow in result.flows() {
                    let rate = flow
                        .received
                        .as_ref()
                        .or(flow.sent.as_ref())
                        .map(|t| t.bits_per_second);
                    if flow.client_to_server {
                        r.up_bits_per_second = rate;
                    } else {
                        r.down_bits_per_second = rate;
                    }
                }
                r.error = result.status.ended_early().map(str::to_string);
            }
            Err(why) => r.error = Some(why),
        }
        r
    }

    /// `TCP both ways, 1 stream each way: 9.41 Gbit/s up, 9.30 Gbit/s down`, or why not.
    pub fn words(&self) -> String {
        let mut rates = Vec::new();
        if let Some(up) = self.up_bits_per_second {
            rates.push(format!("{} up", format_rate(up)));
        }
        if let Some(down) = self.down_bits_per_second {
            rates.push(format!("{} down", format_rate(down)));
        }
        let mut words = self.load.words();
        if !rates.is_empty() {
            words.push_str(": ");
            words.push_str(&rates.join(", "));
        }
        if let Some(why) = &self.error {
            words.push_str(&format!(" ({why})"));
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::EndCondition;

    #[test]
    fn iperf2_congest_values() {
        let load = |d, n| WorkingLoad {
            direction: d,
            streams: n,
        };
        assert_eq!(WorkingLoad::parse(""), Ok(load(Direction::Bidir, 1)));
        assert_eq!(WorkingLoad::parse("up"), Ok(load(Direction::Normal, 1)));
        assert_eq!(
            WorkingLoad::parse("down,4"),
            Ok(load(Direction::Reverse, 4))
        );
        assert_eq!(
            WorkingLoad::parse("bidir, 2"),
            Ok(load(Direction::Bidir, 2))
        );
        assert_eq!(WorkingLoad::parse(",3"), Ok(load(Direction::Bidir, 3)));
        for bad in ["sideways", "up,0", "up,9", "up,x", "up,-1"] {
            assert!(WorkingLoad::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            load(Direction::Bidir, 1).words(),
            "TCP both ways, 1 stream each way"
        );
        assert_eq!(load(Direction::Reverse, 4).words(), "TCP down, 4 streams");
        // In JSON as iperf 2 writes it, read back the same; a bad one refused.
        let json = serde_json::to_string(&load(Direction::Normal, 3)).unwrap();
        assert_eq!(json, r#""up,3""#);
        assert_eq!(
            serde_json::from_str::<WorkingLoad>(&json).unwrap(),
            load(Direction::Normal, 3)
        );
        assert!(serde_json::from_str::<WorkingLoad>(r#""up,99""#).is_err());
    }

    #[test]
    fn the_load_runs_beside_the_bursts_for_their_time() {
        let mut bb = TestSpec::new(Protocol::Tcp);
        bb.len = 100;
        bb.tos = Some(0xb8);
        bb.end = EndCondition::Time {
            duration: std::time::Duration::from_secs(4),
        };
        let spec = WorkingLoad {
            direction: Direction::Reverse,
            streams: 2,
        }
        .spec_beside(&bb);
        assert_eq!(spec.protocol, Protocol::Tcp);
        assert_eq!((spec.direction, spec.streams), (Direction::Reverse, 2));
        assert_eq!(spec.end, bb.end);
        assert_eq!(spec.tos, None, "best effort, as iperf 2's load");
        assert!(spec.rr.is_none() && spec.len > 100);
        assert!(spec.validate().is_ok());
    }

    #[test]
    fn a_load_that_did_not_run_says_why() {
        let r = WorkingLoadResult::of(
            WorkingLoad {
                direction: Direction::Normal,
                streams: 1,
            },
            Err("refused: busy".into()),
        );
        assert_eq!(r.words(), "TCP up, 1 stream (refused: busy)");
        assert!(r.up_bits_per_second.is_none());
    }
}
