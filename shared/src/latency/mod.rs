//! Latency under load (`perfpeer test PEER --latency-under-load`): a latency probe runs through
//! four phases — idle, download, upload, both — while TCP load fills the link one way, the other,
//! then both. This module is the model: the probe's samples as the requester saw them, the phase
//! windows and load figures the runner measured, and [`LatencyResult::build`], which derives
//! every figure once (percentiles, one-way delays above the idle baseline, loss per direction,
//! added latency, RPM). Renderings read a [`LatencyResult`] and compute nothing.
//!
//! What the probe can prove: each answered probe gives its round trip exactly (the far end's
//! holding time taken out). The two peers' clocks are not synchronised, so a one-way delay is
//! only known up to a constant offset; it is shown relative to the smallest value seen while
//! the link was idle ("above the idle minimum"), which assumes that the offset does not drift
//! during the test (crystal clocks drift by tens of ppm: about 1 ms per 20 s at 50 ppm) and that
//! the idle phase saw at least one probe with no queue in the way.
//!
//! `request` holds what a person asks for ([`LatencyRequest`], its bounds, the probe's and the
//! loads' specs), `result` what was measured and every figure derived from it
//! ([`LatencyResult`]), `live` the events of a running test and their folding ([`Live`]),
//! `served` the run as its far end served it and keeps it ([`served_run`]: the load alone).

mod live;
mod request;
mod result;
mod served;

#[cfg(test)]
mod tests;

pub use live::{LatencyEvent, Live};
pub use request::{
    LatencyRequest, LatencyRequestError, MAX_LOAD_STREAMS, MAX_PHASE_SECONDS, MAX_PROBE_BYTES,
    MAX_PROBES,
};
pub use result::{
    Baseline, ETHERNET_FRAMING, LatencyInputs, LatencyResult, LoadSettings, LostWay, Percentiles,
    Phase, PhaseFigures, PhaseLoad, PhaseWindow, ProbeEcho, ProbePoint, ProbeSample,
    ThroughputPoint, probe_bits_per_second, sender_rtts_ms,
};
pub use served::{ServedTest, is_probe, load_phase, served_run};
