//! perfpeer-shared: the types both ends of perfpeer agree on, with no I/O, no clock and no tokio,
//! so the crate builds for the host and for wasm32.
//!
//! # Layout
//! - [`units`]: parsing and printing rates and sizes (K/M/G, 1000- or 1024-based as iperf3 does).
//! - [`calendar`]: Unix times as UTC dates (HTTP dates, and the fields other printed dates use).
//! - [`spec`]: [`spec::TestSpec`], what to run, validated once.
//! - [`dccp`]: DCCP options, a peer's DCCP support and the kernel's DCCP figures.
//! - [`sweep`]: packet-size sweeps (one short test per size) as one table.
//! - [`control`]: the messages on the `/ws` WebSocket (browser↔peer and peer↔peer).
//! - [`history`]: one line of a peer's result history (enums for its words).
//! - [`request`]: what a person asks for (a test, a sweep, a stream), as the CLI's flags and
//!   the browser's form both build it, into a checked spec.
//! - [`report`]: the one result model (intervals, per-stream finals, CPU) and the statistics
//!   derived from it (sums, utilisation, service demand).
//! - [`latency`]: latency under load: the request, the probe's samples, the phases and every
//!   figure derived from them (percentiles, one-way delays above the idle minimum, loss, RPM),
//!   and the live events of a run.
//! - [`one_way`]: one-way delays of datagrams (iperf 2's `--trip-times`) and the clock
//!   assumption they rest on.
//! - [`histogram`]: latency in bins of a fixed width (iperf 2's `--histograms`).
//! - [`video`]: video-like frames (iperf 2's `--isochronous`): the frames asked for, their
//!   sizes, and what a receiver reports of them.
//! - [`wifi`]: the Wi-Fi link beside a test (signal, PHY rates, retries, airtime, channel).
//! - [`multicast`]: a test sent to a multicast group and what each receiver reported.
//! - [`rr`]: request/response results (round-trip histogram and its summary).
//! - [`tagged`]: internally tagged enums read with their tag first, without serde's buffering.
//! - [`plan`]: a regression plan's cases and runs summarised (median, spread, verdict), and
//!   two plan runs compared case by case beyond the noise of their repeats.
//! - [`verdict`]: expectations on a run (`rx>=300M`) and the verdict its result gets.
//! - [`format`]: renderings of a [`report::TestResult`] (iperf3 text and JSON, iperf2, ttcp,
//!   netperf, the result page, charts).
#![warn(missing_docs, unreachable_pub)]

pub mod calendar;
pub mod control;
pub mod dccp;
pub mod format;
pub mod histogram;
pub mod history;
pub mod latency;
pub mod multicast;
pub mod one_way;
#[cfg(feature = "plans")]
pub mod plan;
#[cfg(feature = "plan-runs")]
pub mod plan_progress;
pub mod report;
pub mod request;
pub mod rr;
pub mod spec;
pub mod sweep;
pub mod tagged;
pub mod units;
pub mod verdict;
pub mod video;
pub mod wifi;
pub mod working_load;

/// Version of perfpeer's own control protocol; peers refuse a different major version.
/// 2: a UDP data stream is bound only after its client echoes the data port's challenge.
pub const PROTOCOL_VERSION: u32 = 2;
