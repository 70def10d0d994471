//! A latency-under-load result as text: a header saying what the load and the probe were, one
//! row per phase (throughput each way, probe round trip min/p50/p90/p99/max, latency added over
//! idle, RPM, one-way delays above the idle minimum, probes lost each way, the load flows' own
//! RTT), and the notes a reader needs to read one-way figures right. Every figure comes from
//! [`LatencyResult`]; nothing is computed here but units.

use std::fmt::Write;

use crate::latency::{
    Baseline, LatencyResult, Percentiles, Phase, PhaseFigures, ProbePoint, ThroughputPoint,
};

use super::chart::{legend_colour as legend_text, nice_max};

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

/// A delay added over idle, signed: `+4.2`, `-1.3`, and `+0.00` for what rounds to nothing
/// (never `-0.00`).
pub fn added_ms_text(v: f64) -> String {
    let magnitude = ms_text(v.abs());
    let rounds_to_zero = magnitude.chars().all(|c| c == '0' || c == '.');
    if v < 0.0 && !rounds_to_zero {
        format!("-{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

/// Round trips per minute as a reader can take them in: `231`, `12345`, and `> 1 M` past a
/// million (a round trip under 60 µs, where the figure says more about timers than the link).
pub fn rpm_text(rpm: f64) -> String {
    if rpm >= 1e6 {
        "> 1 M".into()
    } else {
        format!("{rpm:.0}")
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
            "Latency under load: {}, {} ms under {} ({} RPM)",
            r.target,
            added_ms_text(added),
            w.phase.name(),
            rpm_text(rpm)
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
        "\nProbe: UDP every {} ms, {} B, {:.1} kbit/s each way on the wire (with IP, UDP and \
         Ethernet headers)",
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
        f.added_rtt.map_or_else(|| "-".into(), added_ms_text),
        f.rpm.map_or_else(|| "-".into(), rpm_text),
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
        let idle = r
            .phase(Phase::Idle)
            .and_then(|f| f.rtt)
            .map_or_else(String::new, |p| format!(" (idle {} ms", ms_text(p.p50)));
        let loaded = worst.rtt.map_or_else(String::new, |p| {
            format!(", {} {} ms)", worst.phase.name(), ms_text(p.p50))
        });
        let _ = writeln!(
            out,
            "Under load ({}): {} ms added to the median round trip{idle}{}; responsiveness {} RPM",
            worst.phase.name(),
            added_ms_text(added),
            if idle.is_empty() {
                String::new()
            } else {
                loaded
            },
            rpm_text(rpm)
        );
    }
    out.push_str(&notes(r));
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

/// The lines a reader needs beside the table: a loaded phase that ran past its seconds (its
/// queue draining after the senders stopped), and why both directions at once collapse.
pub fn notes(r: &LatencyResult) -> String {
    let mut out = String::new();
    let drained: Vec<String> = r
        .phases
        .iter()
        .filter_map(|f| {
            r.drain_seconds(f)
                .map(|d| format!("{} +{d:.1} s", f.phase.name()))
        })
        .collect();
    if !drained.is_empty() {
        let _ = writeln!(
            out,
            "Draining: a loaded phase runs past its {:.0} s ({}): after its senders stop, the \
             queue they built drains, and the probes in it are counted in their phase.",
            r.settings.load_seconds,
            drained.join(", ")
        );
    }
    if r.phase(Phase::Both).is_some() {
        out.push_str(
            "Both: each direction's TCP acknowledgements wait in the other direction's full \
             queue, so throughput each way falls well below the one-way phases; that is the link \
             under load, not a fault.\n",
        );
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

/// A rate as the pages spell it: `39.9 Gbit/s`, `19.2 Mbit/s`, `–`.
fn rate_text(bps: Option<f64>) -> String {
    bps.map_or_else(|| "–".into(), crate::units::format_rate)
}

/// The phases as an HTML table narrow enough for a phone: per phase the round trip's median
/// and 99th percentile, the latency added over idle and RPM, and a second line with the
/// throughput each way, the one-way delays and the probes lost.
pub fn html_table(r: &LatencyResult) -> String {
    html_table_captioned(
        r,
        "Final figures: every probe counted, the late ones too (they replace the live figures)",
    )
}

/// The phases so far, while the run goes on: the same table, said to be provisional (a phase's
/// figures settle when the probes still queued at its end come in).
pub fn html_table_so_far(r: &LatencyResult) -> String {
    html_table_captioned(
        r,
        "So far: a phase's figures settle when its last queued probes are in",
    )
}

fn html_table_captioned(r: &LatencyResult, caption: &str) -> String {
    use super::markup::escape;
    let mut out = format!(
        "<table class='latency'><caption>{}</caption><thead><tr><th>Phase</th>\
         <th>RTT ms p50 (p99)</th><th>Added ms</th><th>RPM</th></tr></thead><tbody>",
        escape(caption)
    );
    for f in &r.phases {
        let colour = phase_colour(f.phase);
        let rtt = f.rtt.map_or_else(
            || "-".into(),
            |p| format!("{} ({})", ms_text(p.p50), ms_text(p.p99)),
        );
        let added = f.added_rtt.map_or_else(|| "-".into(), added_ms_text);
        let _ = write!(
            out,
            "<tr data-phase='{name}'><td><span style='color:{colour}'>■</span> {name}</td>\
             <td>{rtt}</td><td>{added}</td><td>{}</td></tr>\
             <tr class='detail' data-phase='{name}'><td colspan='4'>↓ {} ↑ {} · one-way up {} · \
             down {} ms (p50/p99) · lost {}/{} of {}{}</td></tr>",
            f.rpm.map_or_else(|| "-".into(), rpm_text),
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
    let (pw, ph, top) = (W - LEFT - RIGHT, PLOT_H, FIRST_ROW + LINE);
    // Below the plot: its axis labels, then one legend row per run.
    let height = top + ph + LINE + 6.0 + LINE * runs.len() as f64;
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
    let y = |share: f64| top + ph - share * ph;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height}' role='img' \
         aria-label='loaded round trips of the compared runs' class='chart latency latency-compare'>\
         <text x='4' y='{FIRST_ROW}' class='legend'>probe RTT under load, share at or below:</text>"
    );
    cdf_axes(&mut s, x_max, top, ph);
    for (i, ((label, r), values)) in runs.iter().zip(&loaded).enumerate() {
        let colour = RUN_COLOURS[i % RUN_COLOURS.len()];
        let added = r
            .worst_loaded()
            .and_then(|w| w.added_rtt)
            .map_or_else(|| "-".into(), added_ms_text);
        let _ = write!(
            s,
            "<text x='4' y='{:.1}' class='legend' style='fill:{}'>{}: {added} ms added</text>",
            top + ph + LINE + 6.0 + LINE * (i + 1) as f64 - 4.0,
            legend_text(colour),
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
    s
}

/// A CDF's grid (0, 50, 90 and 100 % of the probes) and its round-trip axis up to `x_max` ms,
/// in a plot from `top`, `ph` high.
fn cdf_axes(s: &mut String, x_max: f64, top: f64, ph: f64) {
    let pw = W - LEFT - RIGHT;
    for share in [0.0, 0.5, 0.9, 1.0] {
        let y = top + ph - share * ph;
        super::chart::grid_line(s, y, (LEFT, W - RIGHT), &format!("{:.0}%", share * 100.0));
    }
    for i in 0..=5 {
        let v = x_max * f64::from(i) / 5.0;
        let anchor = if i == 5 { "end" } else { "middle" };
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='tick' text-anchor='{anchor}'>{} ms</text>",
            LEFT + v / x_max * pw,
            top + ph + LINE,
            tick_label(v)
        );
    }
}

/// The colour of each phase, in pictures and legends.
pub fn phase_colour(phase: Phase) -> &'static str {
    match phase {
        Phase::Idle => super::chart::GRAY_LINE,
        Phase::Download => "#1f77b4",
        Phase::Upload => "#ff7f0e",
        Phase::Both => "#2ca02c",
    }
}

/// Width of the pictures: a phone's. Their text is 14 units (class `latency`: the pages' CSS
/// sets it), 12 px or more on a 390 px phone, and every legend sits outside the plots.
const W: f64 = 400.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 12.0;
/// One row of 14-unit text.
const LINE: f64 = 18.0;
/// Height of a plot.
const PLOT_H: f64 = 110.0;
/// The first text row's baseline.
const FIRST_ROW: f64 = 15.0;
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
    // Rows, top down: the rate legend, the phase names, the rate plot, two rows of latency
    // legend, the latency plot, the time axis.
    let ph = PLOT_H;
    let top1 = FIRST_ROW + 2.0 * LINE - 6.0;
    let top2 = top1 + ph + 2.0 * LINE + 8.0;
    let height = top2 + ph + LINE + 4.0;
    let t_end = r
        .phases
        .iter()
        .map(|p| p.end)
        .chain(r.probes.iter().map(|p| p.t))
        .chain(r.throughput.iter().map(|p| p.t))
        .fold(1.0, f64::max);
    let pw = W - LEFT - RIGHT;
    let x = |t: f64| LEFT + t / t_end * pw;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height:.1}' role='img' \
         aria-label='throughput and latency over time, phases marked' class='chart latency latency-timeline'>"
    );
    // Phase bands across both panels, named at the top.
    for f in &r.phases {
        let name_x = (x(f.start) + x(f.end)) / 2.0;
        let _ = write!(
            s,
            "<rect x='{:.1}' y='{top1:.1}' width='{:.1}' height='{:.1}' fill='{}' fill-opacity='0.08'/>\
             <text x='{:.1}' y='{:.1}' class='legend' text-anchor='{}' style='fill:{}'>{}</text>",
            x(f.start),
            (x(f.end) - x(f.start)).max(0.0),
            top2 + ph - top1,
            phase_colour(f.phase),
            name_x.min(W - RIGHT),
            top1 - 5.0,
            // A name near the right edge ends there instead of running off it.
            if name_x > W - RIGHT - 40.0 {
                "end"
            } else {
                "middle"
            },
            legend_text(phase_colour(f.phase)),
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
        top1 + ph - share * ph
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
        "<text x='4' y='{FIRST_ROW}' class='legend'>{unit}{}: </text>\
         <text x='{:.1}' y='{FIRST_ROW}' class='legend' style='fill:{}'>download</text>\
         <text x='{:.1}' y='{FIRST_ROW}' class='legend' style='fill:{}'>upload</text>",
        if log { " (log)" } else { "" },
        LEFT + 80.0,
        legend_text(DOWN_COLOUR),
        LEFT + 170.0,
        legend_text(UP_COLOUR),
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
    let lat_max = nice_max(
        r.probes
            .iter()
            .flat_map(|p| [p.rtt, p.up, p.down])
            .flatten()
            .fold(0.0, f64::max),
    );
    let y_ms = |v: f64| top2 + ph - v.max(0.0) / lat_max * ph;
    for i in 0..=2 {
        let v = lat_max * f64::from(i) / 2.0;
        super::chart::grid_line(&mut s, y_ms(v), (LEFT, W - RIGHT), &tick_label(v));
    }
    let (row1, row2) = (top1 + ph + LINE + 4.0, top1 + ph + 2.0 * LINE + 4.0);
    let _ = write!(
        s,
        "<text x='4' y='{row1:.1}' class='legend'>ms: </text>\
         <text x='{LEFT}' y='{row1:.1}' class='legend' style='fill:{}'>● round trip</text>\
         <text x='{:.1}' y='{row1:.1}' class='legend' style='fill:#d62728'>| lost probe</text>\
         <text x='4' y='{row2:.1}' class='legend'>one-way above idle min.: </text>\
         <text x='{:.1}' y='{row2:.1}' class='legend' style='fill:{}'>up</text>\
         <text x='{:.1}' y='{row2:.1}' class='legend' style='fill:{}'>down</text>",
        legend_text(RTT_COLOUR),
        LEFT + 140.0,
        LEFT + 170.0,
        legend_text(UP_COLOUR),
        LEFT + 210.0,
        legend_text(DOWN_COLOUR),
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
    // Rows, top down: the title, the plot, its axis, two columns of phase legends.
    let (pw, ph, top) = (W - LEFT - RIGHT, PLOT_H, FIRST_ROW + LINE);
    let legend_rows = r.phases.len().div_ceil(2) as f64;
    let height = top + ph + LINE + 6.0 + LINE * legend_rows;
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
    let y = |share: f64| top + ph - share * ph;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {height:.1}' role='img' \
         aria-label='round-trip distribution per phase' class='chart latency latency-cdf'>\
         <text x='4' y='{FIRST_ROW}' class='legend'>probe RTT, share of probes at or below:</text>"
    );
    cdf_axes(&mut s, x_max, top, ph);
    for (i, (phase, values)) in per_phase.iter().enumerate() {
        let n = values.len();
        let colour = phase_colour(*phase);
        // Two columns, a phase each, its probe count beside its name.
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' class='legend' style='fill:{}'>{} ({n} probes)</text>",
            if i % 2 == 0 { 4.0 } else { W / 2.0 },
            top + ph + LINE + 6.0 + LINE * (i / 2 + 1) as f64 - 4.0,
            legend_text(colour),
            phase.name()
        );
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
pub(crate) mod tests {
    use super::*;
    use crate::latency::{
        LatencyInputs, LoadSettings, Phase, PhaseLoad, PhaseWindow, ProbeEcho, ProbeSample,
    };

    /// An idle second (2 ms round trips), then a second of upload (52 ms).
    pub(crate) fn result() -> LatencyResult {
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
            t.contains(
                "Under load (upload): +50.0 ms added to the median round trip (idle 2.0 ms, \
                 upload 52.0 ms); responsiveness 1154 RPM"
            ),
            "{t}"
        );
        assert!(t.contains("above the idle phase's minimum"));
    }

    #[test]
    fn signs_millions_and_draining_are_said_plainly() {
        assert_eq!(added_ms_text(-0.001), "+0.00", "never -0.00");
        assert_eq!(added_ms_text(-1.26), "-1.3");
        assert_eq!(added_ms_text(4.2), "+4.2");
        assert_eq!(rpm_text(2_300_000.0), "> 1 M");
        assert_eq!(rpm_text(1154.4), "1154");
        let mut r = result();
        // The upload phase ran 1.6 s for a 1 s load: its queue drained for 0.6 s.
        if let Some(up) = r.phases.iter_mut().find(|f| f.phase == Phase::Upload) {
            up.end = up.start + 1.6;
        }
        let t = table(&r);
        assert!(
            t.contains("Draining: a loaded phase runs past its 1 s (upload +0.6 s)"),
            "{t}"
        );
        assert!(!t.contains("Both: "), "no both phase ran: {t}");
        assert!(html_table(&r).contains("<caption>Final figures"));
        assert!(html_table_so_far(&r).contains("<caption>So far"));
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

    /// The `y` of every element of `class` in `svg`.
    fn ys_of(svg: &str, class: &str) -> Vec<f64> {
        svg.split('<')
            .filter(|e| e.contains(&format!("class='{class}'")))
            .filter_map(|e| {
                let attr = if class == "grid" { "y1='" } else { " y='" };
                let v = e.split(attr).nth(1)?.split('\'').next()?;
                v.parse().ok()
            })
            .collect()
    }

    /// No legend's baseline falls inside a plot (the span of one run of grid lines), nor closer
    /// than a text row to another legend on the same row.
    fn legends_are_outside_the_plots(svg: &str) {
        let mut grid = ys_of(svg, "grid");
        grid.sort_by(f64::total_cmp);
        let mut plots: Vec<(f64, f64)> = Vec::new();
        for y in grid {
            match plots.last_mut() {
                Some(p) if y - p.1 < LINE => p.1 = y,
                _ => plots.push((y, y)),
            }
        }
        for y in ys_of(svg, "legend") {
            assert!(
                plots
                    .iter()
                    .all(|&(top, bottom)| y < top || y > bottom + 4.0),
                "a legend at y={y} inside a plot {plots:?}: {svg}"
            );
        }
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
            cdf.contains(">idle (100 probes)<") && cdf.contains(">upload (100 probes)<"),
            "{cdf}"
        );
        assert_eq!(cdf.matches("<polyline").count(), 2);
        let compare = svg_compare(&[("before".into(), &r), ("after".into(), &r)]);
        assert_eq!(compare.matches("<polyline").count(), 2);
        assert!(compare.contains(">before: +50.0 ms added<"), "{compare}");
        for svg in [&timeline, &cdf, &compare] {
            legends_are_outside_the_plots(svg);
        }
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
