//! A result as one self-contained HTML page: summary, throughput chart (inline SVG; where a
//! radio carried the test, its PHY rate, retries and signal on the same time axis, and the
//! Wi-Fi link's summary under it) and the iperf3, iperf2, ttcp and netperf renderings, with
//! the result's JSON embedded. No script and
//! nothing fetched, so the same page serves `/r/<id>` and opens offline as a downloaded file.
//! A packet-size sweep gets a page of the same kind ([`sweep_page`]).

use std::fmt::Write;

use crate::format::layout::Layout;
use crate::format::markup::escape;
use crate::format::{chart, iperf3, latency, sweep};
use crate::history::{Notes, SweepContext};
use crate::latency::LatencyResult;
use crate::report::{PeerRole, SideReport, TestResult, TestStatus};
use crate::spec::EndCondition;
use crate::sweep::{SweepPoint, SweepResult};
use crate::units::{format_bytes, format_rate, group_digits, group_rounded};
use crate::verdict::Verdict;
use crate::wifi::LinkSummary;

/// The content security policy of a result page, served with `/r/<id>`: no script, nothing
/// fetched, inline styles and data images only, never framed.
pub const PAGE_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The same policy in the page itself, for the downloaded file that no server sends headers
/// with (a `<meta>` policy cannot say `frame-ancestors`).
const META_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
     base-uri 'none'; form-action 'none'";

/// The head every page opens with: charset, policy, viewport.
fn head_start() -> String {
    format!(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>\
         <meta http-equiv='Content-Security-Policy' content=\"{META_POLICY}\">\
         <meta name='referrer' content='no-referrer'>\
         <meta name='viewport' content='width=device-width,initial-scale=1'>"
    )
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#111}\
main{max-width:900px;margin:0 auto;padding:12px}h1{font-size:1.25em;margin:.4em 0}\
.card{background:#fff;border-radius:10px;padding:12px;margin:10px 0;box-shadow:0 1px 3px #0002}\
table{border-collapse:collapse;width:100%}td{padding:3px 6px;border-bottom:1px solid #eee;vertical-align:top}\
td:first-child{color:#555;width:40%}pre{overflow-x:auto;font:12px/1.35 ui-monospace,monospace;background:#fafafa;padding:8px}\
details>summary{cursor:pointer;font-weight:600;padding:12px 0}.chart{width:100%;height:auto}\
.chart .grid{stroke:#ddd}.chart .tick,.chart .legend{font:10px sans-serif;fill:#444}.chart .legend.sum{fill:#111}\
.chart.latency text{font-size:14px}\
.status-partial{color:#a40}footer{color:#666;font-size:.85em}\
table.latency td:first-child{width:auto;color:inherit}table.latency td,table.latency th{text-align:right}\
table.latency td:first-child,table.latency th:first-child{text-align:left}\
table.sweep{font-size:.85em;font-variant-numeric:tabular-nums}table.sweep td{text-align:right;padding:3px 4px}\
table.sweep td:first-child{width:auto;text-align:left;white-space:nowrap}\
table.latency tr.detail td{color:#666;font-size:.85em;text-align:left}\
.when{color:#555;margin:0 0 .4em}.note{white-space:pre-wrap;margin:.3em 0}\
.tag{display:inline-block;border:1px solid #999;border-radius:9px;padding:0 8px;margin:0 4px 2px 0;font-size:.9em}\
.verdict .badge{display:inline-block;border-radius:6px;padding:1px 10px;font-weight:700;letter-spacing:.04em}\
.verdict.pass .badge{background:#1b7f3b;color:#fff}.verdict.fail .badge{background:#b3261e;color:#fff}\
.verdict.unjudged .badge{background:#fff4ce;color:#5c4400;border:1px solid #8a6d00}\
table.checks{font-size:.9em}table.checks th{text-align:left;font-weight:600}\
table.checks th,table.checks td{padding:3px 4px}table.checks td{overflow-wrap:anywhere}table.checks td:first-child{width:auto;color:inherit}\
@media (prefers-color-scheme:dark){body{background:#121212;color:#eee}.card{background:#1e1e1e;box-shadow:none}\
td{border-bottom-color:#333}td:first-child,.when,footer{color:#aaa}pre{background:#161616;color:#eee}\
.chart .grid{stroke:#333}.chart .tick,.chart .legend{fill:#bbb}.chart .legend.sum{fill:#eee}\
.chart polyline[stroke='#111'],.chart line[stroke='#111']{stroke:#eee}.status-partial{color:#ffb37a}\
table.latency tr.detail td{color:#aaa}}";

/// A page's head (its policy, viewport, both themes, the title) up to `<main>`.
fn head(title: &str) -> String {
    let mut h = head_start();
    let _ = write!(
        h,
        "<meta name='color-scheme' content='light dark'><title>{}</title><style>{STYLE}\
         @media (prefers-color-scheme:dark){{{}}}</style></head><body><main>",
        escape(title),
        chart::dark_legend_css()
    );
    h
}

/// The page a result link that leads nowhere answers with, in the result pages' style (both
/// themes) with a way back to the peer's page.
pub fn not_found_page() -> String {
    head("No such result")
        + "<h1>No such result</h1><section class='card'><p>This link is wrong, or the result was \
           deleted or its link turned off.</p><p><a href='/'>Open this peer's page</a> to see the \
           results it keeps.</p></section></main></body></html>"
}

/// The token holder's notes on a kept result, as a card (nothing when there are none).
fn notes_html(notes: &Notes) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let tags: String = notes
        .tags
        .iter()
        .map(|t| format!("<span class='tag'>{}</span>", escape(t)))
        .collect();
    let text = if notes.text.is_empty() {
        String::new()
    } else {
        format!("<p class='note'>{}</p>", escape(&notes.text))
    };
    format!("<section class='card notes'><p>{tags}</p>{text}</section>")
}

/// A verdict as a card near the top of a page: the badge (PASS, FAIL or COULD NOT JUDGE, the
/// word itself, coloured too), why nothing could be judged if so, and every check: what was
/// expected, the figure measured, its outcome and by how much it missed. Every figure is the
/// verdict's own ([`crate::verdict`]).
pub fn verdict_section(verdict: &Verdict) -> String {
    let mut h = format!(
        "<section class='card verdict {}'><p>Verdict: <strong class='badge'>{}</strong></p>",
        verdict.outcome.name(),
        verdict.outcome.word()
    );
    if let Some(reason) = &verdict.reason {
        let _ = write!(h, "<p>{}</p>", escape(reason));
    }
    h.push_str(
        "<table class='checks'><tr><th>Expected</th><th>Measured</th><th>Outcome</th>\
         <th>Missed by</th></tr>",
    );
    for check in &verdict.checks {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(check.expect.text()),
            escape(
                &check
                    .measured_words()
                    .unwrap_or_else(|| "not measured".into())
            ),
            check.outcome.word(),
            escape(&check.miss_words().unwrap_or_else(|| "–".into()))
        );
    }
    h.push_str("</table></section>");
    h
}

/// `2026-12-04 13:45:07 UTC` (the page cannot run a script to say it in the reader's zone).
fn utc_words(unix_ms: u64) -> String {
    crate::calendar::date_words(unix_ms / 1000, 0)
}

fn summary_rows(result: &TestResult) -> Vec<(String, String)> {
    let spec = &result.spec;
    let mut rows = vec![
        (
            "Protocol".into(),
            format!(
                "{} — {}",
                spec.protocol.upper_name(),
                result.sending_here().words()
            ),
        ),
        ("Streams".into(), spec.streams.to_string()),
        (
            "Length".into(),
            match spec.end {
                EndCondition::Time { duration } => format!("{} s", duration.as_secs_f64()),
                EndCondition::Bytes { bytes } => format_bytes(bytes as f64).trim().to_string(),
            },
        ),
        ("This peer".into(), host_words(result, result.local.role)),
        (
            "Other peer".into(),
            host_words(result, result.local.role.other()),
        ),
    ];
    for flow in result.flows() {
        let dir = if result.sent_from_here(&flow) {
            "this peer → other peer"
        } else {
            "other peer → this peer"
        };
        if let Some(sent) = flow.sent {
            rows.push((
                format!("Sent ({dir})"),
                format!(
                    "{}, {}",
                    format_bytes(sent.bytes as f64).trim(),
                    format_rate(sent.bits_per_second)
                ),
            ));
            if let Some(r) = sent.retransmits {
                rows.push(("TCP retransmits".into(), r.to_string()));
            }
            if let Some(rtt) = sent.tcp_rtt {
                rows.push((format!("TCP RTT ({dir})"), rtt_words(rtt)));
            }
        }
        if let Some(rx) = flow.received {
            rows.push((
                format!("Received ({dir})"),
                format!(
                    "{}, {}",
                    format_bytes(rx.bytes as f64).trim(),
                    format_rate(rx.bits_per_second)
                ),
            ));
            if let Some(u) = &rx.udp_rx {
                rows.push((
                    "UDP loss, jitter".into(),
                    format!(
                        "{}/{} ({:.2} %), {:.3} ms",
                        u.lost,
                        u.expected(),
                        u.lost_percent(),
                        u.jitter_ms
                    ),
                ));
            }
            // Datagrams' or (TCP) writes' one-way delays, their bins, a video test's frames.
            if let Some(d) = rx.one_way() {
                let of = if rx.udp_rx.is_some() {
                    ""
                } else {
                    " of writes"
                };
                rows.push((format!("One-way delay{of} ({dir})"), d.words()));
                if let Some(h) = &d.histogram {
                    rows.push((format!("Delay histogram ({dir})"), h.words()));
                }
            }
            if let Some(f) = rx.frames() {
                rows.push((format!("Video frames ({dir})"), f.words()));
            }
        }
    }
    rows.extend(group_rows(result));
    if let Some(load) = &result.working_load {
        rows.push(("Working load".into(), load.words()));
    }
    let cpu = |c: &crate::report::CpuUsage| {
        format!(
            "{:.1} % process, {:.1} % host",
            c.process_total_percent(),
            c.host_total_percent()
        )
    };
    for (side, name) in [
        (Some(&result.local), "Wi-Fi (this peer)"),
        (result.remote.as_ref(), "Wi-Fi (other peer)"),
    ] {
        if let Some(link) = side.and_then(SideReport::link_summary) {
            rows.push((name.into(), link_words(&link)));
        }
    }
    rows.push(("CPU (this peer)".into(), cpu(&result.local.cpu)));
    if let Some(r) = result.remote.as_ref().filter(|r| r.cpu.measured()) {
        rows.push(("CPU (other peer)".into(), cpu(&r.cpu)));
    }
    let status = match &result.status {
        TestStatus::Complete => "complete".to_string(),
        TestStatus::Partial { reason } => format!("ended early: {reason}"),
        TestStatus::Cancelled => "cancelled".to_string(),
    };
    rows.push(("Status".into(), status));
    rows
}

/// A multicast test's group, then a row per receiver (the model's words).
fn group_rows(result: &TestResult) -> Vec<(String, String)> {
    let Some(group) = result.spec.multicast else {
        return Vec::new();
    };
    let mut rows = vec![(
        "Multicast group".to_string(),
        format!(
            "{}, {} receivers",
            group.words(),
            result.group_receivers.len()
        ),
    )];
    rows.extend(
        result
            .group_receiver_words()
            .into_iter()
            .map(|(peer, words)| (format!("Received by {peer}"), words)),
    );
    rows
}

/// A radio's link over a test in one line, what the driver did not give left out: `wlan0 (AP):
/// signal -52 dBm median, PHY 433.3 Mbit/s median, retries 2.1 %, 3 failed, goodput 64 % of
/// PHY`. The page's summary and the browser's summary card say it so.
pub fn link_words(link: &LinkSummary) -> String {
    let mut parts = Vec::new();
    if let Some(s) = link.signal_dbm {
        parts.push(format!("signal {:.0} dBm median", s.median));
    }
    if let Some(m) = link.phy_mbps {
        parts.push(format!("PHY {m:.1} Mbit/s median"));
    }
    if let Some(r) = link.retries_percent {
        parts.push(format!("retries {r:.1} %"));
    }
    if let Some(f) = link.tx_failed.filter(|f| *f > 0) {
        parts.push(format!("{f} failed"));
    }
    if let Some(e) = link.efficiency_percent {
        parts.push(format!("goodput {e:.0} % of PHY"));
    }
    format!(
        "{} ({}): {}",
        link.iface,
        link.mode.word(),
        parts.join(", ")
    )
}

/// `0.05 / 0.12 / 0.30 ms (min / mean / max)`.
pub fn rtt_words(rtt: crate::report::TcpRtt) -> String {
    let ms = |us: u32| f64::from(us) / 1000.0;
    format!(
        "{:.2} / {:.2} / {:.2} ms (min / mean / max)",
        ms(rtt.min_us),
        ms(rtt.mean_us),
        ms(rtt.max_us)
    )
}

fn role_word(role: PeerRole) -> &'static str {
    match role {
        PeerRole::Client => "client",
        PeerRole::Server => "server",
    }
}

/// A peer as the result knows it: its host name, the role it had, and for the far end of the
/// test its address (`pc.lan, the far end at 192.168.1.20:5210`).
fn host_words(result: &TestResult, role: PeerRole) -> String {
    match role {
        PeerRole::Client => format!("{}, started the test", host_of(result, role)),
        PeerRole::Server => format!(
            "{}, the far end at {}",
            host_of(result, role),
            result.server_addr
        ),
    }
}

fn host_of(result: &TestResult, role: PeerRole) -> String {
    let (c, s) = result.sides();
    let side = if role == PeerRole::Client { c } else { s };
    side.map(|s| s.host.hostname.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| role_word(role).into())
}

fn headline(result: &TestResult) -> String {
    let flows = result.flows();
    let bps = flows
        .first()
        .and_then(|f| f.received.as_ref().or(f.sent.as_ref()))
        .map(|t| t.bits_per_second);
    let rate = bps
        .map(|b| format!(" · {}", format_rate(b)))
        .unwrap_or_default();
    format!(
        "{} {}{rate}",
        result.spec.protocol.upper_name(),
        result.sending_here().words()
    )
}

/// The renderings shown on the page, by layout name; a layout that does not apply is left out
/// (the JSON has a section of its own).
pub fn renderings(result: &TestResult) -> Vec<(&'static str, String)> {
    Layout::ALL
        .into_iter()
        .filter(|layout| *layout != Layout::Json)
        .filter_map(|layout| Some((layout.id(), layout.render(result).ok()?)))
        .collect()
}

/// The whole page.
pub fn page(result: &TestResult, notes: &Notes) -> String {
    let title = format!("perfpeer result: {}", headline(result));
    let mut h = head(&title);
    let _ = write!(
        h,
        "<h1>{}</h1><p class='when'>{}</p>{}{}",
        escape(&headline(result)),
        escape(&utc_words(result.started_unix_ms)),
        notes_html(notes),
        result
            .verdict()
            .as_ref()
            .map(verdict_section)
            .unwrap_or_default()
    );
    h.push_str("<section class='card'><table>");
    for (k, v) in summary_rows(result) {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", escape(&k), escape(&v));
    }
    h.push_str("</table></section>");
    // A test that ended early is drawn over the time it ran.
    let x_max = match result.status {
        TestStatus::Complete => result.spec.total_time().map(|t| t.as_secs_f64()),
        _ => None,
    };
    // The Wi-Fi link, where a radio carried the test: on the chart's axes, then in words.
    let link = chart::wifi::Overlay::of_result(result);
    let _ = write!(
        h,
        "<section class='card'>{}</section>",
        chart::svg_with_link(&chart::series(&result.local.intervals), &link, x_max)
    );
    let link_text = crate::format::wifi::result_text(result);
    if !link_text.is_empty() {
        let _ = write!(
            h,
            "<section class='card'><details open><summary>Wi-Fi link</summary><pre>{}</pre>\
             </details></section>",
            escape(&link_text)
        );
    }
    // The one-way delays in bins (`--histograms`), a chart per direction that kept them.
    for flow in result.flows() {
        let bins = flow
            .received
            .as_ref()
            .and_then(|t| t.one_way()?.histogram.as_ref());
        if let Some(bins) = bins {
            let dir = if result.sent_from_here(&flow) {
                "this peer → other peer"
            } else {
                "other peer → this peer"
            };
            let _ = write!(
                h,
                "<section class='card'>{}</section>",
                chart::histogram_svg(bins, &format!("one-way delays ({dir})"))
            );
        }
    }
    h.push_str("<section class='card'>");
    for (i, (name, text)) in renderings(result).iter().enumerate() {
        let open = if i == 0 { " open" } else { "" };
        let _ = write!(
            h,
            "<details{open}><summary>{name}</summary><pre>{}</pre></details>",
            escape(text)
        );
    }
    let json = crate::format::pretty_json(&iperf3::json(result)).unwrap_or_default();
    let _ = write!(
        h,
        "<details><summary>JSON (iperf3 -J)</summary><pre>{}</pre></details></section>",
        escape(&json)
    );
    // The result itself, for tools: `</` cannot end the script element early once escaped.
    let raw = serde_json::to_string(result)
        .unwrap_or_default()
        .replace("</", "<\\/");
    let _ = write!(
        h,
        "<script type='application/json' id='perfpeer-result'>{raw}</script><footer>perfpeer {}; test {}</footer></main></body></html>",
        escape(&result.local.host.version),
        escape(&result.id)
    );
    h
}

/// A sweep's rows as table rows: size, throughput, packets/s and lost/total, or why the size
/// failed. Each row carries its size (`data-len`) and, with figures, its bit/s (`data-bps`). The
/// page below and the browser's tables use it.
pub fn sweep_rows(points: &[SweepPoint]) -> String {
    let mut h = String::new();
    for p in points {
        let _ = match &p.error {
            Some(e) => write!(
                h,
                "<tr data-len='{}'><td>{} B</td><td colspan='3' class='error'>failed: {}</td></tr>",
                p.len,
                p.len,
                escape(e)
            ),
            None => write!(
                h,
                "<tr data-len='{}' data-bps='{}'><td>{} B</td><td>{}</td><td>{}</td><td>{}/<wbr>{} ({:.2}%)</td></tr>",
                p.len,
                p.bits_per_second,
                p.len,
                escape(&format_rate(p.bits_per_second)),
                group_rounded(p.packets_per_second),
                group_digits(p.lost),
                group_digits(p.lost + p.packets),
                p.lost_percent
            ),
        };
    }
    h
}

/// A sweep as one self-contained page: `title` (what ran, against which peer), the rows as a
/// table, the two-panel chart, the CLI's text table and the `SweepResult` JSON (also embedded
/// for tools as `<script id='perfpeer-sweep'>`).
pub fn sweep_page(
    result: &SweepResult,
    title: &str,
    context: &SweepContext,
    notes: &Notes,
) -> String {
    let mut h = head(&format!("perfpeer sweep: {title}"));
    let when = context.kept_unix_ms.map_or_else(String::new, |ms| {
        format!("<p class='when'>{}</p>", escape(&utc_words(ms)))
    });
    let (this, other) = match context.role {
        PeerRole::Client => ("started the sweep", "its far end"),
        PeerRole::Server => ("the far end", "started the sweep"),
    };
    let _ = write!(
        h,
        "<h1>{t}</h1>{when}{notes}\
         <section class='card'><table><tr><td>Direction</td><td>{sending}</td></tr>\
         <tr><td>This peer</td><td>{this}</td></tr>\
         <tr><td>Other peer</td><td>{peer}, {other}</td></tr></table></section>\
         <section class='card'><table class='sweep'><tr><td>Size</td><td>Throughput</td><td>Packets/s</td><td>Lost/Total</td></tr>",
        t = escape(title),
        notes = notes_html(notes),
        sending = context.sending.words(),
        peer = escape(&context.other_peer),
    );
    h.push_str(&sweep_rows(&result.points));
    let json = crate::format::pretty_json(result).unwrap_or_default();
    let raw = serde_json::to_string(result)
        .unwrap_or_default()
        .replace("</", "<\\/");
    let _ = write!(
        h,
        "</table></section><section class='card'>{}</section><section class='card'>\
         <details open><summary>Text (perfpeer test --sweep-len)</summary><pre>{}</pre></details>\
         <details><summary>JSON (perfpeer test --sweep-len -J)</summary><pre>{}</pre></details></section>\
         <script type='application/json' id='perfpeer-sweep'>{raw}</script></main></body></html>",
        sweep::svg(result),
        escape(&sweep::text(result, None)),
        escape(&json)
    );
    h
}

/// A latency-under-load result as a page of the same kind: its verdict when its request carried
/// expectations (`Verdict::of_latency`: the result alone does not hold them), the table, the
/// timeline (throughput and latency on one time axis, phases marked), the round-trip CDF per
/// phase, a short "how to read it", the text and the JSON.
pub fn latency_page(
    result: &LatencyResult,
    title: &str,
    verdict: Option<&Verdict>,
    notes: &Notes,
) -> String {
    let mut h = head(&format!("perfpeer: {title}"));
    let json = crate::format::pretty_json(result).unwrap_or_default();
    let raw = serde_json::to_string(result)
        .unwrap_or_default()
        .replace("</", "<\\/");
    let _ = write!(
        h,
        "<h1>{t}</h1>{notes}{verdict}\
         <section class='card'>{table}</section>\
         <section class='card'>{timeline}</section>\
         <section class='card'>{cdf}</section>\
         <section class='card'><pre>{text}</pre></section>\
         <section class='card'><details><summary>How to read it</summary>{HOW_TO_READ}</details></section>\
         <section class='card'><details><summary>JSON (perfpeer test --latency-under-load -J)</summary>\
         <pre>{json}</pre></details></section>\
         <script type='application/json' id='perfpeer-latency'>{raw}</script></main></body></html>",
        t = escape(title),
        notes = notes_html(notes),
        verdict = verdict.map(verdict_section).unwrap_or_default(),
        table = latency::html_table(result),
        timeline = latency::svg_timeline(result),
        cdf = latency::svg_cdf(result),
        text = escape(&latency::text(result)),
        json = escape(&json),
    );
    h
}

/// A plan run as a page: its verdict, the table of cases (each repeat linked to its own
/// result), the comparison with its baseline as a table and a chart, the text and the JSON.
#[cfg(feature = "plans")]
pub fn plan_page(kept: &crate::history::KeptPlan) -> String {
    let result = &kept.result;
    let title = kept.title();
    let mut h = head(&format!("perfpeer: {title}"));
    let json = crate::format::pretty_json(result).unwrap_or_default();
    let raw = serde_json::to_string(result)
        .unwrap_or_default()
        .replace("</", "<\\/");
    let badge = match (result.outcome(), crate::format::plan::verdict_line(result)) {
        (Some(o), Some(line)) => format!(
            "<p class='verdict {}'><b>{}</b> {}</p>",
            crate::format::plan::outcome_class(o),
            o.word(),
            escape(
                line.trim_start_matches("Plan verdict: ")
                    .trim_start_matches(o.word())
            )
        ),
        _ => String::new(),
    };
    let comparison = result.comparison.as_ref().map_or_else(String::new, |c| {
        format!(
            "<section class='card'><h2>Against the baseline</h2>{}{}</section>",
            crate::format::plan::html_comparison(c),
            crate::format::plan::comparison_svg(c)
        )
    });
    let _ = write!(
        h,
        "<style>.pass{{color:#137333}}.fail{{color:#b3261e;font-weight:600}}.unjudged{{color:#8a6d00}}\
         .verdict{{font-size:1.1em}}</style>\
         <h1>{t}</h1>{notes}{badge}\
         <section class='card'>{table}</section>{comparison}\
         <section class='card'><pre>{text}</pre></section>\
         <section class='card'><details><summary>JSON (perfpeer results show ID --format json)</summary>\
         <pre>{json}</pre></details></section>\
         <script type='application/json' id='perfpeer-plan'>{raw}</script></main></body></html>",
        t = escape(&title),
        notes = notes_html(&kept.notes),
        table = crate::format::plan::html_table(result),
        text = escape(&crate::format::plan::text(result)),
        json = escape(&json),
    );
    h
}

/// What idle and loaded mean, what RPM is, and what one-way delays can and cannot tell.
const HOW_TO_READ: &str = "<p><b>Idle</b> is the link with nothing but the probe on it: its \
round trip is the floor. In <b>download</b>, <b>upload</b> and <b>both</b>, TCP load fills the \
link that way; the round trip then includes the queue the load builds at the bottleneck. \
<b>Added</b> is the loaded median minus the idle median: the latency the link adds when busy \
(bufferbloat).</p><p><b>RPM</b> (round trips per minute) is 60 000 divided by the median probe \
round trip in ms. The IETF responsiveness draft measures RPM with new and loaded TCP/TLS/HTTP \
connections and trimmed means; this is the same idea with a separate UDP probe, so compare RPM \
between perfpeer runs, not with other tools' RPM.</p><p><b>One-way delays</b> (up: this end to \
the far end; down: back) come from the far end's time stamps. The two clocks are not \
synchronised, so each direction is shown above its smallest idle value: a rise in <i>up</i> \
places the queue on the way out (this end's transmit side or the path's), a rise in <i>down</i> \
on the way back. They cannot tell the absolute one-way time, and assume the clocks do not drift \
apart during the test (about 1 ms per 20 s at 50 ppm).</p>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_page_is_self_contained() {
        use crate::spec::Protocol;
        use crate::sweep::SweepPoint;
        let mut ok = SweepPoint::failed(64, "");
        ok.error = None;
        ok.bits_per_second = 2e6;
        ok.packets_per_second = 3906.0;
        let result = SweepResult {
            protocol: Protocol::Udp,
            ccid: None,
            bitrate: Some(2_000_000),
            seconds_per_size: 1.0,
            points: vec![ok, SweepPoint::failed(1400, "</script><b>")],
        };
        let context = SweepContext {
            kept_unix_ms: Some(1_796_220_497_250),
            sending: crate::report::Sending::OtherPeer,
            other_peer: "pc".into(),
            role: PeerRole::Server,
        };
        let page = sweep_page(&result, "UDP sweep → pc", &context, &Notes::default());
        assert!(
            page.contains("<p class='when'>2026-12-02 14:08:17 UTC</p>"),
            "{page}"
        );
        assert!(page.contains("<td>RX (this peer receives)</td>"), "{page}");
        assert!(page.contains("<td>pc, started the sweep</td>"), "{page}");
        assert!(page.starts_with("<!doctype html>") && page.ends_with("</html>"));
        assert!(
            page.contains(&format!(
                "<meta http-equiv='Content-Security-Policy' content=\"{META_POLICY}\">"
            )),
            "a downloaded page carries its own policy: {page}"
        );
        assert!(META_POLICY.contains("default-src 'none'") && !META_POLICY.contains("script"));
        assert!(page.contains("<h1>UDP sweep → pc</h1>"));
        assert!(
            page.contains("<td>64 B</td><td>2.00 Mbit/s</td><td>3906</td>"),
            "{page}"
        );
        assert!(page.contains("failed: &lt;/script&gt;&lt;b&gt;"), "escaped");
        assert!(page.contains("<svg") && !page.contains("src=") && !page.contains("href="));
        let embedded = page
            .split("<script type='application/json' id='perfpeer-sweep'>")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let back: SweepResult = serde_json::from_str(&embedded.replace("<\\/", "</")).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn a_link_to_nothing_answers_in_the_pages_style_with_a_way_back() {
        let page = not_found_page();
        assert!(page.starts_with("<!doctype html>") && page.contains("<h1>No such result</h1>"));
        assert!(page.contains("prefers-color-scheme:dark") && page.contains("href='/'"));
        assert!(page.ends_with("</html>"));
    }

    #[test]
    fn a_result_page_says_when_who_and_which_way_in_both_themes() {
        let mut r = crate::format::iperf3::tests::tcp_single();
        r.local.host.hostname = "dut".into();
        if let Some(remote) = &mut r.remote {
            remote.host.hostname = "pc".into();
        }
        let page = page(&r, &Notes::default());
        // 1_796_220_497_250 ms after the epoch.
        assert!(
            page.contains("<p class='when'>2026-12-02 14:08:17 UTC</p>"),
            "{page}"
        );
        assert!(
            page.contains("<td>This peer</td><td>dut, started the test</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td>Other peer</td><td>pc, the far end at 10.0.0.2:5201</td>"),
            "{page}"
        );
        assert!(page.contains("TCP — TX (this peer sends)"), "{page}");
        assert!(page.contains("Received (this peer → other peer)"), "{page}");
        assert!(
            !page.contains("client →") && !page.contains("(client)"),
            "{page}"
        );
        assert!(page.contains("prefers-color-scheme:dark"));
        // Kept at the far end, the same test reads from that side.
        let mut far = r.clone();
        std::mem::swap(&mut far.local, far.remote.as_mut().unwrap());
        assert!(page_of(&far).contains("TCP — RX (this peer receives)"));
        // The token holder's notes, escaped, under the heading.
        let notes = Notes::from_input("fw 1.2 <b>", "ch36").unwrap();
        let noted = super::page(&r, &notes);
        assert!(
            noted.contains("<span class='tag'>ch36</span></p><p class='note'>fw 1.2 &lt;b&gt;</p>"),
            "{noted}"
        );
    }

    #[test]
    fn a_test_over_wi_fi_shows_its_link_on_the_chart_and_in_words() {
        let mut r = crate::format::iperf3::tests::tcp_single();
        assert!(!page_of(&r).contains("Wi-Fi"), "no radio, no link");
        let sample = crate::format::chart::wifi::tests::sample(-52, 866.7, 30, 1);
        for i in &mut r.local.intervals {
            i.wifi = Some(Box::new(sample.clone()));
        }
        let page = page_of(&r);
        let row = page
            .split("<td>Wi-Fi (this peer)</td><td>")
            .nth(1)
            .and_then(|rest| rest.split("</td>").next());
        assert_eq!(
            row,
            Some(
                "wlan0 (station): signal -52 dBm median, PHY 866.7 Mbit/s median, retries \
                 3.0 %, 1 failed, goodput 1154 % of PHY"
            )
        );
        assert!(page.contains(">PHY rate<") && page.contains(">signal this peer<"));
        assert!(page.contains("<summary>Wi-Fi link</summary><pre>Wi-Fi at this end: wlan0"));
        assert!(
            !page.contains("Wi-Fi (other peer)"),
            "the far end had no radio"
        );
    }

    fn page_of(r: &TestResult) -> String {
        page(r, &Notes::default())
    }

    /// The verdict card of a page, from its opening tag to its end; none without one.
    fn verdict_card(page: &str) -> Option<&str> {
        let start = page.find("<section class='card verdict")?;
        let len = page[start..].find("</section>")? + "</section>".len();
        Some(&page[start..start + len])
    }

    /// [`crate::format::iperf3::tests::tcp_single`] (10 Gbit/s received, 7 retransmits)
    /// expecting `expect`.
    fn expecting(expect: &str) -> TestResult {
        let mut r = crate::format::iperf3::tests::tcp_single();
        r.spec.expect = crate::verdict::Expectation::parse_list(expect).unwrap();
        r
    }

    #[test]
    fn a_result_page_opens_with_its_verdict_and_every_check() {
        let passed = page_of(&expecting("rx>=1G"));
        let card = verdict_card(&passed).expect("a verdict card");
        assert!(
            card.starts_with("<section class='card verdict pass'><p>Verdict: <strong class='badge'>PASS</strong></p>"),
            "{card}"
        );
        assert!(
            card.contains("<tr><td>rx&gt;=1G</td><td>9.96 Gbit/s</td><td>PASS</td><td>–</td></tr>"),
            "{card}"
        );
        // Near the top: before the summary.
        assert!(passed.find(card) < passed.find("<td>Protocol</td>"));

        let failed = page_of(&expecting("rx>=20G, retransmits<=0"));
        let card = verdict_card(&failed).expect("a verdict card");
        assert!(card.contains("verdict fail'><p>Verdict: <strong class='badge'>FAIL</strong>"));
        // Every check, with the model's figures: how much short, the retransmits over 0.
        let r = expecting("rx>=20G, retransmits<=0");
        let verdict = r.verdict().unwrap();
        for check in &verdict.checks {
            let row = format!(
                "<tr><td>{}</td><td>{}</td><td>FAIL</td><td>{}</td></tr>",
                escape(check.expect.text()),
                check.measured_words().unwrap(),
                check.miss_words().unwrap_or_else(|| "–".into())
            );
            assert!(card.contains(&row), "{row} in {card}");
        }
        assert!(card.contains("50.2 % short"), "{card}");

        // A test that ended early is not judged, and says why.
        let mut early = expecting("rx>=1G");
        early.status = TestStatus::Partial {
            reason: "the far end went away".into(),
        };
        let page = page_of(&early);
        let card = verdict_card(&page).expect("a verdict card");
        assert!(
            card.contains("verdict unjudged'><p>Verdict: <strong class='badge'>COULD NOT JUDGE")
        );
        assert!(
            card.contains("<td>not measured</td><td>COULD NOT JUDGE</td>"),
            "{card}"
        );
        assert!(
            card.contains("the run ended early: the far end went away"),
            "{card}"
        );

        // No expectations, no card.
        let plain = page_of(&crate::format::iperf3::tests::tcp_single());
        assert_eq!(verdict_card(&plain), None);
        assert!(!plain.contains("Verdict"));
    }

    #[test]
    fn a_latency_page_shows_the_verdict_its_request_gets() {
        let result = crate::format::latency::tests::result();
        let mut request = crate::latency::LatencyRequest {
            expect: crate::verdict::Expectation::parse_list("p99<=40ms").unwrap(),
            ..crate::latency::LatencyRequest::default()
        };
        let judged = |request: &crate::latency::LatencyRequest| {
            let verdict = Verdict::of_latency(request, &result);
            latency_page(&result, "Latency", verdict.as_ref(), &Notes::default())
        };
        let page = judged(&request);
        let card = verdict_card(&page).expect("a verdict card");
        assert!(
            card.contains("<strong class='badge'>FAIL</strong>"),
            "{card}"
        );
        assert!(
            card.contains(
                "<tr><td>p99&lt;=40ms</td><td>52.000 ms</td><td>FAIL</td><td>30.0 % over</td></tr>"
            ),
            "{card}"
        );
        request.expect = crate::verdict::Expectation::parse_list("p99<=100ms").unwrap();
        assert!(judged(&request).contains("<strong class='badge'>PASS</strong>"));
        request.expect.clear();
        assert_eq!(verdict_card(&judged(&request)), None);
    }

    #[test]
    fn escaping() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
