//! A packet-size sweep as text: one row per size with throughput and packets per second (the
//! classic CCID rate-limiter table). Only lays out the figures of [`crate::sweep::SweepResult`].

use crate::dccp::service_name;
use crate::sweep::SweepResult;
use crate::units::format_bits;

/// The table, with a title line naming the transport, CCID, rate and time per size.
pub fn text(result: &SweepResult, service: Option<u32>) -> String {
    let mut title = format!("Packet-size sweep: {}", result.protocol.upper_name());
    if let Some(ccid) = result.ccid {
        title += &format!(" CCID {ccid}");
    }
    if let Some(code) = service {
        title += &format!(" (service {})", service_name(code));
    }
    let rate = result.bitrate.map_or("unlimited".to_string(), |b| {
        format!("{}/sec", format_bits(b as f64))
    });
    title += &format!(", {rate}, {:.1} s per size", result.seconds_per_size);
    let mut out = vec![
        title,
        "    Size       Throughput      Packets/s    Lost/Total".to_string(),
    ];
    for p in &result.points {
        let row = match &p.error {
            Some(e) => format!("{:>6} B   failed: {e}", p.len),
            None => {
                let total = p.lost + p.packets;
                format!(
                    "{:>6} B  {:>13}/s  {:>12.0}    {}/{} ({:.2}%)",
                    p.len,
                    format_bits(p.bits_per_second),
                    p.packets_per_second,
                    p.lost,
                    total,
                    p.lost_percent
                )
            }
        };
        out.push(row);
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Protocol;
    use crate::sweep::SweepPoint;

    #[test]
    fn one_row_per_size() {
        let result = SweepResult {
            protocol: Protocol::Dccp,
            ccid: Some(3),
            bitrate: None,
            seconds_per_size: 2.0,
            points: vec![
                SweepPoint {
                    len: 16,
                    bytes: 160_000,
                    seconds: 2.0,
                    bits_per_second: 640_000.0,
                    packets: 10_000,
                    packets_per_second: 5000.0,
                    lost: 0,
                    lost_percent: 0.0,
                    error: None,
                },
                SweepPoint::failed(1420, "CCID 3 is not available"),
            ],
        };
        let t = text(&result, Some(crate::dccp::DEFAULT_SERVICE));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "Packet-size sweep: DCCP CCID 3 (service PERF), unlimited, 2.0 s per size"
        );
        assert_eq!(
            lines[2],
            "    16 B      640 Kbits/s          5000    0/10000 (0.00%)"
        );
        assert!(lines[3].contains("1420 B   failed: CCID 3"), "{t}");
    }
}
