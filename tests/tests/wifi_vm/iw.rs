//! `iw dev X station dump` as iw 5.19 prints it, read into the figures the Wi-Fi test compares
//! with perfpeer's: the reference the test holds perfpeer's nl80211 decoding against.

/// A bitrate line: `144.4 MBit/s MCS 15 short GI`, `300.0 MBit/s MCS 15 40MHz short GI`,
/// `1.0 MBit/s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IwRate {
    /// The PHY rate, Mbit/s.
    pub mbps: f64,
    /// The HT MCS (or VHT MCS) when there is one.
    pub mcs: Option<u64>,
    /// Short guard interval.
    pub short_gi: bool,
}

/// One station of a dump.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IwStation {
    /// Its MAC address.
    pub mac: String,
    /// `signal`, dBm.
    pub signal: Option<i64>,
    /// `tx bitrate`.
    pub tx: Option<IwRate>,
    /// `rx bitrate`.
    pub rx: Option<IwRate>,
    /// `tx packets`.
    pub tx_packets: Option<u64>,
    /// `tx retries`.
    pub tx_retries: Option<u64>,
    /// `tx failed`.
    pub tx_failed: Option<u64>,
    /// `expected throughput`, Mbit/s.
    pub expected_mbps: Option<f64>,
}

fn rate(text: &str) -> Option<IwRate> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mbps = words.first()?.parse().ok()?;
    let mcs = words
        .windows(2)
        .find(|w| w[0] == "MCS" || w[0] == "VHT-MCS")
        .and_then(|w| w[1].parse().ok());
    Some(IwRate {
        mbps,
        mcs,
        short_gi: text.contains("short GI"),
    })
}

fn first_number<T: std::str::FromStr>(text: &str) -> Option<T> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '.'))
        .unwrap_or(t.len());
    t[..end].parse().ok()
}

/// The stations of a `station dump`.
pub fn stations(dump: &str) -> Vec<IwStation> {
    let mut out: Vec<IwStation> = Vec::new();
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("Station ") {
            out.push(IwStation {
                mac: rest.split_whitespace().next().unwrap_or_default().into(),
                ..IwStation::default()
            });
            continue;
        }
        let (Some(s), Some((key, value))) = (out.last_mut(), line.trim().split_once(':')) else {
            continue;
        };
        match key {
            "signal" => s.signal = first_number(value),
            "tx bitrate" => s.tx = rate(value),
            "rx bitrate" => s.rx = rate(value),
            "tx packets" => s.tx_packets = first_number(value),
            "tx retries" => s.tx_retries = first_number(value),
            "tx failed" => s.tx_failed = first_number(value),
            "expected throughput" => s.expected_mbps = first_number(value),
            _ => {}
        }
    }
    out
}

/// The one station of a dump (each side of the test network has exactly one).
pub fn station(dump: &str, what: &str) -> IwStation {
    let all = stations(dump);
    assert_eq!(all.len(), 1, "{what}: one station in:\n{dump}");
    all.into_iter().next().expect("one")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iw_5_19_station_dump_is_read() {
        let dump = "Station 02:00:00:00:00:00 (on wlan1)
\tinactive time:\t164 ms
\ttx packets:\t80651
\ttx retries:\t12
\ttx failed:\t0
\tsignal:  \t-30 [-30] dBm
\ttx bitrate:\t144.4 MBit/s MCS 15 short GI
\trx bitrate:\t1.0 MBit/s
\texpected throughput:\t47.149Mbps
";
        let s = station(dump, "sample");
        assert_eq!(s.mac, "02:00:00:00:00:00");
        assert_eq!(s.signal, Some(-30));
        assert_eq!(
            (s.tx_packets, s.tx_retries, s.tx_failed),
            (Some(80651), Some(12), Some(0))
        );
        let tx = s.tx.expect("tx");
        assert_eq!((tx.mbps, tx.mcs, tx.short_gi), (144.4, Some(15), true));
        assert_eq!(s.rx.and_then(|r| r.mcs), None);
        assert_eq!(s.expected_mbps, Some(47.149));
    }
}
