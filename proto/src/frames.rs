//! A receiver's view of video-like frames (`--isochronous`): fed each datagram's frame tag, its
//! wall-clock send time and its arrival, it counts frames whole, lost and late, and times each
//! whole frame from its first datagram's send to its last one's arrival. O(1) per datagram, one
//! frame open at a time. Pure arithmetic, fed by the receive loop.

use perfpeer_shared::histogram::HistogramSpec;
use perfpeer_shared::one_way::{ClockBasis, OneWayDelays};
use perfpeer_shared::video::FrameFinal;

use crate::wire::FrameTag;

/// The frame being received.
#[derive(Debug, Clone)]
struct Open {
    frame: u32,
    count: u32,
    got: u32,
    /// Its first datagram's send time (wall clock, s), once that datagram arrived.
    first_sent: Option<f64>,
    done: bool,
}

/// Running frame statistics of one stream.
#[derive(Debug, Clone)]
pub struct FrameStats {
    period_s: f64,
    open: Option<Open>,
    whole: u64,
    lost: u64,
    late: u64,
    latency: OneWayDelays,
    /// A last frame still open at the end was cut by the end of the test, not lost.
    last_may_be_cut: bool,
}

impl FrameStats {
    /// Frames expected every `period_s` seconds; their latency also in `histogram`'s bins
    /// when given (iperf 2's `F8` histogram).
    pub fn new(period_s: f64, histogram: Option<HistogramSpec>) -> FrameStats {
        FrameStats {
            period_s,
            open: None,
            whole: 0,
            lost: 0,
            late: 0,
            latency: histogram.map_or_else(OneWayDelays::default, OneWayDelays::with_histogram),
            last_may_be_cut: false,
        }
    }

    /// For a sender that may stop in the middle of its last frame (iperf 2's client, when its
    /// time is up): a frame still open at the end is not counted lost.
    pub fn last_may_be_cut(mut self) -> FrameStats {
        self.last_may_be_cut = true;
        self
    }

    /// Counts a datagram of frame `tag`, sent at `sent_s` on the sender's wall clock and
    /// arrived at `arrived_s` on ours. A datagram of a frame older than the open one comes too
    /// late to count (its frame was counted lost when a newer one began); a newer frame closes
    /// the open one, and frames skipped in the numbering are lost.
    pub fn on_datagram(&mut self, tag: FrameTag, sent_s: f64, arrived_s: f64) {
        let open = match &mut self.open {
            Some(open) if tag.frame < open.frame => return,
            Some(open) if tag.frame == open.frame => open,
            previous => {
                let after = previous.as_ref().map_or(0, |o| {
                    if !o.done {
                        self.lost += 1;
                    }
                    o.frame
                });
                self.lost += u64::from(tag.frame.saturating_sub(after).saturating_sub(1));
                self.open.insert(Open {
                    frame: tag.frame,
                    count: tag.count,
                    got: 0,
                    first_sent: None,
                    done: false,
                })
            }
        };
        if open.done {
            return;
        }
        open.got += 1;
        if tag.index == 0 {
            open.first_sent = Some(sent_s);
        }
        if open.got >= open.count {
            open.done = true;
            self.whole += 1;
            if let Some(first) = open.first_sent {
                let latency = arrived_s - first;
                if latency > self.period_s {
                    self.late += 1;
                }
                self.latency.record(latency);
            }
        }
    }

    /// The figures so far; a frame still open at the end is lost (the sender finishes every
    /// frame it starts), unless the sender may cut its last one.
    pub fn finish(&self, clock: ClockBasis) -> FrameFinal {
        let open_lost = !self.last_may_be_cut && self.open.as_ref().is_some_and(|o| !o.done);
        FrameFinal {
            whole: self.whole,
            lost: self.lost + u64::from(open_lost),
            late: self.late,
            period_ms: self.period_s * 1e3,
            latency: self.latency.finish(clock),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(frame: u32, index: u32, count: u32) -> FrameTag {
        FrameTag {
            frame,
            index,
            count,
        }
    }

    #[test]
    fn whole_lost_and_late_frames() {
        let mut f = FrameStats::new(0.010, None);
        // Frame 1: two datagrams, 2 ms after the first was sent: whole, on time.
        f.on_datagram(tag(1, 0, 2), 100.000, 100.001);
        f.on_datagram(tag(1, 1, 2), 100.0005, 100.002);
        // Frame 2: its second datagram lost; frame 3 begins.
        f.on_datagram(tag(2, 0, 2), 100.010, 100.011);
        // Frame 3: one datagram, 15 ms on the way: late.
        f.on_datagram(tag(3, 0, 1), 100.020, 100.035);
        // Frames 4 and 5 never seen; 6 whole.
        f.on_datagram(tag(6, 0, 1), 100.050, 100.051);
        // A straggler of frame 2 counts nothing.
        f.on_datagram(tag(2, 1, 2), 100.010, 100.052);
        let r = f.finish(ClockBasis::SameHost);
        assert_eq!((r.whole, r.lost, r.late, r.frames()), (3, 3, 1, 6));
        let latency = r.latency.unwrap();
        assert_eq!(latency.count, 3);
        assert!((latency.max_ms - 15.0).abs() < 1e-6, "{latency:?}");
        assert!((latency.min_ms - 1.0).abs() < 1e-6, "{latency:?}");
    }

    #[test]
    fn a_frame_open_at_the_end_is_lost_and_duplicates_do_not_complete_twice() {
        let mut f = FrameStats::new(0.010, None);
        f.on_datagram(tag(1, 0, 1), 1.0, 1.001);
        f.on_datagram(tag(1, 0, 1), 1.0, 1.002);
        f.on_datagram(tag(2, 0, 3), 1.01, 1.011);
        let r = f.finish(ClockBasis::SameHost);
        assert_eq!((r.whole, r.lost), (1, 1));
        // An iperf 2 sender stops mid-frame when its time is up: that last frame is not lost,
        // a frame cut before it still is.
        let mut cut = FrameStats::new(0.010, None).last_may_be_cut();
        cut.on_datagram(tag(1, 0, 2), 1.0, 1.001);
        cut.on_datagram(tag(2, 0, 1), 1.01, 1.011);
        cut.on_datagram(tag(3, 0, 3), 1.02, 1.021);
        let r = cut.finish(ClockBasis::SameHost);
        assert_eq!((r.whole, r.lost), (1, 1));
    }

    #[test]
    fn a_frame_whose_first_datagram_was_reordered_is_timed_from_it() {
        let mut f = FrameStats::new(0.010, None);
        f.on_datagram(tag(1, 1, 2), 5.001, 5.003);
        f.on_datagram(tag(1, 0, 2), 5.000, 5.004);
        let r = f.finish(ClockBasis::SameHost);
        assert_eq!(r.whole, 1);
        assert!((r.latency.unwrap().mean_ms - 4.0).abs() < 1e-6);
    }
}
