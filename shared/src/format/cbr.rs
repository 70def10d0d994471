//! Constant-bitrate streams (`--cbr 48k --len 160`) as text: a live line per interval of the
//! receiving end (achieved rate, packet rate, loss, jitter, longest gap) and a summary. Presets
//! name the classic audio streams. Only lays out figures the report model derived.

use crate::report::{IntervalReport, StreamRole, TestResult};
use crate::units::{BitRate, format_bits, parse_rate};

/// A named constant-bitrate stream: rate in bit/s and payload bytes per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbrPreset {
    /// Name for `--cbr NAME`.
    pub name: &'static str,
    /// bit/s.
    pub bits_per_second: u64,
    /// Bytes per packet.
    pub len: u32,
    /// What it models.
    pub about: &'static str,
}

/// The presets `--cbr` knows.
pub const PRESETS: [CbrPreset; 2] = [
    CbrPreset {
        name: "mp3",
        bits_per_second: 48_000,
        len: 160,
        about: "an MP3 audio stream: 48 kbit/s in 160-byte packets (37.5 packets/s)",
    },
    CbrPreset {
        name: "g711",
        bits_per_second: 64_000,
        len: 160,
        about: "G.711 voice: 64 kbit/s in 160-byte packets every 20 ms",
    },
];

/// The preset called `name` (case-insensitive).
pub fn preset(name: &str) -> Option<CbrPreset> {
    PRESETS
        .iter()
        .copied()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Why a stream's rate and packet size cannot be had from what was given (each caller words it
/// in its own terms: flags at the CLI, fields in the browser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError {
    /// Neither a preset nor a rate.
    NotARate,
    /// A rate of 0.
    ZeroRate,
    /// A rate without a packet size.
    NeedsLen,
}

/// A stream's rate and packet size: a preset by name (its packet size unless `len` is given), or
/// a rate (K/M/G ×1000) with `len`.
pub fn rate_and_len(text: &str, len: Option<u32>) -> Result<(BitRate, u32), StreamError> {
    if let Some(p) = preset(text.trim()) {
        return Ok((BitRate(p.bits_per_second), len.unwrap_or(p.len)));
    }
    let rate = parse_rate(text).map_err(|_| StreamError::NotARate)?;
    if rate.0 == 0 {
        return Err(StreamError::ZeroRate);
    }
    Ok((rate, len.ok_or(StreamError::NeedsLen)?))
}

/// The presets' names, comma-separated, for messages.
pub fn preset_names() -> String {
    PRESETS.map(|p| p.name).join(", ")
}

/// The lines a constant-bitrate view prints for one interval: the receiver's [`interval_line`],
/// then the CCID 3 state of each stream that reported it ([`tfrc_lines`]).
pub fn lines(report: &IntervalReport) -> Vec<String> {
    let mut out: Vec<String> = interval_line(report).into_iter().collect();
    out.extend(tfrc_lines(report));
    out
}

/// Column header of the live lines.
pub fn header() -> &'static str {
    "   Interval        Rate             Packets/s  Lost/Total     Jitter     Longest gap"
}

/// The live line of one interval at the receiving end (`None` if it has no receiving stream).
pub fn interval_line(report: &IntervalReport) -> Option<String> {
    let sum = report.sum(StreamRole::Receiver)?;
    let rx = sum.udp_rx?;
    let secs = report.seconds();
    let received = rx.packets.saturating_sub(rx.lost);
    let pps = if secs > 0.0 {
        received as f64 / secs
    } else {
        0.0
    };
    Some(format!(
        "{:7.2}-{:<7.2} {:>12}/s  {:>9.1}  {}/{} ({:.1}%)  {:.3} ms  {}",
        report.start.as_secs_f64(),
        report.end.as_secs_f64(),
        format_bits(sum.bits_per_second),
        pps,
        rx.lost,
        rx.packets,
        rx.lost_percent(),
        rx.jitter_ms,
        gap_text(rx.max_gap_ms)
    ))
}

/// CCID 3's state at the end of an interval, one line per stream that reported it (the sender's
/// allowed rate X, and X_recv, loss event rate p and RTT), for DCCP tests' live view.
pub fn tfrc_lines(report: &IntervalReport) -> Vec<String> {
    report
        .streams
        .iter()
        .filter_map(|s| {
            let t = s.tfrc?;
            let x = t
                .x_bytes_per_sec
                .map_or(String::new(), |x| format!("X {}/s  ", format_bits(x * 8.0)));
            Some(format!(
                "{:7.2}-{:<7.2} TFRC #{} {}: {x}X_recv {}/s  p {:.4}  RTT {:.1} ms",
                report.start.as_secs_f64(),
                report.end.as_secs_f64(),
                s.id,
                match s.role {
                    StreamRole::Sender => "sender",
                    StreamRole::Receiver => "receiver",
                },
                format_bits(t.x_recv_bytes_per_sec * 8.0),
                t.p,
                f64::from(t.rtt_us) / 1000.0
            ))
        })
        .collect()
}

fn gap_text(gap: Option<f64>) -> String {
    gap.map_or("-".into(), |g| format!("{g:.1} ms"))
}

/// The summary of a finished stream: per data flow, the receiver's totals.
pub fn summary(result: &TestResult) -> String {
    let mut out = Vec::new();
    for flow in result.flows() {
        let Some(rx) = flow.received else { continue };
        let u = rx.udp_rx.unwrap_or_default();
        let pps = if rx.seconds > 0.0 {
            u.received as f64 / rx.seconds
        } else {
            0.0
        };
        out.push(format!(
            "Constant bitrate {}: {:.1} s, {}/s achieved, {:.1} packets/s, lost {}/{} ({:.2}%), jitter {:.3} ms, longest gap {}",
            if flow.client_to_server { "client -> server" } else { "server -> client" },
            rx.seconds,
            format_bits(rx.bits_per_second),
            pps,
            u.lost,
            u.expected(),
            u.lost_percent(),
            u.jitter_ms,
            gap_text(u.max_gap_ms)
        ));
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{StreamInterval, UdpRxSample};
    use std::time::Duration;

    #[test]
    fn rates_and_lengths_from_a_preset_or_a_rate() {
        assert_eq!(rate_and_len(" mp3 ", None), Ok((BitRate(48_000), 160)));
        assert_eq!(rate_and_len("g711", Some(80)), Ok((BitRate(64_000), 80)));
        assert_eq!(rate_and_len("48k", Some(160)), Ok((BitRate(48_000), 160)));
        assert_eq!(rate_and_len("48k", None), Err(StreamError::NeedsLen));
        assert_eq!(rate_and_len("0", Some(160)), Err(StreamError::ZeroRate));
        assert_eq!(rate_and_len("loud", Some(160)), Err(StreamError::NotARate));
        assert_eq!(preset_names(), "mp3, g711");
    }

    #[test]
    fn presets_and_a_live_line() {
        let mp3 = preset("MP3").unwrap();
        assert_eq!((mp3.bits_per_second, mp3.len), (48_000, 160));
        assert!(preset("flac").is_none());
        let report = IntervalReport {
            start: Duration::from_secs(1),
            end: Duration::from_secs(2),
            omitted: false,
            streams: vec![StreamInterval {
                id: 1,
                role: StreamRole::Receiver,
                bytes: 37 * 160,
                packets: None,
                tcp: None,
                udp_rx: Some(UdpRxSample {
                    packets: 38,
                    lost: 1,
                    out_of_order: 0,
                    duplicates: 0,
                    jitter_ms: 0.25,
                    max_gap_ms: Some(53.4),
                }),
                tfrc: None,
                probes: Vec::new(),
                writes: None,
            }],
            wifi: None,
        };
        let line = interval_line(&report).unwrap();
        assert!(line.starts_with("   1.00-2.00   "), "{line}");
        assert!(line.contains("47.4 Kbits/s"), "{line}");
        assert!(
            line.contains("37.0  1/38 (2.6%)  0.250 ms  53.4 ms"),
            "{line}"
        );
        assert!(tfrc_lines(&report).is_empty(), "no TFRC without CCID 3");
        assert_eq!(lines(&report), vec![line.clone()]);
        let mut sender = report.clone();
        sender.streams[0].role = StreamRole::Sender;
        sender.streams[0].tfrc = Some(crate::dccp::TfrcSample {
            x_bytes_per_sec: Some(6000.0),
            x_recv_bytes_per_sec: 5920.0,
            p: 0.0125,
            rtt_us: 1500,
        });
        assert_eq!(
            tfrc_lines(&sender),
            vec![
                "   1.00-2.00    TFRC #1 sender: X 48.0 Kbits/s  X_recv 47.4 Kbits/s  p 0.0125  RTT 1.5 ms"
            ]
        );
    }
}
