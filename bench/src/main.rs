//! perfpeer-bench: runs perfpeer and stock iperf3, iperf2 (and netperf, when on PATH) on
//! loopback, interleaved, on the same cases; prints medians and perfpeer/other ratios as a
//! table and as JSON. Never touches anything but 127.0.0.1.
//!
//! # Layout
//! - [`cases`]: the cases and each tool's command lines.
//! - [`parse`]: each tool's output as numbers.
//! - [`procs`]: child processes with deadlines and exact CPU time (wait4).
//! - [`capture`]: arrival timestamps of datagrams on `lo` (AF_PACKET) for pacing.
//! - [`cgroup`]: CPU budgets per process for the DUT-sized cases (cgroup v1 `cpu`, root).
//! - [`probe`]: the bare TCP and UDP loops perfpeer is measured against (`probe` subcommand).
//! - [`sockopt`]: the one `setsockopt` the capture and the probe use.
//! - [`stats`]: median, ratio, burst detection (pure, unit-tested).
//! - [`report`]: the table and the JSON.

mod capture;
mod cases;
mod cgroup;
mod parse;
mod probe;
mod procs;
mod report;
mod sockopt;
mod stats;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;

use cases::{ALL, Case, PACED_LEN, Ports, Tool};
use parse::Figures;
use report::Samples;

/// Benchmark perfpeer against iperf3, iperf2 and netperf on loopback.
#[derive(Debug, Parser)]
#[command(name = "perfpeer-bench")]
struct Args {
    /// Runs of each case per tool (tools interleaved, order rotated each run).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Seconds per run.
    #[arg(long, default_value_t = 5)]
    time: u32,
    /// One 1-second run of every case (CI: proves the runner and its parsers still work).
    #[arg(long)]
    smoke: bool,
    /// Cases to run (comma-separated: tcp1,tcp1-skip-rx,tcp2,tcp4,udp64,udp1400,paced,paced-1g,rr,
    /// udp-rr,tcp1-cpu25,udp1400-cpu25).
    #[arg(long, value_delimiter = ',')]
    cases: Vec<String>,
    /// The perfpeer binary (default: build and use target/release/perfpeer).
    #[arg(long)]
    perfpeer: Option<PathBuf>,
    /// The newest iperf3, built from esnet/iperf's source outside the repository (see
    /// docs/benchmarks.md): a column of its own beside Debian's.
    #[arg(long, value_name = "PATH", env = "PERFPEER_BENCH_IPERF3_NEW")]
    iperf3_new: Option<PathBuf>,
    /// Also write the JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// An earlier run's JSON: print each median then and now, and the change.
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn perfpeer_binary(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "perfpeer"])
        .current_dir(&root)
        .status()
        .context("building perfpeer")?;
    if !status.success() {
        bail!("cargo build --release -p perfpeer failed");
    }
    Ok(root.join("target/release/perfpeer"))
}

/// Everything one run needs.
struct Runner {
    progs: cases::Programs,
    scratch: PathBuf,
    secs: u32,
    next_port: u16,
    capture_ok: bool,
}

/// Whether TCP and UDP can both bind `port` on loopback now.
fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
        && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
}

impl Runner {
    fn ports(&mut self) -> Ports {
        // Fresh ports for every server start: no waiting for the previous one to let go. The
        // range lies inside Linux's ephemeral ports, so a pair some other socket holds (a test
        // or a connection's own end) is skipped: a server that cannot bind would exit and its
        // client find nothing listening.
        for _ in 0..64 {
            let ctl = self.next_port;
            self.next_port = if self.next_port > 47_900 {
                40_000
            } else {
                self.next_port + 2
            };
            if [ctl, ctl + 1].iter().all(|&port| port_is_free(port)) {
                return Ports { ctl, data: ctl + 1 };
            }
        }
        let ctl = self.next_port;
        Ports { ctl, data: ctl + 1 }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.scratch.join(name)
    }

    /// One run of `tool` on `case`.
    fn run(&mut self, tool: Tool, case: Case) -> anyhow::Result<Figures> {
        let p = self.ports();
        let dir = self.path("perfpeer-data");
        let dir = dir.to_string_lossy();
        let server_argv = cases::server_argv(tool, case, p, &self.progs, &dir);
        // A DUT-sized case: each end in its own CPU budget (dropped, so removed, at the end).
        let budget = |end: &str| {
            case.cpu_budget()
                .map(|pct| {
                    cgroup::CpuGroup::create(
                        &format!("perfpeer-bench-{}-{}-{end}", std::process::id(), p.ctl),
                        pct,
                    )
                })
                .transpose()
        };
        let (server_group, client_group) = (budget("server")?, budget("client")?);
        let server = procs::spawn(&server_argv, self.path("server.out"))?;
        if let Some(g) = &server_group {
            g.add(server.pid())?;
        }
        // A server with a TCP listener is waited for (a busy machine starts it late); the UDP
        // servers get the fixed pause.
        let tcp_listener = matches!(
            tool,
            Tool::Perfpeer | Tool::Iperf3 | Tool::Iperf3New | Tool::Netperf
        );
        if !case.is_udp() || tcp_listener {
            procs::wait_listening(p.ctl, Duration::from_secs(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        let capture = (case.paced_rate().is_some() && self.capture_ok)
            .then(|| capture::Capture::start(p.udp_data(tool)))
            .transpose()?;
        let client_argv = cases::client_argv(tool, case, p, self.secs, &self.progs);
        let client = procs::spawn(&client_argv, self.path("client.out"))?;
        if let Some(g) = &client_group {
            g.add(client.pid())?;
        }
        let client = client.wait(Duration::from_secs(u64::from(self.secs) + 20))?;
        // Data datagrams only (not perfpeer's hello/fins or iperf3's 4-byte connect datagram).
        let arrivals = capture.map(|c| c.finish()).transpose()?.map(|a| {
            a.into_iter()
                .filter(|x| x.1 == PACED_LEN)
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(200));
        let server = server.stop()?;
        if client.timed_out {
            bail!("{} timed out: {}", tool.name(), client_argv.join(" "));
        }
        let mut f =
            parse::parse(tool, case, &client.stdout, &server.stdout).with_context(|| {
                let how = if client.success { "exit 0" } else { "failed" };
                format!(
                    "{} ({how}): {}",
                    client_argv.join(" "),
                    client.stdout.trim()
                )
            })?;
        if let Some(bytes) = f.remove("bytes") {
            let cpu = client.cpu_s + server.cpu_s;
            f.insert("sd_us_per_kb", cpu * 1e6 / (bytes / 1024.0));
        }
        if let (Some(a), Some(rate)) = (arrivals, case.paced_rate()) {
            let gap = stats::nominal_gap_ns(PACED_LEN, rate);
            if let Some(s) = stats::smoothness(&a, gap) {
                f.insert("rate_err_pct", stats::error_percent(s.rate_bps, rate));
                f.insert("largest_burst", s.largest_burst as f64);
            }
        }
        Ok(f)
    }
}

fn selected(names: &[String]) -> anyhow::Result<Vec<Case>> {
    if names.is_empty() {
        return Ok(ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            ALL.into_iter()
                .find(|c| c.name() == n)
                .with_context(|| format!("unknown case '{n}'"))
        })
        .collect()
}

fn main_inner(args: Args) -> anyhow::Result<ExitCode> {
    let (runs, secs) = if args.smoke {
        (1, 1)
    } else {
        (args.runs.max(1), args.time.max(1))
    };
    let mut cases = selected(&args.cases)?;
    let perfpeer = perfpeer_binary(args.perfpeer)?;
    let scratch = std::env::temp_dir().join(format!("perfpeer-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).context("scratch directory")?;
    let mut notes = Vec::new();
    let have = |t: Tool| match t {
        Tool::Perfpeer => true,
        Tool::Iperf3 => on_path("iperf3"),
        Tool::Iperf3New => args.iperf3_new.as_ref().is_some_and(|p| p.is_file()),
        Tool::Iperf2 => on_path("iperf"),
        Tool::Netperf => on_path("netperf") && on_path("netserver"),
        Tool::Probe => true,
    };
    for (t, why) in [
        (Tool::Iperf3, "iperf3 is not on PATH: its column is empty"),
        (
            Tool::Iperf3New,
            "no newest iperf3 (--iperf3-new PATH): the iperf3-new column is empty",
        ),
        (
            Tool::Iperf2,
            "iperf is not on PATH: the iperf2 column is empty",
        ),
        (
            Tool::Netperf,
            "netperf/netserver are not on PATH: the netperf column is skipped",
        ),
    ] {
        if !have(t) {
            notes.push(why.to_string());
        }
    }
    if !cgroup::available() && cases.iter().any(|c| c.cpu_budget().is_some()) {
        notes.push(
            "not root, or no cgroup v1 cpu controller: the CPU-budget cases are skipped".into(),
        );
        cases.retain(|c| c.cpu_budget().is_none());
    }
    // SAFETY: geteuid has no preconditions.
    let capture_ok = unsafe { libc::geteuid() } == 0;
    if !capture_ok && cases.iter().any(|c| c.paced_rate().is_some()) {
        notes.push("not root: no AF_PACKET capture, so no pacing figures".into());
    }
    let mut runner = Runner {
        progs: cases::Programs {
            perfpeer: perfpeer.to_string_lossy().into_owned(),
            iperf3_new: args
                .iperf3_new
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            bench: std::env::current_exe()
                .context("this runner's own path")?
                .to_string_lossy()
                .into_owned(),
        },
        scratch: scratch.clone(),
        secs,
        next_port: 40_000 + (std::process::id() % 1000) as u16 * 4 % 4000,
        capture_ok,
    };
    let mut samples = Samples::default();
    let mut failures = 0;
    for run in 0..runs {
        for &case in &cases {
            let mut tools: Vec<Tool> = case.tools().iter().copied().filter(|&t| have(t)).collect();
            let n = tools.len();
            tools.rotate_left(run as usize % n.max(1));
            for tool in tools {
                eprint!(
                    "run {}/{runs} {:8} {:9} ",
                    run + 1,
                    case.name(),
                    tool.name()
                );
                match runner.run(tool, case) {
                    Ok(f) => {
                        eprintln!("{f:?}");
                        samples.add(case, tool, f);
                    }
                    Err(e) => {
                        eprintln!("FAILED: {e:#}");
                        notes.push(format!("{} {}: {e:#}", case.name(), tool.name()));
                        failures += 1;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let json = report::json(&cases, &samples, runs, secs, &notes);
    println!("{}", report::table(&cases, &samples, runs, secs, &notes));
    if let Some(path) = &args.compare {
        let then: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?,
        )
        .with_context(|| format!("{} is not a perfpeer-bench JSON", path.display()))?;
        println!("{}", report::compare(&json, &then));
    }
    let text = serde_json::to_string_pretty(&json)?;
    match args.json {
        Some(p) => std::fs::write(&p, text + "\n").with_context(|| format!("{}", p.display()))?,
        None => println!("{text}"),
    }
    // perfpeer must always work; a stock tool failing is a note, not a failed benchmark.
    let perfpeer_missing = cases
        .iter()
        .any(|&c| samples.get(c, Tool::Perfpeer).is_empty());
    Ok(if perfpeer_missing || (args.smoke && failures > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    // The runner starts its own bare loops as `perfpeer-bench probe …`.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("probe") {
        return match probe::main(&argv[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("perfpeer-bench probe: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match main_inner(Args::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("perfpeer-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
