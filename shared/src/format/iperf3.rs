//! iperf3-shaped renderings of a [`TestResult`]: the human text (preamble, interval lines, summary)
//! and the `-J` / `--json-stream` JSON. Pure layout: every figure comes from [`crate::report`];
//! nothing here measures, sums over time, reads a clock or does I/O.

use serde_json::{Map, Value};

use crate::report::{
    CpuUsage, DirectionTotals, Flow, HostInfo, IntervalReport, IntervalSum, PeerRole, SideReport,
    SocketInfo, StreamFinal, StreamInterval, StreamRole, TestResult, UdpRxFinal, UdpRxSample,
    bits_per_second,
};
use crate::spec::{Direction, EndCondition, Protocol, TestSpec};
use crate::units::{format_bits, format_bytes, format_rate_in};

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
// Text
// ---------------------------------------------------------------------------------------------

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// "Connecting to host H, port P" (client) or "Accepted connection from A, port P" (server, from
/// the first socket's remote address), "Reverse mode, remote host H is sending" for `-R`, then one
/// `[ ID] local A port P connected to B port Q` line per data socket.
pub fn text_preamble(p: &Preamble<'_>) -> String {
    let mut lines = Vec::new();
    match p.role {
        PeerRole::Client => {
            let (host, port) = split_addr(p.server_addr);
            lines.push(match port {
                Some(port) => format!("Connecting to host {host}, port {port}"),
                None => format!("Connecting to host {host}"),
            });
            if p.spec.direction == Direction::Reverse {
                lines.push(format!("Reverse mode, remote host {host} is sending"));
            }
        }
        PeerRole::Server => {
            if let Some(first) = p.sockets.first() {
                let (host, port) = split_addr(&first.remote);
                lines.push(format!(
                    "Accepted connection from {host}, port {}",
                    port_text(port)
                ));
            }
        }
    }
    for s in p.sockets {
        let (lh, lp) = split_addr(&s.local);
        let (rh, rp) = split_addr(&s.remote);
        lines.push(format!(
            "[{}] local {lh} port {} connected to {rh} port {}",
            id_cell(s.id),
            port_text(lp),
            port_text(rp)
        ));
    }
    join_lines(lines)
}

/// Column header printed once before the first interval: "… Retr  Cwnd" when this end sends TCP,
/// "… Total Datagrams" when it sends UDP, "… Jitter    Lost/Total Datagrams" when it receives UDP,
/// nothing after "Bitrate" when it receives TCP. Bidir headers start `[ ID][Role]` and follow the
/// sending streams, which are printed first.
pub fn text_interval_header(spec: &TestSpec, local: PeerRole) -> String {
    let tail = match (spec.protocol, end_sends(spec, local)) {
        (Protocol::Tcp, true) => "         Retr  Cwnd",
        (Protocol::Tcp, false) => "",
        (Protocol::Udp | Protocol::Dccp, true) => "         Total Datagrams",
        (Protocol::Udp | Protocol::Dccp, false) => "         Jitter    Lost/Total Datagrams",
    };
    format!(
        "{} Interval           Transfer     Bitrate{tail}\n",
        id_header(spec)
    )
}

/// Lines for one interval: the sending streams, then a `[SUM]` line if there are several, then the
/// same for the receiving streams. Bidir lines carry iperf3's role tags (`[TX-C]`/`[RX-C]` at the
/// client, `[TX-S]`/`[RX-S]` at the server); omitted intervals end with "(omitted)". With several
/// streams, every interval but the first is preceded by the "- - -" separator, as in iperf3.
pub fn text_interval(spec: &TestSpec, local: PeerRole, report: &IntervalReport) -> String {
    text_interval_as(spec, local, report, RateFormat::Adaptive)
}

/// [`text_interval`] with the bitrate column in `rate` (iperf3's `-f`).
pub fn text_interval_as(
    spec: &TestSpec,
    local: PeerRole,
    report: &IntervalReport,
    rate: RateFormat,
) -> String {
    let roles = [StreamRole::Sender, StreamRole::Receiver];
    let count = |role: StreamRole| report.streams.iter().filter(|s| s.role == role).count();
    let mut lines = Vec::new();
    if roles.iter().any(|r| count(*r) > 1) && !report.start.is_zero() {
        lines.push(SEPARATOR.to_string());
    }
    let label = if report.omitted { "(omitted)" } else { "" };
    let ((start, end), seconds) = (report.iperf3_span(spec.omit), report.seconds());
    for role in roles {
        let tag = role_tag(spec, local, role == StreamRole::Sender);
        for s in report.streams.iter().filter(|s| s.role == role) {
            let lead = lead(
                &id_cell(s.id),
                tag,
                (start, end),
                s.bytes,
                bits_per_second(s.bytes, seconds),
                rate,
            );
            lines.push(line(&lead, stream_tail(s), label));
        }
        if let Some(sum) = (count(role) > 1).then(|| report.sum(role)).flatten() {
            let lead = lead(
                "SUM",
                tag,
                (start, end),
                sum.bytes,
                sum.bits_per_second,
                rate,
            );
            lines.push(line(&lead, sum_tail(&sum), label));
        }
    }
    join_lines(lines)
}

/// The closing block: separator, header, a sender and a receiver line per stream (TCP: retransmits
/// on the sender line; UDP: jitter and lost/total (percent), plus an out-of-order line when any
/// arrived out of order), `[SUM]` lines with several streams, the iperf3 CPU line (process
/// percentages), perfpeer's "Service demand" line when known, "Test ended early: …" for a partial
/// test, then "\nperfpeer Done.\n".
pub fn text_summary(result: &TestResult) -> String {
    text_summary_as(result, Voice::Perfpeer)
}

/// Whose conventions a text follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// perfpeer's own: the CPU and service demand lines, "perfpeer Done." at the end.
    Perfpeer,
    /// Stock iperf3's, for scripts that read it (`perfpeer iperf3`, or perfpeer invoked as
    /// `iperf3`): the CPU line only with `-V`, no service demand, "iperf Done." at a client's
    /// end and nothing at a server's.
    Stock {
        /// `-V`.
        verbose: bool,
        /// `-f`: the bitrate column's unit.
        rate: RateFormat,
    },
}

impl Voice {
    /// The bitrate column's unit.
    pub fn rate(self) -> RateFormat {
        match self {
            Voice::Perfpeer => RateFormat::Adaptive,
            Voice::Stock { rate, .. } => rate,
        }
    }
}

/// iperf3's `-f`: the unit of the bitrate column (the transfer column is always adaptive, as
/// in iperf3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateFormat {
    /// The unit that suits the figure (iperf3's default).
    #[default]
    Adaptive,
    /// `k`, `m`, `g`, `t` (bits, powers of 1000) or `K`, `M`, `G`, `T` (bytes, powers of 1024).
    Fixed(char),
}

/// The summary in `voice`.
pub fn text_summary_as(result: &TestResult, voice: Voice) -> String {
    let mut lines = vec![SEPARATOR.to_string(), summary_header(result)];
    let flows = result.flows();
    let (main, reverse) = split_flows(result, &flows);
    for flow in main.into_iter().chain(reverse) {
        summary_flow_lines(result, flow, &mut lines, voice.rate());
    }
    match voice {
        Voice::Perfpeer => {
            lines.push(cpu_line(result));
            lines.extend(service_demand_line(result));
        }
        Voice::Stock { verbose: true, .. } => lines.push(cpu_line(result)),
        Voice::Stock { verbose: false, .. } => {}
    }
    if let Some(reason) = result.status.ended_early() {
        lines.push(format!("Test ended early: {reason}"));
    }
    let mut out = join_lines(lines);
    match (voice, result.local.role) {
        (Voice::Perfpeer, _) => out.push_str("\nperfpeer Done.\n"),
        (Voice::Stock { .. }, PeerRole::Client) => out.push_str("\niperf Done.\n"),
        (Voice::Stock { .. }, PeerRole::Server) => {}
    }
    out
}

/// The whole text of a finished test in `voice`: preamble, intervals, summary (what a
/// server sends for `--get-server-output`, and the iperf3 tab of a result).
pub fn text_whole(result: &TestResult, voice: Voice) -> String {
    let mut parts = vec![
        text_preamble(&Preamble::of(result)),
        text_interval_header(&result.spec, result.local.role),
    ];
    parts.extend(
        result
            .local
            .intervals
            .iter()
            .map(|report| text_interval_as(&result.spec, result.local.role, report, voice.rate())),
    );
    parts.push(text_summary_as(result, voice));
    let mut out = String::new();
    for part in parts {
        out.push_str(&part);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn summary_header(result: &TestResult) -> String {
    let has_retr = result
        .flows()
        .iter()
        .any(|f| f.sent.is_some_and(|t| t.retransmits.is_some()));
    let tail = match result.spec.protocol {
        Protocol::Tcp if has_retr => "         Retr",
        Protocol::Tcp => "",
        Protocol::Udp | Protocol::Dccp => "         Jitter    Lost/Total Datagrams",
    };
    format!(
        "{} Interval           Transfer     Bitrate{tail}",
        id_header(&result.spec)
    )
}

fn summary_flow_lines(
    result: &TestResult,
    flow: &Flow<'_>,
    lines: &mut Vec<String>,
    rate: RateFormat,
) {
    let tag = role_tag(
        &result.spec,
        result.local.role,
        flow_is_local_tx(result.local.role, flow),
    );
    let proto = result.spec.protocol;
    for (id, tx, rx) in &flow.streams {
        let cell = id_cell(*id);
        if let Some(s) = tx {
            lines.push(final_line(&cell, tag, proto, s, "sender", rate));
        }
        if let Some(s) = rx {
            lines.push(final_line(&cell, tag, proto, s, "receiver", rate));
            lines.extend(out_of_order_line(
                &cell,
                tag,
                s.duration.as_secs_f64(),
                s.udp_rx,
            ));
        }
    }
    if flow.streams.len() < 2 {
        return;
    }
    for (totals, label) in [(flow.sent, "sender"), (flow.received, "receiver")] {
        let Some(t) = totals else { continue };
        let lead = lead(
            "SUM",
            tag,
            (0.0, t.seconds),
            t.bytes,
            t.bits_per_second,
            rate,
        );
        lines.push(line(
            &lead,
            final_tail(proto, t.packets, t.retransmits, t.udp_rx),
            label,
        ));
        if label == "receiver" {
            lines.extend(out_of_order_line("SUM", tag, t.seconds, t.udp_rx));
        }
    }
}

fn final_line(
    cell: &str,
    tag: &str,
    proto: Protocol,
    s: &StreamFinal,
    label: &str,
    rate: RateFormat,
) -> String {
    let lead = lead(
        cell,
        tag,
        (0.0, s.duration.as_secs_f64()),
        s.bytes,
        s.bits_per_second(),
        rate,
    );
    line(
        &lead,
        final_tail(proto, s.packets, s.tcp.map(|t| t.retransmits), s.udp_rx),
        label,
    )
}

fn out_of_order_line(
    cell: &str,
    tag: &str,
    seconds: f64,
    rx: Option<UdpRxFinal>,
) -> Option<String> {
    let n = rx.map_or(0, |r| r.out_of_order);
    (n > 0).then(|| {
        format!(
            "[{cell}]{tag} {:6.2}-{seconds:<6.2} sec  {n} datagrams received out-of-order",
            0.0
        )
    })
}

fn cpu_line(result: &TestResult) -> String {
    let sends = end_sends(&result.spec, result.local.role);
    let (local_label, remote_label) = if sends {
        ("sender", "receiver")
    } else {
        ("receiver", "sender")
    };
    let mut out = format!(
        "CPU Utilization: local/{local_label} {}",
        cpu_text(&result.local.cpu)
    );
    if let Some(remote) = result.remote.as_ref().filter(|r| r.cpu.measured()) {
        out.push_str(&format!(
            ", remote/{remote_label} {}",
            cpu_text(&remote.cpu)
        ));
    }
    out
}

fn cpu_text(cpu: &CpuUsage) -> String {
    format!(
        "{:.1}% ({:.1}%u/{:.1}%s)",
        cpu.process_total_percent(),
        cpu.process_user_percent(),
        cpu.process_system_percent()
    )
}

fn service_demand_line(result: &TestResult) -> Option<String> {
    let (local, remote) = service_demands(result);
    let parts: Vec<String> = [("local", local), ("remote", remote)]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name} {v:.3} us/KB")))
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "Service demand: {} (host CPU, netperf definition)",
            parts.join(", ")
        )
    })
}

/// The columns after "Bitrate" on one line.
enum Tail {
    /// Nothing (TCP receiver, or no TCP info).
    Plain,
    /// Retransmits (summary sender, [SUM] sender).
    Retr(u64),
    /// Retransmits and congestion window in bytes (TCP sender interval).
    RetrCwnd(u64, u64),
    /// Datagrams sent (UDP sender interval).
    Datagrams(u64),
    /// Jitter ms, lost, total, lost percent (UDP receiver; summary sender with zeros).
    Loss(f64, u64, u64, f64),
}

impl Tail {
    fn text(&self) -> String {
        match *self {
            Tail::Plain => " ".repeat(18),
            Tail::Retr(r) => format!("  {r:>3}             "),
            Tail::RetrCwnd(r, cwnd) => format!("  {r:>3}   {}       ", format_bytes(cwnd as f64)),
            Tail::Datagrams(n) => format!("  {n}  "),
            Tail::Loss(jitter, lost, total, pct) => {
                format!(
                    "  {jitter:5.3} ms  {lost}/{total} ({}%)  ",
                    two_significant(pct)
                )
            }
        }
    }
}

fn stream_tail(s: &StreamInterval) -> Tail {
    match (s.tcp, s.udp_rx, s.packets) {
        (Some(t), _, _) => Tail::RetrCwnd(t.retransmits, t.snd_cwnd),
        (_, Some(u), _) => sample_loss(&u),
        (_, _, Some(n)) => Tail::Datagrams(n),
        _ => Tail::Plain,
    }
}

fn sum_tail(s: &IntervalSum) -> Tail {
    match (s.retransmits, s.udp_rx, s.packets) {
        (Some(r), _, _) => Tail::Retr(r),
        (_, Some(u), _) => sample_loss(&u),
        (_, _, Some(n)) => Tail::Datagrams(n),
        _ => Tail::Plain,
    }
}

fn sample_loss(u: &UdpRxSample) -> Tail {
    Tail::Loss(u.jitter_ms, u.lost, u.packets, u.lost_percent())
}

/// Summary columns: UDP receivers show their loss, UDP senders zeros over the datagrams sent.
fn final_tail(
    proto: Protocol,
    packets: Option<u64>,
    retr: Option<u64>,
    rx: Option<UdpRxFinal>,
) -> Tail {
    match (proto, rx, retr) {
        (_, Some(u), _) => Tail::Loss(u.jitter_ms, u.lost, u.expected(), u.lost_percent()),
        (Protocol::Udp | Protocol::Dccp, None, _) => Tail::Loss(0.0, 0, packets.unwrap_or(0), 0.0),
        (Protocol::Tcp, None, Some(r)) => Tail::Retr(r),
        (Protocol::Tcp, None, None) => Tail::Plain,
    }
}

/// "[  1][TX-C]   0.00-1.00   sec  1.16 GBytes  10.0 Gbits/sec": the columns every line shares.
fn lead(
    cell: &str,
    tag: &str,
    (start, end): (f64, f64),
    bytes: u64,
    bps: f64,
    unit: RateFormat,
) -> String {
    let transfer = format_bytes(bytes as f64);
    let rate = match unit {
        RateFormat::Adaptive => format_bits(bps),
        RateFormat::Fixed(c) => format_rate_in(bps, c),
    };
    format!("[{cell}]{tag} {start:6.2}-{end:<6.2} sec  {transfer}  {rate}/sec")
}

fn line(lead: &str, tail: Tail, label: &str) -> String {
    format!("{lead}{}{label}", tail.text())
        .trim_end()
        .to_string()
}

fn id_cell(id: u32) -> String {
    format!("{:>3}", socket_number(id))
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

fn id_header(spec: &TestSpec) -> &'static str {
    if spec.direction == Direction::Bidir {
        "[ ID][Role]"
    } else {
        "[ ID]"
    }
}

fn role_tag(spec: &TestSpec, local: PeerRole, sending: bool) -> &'static str {
    if spec.direction != Direction::Bidir {
        return "";
    }
    match (sending, local) {
        (true, PeerRole::Client) => "[TX-C]",
        (false, PeerRole::Client) => "[RX-C]",
        (true, PeerRole::Server) => "[TX-S]",
        (false, PeerRole::Server) => "[RX-S]",
    }
}

fn join_lines(lines: Vec<String>) -> String {
    lines.into_iter().map(|l| l + "\n").collect()
}

/// C's `%.2g`, which iperf3 uses for loss percentages: two significant digits, trailing zeros
/// dropped, exponent form below 1e-4 and from 100 up (so 100 % prints "1e+02", as in iperf3).
#[allow(
    clippy::cast_sign_loss,
    reason = "the number of decimals, 1 - exponent, is positive for the values below 1 that take this path"
)]
fn two_significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { v.to_string() };
    }
    let sci = format!("{v:.1e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..2).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.abs());
    }
    let decimals = (1 - exp) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
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

/// Service demand of the local and the remote end, from the model.
fn service_demands(result: &TestResult) -> (Option<f64>, Option<f64>) {
    let local = result.local.role;
    let remote = match local {
        PeerRole::Client => PeerRole::Server,
        PeerRole::Server => PeerRole::Client,
    };
    (
        result.service_demand_us_per_kb(local),
        result.service_demand_us_per_kb(remote),
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

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

type Obj = Map<String, Value>;

fn put(m: &mut Obj, key: &str, value: impl Into<Value>) {
    m.insert(key.to_string(), value.into());
}

/// The iperf3 `-J` object: `start`, `intervals`, `end`, plus perfpeer's own `perfpeer` section
/// and, for a partial test, `error`. Keys and units are iperf3's (seconds and `bits_per_second` as
/// floats, `jitter_ms`, `lost_percent`, RTTs in µs, `socket` = stream id). Figures perfpeer does
/// not measure (`snd_wnd`, `max_snd_wnd`) are absent rather than zero. `target_bitrate` is per
/// stream, as iperf3's `-b`; the whole-test figure is in `perfpeer.spec`.
pub fn json(result: &TestResult) -> Value {
    let mut top = Obj::new();
    put(&mut top, "start", Value::Object(result_start_json(result)));
    let intervals = result
        .local
        .intervals
        .iter()
        .map(|r| interval_json(&result.spec, r))
        .collect::<Vec<_>>();
    put(&mut top, "intervals", intervals);
    put(&mut top, "end", Value::Object(end_json(result)));
    put(&mut top, "perfpeer", perfpeer_json(result));
    if let Some(reason) = result.status.ended_early() {
        put(&mut top, "error", reason);
    }
    cjson_numbers(Value::Object(top))
}

/// iperf3's JSON library prints a whole number without a fraction (`"start": 0`, `"omit": 0`,
/// `"lost_percent": 0`) and any other with up to 15 significant digits; consumers written
/// against stock output may test `isinstance(x, int)` or compare text, so perfpeer's numbers
/// take the same shape.
#[allow(
    clippy::cast_possible_truncation,
    reason = "a whole number below 1e15 converts to i64 exactly"
)]
pub fn cjson_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 1e15 => {
                Value::from(f as i64)
            }
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(cjson_numbers).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, x)| (k, cjson_numbers(x))).collect())
        }
        other => other,
    }
}

/// iperf3's `system_info`, `uname -a`'s fields: system, host name, release, version, machine.
pub fn system_info(host: &HostInfo) -> String {
    match host.system.split_once(' ') {
        Some((system, rest)) if !host.hostname.is_empty() => {
            format!("{system} {} {rest}", host.hostname)
        }
        _ => host.system.clone(),
    }
}

/// The `--json-stream` start line, `{"event":"start","data":…}` as iperf3 3.17+ (without the
/// `cookie` and socket buffer figures, which are known only from the final report).
pub fn json_stream_start(p: &Preamble<'_>, started_unix_ms: u64, host: &HostInfo) -> String {
    event_line(
        "start",
        &Value::Object(start_json(p, started_unix_ms, host, None)),
    )
}

/// The `--json-stream` line for one interval: `{"event":"interval","data":…}`, `data` shaped as
/// an element of `-J`'s `intervals`.
pub fn json_stream_interval(spec: &TestSpec, report: &IntervalReport) -> String {
    event_line("interval", &interval_json(spec, report))
}

/// The `--json-stream` end line: `{"event":"end","data":…}`, `data` being `-J`'s `end` with the
/// `perfpeer` section added. A partial test is preceded by an `{"event":"error","data":reason}`
/// line (lines separated by `\n`, no trailing newline).
pub fn json_stream_end(result: &TestResult) -> String {
    let mut end = end_json(result);
    put(&mut end, "perfpeer", perfpeer_json(result));
    let end_line = event_line("end", &Value::Object(end));
    match result.status.ended_early() {
        Some(reason) => format!("{}\n{end_line}", event_line("error", &reason.into())),
        None => end_line,
    }
}

/// A failed test in `-J`, as stock iperf3 prints one: the skeleton of a result (`start` with no
/// connection, the version and system, empty `intervals` and `end`) and `error`, pretty-printed.
pub fn json_error(message: &str, host: &HostInfo) -> String {
    let mut start = Obj::new();
    put(&mut start, "connected", Vec::<Value>::new());
    put(&mut start, "version", format!("perfpeer {}", host.version));
    put(&mut start, "system_info", system_info(host));
    let mut top = Obj::new();
    put(&mut top, "start", Value::Object(start));
    put(&mut top, "intervals", Vec::<Value>::new());
    put(&mut top, "end", Value::Object(Obj::new()));
    put(&mut top, "error", message);
    serde_json::to_string_pretty(&Value::Object(top)).unwrap_or_default()
}

/// A failed test in `--json-stream`: `{"event":"error","data":"..."}`.
pub fn json_stream_error(message: &str) -> String {
    event_line("error", &message.into())
}

fn event_line(event: &str, data: &Value) -> String {
    let data = cjson_numbers(data.clone());
    format!(r#"{{"event":"{event}","data":{data}}}"#)
}

// --- start ---

fn result_start_json(result: &TestResult) -> Obj {
    let p = Preamble::of(result);
    start_json(
        &p,
        result.started_unix_ms,
        &result.local.host,
        Some((&result.id, &result.local)),
    )
}

fn start_json(
    p: &Preamble<'_>,
    started_unix_ms: u64,
    host: &HostInfo,
    side: Option<(&str, &SideReport)>,
) -> Obj {
    let mut m = Obj::new();
    put(
        &mut m,
        "connected",
        p.sockets.iter().map(connected_json).collect::<Vec<_>>(),
    );
    put(&mut m, "version", format!("perfpeer {}", host.version));
    put(&mut m, "system_info", system_info(host));
    put(&mut m, "timestamp", timestamp_json(started_unix_ms));
    match p.role {
        PeerRole::Client => put(&mut m, "connecting_to", addr_json(p.server_addr)),
        PeerRole::Server => {
            if let Some(first) = p.sockets.first() {
                put(&mut m, "accepted_connection", addr_json(&first.remote));
            }
        }
    }
    if let Some((id, _)) = side {
        put(&mut m, "cookie", id);
    }
    if p.spec.protocol == Protocol::Tcp {
        match (p.spec.mss, side.and_then(|(_, s)| s.tcp_mss)) {
            (Some(mss), _) => put(&mut m, "tcp_mss", mss),
            (None, Some(mss)) => put(&mut m, "tcp_mss_default", mss),
            (None, None) => {}
        }
    }
    put(
        &mut m,
        "target_bitrate",
        p.spec.per_stream_rate().map_or(0, |r| r.0),
    );
    put(&mut m, "fq_rate", 0);
    put(&mut m, "sock_bufsize", p.spec.window.unwrap_or(0));
    if let Some(b) = side.and_then(|(_, s)| s.sndbuf_actual) {
        put(&mut m, "sndbuf_actual", b);
    }
    if let Some(b) = side.and_then(|(_, s)| s.rcvbuf_actual) {
        put(&mut m, "rcvbuf_actual", b);
    }
    put(&mut m, "test_start", test_start_json(p.spec));
    m
}

fn connected_json(s: &SocketInfo) -> Value {
    let mut m = Obj::new();
    put(&mut m, "socket", socket_number(s.id));
    let (lh, lp) = split_addr(&s.local);
    let (rh, rp) = split_addr(&s.remote);
    put(&mut m, "local_host", lh);
    if let Some(port) = lp {
        put(&mut m, "local_port", port);
    }
    put(&mut m, "remote_host", rh);
    if let Some(port) = rp {
        put(&mut m, "remote_port", port);
    }
    Value::Object(m)
}

fn addr_json(addr: &str) -> Value {
    let (host, port) = split_addr(addr);
    let mut m = Obj::new();
    put(&mut m, "host", host);
    if let Some(port) = port {
        put(&mut m, "port", port);
    }
    Value::Object(m)
}

fn timestamp_json(unix_ms: u64) -> Value {
    let mut m = Obj::new();
    put(&mut m, "time", http_date(unix_ms / 1000));
    put(&mut m, "timesecs", unix_ms / 1000);
    Value::Object(m)
}

fn test_start_json(spec: &TestSpec) -> Value {
    let (duration, bytes) = match spec.end {
        EndCondition::Time { duration } => (secs_json(duration), 0),
        EndCondition::Bytes { bytes } => (Value::from(0), bytes),
    };
    let mut m = Obj::new();
    put(&mut m, "protocol", spec.protocol.upper_name());
    put(&mut m, "num_streams", spec.streams);
    put(&mut m, "blksize", spec.len);
    put(&mut m, "omit", secs_json(spec.omit));
    put(&mut m, "duration", duration);
    put(&mut m, "bytes", bytes);
    put(&mut m, "blocks", 0);
    put(
        &mut m,
        "reverse",
        u8::from(spec.direction == Direction::Reverse),
    );
    put(&mut m, "tos", spec.tos.unwrap_or(0));
    put(
        &mut m,
        "target_bitrate",
        spec.per_stream_rate().map_or(0, |r| r.0),
    );
    put(
        &mut m,
        "bidir",
        u8::from(spec.direction == Direction::Bidir),
    );
    put(&mut m, "fqrate", 0);
    put(&mut m, "interval", spec.interval.as_secs_f64());
    Value::Object(m)
}

/// Whole seconds as an integer (as iperf3 prints `omit` and `duration`), else a float.
fn secs_json(d: std::time::Duration) -> Value {
    if d.subsec_nanos() == 0 {
        Value::from(d.as_secs())
    } else {
        Value::from(d.as_secs_f64())
    }
}

/// RFC 1123 date in GMT, e.g. "Wed, 02 Dec 2026 14:08:17 GMT".
#[allow(
    clippy::cast_possible_truncation,
    reason = "calendar fields (day, month, hour, …) of a date are small numbers"
)]
pub fn http_date(unix_secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = UtcTime::of(unix_secs);
    let weekday = DAYS[((unix_secs / 86_400 + 4) % 7) as usize]; // 1970-01-01 was a Thursday
    format!(
        "{weekday}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        t.day,
        MONTHS[t.month as usize - 1],
        t.year,
        t.hour,
        t.minute,
        t.second
    )
}

/// A Unix time in seconds as UTC calendar fields: year, month 1–12, day 1–31, hour, minute,
/// second. Every printed date (HTTP, iperf 2's CSV, the result page) starts here.
pub(crate) struct UtcTime {
    pub year: u64,
    pub month: u64,
    pub day: u64,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl UtcTime {
    pub(crate) fn of(unix_secs: u64) -> UtcTime {
        let (year, month, day) = civil_from_days(unix_secs / 86_400);
        let secs = unix_secs % 86_400;
        UtcTime {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
        }
    }
}

/// Proleptic Gregorian (year, month 1–12, day 1–31) of a day count since 1970-01-01. Years are
/// counted from March so that the leap day is the last day of a year; 400-year eras repeat exactly.
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    const ERA_DAYS: u64 = 146_097;
    let shifted = days + 719_468; // days from 0000-03-01
    let (era, day_of_era) = (shifted / ERA_DAYS, shifted % ERA_DAYS);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

// --- intervals ---

/// One element of `intervals`: every stream, `sum` over the sending streams (or the receiving
/// ones at a pure receiver) and, in bidir, `sum_bidir_reverse` over the receiving ones.
fn interval_json(spec: &TestSpec, report: &IntervalReport) -> Value {
    let mut m = Obj::new();
    let streams = report
        .streams
        .iter()
        .map(|s| stream_interval_json(spec, report, s))
        .collect::<Vec<_>>();
    put(&mut m, "streams", streams);
    let has_sender = report.streams.iter().any(|s| s.role == StreamRole::Sender);
    let main = if has_sender {
        StreamRole::Sender
    } else {
        StreamRole::Receiver
    };
    if let Some(sum) = report.sum(main) {
        put(&mut m, "sum", interval_sum_json(spec, report, &sum, main));
    }
    let reverse = (spec.direction == Direction::Bidir && has_sender)
        .then(|| report.sum(StreamRole::Receiver));
    if let Some(sum) = reverse.flatten() {
        put(
            &mut m,
            "sum_bidir_reverse",
            interval_sum_json(spec, report, &sum, StreamRole::Receiver),
        );
    }
    Value::Object(m)
}

fn stream_interval_json(spec: &TestSpec, report: &IntervalReport, s: &StreamInterval) -> Value {
    let mut m = Obj::new();
    put(&mut m, "socket", socket_number(s.id));
    let bps = bits_per_second(s.bytes, report.seconds());
    let (start, end) = report.iperf3_span(spec.omit);
    put_span(&mut m, start, end, report.seconds(), s.bytes, bps);
    if let Some(t) = s.tcp {
        put(&mut m, "retransmits", t.retransmits);
        put(&mut m, "snd_cwnd", t.snd_cwnd);
        if let Some(wnd) = t.snd_wnd {
            put(&mut m, "snd_wnd", wnd);
        }
        put(&mut m, "rtt", t.rtt_us);
        put(&mut m, "rttvar", t.rttvar_us);
        put(&mut m, "pmtu", t.pmtu);
    }
    if let Some(n) = s.packets {
        put(&mut m, "packets", n);
    }
    if let Some(u) = s.udp_rx {
        put_loss(&mut m, u.jitter_ms, u.lost, u.packets, u.lost_percent());
    }
    put(&mut m, "omitted", report.omitted);
    put(&mut m, "sender", s.role == StreamRole::Sender);
    Value::Object(m)
}

fn interval_sum_json(
    spec: &TestSpec,
    report: &IntervalReport,
    sum: &IntervalSum,
    role: StreamRole,
) -> Value {
    let mut m = Obj::new();
    let (start, end) = report.iperf3_span(spec.omit);
    put_span(
        &mut m,
        start,
        end,
        report.seconds(),
        sum.bytes,
        sum.bits_per_second,
    );
    if let Some(r) = sum.retransmits {
        put(&mut m, "retransmits", r);
    }
    if let Some(n) = sum.packets {
        put(&mut m, "packets", n);
    }
    if let Some(u) = sum.udp_rx {
        put_loss(&mut m, u.jitter_ms, u.lost, u.packets, u.lost_percent());
    }
    put(&mut m, "omitted", report.omitted);
    put(&mut m, "sender", role == StreamRole::Sender);
    Value::Object(m)
}

fn put_span(m: &mut Obj, start: f64, end: f64, seconds: f64, bytes: u64, bps: f64) {
    put(m, "start", start);
    put(m, "end", end);
    put(m, "seconds", seconds);
    put(m, "bytes", bytes);
    put(m, "bits_per_second", bps);
}

fn put_loss(m: &mut Obj, jitter_ms: f64, lost: u64, packets: u64, lost_percent: f64) {
    put(m, "jitter_ms", jitter_ms);
    put(m, "lost_packets", lost);
    put(m, "packets", packets);
    put(m, "lost_percent", lost_percent);
}

// --- end ---

fn end_json(result: &TestResult) -> Obj {
    let flows = result.flows();
    let (main, reverse) = split_flows(result, &flows);
    let mut m = Obj::new();
    let streams: Vec<Value> = main
        .into_iter()
        .chain(reverse)
        .flat_map(|f| {
            f.streams
                .iter()
                .map(move |(_, tx, rx)| end_stream_json(result, f, *tx, *rx))
        })
        .collect();
    put(&mut m, "streams", streams);
    for (flow, suffix) in [(main, ""), (reverse, "_bidir_reverse")] {
        if let Some(flow) = flow {
            put_flow_sums(&mut m, result, flow, suffix);
        }
    }
    put(&mut m, "cpu_utilization_percent", cpu_json(result));
    if let (Protocol::Tcp, Some(flow)) = (result.spec.protocol, main) {
        let (client, server) = result.sides();
        let (tx, rx) = if flow.client_to_server {
            (client, server)
        } else {
            (server, client)
        };
        for (key, side) in [
            ("sender_tcp_congestion", tx),
            ("receiver_tcp_congestion", rx),
        ] {
            if let Some(cc) = side.and_then(|s| s.congestion_used.as_deref()) {
                put(&mut m, key, cc);
            }
        }
    }
    m
}

/// TCP: `{sender, receiver}` (each present when that end reported). UDP: `{udp}` from the local
/// end's view, with the receiver's jitter and loss.
fn end_stream_json(
    result: &TestResult,
    flow: &Flow<'_>,
    tx: Option<&StreamFinal>,
    rx: Option<&StreamFinal>,
) -> Value {
    let mut m = Obj::new();
    match result.spec.protocol {
        // Both views say whether this end sent the stream, as stock iperf3's do.
        Protocol::Tcp => {
            let local_tx = flow_is_local_tx(result.local.role, flow);
            for (key, view) in [("sender", tx), ("receiver", rx)] {
                if let Some(s) = view {
                    put(&mut m, key, final_json(s, None, local_tx));
                }
            }
        }
        Protocol::Udp | Protocol::Dccp => {
            let local_tx = flow_is_local_tx(result.local.role, flow);
            let view = if local_tx { tx.or(rx) } else { rx.or(tx) };
            if let Some(s) = view {
                let rx_final = rx.and_then(|r| r.udp_rx);
                put(
                    &mut m,
                    "udp",
                    final_json(
                        s,
                        Some(rx_final.unwrap_or_default()),
                        s.role == StreamRole::Sender,
                    ),
                );
            }
        }
    }
    Value::Object(m)
}

fn final_json(s: &StreamFinal, udp: Option<UdpRxFinal>, sender_flag: bool) -> Value {
    let mut m = Obj::new();
    put(&mut m, "socket", socket_number(s.id));
    let seconds = s.duration.as_secs_f64();
    put_span(&mut m, 0.0, seconds, seconds, s.bytes, s.bits_per_second());
    if let Some(t) = s.tcp {
        put(&mut m, "retransmits", t.retransmits);
        put(&mut m, "max_snd_cwnd", t.max_snd_cwnd);
        // 0 where unknown (the far end's figures from a results message), as stock iperf3
        // prints figures it has none of.
        put(&mut m, "max_snd_wnd", t.max_snd_wnd.unwrap_or(0));
        put(&mut m, "max_rtt", t.max_rtt_us);
        put(&mut m, "min_rtt", t.min_rtt_us);
        put(&mut m, "mean_rtt", t.mean_rtt_us);
    }
    if let Some(u) = udp {
        let packets = if u.expected() > 0 {
            u.expected()
        } else {
            s.packets.unwrap_or(0)
        };
        put_loss(&mut m, u.jitter_ms, u.lost, packets, u.lost_percent());
        put(&mut m, "out_of_order", u.out_of_order);
    }
    put(&mut m, "sender", sender_flag);
    Value::Object(m)
}

fn put_flow_sums(m: &mut Obj, result: &TestResult, flow: &Flow<'_>, suffix: &str) {
    let udp = result.spec.protocol.is_datagram();
    let local_tx = flow_is_local_tx(result.local.role, flow);
    if udp {
        let preferred = if local_tx {
            flow.sent.map(|t| (t, true))
        } else {
            flow.received.map(|t| (t, false))
        };
        let view = preferred
            .or(flow.sent.map(|t| (t, true)))
            .or(flow.received.map(|t| (t, false)));
        if let Some((t, sender)) = view {
            let loss = flow.received.and_then(|r| r.udp_rx).unwrap_or_default();
            put(
                m,
                &format!("sum{suffix}"),
                totals_json(&t, sender, sender, Some(loss)),
            );
        }
    }
    if let Some(t) = flow.sent {
        let loss = udp.then(|| UdpRxFinal {
            sender_packets: t.packets,
            ..Default::default()
        });
        put(
            m,
            &format!("sum_sent{suffix}"),
            totals_json(&t, true, udp || local_tx, loss),
        );
    }
    if let Some(t) = flow.received {
        let loss = if udp {
            Some(t.udp_rx.unwrap_or_default())
        } else {
            None
        };
        put(
            m,
            &format!("sum_received{suffix}"),
            totals_json(&t, false, !udp && local_tx, loss),
        );
    }
}

/// A `sum*` object; `loss` carries the UDP keys (for a sender: zero loss over its datagrams sent,
/// passed as `sender_packets`).
/// `sender_flag` is the object's `sender` key: for TCP stock iperf3 says there whether this end
/// sent the flow, for UDP whether the object is the sending side's.
fn totals_json(
    t: &DirectionTotals,
    sender: bool,
    sender_flag: bool,
    loss: Option<UdpRxFinal>,
) -> Value {
    let mut m = Obj::new();
    put_span(
        &mut m,
        0.0,
        t.seconds,
        t.seconds,
        t.bytes,
        t.bits_per_second,
    );
    if let (true, Some(r)) = (sender, t.retransmits) {
        put(&mut m, "retransmits", r);
    }
    if let Some(u) = loss {
        let packets = if u.expected() > 0 {
            u.expected()
        } else {
            u.sender_packets.or(t.packets).unwrap_or(0)
        };
        put_loss(&mut m, u.jitter_ms, u.lost, packets, u.lost_percent());
    }
    put(&mut m, "sender", sender_flag);
    Value::Object(m)
}

fn cpu_json(result: &TestResult) -> Value {
    let mut m = Obj::new();
    let local = &result.local.cpu;
    put(&mut m, "host_total", local.process_total_percent());
    put(&mut m, "host_user", local.process_user_percent());
    put(&mut m, "host_system", local.process_system_percent());
    if let Some(remote) = result.remote.as_ref().filter(|r| r.cpu.measured()) {
        put(&mut m, "remote_total", remote.cpu.process_total_percent());
        put(&mut m, "remote_user", remote.cpu.process_user_percent());
        put(&mut m, "remote_system", remote.cpu.process_system_percent());
    }
    Value::Object(m)
}

// --- perfpeer extras ---

fn perfpeer_json(result: &TestResult) -> Value {
    let flows = result.flows();
    let mut m = Obj::new();
    put(&mut m, "version", result.local.host.version.as_str());
    match result.status.ended_early() {
        None => put(&mut m, "status", "complete"),
        Some(reason) => {
            put(&mut m, "status", "partial");
            put(&mut m, "partial_reason", reason);
        }
    }
    let (sd_local, sd_remote) = service_demands(result);
    put(
        &mut m,
        "service_demand_us_per_kb",
        local_remote_json(sd_local, sd_remote),
    );
    let host_remote = result
        .remote
        .as_ref()
        .filter(|r| r.cpu.host_measured())
        .map(|r| r.cpu.host_total_percent());
    put(
        &mut m,
        "host_cpu_percent",
        local_remote_json(Some(result.local.cpu.host_total_percent()), host_remote),
    );
    if result.spec.protocol.is_datagram() {
        let (main, reverse) = split_flows(result, &flows);
        let mut udp = Obj::new();
        for (flow, key) in [(main, "duplicates"), (reverse, "duplicates_bidir_reverse")] {
            if let Some(rx) = flow.and_then(|f| f.received).and_then(|t| t.udp_rx) {
                put(&mut udp, key, rx.duplicates);
            }
        }
        if let Some(gap) = main
            .and_then(|f| f.received)
            .and_then(|t| t.udp_rx?.max_gap_ms)
        {
            put(&mut udp, "max_gap_ms", gap);
        }
        put(&mut m, "udp", udp);
    }
    if result.spec.protocol == Protocol::Dccp {
        put(&mut m, "dccp", super::dccp::json(result));
    }
    put(
        &mut m,
        "spec",
        serde_json::to_value(&result.spec).unwrap_or(Value::Null),
    );
    Value::Object(m)
}

fn local_remote_json(local: Option<f64>, remote: Option<f64>) -> Value {
    let mut m = Obj::new();
    for (key, v) in [("local", local), ("remote", remote)] {
        if let Some(v) = v {
            put(&mut m, key, v);
        }
    }
    Value::Object(m)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::{TcpFinal, TcpSample, TestStatus};

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// `user`/`system` process seconds over 10 s; host busy `host_pct` % split 1:2 over `cpus`.
    fn cpu(user: f64, system: f64, host_pct: f64, cpus: u32) -> CpuUsage {
        CpuUsage {
            elapsed: secs(10.0),
            process_user_s: user,
            process_system_s: system,
            host_user_percent: host_pct / 3.0,
            host_system_percent: host_pct * 2.0 / 3.0,
            cpus,
        }
    }

    fn side(role: PeerRole, streams: Vec<StreamFinal>, cpu: CpuUsage) -> SideReport {
        let (local, remote) = match role {
            PeerRole::Client => ("10.0.0.1:40000", "10.0.0.2:5201"),
            PeerRole::Server => ("10.0.0.2:5201", "10.0.0.1:40000"),
        };
        SideReport {
            role,
            host: HostInfo {
                hostname: "h".into(),
                system: "Linux h 6.8.0 x86_64".into(),
                version: "0.1.0".into(),
            },
            sockets: vec![SocketInfo {
                id: 1,
                local: local.into(),
                remote: remote.into(),
                dccp: None,
            }],
            sndbuf_actual: Some(16_384),
            rcvbuf_actual: Some(131_072),
            tcp_mss: Some(1448),
            congestion_used: None,
            intervals: Vec::new(),
            streams,
            cpu,
        }
    }

    fn fin(id: u32, role: StreamRole, bytes: u64, duration: f64) -> StreamFinal {
        StreamFinal {
            id,
            role,
            bytes,
            duration: secs(duration),
            packets: None,
            tcp: None,
            udp_rx: None,
            rr: None,
            writes: None,
        }
    }

    fn tcp_tx(id: u32, bytes: u64, retransmits: u64) -> StreamFinal {
        let tcp = TcpFinal {
            retransmits,
            max_snd_cwnd: 3_145_728,
            max_rtt_us: 400,
            min_rtt_us: 90,
            mean_rtt_us: 150,
            max_snd_wnd: Some(4_194_304),
        };
        StreamFinal {
            tcp: Some(tcp),
            ..fin(id, StreamRole::Sender, bytes, 10.0)
        }
    }

    fn tx_interval(id: u32, bytes: u64, retransmits: u64, snd_cwnd: u64) -> StreamInterval {
        let tcp = TcpSample {
            retransmits,
            snd_cwnd,
            rtt_us: 120,
            rttvar_us: 30,
            pmtu: 1500,
            snd_wnd: Some(3_000_000),
        };
        StreamInterval {
            id,
            role: StreamRole::Sender,
            bytes,
            packets: None,
            tcp: Some(tcp),
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
            writes: None,
        }
    }

    fn interval(start: f64, streams: Vec<StreamInterval>) -> IntervalReport {
        IntervalReport {
            start: secs(start),
            end: secs(start + 1.0),
            omitted: false,
            streams,
        }
    }

    fn result(spec: TestSpec, local: SideReport, remote: Option<SideReport>) -> TestResult {
        TestResult {
            id: "abc123".into(),
            spec,
            started_unix_ms: 1_796_220_497_250,
            server_addr: "10.0.0.2:5201".into(),
            local,
            remote,
            status: TestStatus::Complete,
        }
    }

    /// Client sending TCP, one stream, 12.5 GB in 10 s.
    pub(crate) fn tcp_single() -> TestResult {
        let mut local = side(
            PeerRole::Client,
            vec![tcp_tx(1, 12_500_000_000, 7)],
            cpu(0.32, 9.19, 10.0, 4),
        );
        local.intervals = vec![interval(
            0.0,
            vec![tx_interval(1, 1_250_000_000, 3, 1_572_864)],
        )];
        local.congestion_used = Some("cubic".into());
        let rx = fin(1, StreamRole::Receiver, 12_499_000_000, 10.04);
        let mut remote = side(PeerRole::Server, vec![rx], cpu(0.5, 7.5, 30.0, 2));
        remote.congestion_used = Some("bbr".into());
        result(TestSpec::new(Protocol::Tcp), local, Some(remote))
    }

    fn tcp_two_streams() -> TestResult {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.streams = 2;
        let tx = vec![tcp_tx(1, 5_000_000_000, 4), tcp_tx(2, 5_000_000_000, 5)];
        let mut local = side(PeerRole::Client, tx, cpu(0.1, 2.0, 10.0, 4));
        let streams = |base: u64| {
            vec![
                tx_interval(1, 500_000_000, base, 1 << 20),
                tx_interval(2, 500_000_000, base + 1, 1 << 20),
            ]
        };
        local.intervals = vec![interval(0.0, streams(0)), interval(1.0, streams(1))];
        let rx = vec![
            fin(1, StreamRole::Receiver, 5_000_000_000, 10.0),
            fin(2, StreamRole::Receiver, 5_000_000_000, 10.0),
        ];
        result(
            spec,
            local,
            Some(side(PeerRole::Server, rx, cpu(0.1, 1.0, 10.0, 4))),
        )
    }

    /// Server receiving UDP from the client: 900 datagrams sent, 20 lost, 2 late, 1 duplicate.
    fn udp_receiver() -> TestResult {
        let udp_rx = UdpRxFinal {
            received: 880,
            sender_packets: Some(900),
            lost: 20,
            out_of_order: 2,
            duplicates: 1,
            jitter_ms: 0.05,
            max_gap_ms: None,
        };
        let rx = StreamFinal {
            udp_rx: Some(udp_rx),
            ..fin(1, StreamRole::Receiver, 1448 * 880, 10.0)
        };
        let mut local = side(PeerRole::Server, vec![rx], cpu(0.1, 0.2, 1.0, 2));
        let sample = UdpRxSample {
            packets: 90,
            lost: 5,
            out_of_order: 0,
            duplicates: 0,
            jitter_ms: 0.123,
            max_gap_ms: None,
        };
        let s = StreamInterval {
            id: 1,
            role: StreamRole::Receiver,
            bytes: 1448 * 85,
            packets: None,
            tcp: None,
            udp_rx: Some(sample),
            tfrc: None,
            probes: Vec::new(),
            writes: None,
        };
        local.intervals = vec![interval(0.0, vec![s])];
        let tx = StreamFinal {
            packets: Some(900),
            ..fin(1, StreamRole::Sender, 1448 * 900, 10.0)
        };
        result(
            TestSpec::new(Protocol::Udp),
            local,
            Some(side(PeerRole::Client, vec![tx], cpu(0.2, 0.3, 1.0, 2))),
        )
    }

    /// Client in bidir TCP: stream 1 client→server, stream 2 server→client.
    fn tcp_bidir() -> TestResult {
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.direction = Direction::Bidir;
        let local_streams = vec![
            tcp_tx(1, 1_250_000_000, 2),
            fin(2, StreamRole::Receiver, 625_000_000, 10.0),
        ];
        let mut local = side(PeerRole::Client, local_streams, cpu(0.5, 5.0, 10.0, 4));
        let rx = StreamInterval {
            id: 2,
            role: StreamRole::Receiver,
            bytes: 62_500_000,
            packets: None,
            tcp: None,
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
            writes: None,
        };
        local.intervals = vec![interval(
            0.0,
            vec![tx_interval(1, 125_000_000, 0, 262_144), rx],
        )];
        let remote_streams = vec![
            fin(1, StreamRole::Receiver, 1_250_000_000, 10.0),
            tcp_tx(2, 625_000_000, 1),
        ];
        result(
            spec,
            local,
            Some(side(
                PeerRole::Server,
                remote_streams,
                cpu(0.5, 5.0, 10.0, 4),
            )),
        )
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn tcp_single_stream_text() {
        let r = tcp_single();
        let p = Preamble {
            role: PeerRole::Client,
            server_addr: &r.server_addr,
            spec: &r.spec,
            sockets: &r.local.sockets,
        };
        assert_eq!(
            text_preamble(&p),
            "Connecting to host 10.0.0.2, port 5201\n[  5] local 10.0.0.1 port 40000 connected to 10.0.0.2 port 5201\n"
        );
        assert_eq!(
            text_interval_header(&r.spec, PeerRole::Client),
            "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
        );
        assert_eq!(
            text_interval(&r.spec, PeerRole::Client, &r.local.intervals[0]),
            "[  5]   0.00-1.00   sec  1.16 GBytes  10.0 Gbits/sec    3   1.50 MBytes\n"
        );
        assert_eq!(
            lines(&text_summary(&r)),
            [
                "- - - - - - - - - - - - - - - - - - - - - - - - -",
                "[ ID] Interval           Transfer     Bitrate         Retr",
                "[  5]   0.00-10.00  sec  11.6 GBytes  10.0 Gbits/sec    7             sender",
                "[  5]   0.00-10.04  sec  11.6 GBytes  9.96 Gbits/sec                  receiver",
                "CPU Utilization: local/sender 95.1% (3.2%u/91.9%s), remote/receiver 80.0% (5.0%u/75.0%s)",
                "Service demand: local 0.328 us/KB, remote 0.492 us/KB (host CPU, netperf definition)",
                "",
                "perfpeer Done.",
            ]
        );
    }

    #[test]
    fn tcp_single_stream_json() {
        let j = json(&tcp_single());
        assert_eq!(j["start"]["test_start"]["protocol"], "TCP");
        assert_eq!(j["start"]["test_start"]["duration"], 10);
        assert_eq!(j["start"]["test_start"]["interval"], 1);
        assert_eq!(j["start"]["cookie"], "abc123");
        assert_eq!(j["start"]["tcp_mss_default"], 1448);
        assert_eq!(j["start"]["connecting_to"]["port"], 5201);
        assert_eq!(j["start"]["connected"][0]["local_port"], 40000);
        assert_eq!(
            j["start"]["timestamp"]["time"],
            "Wed, 02 Dec 2026 14:08:17 GMT"
        );
        assert_eq!(j["start"]["timestamp"]["timesecs"], 1_796_220_497u64);
        let s = &j["intervals"][0]["streams"][0];
        assert_eq!(
            (
                s["socket"].clone(),
                s["retransmits"].clone(),
                s["rtt"].clone()
            ),
            (5.into(), 3.into(), 120.into())
        );
        // Whole numbers print as integers, as stock iperf3's JSON library prints them.
        assert_eq!(s["bits_per_second"], 10_000_000_000u64);
        assert_eq!(s["start"], 0);
        assert_eq!(
            (s["omitted"].clone(), s["sender"].clone()),
            (false.into(), true.into())
        );
        assert_eq!(s["snd_wnd"], 3_000_000);
        assert_eq!(j["intervals"][0]["sum"]["retransmits"], 3);
        let end = &j["end"];
        assert_eq!(end["streams"][0]["sender"]["max_rtt"], 400);
        assert_eq!(end["streams"][0]["sender"]["max_snd_wnd"], 4_194_304);
        assert_eq!(end["streams"][0]["receiver"]["seconds"], 10.04);
        assert_eq!(end["sum_sent"]["bytes"], 12_500_000_000u64);
        assert_eq!(end["sum_sent"]["retransmits"], 7);
        assert_eq!(
            end["sum_received"]["bits_per_second"],
            12_499_000_000.0 * 8.0 / 10.04
        );
        assert!(end.get("sum").is_none() && end.get("sum_sent_bidir_reverse").is_none());
        let cpu = &end["cpu_utilization_percent"];
        assert!((cpu["host_total"].as_f64().unwrap() - 95.1).abs() < 1e-9);
        assert!((cpu["remote_system"].as_f64().unwrap() - 75.0).abs() < 1e-9);
        assert_eq!(
            (
                end["sender_tcp_congestion"].clone(),
                end["receiver_tcp_congestion"].clone()
            ),
            ("cubic".into(), "bbr".into())
        );
        let pp = &j["perfpeer"];
        assert_eq!(pp["status"], "complete");
        assert!((pp["host_cpu_percent"]["remote"].as_f64().unwrap() - 30.0).abs() < 1e-9);
        assert!(pp["service_demand_us_per_kb"]["local"].as_f64().is_some());
        assert_eq!(pp["spec"]["protocol"], "tcp");
        assert!(j.get("error").is_none());
    }

    #[test]
    fn tcp_two_streams_have_sum_lines_and_separators() {
        let r = tcp_two_streams();
        assert_eq!(
            lines(&text_interval(
                &r.spec,
                PeerRole::Client,
                &r.local.intervals[0]
            )),
            [
                "[  5]   0.00-1.00   sec   477 MBytes  4.00 Gbits/sec    0   1.00 MBytes",
                "[  7]   0.00-1.00   sec   477 MBytes  4.00 Gbits/sec    1   1.00 MBytes",
                "[SUM]   0.00-1.00   sec   954 MBytes  8.00 Gbits/sec    1",
            ]
        );
        let second = text_interval(&r.spec, PeerRole::Client, &r.local.intervals[1]);
        assert!(
            second.starts_with(
                "- - - - - - - - - - - - - - - - - - - - - - - - -\n[  5]   1.00-2.00"
            ),
            "{second}"
        );
        assert!(
            second.ends_with("[SUM]   1.00-2.00   sec   954 MBytes  8.00 Gbits/sec    3\n"),
            "{second}"
        );
        assert_eq!(
            lines(&text_summary(&r))[2..8],
            [
                "[  5]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec    4             sender",
                "[  5]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec                  receiver",
                "[  7]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec    5             sender",
                "[  7]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec                  receiver",
                "[SUM]   0.00-10.00  sec  9.31 GBytes  8.00 Gbits/sec    9             sender",
                "[SUM]   0.00-10.00  sec  9.31 GBytes  8.00 Gbits/sec                  receiver",
            ]
        );
        let j = json(&r);
        assert_eq!(j["start"]["test_start"]["num_streams"], 2);
        assert_eq!(j["intervals"][1]["sum"]["retransmits"], 3);
        assert_eq!(j["intervals"][1]["sum"]["bits_per_second"], 8e9);
        assert_eq!(j["end"]["streams"].as_array().unwrap().len(), 2);
        assert_eq!(j["end"]["sum_sent"]["bytes"], 10_000_000_000u64);
        assert_eq!(j["end"]["sum_sent"]["retransmits"], 9);
        assert_eq!(j["end"]["sum_received"]["bits_per_second"], 8e9);
    }

    #[test]
    fn udp_receiver_text() {
        let r = udp_receiver();
        let p = Preamble {
            role: PeerRole::Server,
            server_addr: &r.server_addr,
            spec: &r.spec,
            sockets: &r.local.sockets,
        };
        assert_eq!(
            text_preamble(&p),
            "Accepted connection from 10.0.0.1, port 40000\n[  5] local 10.0.0.2 port 5201 connected to 10.0.0.1 port 40000\n"
        );
        assert_eq!(
            text_interval_header(&r.spec, PeerRole::Server),
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        );
        assert_eq!(
            text_interval_header(&r.spec, PeerRole::Client)
                .trim_end()
                .rsplit("  ")
                .next(),
            Some("Total Datagrams")
        );
        assert_eq!(
            text_interval(&r.spec, PeerRole::Server, &r.local.intervals[0]),
            "[  5]   0.00-1.00   sec   120 KBytes   985 Kbits/sec  0.123 ms  5/90 (5.6%)\n"
        );
        assert_eq!(
            lines(&text_summary(&r))[1..6],
            [
                "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams",
                "[  5]   0.00-10.00  sec  1.24 MBytes  1.04 Mbits/sec  0.000 ms  0/900 (0%)  sender",
                "[  5]   0.00-10.00  sec  1.22 MBytes  1.02 Mbits/sec  0.050 ms  20/900 (2.2%)  receiver",
                "[  5]   0.00-10.00  sec  2 datagrams received out-of-order",
                "CPU Utilization: local/receiver 3.0% (1.0%u/2.0%s), remote/sender 5.0% (2.0%u/3.0%s)",
            ]
        );
    }

    #[test]
    fn udp_receiver_json() {
        let j = json(&udp_receiver());
        assert_eq!(j["start"]["test_start"]["protocol"], "UDP");
        assert_eq!(j["start"]["test_start"]["target_bitrate"], 1_000_000);
        assert!(
            j["start"].get("tcp_mss_default").is_none()
                && j["start"].get("connecting_to").is_none()
        );
        assert_eq!(j["start"]["accepted_connection"]["host"], "10.0.0.1");
        let s = &j["intervals"][0]["streams"][0];
        assert_eq!(
            (
                s["lost_packets"].clone(),
                s["packets"].clone(),
                s["jitter_ms"].clone()
            ),
            (5.into(), 90.into(), 0.123.into())
        );
        assert!((s["lost_percent"].as_f64().unwrap() - 100.0 * 5.0 / 90.0).abs() < 1e-9);
        assert_eq!(j["intervals"][0]["sum"]["lost_packets"], 5);
        assert_eq!(j["intervals"][0]["sum"]["sender"], false);
        let end = &j["end"];
        assert_eq!(end["sum"]["jitter_ms"], 0.05);
        assert_eq!(end["sum"]["lost_packets"], 20);
        assert_eq!(end["sum"]["packets"], 900);
        assert!((end["sum"]["lost_percent"].as_f64().unwrap() - 100.0 * 20.0 / 900.0).abs() < 1e-9);
        assert_eq!(end["sum"]["bytes"], 1448 * 880);
        assert_eq!(
            (
                end["sum_sent"]["packets"].clone(),
                end["sum_sent"]["lost_packets"].clone()
            ),
            (900.into(), 0.into())
        );
        assert_eq!(end["sum_received"]["lost_packets"], 20);
        let udp = &end["streams"][0]["udp"];
        assert_eq!(
            (
                udp["out_of_order"].clone(),
                udp["socket"].clone(),
                udp["sender"].clone()
            ),
            (2.into(), 5.into(), false.into())
        );
        assert!(end.get("sender_tcp_congestion").is_none());
        assert_eq!(j["perfpeer"]["udp"]["duplicates"], 1);
    }

    #[test]
    fn bidir_tags_and_reverse_sums() {
        let r = tcp_bidir();
        assert_eq!(
            text_interval_header(&r.spec, PeerRole::Client),
            "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n"
        );
        assert_eq!(
            lines(&text_interval(
                &r.spec,
                PeerRole::Client,
                &r.local.intervals[0]
            )),
            [
                "[  5][TX-C]   0.00-1.00   sec   119 MBytes  1.00 Gbits/sec    0    256 KBytes",
                "[  7][RX-C]   0.00-1.00   sec  59.6 MBytes   500 Mbits/sec",
            ]
        );
        assert_eq!(
            lines(&text_summary(&r))[1..6],
            [
                "[ ID][Role] Interval           Transfer     Bitrate         Retr",
                "[  5][TX-C]   0.00-10.00  sec  1.16 GBytes  1.00 Gbits/sec    2             sender",
                "[  5][TX-C]   0.00-10.00  sec  1.16 GBytes  1.00 Gbits/sec                  receiver",
                "[  7][RX-C]   0.00-10.00  sec   596 MBytes   500 Mbits/sec    1             sender",
                "[  7][RX-C]   0.00-10.00  sec   596 MBytes   500 Mbits/sec                  receiver",
            ]
        );
        let server_view = text_interval(&r.spec, PeerRole::Server, &r.local.intervals[0]);
        assert!(
            server_view.starts_with("[  5][TX-S]") && server_view.contains("\n[  7][RX-S]"),
            "{server_view}"
        );
        let j = json(&r);
        assert_eq!(j["start"]["test_start"]["bidir"], 1);
        assert_eq!(j["intervals"][0]["sum"]["bytes"], 125_000_000);
        assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["bytes"], 62_500_000);
        assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["sender"], false);
        assert_eq!(j["end"]["sum_sent"]["bytes"], 1_250_000_000);
        assert_eq!(j["end"]["sum_sent_bidir_reverse"]["bytes"], 625_000_000);
        assert_eq!(
            j["end"]["sum_received_bidir_reverse"]["bits_per_second"],
            5e8
        );
        assert_eq!(j["end"]["streams"][1]["sender"]["retransmits"], 1);
    }

    #[test]
    fn partial_result_says_why() {
        let mut r = tcp_single();
        r.remote = None;
        r.status = TestStatus::Partial {
            reason: "the server vanished".into(),
        };
        r.local.intervals[0].omitted = true;
        assert!(
            text_interval(&r.spec, PeerRole::Client, &r.local.intervals[0])
                .ends_with("1.50 MBytes       (omitted)\n")
        );
        assert_eq!(
            lines(&text_summary(&r))[2..],
            [
                "[  5]   0.00-10.00  sec  11.6 GBytes  10.0 Gbits/sec    7             sender",
                "CPU Utilization: local/sender 95.1% (3.2%u/91.9%s)",
                "Service demand: local 0.328 us/KB (host CPU, netperf definition)",
                "Test ended early: the server vanished",
                "",
                "perfpeer Done.",
            ]
        );
        let j = json(&r);
        assert_eq!(j["error"], "the server vanished");
        assert_eq!(j["perfpeer"]["status"], "partial");
        assert_eq!(j["perfpeer"]["partial_reason"], "the server vanished");
        assert!(j["end"].get("sum_received").is_none());
        assert!(j["end"]["streams"][0].get("receiver").is_none());
        assert!(
            j["end"]["cpu_utilization_percent"]
                .get("remote_total")
                .is_none()
        );
        assert_eq!(j["intervals"][0]["streams"][0]["omitted"], true);
        let stream = json_stream_end(&r);
        let (err, end) = stream.split_once('\n').unwrap();
        assert_eq!(err, r#"{"event":"error","data":"the server vanished"}"#);
        assert!(end.starts_with(r#"{"event":"end","data":{"#) && !end.ends_with('\n'));
    }

    #[test]
    fn json_stream_lines_match_the_json_object() {
        let r = tcp_single();
        let p = Preamble {
            role: PeerRole::Client,
            server_addr: &r.server_addr,
            spec: &r.spec,
            sockets: &r.local.sockets,
        };
        let start = json_stream_start(&p, r.started_unix_ms, &r.local.host);
        assert!(start.starts_with(r#"{"event":"start","data":{"#) && !start.contains('\n'));
        let start: Value = serde_json::from_str(&start).unwrap();
        assert_eq!(start["data"]["version"], "perfpeer 0.1.0");
        assert_eq!(start["data"]["test_start"], json(&r)["start"]["test_start"]);
        let line: Value =
            serde_json::from_str(&json_stream_interval(&r.spec, &r.local.intervals[0])).unwrap();
        assert_eq!(line["event"], "interval");
        assert_eq!(line["data"], json(&r)["intervals"][0]);
        let end: Value = serde_json::from_str(&json_stream_end(&r)).unwrap();
        assert_eq!(end["data"]["sum_sent"], json(&r)["end"]["sum_sent"]);
        assert_eq!(end["data"]["perfpeer"]["status"], "complete");
    }

    #[test]
    fn helpers_match_c_and_the_calendar() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(http_date(1_796_220_497), "Wed, 02 Dec 2026 14:08:17 GMT");
        let g: Vec<String> = [0.0, 12.5, 100.0, 99.96, 0.5, 2.2222, 0.00001234, 5.0]
            .map(two_significant)
            .to_vec();
        assert_eq!(
            g,
            ["0", "12", "1e+02", "1e+02", "0.5", "2.2", "1.2e-05", "5"]
        );
        assert_eq!(split_addr("[::1]:5201"), ("::1", Some(5201)));
        assert_eq!(split_addr("::1"), ("::1", None));
        assert_eq!(split_addr("example.org"), ("example.org", None));
    }

    #[test]
    fn numbers_names_and_errors_take_stock_shapes() {
        let v = cjson_numbers(serde_json::json!({"a": 0.0, "b": [2.5, 1e10, -3.0], "c": 7}));
        assert_eq!(v.to_string(), r#"{"a":0,"b":[2.5,10000000000,-3],"c":7}"#);
        assert_eq!([1, 2, 3, 4, 5, 6].map(socket_number), [5, 7, 9, 12, 14, 16]);
        let host = HostInfo {
            hostname: "dut".into(),
            system: "Linux 6.1.0 #1 SMP mips".into(),
            version: "0.1.0".into(),
        };
        assert_eq!(system_info(&host), "Linux dut 6.1.0 #1 SMP mips");
        let e: Value = serde_json::from_str(&json_error("unable to connect", &host)).unwrap();
        assert_eq!(e["start"]["connected"], serde_json::json!([]));
        assert_eq!(e["start"]["system_info"], "Linux dut 6.1.0 #1 SMP mips");
        assert_eq!(
            (e["intervals"].clone(), e["end"].clone()),
            (serde_json::json!([]), serde_json::json!({}))
        );
        assert_eq!(e["error"], "unable to connect");
        // After `-O 2`, a measured interval counts from the end of the omitted start.
        let mut r = interval(3.0, vec![]);
        assert_eq!(r.iperf3_span(secs(2.0)), (1.0, 2.0));
        r.omitted = true;
        assert_eq!(r.iperf3_span(secs(2.0)), (3.0, 4.0));
    }
}
