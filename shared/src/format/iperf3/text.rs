//! iperf3's text: the preamble, the column header, one block of lines per interval, and the
//! closing summary (in perfpeer's voice or stock iperf3's).

use crate::one_way::OneWayFinal;
use crate::report::{
    CpuUsage, Flow, IntervalReport, IntervalSum, PeerRole, ServiceDemand, StreamFinal,
    StreamInterval, StreamRole, TestResult, UdpRxFinal, UdpRxSample, bits_per_second,
};
use crate::spec::{Direction, Protocol, TestSpec};
use crate::units::{format_bits, format_bytes, format_rate_in};
use crate::video::FrameFinal;

use super::{
    Preamble, end_sends, flow_is_local_tx, port_text, service_demands, socket_number, split_addr,
    split_flows,
};

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
    group_lines(result, &mut lines, voice.rate());
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
        .any(|f| f.sent.as_ref().is_some_and(|t| t.retransmits.is_some()));
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
            receiver_lines(lines, (&cell, tag), proto, s, "receiver", rate);
        }
    }
    if flow.streams.len() < 2 {
        return;
    }
    for (totals, label) in [(&flow.sent, "sender"), (&flow.received, "receiver")] {
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
            final_tail(proto, t.packets, t.retransmits, t.udp_rx.as_ref()),
            label,
        ));
        if label == "receiver" {
            lines.extend(out_of_order_line("SUM", tag, t.seconds, t.udp_rx.as_ref()));
            let frames = t.frames();
            lines.extend(one_way_lines("SUM", tag, t.one_way(), frames));
        }
    }
}

/// A multicast test's receivers: a line naming the group, then each receiver's row (and its
/// out-of-order and one-way lines) as a unicast test's receiver line, labelled with the peer,
/// or why it has none.
fn group_lines(result: &TestResult, lines: &mut Vec<String>, rate: RateFormat) {
    let Some(group) = result.spec.multicast else {
        return;
    };
    lines.push(format!(
        "Multicast group {} (TTL {}{}), {} receiver{}:",
        group.address(),
        group.ttl,
        if group.source_specific {
            ", source-specific"
        } else {
            ""
        },
        result.group_receivers.len(),
        if result.group_receivers.len() == 1 {
            ""
        } else {
            "s"
        }
    ));
    let tag = role_tag(&result.spec, result.local.role, true);
    for receiver in &result.group_receivers {
        let label = format!("receiver {}", receiver.peer);
        let rows: Vec<&StreamFinal> = receiver
            .report
            .as_ref()
            .map(|r| r.received().0)
            .unwrap_or_default();
        for s in &rows {
            let cell = id_cell(s.id);
            receiver_lines(lines, (&cell, tag), result.spec.protocol, s, &label, rate);
        }
        if rows.is_empty() || receiver.error.is_some() {
            let why = receiver.error.as_deref().unwrap_or("no report");
            lines.push(format!("      {label}: {why}"));
        }
        if let Some(url) = &receiver.result_url {
            lines.push(format!("      {label}: result page {url}"));
        }
    }
}

/// A receiver's summary line labelled `label`, then its out-of-order and one-way lines.
fn receiver_lines(
    lines: &mut Vec<String>,
    (cell, tag): (&str, &str),
    proto: Protocol,
    s: &StreamFinal,
    label: &str,
    rate: RateFormat,
) {
    lines.push(final_line(cell, tag, proto, s, label, rate));
    lines.extend(out_of_order_line(
        cell,
        tag,
        s.duration.as_secs_f64(),
        s.udp_rx.as_ref(),
    ));
    let frames = s.frames();
    lines.extend(one_way_lines(cell, tag, s.one_way(), frames));
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
        final_tail(
            proto,
            s.packets,
            s.tcp.map(|t| t.retransmits),
            s.udp_rx.as_ref(),
        ),
        label,
    )
}

fn out_of_order_line(
    cell: &str,
    tag: &str,
    seconds: f64,
    rx: Option<&UdpRxFinal>,
) -> Option<String> {
    let n = rx.map_or(0, |r| r.out_of_order);
    (n > 0).then(|| {
        format!(
            "[{cell}]{tag} {:6.2}-{seconds:<6.2} sec  {n} datagrams received out-of-order",
            0.0
        )
    })
}

/// The one-way delays a receiver measured (`--trip-times`), with the clock assumption, their
/// histogram where the test asked for one (`--histograms`), and the frames of a video test.
fn one_way_lines(
    cell: &str,
    tag: &str,
    one_way: Option<&OneWayFinal>,
    frames: Option<&FrameFinal>,
) -> Vec<String> {
    let Some(d) = one_way else {
        return Vec::new();
    };
    let frames = frames.map(|f| {
        let latency = f.latency.as_ref().map_or_else(String::new, |l| {
            format!("; frame latency {}", delay_figures(l))
        });
        format!(
            "[{cell}]{tag}   frames {} whole/{} lost/{} late (> {:.3} ms){latency}",
            f.whole, f.lost, f.late, f.period_ms
        )
    });
    let offset = d
        .clock_offset
        .map_or_else(String::new, |o| format!("; {}", o.words()));
    let negative = if d.negative > 0 {
        format!("; {} below zero (the clocks disagree)", d.negative)
    } else {
        String::new()
    };
    let mut lines = vec![format!(
        "[{cell}]{tag}   one-way delay {}{negative} ({}{offset})",
        delay_figures(d),
        d.clock.words()
    )];
    lines.extend(frames);
    if let Some(h) = &d.histogram {
        let points = h.points(5.0, 95.0);
        lines.push(format!(
            "[{cell}]{tag}   delay histogram bin(w={}):cnt({})={} (5.00/95.00/99.7%={}/{}/{},outliers={},below/above={}/{})",
            h.width_text(),
            h.in_bins(),
            h.bins_text(),
            points.lower,
            points.upper,
            points.p99_7,
            points.outliers,
            h.below,
            h.above
        ));
    }
    lines
}

/// `avg/min/max/stdev 0.035/0.012/0.262/0.015 ms; 50/95/99.7 % 0.031/0.058/0.201 ms`: delays'
/// figures as the one-way and frame-latency lines print them (percentiles where measured).
fn delay_figures(d: &OneWayFinal) -> String {
    let percentiles = d.percentiles.map_or_else(String::new, |p| {
        format!(
            "; 50/95/99.7 % {:.3}/{:.3}/{:.3} ms",
            p.p50_ms, p.p95_ms, p.p99_7_ms
        )
    });
    format!(
        "avg/min/max/stdev {:.3}/{:.3}/{:.3}/{:.3} ms{percentiles}",
        d.mean_ms, d.min_ms, d.max_ms, d.stdev_ms
    )
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
        .filter_map(|(name, v)| {
            v.map(|v| match v {
                ServiceDemand::UsPerKb(v) => format!("{name} {v:.3} us/KB"),
                ServiceDemand::NotMeaningful { share_of_host_busy } => format!(
                    "{name} not meaningful ({:.1}% of the host's busy CPU)",
                    share_of_host_busy * 100.0
                ),
            })
        })
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
    rx: Option<&UdpRxFinal>,
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
pub(super) fn two_significant(v: f64) -> String {
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
