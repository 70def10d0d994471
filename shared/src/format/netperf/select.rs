//! netperf's output selectors (`-- -o`, `-- -O`, `-- -k`): named figures of a finished test as
//! CSV, as columns, or as `NAME=value` lines, the way scripts and flent read netperf 2.7's omni
//! output. Figures come from the report model ([`super::headline`], the sides' CPU and socket
//! sizes, the request/response summary); a figure perfpeer does not have prints as `-1` (a
//! number) or nothing (a word), as netperf prints its unknowns.

use crate::report::{SideReport, TestResult};
use crate::rr::{RrFinal, RttSummary};
use crate::spec::Protocol;

use super::{
    Cpu, Ends, Headline, NetperfError, NetperfTest, Options, headline, rcvbuf, rr_of, sndbuf,
};

/// How the selected figures are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `-o`: a line of titles (with headers), then the values, comma-separated.
    Csv,
    /// `-O`: a line of titles (with headers), then the values, in columns.
    Columns,
    /// `-k`: one `NAME=value` line per figure.
    KeyValue,
}

/// Every selector perfpeer answers, with the title netperf gives its column.
const SELECTORS: [(&str, &str); 27] = [
    ("THROUGHPUT", "Throughput"),
    ("THROUGHPUT_UNITS", "Throughput Units"),
    ("ELAPSED_TIME", "Elapsed Time (sec)"),
    ("PROTOCOL", "Protocol"),
    ("DIRECTION", "Direction"),
    ("TEST", "Test"),
    ("LOCAL_SEND_SIZE", "Local Send Size"),
    ("REMOTE_RECV_SIZE", "Remote Recv Size"),
    ("REQUEST_SIZE", "Request Size Bytes"),
    ("RESPONSE_SIZE", "Response Size Bytes"),
    ("LOCAL_SEND_SOCKET_SIZE_END", "Local Send Socket Size Final"),
    ("LOCAL_RECV_SOCKET_SIZE_END", "Local Recv Socket Size Final"),
    (
        "REMOTE_SEND_SOCKET_SIZE_END",
        "Remote Send Socket Size Final",
    ),
    (
        "REMOTE_RECV_SOCKET_SIZE_END",
        "Remote Recv Socket Size Final",
    ),
    ("LOCAL_CPU_UTIL", "Local CPU Util %"),
    ("REMOTE_CPU_UTIL", "Remote CPU Util %"),
    ("LOCAL_SD", "Local Service Demand"),
    ("REMOTE_SD", "Remote Service Demand"),
    ("SD_UNITS", "Service Demand Units"),
    ("TRANSACTION_RATE", "Transaction Rate Tran/s"),
    ("RT_LATENCY", "Round Trip Latency usec/tran"),
    ("MIN_LATENCY", "Minimum Latency Microseconds"),
    ("MAX_LATENCY", "Maximum Latency Microseconds"),
    ("MEAN_LATENCY", "Mean Latency Microseconds"),
    ("P50_LATENCY", "50th Percentile Latency Microseconds"),
    ("P90_LATENCY", "90th Percentile Latency Microseconds"),
    ("P99_LATENCY", "99th Percentile Latency Microseconds"),
];

/// The selectors a list names (separated by commas, spaces or new lines, any case, as netperf
/// reads a list or a file of them), or which name is unknown.
pub fn parse_list(text: &str) -> Result<Vec<&'static str>, String> {
    let names: Vec<&'static str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
        .map(|n| {
            SELECTORS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(n))
                .map(|(name, _)| *name)
                .ok_or_else(|| {
                    format!(
                        "unknown output selector '{n}'; perfpeer has: {}",
                        SELECTORS.map(|(name, _)| name).join(", ")
                    )
                })
        })
        .collect::<Result<_, _>>()?;
    if names.is_empty() {
        return Err("no output selectors given".into());
    }
    Ok(names)
}

/// netperf's default selection when `-o`/`-O`/`-k` come without a list.
pub fn default_list(test: NetperfTest) -> Vec<&'static str> {
    match test {
        t if t.is_transactional() => vec![
            "LOCAL_SEND_SOCKET_SIZE_END",
            "LOCAL_RECV_SOCKET_SIZE_END",
            "REQUEST_SIZE",
            "RESPONSE_SIZE",
            "ELAPSED_TIME",
            "THROUGHPUT",
            "THROUGHPUT_UNITS",
        ],
        _ => vec![
            "REMOTE_RECV_SOCKET_SIZE_END",
            "LOCAL_SEND_SOCKET_SIZE_END",
            "LOCAL_SEND_SIZE",
            "ELAPSED_TIME",
            "THROUGHPUT",
            "THROUGHPUT_UNITS",
        ],
    }
}

fn title(name: &str) -> &'static str {
    SELECTORS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, t)| *t)
}

/// The selected figures of `result` in `style` (titles only with [`Options::headers`]).
pub fn render(
    result: &TestResult,
    names: &[&str],
    style: Style,
    opts: &Options<'_>,
) -> Result<String, NetperfError> {
    let figures = Figures::of(result, opts)?;
    let values: Vec<String> = names.iter().map(|n| figures.value(n)).collect();
    let titles: Vec<&str> = names.iter().map(|n| title(n)).collect();
    Ok(match style {
        Style::KeyValue => names
            .iter()
            .zip(&values)
            .map(|(n, v)| format!("{n}={v}\n"))
            .collect(),
        Style::Csv => {
            let mut out = String::new();
            if opts.headers {
                out += &titles.join(",");
                out.push('\n');
            }
            out + &values.join(",") + "\n"
        }
        Style::Columns => {
            let widths: Vec<usize> = titles
                .iter()
                .zip(&values)
                .map(|(t, v)| t.len().max(v.len()))
                .collect();
            let line = |cells: Vec<&str>| {
                let padded: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect();
                padded.join(" ").trim_end().to_string() + "\n"
            };
            let mut out = String::new();
            if opts.headers {
                out += &line(titles.clone());
            }
            out + &line(values.iter().map(String::as_str).collect())
        }
    })
}

fn size(v: Option<u32>) -> String {
    v.map_or_else(|| "-1".into(), |v| v.to_string())
}

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "-1".into(), |v| format!("{v:.2}"))
}

/// What the selectors read, worked out once per result.
struct Figures<'a> {
    result: &'a TestResult,
    test: NetperfTest,
    rr: bool,
    local: Option<&'a SideReport>,
    remote: Option<&'a SideReport>,
    rr_final: Option<(RrFinal, f64)>,
    /// Local and remote CPU columns, as the tables have them.
    cpu: (Cpu, Cpu),
    head: Headline,
}

impl<'a> Figures<'a> {
    fn of(result: &'a TestResult, opts: &'a Options<'a>) -> Result<Self, NetperfError> {
        let test = NetperfTest::of_spec(&result.spec)?;
        let rr = test.is_transactional();
        let (local, remote) = result.sides();
        let rr_final = rr_of(result);
        let ends = Ends {
            local,
            remote,
            opts,
        };
        let cpu = if rr {
            ends.rr_cpu(rr_final.map_or(0, |(r, _)| r.transactions))
        } else {
            ends.stream_cpu(result)
        };
        Ok(Figures {
            result,
            test,
            rr,
            local,
            remote,
            rr_final,
            cpu,
            head: headline(result, opts.units)?,
        })
    }

    fn rtt(&self) -> Option<RttSummary> {
        self.rr_final.and_then(|(r, _)| r.rtt)
    }

    fn value(&self, name: &str) -> String {
        let buf =
            |side: Option<&SideReport>, f: fn(&SideReport) -> Option<u32>| size(side.and_then(f));
        match name {
            "THROUGHPUT" => format!("{:.2}", self.head.value),
            "THROUGHPUT_UNITS" => self.head.units.clone(),
            "ELAPSED_TIME" => format!("{:.2}", self.head.elapsed),
            "PROTOCOL" => match self.result.spec.protocol {
                Protocol::Tcp => "TCP",
                Protocol::Udp => "UDP",
                Protocol::Dccp => "DCCP",
            }
            .into(),
            "DIRECTION" => match self.test {
                NetperfTest::TcpMaerts => "Receive",
                NetperfTest::TcpRr | NetperfTest::UdpRr | NetperfTest::TcpCrr => "Send|Recv",
                // Connect and close only: no data either way.
                NetperfTest::TcpCc => "",
                _ => "Send",
            }
            .into(),
            "TEST" => self.test.name().into(),
            "LOCAL_SEND_SIZE" | "REQUEST_SIZE" => self.result.spec.len.to_string(),
            "REMOTE_RECV_SIZE" => {
                if self.rr {
                    self.result.spec.len.to_string()
                } else {
                    "-1".into()
                }
            }
            "RESPONSE_SIZE" => self
                .result
                .spec
                .rr
                .map_or("-1".into(), |r| r.response_len.to_string()),
            "LOCAL_SEND_SOCKET_SIZE_END" => buf(self.local, sndbuf),
            "LOCAL_RECV_SOCKET_SIZE_END" => buf(self.local, rcvbuf),
            "REMOTE_SEND_SOCKET_SIZE_END" => buf(self.remote, sndbuf),
            "REMOTE_RECV_SOCKET_SIZE_END" => buf(self.remote, rcvbuf),
            "LOCAL_CPU_UTIL" => format!("{:.2}", self.cpu.0.util),
            "REMOTE_CPU_UTIL" => format!("{:.2}", self.cpu.1.util),
            "LOCAL_SD" => format!("{:.3}", self.cpu.0.demand),
            "REMOTE_SD" => format!("{:.3}", self.cpu.1.demand),
            "SD_UNITS" => if self.rr { "usec/Tran" } else { "usec/KB" }.into(),
            "TRANSACTION_RATE" => number(self.rr.then_some(self.head.value)),
            "RT_LATENCY" => number(
                self.rr_final
                    .and_then(|(r, secs)| r.us_per_transaction(secs)),
            ),
            "MIN_LATENCY" => number(self.rtt().map(|t| t.min_us)),
            "MAX_LATENCY" => number(self.rtt().map(|t| t.max_us)),
            "MEAN_LATENCY" => number(self.rtt().map(|t| t.mean_us)),
            "P50_LATENCY" => number(self.rtt().map(|t| t.p50_us)),
            "P90_LATENCY" => number(self.rtt().map(|t| t.p90_us)),
            "P99_LATENCY" => number(self.rtt().map(|t| t.p99_us)),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_netperf_reads_them() {
        assert_eq!(
            parse_list("throughput, THROUGHPUT_UNITS\nP99_LATENCY").unwrap(),
            vec!["THROUGHPUT", "THROUGHPUT_UNITS", "P99_LATENCY"]
        );
        assert!(
            parse_list("THROUGHPUT,LOCAL_BOGUS")
                .unwrap_err()
                .contains("'LOCAL_BOGUS'")
        );
        assert!(parse_list(" , ").is_err());
        assert!(default_list(NetperfTest::TcpRr).contains(&"THROUGHPUT"));
        assert_eq!(title("ELAPSED_TIME"), "Elapsed Time (sec)");
    }
}
