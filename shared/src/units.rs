//! Units: parsing and printing of rates and sizes the way iperf3 users type and read them.
//!
//! Rates (`-b 200M`) use powers of 1000; sizes (`-n 10M`, `-l 128K`, `-w 1M`) use powers of 1024,
//! as iperf3's `unit_atof_rate` and `unit_atoi` do. Printing follows iperf3's adaptive formatter.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A data rate in bits per second.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct BitRate(pub u64);

impl BitRate {
    /// Bytes per second, as a float for pacing arithmetic.
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
}

impl fmt::Display for BitRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/sec", format_bits(self.0 as f64))
    }
}

/// A malformed number with a unit suffix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{input}' is not a {what} (expected a number with an optional K, M, G or T suffix, e.g. 10M)"
)]
pub struct UnitError {
    input: String,
    what: &'static str,
}

fn split_suffix(input: &str) -> (&str, Option<char>) {
    let trimmed = input.trim();
    match trimmed.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&trimmed[..trimmed.len() - 1], Some(c)),
        _ => (trimmed, None),
    }
}

fn parse_scaled(input: &str, base: f64, what: &'static str) -> Result<f64, UnitError> {
    let err = || UnitError {
        input: input.to_string(),
        what,
    };
    let (number, suffix) = split_suffix(input);
    let value: f64 = number.parse().map_err(|_| err())?;
    let scale = match suffix.map(|c| c.to_ascii_uppercase()) {
        None => 1.0,
        Some('K') => base,
        Some('M') => base * base,
        Some('G') => base * base * base,
        Some('T') => base * base * base * base,
        Some(_) => return Err(err()),
    };
    let scaled = value * scale;
    if !scaled.is_finite() || scaled < 0.0 || scaled > u64::MAX as f64 {
        return Err(err());
    }
    Ok(scaled)
}

/// Parses a rate such as `200M`, `1.5G` or `48k` (powers of 1000) into bits per second.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "parse_scaled returns a finite non-negative value; `as` saturates at u64::MAX, which the spec's limits refuse later"
)]
pub fn parse_rate(input: &str) -> Result<BitRate, UnitError> {
    parse_scaled(input, 1000.0, "rate").map(|v| BitRate(v.round() as u64))
}

/// Parses a size such as `128K`, `10M` or `1400` (powers of 1024) into bytes.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "parse_scaled returns a finite non-negative value; `as` saturates at u64::MAX, which the spec's limits refuse later"
)]
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    parse_scaled(input, 1024.0, "size").map(|v| v.round() as u64)
}

/// iperf3's number layout: two decimals below 9.995, one below 99.95, none above.
fn adaptive_number(value: f64) -> String {
    if value < 9.995 {
        format!("{value:4.2}")
    } else if value < 99.95 {
        format!("{value:4.1}")
    } else {
        format!("{value:4.0}")
    }
}

/// A TOS byte as iperf3 reads `-S`: `0x` hex, a leading `0` octal, else decimal; `None` for
/// anything else or a value over 255.
pub fn parse_tos(s: &str) -> Option<u8> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u8::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// Formats a byte count as iperf3 does: `1.25 GBytes` (powers of 1024).
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", adaptive_number(value), UNITS[unit])
}

/// Formats a rate in bit/s in the unit iperf3's `-f` names: `k`, `m`, `g`, `t` for K/M/G/Tbits
/// (powers of 1000), `K`, `M`, `G`, `T` for K/M/G/TBytes (powers of 1024); anything else is
/// adaptive, as [`format_bits`]. The caller appends `/sec`.
pub fn format_rate_in(bits_per_second: f64, unit: char) -> String {
    let (value, label) = match unit {
        'k' => (bits_per_second / 1e3, "Kbits"),
        'm' => (bits_per_second / 1e6, "Mbits"),
        'g' => (bits_per_second / 1e9, "Gbits"),
        't' => (bits_per_second / 1e12, "Tbits"),
        'K' => (bits_per_second / 8.0 / 1024.0, "KBytes"),
        'M' => (bits_per_second / 8.0 / 1_048_576.0, "MBytes"),
        'G' => (bits_per_second / 8.0 / 1_073_741_824.0, "GBytes"),
        'T' => (bits_per_second / 8.0 / 1_099_511_627_776.0, "TBytes"),
        _ => return format_bits(bits_per_second),
    };
    format!("{} {label}", adaptive_number(value))
}

/// Formats a bit count or rate as iperf3 does: `26.2 Gbits` (powers of 1000).
pub fn format_bits(bits: f64) -> String {
    const UNITS: [&str; 5] = ["bits", "Kbits", "Mbits", "Gbits", "Tbits"];
    let mut value = bits;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{} {}", adaptive_number(value), UNITS[unit])
}

/// A rate in the one spelling of perfpeer's own pages and screens: `941 Mbit/s`, `1.50 Gbit/s`,
/// `640 kbit/s`, `0 bit/s` (powers of 1000, iperf3's three significant digits). The tool tabs
/// and the CLI's iperf3-shaped text keep their tools' `Mbits/sec`.
pub fn format_rate(bits_per_second: f64) -> String {
    const UNITS: [&str; 5] = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
    if bits_per_second == 0.0 {
        return "0 bit/s".into();
    }
    let mut value = bits_per_second;
    let mut unit = 0;
    while value >= 999.5 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{} {}", adaptive_number(value).trim(), UNITS[unit])
}

/// A count in groups of three digits joined by narrow no-break spaces (U+202F), so it reads at a
/// glance and never breaks across lines: `1 439 552`; under 10 000 it stays whole (`1250`).
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    if digits.len() <= 4 {
        return digits;
    }
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3 * 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push('\u{202F}');
        }
        grouped.push(c);
    }
    grouped
}

/// A non-negative figure (a packet rate) as a whole count, grouped as [`group_digits`] does:
/// `1 016 862`; negative or NaN as 0.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped at 0 first; a packet rate is far below 2^64, and `as` saturates"
)]
pub fn group_rounded(v: f64) -> String {
    group_digits(v.max(0.0).round() as u64)
}

/// Serde helper: a [`Duration`] on the wire as fractional seconds (`2.5`), readable from JS.
pub mod serde_secs {
    use super::*;
    use serde::{Deserializer, Serializer};

    /// Writes the duration as seconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    /// Reads seconds; negative, NaN or absurd values are an error, not a panic.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_in_threes_from_ten_thousand() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(9999), "9999");
        assert_eq!(group_digits(10_000), "10\u{202F}000");
        assert_eq!(group_digits(1_439_552), "1\u{202F}439\u{202F}552");
        assert_eq!(group_digits(u64::MAX).matches('\u{202F}').count(), 6);
        assert_eq!(group_rounded(1_016_861.6), "1\u{202F}016\u{202F}862");
        assert_eq!(
            (group_rounded(-3.0), group_rounded(f64::NAN)),
            ("0".into(), "0".into())
        );
    }

    #[test]
    fn rates_have_one_spelling() {
        assert_eq!(format_rate(941e6), "941 Mbit/s");
        assert_eq!(format_rate(1.5e9), "1.50 Gbit/s");
        assert_eq!(format_rate(640e3), "640 kbit/s");
        assert_eq!(format_rate(999.7e6), "1.00 Gbit/s", "no 1000 Mbit/s");
        assert_eq!(format_rate(0.0), "0 bit/s");
        assert_eq!(format_rate(48.0), "48.0 bit/s");
    }

    #[test]
    fn rates_in_iperf3s_fixed_units() {
        assert_eq!(format_rate_in(34_527e6, 'm'), "34527 Mbits");
        assert_eq!(format_rate_in(8.0 * 1024.0 * 5.5, 'K'), "5.50 KBytes");
        assert_eq!(format_rate_in(2.5e9, 'g'), "2.50 Gbits");
        assert_eq!(format_rate_in(2.5e9, 'a'), format_bits(2.5e9));
    }

    #[test]
    fn rates_use_powers_of_1000() {
        assert_eq!(parse_rate("200M"), Ok(BitRate(200_000_000)));
        assert_eq!(parse_rate("48k"), Ok(BitRate(48_000)));
        assert_eq!(parse_rate("1.5G"), Ok(BitRate(1_500_000_000)));
        assert_eq!(parse_rate("0"), Ok(BitRate(0)));
    }

    #[test]
    fn sizes_use_powers_of_1024() {
        assert_eq!(parse_size("128K"), Ok(131_072));
        assert_eq!(parse_size("10M"), Ok(10_485_760));
        assert_eq!(parse_size("1400"), Ok(1400));
    }

    #[test]
    fn bad_units_are_errors() {
        for bad in ["", "M", "12Q", "-5", "abc", "1e400"] {
            assert!(parse_rate(bad).is_err(), "{bad} should not parse");
        }
        let msg = parse_size("12Q").unwrap_err().to_string();
        assert!(msg.contains("'12Q' is not a size"), "{msg}");
    }

    #[test]
    fn adaptive_formatting_matches_iperf3() {
        assert_eq!(format_bytes(1_073_741_824.0 * 30.5), "30.5 GBytes");
        assert_eq!(format_bytes(512.0), " 512 Bytes");
        assert_eq!(format_bits(26_200_000_000.0), "26.2 Gbits");
        assert_eq!(format_bits(1_048_576.0), "1.05 Mbits");
        assert_eq!(format_bits(999_000.0), " 999 Kbits");
    }
}
