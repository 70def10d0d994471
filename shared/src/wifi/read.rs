//! The Wi-Fi types read back from JSON (a far end's intervals, the store's results and history
//! rows, `/api/info` and the history list in the browser) through a `serde_json::Value`, field by field: a figure that is missing or not of
//! its type is "not given", as the driver's own gaps are. serde's derived readers for these
//! types, one visitor per struct and per field type, were about 25 KB of the router build;
//! these reuse the `Value` reader every build already has.

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::Value;

use super::{
    ChannelSample, GuardInterval, LinkBrief, LinkSample, Mode, Rate, RateKind, StationLine,
    WifiInterface,
};

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn int<T: TryFrom<i64>>(v: &Value, key: &str) -> Option<T> {
    v.get(key)
        .and_then(Value::as_i64)
        .and_then(|n| T::try_from(n).ok())
}

fn count(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

fn real(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn mode(v: &Value) -> Option<Mode> {
    Some(match text(v, "mode")?.as_str() {
        "station" => Mode::Station,
        "ap" => Mode::Ap,
        "adhoc" => Mode::Adhoc,
        "mesh" => Mode::Mesh,
        _ => Mode::Other,
    })
}

fn rate(v: Option<&Value>) -> Option<Rate> {
    let v = v?;
    let kind = match text(v, "kind")?.as_str() {
        "legacy" => RateKind::Legacy,
        "ht" => RateKind::Ht,
        "vht" => RateKind::Vht,
        "he" => RateKind::He,
        "eht" => RateKind::Eht,
        _ => return None,
    };
    let gi = text(v, "gi").and_then(|g| {
        Some(match g.as_str() {
            "long" => GuardInterval::Long,
            "short" => GuardInterval::Short,
            "0.8" => GuardInterval::Us08,
            "1.6" => GuardInterval::Us16,
            "3.2" => GuardInterval::Us32,
            _ => return None,
        })
    });
    Some(Rate {
        kind,
        mcs: int(v, "mcs"),
        nss: int(v, "nss"),
        width_mhz: int(v, "width_mhz"),
        gi,
        mbps: real(v, "mbps"),
    })
}

fn channel(v: Option<&Value>) -> Option<ChannelSample> {
    let v = v?;
    Some(ChannelSample {
        freq_mhz: int(v, "freq_mhz")?,
        noise_dbm: int(v, "noise_dbm"),
        busy_percent: real(v, "busy_percent"),
        tx_percent: real(v, "tx_percent"),
        rx_percent: real(v, "rx_percent"),
    })
}

fn sample(v: &Value) -> Option<LinkSample> {
    Some(LinkSample {
        iface: text(v, "iface")?,
        mode: mode(v)?,
        station: text(v, "station")?,
        signal_dbm: int(v, "signal_dbm"),
        signal_avg_dbm: int(v, "signal_avg_dbm"),
        chain_signal_dbm: v
            .get("chain_signal_dbm")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_i64().and_then(|n| i8::try_from(n).ok()))
                    .collect()
            })
            .unwrap_or_default(),
        tx_rate: rate(v.get("tx_rate")),
        rx_rate: rate(v.get("rx_rate")),
        tx_packets: count(v, "tx_packets"),
        tx_retries: count(v, "tx_retries"),
        tx_failed: count(v, "tx_failed"),
        retries_percent: real(v, "retries_percent"),
        beacon_loss: count(v, "beacon_loss"),
        expected_mbps: real(v, "expected_mbps"),
        tx_airtime_us: count(v, "tx_airtime_us"),
        rx_airtime_us: count(v, "rx_airtime_us"),
        connected_s: int(v, "connected_s"),
        channel: channel(v.get("channel")),
    })
}

fn station_line(v: &Value) -> StationLine {
    StationLine {
        mac: text(v, "mac"),
        signal_dbm: int(v, "signal_dbm"),
        tx_rate: rate(v.get("tx_rate")),
        rx_rate: rate(v.get("rx_rate")),
        connected_s: int(v, "connected_s"),
    }
}

fn interface(v: &Value) -> Option<WifiInterface> {
    Some(WifiInterface {
        iface: text(v, "iface")?,
        mode: mode(v)?,
        mac: text(v, "mac")?,
        ssid: text(v, "ssid"),
        freq_mhz: int(v, "freq_mhz"),
        channel: int(v, "channel"),
        width_mhz: int(v, "width_mhz"),
        stations: v
            .get("stations")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(station_line).collect())
            .unwrap_or_default(),
    })
}

fn brief(v: &Value) -> Option<LinkBrief> {
    v.is_object().then(|| LinkBrief {
        signal_dbm: real(v, "signal_dbm"),
        phy_mbps: real(v, "phy_mbps"),
        retries_percent: real(v, "retries_percent"),
        far: v.get("far").and_then(Value::as_bool).unwrap_or(false),
    })
}

impl<'de> Deserialize<'de> for LinkBrief {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        brief(&Value::deserialize(d)?).ok_or_else(|| D::Error::custom("not a Wi-Fi link brief"))
    }
}

impl<'de> Deserialize<'de> for LinkSample {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        sample(&Value::deserialize(d)?).ok_or_else(|| D::Error::custom("not a Wi-Fi link sample"))
    }
}

impl<'de> Deserialize<'de> for WifiInterface {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        interface(&Value::deserialize(d)?)
            .ok_or_else(|| D::Error::custom("not a wireless interface"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_what_is_odd_is_not_given() {
        let s = LinkSample {
            iface: "wlan0".into(),
            mode: Mode::Ap,
            station: "02:00:00:00:01:00".into(),
            signal_dbm: Some(-42),
            signal_avg_dbm: None,
            chain_signal_dbm: vec![-44, -45],
            tx_rate: Some(Rate {
                kind: RateKind::He,
                mcs: Some(11),
                nss: Some(2),
                width_mhz: Some(160),
                gi: Some(GuardInterval::Us08),
                mbps: Some(2401.9),
            }),
            rx_rate: Some(Rate {
                kind: RateKind::Legacy,
                mcs: None,
                nss: None,
                width_mhz: None,
                gi: None,
                mbps: Some(1.0),
            }),
            tx_packets: Some(10),
            tx_retries: Some(2),
            tx_failed: Some(0),
            retries_percent: Some(20.0),
            beacon_loss: Some(0),
            expected_mbps: Some(47.1),
            tx_airtime_us: Some(1),
            rx_airtime_us: Some(2),
            connected_s: Some(5),
            channel: Some(ChannelSample {
                freq_mhz: 5180,
                noise_dbm: Some(-92),
                busy_percent: Some(12.5),
                tx_percent: None,
                rx_percent: None,
            }),
        };
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<LinkSample>(&text).unwrap(), s);
        let odd = r#"{"iface":"w","mode":"ap","station":"x","signal_dbm":-300,
            "tx_rate":{"kind":"qam","mcs":1},"tx_packets":-1,"chain_signal_dbm":[1,"a",999]}"#;
        let read: LinkSample = serde_json::from_str(odd).unwrap();
        assert_eq!(
            (read.signal_dbm, read.tx_rate, read.tx_packets),
            (None, None, None)
        );
        assert_eq!(read.chain_signal_dbm, vec![1]);
        assert!(serde_json::from_str::<LinkSample>(r#"{"mode":"ap"}"#).is_err());
        let i = WifiInterface {
            iface: "wlan0".into(),
            mode: Mode::Station,
            mac: "02:00:00:00:01:00".into(),
            ssid: Some("net".into()),
            freq_mhz: Some(2437),
            channel: Some(6),
            width_mhz: Some(20),
            stations: vec![StationLine {
                mac: None,
                signal_dbm: Some(-30),
                tx_rate: None,
                rx_rate: None,
                connected_s: Some(3),
            }],
        };
        let text = serde_json::to_string(&i).unwrap();
        assert_eq!(serde_json::from_str::<WifiInterface>(&text).unwrap(), i);
        let b = LinkBrief {
            signal_dbm: Some(-52.5),
            phy_mbps: None,
            retries_percent: Some(2.0),
            far: true,
        };
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<LinkBrief>(&text).unwrap(), b);
        let odd: LinkBrief = serde_json::from_str(r#"{"signal_dbm":"x","far":1}"#).unwrap();
        assert_eq!((odd.signal_dbm, odd.far), (None, false));
        assert!(serde_json::from_str::<LinkBrief>("[]").is_err());
    }
}
