//! UDP receiver statistics from sequence numbers and send timestamps: loss, out-of-order,
//! duplicates, RFC 3550 interarrival jitter and the longest gap between arrivals (O(1) per
//! datagram). Pure arithmetic, fed by the receive loop.

use std::cell::Cell;
use std::time::Duration;

use perfpeer_shared::histogram::HistogramSpec;
use perfpeer_shared::one_way::{ClockBasis, OneWayDelays};
use perfpeer_shared::report::{UdpRxFinal, UdpRxSample};

use crate::frames::FrameStats;
use crate::wire::FrameMark;

/// How far back (in sequence numbers) duplicates are recognised.
const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

/// Running receiver state of one UDP stream.
#[derive(Debug, Clone)]
pub struct UdpRxStats {
    highest: u64,
    received: u64,
    lost: u64,
    out_of_order: u64,
    duplicates: u64,
    jitter_s: f64,
    last_transit_ns: Option<i128>,
    seen: [u64; WORDS],
    sender_packets: Option<u64>,
    last_arrival: Option<Duration>,
    /// Longest gap between two arrivals over the whole stream.
    max_gap: Duration,
    /// Longest gap since the last [`UdpRxStats::snapshot`] (which starts a new window).
    window_gap: Cell<Option<Duration>>,
    /// One-way delays, when the receive loop measures them (and the clocks they rest on).
    one_way: Option<(OneWayDelays, ClockBasis)>,
    /// Video-like frames, when the test sends them.
    frames: Option<(FrameStats, ClockBasis)>,
}

impl Default for UdpRxStats {
    fn default() -> Self {
        UdpRxStats {
            highest: 0,
            received: 0,
            lost: 0,
            out_of_order: 0,
            duplicates: 0,
            jitter_s: 0.0,
            last_transit_ns: None,
            seen: [0; WORDS],
            sender_packets: None,
            last_arrival: None,
            max_gap: Duration::ZERO,
            window_gap: Cell::new(None),
            one_way: None,
            frames: None,
        }
    }
}

/// Cumulative counters at one instant, for interval differences.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpRxSnapshot {
    /// Highest sequence number seen.
    pub highest: u64,
    /// Unique datagrams received.
    pub received: u64,
    /// Lost so far (gaps minus late arrivals).
    pub lost: u64,
    /// Out-of-order arrivals.
    pub out_of_order: u64,
    /// Duplicates.
    pub duplicates: u64,
    /// Current jitter, seconds.
    pub jitter_s: f64,
    /// Longest gap between arrivals since the previous snapshot (`None`: no gap ended in it).
    pub window_gap: Option<Duration>,
}

impl UdpRxStats {
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let pos = seq % WINDOW;
        (&mut self.seen[(pos / 64) as usize], 1u64 << (pos % 64))
    }

    fn clear_range(&mut self, from: u64, to_inclusive: u64) {
        if to_inclusive - from + 1 >= WINDOW {
            self.seen = [0; WORDS];
            return;
        }
        for seq in from..=to_inclusive {
            let (word, mask) = self.bit(seq);
            *word &= !mask;
        }
    }

    /// Accounts one data datagram: its sequence number, its send time on the sender's clock and
    /// its arrival time on ours (both only used as differences).
    pub fn on_datagram(&mut self, seq: u64, sent: Duration, arrived: Duration) {
        self.on_arrival(arrived);
        if seq > self.highest {
            if seq > self.highest + 1 {
                self.lost += seq - self.highest - 1;
            }
            self.clear_range(self.highest + 1, seq);
            self.highest = seq;
        } else if self.highest - seq < WINDOW {
            let (word, mask) = self.bit(seq);
            if *word & mask != 0 {
                self.duplicates += 1;
                return;
            }
            self.out_of_order += 1;
            self.lost = self.lost.saturating_sub(1);
        } else {
            // Too old to check for a duplicate: count it as a late arrival.
            self.out_of_order += 1;
            self.lost = self.lost.saturating_sub(1);
        }
        let (word, mask) = self.bit(seq);
        *word |= mask;
        self.received += 1;
        self.update_jitter(sent, arrived);
    }

    /// Tracks the gap since the previous arrival (whatever the datagram turns out to be).
    fn on_arrival(&mut self, arrived: Duration) {
        if let Some(last) = self.last_arrival {
            let gap = arrived.saturating_sub(last);
            self.max_gap = self.max_gap.max(gap);
            let window = self.window_gap.get().map_or(gap, |g| g.max(gap));
            self.window_gap.set(Some(window));
        }
        self.last_arrival = Some(arrived);
    }

    /// RFC 3550 §6.4.1: J += (|D| − J) / 16, D the change in transit time.
    #[allow(
        clippy::cast_possible_wrap,
        reason = "a Duration's nanoseconds fit in 96 bits, so in an i128"
    )]
    fn update_jitter(&mut self, sent: Duration, arrived: Duration) {
        // Transit times in integer nanoseconds: the clocks' offset cancels exactly.
        let transit = arrived.as_nanos() as i128 - sent.as_nanos() as i128;
        if let Some(last) = self.last_transit_ns {
            let d = (transit - last).unsigned_abs() as f64 / 1e9;
            self.jitter_s += (d - self.jitter_s) / 16.0;
        }
        self.last_transit_ns = Some(transit);
    }

    /// Counts the one-way delay of a datagram just accounted: its arrival on the receiver's
    /// wall clock minus the send time the sender stamped on its own, in seconds; also in the
    /// bins of `histogram` where the test asked for them.
    pub fn on_one_way(
        &mut self,
        delay_s: f64,
        clock: ClockBasis,
        histogram: Option<HistogramSpec>,
    ) {
        self.one_way
            .get_or_insert_with(|| {
                let delays =
                    histogram.map_or_else(OneWayDelays::default, OneWayDelays::with_histogram);
                (delays, clock)
            })
            .0
            .record(delay_s);
    }

    /// Counts a datagram of a video-like frame (`mark`: its place, the frames' period), sent
    /// at `sent_s` on the sender's wall clock, arrived at `arrived_s` on ours; the frames'
    /// latency is also counted in `histogram`'s bins when given.
    pub fn on_frame(
        &mut self,
        mark: FrameMark,
        (sent_s, arrived_s): (f64, f64),
        clock: ClockBasis,
        histogram: Option<HistogramSpec>,
    ) {
        self.frames
            .get_or_insert_with(|| {
                let frames = FrameStats::new(mark.period_s, histogram);
                let frames = if mark.last_may_be_cut {
                    frames.last_may_be_cut()
                } else {
                    frames
                };
                (frames, clock)
            })
            .0
            .on_datagram(mark.tag, sent_s, arrived_s);
    }

    /// The one-way delays so far (over the whole stream, omitted start included).
    pub fn one_way(&self) -> Option<perfpeer_shared::one_way::OneWayFinal> {
        self.one_way
            .as_ref()
            .and_then(|(d, clock)| d.finish(*clock))
    }

    /// The video frames so far (a TCP receiver's, whose writes are its frames).
    pub fn frames(&self) -> Option<perfpeer_shared::video::FrameFinal> {
        self.frames.as_ref().map(|(f, clock)| f.finish(*clock))
    }

    /// Records the sender's final datagram count (from its fin).
    pub fn on_fin(&mut self, packets: u64) {
        self.sender_packets = Some(packets);
    }

    /// Cumulative counters now; also starts a new window for the longest gap.
    pub fn snapshot(&self) -> UdpRxSnapshot {
        UdpRxSnapshot {
            highest: self.highest,
            received: self.received,
            lost: self.lost,
            out_of_order: self.out_of_order,
            duplicates: self.duplicates,
            jitter_s: self.jitter_s,
            window_gap: self.window_gap.take(),
        }
    }

    /// Totals since `base` (the end of the omitted start). Loss uses the sender's count when its
    /// fin arrived (so datagrams lost at the very end count), else the sequence gaps.
    pub fn final_since(&self, base: &UdpRxSnapshot) -> UdpRxFinal {
        let received = self.received - base.received;
        let lost = match self.sender_packets {
            Some(sent) => sent.saturating_sub(base.highest).saturating_sub(received),
            None => self.lost.saturating_sub(base.lost),
        };
        UdpRxFinal {
            received,
            sender_packets: self.sender_packets,
            lost,
            out_of_order: self.out_of_order - base.out_of_order,
            duplicates: self.duplicates - base.duplicates,
            jitter_ms: self.jitter_s * 1000.0,
            max_gap_ms: (self.received > 1).then(|| ms_of(self.max_gap)),
            one_way: self.one_way(),
            frames: self.frames.as_ref().map(|(f, clock)| f.finish(*clock)),
        }
    }
}

fn ms_of(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl UdpRxSnapshot {
    /// The interval between `earlier` and `self`.
    pub fn interval_since(&self, earlier: &UdpRxSnapshot) -> UdpRxSample {
        UdpRxSample {
            packets: self.highest - earlier.highest,
            lost: self.lost.saturating_sub(earlier.lost),
            out_of_order: self.out_of_order - earlier.out_of_order,
            duplicates: self.duplicates - earlier.duplicates,
            jitter_ms: self.jitter_s * 1000.0,
            max_gap_ms: self.window_gap.map(ms_of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn in_order_stream_has_no_loss() {
        let mut s = UdpRxStats::default();
        for seq in 1..=100 {
            s.on_datagram(seq, ms(seq * 10), ms(seq * 10 + 5));
        }
        let f = s.final_since(&UdpRxSnapshot::default());
        assert_eq!(
            (f.received, f.lost, f.out_of_order, f.duplicates),
            (100, 0, 0, 0)
        );
        assert_eq!(f.jitter_ms, 0.0);
    }

    #[test]
    fn gaps_late_arrivals_and_duplicates() {
        let mut s = UdpRxStats::default();
        for seq in [1, 2, 5, 3, 3, 6] {
            s.on_datagram(seq, ms(0), ms(0));
        }
        // 4 is missing; 3 arrived late (out of order) and then again (duplicate).
        let snap = s.snapshot();
        assert_eq!((snap.highest, snap.received, snap.lost), (6, 5, 1));
        assert_eq!((snap.out_of_order, snap.duplicates), (1, 1));
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut s = UdpRxStats::default();
        // transit times 5, 7, 5 ms: |D| = 2 then 2 → J = 2/16, then J += (2 − J)/16.
        s.on_datagram(1, ms(0), ms(5));
        s.on_datagram(2, ms(10), ms(17));
        s.on_datagram(3, ms(20), ms(25));
        let j1 = 0.002 / 16.0;
        let j2 = j1 + (0.002 - j1) / 16.0;
        assert!(
            (s.snapshot().jitter_s - j2).abs() < 1e-12,
            "{}",
            s.snapshot().jitter_s
        );
    }

    #[test]
    fn fin_count_catches_tail_loss() {
        let mut s = UdpRxStats::default();
        for seq in 1..=8 {
            s.on_datagram(seq, ms(0), ms(0));
        }
        // Datagrams 9 and 10 were lost: no gap shows it, the sender's count does.
        assert_eq!(s.final_since(&UdpRxSnapshot::default()).lost, 0);
        s.on_fin(10);
        let f = s.final_since(&UdpRxSnapshot::default());
        assert_eq!((f.lost, f.sender_packets), (2, Some(10)));
        assert!((f.lost_percent() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn final_excludes_omitted_start() {
        let mut s = UdpRxStats::default();
        for seq in [1, 2, 4] {
            s.on_datagram(seq, ms(0), ms(0));
        }
        let base = s.snapshot();
        for seq in [5, 7, 8] {
            s.on_datagram(seq, ms(0), ms(0));
        }
        s.on_fin(8);
        let f = s.final_since(&base);
        assert_eq!((f.received, f.lost), (3, 1));
        let iv = s.snapshot().interval_since(&base);
        assert_eq!((iv.packets, iv.lost), (4, 1));
    }

    #[test]
    fn longest_gap_per_window_and_overall() {
        let mut s = UdpRxStats::default();
        for (seq, at) in [(1, 0), (2, 20), (3, 40), (4, 95)] {
            s.on_datagram(seq, ms(at), ms(at));
        }
        let first = s.snapshot();
        assert_eq!(first.window_gap, Some(ms(55)));
        s.on_datagram(5, ms(100), ms(100));
        let second = s.snapshot();
        assert_eq!(
            second.window_gap,
            Some(ms(5)),
            "a new window after each snapshot"
        );
        assert_eq!(s.snapshot().window_gap, None, "no arrival, no gap");
        let iv = second.interval_since(&first);
        assert_eq!(iv.max_gap_ms, Some(5.0));
        let f = s.final_since(&UdpRxSnapshot::default());
        assert_eq!(f.max_gap_ms, Some(55.0));
    }

    #[test]
    fn very_late_datagram_is_out_of_order_not_duplicate() {
        let mut s = UdpRxStats::default();
        s.on_datagram(1, ms(0), ms(0));
        s.on_datagram(WINDOW + 10, ms(0), ms(0));
        s.on_datagram(2, ms(0), ms(0));
        let snap = s.snapshot();
        assert_eq!(
            (snap.out_of_order, snap.duplicates, snap.lost),
            (1, 0, WINDOW + 7)
        );
    }
}
