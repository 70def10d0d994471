//! Renderings of a [`crate::report::TestResult`]: the same values printed as each tool's users
//! expect to read them. Formatters only lay out numbers the report module derived.

/// `value` as a JSON value, through its JSON text: each type's serializer to text is in the
/// binary already (it goes on the wire or into the store), where `serde_json::to_value` would
/// add a second copy of it (26 KB of MIPS code, and as much of the UI's wasm).
pub fn json_value<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Value {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(serde_json::Value::Null)
}

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
