//! iperf3-shaped renderings of a [`TestResult`]: the human text (preamble, interval lines, summary)
//! and the `-J` / `--json-stream` JSON. Pure layout: every figure comes from [`crate::report`];
//! nothing here measures, sums over time, reads a clock or does I/O.
//!
//! `text` writes the text and `json` the JSON; this file holds what both read: the [`Preamble`]
//! of a test, and the helpers (which end sends, which flow iperf3 reports first, service demand,
//! addresses, iperf3's stream numbers).

use crate::report::{Flow, PeerRole, ServiceDemand, SocketInfo, TestResult};
use crate::spec::{Direction, TestSpec};

mod json;
mod text;

#[cfg(test)]
pub(crate) mod tests;

pub use json::{
    cjson_numbers, json, json_error, json_stream_end, json_stream_error, json_stream_far_wifi,
    json_stream_interval, json_stream_start, system_info,
};
pub use text::{
    RateFormat, Voice, text_interval, text_interval_as, text_interval_header, text_preamble,
    text_summary, text_summary_as, text_whole,
};

/// What the text preamble and the `--json-stream` start event need, before any result exists.
#[derive(Debug, Clone, Copy)]
pub struct Preamble<'a> {
    /// The end that prints it.
    pub role: PeerRole,
    /// The address the client connected to (`host:port` or `[v6]:port`).
    pub server_addr: &'a str,
    /// The test.
    pub spec: &'a TestSpec,
    /// The data sockets at this end (the server takes "Accepted connection from" from the first).
    pub sockets: &'a [SocketInfo],
}

impl<'a> Preamble<'a> {
    /// The preamble of a finished test, as its local end printed it.
    pub fn of(result: &'a TestResult) -> Preamble<'a> {
        Preamble {
            role: result.local.role,
            server_addr: &result.server_addr,
            spec: &result.spec,
            sockets: &result.local.sockets,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// Whether `local` has sending streams in this test.
fn end_sends(spec: &TestSpec, local: PeerRole) -> bool {
    match local {
        PeerRole::Client => spec.direction.client_sends(),
        PeerRole::Server => spec.direction.server_sends(),
    }
}

/// Whether the local end is the sender of `flow`.
fn flow_is_local_tx(local: PeerRole, flow: &Flow<'_>) -> bool {
    flow.client_to_server == (local == PeerRole::Client)
}

/// The flow iperf3 reports as `sum_sent`/`sum_received` and, in bidir, the one it reports as
/// `*_bidir_reverse`: the local end's sending flow comes first.
fn split_flows<'f, 'a>(
    result: &TestResult,
    flows: &'f [Flow<'a>],
) -> (Option<&'f Flow<'a>>, Option<&'f Flow<'a>>) {
    if result.spec.direction != Direction::Bidir {
        return (flows.first(), None);
    }
    let tx = |f: &&Flow<'a>| flow_is_local_tx(result.local.role, f);
    (flows.iter().find(tx), flows.iter().find(|f| !tx(f)))
}

/// Service demand of the local and the remote end, from the model (the one rule: a figure,
/// or not meaningful).
fn service_demands(result: &TestResult) -> (Option<ServiceDemand>, Option<ServiceDemand>) {
    let local = result.local.role;
    (
        result.service_demand(local),
        result.service_demand(local.other()),
    )
}

/// `ip:port`, `[v6]:port` or a bare host into host and port.
fn split_addr(addr: &str) -> (&str, Option<u16>) {
    if let Some((host, tail)) = addr.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        return (host, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match addr.split_once(':') {
        Some((host, port)) if !port.contains(':') => (host, port.parse().ok()),
        _ => (addr, None),
    }
}

fn port_text(port: Option<u16>) -> String {
    port.map_or_else(|| "?".to_string(), |p| p.to_string())
}

/// The number iperf3 shows for the stream the plan numbers `id` (1, 2, …): stock iperf3 shows
/// its sockets' file descriptors, which a client opens as 5, 7, 9, 12, 14, 16, … (a buffer file
/// beside each socket, and one more descriptor after the third); scripts that read `[  5]` or
/// `"socket": 5` find the same numbers here.
pub fn socket_number(id: u32) -> u32 {
    match id {
        0 => 0,
        1..=3 => 3 + 2 * id,
        _ => id.saturating_mul(2).saturating_add(4),
    }
}
