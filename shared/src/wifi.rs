//! The Wi-Fi link beside a test (a radio on a peer's test path, read over nl80211 each
//! interval): the PHY rate as the driver reports it ([`Rate`]), one interval's link figures
//! at one end ([`LinkSample`]: signal, rates, per-interval retries, failures, airtime and the
//! channel's busy share), the whole test's ([`LinkSummary`]: signal spread, the rates used and
//! their share of time, retries, goodput over PHY rate) and its three headline figures on a
//! history row ([`LinkBrief`]), and a peer's radios before any test ([`WifiInterface`]). Every
//! figure the driver does not give is `None` ("not given"), never 0.

use serde::Serialize;

mod read;

/// The modulation family of a rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RateKind {
    /// 802.11a/b/g rates (no MCS).
    Legacy,
    /// 802.11n (HT): MCS 0–31, NSS from the MCS.
    Ht,
    /// 802.11ac (VHT).
    Vht,
    /// 802.11ax (HE).
    He,
    /// 802.11be (EHT).
    Eht,
}

/// A rate's guard interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GuardInterval {
    /// HT/VHT 800 ns.
    #[serde(rename = "long")]
    Long,
    /// HT/VHT 400 ns ("short GI").
    #[serde(rename = "short")]
    Short,
    /// HE/EHT 0.8 µs.
    #[serde(rename = "0.8")]
    Us08,
    /// HE/EHT 1.6 µs.
    #[serde(rename = "1.6")]
    Us16,
    /// HE/EHT 3.2 µs.
    #[serde(rename = "3.2")]
    Us32,
}

impl GuardInterval {
    /// As `iw` prints it after the rate.
    pub fn words(self) -> &'static str {
        match self {
            GuardInterval::Long => "long GI",
            GuardInterval::Short => "short GI",
            GuardInterval::Us08 => "GI 0.8",
            GuardInterval::Us16 => "GI 1.6",
            GuardInterval::Us32 => "GI 3.2",
        }
    }
}

/// A station's tx or rx rate as the driver last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Legacy, HT, VHT, HE or EHT.
    pub kind: RateKind,
    /// MCS index (HT: 0–31, which counts the streams too; VHT/HE/EHT: per stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcs: Option<u8>,
    /// Spatial streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nss: Option<u8>,
    /// Channel width the rate used, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_mhz: Option<u16>,
    /// Guard interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gi: Option<GuardInterval>,
    /// The PHY rate, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbps: Option<f64>,
}

impl Rate {
    /// Short words for the rate without its bit rate: `HT MCS 15 2SS 20MHz short GI`,
    /// `VHT MCS 9 4SS 80MHz`, `legacy`.
    pub fn label(&self) -> String {
        let mut s = String::from(match self.kind {
            RateKind::Legacy => "legacy",
            RateKind::Ht => "HT",
            RateKind::Vht => "VHT",
            RateKind::He => "HE",
            RateKind::Eht => "EHT",
        });
        if let Some(mcs) = self.mcs {
            s += &format!(" MCS {mcs}");
        }
        if let Some(nss) = self.nss {
            s += &format!(" {nss}SS");
        }
        if let (Some(w), false) = (self.width_mhz, self.kind == RateKind::Legacy) {
            s += &format!(" {w}MHz");
        }
        if let Some(gi) = self.gi {
            s.push(' ');
            s += gi.words();
        }
        s
    }

    /// The label and the bit rate: `HT MCS 15 2SS 20MHz short GI 144.4 Mbit/s`.
    pub fn words(&self) -> String {
        match self.mbps {
            Some(m) => format!("{} {m:.1} Mbit/s", self.label()),
            None => self.label(),
        }
    }
}

/// What a wireless interface is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A client (managed) interface: its one station is the access point.
    Station,
    /// An access point: one station per client.
    Ap,
    /// Ad-hoc (IBSS).
    Adhoc,
    /// A mesh point.
    Mesh,
    /// Monitor, P2P, OCB and the rest.
    Other,
}

impl Mode {
    /// The mode of nl80211's interface type number.
    pub fn of_iftype(iftype: u32) -> Mode {
        match iftype {
            2 | 8 => Mode::Station, // station, P2P client
            3 | 4 | 9 => Mode::Ap,  // AP, AP VLAN, P2P GO
            1 => Mode::Adhoc,
            7 => Mode::Mesh,
            _ => Mode::Other,
        }
    }

    /// One word for text output.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Station => "station",
            Mode::Ap => "AP",
            Mode::Adhoc => "ad-hoc",
            Mode::Mesh => "mesh",
            Mode::Other => "other",
        }
    }
}

/// The channel an interface is on during one interval, from the driver's survey.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChannelSample {
    /// Centre frequency of the primary channel, MHz.
    pub freq_mhz: u32,
    /// Noise floor, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_dbm: Option<i8>,
    /// Time the channel was busy (anyone's traffic or energy), % of the interval's active
    /// time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_percent: Option<f64>,
    /// Time this radio transmitted, % of active time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_percent: Option<f64>,
    /// Time this radio received, % of active time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_percent: Option<f64>,
}

/// One interval of the Wi-Fi link at one end: the station that carries the test, as the
/// driver reports it at the interval's end, with counters as changes over the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSample {
    /// The wireless interface.
    pub iface: String,
    /// Station (client) or access point.
    pub mode: Mode,
    /// The station that carries the test: the AP on a client interface, the client on an AP.
    pub station: String,
    /// Signal of the last frame received from the station, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<i8>,
    /// Average signal, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_avg_dbm: Option<i8>,
    /// Signal per receive chain, dBm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain_signal_dbm: Vec<i8>,
    /// Rate of the last frame sent to the station.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_rate: Option<Rate>,
    /// Rate of the last frame received from the station.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_rate: Option<Rate>,
    /// Packets sent to the station during the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    /// Retransmission attempts during the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_retries: Option<u64>,
    /// Frames given up on after the last retry during the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_failed: Option<u64>,
    /// Retries per packet sent, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries_percent: Option<f64>,
    /// Beacon losses detected during the interval (client interfaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon_loss: Option<u64>,
    /// What the driver's rate control expects to move, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_mbps: Option<f64>,
    /// Airtime spent sending to the station during the interval, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_airtime_us: Option<u64>,
    /// Airtime spent receiving from the station during the interval, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_airtime_us: Option<u64>,
    /// Seconds since the station connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_s: Option<u32>,
    /// The channel in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelSample>,
}

impl LinkSample {
    /// The per-interval share of retries: `retries` over `packets` sent, in %.
    pub fn retries_share(retries: Option<u64>, packets: Option<u64>) -> Option<f64> {
        match (retries, packets) {
            (Some(r), Some(p)) if p > 0 => Some(r as f64 * 100.0 / p as f64),
            (Some(0), Some(0)) => Some(0.0),
            _ => None,
        }
    }
}

/// The lowest, median and highest of a figure over a test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Lowest.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Highest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, `None` when there are none.
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Some(Spread {
            min: values[0],
            median,
            max: values[n - 1],
        })
    }
}

/// A rate used during a test and its share of the intervals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateShare {
    /// The rate's words (`HT MCS 15 2SS 20MHz short GI`).
    pub rate: String,
    /// Its PHY rate, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbps: Option<f64>,
    /// Share of the intervals that ended on this rate, %.
    pub share_percent: f64,
}

/// The Wi-Fi link over a whole test at one end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSummary {
    /// The wireless interface.
    pub iface: String,
    /// Station or access point.
    pub mode: Mode,
    /// The station that carried the test (the last one seen).
    pub station: String,
    /// Intervals with a reading.
    pub intervals: u32,
    /// Signal over the intervals, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<Spread>,
    /// Tx rates at the intervals' ends, most used first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tx_rates: Vec<RateShare>,
    /// Rx rates at the intervals' ends, most used first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rx_rates: Vec<RateShare>,
    /// Packets sent to the station.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    /// Retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_retries: Option<u64>,
    /// Frames given up on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_failed: Option<u64>,
    /// Retries per packet sent, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries_percent: Option<f64>,
    /// Airtime sending, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_airtime_us: Option<u64>,
    /// Airtime receiving, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_airtime_us: Option<u64>,
    /// The median PHY rate in the test's main direction at this end (tx if it sent more than
    /// it received, else rx), Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy_mbps: Option<f64>,
    /// Goodput over that PHY rate, summed over the intervals where both are known, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_percent: Option<f64>,
}

/// One interval's reading with the test's goodput at this end over it, where known: (sample,
/// (bit/s sent, bit/s received)).
pub type IntervalLink<'a> = (&'a LinkSample, Option<(f64, f64)>);

impl LinkSummary {
    /// The summary of a test's readings, `None` when there are none. `sent_more`: whether this
    /// end sent more than it received, by its totals; it tells the main direction where no
    /// reading has its interval's goodput (a far side's final report carries its radio per
    /// interval but not its streams). Without either, the main direction is tx.
    pub fn build(readings: &[IntervalLink<'_>], sent_more: Option<bool>) -> Option<LinkSummary> {
        let (last, _) = readings.last()?;
        let signals = readings
            .iter()
            .filter_map(|(s, _)| s.signal_dbm.map(f64::from))
            .collect();
        let sum = |f: fn(&LinkSample) -> Option<u64>| -> Option<u64> {
            let mut total = None;
            for (s, _) in readings {
                if let Some(v) = f(s) {
                    total = Some(total.unwrap_or(0) + v);
                }
            }
            total
        };
        let (tx_packets, tx_retries) = (sum(|s| s.tx_packets), sum(|s| s.tx_retries));
        let sent: f64 = readings.iter().filter_map(|r| r.1).map(|g| g.0).sum();
        let received: f64 = readings.iter().filter_map(|r| r.1).map(|g| g.1).sum();
        let sending = if readings.iter().any(|r| r.1.is_some()) {
            sent >= received
        } else {
            sent_more.unwrap_or(true)
        };
        // Goodput over PHY rate in the main direction, over intervals where both are known.
        let (mut goodput, mut phy, mut phys) = (0.0, 0.0, Vec::new());
        for (s, bps) in readings {
            let rate = if sending { s.tx_rate } else { s.rx_rate };
            let Some(mbps) = rate.and_then(|r| r.mbps).filter(|m| *m > 0.0) else {
                continue;
            };
            phys.push(mbps);
            if let Some((tx_bps, rx_bps)) = bps {
                goodput += if sending { tx_bps } else { rx_bps };
                phy += mbps * 1e6;
            }
        }
        Some(LinkSummary {
            iface: last.iface.clone(),
            mode: last.mode,
            station: last.station.clone(),
            intervals: u32::try_from(readings.len()).unwrap_or(u32::MAX),
            signal_dbm: Spread::of(signals),
            tx_rates: shares(readings.iter().filter_map(|(s, _)| s.tx_rate)),
            rx_rates: shares(readings.iter().filter_map(|(s, _)| s.rx_rate)),
            tx_packets,
            tx_retries,
            tx_failed: sum(|s| s.tx_failed),
            retries_percent: LinkSample::retries_share(tx_retries, tx_packets),
            tx_airtime_us: sum(|s| s.tx_airtime_us),
            rx_airtime_us: sum(|s| s.rx_airtime_us),
            phy_mbps: Spread::of(phys).map(|s| s.median),
            efficiency_percent: (phy > 0.0).then(|| goodput * 100.0 / phy),
        })
    }
}

/// A kept test's Wi-Fi link in three figures, for its line in the result history: one radio's
/// median signal, median PHY rate in the way the data went, and retries share. This peer's
/// radio where it had one on the test's path, else the other peer's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkBrief {
    /// Median signal, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<f64>,
    /// Median PHY rate in the test's main direction at that radio, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy_mbps: Option<f64>,
    /// Retries per packet sent, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries_percent: Option<f64>,
    /// The radio is the other peer's (the result's far side): this peer had none on the path.
    pub far: bool,
}

impl LinkBrief {
    /// The brief of `result`: from this end's link summary where it gives any of the three
    /// figures, else from the far side's; `None` where neither does (no radio on the path).
    pub fn of(result: &crate::report::TestResult) -> Option<LinkBrief> {
        let here = result.local.link_summary();
        here.and_then(|s| LinkBrief::from_summary(&s, false))
            .or_else(|| LinkBrief::from_summary(&result.remote.as_ref()?.link_summary()?, true))
    }

    /// The three figures of one end's summary (`far`: the far side's); `None` where none is
    /// given.
    pub fn from_summary(summary: &LinkSummary, far: bool) -> Option<LinkBrief> {
        let brief = LinkBrief {
            signal_dbm: summary.signal_dbm.map(|s| s.median),
            phy_mbps: summary.phy_mbps,
            retries_percent: summary.retries_percent,
            far,
        };
        let given = brief.signal_dbm.is_some()
            || brief.phy_mbps.is_some()
            || brief.retries_percent.is_some();
        given.then_some(brief)
    }
}

/// Each distinct rate's share of `rates`, most used first.
fn shares(rates: impl Iterator<Item = Rate>) -> Vec<RateShare> {
    let mut counts: Vec<(String, Option<f64>, u32)> = Vec::new();
    let mut total = 0u32;
    for r in rates {
        total += 1;
        let label = r.label();
        match counts
            .iter_mut()
            .find(|(l, m, _)| *l == label && *m == r.mbps)
        {
            Some(entry) => entry.2 += 1,
            None => counts.push((label, r.mbps, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.2));
    counts
        .into_iter()
        .map(|(rate, mbps, n)| RateShare {
            rate,
            mbps,
            share_percent: f64::from(n) * 100.0 / f64::from(total),
        })
        .collect()
}

/// A station as a peer lists it before any test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StationLine {
    /// Its MAC address (left out where anyone may ask: `/api/info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Signal, dBm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<i8>,
    /// Tx rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_rate: Option<Rate>,
    /// Rx rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_rate: Option<Rate>,
    /// Seconds connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_s: Option<u32>,
}

/// A wireless interface of a peer (`perfpeer wifi`, `/api/info`, the Peer screen).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WifiInterface {
    /// Its name.
    pub iface: String,
    /// Station, AP, …
    pub mode: Mode,
    /// Its MAC address.
    pub mac: String,
    /// The network's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssid: Option<String>,
    /// The primary channel's frequency, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_mhz: Option<u32>,
    /// The channel number of that frequency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<u32>,
    /// The channel's width, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_mhz: Option<u16>,
    /// Its stations (the AP on a client interface).
    pub stations: Vec<StationLine>,
}

/// The channel number of a frequency in MHz (2.4, 5 and 6 GHz), as IEEE 802.11 numbers them.
pub fn channel_of(freq_mhz: u32) -> Option<u32> {
    match freq_mhz {
        2484 => Some(14),
        2412..=2472 => Some((freq_mhz - 2407) / 5),
        5955..=7115 => Some((freq_mhz - 5950) / 5),
        5000..=5925 => Some((freq_mhz - 5000) / 5),
        _ => None,
    }
}

/// Text for a MAC address.
pub fn mac_words(mac: &[u8]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ht(mcs: u8, mbps: f64) -> Rate {
        Rate {
            kind: RateKind::Ht,
            mcs: Some(mcs),
            nss: Some(mcs / 8 + 1),
            width_mhz: Some(20),
            gi: Some(GuardInterval::Short),
            mbps: Some(mbps),
        }
    }

    fn sample(signal: i8, tx: Rate, packets: u64, retries: u64) -> LinkSample {
        LinkSample {
            iface: "wlan0".into(),
            mode: Mode::Ap,
            station: "02:00:00:00:01:00".into(),
            signal_dbm: Some(signal),
            signal_avg_dbm: None,
            chain_signal_dbm: Vec::new(),
            tx_rate: Some(tx),
            rx_rate: None,
            tx_packets: Some(packets),
            tx_retries: Some(retries),
            tx_failed: None,
            retries_percent: LinkSample::retries_share(Some(retries), Some(packets)),
            beacon_loss: None,
            expected_mbps: None,
            tx_airtime_us: None,
            rx_airtime_us: None,
            connected_s: None,
            channel: None,
        }
    }

    #[test]
    fn labels_read_as_iw_words() {
        assert_eq!(
            ht(15, 144.4).words(),
            "HT MCS 15 2SS 20MHz short GI 144.4 Mbit/s"
        );
        let legacy = Rate {
            kind: RateKind::Legacy,
            mcs: None,
            nss: None,
            width_mhz: Some(20),
            gi: None,
            mbps: Some(1.0),
        };
        assert_eq!(legacy.words(), "legacy 1.0 Mbit/s");
    }

    #[test]
    fn a_summary_spreads_signal_shares_rates_and_sums_what_is_given() {
        let a = sample(-30, ht(15, 144.4), 1000, 10);
        let b = sample(-40, ht(15, 144.4), 1000, 30);
        let c = sample(-60, ht(11, 57.8), 2000, 0);
        let readings = [
            (&a, Some((100e6, 0.0))),
            (&b, Some((100e6, 0.0))),
            (&c, Some((40e6, 1e6))),
        ];
        let s = LinkSummary::build(&readings, None).expect("a summary");
        assert_eq!(
            s.signal_dbm,
            Some(Spread {
                min: -60.0,
                median: -40.0,
                max: -30.0
            })
        );
        assert_eq!(s.tx_rates.len(), 2);
        assert_eq!(s.tx_rates[0].rate, "HT MCS 15 2SS 20MHz short GI");
        assert!((s.tx_rates[0].share_percent - 66.666).abs() < 0.01);
        assert_eq!((s.tx_packets, s.tx_retries), (Some(4000), Some(40)));
        assert_eq!(s.retries_percent, Some(1.0));
        assert_eq!(s.tx_failed, None, "not given stays not given");
        // 240 Mbit/s of goodput over 346.6 Mbit/s of PHY rate.
        let eff = s.efficiency_percent.expect("efficiency");
        assert!((eff - 240.0 / 346.6 * 100.0).abs() < 0.01, "{eff}");
        assert_eq!(s.phy_mbps, Some(144.4));
        assert!(LinkSummary::build(&[], None).is_none());
    }

    #[test]
    fn without_interval_goodput_the_totals_tell_the_main_direction() {
        // A far side's final report: its radio per interval, no streams to weigh.
        let mut received = sample(-50, ht(0, 6.5), 100, 0);
        received.rx_rate = Some(ht(15, 144.4));
        let readings = [(&received, None), (&received, None)];
        let summary = |sent_more| LinkSummary::build(&readings, sent_more).unwrap();
        assert_eq!(
            summary(Some(false)).phy_mbps,
            Some(144.4),
            "it received: rx"
        );
        assert_eq!(summary(Some(true)).phy_mbps, Some(6.5), "it sent: tx");
        assert_eq!(summary(None).phy_mbps, Some(6.5), "nothing known: tx");
        assert_eq!(summary(Some(false)).efficiency_percent, None, "no goodput");
    }

    /// One side of a 2-interval test whose streams had `role` at that end, its intervals
    /// carrying `radio`'s reading and no streams (as a far side's final report's do).
    fn side_with(
        role: crate::report::PeerRole,
        streams: crate::report::StreamRole,
        radio: Option<&LinkSample>,
    ) -> crate::report::SideReport {
        use std::time::Duration;
        let mut side = crate::report::SideReport::empty(role, Default::default());
        side.streams = vec![crate::report::service_demand_tests::stream(
            1, streams, 1000,
        )];
        side.intervals = (0..2)
            .map(|i| crate::report::IntervalReport {
                start: Duration::from_secs(i),
                end: Duration::from_secs(i + 1),
                omitted: false,
                streams: Vec::new(),
                wifi: radio.map(|r| Box::new(r.clone())),
            })
            .collect();
        side
    }

    /// A test this end sent in, with `here` as this end's radio and `far` as the far side's.
    fn sent_with(here: Option<&LinkSample>, far: Option<&LinkSample>) -> crate::report::TestResult {
        use crate::report::{PeerRole, StreamRole};
        crate::report::TestResult {
            id: "t".into(),
            spec: crate::spec::TestSpec::new(crate::spec::Protocol::Tcp),
            started_unix_ms: 0,
            server_addr: "pc:5210".into(),
            local: side_with(PeerRole::Client, StreamRole::Sender, here),
            remote: Some(side_with(PeerRole::Server, StreamRole::Receiver, far)),
            group_receivers: Vec::new(),
            working_load: None,
            status: crate::report::TestStatus::Complete,
        }
    }

    #[test]
    fn a_brief_is_this_ends_radio_else_the_far_sides() {
        let here = sample(-40, ht(15, 144.4), 1000, 20);
        let mut far = sample(-61, ht(0, 6.5), 100, 0);
        far.rx_rate = Some(ht(11, 57.8));
        let both = LinkBrief::of(&sent_with(Some(&here), Some(&far)));
        assert_eq!(
            both,
            Some(LinkBrief {
                signal_dbm: Some(-40.0),
                phy_mbps: Some(144.4),
                retries_percent: Some(2.0),
                far: false,
            }),
            "this end's radio first: it sent, so its tx rate"
        );
        let far_only = LinkBrief::of(&sent_with(None, Some(&far))).expect("the far side's");
        assert!(far_only.far);
        assert_eq!(far_only.signal_dbm, Some(-61.0));
        assert_eq!(
            far_only.phy_mbps,
            Some(57.8),
            "the far side received: its rx rate"
        );
        assert_eq!(LinkBrief::of(&sent_with(None, None)), None);
        // A radio that gave none of the figures is passed over.
        let mut mute = sample(-40, ht(15, 144.4), 0, 0);
        (
            mute.signal_dbm,
            mute.tx_rate,
            mute.tx_packets,
            mute.tx_retries,
        ) = (None, None, None, None);
        assert!(
            LinkBrief::of(&sent_with(Some(&mute), Some(&far)))
                .unwrap()
                .far
        );
        assert_eq!(LinkBrief::of(&sent_with(Some(&mute), None)), None);
        let mut without_far_report = sent_with(None, Some(&far));
        without_far_report.remote = None;
        assert_eq!(LinkBrief::of(&without_far_report), None);
    }

    #[test]
    fn channels_are_numbered_per_band() {
        assert_eq!(channel_of(2437), Some(6));
        assert_eq!(channel_of(2484), Some(14));
        assert_eq!(channel_of(5180), Some(36));
        assert_eq!(channel_of(5955), Some(1));
        assert_eq!(channel_of(900), None);
    }
}
