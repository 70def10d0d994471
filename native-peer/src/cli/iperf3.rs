//! `perfpeer iperf3 -s | -c HOST`: iperf3's control protocol on the wire, so perfpeer serves
//! stock iperf3 clients (several at once) and tests against stock iperf3 servers. Flags and
//! output follow iperf3 (`-b` is per stream here, as in iperf3).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use perfpeer_shared::format::iperf3::{self as fmt, Preamble};
use perfpeer_shared::report::PeerRole;
use tokio::sync::mpsc;

use super::flags::TestFlags;
use super::live::{finish, run_printing, serve_printing};
use super::output::{Printer, Style};
use crate::compat::iperf3::codec::DEFAULT_PORT;
use crate::compat::iperf3::{client, server};
use crate::session::target::resolve_host;

/// Flags of `perfpeer iperf3`.
#[derive(Debug, Args)]
pub struct Iperf3Args {
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
    /// Server: tests at once (iperf3 itself runs one); more are answered "busy".
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_tests: u32,
    /// Server: longest test accepted, seconds.
    #[arg(long, default_value_t = 3600)]
    max_duration: u64,
    /// Server: memory the buffers of the tests served may take at once (K/M/G = x1024); a test
    /// that would go over is refused. Default: an eighth of this machine's memory, between 16M
    /// and 1G.
    #[arg(long, value_name = "SIZE", value_parser = super::serve::parse_memory_arg)]
    max_memory: Option<u64>,
    /// Client: 64-bit UDP datagram counters.
    #[arg(long = "udp-counters-64bit")]
    udp_counters_64bit: bool,
    #[command(flatten)]
    flags: TestFlags,
}

/// Runs the server or the client.
pub async fn run(args: Iperf3Args) -> anyhow::Result<ExitCode> {
    match (&args.client, args.server) {
        (Some(host), false) => run_client(host.clone(), &args).await,
        (None, true) => run_server(&args).await,
        _ => bail!("give -s (server) or -c HOST (client)"),
    }
}

async fn run_client(host: String, args: &Iperf3Args) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    let spec = args.flags.spec(true)?;
    let opts = args.flags.options()?;
    let server = resolve_host(&host, args.port, opts.family)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach {host}: {e}"))?;
    let mut printer = Printer::new(args.flags.style(), &spec);
    let outcome = run_printing(
        |events, cancel| {
            client::run(
                server,
                &spec,
                args.udp_counters_64bit,
                &opts,
                events,
                cancel,
            )
        },
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
    };
    let (tx, events) = mpsc::unbounded_channel();
    if style == Style::Text {
        outln!("-----------------------------------------------------------");
        outln!(
            "Server listening on {} (perfpeer, up to {} tests at once)",
            args.port,
            args.max_tests
        );
        outln!("-----------------------------------------------------------");
    }
    serve_printing(
        args.port,
        |shutdown| server::run(addr, config, tx, shutdown),
        events,
        |ev| print_server_event(&ev, style),
    )
    .await
}

fn print_server_event(ev: &server::ServerEvent, style: Style) {
    use server::ServerEvent as E;
    match (ev, style) {
        (
            E::Started {
                client,
                spec,
                sockets,
            },
            Style::Text,
        ) => {
            let addr = client.to_string();
            let p = Preamble {
                role: PeerRole::Server,
                server_addr: &addr,
                spec,
                sockets,
            };
            out!(
                "{}{}",
                fmt::text_preamble(&p),
                fmt::text_interval_header(spec, PeerRole::Server)
            );
        }
        (E::Interval { spec, report, .. }, Style::Text) => {
            out!("{}", fmt::text_interval(spec, PeerRole::Server, report))
        }
        (E::Finished(result), Style::Text) => out!("{}", fmt::text_summary(result)),
        (E::Finished(result), _) => outln!(
            "{}",
            serde_json::to_string_pretty(&fmt::json(result)).unwrap_or_default()
        ),
        (E::Failed { client, error }, Style::Text) => {
            outln!("iperf3: error from {client}: {error}")
        }
        (E::Failed { client, error }, _) => {
            outln!(
                "{}",
                fmt::json_error(&format!("{client}: {error}"), &crate::hostinfo::host_info())
            )
        }
        _ => {}
    }
}
