//! netperf 2.7's wire protocol, both sides: 656-byte control messages on port 12865, an OMNI
//! request per test, and a data connection per test (or per transaction in TCP_CRR). See
//! docs/wire-protocols.md ("netperf 2.7").
//!
//! - [`codec`]: the control messages as bytes (pure).
//! - [`server`]: `perfpeer netserver`, for stock netperf clients and flent.
//! - [`data`]: a test's data phase on its own thread.
//! - [`client`]: `perfpeer netperf --netserver`, netperf's side against any netserver.

pub(crate) use perfpeer_proto::netperf as codec;
pub(crate) mod client;
pub(crate) mod data;
pub(crate) mod server;
