//! perfpeer as a library: network performance peers (TCP, UDP, DCCP) with a WebSocket control
//! endpoint, a web UI, and the wire protocols of iperf3, iperf 2, ttcp and netperf's client.
//! The binary (`main.rs`) only parses the command line and hands it to [`run`]. The public
//! surface is that entry and [`in_process`], what the in-process tests drive; every module is
//! private, so the compiler reports what nothing uses (`unreachable_pub` and `missing_docs`
//! keep the surface narrow and documented).
//!
//! # Layers
//! Modules import only downward (docs/architecture.md draws it; `tests/tests/layers.rs` checks
//! it): [`cli`] → [`sweep`], [`latency`] → [`targets`] → [`compat`] → [`server`] → [`session`] → [`store`],
//! [`engine`] → [`dccp`], [`hostinfo`], [`multicast`], [`admission`], [`budget`] → [`util`], [`sys`] (every call into the OS beyond std). The pure wire
//! formats are in the `perfpeer-proto` crate, the shared model in `perfpeer-shared`.
//!
//! - [`cli`]: one module per subcommand; flags are parsed and validated there, then become a
//!   [`perfpeer_shared::spec::TestSpec`]. `anyhow` lives only there.
//! - [`engine`]: the data plane (workers, pacing, counters, sampler, CPU, socket options).
//! - [`session`]: peer↔peer sessions over the control channel; the one client driver.
//! - [`server`]: `perfpeer serve`: the control port, `/ws` handlers, the data listeners.
//! - [`compat`]: the stock tools' protocols over sockets.
//! - [`targets`], [`sweep`], [`latency`]: what a test target names; packet-size sweeps;
//!   latency under load (a probe through idle, download, upload and both).
//! - [`store`]: the result history in SQLite.
//! - [`multicast`]: joining a group (perfpeer's receivers, `iperf -s -B GROUP`) and a
//!   sender's socket to one.

#![warn(missing_docs, unreachable_pub)]
// The crate's docs are read with --document-private-items: its links point into private modules.
#![allow(rustdoc::private_intra_doc_links)]

mod admission;
mod budget;
mod cli;
mod compat;
mod dccp;
mod engine;
mod hostinfo;
mod latency;
mod multicast;
#[cfg(feature = "plans")]
mod plan;
mod resolve;
mod server;
mod session;
mod store;
mod sweep;
mod sys;
mod targets;
mod util;
mod wifi;

// The binary's entry: main.rs parses the command line and runs it.
pub use cli::{Cli, UsageError, parse_args, run};

/// What the in-process tests (native-peer/tests/) drive: the real far end (`perfpeer serve`'s
/// server, bound on loopback ports and run in the test's runtime) and the client session.
pub mod in_process {
    pub use crate::cli::any_target::AnyTarget;
    pub use crate::server::state::{ServeConfig, ServerState};
    pub use crate::server::{Bound, bind, run as serve};
    pub use crate::session::SessionError;
    pub use crate::session::client::ClientOptions;
    pub use crate::session::events::TestEvent;
    pub use crate::session::far_ends::run_test;
}
