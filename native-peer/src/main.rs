//! perfpeer: network performance peers (TCP, UDP, DCCP) with a WebSocket control endpoint, a
//! web UI, and the wire protocols of iperf3, iperf 2, ttcp and netperf's client.
//!
//! # Layout
//! - `cli/`: one module per subcommand; flags are parsed and validated there, then become a
//!   [`perfpeer_shared::spec::TestSpec`]. `anyhow` lives only here and in this file.
//! - `engine/`: the data plane (workers, pacing, counters, sampler, CPU, socket options).
//! - `session/`: peer↔peer sessions over the control channel.
//! - `server/`: `perfpeer serve`: warp routes, `/ws` handlers, the data listener, shared state.
//! - `hostinfo`: facts about this host.
//! - `dccp`: DCCP sockets behind a platform seam, and whether this kernel has DCCP.

mod admission;
mod budget;
mod cli;
#[cfg(test)]
mod codec_fuzz;
mod compat;
mod dccp;
mod engine;
mod hostinfo;
mod server;
mod session;
mod store;
mod sweep;
mod targets;
mod util;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::argv_with_role());
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("perfpeer: error: {err:#}");
            if err.downcast_ref::<cli::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
