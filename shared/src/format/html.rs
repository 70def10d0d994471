//! A result as one self-contained HTML page: summary, throughput chart (inline SVG) and the
//! iperf3, iperf2, ttcp and netperf renderings, with the result's JSON embedded. No script and
//! nothing fetched, so the same page serves `/r/<id>` and opens offline as a downloaded file.

use std::fmt::Write;

use crate::format::{chart, iperf2, iperf3, netperf, ttcp};
use crate::report::{PeerRole, TestResult, TestStatus};
use crate::spec::{Direction, EndCondition};
use crate::units::{format_bits, format_bytes};

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#111}\
main{max-width:900px;margin:0 auto;padding:12px}h1{font-size:1.25em;margin:.4em 0}\
.card{background:#fff;border-radius:10px;padding:12px;margin:10px 0;box-shadow:0 1px 3px #0002}\
table{border-collapse:collapse;width:100%}td{padding:3px 6px;border-bottom:1px solid #eee;vertical-align:top}\
td:first-child{color:#555;width:40%}pre{overflow-x:auto;font:12px/1.35 ui-monospace,monospace;background:#fafafa;padding:8px}\
details>summary{cursor:pointer;font-weight:600;padding:4px 0}.chart{width:100%;height:auto}\
.chart .grid{stroke:#ddd}.chart .tick,.chart .legend{font:10px sans-serif;fill:#444}\
.status-partial{color:#a40}footer{color:#777;font-size:.85em}";

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Normal => "TX (client sends)",
        Direction::Reverse => "RX (server sends)",
        Direction::Bidir => "both directions",
    }
}

fn summary_rows(result: &TestResult) -> Vec<(String, String)> {
    let spec = &result.spec;
    let mut rows = vec![
        (
            "Protocol".into(),
            format!(
                "{} — {}",
                spec.protocol.upper_name(),
                direction_word(spec.direction)
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
        (
            "Client → server".into(),
            format!(
                "{} → {}",
                host_of(result, PeerRole::Client),
                result.server_addr
            ),
        ),
    ];
    for flow in result.flows() {
        let dir = if flow.client_to_server {
            "client → server"
        } else {
            "server → client"
        };
        if let Some(sent) = flow.sent {
            rows.push((
                format!("Sent ({dir})"),
                format!(
                    "{}, {}/s",
                    format_bytes(sent.bytes as f64).trim(),
                    format_bits(sent.bits_per_second).trim()
                ),
            ));
            if let Some(r) = sent.retransmits {
                rows.push(("TCP retransmits".into(), r.to_string()));
            }
        }
        if let Some(rx) = flow.received {
            rows.push((
                format!("Received ({dir})"),
                format!(
                    "{}, {}/s",
                    format_bytes(rx.bytes as f64).trim(),
                    format_bits(rx.bits_per_second).trim()
                ),
            ));
            if let Some(u) = rx.udp_rx {
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
        }
    }
    let cpu = |c: &crate::report::CpuUsage| {
        format!(
            "{:.1} % process, {:.1} % host",
            c.process_total_percent(),
            c.host_total_percent()
        )
    };
    rows.push((
        format!("CPU ({})", role_word(result.local.role)),
        cpu(&result.local.cpu),
    ));
    if let Some(r) = result.remote.as_ref().filter(|r| r.cpu.measured()) {
        rows.push((format!("CPU ({})", role_word(r.role)), cpu(&r.cpu)));
    }
    let status = match &result.status {
        TestStatus::Complete => "complete".to_string(),
        TestStatus::Partial { reason } => format!("ended early: {reason}"),
    };
    rows.push(("Status".into(), status));
    rows
}

fn role_word(role: PeerRole) -> &'static str {
    match role {
        PeerRole::Client => "client",
        PeerRole::Server => "server",
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
        .and_then(|f| f.received.or(f.sent))
        .map(|t| t.bits_per_second);
    let rate = bps
        .map(|b| format!(" · {}/s", format_bits(b).trim()))
        .unwrap_or_default();
    format!(
        "{} {}{rate}",
        result.spec.protocol.upper_name(),
        direction_word(result.spec.direction)
    )
}

/// The renderings shown on the page, by tab name; a rendering that does not apply is left out.
pub fn renderings(result: &TestResult) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (
            "iperf3",
            format!(
                "{}{}",
                iperf3_intervals(result),
                iperf3::text_summary(result)
            ),
        ),
        ("iperf2", iperf2::text(result)),
        ("ttcp", ttcp::text(result)),
    ];
    let opts = netperf::Options {
        host: &result.server_addr,
        local_cpu: true,
        remote_cpu: true,
        headers: true,
    };
    if let Ok(text) = netperf::render(result, &opts) {
        out.push(("netperf", text));
    }
    out
}

fn iperf3_intervals(result: &TestResult) -> String {
    let mut out = iperf3::text_interval_header(&result.spec, result.local.role);
    for report in &result.local.intervals {
        out.push_str(&iperf3::text_interval(
            &result.spec,
            result.local.role,
            report,
        ));
    }
    out
}

/// The whole page.
pub fn page(result: &TestResult) -> String {
    let title = format!("perfpeer result: {}", headline(result));
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width,initial-scale=1'>\
         <title>{}</title><style>{STYLE}</style></head><body><main><h1>{}</h1>",
        escape(&title),
        escape(&headline(result))
    );
    h.push_str("<section class='card'><table>");
    for (k, v) in summary_rows(result) {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", escape(&k), escape(&v));
    }
    h.push_str("</table></section>");
    let x_max = result.spec.total_time().map(|t| t.as_secs_f64());
    let _ = write!(
        h,
        "<section class='card'>{}</section>",
        chart::svg(&chart::series(&result.local.intervals), x_max)
    );
    h.push_str("<section class='card'>");
    for (i, (name, text)) in renderings(result).iter().enumerate() {
        let open = if i == 0 { " open" } else { "" };
        let _ = write!(
            h,
            "<details{open}><summary>{name}</summary><pre>{}</pre></details>",
            escape(text)
        );
    }
    let json = serde_json::to_string_pretty(&iperf3::json(result)).unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
