//! A latency-under-load result as text: a header saying what the load and the probe were, one
//! row per phase (throughput each way, probe round trip min/p50/p90/p99/max, latency added over
//! idle, RPM, one-way delays above the idle minimum, probes lost each way, the load flows' own
//! RTT), and the notes a reader needs to read one-way figures right. Every figure comes from
//! [`LatencyResult`]; nothing is computed here but units.

use std::fmt::Write;

use crate::latency::{
    Baseline, LatencyResult, Percentiles, Phase, PhaseFigures, ProbePoint, ThroughputPoint,
};

use super::chart::nice_max;

fn mbits(bps: Option<f64>) -> String {
    bps.map_or_else(|| "-".into(), |b| format!("{:.1}", b / 1e6))
}

/// A delay in ms with the digits it needs: 0.06, 4.2, 187.
pub fn ms_text(v: f64) -> String {
    match v.abs() {
        a if a < 1.0 => format!("{v:.2}"),
        a if a < 100.0 => format!("{v:.1}"),
        _ => format!("{v:.0}"),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), ms_text)
}

fn p50_p99(p: Option<Percentiles>) -> String {
    p.map_or_else(
        || "-".into(),
        |p| format!("{}/{}", ms_text(p.p50), ms_text(p.p99)),
    )
}

/// The page title: `Latency under load: pc, +50.0 ms under upload (1154 RPM)`.
pub fn title(r: &LatencyResult) -> String {
    match r
        .worst_loaded()
        .and_then(|w| w.added_rtt.zip(w.rpm).map(|a| (w, a)))
    {
        Some((w, (added, rpm))) => format!(
            "Latency under load: {}, {added:+.1} ms under {} ({rpm:.0} RPM)",
            r.target,
            w.phase.name()
        ),
        None => format!("Latency under load: {}", r.target),
    }
}

/// The header: what ran, the load and the probe's own cost.
pub fn header(r: &LatencyResult) -> String {
    let s = &r.settings;
    let mut out = format!(
        "Latency under load to {}: {} TCP stream{} per direction ({}), phases idle {:.0} s, \
         then download, upload and both {:.0} s each",
        r.target,
        s.streams,
        if s.streams == 1 { "" } else { "s" },
        s.congestion.as_deref().map_or_else(
            || "the hosts' default congestion control".into(),
            |c| format!("congestion control {c}")
        ),
        s.idle_seconds,
        s.load_seconds,
    );
    if let Some(rate) = s.load_bits_per_second {
        let _ = write!(
            out,
            ", TCP paced at {:.1} Mbit/s per direction",
            rate as f64 / 1e6
        );
    }
    if let Some(udp) = s.udp_bits_per_second {
        let _ = write!(out, ", plus UDP at {:.1} Mbit/s", udp as f64 / 1e6);
    }
    let _ = write!(
        out,
        "\nProbe: UDP every {} ms, {} B, {:.1} kbit/s each way on the wire",
        s.probe_interval_ms,
        s.probe_bytes,
        s.probe_bits_per_second / 1e3
    );
    if let Some(tos) = s.probe_tos {
        let _ = write!(out, ", TOS 0x{tos:02x}");
    }
    out.push('\n');
    out
}

/// The column heads of [`phase_row`].
pub fn table_head() -> String {
    format!(
        "{:<9} {:>11} {:>9} {:>9} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} | {:>11} {:>11} | {:>9} | {:>11}\n",
        "phase",
        "time s",
        "down",
        "up",
        "RTT min",
        "p50",
        "p90",
        "p99",
        "max",
        "added",
        "RPM",
        "up p50/p99",
        "dn p50/p99",
        "lost u/d",
        "flow RTT"
    ) + &format!(
        "{:<9} {:>11} {:>9} {:>9} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} | {:>11} {:>11} | {:>9} | {:>11}\n",
        "",
        "",
        "Mbit/s",
        "Mbit/s",
        "ms",
        "ms",
        "ms",
        "ms",
        "ms",
        "ms",
        "",
        "ms",
        "ms",
        "of sent",
        "p50/p99 ms"
    )
}

/// One phase's row.
pub fn phase_row(f: &PhaseFigures) -> String {
    let rtt = f.rtt;
    let pick = |g: fn(&Percentiles) -> f64| ms(rtt.as_ref().map(g));
    let lost = if f.probes_lost == 0 {
        format!("0/{}", f.probes_sent)
    } else {
        format!("{}/{} of {}", f.lost_up, f.lost_down, f.probes_sent)
    };
    let mut row = format!(
        "{:<9} {:>11} {:>9} {:>9} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} | {:>11} {:>11} | {:>9} | {:>11}",
        f.phase.name(),
        format!("{:.1}-{:.1}", f.start, f.end),
        mbits(f.down_bits_per_second),
        mbits(f.up_bits_per_second),
        pick(|p| p.min),
        pick(|p| p.p50),
        pick(|p| p.p90),
        pick(|p| p.p99),
        pick(|p| p.max),
        f.added_rtt.map_or_else(
            || "-".into(),
            |a| {
                let t = ms_text(a);
                if a >= 0.0 { format!("+{t}") } else { t }
            }
        ),
        f.rpm.map_or_else(|| "-".into(), |r| format!("{r:.0}")),
        p50_p99(f.up_delay),
        p50_p99(f.down_delay),
        lost,
        p50_p99(f.flow_rtt),
    );
    if let Some(e) = &f.error {
        let _ = write!(row, "  ({e})");
    }
    row.push('\n');
    row
}

/// The whole result as text.
pub fn text(r: &LatencyResult) -> String {
    header(r) + &table(r)
}

/// The table and its notes, without the header (the CLI printed that when the run began).
pub fn table(r: &LatencyResult) -> String {
    let mut out = table_head();
    for f in &r.phases {
        out.push_str(&phase_row(f));
    }
    if let Some(worst) = r.worst_loaded()
        && let (Some(added), Some(rpm)) = (worst.added_rtt, worst.rpm)
    {
        let _ = writeln!(
            out,
            "Under load ({}): {} ms median round trip over idle; responsiveness {rpm:.0} RPM",
            worst.phase.name(),
            ms_text(added)
        );
    }
    out.push_str(match r.baseline {
        Baseline::IdleMinimum => {
            "One-way delays (up, dn) are above the idle phase's minimum: the peers' clocks are \
             not synchronised, so only changes from the idle baseline are measured; round trips \
             are exact.\n"
        }
        Baseline::TestMinimum => {
            "One-way delays (up, dn) are above the test's minimum (no probe was answered while \
             idle): only changes are measured; round trips are exact.\n"
        }
    });
    out.push_str(
        "RPM = 60000 / median probe RTT in ms (round trips per minute at that latency). \
         \"lost u/d\": probes lost on the way out / back.\n",
    );
    if let Some(e) = &r.error {
        let _ = writeln!(out, "(ended early: {e})");
    }
    out
}

/// A TCP test's own latency line, one per direction whose senders reported TCP_INFO:
/// `TCP RTT client → server: 0.04 / 0.12 / 1.50 ms (min / mean / max), the sender's TCP_INFO`.
pub fn flow_rtt_text(result: &crate::report::TestResult) -> String {
    let mut out = String::new();
    for flow in result.flows() {
        if let Some(rtt) = flow.sent.and_then(|t| t.tcp_rtt) {
            let _ = writeln!(
                out,
                "TCP RTT {}: {}, the sender's TCP_INFO",
                if flow.client_to_server {
                    "client → server"
                } else {
                    "server → client"
                },
                super::html::rtt_words(rtt)
            );
        }
    }
    out
}

/// A rate as a phone has room for it: `39.9 Gbit/s`, `19.2 Mbit/s`, `–`.
fn rate_text(bps: Option<f64>) -> String {
    match bps {
        None => "–".into(),
        Some(b) if b >= 1e9 => format!("{:.1} Gbit/s", b / 1e9),
        Some(b) if b >= 1e6 => format!("{:.1} Mbit/s", b / 1e6),
        Some(b) => format!("{:.0} kbit/s", b / 1e3),
    }
}

/// The phases as an HTML table narrow enough for a phone: per phase the round trip's median
/// and 99th percentile, the latency added over idle and RPM, and a second line with the
/// throughput each way, the one-way delays and the probes lost.
pub fn html_table(r: &LatencyResult) -> String {
    use super::markup::escape;
    let mut out = String::from(
        "<table class='latency'><thead><tr><th>Phase</th>\
         <th>RTT ms p50 (p99)</th><th>Added ms</th><th>RPM</th></tr></thead><tbody>",
    );
    for f in &r.phases {
        let colour = phase_colour(f.phase);
        let rtt = f.rtt.map_or_else(
            || "-".into(),
            |p| format!("{} ({})", ms_text(p.p50), ms_text(p.p99)),
        );
        let added = f.added_rtt.map_or_else(
            || "-".into(),
            |a| {
                let t = ms_text(a);
                if a >= 0.0 { format!("+{t}") } else { t }
            },
        );
        let _ = write!(
            out,
            "<tr data-phase='{name}'><td><span style='color:{colour}'>■</span> {name}</td>\
             <td>{rtt}</td><td>{added}</td><td>{}</td></tr>\
             <tr class='detail' data-phase='{name}'><td colspan='4'>↓ {} ↑ {} · one-way up {} · \
             down {} ms (p50/p99) · lost {}/{} of {}{}</td></tr>",
            f.rpm.map_or_else(|| "-".into(), |r| format!("{r:.0}")),
            rate_text(f.down_bits_per_second),
            rate_text(f.up_bits_per_second),
            p50_p99(f.up_delay),
            p50_p99(f.down_delay),
            f.lost_up,
            f.lost_down,
            f.probes_sent,
            f.error
                .as_deref()
                .map_or_else(String::new, |e| format!(" · {}", escape(e))),
            name = f.phase.name(),
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Colours of compared runs, in the order picked.
const RUN_COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// Two or more runs compared (before and after a driver change): each run's probe round trips
/// under load (download, upload and both together) as a CDF, one line per run, labelled with
/// its median round trip added over idle.
pub fn svg_compare(runs: &[(String, &LatencyResult)]) -> String {
    let height = 230.0;
    let (pw, ph) = (W - LEFT - RIGHT, height - TOP - 2.0 * BOTTOM - 14.0);
    let loaded: Vec<Vec<f64>> = runs
        .iter()
        .map(|(_, r)| {
            let mut v: Vec<f64> = r
                .phases
                .iter()
                .filter(|f| f.phase != Phase::Idle)
                .flat_map(|f| {
                    r.probes
                        .iter()
                        .filter(move |p| p.t >= f.start && p.t < f.end)
                        .filter_map(|p| p.rtt)
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let x_max = nice_max(
        loaded
            .iter()
            .filter_map(|v| v.last().copied())
            .fold(0.0, f64::max),
    );
    let x = |ms: f64| LEFT + ms / x_max * pw;
    let y = |share: f64| TOP + ph - share * ph;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='loaded round trips of the compared runs' class='chart latency-compare'>\
         <text x='{LEFT}' y='{:.1}' class='legend'>probe RTT under load, share of probes at or below:</text>",
        TOP - 8.0
    );
    cdf_axes(&mut s, x_max, ph);
    for (i, ((label, r), values)) in runs.iter().zip(&loaded).enumerate() {
        let colour = RUN_COLOURS[i % RUN_COLOURS.len()];
        let added = r
            .worst_loaded()
            .and_then(|w| w.added_rtt)
            .map_or_else(|| "-".into(), ms_text);
        let _ = write!(
            s,
            "<text x='{LEFT}' y='{:.1}' class='legend' style='fill:{colour}'>{}: +{added} ms</text>",
            TOP + ph + 28.0 + 12.0 * i as f64,
            super::markup::escape(label)
        );
        let n = values.len();
        if n == 0 {
            continue;
        }
        let k = n.div_ceil(300).max(1);
        let pts: Vec<String> = (0..n)
            .step_by(k)
            .chain(std::iter::once(n - 1))
            .map(|i| format!("{:.1},{:.1}", x(values[i]), y((i + 1) as f64 / n as f64)))
            .collect();
        let _ = write!(
            s,
            "<polyline points='{}' fill='none' stroke='{colour}' stroke-width='1.6'/>",
            pts.join(" ")
        );
    }
    s.push_str("</svg>");
    s.replace(
        &format!("viewBox='0 0 {W} {height}'"),
        &format!(
            "viewBox='0 0 {W} {}'",
            height + 12.0 * runs.len().saturating_sub(1) as f64
        ),
    )
}

/// A CDF's grid (0, 50, 90 and 100 % of the probes) and its round-trip axis up to `x_max` ms,
/// in a plot `ph` high.
fn cdf_axes(s: &mut String, x_max: f64, ph: f64) {
    let pw = W - LEFT - RIGHT;
    for share in [0.0, 0.5, 0.9, 1.0] {
        let y = TOP + ph - share * ph;
        super::chart::grid_line(s, y, (LEFT, W - RIGHT), &format!("{:.0}%", share * 100.0));
    }
    for i in 0..=5 {
        let v = x_max * f64::from(i) / 5.0;
        let anchor = if i == 5 { "end" } else { "middle" };
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='{anchor}'>{} ms</text>",
            LEFT + v / x_max * pw,
            TOP + ph + 13.0,
            tick_label(v)
        );
    }
}

/// The colour of each phase, in pictures and legends.
pub fn phase_colour(phase: Phase) -> &'static str {
    match phase {
        Phase::Idle => "#7f7f7f",
        Phase::Download => "#1f77b4",
        Phase::Upload => "#ff7f0e",
        Phase::Both => "#2ca02c",
    }
}

/// Width of the pictures: a phone's, so their 10-unit text stays readable there.
const W: f64 = 400.0;
const LEFT: f64 = 40.0;
const RIGHT: f64 = 12.0;
const PANEL_H: f64 = 150.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 20.0;
const DOWN_COLOUR: &str = "#1f77b4";
const UP_COLOUR: &str = "#ff7f0e";
const RTT_COLOUR: &str = "#9467bd";
/// About the plot's width in pixels: the timeline draws at most one probe per pixel.
const PLOT_PIXELS: usize = 330;

/// An axis value without trailing zeros: `50`, `2.5`, `0.01`.
fn tick_label(v: f64) -> String {
    let t = if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// Throughput and latency on one time axis (crusader's and flent's "all" plot): the upper panel
/// the load's throughput each way, the lower one every probe's round trip (dots; lost probes as
/// marks on the axis) and the one-way delays above the idle minimum; the phases shaded and named
/// across both.
pub fn svg_timeline(r: &LatencyResult) -> String {
    let height = 2.0 * PANEL_H + 16.0;
    let t_end = r
        .phases
        .iter()
        .map(|p| p.end)
        .chain(r.probes.iter().map(|p| p.t))
        .chain(r.throughput.iter().map(|p| p.t))
        .fold(1.0, f64::max);
    let (pw, ph) = (W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / t_end * pw;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='throughput and latency over time, phases marked' class='chart latency-timeline'>"
    );
    // Phase bands across both panels, named at the top.
    for f in &r.phases {
        let _ = write!(
            s,
            "<rect x='{:.1}' y='{TOP}' width='{:.1}' height='{:.1}' fill='{}' fill-opacity='0.08'/>\
             <text x='{:.1}' y='{:.1}' class='tick' text-anchor='middle' style='fill:{}'>{}</text>",
            x(f.start),
            (x(f.end) - x(f.start)).max(0.0),
            PANEL_H + ph,
            phase_colour(f.phase),
            (x(f.start) + x(f.end)) / 2.0,
            TOP - 4.0,
            phase_colour(f.phase),
            f.phase.name()
        );
    }
    // Throughput, in Mbit/s or (from 1 Gbit/s) Gbit/s; on a log axis when the two directions
    // differ by more than 20 times (a shaped upload beside a wired download).
    let rates: Vec<f64> = r
        .throughput
        .iter()
        .flat_map(|p| [p.down, p.up])
        .flatten()
        .filter(|b| *b > 0.0)
        .collect();
    let peak = rates.iter().copied().fold(0.0, f64::max);
    let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let (scale, unit) = if peak >= 1e9 {
        (1e9, "Gbit/s")
    } else {
        (1e6, "Mbit/s")
    };
    let log = peak > 20.0 * low;
    let top_v = nice_max(peak / scale);
    // Log axis: whole decades from below the lowest rate to the top.
    let bottom_v = if log {
        10f64.powf((low / scale).log10().floor())
    } else {
        0.0
    };
    let y_rate = |v: f64| {
        let share = if log {
            (v.max(bottom_v).log10() - bottom_v.log10()) / (top_v.log10() - bottom_v.log10())
        } else {
            v / top_v
        };
        TOP + ph - share * ph
    };
    let mut ticks_v = vec![bottom_v, top_v];
    if log {
        let mut d = bottom_v * 10.0;
        while d < top_v * 0.999 {
            ticks_v.push(d);
            d *= 10.0;
        }
    } else {
        ticks_v.push(top_v / 2.0);
    }
    for v in ticks_v {
        super::chart::grid_line(&mut s, y_rate(v), (LEFT, W - RIGHT), &tick_label(v));
    }
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='legend'>{unit}{}: \
         <tspan style='fill:{DOWN_COLOUR}'>download</tspan> <tspan style='fill:{UP_COLOUR}'>upload</tspan></text>",
        TOP + 10.0,
        if log { " (log)" } else { "" }
    );
    for (colour, pick) in [
        (
            DOWN_COLOUR,
            (|p: &ThroughputPoint| p.down) as fn(&ThroughputPoint) -> Option<f64>,
        ),
        (UP_COLOUR, |p: &ThroughputPoint| p.up),
    ] {
        // One line per stretch of intervals: a pause longer than two intervals breaks it.
        let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut last_t = f64::NEG_INFINITY;
        for p in &r.throughput {
            let Some(v) = pick(p) else { continue };
            if p.t - last_t > 2.0 * p.seconds + 0.05 {
                runs.push(Vec::new());
            }
            last_t = p.t;
            if let Some(run) = runs.last_mut() {
                run.push((x(p.t), y_rate(v / scale)));
            }
        }
        for run in runs {
            polyline_runs(&mut s, run.into_iter().map(Some), colour);
        }
    }
    // Latency.
    let top2 = PANEL_H;
    let lat_max = nice_max(
        r.probes
            .iter()
            .flat_map(|p| [p.rtt, p.up, p.down])
            .flatten()
            .fold(0.0, f64::max),
    );
    let y_ms = |v: f64| top2 + TOP + ph - v.max(0.0) / lat_max * ph;
    for i in 0..=2 {
        let v = lat_max * f64::from(i) / 2.0;
        super::chart::grid_line(&mut s, y_ms(v), (LEFT, W - RIGHT), &tick_label(v));
    }
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='legend'>ms: <tspan style='fill:{RTT_COLOUR}'>RTT</tspan> \
         <tspan style='fill:{UP_COLOUR}'>up</tspan> <tspan style='fill:{DOWN_COLOUR}'>down</tspan> \
         (one-way, above idle min.) <tspan style='fill:#d62728'>| lost</tspan></text>",
        top2 + TOP + 10.0
    );
    // One-way delays as thin lines, round trips as dots; thinned to about one mark per pixel.
    let step = r.probes.len().div_ceil(PLOT_PIXELS).max(1);
    for (colour, pick) in [
        (
            UP_COLOUR,
            (|p: &ProbePoint| p.up) as fn(&ProbePoint) -> Option<f64>,
        ),
        (DOWN_COLOUR, |p: &ProbePoint| p.down),
    ] {
        polyline_runs(
            &mut s,
            r.probes
                .iter()
                .step_by(step)
                .map(|p| pick(p).map(|v| (x(p.t), y_ms(v)))),
            colour,
        );
    }
    let mut dots = String::new();
    for p in r.probes.iter().step_by(step) {
        if let Some(rtt) = p.rtt {
            let _ = write!(dots, "M{:.1} {:.1}h0.1", x(p.t), y_ms(rtt));
        }
    }
    let _ = write!(
        s,
        "<path d='{dots}' stroke='{RTT_COLOUR}' stroke-width='2.2' stroke-linecap='round' fill='none'/>"
    );
    for p in r.probes.iter().filter(|p| p.lost.is_some()) {
        let _ = write!(
            s,
            "<line x1='{x:.1}' x2='{x:.1}' y1='{:.1}' y2='{:.1}' stroke='#d62728'/>",
            y_ms(0.0),
            y_ms(0.0) - 6.0,
            x = x(p.t)
        );
    }
    // The time axis: ticks at a round step (1, 2 or 5 × 10^k s), about six of them.
    let step = super::chart::time_step(t_end);
    let mut t = 0.0;
    while t <= t_end + 1e-9 {
        let anchor = if x(t) > W - RIGHT - 12.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='{anchor}'>{} s</text>",
            x(t),
            height - 4.0,
            tick_label(t)
        );
        t += step;
    }
    s.push_str("</svg>");
    s
}

/// A polyline per run of present points (a gap breaks the line).
fn polyline_runs(s: &mut String, points: impl Iterator<Item = Option<(f64, f64)>>, colour: &str) {
    let mut run: Vec<String> = Vec::new();
    let flush = |s: &mut String, run: &mut Vec<String>| {
        if run.len() > 1 {
            let _ = write!(
                s,
                "<polyline points='{}' fill='none' stroke='{colour}' stroke-width='1.2'/>",
                run.join(" ")
            );
        }
        run.clear();
    };
    for p in points {
        match p {
            Some((x, y)) => run.push(format!("{x:.1},{y:.1}")),
            None => flush(s, &mut run),
        }
    }
    flush(s, &mut run);
}

/// The probe round trip's distribution per phase (a CDF: the share of probes at or below each
/// round trip), one line per phase in its colour.
pub fn svg_cdf(r: &LatencyResult) -> String {
    let height = 220.0;
    let (pw, ph) = (W - LEFT - RIGHT, height - TOP - 2.0 * BOTTOM);
    let per_phase: Vec<(Phase, Vec<f64>)> = r
        .phases
        .iter()
        .map(|f| {
            let mut v: Vec<f64> = r
                .probes
                .iter()
                .filter(|p| p.t >= f.start && p.t < f.end)
                .filter_map(|p| p.rtt)
                .collect();
            v.sort_by(f64::total_cmp);
            (f.phase, v)
        })
        .collect();
    let x_max = nice_max(
        per_phase
            .iter()
            .filter_map(|(_, v)| v.last().copied())
            .fold(0.0, f64::max),
    );
    let x = |ms: f64| LEFT + ms / x_max * pw;
    let y = |share: f64| TOP + ph - share * ph;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='round-trip distribution per phase' class='chart latency-cdf'>"
    );
    cdf_axes(&mut s, x_max, ph);
    let mut legend_x = LEFT;
    let _ = write!(
        s,
        "<text x='{LEFT}' y='{:.1}' class='legend'>probe RTT, share of probes at or below:</text>",
        TOP - 8.0
    );
    for (phase, values) in &per_phase {
        let n = values.len();
        let colour = phase_colour(*phase);
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='legend' style='fill:{colour}'>{} ({n})</text>",
            legend_x,
            height - 6.0,
            phase.name()
        );
        legend_x += 88.0;
        if n == 0 {
            continue;
        }
        // At most ~300 steps per line: every k-th sample, and the last.
        let k = n.div_ceil(300).max(1);
        let mut pts: Vec<String> = Vec::new();
        for i in (0..n).step_by(k).chain(std::iter::once(n - 1)) {
            pts.push(format!(
                "{:.1},{:.1}",
                x(values[i]),
                y((i + 1) as f64 / n as f64)
            ));
        }
        let _ = write!(
            s,
            "<polyline points='{}' fill='none' stroke='{colour}' stroke-width='1.6'/>",
            pts.join(" ")
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::{
        LatencyInputs, LoadSettings, Phase, PhaseLoad, PhaseWindow, ProbeEcho, ProbeSample,
    };

    fn result() -> LatencyResult {
        let ms = 1_000_000u64;
        let probes = (0..200u64)
            .map(|i| {
                let up = if i < 100 { 1 } else { 51 };
                ProbeSample {
                    seq: i + 1,
                    sent_ns: i * 10 * ms,
                    echo: Some(ProbeEcho {
                        far_received_ns: (i * 10 + up) * ms,
                        far_sent_ns: (i * 10 + up) * ms,
                        received_ns: (i * 10 + up + 1) * ms,
                        far_count: i + 1,
                    }),
                }
            })
            .collect();
        LatencyResult::build(LatencyInputs {
            target: "pc".into(),
            started_unix_ms: 0,
            settings: LoadSettings {
                idle_seconds: 1.0,
                load_seconds: 1.0,
                streams: 4,
                congestion: Some("cubic".into()),
                udp_bits_per_second: None,
                load_bits_per_second: None,
                probe_interval_ms: 10.0,
                probe_bytes: 64,
                probe_bits_per_second: 73_600.0,
                probe_tos: Some(0xb8),
            },
            probes,
            phases: vec![
                PhaseWindow {
                    phase: Phase::Idle,
                    start: 0.0,
                    end: 1.0,
                    load: PhaseLoad::default(),
                },
                PhaseWindow {
                    phase: Phase::Upload,
                    start: 1.0,
                    end: 2.0,
                    load: PhaseLoad {
                        up_bits_per_second: Some(19.2e6),
                        flow_rtt_ms: vec![40.0, 60.0],
                        ..PhaseLoad::default()
                    },
                },
            ],
            throughput: vec![],
            error: None,
        })
    }

    #[test]
    fn rows_carry_the_models_figures() {
        let t = text(&result());
        assert!(
            t.contains("4 TCP streams per direction (congestion control cubic)"),
            "{t}"
        );
        assert!(t.contains("73.6 kbit/s each way"), "{t}");
        assert!(t.contains("TOS 0xb8"));
        let upload = t.lines().find(|l| l.starts_with("upload")).unwrap();
        // 19.2 Mbit/s up; RTT 52 ms; +50 over idle; 60000/52 = 1154 RPM; up 50 ms above idle.
        for want in [
            "19.2",
            "52.0",
            "+50.0",
            "1154",
            "50.0/50.0",
            "40.0/60.0",
            "0/100",
        ] {
            assert!(upload.contains(want), "{want} in {upload}");
        }
        assert!(
            t.contains("Under load (upload): 50.0 ms median round trip over idle"),
            "{t}"
        );
        assert!(t.contains("above the idle phase's minimum"));
    }

    #[test]
    fn both_ways_at_once_draws_two_lines_on_a_log_axis_when_they_differ() {
        let mut r = result();
        // The both phase: download and upload intervals arrive as separate points.
        for i in 1..=8 {
            let t = 2.0 + 0.25 * f64::from(i);
            r.throughput.push(ThroughputPoint {
                t,
                seconds: 0.25,
                down: Some(40e9),
                up: None,
            });
            r.throughput.push(ThroughputPoint {
                t: t + 0.001,
                seconds: 0.25,
                down: None,
                up: Some(19e6),
            });
        }
        let svg = svg_timeline(&r);
        assert!(svg.contains("Gbit/s (log)"), "{svg}");
        let panel = svg.split(">ms: ").next().unwrap_or_default();
        let lines: Vec<&str> = panel.split("<polyline").skip(1).collect();
        assert_eq!(lines.len(), 2, "one line each way: {panel}");
        assert!(lines.iter().all(|l| l.matches(',').count() == 8), "{panel}");
        // 19 Mbit/s sits between the 0.01 and 0.1 Gbit/s decades, not on the floor.
        assert!(svg.contains(">0.01<") && svg.contains(">100<"), "{svg}");
    }

    #[test]
    fn pictures_mark_the_phases_and_every_probe() {
        let r = result();
        let timeline = svg_timeline(&r);
        assert!(timeline.starts_with("<svg") && timeline.ends_with("</svg>"));
        assert!(timeline.contains(">idle<") && timeline.contains(">upload<"));
        // 200 probes over 720 px: one dot each.
        assert_eq!(timeline.matches("h0.1").count(), 200);
        let cdf = svg_cdf(&r);
        assert!(
            cdf.contains(">idle (100)<") && cdf.contains(">upload (100)<"),
            "{cdf}"
        );
        assert_eq!(cdf.matches("<polyline").count(), 2);
        let compare = svg_compare(&[("before".into(), &r), ("after".into(), &r)]);
        assert_eq!(compare.matches("<polyline").count(), 2);
        assert!(compare.contains(">before: +50.0 ms<"), "{compare}");
        let table = html_table(&r);
        assert!(
            table.contains("<td>52.0 (52.0)</td><td>+50.0</td><td>1154</td>"),
            "{table}"
        );
        assert!(
            table.contains("↓ – ↑ 19.2 Mbit/s · one-way up 50.0/50.0"),
            "{table}"
        );
    }
}
