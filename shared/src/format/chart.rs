//! The throughput chart, drawn by us as an SVG string: one thin line per stream and a thick one
//! per direction's sum, bit/s per interval over time; and the comparison chart (like flent's),
//! one line per result with a legend row each. Pure (no DOM), shared by the browser's views and
//! the server's result pages, and unit-tested on the host.

use std::fmt::Write;

use crate::report::{IntervalReport, StreamRole};
use crate::units::format_rate;

use super::markup::escape;

/// The Wi-Fi link on the same time axis (PHY rate, retries, signal).
pub mod wifi;

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
                    let bps = crate::report::bits_per_second(s.bytes, r.seconds());
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

/// One result's line for a comparison chart: per interval, the total this end received, or what
/// it sent when it received nothing (a TX test's client).
pub fn total_line(label: impl Into<String>, intervals: &[IntervalReport]) -> Series {
    let received = intervals
        .iter()
        .any(|r| r.sum(StreamRole::Receiver).is_some());
    let role = if received {
        StreamRole::Receiver
    } else {
        StreamRole::Sender
    };
    Series {
        label: label.into(),
        points: intervals
            .iter()
            .filter_map(|r| Some((r.end.as_secs_f64(), r.sum(role)?.bits_per_second)))
            .collect(),
        sum: false,
    }
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
/// Stream colours: eight that differ on a light and a dark background.
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// Each line colour's label colour: on a light background (a darker shade where the line's
/// own colour reads under 4.5:1 on white) and on a dark one (the page's dark theme swaps them
/// with [`dark_legend_css`]). Labels are text, so they need text contrast; lines do not.
/// The ninth, last, is the gray of a line that is neither a stream nor a run (the idle phase).
pub const LEGEND_TEXT: [(&str, &str); 9] = [
    ("#1f77b4", "#478fc2"),
    ("#b55a0a", "#ff7f0e"),
    ("#258525", "#2ca02c"),
    ("#d62728", "#e15f60"),
    ("#8b61b2", "#a078c4"),
    ("#8c564b", "#a87f76"),
    ("#a85890", "#e377c2"),
    ("#0f7f8b", "#17becf"),
    ("#6b6b6b", "#a6a6a6"),
];

/// The gray line whose label is [`LEGEND_TEXT`]'s last.
pub(super) const GRAY_LINE: &str = "#7f7f7f";

/// The label colour (on a light background) of a line drawn in `line`, one of the stream
/// colours or [`GRAY_LINE`]; the dark theme swaps it for its [`LEGEND_TEXT`] partner.
pub(super) fn legend_colour(line: &str) -> &'static str {
    COLORS
        .iter()
        .position(|c| *c == line)
        .map_or(LEGEND_TEXT[8].0, |i| LEGEND_TEXT[i].0)
}

/// CSS for a dark theme: each legend label in its dark-background colour (the page's own
/// rules go inside its `prefers-color-scheme: dark` block).
pub fn dark_legend_css() -> String {
    LEGEND_TEXT
        .iter()
        .map(|(light, dark)| format!(".chart .legend[style*='{light}']{{fill:{dark}!important}}"))
        .collect()
}

/// A rate on an axis: `0` at the origin, else the pages' one spelling (`500 Mbit/s`).
pub(super) fn axis_rate(v: f64) -> String {
    if v == 0.0 { "0".into() } else { format_rate(v) }
}

/// A sum line's colour; the page's dark theme turns it light (`polyline[stroke="#111"]`).
const SUM_COLOR: &str = "#111";

/// Height of one legend row in a comparison chart.
const LEGEND_ROW: f64 = 14.0;

/// The chart as an `<svg>` element; `x_max` is the test's length in s when known.
pub fn svg(series: &[Series], x_max: Option<f64>) -> String {
    draw(series, &wifi::Overlay::default(), x_max, false)
}

/// The chart of a test with its Wi-Fi link on the same axes (`link`: PHY rate, retries, and a
/// signal panel under the plot); with an empty `link`, exactly [`svg`].
pub fn svg_with_link(series: &[Series], link: &wifi::Overlay, x_max: Option<f64>) -> String {
    draw(series, link, x_max, false)
}

/// The comparison chart: every line on the same axes (the longest test sets the time axis, the
/// highest rate the rate axis), each with its own colour and a legend row of its own below the
/// plot, so long labels (time and peer) never overlap.
pub fn overlay_svg(lines: &[Series]) -> String {
    draw(lines, &wifi::Overlay::default(), None, true)
}

/// A legend entry: a sample of its line (or a dot) and its label.
struct Key {
    /// The label.
    label: String,
    /// The line's colour.
    stroke: &'static str,
    /// The label's colour on a light background; `None` for the page's text colour (a sum).
    fill: Option<&'static str>,
    /// `""`, or the line's dash attribute.
    dash: &'static str,
    /// A dot instead of a line sample.
    dot: bool,
}

/// The dash of a sum RX line and of the far end's or the RX direction's Wi-Fi lines.
const DASH: &str = " stroke-dasharray='6 3'";

/// Writes `key` with its sample at `lx` on the row whose text baseline is `ly`.
fn write_key(s: &mut String, key: &Key, lx: f64, ly: f64) {
    let Key {
        label,
        stroke,
        dash,
        ..
    } = key;
    if key.dot {
        let _ = write!(
            s,
            "<circle cx='{:.1}' cy='{:.1}' r='2.5' fill='{stroke}'/>",
            lx + 7.0,
            ly - 3.5
        );
    } else {
        let _ = write!(
            s,
            "<line x1='{lx:.1}' y1='{:.1}' x2='{:.1}' y2='{:.1}' stroke='{stroke}' stroke-width='3'{dash}/>",
            ly - 3.5,
            lx + 14.0,
            ly - 3.5,
        );
    }
    // A colour set inline, which the page's `.legend` rule cannot override (a sum's label takes
    // the text colour from the page).
    let fill = match key.fill {
        None => " sum'".to_string(),
        Some(f) => format!("' style='fill:{f}'"),
    };
    let _ = write!(
        s,
        "<text x='{:.1}' y='{ly:.1}' class='legend{fill}>{}</text>",
        lx + 18.0,
        escape(label)
    );
}

/// A line through `points`, in plot coordinates.
fn polyline(s: &mut String, points: &[(f64, f64)], stroke: &str, width: f64, dash: &str) {
    let pts: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        s,
        "<polyline points='{}' fill='none' stroke='{stroke}' stroke-width='{width}'{dash}/>",
        pts.join(" ")
    );
}

/// Time ticks at a round step and the test's end, under a plot whose bottom is `bottom`.
fn time_ticks(s: &mut String, x: &dyn Fn(f64) -> f64, x_max: f64, bottom: f64) {
    let step = time_step(x_max);
    let mut t = 0.0;
    while t < x_max - step * 0.4 {
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='middle'>{}</text>",
            x(t),
            bottom + 14.0,
            trim_float(t)
        );
        t += step;
    }
    let _ = write!(
        s,
        "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='end'>{} s</text>",
        W - RIGHT,
        bottom + 14.0,
        trim_float(x_max)
    );
}

/// Where each legend key goes: (x, row). Keys flow left to right and wrap to a new row where
/// the width ends; an overlay gives each line a row of its own.
fn place_keys(keys: &[Key], one_per_row: bool) -> Vec<(f64, usize)> {
    let item_width = |key: &Key| 24.0 + 6.2 * key.label.chars().count() as f64;
    let mut places = Vec::with_capacity(keys.len());
    let (mut lx, mut row) = (LEFT, 0usize);
    for (i, key) in keys.iter().enumerate() {
        if one_per_row {
            row = i;
        } else if lx > LEFT && lx + item_width(key) > W - RIGHT {
            row += 1;
            lx = LEFT;
        }
        places.push((if one_per_row { LEFT } else { lx }, row));
        lx += item_width(key);
    }
    places
}

/// A series' legend key: a stream's colour (the `color`th), or a sum's.
fn series_key(line: &Series, color: usize) -> Key {
    let (stroke, fill) = if line.sum {
        (SUM_COLOR, None)
    } else {
        let i = (color - 1) % COLORS.len();
        (COLORS[i], Some(LEGEND_TEXT[i].0))
    };
    // The two directions' sums differ by their dash (both are the page's text colour).
    let dash = if line.sum && line.label.ends_with("RX") {
        DASH
    } else {
        ""
    };
    Key {
        label: line.label.clone(),
        stroke,
        fill,
        dash,
        dot: false,
    }
}

/// The throughput chart, with a test's Wi-Fi link on the same axes when `wifi` has any.
fn draw(series: &[Series], wifi: &wifi::Overlay, x_max: Option<f64>, legend_rows: bool) -> String {
    let last_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(wifi.last_t(), f64::max);
    let x_max = x_max.unwrap_or(0.0).max(last_x).max(1.0);
    let y_top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(wifi.phy_top(), f64::max);
    let y_max = nice_max(y_top);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / x_max * pw;
    let y = |v: f64| TOP + ph - v / y_max * ph;
    let mut color = 0;
    let mut keys: Vec<Key> = series
        .iter()
        .map(|line| {
            color += usize::from(!line.sum);
            series_key(line, color)
        })
        .collect();
    keys.extend(wifi.keys());
    let places = place_keys(&keys, legend_rows);
    let rows = places.last().map_or(1, |p| p.1 + 1);
    let height = H + LEGEND_ROW * (rows - 1) as f64;
    let panel = wifi.panel_height();
    let label = if panel > 0.0 {
        "throughput, Wi-Fi PHY rate and signal per interval"
    } else {
        "throughput per interval"
    };
    let total = height + panel;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {total}' role='img' \
         aria-label='{label}' class='chart'>"
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let yy = y(v);
        grid_line(&mut s, yy, (LEFT, W - RIGHT), &axis_rate(v));
    }
    time_ticks(&mut s, &x, x_max, TOP + ph);
    let key_y = |row: usize| H - 6.0 + LEGEND_ROW * row as f64;
    for (i, line) in series.iter().enumerate() {
        let width = if line.sum { 2.5 } else { 1.5 };
        let key = &keys[i];
        // From the left edge at the first value.
        let pts: Vec<(f64, f64)> = std::iter::once((0.0, line.points.first().map_or(0.0, |p| p.1)))
            .chain(line.points.iter().copied())
            .map(|(t, v)| (x(t), y(v)))
            .collect();
        polyline(&mut s, &pts, key.stroke, width, key.dash);
        write_key(&mut s, key, places[i].0, key_y(places[i].1));
    }
    wifi.draw(&mut s, &x, &y);
    for (key, (lx, row)) in keys.iter().zip(&places).skip(series.len()) {
        write_key(&mut s, key, *lx, key_y(*row));
    }
    wifi.draw_panel(&mut s, height, &x, x_max);
    s.push_str("</svg>");
    s
}

/// A round step for a time axis of `span` seconds: 1, 2 or 5 × 10^k, about six ticks.
pub(super) fn time_step(span: f64) -> f64 {
    let raw = (span / 6.0).max(1e-3);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A horizontal grid line at `y` from `x.0` to `x.1`, labelled left of the plot.
pub(super) fn grid_line(s: &mut String, y: f64, x: (f64, f64), label: &str) {
    let _ = write!(
        s,
        "<line x1='{:.1}' y1='{y:.1}' x2='{:.1}' y2='{y:.1}' class='grid'/>\
         <text x='{:.1}' y='{:.1}' class='tick' text-anchor='end'>{}</text>",
        x.0,
        x.1,
        x.0 - 4.0,
        y + 3.5,
        escape(label)
    );
}

/// One-way delays in bins as an `<svg>` bar chart: at most 60 bars from 0 to the last bin that
/// counted something, counts on the left axis, ms below.
pub fn histogram_svg(h: &crate::histogram::DelayHistogram, label: &str) -> String {
    let bars = h.grouped(60);
    let top = bars.iter().map(|b| b.2).max().unwrap_or(0).max(1) as f64;
    let y_max = nice_max(top);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let end_ms = bars.last().map_or(1.0, |b| b.1);
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {H}' role='img' \
         aria-label='{}' class='chart'>",
        escape(label)
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        grid_line(
            &mut s,
            TOP + ph - v / y_max * ph,
            (LEFT, W - RIGHT),
            &trim_float(v),
        );
    }
    for (start, end, count) in &bars {
        let height = *count as f64 / y_max * ph;
        let _ = write!(
            s,
            "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{height:.1}' fill='{}'><title>{} delays, {}–{} ms</title></rect>",
            LEFT + start / end_ms * pw,
            TOP + ph - height,
            ((end - start) / end_ms * pw - 0.5).max(0.5),
            COLORS[0],
            count,
            trim_ms(*start),
            trim_ms(*end)
        );
    }
    for (x, anchor, text) in [
        (LEFT, "start", "0".to_string()),
        (W - RIGHT, "end", format!("{} ms", trim_ms(end_ms))),
    ] {
        let _ = write!(
            s,
            "<text x='{x:.1}' y='{:.1}' class='tick' text-anchor='{anchor}'>{text}</text>",
            TOP + ph + 14.0
        );
    }
    let _ = write!(
        s,
        "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='middle'>{}</text></svg>",
        LEFT + pw / 2.0,
        TOP + ph + 28.0,
        escape(label)
    );
    s
}

/// A time in ms with the digits it needs (up to three decimals).
fn trim_ms(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn trim_float(v: f64) -> String {
    let t = format!("{v:.1}");
    t.strip_suffix(".0").map(str::to_string).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WCAG 2 relative luminance of `#rrggbb`.
    fn luminance(hex: &str) -> f64 {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
    }

    fn contrast(a: &str, b: &str) -> f64 {
        let (la, lb) = (luminance(a), luminance(b));
        (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
    }

    #[test]
    fn every_legend_colour_reads_at_4_5_to_1_in_both_themes() {
        // The cards the charts sit on: the page's light card and dark card (style.css, html.rs).
        for (light, dark) in LEGEND_TEXT {
            assert!(contrast(light, "#ffffff") >= 4.5, "{light} on white");
            assert!(contrast(dark, "#1e1e1e") >= 4.5, "{dark} on the dark card");
        }
        assert_eq!(legend_colour(GRAY_LINE), "#6b6b6b");
        assert_eq!(
            legend_colour("#ff7f0e"),
            "#b55a0a",
            "the orange line's text is darker"
        );
    }
    use crate::report::StreamInterval;
    use std::time::Duration;

    fn stream(id: u32, role: StreamRole, bytes: u64) -> StreamInterval {
        StreamInterval {
            id,
            role,
            bytes,
            packets: None,
            tcp: None,
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
            writes: None,
        }
    }

    fn interval(i: u64, streams: Vec<StreamInterval>) -> IntervalReport {
        IntervalReport {
            start: Duration::from_secs(i),
            end: Duration::from_secs(i + 1),
            omitted: false,
            streams,
            wifi: None,
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
    fn eight_streams_both_ways_get_their_colours_two_told_apart_sums_and_a_legend_that_fits() {
        // Four streams each way (bidir -P 4): #1–#8, sum TX, sum RX.
        let intervals: Vec<IntervalReport> = (0..10)
            .map(|i| {
                interval(
                    i,
                    (1..=8)
                        .map(|id| {
                            let role = if id <= 4 {
                                StreamRole::Sender
                            } else {
                                StreamRole::Receiver
                            };
                            stream(id, role, 1_000_000)
                        })
                        .collect(),
                )
            })
            .collect();
        let svg = svg(&series(&intervals), Some(10.0));
        for (c, (text, _)) in COLORS.iter().zip(LEGEND_TEXT) {
            assert!(svg.contains(&format!("stroke='{c}'")), "{c} in {svg}");
            assert!(
                svg.contains(&format!("style='fill:{text}'")),
                "{text} in {svg}"
            );
        }
        // The sums: one solid, one dashed, labelled in the page's text colour.
        assert_eq!(svg.matches("class='legend sum'").count(), 2);
        assert_eq!(
            svg.matches("stroke-dasharray='6 3'").count(),
            2,
            "line and legend"
        );
        assert!(svg.contains(">sum TX<") && svg.contains(">sum RX<"));
        // Every legend label starts inside the width; the frame grows a row for the wrap.
        let xs: Vec<f64> = svg
            .split("<text x='")
            .skip(1)
            .filter(|t| t.contains("class='legend"))
            .filter_map(|t| t.split('\'').next()?.parse().ok())
            .collect();
        assert_eq!(xs.len(), 10);
        assert!(xs.iter().all(|x| *x < W - RIGHT - 20.0), "{xs:?}");
        assert!(
            svg.contains(&format!("viewBox='0 0 {W} {}'", H + LEGEND_ROW)),
            "{svg}"
        );
        // Time ticks every 2 s, not only at 0 and the end.
        for t in [">2<", ">4<", ">6<", ">8<", ">10 s<"] {
            assert!(svg.contains(t), "{t} in {svg}");
        }
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
        assert!(
            svg.contains(">10.0 Mbit/s<") && svg.contains(">0<"),
            "{svg}"
        );
        assert!(svg.contains(">4 s<"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        // No data: an empty frame, no NaN.
        let empty = super::svg(&[], None);
        assert!(!empty.contains("NaN") && empty.contains("</svg>"));
    }

    #[test]
    fn a_total_line_sums_what_this_end_received_else_what_it_sent() {
        let rx: Vec<IntervalReport> = (0..2)
            .map(|i| {
                interval(
                    i,
                    vec![
                        stream(1, StreamRole::Receiver, 1_000_000),
                        stream(2, StreamRole::Receiver, 250_000),
                        stream(3, StreamRole::Sender, 5_000_000),
                    ],
                )
            })
            .collect();
        let line = total_line("a", &rx);
        assert_eq!(line.points, vec![(1.0, 10e6), (2.0, 10e6)]);
        assert!(!line.sum && line.label == "a");
        let tx = vec![interval(0, vec![stream(1, StreamRole::Sender, 125_000)])];
        assert_eq!(total_line("b", &tx).points, vec![(1.0, 1e6)]);
        assert!(total_line("c", &[]).points.is_empty());
    }

    #[test]
    fn an_overlay_shares_the_axes_and_gives_each_result_a_colour_and_a_legend_row() {
        let fast: Vec<IntervalReport> = (0..4)
            .map(|i| interval(i, vec![stream(1, StreamRole::Sender, 2_500_000)]))
            .collect();
        let slow: Vec<IntervalReport> = (0..2)
            .map(|i| interval(i, vec![stream(1, StreamRole::Sender, 625_000)]))
            .collect();
        let lines = [
            total_line("10:00 pc <b>", &fast),
            total_line("10:05 dut", &slow),
        ];
        let svg = overlay_svg(&lines);
        // One taller frame: a legend row per line.
        assert!(
            svg.contains(&format!("viewBox='0 0 {W} {}'", H + LEGEND_ROW)),
            "{svg}"
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(&format!("stroke='{}'", COLORS[0])));
        assert!(svg.contains(&format!("stroke='{}'", COLORS[1])));
        // 20 Mbit/s sets the rate axis; the 4 s test sets the time axis.
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        assert!(
            svg.contains(&format!("{:.1},{:.1}", LEFT + pw, TOP)),
            "{svg}"
        );
        assert!(
            svg.contains(&format!("{:.1},{:.1}", LEFT + pw / 2.0, TOP + ph * 0.75)),
            "{svg}"
        );
        assert!(svg.contains(">4 s<"));
        // Labels escaped, one per row.
        assert!(
            svg.contains(&format!(
                "y='{:.1}' class='legend' style='fill:{}'>10:00 pc &lt;b&gt;<",
                H - 6.0,
                LEGEND_TEXT[0].0
            )),
            "{svg}"
        );
        assert!(
            svg.contains(&format!(
                "y='{:.1}' class='legend' style='fill:{}'>10:05 dut<",
                H - 6.0 + LEGEND_ROW,
                LEGEND_TEXT[1].0
            )),
            "{svg}"
        );
        let empty = overlay_svg(&[]);
        assert!(!empty.contains("NaN") && empty.contains(&format!("viewBox='0 0 {W} {H}'")));
    }
}
