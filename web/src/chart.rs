//! The throughput chart, drawn by us as an SVG string: one thin line per stream and a thick one
//! per direction's sum, bit/s per interval over time. DOM-free (the view sets it as markup), so the
//! geometry is unit-tested on the host.

use std::fmt::Write;

use perfpeer_shared::report::{IntervalReport, StreamRole};
use perfpeer_shared::units::format_bits;

use crate::present::escape;

/// One line of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text (`#1`, `sum TX`).
    pub label: String,
    /// (end of interval in s, bit/s) per interval.
    pub points: Vec<(f64, f64)>,
    /// A sum line (drawn thick).
    pub sum: bool,
}

/// Series from one end's intervals: each stream, then each role's sum when it has several
/// streams (with one stream the stream is the sum). Roles are named as the client sees them.
pub fn series(intervals: &[IntervalReport]) -> Vec<Series> {
    let mut ids: Vec<(u32, StreamRole)> = intervals
        .iter()
        .flat_map(|r| r.streams.iter().map(|s| (s.id, s.role)))
        .collect();
    ids.sort_unstable_by_key(|(id, _)| *id);
    ids.dedup();
    let mut out: Vec<Series> = ids
        .iter()
        .map(|&(id, _)| Series {
            label: format!("#{id}"),
            points: intervals
                .iter()
                .filter_map(|r| {
                    let s = r.streams.iter().find(|s| s.id == id)?;
                    let bps = perfpeer_shared::report::bits_per_second(s.bytes, r.seconds());
                    Some((r.end.as_secs_f64(), bps))
                })
                .collect(),
            sum: false,
        })
        .collect();
    for (role, name) in [(StreamRole::Sender, "TX"), (StreamRole::Receiver, "RX")] {
        if ids.iter().filter(|(_, r)| *r == role).count() < 2 {
            continue;
        }
        out.push(Series {
            label: format!("sum {name}"),
            points: intervals
                .iter()
                .filter_map(|r| Some((r.end.as_secs_f64(), r.sum(role)?.bits_per_second)))
                .collect(),
            sum: true,
        });
    }
    out
}

/// A round axis maximum at or above `v`: 1, 2 or 5 × 10^k.
pub fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|m| *m >= v * 0.999_999)
        .unwrap_or(10.0 * magnitude)
}

const W: f64 = 360.0;
const H: f64 = 200.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 36.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

/// The chart as an `<svg>` element; `x_max` is the test's length in s when known.
pub fn svg(series: &[Series], x_max: Option<f64>) -> String {
    let last_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x_max = x_max.unwrap_or(0.0).max(last_x).max(1.0);
    let y_top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = nice_max(y_top);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / x_max * pw;
    let y = |v: f64| TOP + ph - v / y_max * ph;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {H}' role='img' \
         aria-label='throughput per interval' class='chart'>"
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let yy = y(v);
        let _ = write!(
            s,
            "<line x1='{LEFT}' y1='{yy:.1}' x2='{:.1}' y2='{yy:.1}' class='grid'/>\
             <text x='{:.1}' y='{:.1}' class='tick' text-anchor='end'>{}</text>",
            W - RIGHT,
            LEFT - 4.0,
            yy + 3.5,
            escape(&format!("{}/s", format_bits(v).trim()))
        );
    }
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='tick'>0</text>\
         <text x='{:.1}' y='{:.1}' class='tick' text-anchor='end'>{} s</text>",
        TOP + ph + 14.0,
        W - RIGHT,
        TOP + ph + 14.0,
        trim_float(x_max)
    );
    let mut legend_x = LEFT;
    let mut color = 0;
    for line in series {
        let stroke = if line.sum {
            "#111".to_string()
        } else {
            color += 1;
            COLORS[(color - 1) % COLORS.len()].to_string()
        };
        let width = if line.sum { 2.5 } else { 1.5 };
        let pts: Vec<String> = std::iter::once((0.0, line.points.first().map_or(0.0, |p| p.1)))
            .chain(line.points.iter().copied())
            .map(|(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect();
        let _ = write!(
            s,
            "<polyline points='{}' fill='none' stroke='{stroke}' stroke-width='{width}'/>\
             <text x='{legend_x:.1}' y='{:.1}' class='legend' fill='{stroke}'>{}</text>",
            pts.join(" "),
            H - 6.0,
            escape(&line.label)
        );
        legend_x += 12.0 + 7.0 * line.label.chars().count() as f64;
    }
    s.push_str("</svg>");
    s
}

fn trim_float(v: f64) -> String {
    let t = format!("{v:.1}");
    t.strip_suffix(".0").map(str::to_string).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfpeer_shared::report::StreamInterval;
    use std::time::Duration;

    fn stream(id: u32, role: StreamRole, bytes: u64) -> StreamInterval {
        StreamInterval {
            id,
            role,
            bytes,
            packets: None,
            tcp: None,
            udp_rx: None,
        }
    }

    fn interval(i: u64, streams: Vec<StreamInterval>) -> IntervalReport {
        IntervalReport {
            start: Duration::from_secs(i),
            end: Duration::from_secs(i + 1),
            omitted: false,
            streams,
        }
    }

    #[test]
    fn one_line_per_stream_and_a_sum_for_several() {
        let intervals: Vec<IntervalReport> = (0..3)
            .map(|i| {
                interval(
                    i,
                    vec![
                        stream(1, StreamRole::Sender, 1_000_000),
                        stream(2, StreamRole::Sender, 500_000),
                    ],
                )
            })
            .collect();
        let s = series(&intervals);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].points, vec![(1.0, 8e6), (2.0, 8e6), (3.0, 8e6)]);
        assert_eq!(s[1].points[0], (1.0, 4e6));
        assert!(s[2].sum && s[2].label == "sum TX");
        assert_eq!(s[2].points[2], (3.0, 12e6));
        // One stream: no separate sum line.
        let single = vec![interval(0, vec![stream(1, StreamRole::Receiver, 10)])];
        assert_eq!(series(&single).len(), 1);
    }

    #[test]
    fn axis_maxima_are_round() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
        assert_eq!(nice_max(7.3e6), 1e7);
        assert_eq!(nice_max(1.2e9), 2e9);
        assert_eq!(nice_max(4.0e3), 5e3);
        assert_eq!(nice_max(1e6), 1e6);
    }

    #[test]
    fn svg_places_points_inside_the_plot() {
        let intervals: Vec<IntervalReport> = (0..2)
            .map(|i| interval(i, vec![stream(1, StreamRole::Sender, 1_250_000)]))
            .collect();
        let svg = svg(&series(&intervals), Some(4.0));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        // 10 Mbit/s against a 10 Mbit/s axis: the line runs along the top of the plot.
        assert!(
            svg.contains(&format!(
                "{:.1},{:.1}",
                LEFT + 1.0 / 4.0 * (W - LEFT - RIGHT),
                TOP
            )),
            "{svg}"
        );
        assert!(svg.contains("10.0 Mbits/s"), "{svg}");
        assert!(svg.contains(">4 s<"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        // No data: an empty frame, no NaN.
        let empty = super::svg(&[], None);
        assert!(!empty.contains("NaN") && empty.contains("</svg>"));
    }
}
