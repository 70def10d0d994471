//! perfpeer's wire formats, sans I/O (quinn-proto's split): every format a peer reads from or
//! writes to the network, as pure functions from bytes to typed values and back, tested with
//! byte vectors and fuzzed with seeded random and mutated input. The sockets that carry them
//! are in the `perfpeer` crate (`engine`, `server`, `compat`).
//!
//! - [`wire`]: perfpeer's own data streams: TCP stream hello, UDP hello/challenge/confirm/ack/
//!   fin, datagram headers, and the datagram layouts of iperf3, iperf 2 and ttcp.
//! - [`iperf3`]: iperf3's cookie, state bytes, length-prefixed JSON, parameters and results.
//! - [`iperf2`]: iperf 2.1's test header, header ack and UDP server report.
//! - [`netperf`]: netperf 2.7's control messages (OMNI request, response and results).
//! - [`probe`]: the latency probe's request and timestamped answer.
//! - [`netlink`]: netlink and generic netlink messages and attributes.
//! - [`nl80211`]: the Wi-Fi family's interface, station and survey dumps (link statistics).
//! - [`rtnetlink`]: the IPv6 neighbour table (which station an IPv6 far end is behind).
//! - [`prometheus`]: Prometheus's text exposition format (the control port's `/metrics`).
//! - [`udp_stats`]: a UDP receiver's loss, reordering, duplicates, jitter and gaps.

pub mod frames;
#[cfg(test)]
mod fuzz;
pub mod iperf2;
pub mod iperf3;
pub mod netlink;
pub mod netperf;
pub mod nl80211;
pub mod probe;
pub mod prometheus;
pub mod rtnetlink;
pub mod udp_stats;
pub mod wire;
pub mod write_stamps;
