//! nl80211 (the kernel's Wi-Fi configuration family on generic netlink), the subset a peer
//! reads beside a test, sans I/O: the dump requests for a host's wireless interfaces, an
//! interface's stations and its channel survey, and their answers decoded into raw readings
//! (cumulative counters as the driver keeps them; the per-interval changes are made by the
//! peer's `wifi` module into `perfpeer_shared::wifi::LinkSample`). Attributes a driver leaves
//! out stay `None`.

use perfpeer_shared::wifi::{GuardInterval, Mode, Rate, RateKind};

use crate::netlink::{Attr, Attrs, GenlMessage, NLM_F_DUMP, NLM_F_REQUEST, NetlinkError};

/// The family's name, resolved to its id with [`crate::netlink::get_family`].
pub const FAMILY: &str = "nl80211";

const CMD_GET_INTERFACE: u8 = 5;
const CMD_NEW_INTERFACE: u8 = 7;
const CMD_GET_STATION: u8 = 17;
const CMD_NEW_STATION: u8 = 19;
const CMD_GET_SURVEY: u8 = 50;
const CMD_NEW_SURVEY_RESULTS: u8 = 51;

const ATTR_WIPHY: u16 = 1;
const ATTR_IFINDEX: u16 = 3;
const ATTR_IFNAME: u16 = 4;
const ATTR_IFTYPE: u16 = 5;
const ATTR_MAC: u16 = 6;
const ATTR_STA_INFO: u16 = 21;
const ATTR_WIPHY_FREQ: u16 = 38;
const ATTR_SSID: u16 = 52;
const ATTR_SURVEY_INFO: u16 = 84;
const ATTR_CHANNEL_WIDTH: u16 = 159;

const STA_INACTIVE_TIME: u16 = 1;
const STA_RX_BYTES: u16 = 2;
const STA_TX_BYTES: u16 = 3;
const STA_SIGNAL: u16 = 7;
const STA_TX_BITRATE: u16 = 8;
const STA_RX_PACKETS: u16 = 9;
const STA_TX_PACKETS: u16 = 10;
const STA_TX_RETRIES: u16 = 11;
const STA_TX_FAILED: u16 = 12;
const STA_SIGNAL_AVG: u16 = 13;
const STA_RX_BITRATE: u16 = 14;
const STA_CONNECTED_TIME: u16 = 16;
const STA_BEACON_LOSS: u16 = 18;
const STA_RX_BYTES64: u16 = 23;
const STA_TX_BYTES64: u16 = 24;
const STA_CHAIN_SIGNAL: u16 = 25;
const STA_CHAIN_SIGNAL_AVG: u16 = 26;
const STA_EXPECTED_THROUGHPUT: u16 = 27;
const STA_RX_DURATION: u16 = 32;
const STA_TX_DURATION: u16 = 39;

const RATE_BITRATE: u16 = 1;
const RATE_MCS: u16 = 2;
const RATE_40_MHZ: u16 = 3;
const RATE_SHORT_GI: u16 = 4;
const RATE_BITRATE32: u16 = 5;
const RATE_VHT_MCS: u16 = 6;
const RATE_VHT_NSS: u16 = 7;
const RATE_80_MHZ: u16 = 8;
const RATE_80P80_MHZ: u16 = 9;
const RATE_160_MHZ: u16 = 10;
const RATE_10_MHZ: u16 = 11;
const RATE_5_MHZ: u16 = 12;
const RATE_HE_MCS: u16 = 13;
const RATE_HE_NSS: u16 = 14;
const RATE_HE_GI: u16 = 15;
const RATE_320_MHZ: u16 = 18;
const RATE_EHT_MCS: u16 = 19;
const RATE_EHT_NSS: u16 = 20;
const RATE_EHT_GI: u16 = 21;

const SURVEY_FREQUENCY: u16 = 1;
const SURVEY_NOISE: u16 = 2;
const SURVEY_IN_USE: u16 = 3;
const SURVEY_TIME: u16 = 4;
const SURVEY_TIME_BUSY: u16 = 5;
const SURVEY_TIME_RX: u16 = 7;
const SURVEY_TIME_TX: u16 = 8;

/// The dump of every wireless interface of the host (in the caller's network namespace).
pub fn interfaces_request(family: u16, seq: u32) -> Vec<u8> {
    GenlMessage::new(
        family,
        NLM_F_REQUEST | NLM_F_DUMP,
        seq,
        CMD_GET_INTERFACE,
        0,
    )
    .into_bytes()
}

/// The dump of interface `ifindex`'s stations.
pub fn stations_request(family: u16, seq: u32, ifindex: u32) -> Vec<u8> {
    let mut msg = GenlMessage::new(family, NLM_F_REQUEST | NLM_F_DUMP, seq, CMD_GET_STATION, 0);
    msg.attr_u32(ATTR_IFINDEX, ifindex);
    msg.into_bytes()
}

/// The dump of interface `ifindex`'s channel survey.
pub fn survey_request(family: u16, seq: u32, ifindex: u32) -> Vec<u8> {
    let mut msg = GenlMessage::new(family, NLM_F_REQUEST | NLM_F_DUMP, seq, CMD_GET_SURVEY, 0);
    msg.attr_u32(ATTR_IFINDEX, ifindex);
    msg.into_bytes()
}

/// A wireless interface as nl80211 describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterfaceReading {
    /// Its index.
    pub ifindex: u32,
    /// Its name.
    pub name: String,
    /// Its nl80211 type (2 station, 3 AP, …).
    pub iftype: u32,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// The radio (wiphy) it belongs to.
    pub wiphy: Option<u32>,
    /// The network's name (an AP's or a connected client's).
    pub ssid: Option<String>,
    /// Primary channel frequency, MHz.
    pub freq_mhz: Option<u32>,
    /// Channel width, MHz (20 for a 20 MHz channel without HT too).
    pub width_mhz: Option<u16>,
}

impl InterfaceReading {
    /// Station, AP, …
    pub fn mode(&self) -> Mode {
        Mode::of_iftype(self.iftype)
    }
}

/// One station of an interface, counters as the driver keeps them (since association).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StationReading {
    /// The station's MAC address.
    pub mac: [u8; 6],
    /// Milliseconds since it was last heard.
    pub inactive_ms: Option<u32>,
    /// Signal of the last frame, dBm.
    pub signal_dbm: Option<i8>,
    /// Average signal, dBm.
    pub signal_avg_dbm: Option<i8>,
    /// Per-chain signal, dBm.
    pub chain_signal_dbm: Vec<i8>,
    /// Per-chain average signal, dBm.
    pub chain_signal_avg_dbm: Vec<i8>,
    /// The last tx rate.
    pub tx_rate: Option<Rate>,
    /// The last rx rate.
    pub rx_rate: Option<Rate>,
    /// Bytes sent (the 64-bit counter where given, else the 32-bit one).
    pub tx_bytes: Option<u64>,
    /// Bytes received.
    pub rx_bytes: Option<u64>,
    /// Packets sent (32 bits: it wraps).
    pub tx_packets: Option<u32>,
    /// Packets received (32 bits).
    pub rx_packets: Option<u32>,
    /// Retries (32 bits).
    pub tx_retries: Option<u32>,
    /// Failed frames (32 bits).
    pub tx_failed: Option<u32>,
    /// Beacon losses (32 bits).
    pub beacon_loss: Option<u32>,
    /// Expected throughput, kbit/s.
    pub expected_kbps: Option<u32>,
    /// Airtime sending, µs.
    pub tx_duration_us: Option<u64>,
    /// Airtime receiving, µs.
    pub rx_duration_us: Option<u64>,
    /// Seconds connected.
    pub connected_s: Option<u32>,
}

/// One channel of an interface's survey; times are cumulative, ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SurveyReading {
    /// The channel's frequency, MHz.
    pub freq_mhz: u32,
    /// Noise floor, dBm.
    pub noise_dbm: Option<i8>,
    /// The channel the interface is on now.
    pub in_use: bool,
    /// Time the radio was on the channel.
    pub active_ms: Option<u64>,
    /// Time the channel was busy.
    pub busy_ms: Option<u64>,
    /// Time receiving.
    pub rx_ms: Option<u64>,
    /// Time sending.
    pub tx_ms: Option<u64>,
}

/// Copies a 6-byte MAC attribute.
fn mac_of(a: &Attr<'_>) -> Result<[u8; 6], NetlinkError> {
    a.value.try_into().map_err(|_| NetlinkError::BadSize {
        kind: a.kind,
        len: a.value.len(),
    })
}

/// The interface described by a `NEW_INTERFACE` answer (`None` for another command).
pub fn interface_of(cmd: u8, attrs: Attrs<'_>) -> Result<Option<InterfaceReading>, NetlinkError> {
    if cmd != CMD_NEW_INTERFACE {
        return Ok(None);
    }
    let mut i = InterfaceReading::default();
    let mut has_index = false;
    for a in attrs {
        let a = a?;
        match a.kind {
            ATTR_IFINDEX => {
                i.ifindex = a.u32()?;
                has_index = true;
            }
            ATTR_IFNAME => i.name = a.str()?.to_string(),
            ATTR_IFTYPE => i.iftype = a.u32()?,
            ATTR_MAC => i.mac = mac_of(&a)?,
            ATTR_WIPHY => i.wiphy = Some(a.u32()?),
            ATTR_SSID => i.ssid = Some(String::from_utf8_lossy(a.value).into_owned()),
            ATTR_WIPHY_FREQ => i.freq_mhz = Some(a.u32()?),
            ATTR_CHANNEL_WIDTH => i.width_mhz = channel_width_mhz(a.u32()?),
            _ => {}
        }
    }
    // A wireless device without a netdev (P2P device) has no index: not one a test uses.
    Ok(has_index.then_some(i))
}

/// nl80211's channel width number in MHz.
fn channel_width_mhz(width: u32) -> Option<u16> {
    Some(match width {
        0 | 1 => 20,
        2 => 40,
        3 => 80,
        4 | 5 => 160,
        6 => 5,
        7 => 10,
        8 => 1,
        9 => 2,
        10 => 4,
        11 => 8,
        12 => 16,
        13 => 320,
        _ => return None,
    })
}

/// The station described by a `NEW_STATION` answer (`None` for another command).
pub fn station_of(cmd: u8, attrs: Attrs<'_>) -> Result<Option<StationReading>, NetlinkError> {
    if cmd != CMD_NEW_STATION {
        return Ok(None);
    }
    let mut s = StationReading::default();
    let mut info = None;
    for a in attrs {
        let a = a?;
        match a.kind {
            ATTR_MAC => s.mac = mac_of(&a)?,
            ATTR_STA_INFO => info = Some(a.nested()),
            _ => {}
        }
    }
    let Some(info) = info else {
        return Ok(Some(s));
    };
    let (mut bytes32, mut bytes64) = ((None, None), (None, None));
    for a in info {
        let a = a?;
        match a.kind {
            STA_INACTIVE_TIME => s.inactive_ms = Some(a.u32()?),
            STA_RX_BYTES => bytes32.1 = Some(u64::from(a.u32()?)),
            STA_TX_BYTES => bytes32.0 = Some(u64::from(a.u32()?)),
            STA_RX_BYTES64 => bytes64.1 = Some(a.u64()?),
            STA_TX_BYTES64 => bytes64.0 = Some(a.u64()?),
            STA_SIGNAL => s.signal_dbm = Some(a.i8()?),
            STA_SIGNAL_AVG => s.signal_avg_dbm = Some(a.i8()?),
            STA_CHAIN_SIGNAL => s.chain_signal_dbm = chains(a.nested())?,
            STA_CHAIN_SIGNAL_AVG => s.chain_signal_avg_dbm = chains(a.nested())?,
            STA_TX_BITRATE => s.tx_rate = Some(rate_of(a.nested())?),
            STA_RX_BITRATE => s.rx_rate = Some(rate_of(a.nested())?),
            STA_TX_PACKETS => s.tx_packets = Some(a.u32()?),
            STA_RX_PACKETS => s.rx_packets = Some(a.u32()?),
            STA_TX_RETRIES => s.tx_retries = Some(a.u32()?),
            STA_TX_FAILED => s.tx_failed = Some(a.u32()?),
            STA_BEACON_LOSS => s.beacon_loss = Some(a.u32()?),
            STA_EXPECTED_THROUGHPUT => s.expected_kbps = Some(a.u32()?),
            STA_TX_DURATION => s.tx_duration_us = Some(a.u64()?),
            STA_RX_DURATION => s.rx_duration_us = Some(a.u64()?),
            STA_CONNECTED_TIME => s.connected_s = Some(a.u32()?),
            _ => {}
        }
    }
    s.tx_bytes = bytes64.0.or(bytes32.0);
    s.rx_bytes = bytes64.1.or(bytes32.1);
    Ok(Some(s))
}

/// Per-chain signals (one u8 attribute per chain).
fn chains(attrs: Attrs<'_>) -> Result<Vec<i8>, NetlinkError> {
    attrs.map(|a| a?.i8()).collect()
}

/// A nested rate_info attribute as a [`Rate`]. HT's NSS follows from its MCS (8 per stream);
/// a rate without a width flag is 20 MHz wide.
fn rate_of(attrs: Attrs<'_>) -> Result<Rate, NetlinkError> {
    let mut rate = Rate {
        kind: RateKind::Legacy,
        mcs: None,
        nss: None,
        width_mhz: None,
        gi: None,
        mbps: None,
    };
    let (mut bitrate16, mut bitrate32, mut short_gi, mut width) = (None, None, false, 20u16);
    let mut he_gi = None;
    for a in attrs {
        let a = a?;
        match a.kind {
            RATE_BITRATE => bitrate16 = Some(u32::from(a.u16()?)),
            RATE_BITRATE32 => bitrate32 = Some(a.u32()?),
            RATE_MCS => {
                rate.kind = RateKind::Ht;
                let mcs = a.u8()?;
                rate.mcs = Some(mcs);
                rate.nss = (mcs < 32).then_some(mcs / 8 + 1);
            }
            RATE_VHT_MCS => {
                rate.kind = RateKind::Vht;
                rate.mcs = Some(a.u8()?);
            }
            RATE_HE_MCS => {
                rate.kind = RateKind::He;
                rate.mcs = Some(a.u8()?);
            }
            RATE_EHT_MCS => {
                rate.kind = RateKind::Eht;
                rate.mcs = Some(a.u8()?);
            }
            RATE_VHT_NSS | RATE_HE_NSS | RATE_EHT_NSS => rate.nss = Some(a.u8()?),
            RATE_SHORT_GI => short_gi = true,
            RATE_HE_GI | RATE_EHT_GI => he_gi = Some(a.u8()?),
            RATE_40_MHZ => width = 40,
            RATE_80_MHZ => width = 80,
            RATE_80P80_MHZ | RATE_160_MHZ => width = 160,
            RATE_320_MHZ => width = 320,
            RATE_10_MHZ => width = 10,
            RATE_5_MHZ => width = 5,
            _ => {}
        }
    }
    rate.mbps = bitrate32.or(bitrate16).map(|b| f64::from(b) / 10.0);
    rate.width_mhz = Some(width);
    rate.gi = match rate.kind {
        RateKind::Legacy => None,
        RateKind::Ht | RateKind::Vht if short_gi => Some(GuardInterval::Short),
        RateKind::Ht | RateKind::Vht => Some(GuardInterval::Long),
        RateKind::He | RateKind::Eht => match he_gi {
            Some(0) => Some(GuardInterval::Us08),
            Some(1) => Some(GuardInterval::Us16),
            Some(2) => Some(GuardInterval::Us32),
            _ => None,
        },
    };
    Ok(rate)
}

/// The channel described by a `NEW_SURVEY_RESULTS` answer (`None` for another command, or
/// an answer without survey figures).
pub fn survey_of(cmd: u8, attrs: Attrs<'_>) -> Result<Option<SurveyReading>, NetlinkError> {
    if cmd != CMD_NEW_SURVEY_RESULTS {
        return Ok(None);
    }
    let Some(info) = attrs
        .filter_map(Result::ok)
        .find(|a| a.kind == ATTR_SURVEY_INFO)
    else {
        return Ok(None);
    };
    let mut s = SurveyReading::default();
    let mut has_freq = false;
    for a in info.nested() {
        let a = a?;
        match a.kind {
            SURVEY_FREQUENCY => {
                s.freq_mhz = a.u32()?;
                has_freq = true;
            }
            SURVEY_NOISE => s.noise_dbm = Some(a.i8()?),
            SURVEY_IN_USE => s.in_use = true,
            SURVEY_TIME => s.active_ms = Some(a.u64()?),
            SURVEY_TIME_BUSY => s.busy_ms = Some(a.u64()?),
            SURVEY_TIME_RX => s.rx_ms = Some(a.u64()?),
            SURVEY_TIME_TX => s.tx_ms = Some(a.u64()?),
            _ => {}
        }
    }
    Ok(has_freq.then_some(s))
}

#[cfg(test)]
mod tests;
