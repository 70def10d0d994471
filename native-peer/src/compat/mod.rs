//! Wire adapters for stock tools, so perfpeer drops into existing recipes: each tool has a
//! sans-I/O `codec` (bytes in, typed values out, tested with byte vectors) and drivers that run
//! its protocol over sockets with perfpeer's engine moving the data.

pub mod iperf2;
pub mod iperf3;
pub mod netperf;
pub mod ttcp;
