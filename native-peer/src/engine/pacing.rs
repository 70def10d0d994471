//! Pacing: evenly spaced sends at a target rate from a monotonic clock. Each send has a due
//! time `start + bytes_sent / rate`; the sender sleeps for the coarse part of the wait and spins
//! for the last few microseconds, so datagrams leave one by one, not in a burst per timer tick.
//! A sender that fell behind (descheduled by a busy host) catches up at most at four times the
//! rate, never back to back, so what it owes is paid back smoothly; only a stall longer than
//! [`MAX_DEBT`] is forgiven.

use std::time::{Duration, Instant};

use perfpeer_shared::units::BitRate;

/// A sender that falls further behind than this forgets the debt: the host stopped it, and paying
/// it back would load the path at four times the rate for a third of the stall. Shorter debts are
/// paid back: a fast sender that shares its core with other busy work loses a few milliseconds
/// at a time and many times a second, and forgiving those (at 50 ms, before 2026-12-05) left a
/// 1 Gbit/s stream up to 1.5 % short with a CPU hog beside it, where paying back kept eight
/// samples of eight within 0.13 % (docs/benchmarks.md, "A fair capture").
const MAX_DEBT: Duration = Duration::from_millis(500);
/// Waits longer than this are slept (minus [`SPIN_MARGIN`]); shorter ones are spun.
const SLEEP_THRESHOLD: Duration = Duration::from_micros(80);
/// Time left to spin after a sleep, to absorb the kernel's wake-up latency.
const SPIN_MARGIN: Duration = Duration::from_micros(40);

/// Due times for a paced sender (pure: the caller reads the clock).
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    start: Instant,
    ns_per_byte: f64,
    sent: u64,
    /// Earliest time for the next send: a quarter of a send's nominal spacing after the last one.
    not_before: Instant,
    /// Sends per burst (1: evenly spaced).
    burst: u32,
    /// Sends made of the current burst.
    in_burst: u32,
}

impl Pacer {
    /// A pacer for `rate`, starting now.
    pub(crate) fn new(rate: BitRate, start: Instant) -> Self {
        Pacer {
            start,
            ns_per_byte: 8e9 / rate.0.max(1) as f64,
            sent: 0,
            not_before: start,
            burst: 1,
            in_burst: 0,
        }
    }

    /// Sends `burst` at a time back to back, then waits for the rate (iperf3's `-b
    /// RATE/BURST`): the average rate is the same, the spacing is a group's.
    pub(crate) fn with_burst(mut self, burst: Option<u32>) -> Self {
        self.burst = burst.unwrap_or(1).max(1);
        self
    }

    /// When the next send is due: inside a burst at once, else at its place in the schedule.
    pub(crate) fn due(&self) -> Instant {
        if self.in_burst > 0 {
            return self.start.min(self.not_before);
        }
        self.scheduled().max(self.not_before)
    }

    /// The send's place in the even schedule, ignoring the catch-up limit.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "nanoseconds as f64 from non-negative counts and rates; `as` saturates, and a pacing horizon past 584 years is not reached"
    )]
    fn scheduled(&self) -> Instant {
        self.start + Duration::from_nanos((self.sent as f64 * self.ns_per_byte) as u64)
    }

    /// Accounts a send of `bytes` made at `now`.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "nanoseconds as f64 from non-negative counts and rates; `as` saturates, and a pacing horizon past 584 years is not reached"
    )]
    pub(crate) fn on_sent(&mut self, bytes: u64, now: Instant) {
        if now > self.scheduled() + MAX_DEBT {
            // Far behind (the host stalled us): restart the schedule from now.
            self.start = now - Duration::from_nanos((self.sent as f64 * self.ns_per_byte) as u64);
        }
        self.sent += bytes;
        self.in_burst = (self.in_burst + 1) % self.burst;
        self.not_before = if self.burst > 1 {
            now
        } else {
            now + Duration::from_nanos((bytes as f64 * self.ns_per_byte / 4.0) as u64)
        };
    }
}

/// Longest single sleep, so a stop request is noticed quickly even at very low rates.
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// Blocks until `due`: sleeps the coarse part, spins the rest. Returns `false` early if
/// `stopping()` turns true.
pub(crate) fn wait_until(due: Instant, stopping: impl Fn() -> bool) -> bool {
    loop {
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > SLEEP_THRESHOLD {
            if stopping() {
                return false;
            }
            std::thread::sleep((left - SPIN_MARGIN).min(MAX_SLEEP));
        } else {
            std::hint::spin_loop();
        }
    }
}

pub(crate) use crate::sys::tighten_timer_slack;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_leaves_together_and_keeps_the_average_rate() {
        let t0 = Instant::now();
        // 8 Mbit/s, 1000-byte datagrams, bursts of 4: four at once every 4 ms.
        let mut p = Pacer::new(BitRate(8_000_000), t0).with_burst(Some(4));
        let mut now = t0;
        for group in 0..3u64 {
            let start = t0 + Duration::from_millis(4 * group);
            assert_eq!(p.due().max(now), start, "group {group} starts on schedule");
            now = start;
            for _ in 0..4 {
                assert!(p.due() <= now, "inside a burst: at once");
                p.on_sent(1000, now);
            }
        }
        assert_eq!(p.due(), t0 + Duration::from_millis(12));
        // No burst: the even schedule.
        let p = Pacer::new(BitRate(8_000_000), t0).with_burst(None);
        assert_eq!(p.due(), t0);
    }

    #[test]
    fn due_times_are_evenly_spaced() {
        let t0 = Instant::now();
        // 8 Mbit/s = 1 byte per µs: 1000-byte datagrams every 1 ms.
        let mut p = Pacer::new(BitRate(8_000_000), t0);
        assert_eq!(p.due(), t0);
        p.on_sent(1000, t0);
        assert_eq!(p.due(), t0 + Duration::from_millis(1));
        p.on_sent(1000, t0 + Duration::from_millis(1));
        assert_eq!(p.due(), t0 + Duration::from_millis(2));
    }

    #[test]
    fn small_lag_is_caught_up_large_lag_is_forgiven() {
        let t0 = Instant::now();
        let mut p = Pacer::new(BitRate(8_000_000), t0);
        p.on_sent(1000, t0 + Duration::from_millis(2));
        assert_eq!(
            p.due(),
            t0 + Duration::from_micros(2250),
            "2 ms late is caught up at four times the rate, not in a burst"
        );
        p.on_sent(1000, t0 + Duration::from_micros(2250));
        assert_eq!(p.due(), t0 + Duration::from_micros(2500));
        p.on_sent(1000, t0 + Duration::from_micros(2500));
        assert_eq!(p.due(), t0 + Duration::from_micros(3000), "caught up");
        p.on_sent(1000, t0 + Duration::from_micros(3000));
        assert_eq!(
            p.due(),
            t0 + Duration::from_micros(4000),
            "back on schedule"
        );
        // 200 ms late (a busy host): still owed, paid back at four times the rate.
        let owing = t0 + Duration::from_millis(204);
        p.on_sent(1000, owing);
        assert_eq!(p.due(), owing + Duration::from_micros(250), "still owed");
        // 600 ms late (a stalled host): the schedule restarts from now.
        let late = t0 + Duration::from_millis(800);
        p.on_sent(1000, late);
        assert_eq!(
            p.due(),
            late + Duration::from_millis(1),
            "600 ms late restarts the schedule"
        );
        p.on_sent(1000, late + Duration::from_millis(1));
        assert_eq!(p.due(), late + Duration::from_millis(2));
    }
}
