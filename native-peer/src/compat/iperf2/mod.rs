//! iperf 2.1's wire format: no control connection; each TCP stream opens with a test header
//! (answered by a 28-byte ack), each UDP datagram carries the header at offset 16, and a UDP
//! test ends with a negative-id fin answered by the server's 128-byte report. See
//! docs/wire-protocols.md ("iperf 2.1").
//!
//! - [`codec`]: headers, ack and server report as bytes (pure).
//! - [`client`]: `perfpeer iperf -c`, against a stock `iperf -s`.
//! - [`bounceback`]: the server's side of `--bounceback` (requests sent back, stamped).
//! - `-s -u -B GROUP[%DEV] [-H SOURCE]` joins with [`crate::multicast`] (the server answers no
//!   flow that came to a group).
//! - [`server`]: `perfpeer iperf -s`, TCP and UDP on one port, for stock clients.

pub(crate) mod bounceback;
pub(crate) mod client;
pub(crate) mod clients;
pub(crate) use perfpeer_proto::iperf2 as codec;
pub(crate) mod server;
