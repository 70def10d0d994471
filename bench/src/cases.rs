//! The benchmark cases and, for each tool, its server and client command lines. Tools run as
//! their own users would run them (stock flags, stock servers); `parse.rs` reads their output.

/// A tool under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tool {
    /// `perfpeer serve` / `perfpeer test`.
    Perfpeer,
    /// Stock iperf3 (Debian's).
    Iperf3,
    /// The newest iperf3, built from its source outside the repository (`--iperf3-new`).
    Iperf3New,
    /// Stock iperf 2.
    Iperf2,
    /// netperf/netserver (request/response only).
    Netperf,
    /// The bare loops of `probe.rs` (TCP and unpaced UDP): what is left of perfpeer's figure
    /// against them is perfpeer's own cost.
    Probe,
}

impl Tool {
    /// Column name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Perfpeer => "perfpeer",
            Tool::Iperf3 => "iperf3",
            Tool::Iperf3New => "iperf3-new",
            Tool::Iperf2 => "iperf2",
            Tool::Netperf => "netperf",
            Tool::Probe => "probe",
        }
    }
}

/// A benchmark case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// TCP, one stream, default write size.
    Tcp1,
    /// [`Case::Tcp1`] with perfpeer's `--skip-rx-copy` (stock tools as they are).
    Tcp1SkipRx,
    /// TCP, two streams.
    Tcp2,
    /// TCP, four streams (iperf3 3.16 and later: a thread each, as perfpeer).
    Tcp4,
    /// UDP unlimited, 64-byte datagrams.
    Udp64,
    /// UDP unlimited, 1400-byte datagrams.
    Udp1400,
    /// UDP at 200 Mbit/s with 1400-byte datagrams.
    Paced,
    /// UDP at 1 Gbit/s with 1400-byte datagrams.
    Paced1G,
    /// TCP request/response, small messages.
    Rr,
    /// UDP request/response, 1-byte messages (perfpeer and netperf's UDP_RR).
    UdpRr,
    /// [`Case::Tcp1`] with each end held to [`BUDGET_PERCENT`] of one core (a DUT's CPU).
    Tcp1Budget,
    /// [`Case::Udp1400`] with each end held to [`BUDGET_PERCENT`] of one core.
    Udp1400Budget,
}

/// The CPU each end may use in the budget cases, in percent of one core: a router's share.
pub const BUDGET_PERCENT: u32 = 25;

/// Datagram payload of the paced cases.
pub const PACED_LEN: usize = 1400;

/// A figure a case reports.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Key in the samples and the JSON.
    pub key: &'static str,
    /// Label in the table.
    pub label: &'static str,
}

const fn m(key: &'static str, label: &'static str) -> Metric {
    Metric { key, label }
}

const TCP_METRICS: &[Metric] = &[
    m("gbps", "goodput, Gbit/s"),
    m("sd_us_per_kb", "service demand snd+rcv, us/KB"),
];
const UDP_METRICS: &[Metric] = &[
    m("rx_kpps", "received, k datagrams/s"),
    m("loss_pct", "loss, %"),
];
const PACED_METRICS: &[Metric] = &[
    m("rate_err_pct", "rate error at receiver, %"),
    m("largest_burst", "largest burst, datagrams"),
];
const RR_METRICS: &[Metric] = &[
    m("tps", "transactions/s"),
    m("mean_us", "mean RTT, us"),
    m("p50_us", "p50 RTT, us"),
    m("p99_us", "p99 RTT, us"),
];

/// All cases, in the order they run.
pub const ALL: [Case; 12] = [
    Case::Tcp1,
    Case::Tcp1SkipRx,
    Case::Tcp2,
    Case::Tcp4,
    Case::Udp64,
    Case::Udp1400,
    Case::Paced,
    Case::Paced1G,
    Case::Rr,
    Case::UdpRr,
    Case::Tcp1Budget,
    Case::Udp1400Budget,
];

impl Case {
    /// Short name (also accepted by `--cases`).
    pub fn name(self) -> &'static str {
        match self {
            Case::Tcp1 => "tcp1",
            Case::Tcp1SkipRx => "tcp1-skip-rx",
            Case::Tcp2 => "tcp2",
            Case::Tcp4 => "tcp4",
            Case::Udp64 => "udp64",
            Case::Udp1400 => "udp1400",
            Case::Paced => "paced",
            Case::Paced1G => "paced-1g",
            Case::Rr => "rr",
            Case::UdpRr => "udp-rr",
            Case::Tcp1Budget => "tcp1-cpu25",
            Case::Udp1400Budget => "udp1400-cpu25",
        }
    }

    /// The CPU each end may use (percent of one core), for the budget cases.
    pub fn cpu_budget(self) -> Option<u32> {
        matches!(self, Case::Tcp1Budget | Case::Udp1400Budget).then_some(BUDGET_PERCENT)
    }

    /// The target rate of a paced case, bit/s.
    pub fn paced_rate(self) -> Option<f64> {
        match self {
            Case::Paced => Some(200e6),
            Case::Paced1G => Some(1e9),
            _ => None,
        }
    }

    /// The case whose command lines this one runs.
    pub fn base(self) -> Case {
        match self {
            Case::Tcp1Budget => Case::Tcp1,
            Case::Udp1400Budget => Case::Udp1400,
            other => other,
        }
    }

    /// What it is, for the table.
    pub fn title(self) -> &'static str {
        match self {
            Case::Tcp1 => "TCP, 1 stream, default write size",
            Case::Tcp1SkipRx => {
                "TCP, 1 stream, --skip-rx-copy (perfpeer, newest iperf3; the others: default)"
            }
            Case::Tcp2 => "TCP, -P 2",
            Case::Tcp4 => "TCP, -P 4",
            Case::Udp64 => "UDP -b 0 -l 64 (iperf2: -b 100G)",
            Case::Udp1400 => "UDP -b 0 -l 1400 (iperf2: -b 100G)",
            Case::Paced => "UDP -b 200M -l 1400, arrivals on lo",
            Case::Paced1G => "UDP -b 1G -l 1400, arrivals on lo",
            Case::Rr => "TCP request/response, 1 byte (iperf2: 64, its minimum)",
            Case::UdpRr => "UDP request/response, 1 byte (perfpeer --rr -u, netperf UDP_RR)",
            Case::Tcp1Budget => "TCP, 1 stream, each end held to 25% of one core",
            Case::Udp1400Budget => "UDP -b 0 -l 1400, each end held to 25% of one core",
        }
    }

    /// The tools compared on this case.
    pub fn tools(self) -> &'static [Tool] {
        match self {
            Case::Rr => &[Tool::Perfpeer, Tool::Netperf, Tool::Iperf2],
            Case::UdpRr => &[Tool::Perfpeer, Tool::Netperf],
            Case::Tcp1 | Case::Tcp1Budget | Case::Udp64 | Case::Udp1400 | Case::Udp1400Budget => &[
                Tool::Perfpeer,
                Tool::Iperf3,
                Tool::Iperf3New,
                Tool::Iperf2,
                Tool::Probe,
            ],
            _ => &[Tool::Perfpeer, Tool::Iperf3, Tool::Iperf3New, Tool::Iperf2],
        }
    }

    /// What it reports.
    pub fn metrics(self) -> &'static [Metric] {
        match self.base() {
            Case::Tcp1 | Case::Tcp1SkipRx | Case::Tcp2 | Case::Tcp4 => TCP_METRICS,
            Case::Udp64 | Case::Udp1400 => UDP_METRICS,
            Case::Paced | Case::Paced1G => PACED_METRICS,
            _ => RR_METRICS,
        }
    }

    /// Whether this case is UDP (the iperf2 server then needs `-u`).
    pub fn is_udp(self) -> bool {
        matches!(
            self.base(),
            Case::Udp64 | Case::Udp1400 | Case::Paced | Case::Paced1G
        )
    }
}

/// Ports of one server start: control (or the only port) and perfpeer's data port.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// Control / listening port.
    pub ctl: u16,
    /// perfpeer's data port.
    pub data: u16,
}

impl Ports {
    /// The UDP destination port of the data.
    pub fn udp_data(self, tool: Tool) -> u16 {
        if tool == Tool::Perfpeer {
            self.data
        } else {
            self.ctl
        }
    }
}

fn argv(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The programs the runner starts.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The perfpeer binary.
    pub perfpeer: String,
    /// The newest iperf3's binary, when given.
    pub iperf3_new: Option<String>,
    /// This runner's own binary (its `probe` subcommand).
    pub bench: String,
}

impl Programs {
    /// The iperf3 binary for `tool` (Debian's from PATH, or the newest one).
    fn iperf3(&self, tool: Tool) -> &str {
        match (tool, &self.iperf3_new) {
            (Tool::Iperf3New, Some(path)) => path,
            _ => "iperf3",
        }
    }
}

/// The server command line (`dir` is a scratch directory).
pub fn server_argv(tool: Tool, case: Case, p: Ports, progs: &Programs, dir: &str) -> Vec<String> {
    let (ctl, data) = (p.ctl.to_string(), p.data.to_string());
    match tool {
        Tool::Perfpeer => {
            let listen = format!("127.0.0.1:{ctl}");
            argv(&[
                &progs.perfpeer,
                "serve",
                "--listen",
                &listen,
                "--data-port",
                &data,
                "--open",
                "--data-dir",
                dir,
            ])
        }
        Tool::Iperf3 | Tool::Iperf3New => argv(&[progs.iperf3(tool), "-s", "-1", "-p", &ctl]),
        Tool::Iperf2 if case.is_udp() => argv(&["iperf", "-s", "-u", "-p", &ctl, "-y", "C"]),
        Tool::Iperf2 => argv(&["iperf", "-s", "-p", &ctl, "-y", "C"]),
        Tool::Netperf => argv(&["netserver", "-D", "-p", &ctl, "-L", "127.0.0.1"]),
        Tool::Probe if case.is_udp() => argv(&[&progs.bench, "probe", "udp-server", &ctl]),
        Tool::Probe => argv(&[&progs.bench, "probe", "tcp-server", &ctl]),
    }
}

/// The client command line for a run of `secs` seconds.
pub fn client_argv(tool: Tool, case: Case, p: Ports, secs: u32, progs: &Programs) -> Vec<String> {
    let (ctl, t) = (p.ctl.to_string(), secs.to_string());
    let mut v = match tool {
        Tool::Perfpeer => argv(&[
            &progs.perfpeer,
            "test",
            &format!("127.0.0.1:{ctl}"),
            "-J",
            "-t",
            &t,
        ]),
        Tool::Iperf3 | Tool::Iperf3New => argv(&[
            progs.iperf3(tool),
            "-c",
            "127.0.0.1",
            "-p",
            &ctl,
            "-J",
            "-t",
            &t,
        ]),
        Tool::Iperf2 => argv(&["iperf", "-c", "127.0.0.1", "-p", &ctl, "-t", &t]),
        Tool::Netperf => argv(&["netperf", "-H", "127.0.0.1", "-p", &ctl, "-l", &t]),
        // The probe's sizes are the other tools' defaults for the case.
        Tool::Probe => {
            let (role, len) = match case.base() {
                Case::Udp64 => ("udp-client", "64"),
                Case::Udp1400 => ("udp-client", "1400"),
                _ => ("tcp-client", "131072"),
            };
            return argv(&[&progs.bench, "probe", role, &ctl, &t, len]);
        }
    };
    let unlimited = if tool == Tool::Iperf2 { "100G" } else { "0" };
    let extra: Vec<&str> = match (case, tool) {
        (Case::Tcp1 | Case::Tcp1SkipRx | Case::Tcp1Budget, Tool::Iperf2) => vec!["-y", "C"],
        // The receive copy skipped by every tool that can (iperf3 since 3.17).
        (Case::Tcp1SkipRx, Tool::Perfpeer | Tool::Iperf3New) => vec!["--skip-rx-copy"],
        (Case::Tcp1 | Case::Tcp1SkipRx | Case::Tcp1Budget, _) => vec![],
        (Case::Tcp2, Tool::Iperf2) => vec!["-P", "2", "-y", "C"],
        (Case::Tcp2, _) => vec!["-P", "2"],
        (Case::Tcp4, Tool::Iperf2) => vec!["-P", "4", "-y", "C"],
        (Case::Tcp4, _) => vec!["-P", "4"],
        (Case::Udp64, _) => vec!["-u", "-b", unlimited, "-l", "64"],
        (Case::Udp1400 | Case::Udp1400Budget, _) => vec!["-u", "-b", unlimited, "-l", "1400"],
        (Case::Paced, _) => vec!["-u", "-b", "200M", "-l", "1400"],
        (Case::Paced1G, _) => vec!["-u", "-b", "1G", "-l", "1400"],
        (Case::Rr, Tool::Perfpeer) => vec!["--rr"],
        (Case::UdpRr, Tool::Perfpeer) => vec!["--rr", "-u", "-b", "0"],
        (Case::Rr, Tool::Iperf2) => {
            vec!["--bounceback", "--bounceback-period", "0", "-l", "64", "-e"]
        }
        (Case::Rr | Case::UdpRr, _) => vec![
            "-t",
            if case == Case::UdpRr {
                "UDP_RR"
            } else {
                "TCP_RR"
            },
            "-j",
            "-P",
            "0",
            "--",
            "-r",
            "1,1",
            "-o",
            "THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
        ],
    };
    v.extend(extra.into_iter().map(String::from));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_has_perfpeer_first_and_command_lines() {
        let p = Ports {
            ctl: 40000,
            data: 40001,
        };
        for case in ALL {
            assert_eq!(case.tools()[0], Tool::Perfpeer);
            let progs = Programs {
                perfpeer: "pp".into(),
                iperf3_new: Some("/opt/iperf3".into()),
                bench: "pb".into(),
            };
            for &tool in case.tools() {
                assert!(!client_argv(tool, case, p, 1, &progs).is_empty());
                assert!(!server_argv(tool, case, p, &progs, "/tmp").is_empty());
            }
        }
        let progs = Programs {
            perfpeer: "pp".into(),
            iperf3_new: None,
            bench: "pb".into(),
        };
        assert_eq!(
            client_argv(Tool::Probe, Case::Udp64, p, 2, &progs),
            ["pb", "probe", "udp-client", "40000", "2", "64"]
        );
        assert_eq!(
            server_argv(Tool::Probe, Case::Tcp1Budget, p, &progs, "/tmp"),
            ["pb", "probe", "tcp-server", "40000"]
        );
        assert_eq!(p.udp_data(Tool::Perfpeer), 40001);
        assert_eq!(p.udp_data(Tool::Iperf3), 40000);
    }
}
