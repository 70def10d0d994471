//! perfpeer as a library: network performance peers (TCP, UDP, DCCP) with a WebSocket control
//! endpoint, a web UI, and the wire protocols of iperf3, iperf 2, ttcp and netperf's client.
//! The binary (`main.rs`) only parses the command line and hands it to [`cli`]; everything else
//! is here, so tests can drive sessions, servers and the engine in-process.
//!
//! # Layers
//! Modules import only downward (docs/architecture.md draws it; `tests/tests/layers.rs` checks
//! it): [`cli`] → [`sweep`], [`latency`] → [`targets`] → [`compat`] → [`server`] → [`session`] → [`store`],
//! [`engine`] → [`dccp`], [`hostinfo`], [`admission`], [`budget`] → [`util`], [`sys`] (every call into the OS beyond std). The pure wire
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

pub mod admission;
pub mod budget;
pub mod cli;
pub mod compat;
pub mod dccp;
pub mod engine;
pub mod hostinfo;
pub mod latency;
pub mod resolve;
pub mod server;
pub mod session;
pub mod store;
pub mod sweep;
pub mod sys;
pub mod targets;
pub mod util;
