//! iperf3's protocol (3.12 onwards): a control connection with a 37-byte cookie, one-byte
//! states and length-prefixed JSON; data streams on the same port. See
//! docs/wire-protocols.md ("iperf3") for the layout this follows.
//!
//! - [`codec`]: cookie, states, framing, parameter and result JSON (pure).
//! - [`control`]: reading and writing those on a control socket.
//! - [`server`]: `perfpeer iperf3 -s`, serving several stock clients at once.
//! - [`crate::compat::slots`]: the places of its tests (and `perfpeer netserver`'s).
//! - [`client`]: `perfpeer iperf3 -c`, against a stock `iperf3 -s`.

pub(crate) mod client;
pub(crate) use perfpeer_proto::iperf3 as codec;
pub(crate) mod control;
pub(crate) mod server;
