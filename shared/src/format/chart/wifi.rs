//! The Wi-Fi link on a test's throughput chart (`chart::wifi`), on the same time axis: the PHY
//! rate each way the data went, on the throughput axis (the sender's tx rate, else the
//! receiver's rx rate), so goodput below it reads at a glance; a tick at each interval whose
//! radio retried (its height the retries' share of the packets sent, a dot where frames
//! failed); and each radio's signal in a small dBm panel under the plot. Positions only: every
//! figure is the intervals' `LinkSample`s as the peers read them.

use std::fmt::Write;

use super::{
    BOTTOM, COLORS, DASH, GRAY_LINE, H, Key, LEFT, RIGHT, TOP, W, grid_line, legend_colour,
    polyline, time_ticks, write_key,
};
use crate::report::{IntervalReport, Sending, TestResult};
use crate::wifi::{LinkSample, Rate};

/// Retry ticks and failure dots: the red of the stream colours.
const RETRY_COLOUR: &str = COLORS[3];
/// Signal lines: this peer's radio, the other peer's.
const SIGNAL_COLOURS: [&str; 2] = [COLORS[4], COLORS[7]];
/// The signal panel: the gap above it, its plot's height, and below the plot its time ticks
/// and its legend row (as under the throughput plot).
const PANEL_GAP: f64 = 8.0;
const PANEL_PLOT: f64 = 60.0;

/// One line of the overlay: (end of interval in s, value) per interval with a reading.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    label: &'static str,
    points: Vec<(f64, f64)>,
    /// The other peer's radio, or the RX direction: dashed.
    dashed: bool,
}

/// An interval in which a sending radio retried or gave frames up.
#[derive(Debug, Clone, PartialEq)]
struct Mark {
    /// End of the interval, s.
    t: f64,
    /// The other peer's radio.
    far: bool,
    retries: u64,
    /// Retries per packet sent, %.
    share: Option<f64>,
    failed: u64,
}

/// What a test's chart draws of its Wi-Fi link; empty where no radio carried the test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    /// The PHY rate each way the data went, bit/s.
    phy: Vec<Line>,
    /// Each radio's signal, dBm: this peer's first.
    signal: Vec<Line>,
    /// The retries of the radios the PHY lines come from.
    marks: Vec<Mark>,
}

/// (end of interval, PHY rate in bit/s) of each interval of `side` whose `rate` gives one.
fn rate_points(side: &[IntervalReport], rate: fn(&LinkSample) -> Option<Rate>) -> Vec<(f64, f64)> {
    side.iter()
        .filter_map(|r| {
            let mbps = rate(r.wifi.as_deref()?)?.mbps?;
            Some((r.end.as_secs_f64(), mbps * 1e6))
        })
        .collect()
}

/// The intervals of `side` in which its radio retried or failed.
fn marks(side: &[IntervalReport], far: bool) -> impl Iterator<Item = Mark> + '_ {
    side.iter().filter_map(move |r| {
        let w = r.wifi.as_deref()?;
        let (retries, failed) = (w.tx_retries.unwrap_or(0), w.tx_failed.unwrap_or(0));
        (retries > 0 || failed > 0).then_some(Mark {
            t: r.end.as_secs_f64(),
            far,
            retries,
            share: w.retries_percent,
            failed,
        })
    })
}

/// A line's points in plot coordinates, from the left edge at its first value (as the
/// throughput lines are drawn).
fn plotted(
    points: &[(f64, f64)],
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) -> Vec<(f64, f64)> {
    points
        .first()
        .map(|p| (0.0, p.1))
        .into_iter()
        .chain(points.iter().copied())
        .map(|(t, v)| (x(t), y(v)))
        .collect()
}

impl Overlay {
    /// A finished or kept test's, seen from the peer that measured or kept it (`local`).
    pub fn of_result(result: &TestResult) -> Overlay {
        let far = result.remote.as_ref().map_or(&[][..], |r| &r.intervals[..]);
        Overlay::build(&result.local.intervals, far, result.sending_here())
    }

    /// From this peer's and the other peer's intervals (so far), `sending` saying which way the
    /// data goes seen from this peer.
    pub fn build(here: &[IntervalReport], far: &[IntervalReport], sending: Sending) -> Overlay {
        let mut o = Overlay::default();
        let both = sending == Sending::Both;
        let tx = matches!(sending, Sending::ThisPeer | Sending::Both);
        let rx = matches!(sending, Sending::OtherPeer | Sending::Both);
        // (data flows this way, label both ways, sender's intervals, receiver's, sender is far)
        for (flows, label, sender, receiver, sender_far) in [
            (tx, "PHY TX", here, far, false),
            (rx, "PHY RX", far, here, true),
        ] {
            if !flows {
                continue;
            }
            let (points, from_far) = match rate_points(sender, |s| s.tx_rate) {
                p if p.is_empty() => (rate_points(receiver, |s| s.rx_rate), !sender_far),
                p => (p, sender_far),
            };
            if points.is_empty() {
                continue;
            }
            o.phy.push(Line {
                label: if both { label } else { "PHY rate" },
                points,
                dashed: sender_far,
            });
            if !o.marks.iter().any(|m| m.far == from_far) {
                let side = if from_far { far } else { here };
                o.marks.extend(marks(side, from_far));
            }
        }
        for (side, label, far) in [
            (here, "signal this peer", false),
            (far, "signal other peer", true),
        ] {
            let points: Vec<(f64, f64)> = side
                .iter()
                .filter_map(|r| {
                    let dbm = r.wifi.as_deref()?.signal_dbm?;
                    Some((r.end.as_secs_f64(), f64::from(dbm)))
                })
                .collect();
            if !points.is_empty() {
                o.signal.push(Line {
                    label,
                    points,
                    dashed: far,
                });
            }
        }
        o
    }

    /// Whether there is nothing to draw.
    pub fn is_empty(&self) -> bool {
        self.phy.is_empty() && self.signal.is_empty() && self.marks.is_empty()
    }

    /// The last time with a figure, s (0 without any).
    pub(super) fn last_t(&self) -> f64 {
        let lines = self.phy.iter().chain(&self.signal);
        lines
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(self.marks.iter().map(|m| m.t))
            .fold(0.0, f64::max)
    }

    /// The highest PHY rate, bit/s (0 without any).
    pub(super) fn phy_top(&self) -> f64 {
        self.phy
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max)
    }

    /// The legend keys of what goes on the throughput plot: PHY lines, retries, failures.
    pub(super) fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .phy
            .iter()
            .map(|l| Key {
                label: l.label.into(),
                stroke: GRAY_LINE,
                fill: Some(legend_colour(GRAY_LINE)),
                dash: if l.dashed { DASH } else { "" },
                dot: false,
            })
            .collect();
        let retry_key = |label: &str, dot| Key {
            label: label.into(),
            stroke: RETRY_COLOUR,
            fill: Some(legend_colour(RETRY_COLOUR)),
            dash: "",
            dot,
        };
        if self.marks.iter().any(|m| m.retries > 0) {
            keys.push(retry_key("retries %", false));
        }
        if self.marks.iter().any(|m| m.failed > 0) {
            keys.push(retry_key("failed", true));
        }
        keys
    }

    /// Draws the PHY lines and the retry marks on the throughput plot (`x`, `y`: its axes).
    pub(super) fn draw(&self, s: &mut String, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
        for l in &self.phy {
            let dash = if l.dashed { DASH } else { "" };
            polyline(s, &plotted(&l.points, x, y), GRAY_LINE, 2.0, dash);
        }
        let (base, ph) = (TOP + (H - TOP - BOTTOM), H - TOP - BOTTOM);
        for m in &self.marks {
            // This peer's tick left of the interval's end, the other peer's right of it.
            let left = if m.far { x(m.t) } else { x(m.t) - 3.0 };
            let who = if m.far { "other peer" } else { "this peer" };
            let share = m
                .share
                .map_or(String::new(), |p| format!(" ({p:.1} % of packets)"));
            let h = if m.retries == 0 {
                0.0
            } else {
                (m.share.unwrap_or(0.0).min(100.0) / 100.0 * ph).max(1.5)
            };
            let _ = write!(
                s,
                "<rect x='{left:.1}' y='{:.1}' width='3' height='{h:.1}' fill='{RETRY_COLOUR}' \
                 fill-opacity='.75'><title>{who}: {} retries{share}, {} failed</title></rect>",
                base - h,
                m.retries,
                m.failed
            );
            if m.failed > 0 {
                let _ = write!(
                    s,
                    "<circle cx='{:.1}' cy='{:.1}' r='2.5' fill='{RETRY_COLOUR}'/>",
                    left + 1.5,
                    base - h - 4.0
                );
            }
        }
    }

    /// The signal panel's height (0 when no radio gave a signal).
    pub(super) fn panel_height(&self) -> f64 {
        if self.signal.is_empty() {
            0.0
        } else {
            PANEL_GAP + PANEL_PLOT + BOTTOM
        }
    }

    /// The signal panel under the chart, from `top`: dBm on its own axis, the chart's time
    /// axis (`x`, up to `x_max`), a legend row.
    pub(super) fn draw_panel(&self, s: &mut String, top: f64, x: &dyn Fn(f64) -> f64, x_max: f64) {
        let values = self
            .signal
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1));
        let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if !min.is_finite() {
            return;
        }
        // Round tens with room above and below the lines, at least 20 dB.
        let hi = ((max + 5.0) / 10.0).ceil() * 10.0;
        let lo = (((min - 5.0) / 10.0).floor() * 10.0).min(hi - 20.0);
        let bottom = top + PANEL_GAP + PANEL_PLOT;
        let y = |v: f64| bottom - (v - lo) / (hi - lo) * PANEL_PLOT;
        let step = if hi - lo > 30.0 { 20.0 } else { 10.0 };
        // Whole steps from the top down, so both ends are labelled.
        let lo = hi - ((hi - lo) / step).ceil() * step;
        let mut v = lo;
        while v <= hi + 0.5 {
            grid_line(s, y(v), (LEFT, W - RIGHT), &format!("{v:.0} dBm"));
            v += step;
        }
        let mut lx = LEFT;
        for l in &self.signal {
            let colour = SIGNAL_COLOURS[usize::from(l.dashed)];
            let dash = if l.dashed { DASH } else { "" };
            polyline(s, &plotted(&l.points, x, &y), colour, 1.5, dash);
            let key = Key {
                label: l.label.into(),
                stroke: colour,
                fill: Some(legend_colour(colour)),
                dash,
                dot: false,
            };
            write_key(s, &key, lx, bottom + BOTTOM - 6.0);
            lx += 24.0 + 6.2 * l.label.len() as f64;
        }
        time_ticks(s, x, x_max, bottom);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::format::chart::{self, Series};
    use crate::wifi::RateKind;

    /// One interval of a VHT station at `signal` dBm sending at `mbps`, with `retries` and
    /// `failed` among 1000 packets.
    pub(crate) fn sample(signal: i8, mbps: f64, retries: u64, failed: u64) -> LinkSample {
        let mut s: LinkSample = serde_json::from_value(serde_json::json!({
            "iface": "wlan0", "mode": "station", "station": "02:00:00:00:00:01",
            "tx_rate": { "kind": "vht", "mcs": 9, "nss": 2, "width_mhz": 80, "mbps": mbps },
            "tx_packets": 1000, "tx_retries": retries, "tx_failed": failed
        }))
        .expect("a sample");
        s.signal_dbm = Some(signal);
        s.retries_percent = LinkSample::retries_share(Some(retries), Some(1000));
        s
    }

    fn interval(i: u64, wifi: Option<LinkSample>) -> IntervalReport {
        IntervalReport {
            start: Duration::from_secs(i),
            end: Duration::from_secs(i + 1),
            omitted: false,
            streams: Vec::new(),
            wifi: wifi.map(Box::new),
        }
    }

    fn line(label: &str) -> Series {
        Series {
            label: label.into(),
            points: vec![(1.0, 100e6), (2.0, 120e6)],
            sum: false,
        }
    }

    #[test]
    fn the_senders_phy_rate_shares_the_throughput_axis_and_its_retries_are_ticks() {
        let here = [
            interval(0, Some(sample(-40, 400.0, 0, 0))),
            interval(1, Some(sample(-60, 866.7, 250, 2))),
        ];
        let o = Overlay::build(&here, &[], Sending::ThisPeer);
        assert_eq!(o.phy.len(), 1);
        assert_eq!(o.phy[0].points, vec![(1.0, 400e6), (2.0, 866.7e6)]);
        assert_eq!(o.marks.len(), 1, "only the interval that retried");
        let svg = chart::draw(&[line("#1")], &o, Some(2.0), false);
        // 866.7 Mbit/s sets the rate axis: 1 Gbit/s at the top, not 200 Mbit/s.
        assert!(svg.contains(">1.00 Gbit/s<"), "{svg}");
        assert!(svg.contains(">PHY rate<") && svg.contains(">retries %<"));
        assert!(svg.contains(">failed<") && svg.contains("<circle"), "{svg}");
        // 25 % retries: a quarter of the plot's height.
        let ph = H - TOP - BOTTOM;
        assert!(svg.contains(&format!("height='{:.1}'", ph / 4.0)), "{svg}");
        assert!(svg.contains("this peer: 250 retries (25.0 % of packets), 2 failed"));
        // The signal panel under it, in dBm, on the same time axis.
        assert!(
            svg.contains(">signal this peer<") && svg.contains(">-70 dBm<"),
            "{svg}"
        );
        let height = H + o.panel_height();
        assert!(
            svg.contains(&format!("viewBox='0 0 {W} {height}'")),
            "{svg}"
        );
        assert_eq!(svg.matches(">2 s<").count(), 2, "both time axes end at 2 s");
    }

    #[test]
    fn a_receiving_radio_gives_the_phy_rate_when_the_sender_has_none() {
        let mut s = sample(-50, 0.0, 3, 0);
        s.tx_rate = None;
        s.rx_rate = Some(Rate {
            kind: RateKind::He,
            mcs: Some(11),
            nss: Some(2),
            width_mhz: Some(80),
            gi: None,
            mbps: Some(1201.0),
        });
        let far = [interval(0, Some(s))];
        let o = Overlay::build(&[interval(0, None)], &far, Sending::ThisPeer);
        assert_eq!(o.phy[0].points, vec![(1.0, 1201e6)]);
        assert!(o.marks.iter().all(|m| m.far), "the radio it came from");
        assert_eq!(o.signal[0].label, "signal other peer");
        // Both ways: one line each, told apart by name and dash.
        let here = [interval(0, Some(sample(-40, 400.0, 0, 0)))];
        let far = [interval(0, Some(sample(-55, 300.0, 0, 0)))];
        let both = Overlay::build(&here, &far, Sending::Both);
        let labels: Vec<_> = both.phy.iter().map(|l| (l.label, l.dashed)).collect();
        assert_eq!(labels, vec![("PHY TX", false), ("PHY RX", true)]);
    }

    #[test]
    fn without_a_radio_the_chart_is_drawn_as_before() {
        let plain = [interval(0, None), interval(1, None)];
        let o = Overlay::build(&plain, &plain, Sending::Both);
        assert!(o.is_empty() && o.panel_height() == 0.0);
        let lines = [line("#1"), line("#2")];
        assert_eq!(
            chart::draw(&lines, &o, Some(3.0), false),
            chart::svg(&lines, Some(3.0))
        );
    }
}
