//! DCCP facts of a result as text: per stream and end, the negotiated CCIDs, the maximum packet
//! size and, for CCID 3, the kernel's TFRC figures. Printed after the iperf3-style summary.

use crate::dccp::{DccpStreamInfo, ccid_list, service_name};
use crate::report::TestResult;
use crate::units::format_bits;

fn ccid_text(c: Option<u8>) -> String {
    c.map_or("?".into(), |c| c.to_string())
}

/// One line per DCCP stream and end; empty when the test was not DCCP.
pub fn text(result: &TestResult) -> String {
    let mut lines = Vec::new();
    let (client, server) = result.sides();
    for (name, side) in [("client", client), ("server", server)] {
        let Some(side) = side else { continue };
        for s in &side.sockets {
            if let Some(d) = &s.dccp {
                lines.push(stream_line(name, s.id, d));
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    if let Some(d) = result.spec.dccp {
        lines.insert(0, format!("DCCP service code {}", service_name(d.service)));
    }
    lines.join("\n") + "\n"
}

/// `perfpeer.dccp` in `-J`: the service code and, per stream and end, what the kernel said.
pub fn json(result: &TestResult) -> serde_json::Value {
    let (client, server) = result.sides();
    let mut streams = Vec::new();
    for (end, side) in [("client", client), ("server", server)] {
        for s in side.iter().flat_map(|side| side.sockets.iter()) {
            if let Some(d) = &s.dccp
                && let serde_json::Value::Object(mut obj) = crate::format::json_value(d)
            {
                obj.insert("end".into(), end.into());
                obj.insert("id".into(), s.id.into());
                streams.push(serde_json::Value::Object(obj));
            }
        }
    }
    let service = result.spec.dccp.unwrap_or_default().service;
    serde_json::json!({ "service": service, "service_name": service_name(service), "streams": streams })
}

fn stream_line(end: &str, id: u32, d: &DccpStreamInfo) -> String {
    let mut line = format!(
        "[{id:>3}] DCCP at the {end}: TX CCID {}, RX CCID {}, MPS {}",
        ccid_text(d.tx_ccid),
        ccid_text(d.rx_ccid),
        d.cur_mps.map_or("?".into(), |m| format!("{m} bytes"))
    );
    if !d.available_ccids.is_empty() {
        line += &format!(" (kernel offers {})", ccid_list(&d.available_ccids));
    }
    if let Some(t) = d.tfrc_tx {
        line += &format!(
            "; TFRC sender X {}/s, X_recv {}/s, p {:.4}, RTT {} us",
            format_bits(t.x_bytes_per_sec * 8.0).trim_start(),
            format_bits(t.x_recv_bytes_per_sec * 8.0).trim_start(),
            t.p,
            t.rtt_us
        );
    }
    if let Some(r) = d.tfrc_rx {
        line += &format!(
            "; TFRC receiver X_recv {}/s, p {:.4}, RTT {} us",
            format_bits(r.x_recv_bytes_per_sec * 8.0).trim_start(),
            r.p,
            r.rtt_us
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dccp::TfrcTx;

    #[test]
    fn a_ccid3_sender_line() {
        let d = DccpStreamInfo {
            tx_ccid: Some(3),
            rx_ccid: Some(3),
            cur_mps: Some(1424),
            available_ccids: vec![2, 3],
            tfrc_tx: Some(TfrcTx {
                x_bytes_per_sec: 125_000.0,
                x_recv_bytes_per_sec: 100_000.0,
                rtt_us: 120,
                p: 0.01,
                ..Default::default()
            }),
            tfrc_rx: None,
        };
        assert_eq!(
            stream_line("client", 1, &d),
            "[  1] DCCP at the client: TX CCID 3, RX CCID 3, MPS 1424 bytes (kernel offers CCID 2 and 3); TFRC sender X 1.00 Mbits/s, X_recv 800 Kbits/s, p 0.0100, RTT 120 us"
        );
    }
}
