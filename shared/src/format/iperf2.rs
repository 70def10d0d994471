//! iperf 2.1's text layout: the banner, `[  1] local … connected with …` lines, and
//! `[ ID] Interval  Transfer  Bandwidth` rows (UDP receivers add jitter and loss; a sending
//! client's `-e` rows add writes, retries, cwnd/RTT and NetPwr, or packets a second; with
//! `--trip-times`, one-way latency and packets a second), as the
//! Debian 2.1.8 build prints them (intervals with four decimals, adaptive units).

use crate::histogram::{DelayHistogram, HistogramSpec};
use crate::one_way::OneWayFinal;
use crate::report::{
    DirectionTotals, IntervalReport, PeerRole, StreamFinal, StreamInterval, StreamRole, TcpSample,
    TestResult, UdpRxFinal, net_power, per_second,
};
use crate::spec::Protocol;
use crate::units::{format_bits, format_bytes, format_rate_in};

use super::cfmt::g;

const RULE: &str = "------------------------------------------------------------";

/// iperf2 adds a three-decimal step below 0.9995 to the iperf3 layout.
fn adaptive(text: String, value_below_one: bool, value: f64, unit: &str) -> String {
    if value_below_one {
        format!("{value:4.3} {unit}")
    } else {
        text
    }
}

/// `1.04 GBytes`, ` 645 KBytes`, `0.000 Bytes`.
pub fn bytes_text(bytes: u64) -> String {
    adaptive(format_bytes(bytes as f64), bytes == 0, 0.0, "Bytes")
}

/// `8.88 Gbits/sec`, `0.000 bits/sec`.
pub fn rate_text(bits_per_second: f64) -> String {
    adaptive(
        format!("{}/sec", format_bits(bits_per_second)),
        bits_per_second < 0.9995,
        bits_per_second,
        "bits/sec",
    )
}

fn proto_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
        Protocol::Dccp => "DCCP",
    }
}

/// The client's banner.
pub fn client_banner(host: &str, port: u16, protocol: Protocol, window: Option<u32>) -> String {
    let kind = if protocol == Protocol::Udp {
        "UDP buffer size"
    } else {
        "TCP window size"
    };
    format!(
        "{RULE}\nClient connecting to {host}, {} port {port}\n{kind}: {}\n{RULE}\n",
        proto_name(protocol),
        window_text(window)
    )
}

/// A video client's line under its banner (`--isochronous`), as iperf 2.1.8 prints it:
/// `Isochronous: 60.00 frames/sec mean=20.0 Mbit/s, stddev=0.000 bit/s, Period/IPG=16.67/0.000 ms`
/// (the datagrams of a frame go out back to back: no gap between them).
pub fn isochronous_line(video: &crate::video::VideoSpec) -> String {
    let bits = |rate: f64| {
        if rate < 0.9995 {
            format!("{rate:.3} bit/s")
        } else {
            format!("{}/s", format_bits(rate).trim_end_matches('s'))
        }
    };
    format!(
        "Isochronous: {:.2} frames/sec mean={}, stddev={}, Period/IPG={:.2}/0.000 ms\n",
        f64::from(video.fps),
        bits(video.mean.0 as f64),
        bits(video.stdev.0 as f64),
        video.period_s() * 1e3
    )
}

/// The server's banner, with the histograms' line where it counts delays in bins.
pub fn server_banner(port: u16, window: Option<u32>, bins: Option<HistogramSpec>) -> String {
    format!(
        "{RULE}\nServer listening on TCP and UDP port {port}\n{}TCP window size: {}\n{RULE}\n",
        histograms_line(bins),
        window_text(window)
    )
}

/// The banner of a server that receives a multicast group (UDP only), with iperf 2's line for
/// the join (`join`, e.g. "Joining multicast group 239.255.1.1").
pub fn group_banner(port: u16, join: &str, bins: Option<HistogramSpec>) -> String {
    format!(
        "{RULE}\nServer listening on UDP port {port}\n{join}\n{}{RULE}\n",
        histograms_line(bins)
    )
}

/// iperf 2.1's banner line of a server started with `--histograms` (empty without).
fn histograms_line(bins: Option<HistogramSpec>) -> String {
    bins.map_or_else(String::new, |h| {
        format!(
            "Enabled receive histograms bin-width={:.3} ms, bins={} (clients should use --trip-times)\n",
            f64::from(h.bin_width_us) / 1e3,
            h.bins
        )
    })
}

fn window_text(window: Option<u32>) -> String {
    match window {
        Some(w) => format_bytes(f64::from(w))
            .replace("Bytes", "Byte")
            .trim_start()
            .to_string(),
        None => "(default)".into(),
    }
}

/// `ip:port` or `[v6]:port` as (host, port) text.
fn host_port(a: &str) -> (String, String) {
    a.rsplit_once(':')
        .map(|(h, p)| (h.trim_matches(['[', ']']).to_string(), p.to_string()))
        .unwrap_or((a.to_string(), "0".into()))
}

/// `[  1] local 127.0.0.1 port 44172 connected with 127.0.0.1 port 5001`.
pub fn connected_line(id: u32, local: &str, remote: &str) -> String {
    let ((lh, lp), (rh, rp)) = (host_port(local), host_port(remote));
    format!("[{id:3}] local {lh} port {lp} connected with {rh} port {rp}\n")
}

/// The column header; UDP receivers get jitter and loss columns.
pub fn header(udp_receiver: bool) -> String {
    if udp_receiver {
        "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams\n".into()
    } else {
        "[ ID] Interval       Transfer     Bandwidth\n".into()
    }
}

/// The column header of a UDP receiver that measured one-way delays (`--trip-times`), as iperf
/// 2.1.8's enhanced server report (without its Little's-law and network-power columns).
pub fn latency_header() -> String {
    "[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS\n".into()
}

/// The column header of a UDP receiver of an `--isochronous` client with trip-times: the
/// latency header and iperf 2.1.8's frame columns (frames whole/lost, frame latency).
pub fn frames_header() -> String {
    "[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Frame:rx/lost  latency\n".into()
}

/// The column header of a TCP receiver of `--trip-times` writes, as iperf 2.1.8's (without its
/// inP, NetPwr and read-size columns): each write's delay, how many, and their size.
pub fn write_latency_header() -> String {
    "[ ID] Interval            Transfer     Bandwidth    Burst Latency avg/min/max/stdev (cnt/size)\n".into()
}

/// UDP receiver columns of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpColumns {
    /// Jitter, ms.
    pub jitter_ms: f64,
    /// Lost datagrams.
    pub lost: u64,
    /// Datagrams expected.
    pub total: u64,
    /// One-way delays and datagrams a second, when measured.
    pub latency: Option<(OneWayFinal, f64)>,
    /// Video frames: whole, lost, and their latency, when the sender marked frames.
    pub frames: Option<(u64, u64, Option<OneWayFinal>)>,
}

impl UdpColumns {
    fn of(rx: &UdpRxFinal, datagrams_per_second: Option<f64>) -> UdpColumns {
        UdpColumns {
            jitter_ms: rx.jitter_ms,
            lost: rx.lost,
            total: rx.expected(),
            latency: rx
                .one_way
                .clone()
                .map(|d| (d, datagrams_per_second.unwrap_or(0.0))),
            frames: rx
                .frames
                .as_ref()
                .map(|f| (f.whole, f.lost, f.latency.clone())),
        }
    }
}

/// One row: `[  1] 0.0000-1.0034 sec  1.04 GBytes  8.88 Gbits/sec`, with UDP loss columns.
pub fn row(id: Option<u32>, start: f64, end: f64, bytes: u64, udp: Option<UdpColumns>) -> String {
    row_in(id, (start, end), bytes, udp, None)
}

/// iperf 2's `-f`: `k`, `m`, `g` (bandwidth in K/M/Gbits, 1000-based) or `K`, `M`, `G`
/// (KBytes/MBytes/GBytes a second, 1024-based); the transfer is then in the matching bytes
/// unit. `None` is adaptive.
pub type Units = Option<char>;

/// The transfer and bandwidth columns in `units`.
fn columns(bytes: u64, rate: f64, units: Units) -> (String, String) {
    match units.filter(|c| "kmgKMG".contains(*c)) {
        Some(c) => (
            format_rate_in(bytes as f64 * 8.0, c.to_ascii_uppercase()),
            format!("{}/sec", format_rate_in(rate, c)),
        ),
        None => (bytes_text(bytes), rate_text(rate)),
    }
}

fn row_in(
    id: Option<u32>,
    span: (f64, f64),
    bytes: u64,
    udp: Option<UdpColumns>,
    units: Units,
) -> String {
    let mut line = row_text(id, span, bytes, units);
    if let Some(u) = udp {
        let pct = if u.total > 0 {
            u.lost as f64 * 100.0 / u.total as f64
        } else {
            0.0
        };
        line.push_str(&format!(
            "  {:6.3} ms {}/{} ({}%)",
            u.jitter_ms,
            u.lost,
            u.total,
            g(pct, 2)
        ));
        if let Some((d, pps)) = u.latency {
            line.push_str(&format!(" {} ms {pps:.0} pps", delay_figures(&d)));
        }
        if let Some((whole, lost, latency)) = u.frames {
            line.push_str(&format!("  {whole}/{lost}"));
            if let Some(d) = latency {
                line.push_str(&format!("  {} ms", delay_figures(&d)));
            }
        }
    }
    line.push('\n');
    line
}

/// Delays as iperf 2 prints them: `avg/min/max/stdev`, ms to three places.
fn delay_figures(d: &OneWayFinal) -> String {
    format!(
        "{:.3}/{:.3}/{:.3}/{:.3}",
        d.mean_ms, d.min_ms, d.max_ms, d.stdev_ms
    )
}

/// A row's id, interval, transfer and bandwidth, without its end of line.
fn row_text(id: Option<u32>, (start, end): (f64, f64), bytes: u64, units: Units) -> String {
    let tag = id.map_or_else(|| "[SUM]".to_string(), |i| format!("[{i:3}]"));
    let rate = crate::report::bits_per_second(bytes, end - start);
    let (transfer, bandwidth) = columns(bytes, rate, units);
    format!("{tag} {start:.4}-{end:.4} sec  {transfer}  {bandwidth}")
}

/// `-e`'s column header of a sending client's rows, as iperf 2.1.8's.
pub fn enhanced_header(protocol: Protocol) -> String {
    if protocol == Protocol::Udp {
        "[ ID] Interval            Transfer     Bandwidth      Write/Err  PPS\n".into()
    } else {
        "[ ID] Interval            Transfer    Bandwidth       Write/Err  Rtry     Cwnd/RTT(var)        NetPwr\n".into()
    }
}

/// What `-e` adds to a sending row.
#[derive(Debug, Clone, Copy, Default)]
struct Enhanced {
    /// Write calls (TCP) or datagrams (UDP).
    writes: Option<u64>,
    /// UDP: datagrams sent.
    packets: Option<u64>,
    /// TCP: retransmissions.
    retransmits: Option<u64>,
    /// TCP: the sample the cwnd, RTT and NetPwr columns show.
    tcp: Option<TcpSample>,
}

impl Enhanced {
    /// `[SUM]`'s columns: writes, datagrams and retries added up (a sum has no cwnd or RTT).
    fn total(parts: &[Enhanced]) -> Enhanced {
        let sum = |f: fn(&Enhanced) -> Option<u64>| parts.iter().map(f).sum();
        Enhanced {
            writes: sum(|e| e.writes),
            packets: sum(|e| e.packets),
            retransmits: sum(|e| e.retransmits),
            tcp: None,
        }
    }
}

/// A sending row with `-e`'s columns: TCP `Write/Err Rtry Cwnd/RTT(var) NetPwr`, UDP
/// `Write/Err PPS`. A write that fails ends perfpeer's stream, so Err is 0; what the kernel did
/// not report prints as `-`.
fn enhanced_row(
    id: Option<u32>,
    span: (f64, f64),
    bytes: u64,
    e: Enhanced,
    units: Units,
) -> String {
    let mut line = row_text(id, span, bytes, units);
    let secs = span.1 - span.0;
    if let Some(packets) = e.packets {
        let pps = per_second(packets, secs);
        line.push_str(&format!("  {packets}/0 {pps:8.0} pps"));
    } else {
        let writes = e.writes.map_or_else(|| "-".into(), |w| w.to_string());
        let rtry = e.retransmits.map_or_else(|| "-".into(), |r| r.to_string());
        line.push_str(&format!("  {writes}/0 {rtry:>10}"));
        if id.is_some() {
            match e.tcp {
                Some(t) => {
                    let power = net_power(crate::report::bits_per_second(bytes, secs), t.rtt_us)
                        .map_or_else(|| "-".into(), |p| format!("{p:.0}"));
                    line.push_str(&format!(
                        " {:>8}K/{}({}) us  {power}",
                        t.snd_cwnd / 1024,
                        t.rtt_us,
                        t.rttvar_us
                    ));
                }
                None => line.push_str("        -K/-(-) us  -"),
            }
        }
    }
    line.push('\n');
    line
}

/// `-e`'s interval rows of a sending client: one per stream, and `[SUM]` for several (writes
/// and retries summed); streams it receives print as [`interval_rows_in`].
pub fn enhanced_interval_rows(report: &IntervalReport, units: Units) -> String {
    if report.streams.iter().any(|s| s.role != StreamRole::Sender) {
        return interval_rows_in(report, units);
    }
    let span = (report.start.as_secs_f64(), report.end.as_secs_f64());
    let of = |s: &StreamInterval| Enhanced {
        writes: s.writes.or(s.packets),
        packets: s.packets,
        retransmits: s.tcp.map(|t| t.retransmits),
        tcp: s.tcp,
    };
    let parts: Vec<Enhanced> = report.streams.iter().map(of).collect();
    let mut out = String::new();
    for (s, e) in report.streams.iter().zip(&parts) {
        out.push_str(&enhanced_row(Some(s.id), span, s.bytes, *e, units));
    }
    if report.streams.len() > 1 {
        let bytes = report.streams.iter().map(|s| s.bytes).sum();
        out.push_str(&enhanced_row(
            None,
            span,
            bytes,
            Enhanced::total(&parts),
            units,
        ));
    }
    out
}

/// A server's `[SUM]` of one client's streams that ran together: `seconds` from the first
/// one's start to the last one's end.
pub fn client_sum_row(seconds: f64, bytes: u64, units: Units) -> String {
    row_in(None, (0.0, seconds), bytes, None, units)
}

fn stream_row(s: &StreamFinal, units: Units) -> String {
    let udp = s
        .udp_rx
        .as_ref()
        .map(|r| UdpColumns::of(r, s.datagrams_per_second()));
    row_in(
        Some(s.id),
        (0.0, s.duration.as_secs_f64()),
        s.bytes,
        udp,
        units,
    )
}

/// A TCP receiver's row with its writes' delays (`--trip-times`): iperf 2.1.8's burst
/// latency columns, `0.888/0.013/47.058/4.846 ms (2001/1000)` (writes timed / write size).
fn write_latency_row(s: &StreamFinal, d: &OneWayFinal, write_len: u32, units: Units) -> String {
    format!(
        "{}  {} ms ({}/{write_len})\n",
        row_text(Some(s.id), (0.0, s.duration.as_secs_f64()), s.bytes, units),
        delay_figures(d),
        d.count
    )
}

fn sum_row(t: &DirectionTotals, units: Units) -> String {
    let udp = t.udp_rx.as_ref().map(|r| UdpColumns::of(r, None));
    row_in(None, (0.0, t.seconds), t.bytes, udp, units)
}

/// A bounce-back test the server answered: its connection line (with iperf 2's
/// `(bb len/hold=…)` note), the column header and its row (bytes read and written).
pub fn bounceback_text(
    id: u32,
    (local, remote): (&str, &str),
    (size, hold_us): (u32, u32),
    seconds: f64,
    bytes: u64,
    units: Units,
) -> String {
    let connected = connected_line(id, local, remote);
    let note = format!(" (bb len/hold={size}/{hold_us})\n");
    format!(
        "{}{note}{}{}",
        connected.trim_end(),
        header(false),
        row_in(Some(id), (0.0, seconds), bytes, None, units)
    )
}

/// The column header of a bounce-back client's row, as iperf 2.1.8's.
pub fn bounceback_header() -> String {
    "[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         RPS\n"
        .into()
}

/// A bounce-back client's row: bytes written and read, and the round trips' count and
/// avg/min/max/stdev (ms) and rate (`20=0.035/0.016/0.164/0.038 ms    28653 rps`).
pub fn bounceback_row(
    id: u32,
    seconds: f64,
    bytes: u64,
    (count, [avg, min, max, stdev]): (u64, [f64; 4]),
    requests_per_second: f64,
    units: Units,
) -> String {
    format!(
        "{}    {count}={avg:.3}/{min:.3}/{max:.3}/{stdev:.3} ms    {requests_per_second:.0} rps\n",
        row_text(Some(id), (0.0, seconds), bytes, units)
    )
}

/// Rows for one interval of the local end: one per stream, and `[SUM]` for several.
pub fn interval_rows(report: &IntervalReport) -> String {
    interval_rows_in(report, None)
}

/// [`interval_rows`] in `units`.
pub fn interval_rows_in(report: &IntervalReport, units: Units) -> String {
    let mut out = String::new();
    let (start, end) = (report.start.as_secs_f64(), report.end.as_secs_f64());
    for s in &report.streams {
        let udp = s.udp_rx.map(|u| UdpColumns {
            jitter_ms: u.jitter_ms,
            lost: u.lost,
            total: u.packets,
            latency: None,
            frames: None,
        });
        out.push_str(&row_in(Some(s.id), (start, end), s.bytes, udp, units));
    }
    if report.streams.len() > 1 {
        let bytes = report.streams.iter().map(|s| s.bytes).sum();
        out.push_str(&row_in(None, (start, end), bytes, None, units));
    }
    out
}

/// The closing rows of the end a result was measured at (no header): totals per stream and
/// `[SUM]`; a UDP sender adds its datagram count and the receiver's "Server Report".
pub fn final_rows(result: &TestResult) -> String {
    final_rows_in(result, None)
}

/// [`final_rows`] in `units`.
pub fn final_rows_in(result: &TestResult, units: Units) -> String {
    final_rows_with(result, units, false)
}

/// [`final_rows_in`] with `-e`'s columns on the rows of the streams this end sent (the
/// cwnd/RTT columns from each stream's last interval sample, NetPwr over the whole test).
pub fn enhanced_final_rows(result: &TestResult, units: Units) -> String {
    final_rows_with(result, units, true)
}

fn final_rows_with(result: &TestResult, units: Units, enhanced: bool) -> String {
    let mut out = String::new();
    for flow in result.flows() {
        let we_send = (result.local.role == PeerRole::Client) == flow.client_to_server;
        let mine: Vec<&StreamFinal> = flow
            .streams
            .iter()
            .filter_map(|(_, tx, rx)| if we_send { *tx } else { *rx })
            .collect();
        let totals = if we_send { flow.sent } else { flow.received };
        if enhanced && we_send {
            let of = |s: &StreamFinal| Enhanced {
                writes: s.writes.or(s.packets),
                packets: s.packets,
                retransmits: s.tcp.map(|t| t.retransmits),
                tcp: result.local.last_tcp_sample(s.id),
            };
            let parts: Vec<Enhanced> = mine.iter().map(|s| of(s)).collect();
            for (s, e) in mine.iter().zip(&parts) {
                let span = (0.0, s.duration.as_secs_f64());
                out.push_str(&enhanced_row(Some(s.id), span, s.bytes, *e, units));
            }
            if let (true, Some(t)) = (mine.len() > 1, totals) {
                let total = Enhanced::total(&parts);
                out.push_str(&enhanced_row(None, (0.0, t.seconds), t.bytes, total, units));
            }
        } else {
            for s in &mine {
                match &s.write_one_way {
                    Some(d) => out.push_str(&write_latency_row(s, d, result.spec.len, units)),
                    None => out.push_str(&stream_row(s, units)),
                }
                let span = (0.0, s.duration.as_secs_f64());
                if let Some(h) = s.one_way().and_then(|d| d.histogram.as_ref()) {
                    out.push_str(&histogram_line(s.id, span, h));
                }
                let frame_bins = s
                    .frames()
                    .and_then(|f| f.latency.as_ref()?.histogram.as_ref());
                if let Some(h) = frame_bins {
                    out.push_str(&named_histogram_line("F8", s.id, span, h));
                }
            }
            if let (true, Some(t)) = (mine.len() > 1, totals) {
                out.push_str(&sum_row(&t, units));
            }
        }
        if we_send && result.spec.protocol == Protocol::Udp {
            for s in &mine {
                out.push_str(&format!(
                    "[{:3}] Sent {} datagrams\n",
                    s.id,
                    s.packets.unwrap_or(0)
                ));
            }
            for (id, _, rx) in &flow.streams {
                if let Some(rx) = rx {
                    let header = if has_one_way(rx) {
                        latency_header()
                    } else {
                        header(true)
                    };
                    out.push_str(&format!(
                        "[{id:3}] Server Report:\n{header}{}",
                        stream_row(rx, units)
                    ));
                }
            }
        }
    }
    out
}

/// iperf 2.1's final histogram line of a stream's one-way delays (`--histograms`, name `T8`):
/// `[  1] 0.00-10.00 sec T8(f)-PDF: bin(w=1ms):cnt(900)=1:890,2:10 (5.00/95.00/99.7%=1/1/2,Outliers=0,obl/obu=0/0)`
/// — bins numbered from 1 (bin n ends at n × width), then the bins where 5, 95 and 99.7 % of
/// the delays are counted, outliers, and the delays below and above the bins.
pub fn histogram_line(id: u32, span: (f64, f64), h: &DelayHistogram) -> String {
    named_histogram_line("T8", id, span, h)
}

/// [`histogram_line`] of the histogram iperf 2 names `name`: `T8` for delays of datagrams
/// or writes, `F8` for frames' latency.
pub fn named_histogram_line(
    name: &str,
    id: u32,
    (start, end): (f64, f64),
    h: &DelayHistogram,
) -> String {
    let p = h.points(5.0, 95.0);
    format!(
        "[{id:3}] {start:.4}-{end:.4} sec {name}(f)-PDF: bin(w={}):cnt({})={} (5.00/95.00/99.7%={}/{}/{},Outliers={},obl/obu={}/{})\n",
        h.width_text(),
        h.in_bins(),
        h.bins_text(),
        p.lower,
        p.upper,
        p.p99_7,
        p.outliers,
        h.below,
        h.above
    )
}

fn has_one_way(s: &StreamFinal) -> bool {
    s.udp_rx.as_ref().is_some_and(|r| r.one_way.is_some())
}

/// Whether the end a result was measured at received UDP (its rows carry loss columns).
pub fn is_udp_receiver(result: &TestResult) -> bool {
    result.spec.protocol == Protocol::Udp
        && result
            .local
            .streams
            .iter()
            .all(|s| s.role == StreamRole::Receiver)
}

/// A whole result in iperf2's layout, seen from the end it was measured at.
pub fn text(result: &TestResult) -> String {
    text_in(result, None)
}

/// [`text`] in `units`.
pub fn text_in(result: &TestResult, units: Units) -> String {
    let mut out = String::new();
    if result.local.role == PeerRole::Client {
        let server = result.server_addr.rsplit_once(':');
        let (host, port) = server.map_or((result.server_addr.as_str(), 0), |(h, p)| {
            (h, p.parse().unwrap_or(0))
        });
        out.push_str(&client_banner(
            host,
            port,
            result.spec.protocol,
            result.spec.window,
        ));
    }
    for s in &result.local.sockets {
        out.push_str(&connected_line(s.id, &s.local, &s.remote));
    }
    let streams = &result.local.streams;
    if streams
        .iter()
        .any(|s| s.udp_rx.as_ref().is_some_and(|r| r.frames.is_some()))
    {
        out.push_str(&frames_header());
    } else if streams.iter().any(has_one_way) {
        out.push_str(&latency_header());
    } else if streams.iter().any(|s| s.write_one_way.is_some()) {
        out.push_str(&write_latency_header());
    } else {
        out.push_str(&header(is_udp_receiver(result)));
    }
    out.push_str(&final_rows_in(result, units));
    out
}

// ---------------------------------------------------------------------------------------------
// CSV (`-y C`)
// ---------------------------------------------------------------------------------------------

/// `YYYYMMDDHHMMSS` (UTC) of a Unix time in ms, as iperf 2's CSV lines start.
fn csv_time(unix_ms: u64) -> String {
    let t = crate::calendar::UtcTime::of(unix_ms / 1000);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// One CSV line as iperf 2.1 writes it: time, local address and port, remote address and
/// port, id, `start-end`, bytes, bit/s; a UDP receiver adds jitter (ms), lost, total, loss %
/// and out-of-order, a UDP sender the placeholders stock writes (`0.000,0,-1,-0.000,0`).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a non-negative bit rate printed as a whole number, as iperf 2 prints it"
)]
fn csv_line(
    unix_ms: u64,
    socket: Option<&crate::report::SocketInfo>,
    id: u32,
    (start, end): (f64, f64),
    (bytes, bits_per_second): (u64, f64),
    udp: Option<CsvUdp>,
) -> String {
    let ((lh, lp), (rh, rp)) = socket.map_or_else(
        || ((String::new(), "0".into()), (String::new(), "0".into())),
        |s| (host_port(&s.local), host_port(&s.remote)),
    );
    let mut line = format!(
        "{},{lh},{lp},{rh},{rp},{id},{start:.1}-{end:.1},{bytes},{}",
        csv_time(unix_ms),
        bits_per_second.max(0.0).round() as u64
    );
    match udp {
        Some(CsvUdp::Received(r)) => line.push_str(&format!(
            ",{:.3},{},{},{:.3},{}",
            r.jitter_ms,
            r.lost,
            r.expected(),
            r.lost_percent(),
            r.out_of_order
        )),
        Some(CsvUdp::Sent) => line.push_str(",0.000,0,-1,-0.000,0"),
        None => {}
    }
    line.push('\n');
    line
}

/// A UDP row's extra columns.
#[derive(Clone, Copy)]
enum CsvUdp<'a> {
    Received(&'a crate::report::UdpRxFinal),
    Sent,
}

/// The CSV lines of a finished test at the end it was measured at: one per stream of this end
/// (iperf 2.1 writes no sum line in CSV).
pub fn csv_final(result: &TestResult) -> String {
    let udp = result.spec.protocol == Protocol::Udp;
    let end_ms = result.started_unix_ms;
    result
        .local
        .streams
        .iter()
        .map(|s| {
            let socket = result.local.sockets.iter().find(|k| k.id == s.id);
            let extra = match (udp, s.udp_rx.as_ref(), s.role) {
                (false, _, _) => None,
                (true, Some(rx), _) => Some(CsvUdp::Received(rx)),
                (true, None, _) => Some(CsvUdp::Sent),
            };
            let secs = s.duration.as_secs_f64();
            let ms = end_ms + u64::try_from(s.duration.as_millis()).unwrap_or(0);
            csv_line(
                ms,
                socket,
                s.id,
                (0.0, secs),
                (s.bytes, s.bits_per_second()),
                extra,
            )
        })
        .collect()
}

/// The CSV lines of one interval (`-i`), one per stream.
pub fn csv_interval(
    started_unix_ms: u64,
    sockets: &[crate::report::SocketInfo],
    report: &IntervalReport,
) -> String {
    let (start, end) = (report.start.as_secs_f64(), report.end.as_secs_f64());
    let ms = started_unix_ms + u64::try_from(report.end.as_millis()).unwrap_or(0);
    report
        .streams
        .iter()
        .map(|s| {
            let socket = sockets.iter().find(|k| k.id == s.id);
            let bps = crate::report::bits_per_second(s.bytes, report.seconds());
            csv_line(ms, socket, s.id, (start, end), (s.bytes, bps), None)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_iperf_2_1_8() {
        // Layouts as Debian's iperf 2.1.8 prints them; figures computed by hand.
        assert_eq!(
            row(Some(1), 0.0, 1.0034, 1_116_691_496, None),
            "[  1] 0.0000-1.0034 sec  1.04 GBytes  8.90 Gbits/sec\n"
        );
        let udp = UdpColumns {
            jitter_ms: 0.006,
            lost: 0,
            total: 449,
            latency: None,
            frames: None,
        };
        assert_eq!(
            row(Some(1), 0.0, 1.0029, 660_500, Some(udp)),
            "[  1] 0.0000-1.0029 sec   645 KBytes  5.27 Mbits/sec   0.006 ms 0/449 (0%)\n"
        );
        assert_eq!(
            row(None, 0.0, 1.0003, 3_758_096_384, None),
            "[SUM] 0.0000-1.0003 sec  3.50 GBytes  30.1 Gbits/sec\n"
        );
        assert_eq!(
            row(Some(1), 0.0, 3.004, 0, None),
            "[  1] 0.0000-3.0040 sec  0.000 Bytes  0.000 bits/sec\n"
        );
        let lossy = UdpColumns {
            jitter_ms: 1.5,
            lost: 3,
            total: 200,
            latency: None,
            frames: None,
        };
        assert!(row(Some(2), 0.0, 1.0, 1000, Some(lossy)).ends_with("  1.500 ms 3/200 (1.5%)\n"));
    }

    /// A frames row and a TCP write-latency row as a 2.1.8 server prints them (its NetPwr,
    /// inP and read columns left out); figures by hand.
    #[test]
    fn frame_and_write_latency_rows_match_iperf_2_1_8() {
        let delays = |count, (min, mean, max), stdev_ms: f64| {
            let m2 = (stdev_ms / 1e3).powi(2) * (count - 1) as f64;
            OneWayFinal::from_moments(
                count,
                (min, mean, max),
                m2,
                crate::one_way::ClockBasis::SameHost,
            )
        };
        let udp = UdpColumns {
            jitter_ms: 0.004,
            lost: 0,
            total: 5279,
            latency: Some((delays(5279, (0.0, 0.000_004, 0.000_377), 0.031), 1760.0)),
            frames: Some((
                181,
                0,
                Some(delays(181, (0.000_079, 0.000_165, 0.000_769), 0.072)),
            )),
        };
        assert_eq!(
            row(Some(1), 0.0, 3.0002, 7_612_661, Some(udp)),
            "[  1] 0.0000-3.0002 sec  7.26 MBytes  20.3 Mbits/sec   0.004 ms 0/5279 (0%) 0.004/0.000/0.377/0.031 ms 1760 pps  181/0  0.165/0.079/0.769/0.072 ms\n"
        );
        let rx = StreamFinal {
            id: 1,
            role: StreamRole::Receiver,
            bytes: 2_002_000,
            duration: std::time::Duration::from_micros(2_000_100),
            packets: None,
            tcp: None,
            udp_rx: None,
            rr: None,
            writes: None,
            write_one_way: None,
            write_frames: None,
        };
        let d = delays(2001, (0.000_013, 0.000_888, 0.047_058), 4.846);
        assert_eq!(
            write_latency_row(&rx, &d, 1000, None),
            "[  1] 0.0000-2.0001 sec  1.91 MBytes  8.01 Mbits/sec  0.888/0.013/47.058/4.846 ms (2001/1000)\n"
        );
    }

    /// `-e`'s rows, figures by hand: 1 GiB in 1 s is 8.59 Gbit/s, NetPwr 2^30 B/s over 40 µs;
    /// a UDP row's writes are its datagrams and PPS their rate; `[SUM]` adds writes and
    /// retries and shows no cwnd.
    #[test]
    fn enhanced_rows_match_iperf_2_1_8() {
        let tcp = |id, retransmits| StreamInterval {
            id,
            role: StreamRole::Sender,
            bytes: 1 << 30,
            packets: None,
            writes: Some(8192),
            tcp: Some(TcpSample {
                retransmits,
                snd_cwnd: 895 * 1024,
                rtt_us: 40,
                rttvar_us: 5,
                ..TcpSample::default()
            }),
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
        };
        let report = |streams| IntervalReport {
            start: std::time::Duration::ZERO,
            end: std::time::Duration::from_secs(1),
            omitted: false,
            streams,
            wifi: None,
        };
        assert_eq!(
            enhanced_interval_rows(&report(vec![tcp(1, 3)]), None),
            "[  1] 0.0000-1.0000 sec  1.00 GBytes  8.59 Gbits/sec  8192/0          3      895K/40(5) us  26843546\n"
        );
        let two = enhanced_interval_rows(&report(vec![tcp(1, 3), tcp(2, 4)]), None);
        assert!(
            two.ends_with(
                "[SUM] 0.0000-1.0000 sec  2.00 GBytes  17.2 Gbits/sec  16384/0          7\n"
            ),
            "{two}"
        );
        let udp = StreamInterval {
            bytes: 1470 * 893,
            packets: Some(893),
            writes: None,
            tcp: None,
            ..tcp(1, 0)
        };
        assert_eq!(
            enhanced_interval_rows(&report(vec![udp]), None),
            "[  1] 0.0000-1.0000 sec  1.25 MBytes  10.5 Mbits/sec  893/0      893 pps\n"
        );
        assert!(enhanced_header(Protocol::Tcp).contains("Write/Err  Rtry     Cwnd/RTT(var)"));
    }

    #[test]
    fn banner_and_peer_lines() {
        assert_eq!(
            client_banner("pc", 5001, Protocol::Tcp, None),
            format!(
                "{RULE}\nClient connecting to pc, TCP port 5001\nTCP window size: (default)\n{RULE}\n"
            )
        );
        assert_eq!(
            connected_line(1, "127.0.0.1:44172", "127.0.0.1:5001"),
            "[  1] local 127.0.0.1 port 44172 connected with 127.0.0.1 port 5001\n"
        );
        assert_eq!(
            connected_line(3, "[::1]:40000", "[::1]:5001"),
            "[  3] local ::1 port 40000 connected with ::1 port 5001\n"
        );
    }

    #[test]
    fn csv_lines_match_iperf_2_1_8() {
        assert_eq!(csv_time(1_796_373_968_123), "20261204084608");
        let socket = crate::report::SocketInfo {
            id: 1,
            local: "127.0.0.1:35076".into(),
            remote: "127.0.0.1:5487".into(),
            dccp: None,
        };
        assert_eq!(
            csv_line(
                1_796_373_968_000,
                Some(&socket),
                1,
                (0.0, 1.0),
                (1_740_111_932, 13_920_895_456.4),
                None
            ),
            "20261204084608,127.0.0.1,35076,127.0.0.1,5487,1,0.0-1.0,1740111932,13920895456\n"
        );
        let rx = crate::report::UdpRxFinal {
            received: 93,
            jitter_ms: 0.0034,
            ..Default::default()
        };
        assert!(
            csv_line(
                0,
                Some(&socket),
                1,
                (0.0, 1.0),
                (136_710, 1_071_497.0),
                Some(CsvUdp::Received(&rx))
            )
            .ends_with(",136710,1071497,0.003,0,93,0.000,0\n")
        );
        assert!(
            csv_line(0, None, 1, (0.0, 1.0), (1, 8.0), Some(CsvUdp::Sent))
                .ends_with(",0.000,0,-1,-0.000,0\n")
        );
    }

    #[test]
    fn fixed_units_as_iperf_2_1_8_prints_them() {
        // Stock 2.1.8, `-f k`: "2018944 KBytes  16345948 Kbits/sec"; `-f g`: "3.89 GBytes  33.4 Gbits/sec".
        let k = row_in(Some(1), (0.0, 1.0), 2_067_398_656, None, Some('k'));
        assert_eq!(
            k,
            "[  1] 0.0000-1.0000 sec  2018944 KBytes  16539189 Kbits/sec\n"
        );
        let g = row_in(Some(1), (0.0, 1.0), 4_176_855_040, None, Some('g'));
        assert_eq!(g, "[  1] 0.0000-1.0000 sec  3.89 GBytes  33.4 Gbits/sec\n");
        let big_k = row_in(Some(1), (0.0, 2.0), 2048, None, Some('K'));
        assert!(big_k.ends_with("2.00 KBytes  1.00 KBytes/sec\n"), "{big_k}");
        assert_eq!(
            row_in(None, (0.0, 1.0), 1, None, None),
            row(None, 0.0, 1.0, 1, None)
        );
    }
}
