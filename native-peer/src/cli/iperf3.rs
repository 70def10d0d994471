//! `perfpeer iperf3 -s | -c HOST`: iperf3's control protocol on the wire, so perfpeer serves
//! stock iperf3 clients (several at once) and tests against stock iperf3 servers. Flags and
//! output follow iperf3 (`-b` is per stream here, as in iperf3).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use perfpeer_shared::calendar::http_date;
use perfpeer_shared::format::iperf3::{self as fmt, Preamble, RateFormat, Voice};
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::{EndCondition, ValidSpec};
use tokio::sync::mpsc;

use super::flags::{Dialect, TestFlags, unit_letter};
use super::live::{finish, run_printing, serve_printing};
use super::output::{Printer, Style};
use crate::compat::iperf3::codec::{Asks, DEFAULT_PORT, OutputKind};
use crate::compat::iperf3::{client, server};
use crate::session::target::resolve_host;

/// Flags of `perfpeer iperf3`.
#[derive(Debug, Args)]
#[command(mut_arg("connect_timeout", |a| a
    .value_name("MS")
    .help("Client: milliseconds to wait for the server to answer, as iperf3 (default 5000)")))]
pub(super) struct Iperf3Args {
    /// Run as a server (for stock iperf3 clients).
    #[arg(short = 's', long, conflicts_with = "client")]
    server: bool,
    /// Run as a client of the iperf3 server at HOST.
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<String>,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Server: handle one test, then exit.
    #[arg(short = '1', long = "one-off")]
    one_off: bool,
    /// CPU affinity: this process on CPU n; a client also asks the server for CPU m (a perfpeer
    /// server serves several tests at once and pins none of them for one).
    #[arg(short = 'A', long = "affinity", value_name = "n[,m]", value_parser = parse_affinity)]
    affinity: Option<(usize, Option<u32>)>,
    /// Server: run in the background (output goes to --logfile, or nowhere).
    #[arg(short = 'D', long)]
    daemon: bool,
    /// Server: accepted for iperf3 scripts. perfpeer's server never needs restarting: each step
    /// of a test has its own deadline, and a stuck test is ended without touching the others.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<u64>,
    /// Server: tests at once (iperf3 itself runs one); more are answered "busy", unless one is
    /// stalled in its setup (one address may hold half).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_tests: u32,
    /// Server: longest test accepted, seconds (also the end of a client's `-t 0`).
    #[arg(long, default_value_t = 3600)]
    max_duration: u64,
    /// Server: memory the buffers of the tests served may take at once (K/M/G = x1024); a test
    /// that would go over is refused. Default: an eighth of this machine's memory, between 16M
    /// and 1G.
    #[arg(long, value_name = "SIZE", value_parser = super::serve::parse_memory_arg)]
    max_memory: Option<u64>,
    /// Client: number of blocks (packets) to send instead of a time or byte count.
    #[arg(short = 'k', long, value_name = "N", conflicts_with_all = ["time", "bytes"],
          value_parser = parse_count)]
    blockcount: Option<u64>,
    /// Client: 64-bit UDP datagram counters.
    #[arg(long = "udp-counters-64bit")]
    udp_counters_64bit: bool,
    /// Client: ask the server for its own output of the test and print it after ours.
    #[arg(long)]
    get_server_output: bool,
    /// Client: bind the data streams to this local port (and the next ones for more streams).
    #[arg(long, value_name = "PORT")]
    cport: Option<u16>,
    /// Accepted for iperf3 scripts ('zero copy' sending): perfpeer's senders already write
    /// from one buffer, so this changes nothing.
    #[arg(short = 'Z', long)]
    zerocopy: bool,
    /// Bitrate unit: k, m, g, t (Kbits … Tbits/sec) or K, M, G, T (KBytes … TBytes/sec).
    #[arg(short = 'f', long = "format", value_name = "kmgtKMGT", value_parser = parse_rate_format)]
    rate_format: Option<RateFormat>,
    /// Start every output line with this title.
    #[arg(short = 'T', long, value_name = "STR")]
    title: Option<String>,
    /// More detailed output: the version, the system, the time and the test first, the CPU line
    /// at the end.
    #[arg(short = 'V', long)]
    verbose: bool,
    /// Append output to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    logfile: Option<String>,
    #[command(flatten)]
    flags: TestFlags,
}

fn parse_rate_format(s: &str) -> Result<RateFormat, String> {
    unit_letter(s, "kmgtKMGT", "a format").map(RateFormat::Fixed)
}

fn parse_affinity(s: &str) -> Result<(usize, Option<u32>), String> {
    let cpu = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{t}' is not a CPU number"))
    };
    let (local, server) = match s.split_once(',') {
        Some((l, r)) => (cpu(l)?, Some(cpu(r)?)),
        None => (cpu(s)?, None),
    };
    let local = usize::try_from(local).map_err(|e| e.to_string())?;
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if local >= cpus {
        return Err(format!(
            "CPU {local}: this machine has CPUs 0 to {}",
            cpus - 1
        ));
    }
    Ok((local, server))
}

fn parse_count(s: &str) -> Result<u64, String> {
    match perfpeer_shared::units::parse_size(s) {
        Ok(0) => Err("must be more than 0".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl Iperf3Args {
    /// Whether to run in the background (before anything else starts: see `cli::run`).
    pub(super) fn daemon(&self) -> bool {
        self.server && self.daemon
    }

    /// The CPU to pin this process to (`-A n`), before any thread starts: see `cli::run`.
    pub(super) fn pinned_cpu(&self) -> Option<usize> {
        self.affinity.map(|(cpu, _)| cpu)
    }

    fn voice(&self) -> Voice {
        Voice::Stock {
            verbose: self.verbose,
            rate: self.rate_format.unwrap_or_default(),
        }
    }
}

/// Runs the server or the client.
pub(super) async fn run(args: Iperf3Args) -> anyhow::Result<ExitCode> {
    super::set_output(
        args.title.clone(),
        args.logfile.as_deref().map(std::path::Path::new),
    )?;
    match (&args.client, args.server) {
        (Some(host), false) => run_client(host.clone(), &args).await,
        (None, true) => run_server(&args).await,
        _ => bail!("give -s (server) or -c HOST (client)"),
    }
}

fn client_spec(args: &Iperf3Args) -> anyhow::Result<ValidSpec> {
    let mut spec = args.flags.build_spec_as(Dialect::Iperf3)?;
    if let Some(blocks) = args.blockcount {
        spec.end = EndCondition::Bytes {
            bytes: blocks.saturating_mul(u64::from(spec.len)),
        };
    }
    Ok(ValidSpec::new(spec)?)
}

/// `-V`'s first lines: what is running, where, and when.
fn verbose_lines() -> String {
    let host = crate::hostinfo::host_info();
    let now = crate::util::unix_ms_now();
    format!(
        "{}\n{}\nTime: {}",
        super::persona_version("iperf3"),
        fmt::system_info(&host),
        http_date(now / 1000)
    )
}

async fn run_client(host: String, args: &Iperf3Args) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    if args.flags.trip_times() || args.flags.isochronous() {
        return Err(super::UsageError(
            "--trip-times, --histograms and --isochronous are not iperf3 flags: use perfpeer test -u --trip-times (or perfpeer iperf)".into(),
        )
        .into());
    }
    let spec = client_spec(args)?;
    let mut opts = args.flags.options()?;
    opts.connect_timeout = args.flags.connect_timeout_as(Dialect::Iperf3)?;
    opts.data_port = args.cport;
    let server = resolve_host(&host, args.port, opts.family)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach {host}: {e}"))?;
    let style = args.flags.style();
    if args.verbose && style == Style::Text {
        outln!("{}", verbose_lines());
    }
    let asks = Asks {
        counter64: args.udp_counters_64bit,
        server_output: args.get_server_output,
        server_affinity: args.affinity.and_then(|(_, server)| server),
    };
    let mut printer = Printer::new(style, &spec).with_voice(args.voice());
    let outcome = run_printing(
        |events, cancel| client::run(server, &spec, asks, &opts, events, cancel),
        |ev| printer.event(ev),
    )
    .await?;
    finish(&mut printer, outcome.map_err(anyhow::Error::new), &host)
}

async fn run_server(args: &Iperf3Args) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    let style = args.flags.style();
    let addr = match args.flags.bind_addr() {
        Some(ip) => SocketAddr::new(ip, args.port),
        None if args.flags.ipv4_only() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), args.port)
        }
        None => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), args.port),
    };
    let config = server::ServerConfig {
        max_tests: args.max_tests,
        max_duration: Duration::from_secs(args.max_duration),
        max_memory: args
            .max_memory
            .unwrap_or_else(crate::budget::MemoryBudget::default_limit),
        one_off: args.one_off,
        output: if style == Style::Text {
            OutputKind::Text
        } else {
            OutputKind::Json
        },
    };
    let (tx, events) = mpsc::unbounded_channel();
    if style == Style::Text {
        if args.verbose {
            outln!("{}", verbose_lines());
        }
        outln!("-----------------------------------------------------------");
        outln!(
            "Server listening on {} (perfpeer, up to {} tests at once)",
            args.port,
            args.max_tests
        );
        outln!("-----------------------------------------------------------");
    }
    let mut printer = ServerPrinter {
        style,
        voice: args.voice(),
        running: BTreeSet::new(),
    };
    serve_printing(
        args.port,
        |shutdown| server::run(addr, config, tx, shutdown),
        events,
        |ev| printer.print(&ev),
    )
    .await
}

/// The server's output. While several tests run at once, each of their lines starts with the
/// test's number (`#2  `) so that they can be told apart; a lone test's lines are as stock
/// iperf3 prints them. What a client can make it print is rate-limited at the server (the first
/// tests and refusals of each 10 s, then a count): see `server::ServerEvent::Unshown`.
struct ServerPrinter {
    style: Style,
    voice: Voice,
    /// Tests whose streams are up and whose result is not yet printed.
    running: BTreeSet<u64>,
}

impl ServerPrinter {
    fn text(&self, test: u64, text: &str) {
        if self.running.len() > 1 {
            let tagged: String = text
                .split_inclusive('\n')
                .map(|line| format!("#{test}  {line}"))
                .collect();
            out!("{tagged}");
        } else {
            out!("{text}");
        }
    }

    fn print(&mut self, ev: &server::ServerEvent) {
        use server::ServerEvent as E;
        match (ev, self.style) {
            (
                E::Started {
                    test,
                    client,
                    spec,
                    sockets,
                },
                style,
            ) => {
                self.running.insert(*test);
                if style == Style::Text {
                    let addr = client.to_string();
                    let p = Preamble {
                        role: PeerRole::Server,
                        server_addr: &addr,
                        spec,
                        sockets,
                    };
                    self.text(
                        *test,
                        &format!(
                            "{}{}",
                            fmt::text_preamble(&p),
                            fmt::text_interval_header(spec, PeerRole::Server)
                        ),
                    );
                }
            }
            (E::Interval { test, spec, report }, Style::Text) => {
                let rate = self.voice.rate();
                self.text(
                    *test,
                    &fmt::text_interval_as(spec, PeerRole::Server, report, rate),
                );
            }
            (E::Finished(test, result), style) => {
                if style == Style::Text {
                    self.text(*test, &fmt::text_summary_as(result, self.voice));
                } else {
                    outln!(
                        "{}",
                        perfpeer_shared::format::pretty_json(&fmt::json(result))
                            .unwrap_or_default()
                    );
                }
                self.running.remove(test);
            }
            (
                E::Failed {
                    test,
                    client,
                    error,
                },
                style,
            ) => {
                let line = match style {
                    Style::Text => format!("iperf3: error from {client}: {error}\n"),
                    _ => format!(
                        "{}\n",
                        fmt::json_error(
                            &format!("{client}: {error}"),
                            &crate::hostinfo::host_info()
                        )
                    ),
                };
                match test {
                    Some(t) => {
                        self.text(*t, &line);
                        self.running.remove(t);
                    }
                    None => out!("{line}"),
                }
            }
            (E::Unshown { what, count, secs }, style) => {
                let said = format!("{what}: {count} more in the last {secs} s, not shown");
                match style {
                    Style::Text => outln!("iperf3: {said}"),
                    _ => outln!("{}", fmt::json_error(&said, &crate::hostinfo::host_info())),
                }
            }
            _ => {}
        }
    }
}
