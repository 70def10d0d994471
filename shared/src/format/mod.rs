//! Renderings of a [`crate::report::TestResult`]: the same values printed as each tool's users
//! expect to read them. Formatters only lay out numbers the report module derived.

pub mod cbr;
pub mod cfmt;
pub mod chart;
pub mod dccp;
pub mod html;
pub mod iperf2;
pub mod iperf3;
pub mod latency;
pub mod layout;
pub mod markup;
pub mod netperf;
pub mod sweep;
pub mod ttcp;
