//! The command line: `perfpeer serve` and `perfpeer test`. Each subcommand's flags live in its
//! own module and are validated into typed settings before anything runs.

mod iperf3;
mod netperf;
mod output;
mod serve;
mod test;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Network throughput peers: run `perfpeer serve` on one machine and `perfpeer test HOST` on another.
#[derive(Debug, Parser)]
#[command(name = "perfpeer", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a long-lived peer: the far end of tests, a web UI and a WebSocket control endpoint.
    Serve(serve::ServeArgs),
    /// Run a test from this machine against a perfpeer peer.
    Test(test::TestArgs),
    /// Speak iperf3's protocol: serve stock iperf3 clients (-s) or test against a stock server (-c).
    Iperf3(iperf3::Iperf3Args),
    /// netperf's flags and tables (TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_STREAM) against a perfpeer peer.
    Netperf(netperf::NetperfArgs),
}

/// Runs the chosen subcommand on a fresh tokio runtime.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("perfpeer-rt")
        .build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(args)),
        Command::Test(args) => runtime.block_on(test::run(args)),
        Command::Iperf3(args) => runtime.block_on(iperf3::run(args)),
        Command::Netperf(args) => runtime.block_on(netperf::run(args)),
    }
}

/// Logs go to stderr; `RUST_LOG` overrides `default_level`.
fn init_logging(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
