//! Checks a far side's final report before it is kept: the far end stores what an anonymous
//! client says about its own end, so counts, times and stream ids must fit the test that ran,
//! and its intervals are bounded, before any of it reaches the disk or a result page.

use std::time::Duration;

use perfpeer_shared::report::{SideReport, TestResult};

/// Most intervals kept per side: a day at one per second.
pub const MAX_INTERVALS: usize = 86_400;
/// Fastest rate believed of one test (bytes per second): 1.6 Tbit/s, far beyond any link
/// perfpeer measures, and loopback.
const MAX_BYTES_PER_SECOND: f64 = 200e9;
/// Slack on the test's length for start-up, drain and clock differences.
const TIME_SLACK: Duration = Duration::from_secs(30);

/// Why `remote` does not fit `result`'s test, if it does not.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a count of intervals from a ratio of durations, non-negative and capped by MAX_INTERVALS"
)]
pub fn remote_problem(result: &TestResult, remote: &SideReport) -> Option<String> {
    let spec = &result.spec;
    let longest = spec
        .expected_duration()
        .unwrap_or(Duration::from_secs(86_400))
        + TIME_SLACK;
    let interval = spec.interval.max(Duration::from_millis(100));
    let max_intervals =
        ((longest.as_secs_f64() / interval.as_secs_f64()).ceil() as usize + 5).min(MAX_INTERVALS);
    if remote.intervals.len() > max_intervals {
        return Some(format!(
            "{} intervals for a test of at most {max_intervals}",
            remote.intervals.len()
        ));
    }
    let ids: Vec<u32> = spec.stream_plan().into_iter().map(|(id, _)| id).collect();
    if remote.streams.len() > ids.len() {
        return Some(format!(
            "{} streams for a test of {}",
            remote.streams.len(),
            ids.len()
        ));
    }
    for s in &remote.streams {
        if !ids.contains(&s.id) {
            return Some(format!("a stream id {} the test does not have", s.id));
        }
        if s.duration > longest {
            return Some(format!(
                "a stream that ran {:.0} s",
                s.duration.as_secs_f64()
            ));
        }
        if s.bytes as f64 > MAX_BYTES_PER_SECOND * longest.as_secs_f64() {
            return Some(format!(
                "{} bytes in at most {} s",
                s.bytes,
                longest.as_secs()
            ));
        }
    }
    let times_ok = remote
        .intervals
        .iter()
        .all(|i| i.end >= i.start && i.end <= longest && i.streams.len() <= ids.len());
    (!times_ok).then(|| "intervals outside the test".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::report::{IntervalReport, PeerRole, TestStatus};
    use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec};

    fn result_of(seconds: u64) -> TestResult {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.end = EndCondition::Time {
            duration: Duration::from_secs(seconds),
        };
        TestResult {
            id: "t".into(),
            spec,
            started_unix_ms: 0,
            server_addr: String::new(),
            local: SideReport::empty(PeerRole::Server, Default::default()),
            remote: None,
            status: TestStatus::Complete,
        }
    }

    fn interval(at: u64) -> IntervalReport {
        IntervalReport {
            start: Duration::from_secs(at),
            end: Duration::from_secs(at + 1),
            omitted: false,
            streams: Vec::new(),
        }
    }

    #[test]
    fn a_report_that_fits_the_test_passes() {
        let result = result_of(10);
        let mut remote = SideReport::empty(PeerRole::Client, Default::default());
        remote.intervals = (0..10).map(interval).collect();
        assert_eq!(remote_problem(&result, &remote), None);
    }

    #[test]
    fn too_many_intervals_or_times_outside_the_test_are_refused() {
        let result = result_of(10);
        let mut remote = SideReport::empty(PeerRole::Client, Default::default());
        remote.intervals = (0..5000).map(|_| interval(0)).collect();
        assert!(
            remote_problem(&result, &remote)
                .unwrap()
                .contains("intervals")
        );
        remote.intervals = vec![interval(100_000)];
        assert!(remote_problem(&result, &remote).is_some());
    }
}
