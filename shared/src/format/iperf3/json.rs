//! iperf3's JSON: the `-J` object and the `--json-stream` lines, with iperf3's keys, units and
//! number shapes, plus perfpeer's own `perfpeer` section.

use serde_json::{Map, Value};

use crate::calendar::http_date;
use crate::report::{
    DirectionTotals, Flow, HostInfo, IntervalReport, IntervalSum, PeerRole, ServiceDemand,
    SideReport, SocketInfo, StreamFinal, StreamInterval, StreamRole, TestResult, UdpRxFinal,
    bits_per_second,
};
use crate::spec::{Direction, EndCondition, Protocol, TestSpec};

use super::{Preamble, flow_is_local_tx, service_demands, socket_number, split_addr, split_flows};

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
    let far = result.remote.as_ref().map(|r| r.intervals.as_slice());
    let intervals = result
        .local
        .intervals
        .iter()
        .map(|r| {
            let mut v = interval_json(&result.spec, r);
            if let (Some(wifi), Some(obj)) = (
                crate::format::wifi::interval_json(r, far),
                v.as_object_mut(),
            ) {
                obj.insert("wifi".into(), wifi);
            }
            v
        })
        .collect::<Vec<_>>();
    put(&mut top, "intervals", intervals);
    put(&mut top, "end", Value::Object(end_json(result)));
    put(&mut top, "perfpeer", perfpeer_json(result));
    if let Some(verdict) = result.verdict() {
        put(&mut top, "verdict", crate::format::json_value(&verdict));
    }
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
    let mut v = interval_json(spec, report);
    if let (Some(wifi), Some(obj)) = (
        crate::format::wifi::interval_json(report, None),
        v.as_object_mut(),
    ) {
        obj.insert("wifi".into(), wifi);
    }
    event_line("interval", &v)
}

/// The `--json-stream` line for the far end's Wi-Fi link in one interval (it arrives apart
/// from this end's interval): `{"event":"perfpeer_wifi_remote","data":{…sample, "end": s}}`.
pub fn json_stream_far_wifi(report: &IntervalReport) -> Option<String> {
    let mut v = crate::format::json_value(report.wifi.as_ref()?);
    v.as_object_mut()?
        .insert("end".into(), report.end.as_secs_f64().into());
    Some(event_line("perfpeer_wifi_remote", &v))
}

/// The `--json-stream` end line: `{"event":"end","data":…}`, `data` being `-J`'s `end` with the
/// `perfpeer` section added. A partial test is preceded by an `{"event":"error","data":reason}`
/// line (lines separated by `\n`, no trailing newline).
pub fn json_stream_end(result: &TestResult) -> String {
    let mut end = end_json(result);
    put(&mut end, "perfpeer", perfpeer_json(result));
    if let Some(verdict) = result.verdict() {
        put(&mut end, "verdict", crate::format::json_value(&verdict));
    }
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
    crate::format::pretty_json(&Value::Object(top)).unwrap_or_default()
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
    if let Some(wifi) = crate::format::wifi::end_json(result) {
        put(&mut m, "wifi", wifi);
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
                let rx_final = rx.and_then(|r| r.udp_rx.clone());
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
            flow.sent.as_ref().map(|t| (t, true))
        } else {
            flow.received.as_ref().map(|t| (t, false))
        };
        let view = preferred
            .or(flow.sent.as_ref().map(|t| (t, true)))
            .or(flow.received.as_ref().map(|t| (t, false)));
        if let Some((t, sender)) = view {
            let loss = flow
                .received
                .as_ref()
                .and_then(|r| r.udp_rx.clone())
                .unwrap_or_default();
            put(
                m,
                &format!("sum{suffix}"),
                totals_json(t, sender, sender, Some(loss)),
            );
        }
    }
    if let Some(t) = &flow.sent {
        let loss = udp.then(|| UdpRxFinal {
            sender_packets: t.packets,
            ..Default::default()
        });
        put(
            m,
            &format!("sum_sent{suffix}"),
            totals_json(t, true, udp || local_tx, loss),
        );
    }
    if let Some(t) = &flow.received {
        let loss = if udp {
            Some(t.udp_rx.clone().unwrap_or_default())
        } else {
            None
        };
        put(
            m,
            &format!("sum_received{suffix}"),
            totals_json(t, false, !udp && local_tx, loss),
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
    // The figure where it is one; where the test was too small a share of its host's busy CPU,
    // that share (percent) under service_demand_not_meaningful instead.
    let (sd_local, sd_remote) = service_demands(result);
    let figure = |sd: Option<ServiceDemand>| sd.and_then(ServiceDemand::us_per_kb);
    let noise = |sd: Option<ServiceDemand>| match sd {
        Some(ServiceDemand::NotMeaningful { share_of_host_busy }) => {
            Some(share_of_host_busy * 100.0)
        }
        _ => None,
    };
    put(
        &mut m,
        "service_demand_us_per_kb",
        local_remote_json(figure(sd_local), figure(sd_remote)),
    );
    if noise(sd_local).is_some() || noise(sd_remote).is_some() {
        put(
            &mut m,
            "service_demand_not_meaningful",
            local_remote_json(noise(sd_local), noise(sd_remote)),
        );
    }
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
    let each_way = split_flows(result, &flows);
    if result.spec.protocol.is_datagram() {
        let mut udp = Obj::new();
        put_each_way(&mut udp, each_way, "duplicates", |t| {
            t.udp_rx.as_ref().map(|r| &r.duplicates)
        });
        if let Some(gap) = each_way
            .0
            .and_then(|f| f.received.as_ref())
            .and_then(|t| t.udp_rx.as_ref()?.max_gap_ms)
        {
            put(&mut udp, "max_gap_ms", gap);
        }
        // Video frames (--isochronous) and one-way delays (--trip-times), for each direction
        // that measured them.
        put_each_way(&mut udp, each_way, "frames", |t| {
            t.udp_rx.as_ref()?.frames.as_ref()
        });
        put_each_way(&mut udp, each_way, "one_way", |t| {
            t.udp_rx.as_ref()?.one_way.as_ref()
        });
        put(&mut m, "udp", udp);
    }
    if result.spec.protocol == Protocol::Tcp {
        // One-way delays of the writes (--trip-times), for each direction that measured them.
        let mut tcp = Obj::new();
        put_each_way(&mut tcp, each_way, "one_way", |t| t.write_one_way.as_ref());
        put_each_way(&mut tcp, each_way, "frames", |t| t.write_frames.as_ref());
        if !tcp.is_empty() {
            put(&mut m, "tcp", tcp);
        }
    }
    if result.spec.protocol == Protocol::Dccp {
        put(&mut m, "dccp", crate::format::dccp::json(result));
    }
    if let Some(group) = result.spec.multicast {
        put(&mut m, "multicast", multicast_json(result, group));
    }
    if let Some(load) = &result.working_load {
        put(&mut m, "working_load", crate::format::json_value(load));
    }
    put(&mut m, "spec", crate::format::json_value(&result.spec));
    Value::Object(m)
}

/// A multicast test's group and each receiver: what it received (`sum_received`, as a unicast
/// test's), its one-way delays and frames where measured, its result id, or why it has none.
fn multicast_json(result: &TestResult, group: crate::multicast::MulticastSpec) -> Value {
    let mut m = Obj::new();
    put(&mut m, "group", group.group.to_string());
    put(&mut m, "port", group.port);
    put(&mut m, "ttl", group.ttl);
    put(&mut m, "source_specific", group.source_specific);
    let receivers: Vec<Value> = result
        .group_receivers
        .iter()
        .map(|receiver| {
            let mut r = Obj::new();
            put(&mut r, "peer", receiver.peer.as_str());
            for (key, v) in [
                ("result_id", &receiver.result_id),
                ("result_url", &receiver.result_url),
            ] {
                if let Some(v) = v {
                    put(&mut r, key, v.as_str());
                }
            }
            if let Some(why) = &receiver.error {
                put(&mut r, "error", why.as_str());
            }
            if let Some(t) = receiver.report.as_ref().and_then(|r| r.received().1) {
                let loss = t.udp_rx.clone().unwrap_or_default();
                put(
                    &mut r,
                    "sum_received",
                    totals_json(&t, false, false, Some(loss)),
                );
                for (key, v) in [
                    ("one_way", t.one_way().map(crate::format::json_value)),
                    ("frames", t.frames().map(crate::format::json_value)),
                ] {
                    if let Some(v) = v {
                        put(&mut r, key, v);
                    }
                }
            }
            Value::Object(r)
        })
        .collect();
    put(&mut m, "receivers", receivers);
    Value::Object(m)
}

/// Puts `key` for the main flow and `key_bidir_reverse` for the reverse one (`--bidir`), each
/// where the flow's received totals have what `of` picks from them.
fn put_each_way<T: serde::Serialize>(
    obj: &mut Obj,
    (main, reverse): (Option<&Flow<'_>>, Option<&Flow<'_>>),
    key: &str,
    of: impl for<'t> Fn(&'t DirectionTotals) -> Option<&'t T>,
) {
    for (flow, key) in [
        (main, key.to_string()),
        (reverse, format!("{key}_bidir_reverse")),
    ] {
        if let Some(v) = flow.and_then(|f| f.received.as_ref()).and_then(&of) {
            put(obj, &key, crate::format::json_value(v));
        }
    }
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
