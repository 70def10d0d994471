//! A packet-size sweep as text (one row per size with throughput and packets per second: the
//! classic CCID rate-limiter table) and as an SVG chart of the same two figures against size.
//! Only lays out the figures of [`crate::sweep::SweepResult`].

use std::fmt::Write;

use crate::dccp::service_name;
use crate::sweep::SweepResult;
use crate::units::format_rate;

use super::chart::nice_max;

/// The sweep's title line: `Packet-size sweep: DCCP CCID 3 (service PERF), unlimited, 2.0 s per
/// size`.
pub fn title(result: &SweepResult, service: Option<u32>) -> String {
    let mut title = format!("Packet-size sweep: {}", result.protocol.upper_name());
    if let Some(ccid) = result.ccid {
        title += &format!(" CCID {ccid}");
    }
    if let Some(code) = service {
        title += &format!(" (service {})", service_name(code));
    }
    // An unpaced sweep (no rate, or a rate of 0: as fast as it goes) says so.
    let rate = result
        .bitrate
        .filter(|b| *b > 0)
        .map_or("not paced".to_string(), |b| format_rate(b as f64));
    title += &format!(", {rate}, {:.1} s per size", result.seconds_per_size);
    title
}

/// The table, with a title line naming the transport, CCID, rate and time per size.
pub fn text(result: &SweepResult, service: Option<u32>) -> String {
    let mut out = vec![
        title(result, service),
        "    Size       Throughput      Packets/s    Lost/Total".to_string(),
    ];
    for p in &result.points {
        let row = match &p.error {
            Some(e) => format!("{:>6} B   failed: {e}", p.len),
            None => {
                let total = p.lost + p.packets;
                format!(
                    "{:>6} B  {:>15}  {:>12.0}    {}/{} ({:.2}%)",
                    p.len,
                    format_rate(p.bits_per_second),
                    p.packets_per_second,
                    p.lost,
                    total,
                    p.lost_percent
                )
            }
        };
        out.push(row);
    }
    out.join("\n") + "\n"
}

const W: f64 = 360.0;
const PANEL_H: f64 = 130.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 22.0;

/// Two stacked panels, throughput and packets per second, with one evenly spaced mark per size
/// (sizes usually double, so even spacing reads like a log axis). Failed sizes are left out of
/// the lines but keep their place on the axis.
pub fn svg(result: &SweepResult) -> String {
    let height = 2.0 * PANEL_H;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='throughput and packets per second by packet size' class='chart sweep-chart'>"
    );
    let rate = super::chart::axis_rate;
    let count = |v: f64| format!("{}/s", crate::units::group_rounded(v));
    let bps: Vec<Option<f64>> = result
        .points
        .iter()
        .map(|p| p.error.is_none().then_some(p.bits_per_second))
        .collect();
    let pps: Vec<Option<f64>> = result
        .points
        .iter()
        .map(|p| p.error.is_none().then_some(p.packets_per_second))
        .collect();
    let sizes: Vec<u32> = result.points.iter().map(|p| p.len).collect();
    panel(&mut s, 0.0, "Throughput", &sizes, &bps, &rate, "#1f77b4");
    panel(
        &mut s,
        PANEL_H,
        "Packets/s",
        &sizes,
        &pps,
        &count,
        "#ff7f0e",
    );
    s.push_str("</svg>");
    s
}

fn panel(
    s: &mut String,
    top: f64,
    title: &str,
    sizes: &[u32],
    values: &[Option<f64>],
    label: &dyn Fn(f64) -> String,
    color: &str,
) {
    let y_max = nice_max(values.iter().flatten().copied().fold(0.0, f64::max));
    let (pw, ph) = (W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM);
    let n = sizes.len().max(1) as f64;
    let x = |i: usize| LEFT + (i as f64 + 0.5) / n * pw;
    let y = |v: f64| top + TOP + ph - v / y_max * ph;
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='legend' fill='{color}'>{title}</text>",
        top + TOP - 6.0
    );
    for i in 0..=2 {
        let v = y_max * f64::from(i) / 2.0;
        super::chart::grid_line(s, y(v), (LEFT, W - RIGHT), &label(v));
    }
    // Size labels: all of them when they fit, else every second or more.
    let step = sizes.len().div_ceil(10).max(1);
    for (i, size) in sizes.iter().enumerate().filter(|(i, _)| i % step == 0) {
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='middle'>{size}</text>",
            x(i),
            top + TOP + ph + 13.0
        );
    }
    let mut line = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => {
                line.push(format!("{:.1},{:.1}", x(i), y(*v)));
                let _ = write!(
                    s,
                    "<circle cx='{:.1}' cy='{:.1}' r='2.5' fill='{color}'/>",
                    x(i),
                    y(*v)
                );
            }
            None => {
                let _ = write!(
                    s,
                    "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='middle' fill='#d62728'>×</text>",
                    x(i),
                    y(0.0) - 2.0
                );
            }
        }
    }
    if line.len() > 1 {
        let _ = write!(
            s,
            "<polyline points='{}' fill='none' stroke='{color}' stroke-width='1.5'/>",
            line.join(" ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Protocol;
    use crate::sweep::SweepPoint;

    #[test]
    fn one_row_per_size() {
        let result = SweepResult {
            protocol: Protocol::Dccp,
            ccid: Some(3),
            bitrate: None,
            seconds_per_size: 2.0,
            points: vec![
                SweepPoint {
                    len: 16,
                    bytes: 160_000,
                    seconds: 2.0,
                    bits_per_second: 640_000.0,
                    packets: 10_000,
                    packets_per_second: 5000.0,
                    lost: 0,
                    lost_percent: 0.0,
                    error: None,
                },
                SweepPoint::failed(1420, "CCID 3 is not available"),
            ],
        };
        let t = text(&result, Some(crate::dccp::DEFAULT_SERVICE));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "Packet-size sweep: DCCP CCID 3 (service PERF), not paced, 2.0 s per size"
        );
        assert_eq!(
            lines[2],
            "    16 B       640 kbit/s          5000    0/10000 (0.00%)"
        );
        assert!(lines[3].contains("1420 B   failed: CCID 3"), "{t}");
        let chart = svg(&result);
        assert!(chart.starts_with("<svg") && chart.ends_with("</svg>"));
        assert_eq!(
            chart.matches("<circle").count(),
            2,
            "one mark per panel for 16 B"
        );
        assert_eq!(
            chart.matches('×').count(),
            2,
            "the failed size is marked in each panel"
        );
        assert!(
            chart.contains(">1420<") && chart.contains(">16<"),
            "{chart}"
        );
        assert!(
            chart.contains("5000/s"),
            "packets axis reaches 5000/s: {chart}"
        );
    }
}
