//! A finished result laid out as each tool's users read it: one [`Layout`] per shape (iperf3,
//! iperf 2, ttcp, netperf, the datagram stream view, the `-J` JSON), and one function that lays
//! a result out in any of them. The browser's result tabs, the result page and `perfpeer
//! results show --format` all go through it.

use crate::format::iperf3;
use crate::format::{cbr, dccp, iperf2, netperf, ttcp};
use crate::report::TestResult;
use crate::spec::Protocol;

/// The shapes a result can be read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// iperf3's text, as `perfpeer test` prints it.
    Iperf3,
    /// iperf 2's text.
    Iperf2,
    /// ttcp's lines.
    Ttcp,
    /// netperf's tables, with both ends' CPU columns (as `-c -C`).
    Netperf,
    /// Datagram tests (UDP, DCCP): the per-interval stream lines, summary and CCID figures.
    Stream,
    /// The `-J` JSON, pretty-printed.
    Json,
}

impl Layout {
    /// Every layout, in the order the browser shows its tabs.
    pub const ALL: [Layout; 6] = [
        Layout::Iperf3,
        Layout::Iperf2,
        Layout::Ttcp,
        Layout::Netperf,
        Layout::Stream,
        Layout::Json,
    ];

    /// Its short name (`iperf3`, `netperf`, …): tab and element ids, `--format` values.
    pub fn id(self) -> &'static str {
        match self {
            Layout::Iperf3 => "iperf3",
            Layout::Iperf2 => "iperf2",
            Layout::Ttcp => "ttcp",
            Layout::Netperf => "netperf",
            Layout::Stream => "stream",
            Layout::Json => "json",
        }
    }

    /// `result` in this layout, or why the layout has no equivalent for it (netperf for a
    /// bidirectional test, say).
    pub fn render(self, result: &TestResult) -> Result<String, String> {
        match self {
            Layout::Iperf3 => Ok(iperf3::text_whole(result, iperf3::Voice::Perfpeer)),
            Layout::Iperf2 => Ok(iperf2::text(result)),
            Layout::Ttcp => Ok(ttcp::text(result)),
            Layout::Netperf => {
                let opts = netperf::Options {
                    host: host_of(&result.server_addr),
                    local_cpu: true,
                    remote_cpu: true,
                    headers: true,
                    units: netperf::Units::default(),
                };
                let table = netperf::render(result, &opts).map_err(|e| e.to_string())?;
                // netperf's table is its client's report: said so where this peer served.
                Ok(match result.local.role {
                    crate::report::PeerRole::Client => table,
                    crate::report::PeerRole::Server => format!(
                        "(This peer was the far end, netserver's part: netperf's \"local\" \
                         columns are the other peer's, \"remote\" this peer's.)\n{table}"
                    ),
                })
            }
            Layout::Stream => stream_text(result),
            Layout::Json => Ok(json_text(result)),
        }
    }

    /// The layout named `id` (as [`Layout::id`] spells it).
    pub fn from_id(id: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.id() == id)
    }

    /// `result` in this layout, or the reason it has none, as text to show in its place.
    pub fn text(self, result: &TestResult) -> String {
        self.render(result).unwrap_or_else(|why| format!("{why}\n"))
    }
}

/// The datagram stream view: both ends' per-interval lines, the summary and DCCP's figures.
fn stream_text(result: &TestResult) -> Result<String, String> {
    if result.spec.protocol == Protocol::Tcp {
        return Err("A TCP test has no datagram stream figures: see the other tabs.".into());
    }
    let mut out = format!("{}\n", cbr::header());
    let sides = std::iter::once(&result.local).chain(result.remote.as_ref());
    for side in sides {
        for line in side.intervals.iter().flat_map(cbr::lines) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&cbr::summary(result));
    out.push_str(&dccp::text(result));
    Ok(out)
}

/// The `-J` JSON, pretty-printed, with a final newline.
fn json_text(result: &TestResult) -> String {
    let mut out = crate::format::pretty_json(&iperf3::json(result)).unwrap_or_default();
    out.push('\n');
    out
}

/// The host part of `host:port` / `[v6]:port` (netperf's banner names the host).
fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match addr.rsplit_once(':') {
        Some((host, _)) if !host.contains(':') => host,
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_strips_the_port_only() {
        assert_eq!(host_of("[::1]:5210"), "::1");
        assert_eq!(host_of("pc.lan:5210"), "pc.lan");
        assert_eq!(host_of("10.0.0.2"), "10.0.0.2");
        assert_eq!(host_of("fe80::1"), "fe80::1");
    }

    #[test]
    fn ids_are_distinct_and_in_tab_order() {
        let ids: Vec<&str> = Layout::ALL.iter().map(|l| l.id()).collect();
        assert_eq!(
            ids,
            ["iperf3", "iperf2", "ttcp", "netperf", "stream", "json"]
        );
        for layout in Layout::ALL {
            assert_eq!(Layout::from_id(layout.id()), Some(layout));
        }
        assert_eq!(Layout::from_id("html"), None);
    }
}
