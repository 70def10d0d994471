//! Control messages on a peer's `/ws` WebSocket, as JSON text frames tagged by `"type"`.
//!
//! The same endpoint serves two kinds of client:
//! - another peer running a test against this one (`hello`, `open`, `begin`, `stop`, `final`):
//!   this peer is then the far end, like `iperf3 -s`; open to anyone within the caps;
//! - a browser or script driving this peer (`run`, `sweep`, `latency`, `plans`, `plan`, `cancel`,
//!   `list_tests`, `attach`): needs the token. A browser that reconnects after a network blip sends `attach{test_id}` to pick up
//!   the test it started (replayed `started` and `interval`s, then live ones and `result`).
//!
//! A session as the far end (client = the peer that starts the test):
//! ```text
//! C: hello{token?}            S: welcome{peer, authorized}
//! C: open{spec}               S: accepted{test_id, cookie, data_port} | error
//! C opens the data streams on data_port, each starting with the cookie
//!                             S: ready          (every stream arrived)
//! C: begin                    both ends start measuring
//!                             S: interval{…}    (each interval, live)
//!                             S: senders_done   (byte-count test: its senders finished)
//! C: stop                     both ends stop sending and drain
//! C: final{report}            S: final{report, result_id?}  (the far end keeps the test
//!                             first; intervals travel live, not in final)
//! ```

use serde::{Deserialize, Serialize};

use crate::report::{IntervalReport, PeerRole, SideReport, TestResult};
use crate::spec::TestSpec;

/// Largest control message a peer accepts, in bytes.
pub const MAX_CONTROL_MESSAGE: usize = 1 << 20;

crate::tagged_enum! {
    tag = "type", rename_all = "snake_case";
    /// Messages from a client (a peer starting a test, or a browser) to a peer.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum ClientMsg {
        /// First message: protocol version and, for privileged requests, the token.
        Hello {
            /// [`crate::PROTOCOL_VERSION`] of the client.
            protocol_version: u32,
            /// Access token, if the client has one.
            #[serde(default)]
            token: Option<String>,
        },
        /// Be the far end of a test with this spec.
        Open {
            /// The test.
            spec: TestSpec,
            /// The run this test belongs to (a sweep's sizes, a latency run's probe and loads),
            /// so the far end keeps the run as one result instead of one per test. Absent from
            /// older clients and for a single test; an older far end ignores it.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            group: Option<TestGroup>,
        },
        /// All streams are up: start measuring now.
        Begin,
        /// The end condition is met: stop sending, drain, report.
        Stop,
        /// The client's own final report.
        Final {
            /// Its report (intervals omitted: they are not needed by the far end).
            report: SideReport,
            /// For a `trip_times` test: the server's clock minus the client's, as the client
            /// read it around `open` (the far end puts it beside its own one-way figures).
            /// Absent from older clients.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            clock_offset: Option<crate::one_way::ClockOffset>,
        },
        /// (Token) Run a test from this peer against `target` and stream its reports here.
        Run {
            /// `host`, `host:port` or `[v6]:port` of the far peer's control endpoint.
            target: String,
            /// The test.
            spec: TestSpec,
        },
        /// (Token) A packet-size sweep from this peer against `target`: one short test of `spec`
        /// per size in `sizes`, in order (the spec's `len` is replaced by each size). The peer
        /// sends `sweep_started`, the running size's `interval`s, a `sweep_point` per size and
        /// finally `sweep_result`; `cancel` ends it after the running size, `attach{sweep_id}`
        /// follows it again after a reconnect.
        Sweep {
            /// `host`, `host:port` or `[v6]:port` of the far peer's control endpoint.
            target: String,
            /// The test each size runs (UDP or DCCP, one direction).
            spec: TestSpec,
            /// Datagram sizes, bytes, in the order to run them.
            sizes: Vec<u32>,
        },
        /// (Token) Latency under load from this peer against `target` (a perfpeer peer): the
        /// peer sends `latency_started`, `latency_event`s (phases, probes, throughput) and finally
        /// `latency_result`; `cancel` ends it early with the phases that ran, `attach{latency_id}`
        /// follows it again after a reconnect.
        Latency {
            /// `host`, `host:port` or `[v6]:port` of the far peer's control endpoint.
            target: String,
            /// The phases, the load and the probe.
            request: crate::latency::LatencyRequest,
        },
        @cfg(feature = "plan-runs")
        /// (Token) The plans this peer offers (`perfpeer serve --plans DIR`): answered with
        /// `plan_list`.
        Plans,
        @cfg(feature = "plan-runs")
        /// (Token) Runs the listed plan `name` on this peer (its cases name their far peers):
        /// the peer sends `plan_started`, a `plan_event` as each case's repeat starts and as
        /// each case ends, then `plan_result`; `cancel` stops it after the running case,
        /// `attach{test_id: plan_id}` follows it again after a reconnect.
        Plan {
            /// The plan's name as `plan_list` gave it.
            name: String,
            /// Tags for the run and each of its tests (`fw=1.2.3`).
            #[serde(default)]
            tags: Vec<String>,
        },
        /// (Token) Cancel the test this connection started with `run`.
        Cancel,
        /// (Token) List the tests running on this peer.
        ListTests,
        /// (Token) Follow a test started with `run`, e.g. again after a network blip: the peer
        /// replays that test's `started` and `interval` messages so far, then sends the live ones
        /// and its `result` (or `error`). A `run` test whose browser went away keeps running for a
        /// grace period, and its result is kept for a while after it ends.
        Attach {
            /// The id from the test's `started` message.
            test_id: String,
        },
    }
}

crate::tagged_enum! {
    tag = "type", rename_all = "snake_case";
    /// Messages from a peer to its client.
    // Messages live for one send or receive; boxing the large variants would only add noise.
    #[allow(clippy::large_enum_variant)]
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub enum ServerMsg {
        /// Answer to `hello`.
        Welcome {
            /// The peer's [`crate::PROTOCOL_VERSION`].
            protocol_version: u32,
            /// What the peer is and can do.
            peer: PeerInfo,
            /// Whether the token was accepted (or the peer is open).
            authorized: bool,
        },
        /// The test was accepted; open the data streams now.
        Accepted {
            /// Public id of the test.
            test_id: String,
            /// Secret that each data stream presents first (32 hex digits).
            cookie: String,
            /// Port of the data listener (TCP and UDP).
            data_port: u16,
            /// For a `trip_times` test: this peer's wall clock when it answered, µs since 1970
            /// (the client reads the clocks' offset from it). Absent from older peers.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            clock_us: Option<u64>,
        },
        /// Every data stream has arrived; the client may `begin`.
        Ready,
        /// Live interval report of one end.
        Interval {
            /// Test id.
            test_id: String,
            /// Which end measured it.
            role: PeerRole,
            /// The interval.
            report: IntervalReport,
        },
        /// This end's senders finished their byte budget.
        SendersDone,
        /// This end's final report (intervals omitted: they travelled live).
        Final {
            /// The report.
            report: SideReport,
            /// Where this peer keeps the test (`/r/<id>` on its control port), if it stores
            /// results.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            result_id: Option<String>,
            /// What broke this end's data streams (`stream 1: …`), so the other end's result says
            /// the test is partial instead of showing an empty receiver as a measurement. Absent
            /// from older peers.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            stream_errors: Vec<String>,
        },
        /// (`run`) The test has started.
        Started {
            /// Test id.
            test_id: String,
            /// Target peer.
            target: String,
            /// The spec.
            spec: TestSpec,
        },
        /// (`run`) The test is kept in this peer's history; its page is `/r/<result_id>`. Sent just
        /// before `result`.
        Stored {
            /// Test id.
            test_id: String,
            /// Result id: the share link's secret.
            result_id: String,
        },
        /// (`run`) The finished test, as this peer renders it.
        Result {
            /// The result.
            result: TestResult,
        },
        /// (`sweep`) The sweep has started; `attach{test_id: sweep_id}` follows it again.
        SweepStarted {
            /// Id of the sweep (not of its tests).
            sweep_id: String,
            /// Target peer.
            target: String,
            /// The test each size runs.
            spec: TestSpec,
            /// The sizes, in order.
            sizes: Vec<u32>,
        },
        /// (`sweep`) One size finished (or failed: the point says why).
        SweepPoint {
            /// Id of the sweep.
            sweep_id: String,
            /// Its row.
            point: crate::sweep::SweepPoint,
        },
        /// (`sweep`) The whole sweep, the last message of it.
        SweepResult {
            /// Id of the sweep.
            sweep_id: String,
            /// Every row.
            result: crate::sweep::SweepResult,
        },
        /// (`latency`) The run has started; `attach{test_id: latency_id}` follows it again.
        LatencyStarted {
            /// Id of the run (not of its tests).
            latency_id: String,
            /// Target peer.
            target: String,
            /// What runs.
            request: crate::latency::LatencyRequest,
        },
        /// (`latency`) Something happened in the run (fold them with `latency::Live`).
        LatencyEvent {
            /// Id of the run.
            latency_id: String,
            /// What.
            event: crate::latency::LatencyEvent,
        },
        /// (`latency`) The whole run, the last message of it.
        LatencyResult {
            /// Id of the run.
            latency_id: String,
            /// Every figure.
            result: crate::latency::LatencyResult,
        },
        @cfg(feature = "plan-runs")
        /// (`plans`) The plans this peer offers, by name (empty without `--plans`).
        PlanList {
            /// Each plan file, readable or not.
            plans: Vec<crate::plan_progress::ListedPlan>,
        },
        @cfg(feature = "plan-runs")
        /// (`plan`) The plan run has started; `attach{test_id: plan_id}` follows it again.
        PlanStarted {
            /// Id of the plan run (not of its tests).
            plan_id: String,
            /// The plan's name as listed.
            name: String,
            /// Its cases.
            cases: u32,
            /// Its testing time, seconds.
            eta_s: u64,
        },
        @cfg(feature = "plan-runs")
        /// (`plan`) A case's repeat starts, or a case ended.
        PlanEvent {
            /// Id of the plan run.
            plan_id: String,
            /// What.
            event: crate::plan_progress::PlanProgress,
        },
        @cfg(feature = "plan-runs")
        /// (`plan`) How the run ended (stopped early or not), the last message of it; the
        /// whole run is the kept plan's page.
        PlanEnded {
            /// Id of the plan run.
            plan_id: String,
            /// How it ended.
            end: crate::plan_progress::PlanEnd,
        },
        /// (`list_tests`) Tests running now.
        Tests {
            /// Running tests.
            tests: Vec<RunningTest>,
        },
        /// A request was refused or a test failed.
        Error {
            /// Machine-readable kind.
            code: ErrorCode,
            /// What was wrong and what to do.
            message: String,
        },
    }
}

/// The run a test belongs to, as its client tells the far end in `open`: the same `id` on each
/// of the run's tests. The far end keeps the run as one result when the last of its `tests`
/// ends (or when none has run for a while); an id it does not know (or no longer holds) starts
/// a new one. What a far end holds for it is bounded there, not here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestGroup {
    /// The client's random id of the run (32 hex digits from perfpeer).
    pub id: String,
    /// What the run is.
    pub kind: GroupKind,
    /// How many tests the run opens at this far end.
    pub tests: u32,
}

/// What kind of run a [`TestGroup`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// A packet-size sweep: one test per size.
    Sweep,
    /// Latency under load: the probe's test and each phase's load tests.
    Latency,
    /// A kind this peer does not know (a newer client's): its tests are kept one by one.
    #[serde(other)]
    Unknown,
}

/// What a peer tells about itself.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Host name.
    pub name: String,
    /// perfpeer version.
    pub version: String,
    /// Kernel and machine.
    pub system: String,
    /// Addresses the peer can be reached at.
    pub addresses: Vec<String>,
    /// Data port.
    pub data_port: u16,
    /// TCP congestion controls the kernel allows.
    pub congestion_controls: Vec<String>,
    /// Tests that may run at once.
    pub max_tests: u32,
    /// Longest test accepted, seconds.
    pub max_duration_s: u64,
    /// Highest bitrate accepted per direction, bit/s (0 = no cap).
    pub max_bitrate: u64,
    /// Whether this peer can run DCCP tests, with which CCIDs, or why not.
    #[serde(default)]
    pub dccp: crate::dccp::DccpSupport,
    /// Why results are not being kept right now (a full disk, a read-only data directory), if
    /// they are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_problem: Option<String>,
    /// The peer's wireless interfaces now (mode, network, channel, stations' signal and rate;
    /// no station addresses), read at most once a second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wifi: Vec<crate::wifi::WifiInterface>,
    /// This build cannot read a radio at all (Windows, macOS: no nl80211), so the Wi-Fi link
    /// is not measured here; absent (false) from peers that can, and from older ones.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wifi_not_measured: bool,
    /// The lab's shared store this peer writes its results to (`--store postgres://…`), if
    /// it has one.
    #[cfg(feature = "lab-store")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_store: Option<LabStoreState>,
}

#[cfg(feature = "lab-store")]
/// How a peer's lab store stands: reachable or not since when, and its results not yet
/// written to it (kept here meanwhile).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStoreState {
    /// Whether the last attempt to reach it succeeded.
    pub reachable: bool,
    /// Since when (ms since the Unix epoch) it has been as `reachable` says.
    #[serde(default)]
    pub since_ms: u64,
    /// Why it could not be reached, the last time it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Results kept here that wait to be written to it.
    #[serde(default)]
    pub waiting: u64,
}

/// A test running on a peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningTest {
    /// Test id.
    pub test_id: String,
    /// This peer's role in it.
    pub role: PeerRole,
    /// The other end's address.
    pub peer: String,
    /// The spec.
    pub spec: TestSpec,
    /// Seconds since it began.
    pub elapsed_s: f64,
    /// The id to `attach` to it with: a run this peer started for a browser or over `/ws`
    /// (a sweep's or latency run's own id); `None` where this peer is the far end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_id: Option<String>,
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// Not JSON, not a known message, or too large.
    BadMessage,
    /// A message that does not fit the session's state.
    UnexpectedMessage,
    /// Different protocol major version.
    VersionMismatch,
    /// Token missing or wrong.
    Unauthorized,
    /// The spec is invalid.
    InvalidSpec,
    /// Over the peer's caps (tests, duration, bitrate).
    OverLimit,
    /// The far peer could not be reached.
    Unreachable,
    /// The other end vanished mid-test.
    PeerLost,
    /// A data stream failed.
    DataPlane,
    /// The peer itself failed.
    Internal,
    /// `attach` to a test this peer does not know (never run here, or ended too long ago).
    UnknownTest,
}

impl ClientMsg {
    /// Parses one text frame; any problem is a [`ControlError`], never a panic.
    pub fn parse(text: &str) -> Result<Self, ControlError> {
        parse(text)
    }
    /// JSON for a text frame.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("control messages always serialize")
    }
}

impl ServerMsg {
    /// Parses one text frame; any problem is a [`ControlError`], never a panic.
    pub fn parse(text: &str) -> Result<Self, ControlError> {
        parse(text)
    }
    /// JSON for a text frame.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("control messages always serialize")
    }
    /// Shorthand for an error message.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMsg::Error {
            code,
            message: message.into(),
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ControlError> {
    if text.len() > MAX_CONTROL_MESSAGE {
        return Err(ControlError::TooLarge(text.len()));
    }
    crate::tagged::from_json(text).map_err(|e| ControlError::Malformed(e.to_string()))
}

/// A control message that could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// Over [`MAX_CONTROL_MESSAGE`].
    #[error("control message of {0} bytes is over the {MAX_CONTROL_MESSAGE}-byte limit")]
    TooLarge(usize),
    /// Not a valid message.
    #[error("malformed control message: {0}")]
    Malformed(String),
}

/// The body of an HTTP API error (`{"error": "..."}`): fixed words, never the request's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// What was wrong.
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Protocol;

    #[test]
    fn messages_are_tagged_json() {
        let open = ClientMsg::Open {
            spec: TestSpec::new(Protocol::Tcp),
            group: None,
        };
        let json = open.to_json();
        assert!(
            json.starts_with(r#"{"type":"open","spec":{"protocol":"tcp""#),
            "{json}"
        );
        assert_eq!(ClientMsg::parse(&json), Ok(open));
        assert_eq!(
            ClientMsg::parse(r#"{"type":"begin"}"#),
            Ok(ClientMsg::Begin)
        );
        let hello = ClientMsg::parse(r#"{"type":"hello","protocol_version":1}"#).unwrap();
        assert_eq!(
            hello,
            ClientMsg::Hello {
                protocol_version: 1,
                token: None
            }
        );
    }

    #[test]
    fn a_group_is_an_optional_field_of_open_both_ways() {
        let spec = TestSpec::new(Protocol::Udp);
        let spec_json = serde_json::to_string(&spec).unwrap();
        // A single test (and an older client) sends no group: the bytes are as before.
        let single = ClientMsg::Open {
            spec: spec.clone(),
            group: None,
        };
        assert_eq!(
            single.to_json(),
            format!(r#"{{"type":"open","spec":{spec_json}}}"#)
        );
        // An older client's bytes: no group.
        assert_eq!(
            ClientMsg::parse(&format!(r#"{{"type":"open","spec":{spec_json}}}"#)),
            Ok(single)
        );
        // A newer client's bytes.
        let text = format!(
            r#"{{"type":"open","spec":{spec_json},"group":{{"id":"0123456789abcdef0123456789abcdef","kind":"sweep","tests":8}}}}"#
        );
        let grouped = ClientMsg::Open {
            spec: spec.clone(),
            group: Some(TestGroup {
                id: "0123456789abcdef0123456789abcdef".into(),
                kind: GroupKind::Sweep,
                tests: 8,
            }),
        };
        assert_eq!(ClientMsg::parse(&text), Ok(grouped.clone()));
        assert_eq!(grouped.to_json(), text);
        // An older far end reads `open` with only `spec`: the group is a field it does not
        // know, which it ignores (as the tagged enum's derive does).
        crate::tagged_enum! {
            tag = "type", rename_all = "snake_case";
            #[derive(Debug, PartialEq, Serialize)]
            enum OldClientMsg {
                Open { spec: TestSpec },
            }
        }
        assert_eq!(
            crate::tagged::from_json::<OldClientMsg>(&text).unwrap(),
            OldClientMsg::Open { spec: spec.clone() }
        );
        // ... and so is a field a later client may add to the group.
        let later = text.replace(r#""tests":8"#, r#""tests":8,"index":3"#);
        assert!(matches!(
            ClientMsg::parse(&later),
            Ok(ClientMsg::Open { group: Some(_), .. })
        ));
        let kind = |text: &str| serde_json::from_str::<TestGroup>(text).unwrap().kind;
        assert_eq!(
            kind(r#"{"id":"x","kind":"latency","tests":4}"#),
            GroupKind::Latency
        );
        // A kind a later client may add still opens the test (kept alone).
        assert_eq!(
            kind(r#"{"id":"x","kind":"cbr","tests":4}"#),
            GroupKind::Unknown
        );
        // A malformed group is a malformed message.
        for bad in [
            r#""group":{"id":"x","kind":"sweep"}"#,
            r#""group":{"id":"x","kind":"sweep","tests":-1}"#,
            r#""group":"x""#,
        ] {
            let text = format!(r#"{{"type":"open","spec":{spec_json},{bad}}}"#);
            assert!(
                matches!(ClientMsg::parse(&text), Err(ControlError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn sweep_messages_round_trip() {
        let sweep = ClientMsg::Sweep {
            target: "pc:5210".into(),
            spec: TestSpec::new(Protocol::Udp),
            sizes: vec![64, 1400],
        };
        let json = sweep.to_json();
        assert!(
            json.starts_with(r#"{"type":"sweep","target":"pc:5210""#),
            "{json}"
        );
        assert_eq!(ClientMsg::parse(&json), Ok(sweep));
        let point = ServerMsg::SweepPoint {
            sweep_id: "s1".into(),
            point: crate::sweep::SweepPoint::failed(64, "refused"),
        };
        let json = point.to_json();
        assert!(
            json.starts_with(r#"{"type":"sweep_point","sweep_id":"s1""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ServerMsg>(&json).unwrap(), point);
    }

    #[cfg(feature = "plan-runs")]
    #[test]
    fn plan_messages_round_trip() {
        assert_eq!(
            ClientMsg::parse(r#"{"type":"plan","name":"nightly"}"#),
            Ok(ClientMsg::Plan {
                name: "nightly".into(),
                tags: Vec::new()
            })
        );
        assert_eq!(
            ClientMsg::parse(r#"{"type":"plans"}"#),
            Ok(ClientMsg::Plans)
        );
        let ev = ServerMsg::PlanEvent {
            plan_id: "p1".into(),
            event: crate::plan_progress::PlanProgress::Starting {
                index: 0,
                of: 2,
                label: "tcp up".into(),
                repeat: 1,
                repeats: 3,
                eta_s: 12,
            },
        };
        let json = ev.to_json();
        assert!(
            json.starts_with(r#"{"type":"plan_event","plan_id":"p1","event":{"event":"starting""#),
            "{json}"
        );
        assert_eq!(ServerMsg::parse(&json), Ok(ev));
        let row = ServerMsg::PlanEvent {
            plan_id: "p1".into(),
            event: crate::plan_progress::PlanProgress::CaseDone {
                index: 1,
                row: crate::plan_progress::CaseRow {
                    label: "udp down".into(),
                    metric: crate::verdict::Metric::Loss,
                    headline: crate::plan_progress::Spread::of(&[0.5, 0.1, 0.2]),
                    ran: 3,
                    repeats: 3,
                    result_ids: vec!["a".into(), "b".into(), "c".into()],
                    outcome: Some(crate::verdict::Outcome::Fail),
                    verdict_line: "FAIL: loss<=0.1%: 0.2 %".into(),
                },
            },
        };
        assert_eq!(ServerMsg::parse(&row.to_json()), Ok(row));
        let end = ServerMsg::PlanEnded {
            plan_id: "p1".into(),
            end: crate::plan_progress::PlanEnd {
                status: crate::plan_progress::PlanStatus::Stopped,
                cases: 1,
                planned_cases: 8,
                outcome: None,
                result_id: Some("r9".into()),
            },
        };
        let json = end.to_json();
        assert!(json.contains(r#""status":"stopped""#), "{json}");
        assert_eq!(ServerMsg::parse(&json), Ok(end));
    }

    #[test]
    fn bad_frames_are_errors() {
        for bad in [
            "",
            "null",
            "{}",
            r#"{"type":"nope"}"#,
            r#"{"type":"open","spec":5}"#,
            "\u{0}",
        ] {
            assert!(
                matches!(ClientMsg::parse(bad), Err(ControlError::Malformed(_))),
                "{bad:?}"
            );
        }
        let huge = format!(
            r#"{{"type":"hello","token":"{}"}}"#,
            "x".repeat(MAX_CONTROL_MESSAGE)
        );
        assert!(matches!(
            ClientMsg::parse(&huge),
            Err(ControlError::TooLarge(_))
        ));
    }

    #[test]
    fn attach_names_its_test() {
        let attach = ClientMsg::parse(r#"{"type":"attach","test_id":"9f42f6824ab0"}"#);
        assert_eq!(
            attach,
            Ok(ClientMsg::Attach {
                test_id: "9f42f6824ab0".into()
            })
        );
        assert!(ClientMsg::parse(r#"{"type":"attach"}"#).is_err());
        let e = ServerMsg::error(ErrorCode::UnknownTest, "no test x");
        assert!(e.to_json().contains(r#""code":"unknown_test""#));
    }

    #[test]
    fn errors_carry_a_code() {
        let e = ServerMsg::error(ErrorCode::OverLimit, "too many tests");
        assert_eq!(
            e.to_json(),
            r#"{"type":"error","code":"over_limit","message":"too many tests"}"#
        );
    }
}
