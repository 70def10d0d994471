//! perfpeer's end-to-end tests: one binary, real `perfpeer` processes, real sockets.

/// Tests over loopback: every direction and protocol, agreement of both ends, JSON keys.
mod loopback;
/// Bad input and failures: unreachable peers, garbage, oversized frames, dying peers, caps.
mod faults;
/// The `/ws` control endpoint driven like a browser: token, `run`, live reports.
mod control_ws;
/// Two hosts in network namespaces on a shaped 20 Mbit/s link.
mod shaped_link;
