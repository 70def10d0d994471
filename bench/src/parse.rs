//! Turning each tool's output into numbers: iperf3-style JSON (perfpeer and iperf3), iperf2's
//! `-y C` CSV and bounceback summary, netperf's `-o` line. No processes here: text in, figures out.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cases::{Case, Tool};

/// Output that did not have the expected figures.
#[derive(Debug, thiserror::Error)]
#[error("{tool} output has no {what}")]
pub struct ParseError {
    tool: &'static str,
    what: &'static str,
}

/// Figures of one run (before CPU-derived ones are added). `bytes` is the receiver's byte count
/// for service demand.
pub type Figures = BTreeMap<&'static str, f64>;

fn miss(tool: Tool, what: &'static str) -> ParseError {
    ParseError {
        tool: tool.name(),
        what,
    }
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// Figures from a client's stdout (and, for iperf2 UDP, the server's).
pub fn parse(tool: Tool, case: Case, client: &str, server: &str) -> Result<Figures, ParseError> {
    let mut f = Figures::new();
    match (tool, case) {
        (
            Tool::Perfpeer | Tool::Iperf3 | Tool::Iperf3New,
            Case::Tcp1 | Case::Tcp1SkipRx | Case::Tcp2 | Case::Tcp4 | Case::Tcp1Budget,
        ) => {
            let j: Value = serde_json::from_str(client).map_err(|_| miss(tool, "JSON"))?;
            let bps = num(&j, &["end", "sum_received", "bits_per_second"]);
            let bytes = num(&j, &["end", "sum_received", "bytes"]);
            f.insert("gbps", bps.ok_or(miss(tool, "received bit/s"))? / 1e9);
            f.insert("bytes", bytes.ok_or(miss(tool, "received bytes"))?);
        }
        (
            Tool::Perfpeer | Tool::Iperf3 | Tool::Iperf3New,
            Case::Udp64 | Case::Udp1400 | Case::Paced | Case::Paced1G | Case::Udp1400Budget,
        ) => {
            let j: Value = serde_json::from_str(client).map_err(|_| miss(tool, "JSON"))?;
            let sent = num(&j, &["end", "sum", "packets"]).ok_or(miss(tool, "packets"))?;
            let lost = num(&j, &["end", "sum", "lost_packets"]).ok_or(miss(tool, "lost"))?;
            let secs = num(&j, &["end", "sum", "seconds"]).ok_or(miss(tool, "seconds"))?;
            udp_figures(&mut f, sent - lost, lost, secs);
        }
        (
            Tool::Iperf2,
            Case::Tcp1 | Case::Tcp1SkipRx | Case::Tcp2 | Case::Tcp4 | Case::Tcp1Budget,
        ) => {
            let row = iperf2_sum_row(client).ok_or(miss(tool, "CSV report"))?;
            f.insert("bytes", row[7]);
            f.insert("gbps", row[8] / 1e9);
        }
        (
            Tool::Iperf2,
            Case::Udp64 | Case::Udp1400 | Case::Paced | Case::Paced1G | Case::Udp1400Budget,
        ) => {
            // The server's report: …, bytes, bit/s, jitter, lost, total, %, out of order.
            let row = iperf2_sum_row(server)
                .filter(|r| r.len() >= 12)
                .ok_or(miss(tool, "server CSV report"))?;
            udp_figures(&mut f, row[11] - row[10], row[10], row[6]);
        }
        (Tool::Perfpeer, Case::Rr | Case::UdpRr) => {
            let j: Value = serde_json::from_str(client).map_err(|_| miss(tool, "JSON"))?;
            let rr = j
                .get("perfpeer")
                .and_then(|p| p.get("rr"))
                .ok_or(miss(tool, "rr"))?;
            let get = |k: &[&str]| num(rr, k).ok_or(miss(tool, "rr figures"));
            f.insert("tps", get(&["transactions_per_second"])?);
            f.insert("mean_us", get(&["rtt", "mean_us"])?);
            f.insert("p50_us", get(&["rtt", "p50_us"])?);
            f.insert("p99_us", get(&["rtt", "p99_us"])?);
        }
        (Tool::Netperf, _) => {
            let line = client.lines().rev().find(|l| !l.trim().is_empty());
            let v: Vec<f64> = line
                .map(|l| l.split(',').filter_map(|x| x.trim().parse().ok()).collect())
                .unwrap_or_default();
            if v.len() != 4 {
                return Err(miss(tool, "THROUGHPUT,MEAN,P50,P99 line"));
            }
            for (k, x) in ["tps", "mean_us", "p50_us", "p99_us"].into_iter().zip(v) {
                f.insert(k, x);
            }
        }
        (Tool::Iperf2, Case::Rr | Case::UdpRr) => {
            let (count, secs, mean_ms) =
                iperf2_bounceback(client).ok_or(miss(tool, "bounceback summary"))?;
            f.insert("tps", count / secs);
            f.insert("mean_us", mean_ms * 1000.0);
        }
        (Tool::Probe, Case::Tcp1 | Case::Tcp1Budget) => {
            let j: Value = serde_json::from_str(client.trim()).map_err(|_| miss(tool, "JSON"))?;
            let bytes = num(&j, &["bytes"]).ok_or(miss(tool, "bytes"))?;
            let secs = num(&j, &["secs"])
                .filter(|s| *s > 0.0)
                .ok_or(miss(tool, "secs"))?;
            f.insert("gbps", bytes * 8.0 / secs / 1e9);
            f.insert("bytes", bytes);
        }
        (Tool::Probe, Case::Udp64 | Case::Udp1400 | Case::Udp1400Budget) => {
            let sent: Value =
                serde_json::from_str(client.trim()).map_err(|_| miss(tool, "JSON"))?;
            let got: Value =
                serde_json::from_str(server.trim()).map_err(|_| miss(tool, "server JSON"))?;
            let sent = num(&sent, &["sent"]).ok_or(miss(tool, "sent"))?;
            let received = num(&got, &["received"]).ok_or(miss(tool, "received"))?;
            let secs = num(&got, &["secs"])
                .filter(|s| *s > 0.0)
                .ok_or(miss(tool, "secs"))?;
            udp_figures(&mut f, received, (sent - received).max(0.0), secs);
        }
        (Tool::Probe, _) => return Err(miss(tool, "a bare loop for this case")),
        (Tool::Iperf3 | Tool::Iperf3New, Case::Rr | Case::UdpRr) => {
            return Err(miss(tool, "request/response mode"));
        }
    }
    Ok(f)
}

fn udp_figures(f: &mut Figures, received: f64, lost: f64, secs: f64) {
    f.insert("rx_kpps", received / secs / 1000.0);
    let total = received + lost;
    f.insert(
        "loss_pct",
        if total > 0.0 {
            lost * 100.0 / total
        } else {
            0.0
        },
    );
}

/// iperf2's `-y C` row for the whole test: the sum row (id -1) when there are several streams,
/// otherwise the last row. The interval ("0.0-5.0") becomes its length in field 6.
fn iperf2_sum_row(out: &str) -> Option<Vec<f64>> {
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.trim().split(',').collect::<Vec<_>>())
        .filter(|r| r.len() >= 9)
        .collect();
    let row = rows.iter().find(|r| r[5] == "-1").or(rows.last())?;
    let (a, b) = row[6].split_once('-')?;
    let secs = b.parse::<f64>().ok()? - a.parse::<f64>().ok()?;
    let mut v: Vec<f64> = row.iter().map(|x| x.parse().unwrap_or(f64::NAN)).collect();
    v[6] = secs;
    Some(v)
}

/// (bounces, seconds, mean RTT ms) from iperf2's bounceback summary line
/// `[  1] 0.0000-2.0108 sec  35.8 MBytes  149 Mbits/sec  293502=0.006/0.005/3.627/0.010 ms …`.
fn iperf2_bounceback(out: &str) -> Option<(f64, f64, f64)> {
    out.lines().rev().find_map(|l| {
        let rest = l.split_once("] 0.0000-")?.1;
        let (end, rest) = rest.split_once(" sec")?;
        let stats = rest
            .split_whitespace()
            .find(|w| w.contains('=') && w.contains('/'))?;
        let (count, tail) = stats.split_once('=')?;
        let mean = tail.split('/').next()?;
        Some((
            count.parse().ok()?,
            end.trim().parse().ok()?,
            mean.parse().ok()?,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf2_csv_rows() {
        let tcp =
            "19700101000000,127.0.0.1,44280,127.0.0.1,15001,1,0.0-2.0,4429316156,17667319112\n";
        let f = parse(Tool::Iperf2, Case::Tcp1, tcp, "").unwrap();
        assert!((f["gbps"] - 17.667319112).abs() < 1e-9);
        let two =
            "x,a,1,b,2,3,0.0-5.0,10,16\nx,a,1,b,2,4,0.0-5.0,10,16\nx,a,1,b,2,-1,0.0-5.0,20,32\n";
        assert_eq!(
            parse(Tool::Iperf2, Case::Tcp2, two, "").unwrap()["bytes"],
            20.0
        );
        let srv = "x,a,1,b,2,1,0.0-2.0,74814208,299255934,0.010,100,1000,10.0,0\n";
        let f = parse(Tool::Iperf2, Case::Udp64, "", srv).unwrap();
        assert_eq!((f["rx_kpps"], f["loss_pct"]), (0.45, 10.0));
        assert!(parse(Tool::Iperf2, Case::Udp64, "", "").is_err());
    }

    #[test]
    fn the_probes_lines() {
        let tcp = r#"{"bytes":2000000000,"secs":2.0}"#;
        let f = parse(Tool::Probe, Case::Tcp1, tcp, "").unwrap();
        assert_eq!((f["gbps"], f["bytes"]), (8.0, 2e9));
        let f = parse(
            Tool::Probe,
            Case::Udp64,
            r#"{"sent":1000}"#,
            r#"{"received":990,"secs":2.0}"#,
        )
        .unwrap();
        assert_eq!((f["rx_kpps"], f["loss_pct"]), (0.495, 1.0));
        assert!(parse(Tool::Probe, Case::Udp64, r#"{"sent":1}"#, "").is_err());
        assert!(parse(Tool::Probe, Case::Rr, tcp, "").is_err());
    }

    #[test]
    fn iperf3_style_json() {
        let j = r#"{"end":{"sum":{"packets":1000,"lost_packets":10,"seconds":2.0},
            "sum_received":{"bits_per_second":8e9,"bytes":1e9}}}"#;
        let f = parse(Tool::Iperf3, Case::Udp1400, j, "").unwrap();
        assert_eq!((f["rx_kpps"], f["loss_pct"]), (0.495, 1.0));
        assert_eq!(
            parse(Tool::Perfpeer, Case::Tcp1, j, "").unwrap()["gbps"],
            8.0
        );
        assert!(parse(Tool::Iperf3, Case::Tcp1, "not json", "").is_err());
    }

    #[test]
    fn request_response_outputs() {
        let np = "165552.15,5.97,5,7\n";
        let f = parse(Tool::Netperf, Case::Rr, np, "").unwrap();
        assert_eq!((f["tps"], f["p99_us"]), (165552.15, 7.0));
        let bb = "[  1] 0.0000-2.0108 sec  35.8 MBytes   149 Mbits/sec    293502=0.006/0.005/3.627/0.010 ms    0  576K/1316 us    155531 rps\n";
        let f = parse(Tool::Iperf2, Case::Rr, bb, "").unwrap();
        assert!((f["tps"] - 293502.0 / 2.0108).abs() < 1e-6);
        assert!((f["mean_us"] - 6.0).abs() < 1e-9);
        let pp = r#"{"perfpeer":{"rr":{"transactions_per_second":1.5e5,
            "rtt":{"mean_us":6.1,"p50_us":5.2,"p99_us":9.0}}}}"#;
        assert_eq!(
            parse(Tool::Perfpeer, Case::Rr, pp, "").unwrap()["p50_us"],
            5.2
        );
        assert!(parse(Tool::Netperf, Case::Rr, "1,2\n", "").is_err());
    }
}
