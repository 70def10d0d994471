//! Wire adapters for stock tools, so perfpeer drops into existing recipes: each tool has a
//! sans-I/O `codec` (bytes in, typed values out, tested with byte vectors) and drivers that run
//! its protocol over sockets with perfpeer's engine moving the data.

use std::time::Duration;

/// Tests whose output a persona server prints in a [`SHOWN_PERIOD`]; the others are counted.
pub(crate) const TESTS_SHOWN: u32 = 20;
/// Refusals (and tests that failed before they began) printed in a period; the others are
/// counted.
pub(crate) const REFUSALS_SHOWN: u32 = 5;
/// The period of both.
pub(crate) const SHOWN_PERIOD: Duration = Duration::from_secs(10);

pub(crate) mod iperf2;
pub(crate) mod iperf3;
pub(crate) mod netperf;
pub(crate) mod slots;
pub(crate) mod ttcp;
