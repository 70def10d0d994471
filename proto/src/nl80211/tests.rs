//! nl80211 answers decoded from bytes laid out as the kernel lays them out (attributes built
//! here), and the requests checked byte by byte.

use perfpeer_shared::wifi::{GuardInterval, Mode, RateKind};

use super::*;
use crate::netlink::{Reply, replies};

/// One attribute's bytes, padded.
fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&u16::try_from(4 + value.len()).unwrap().to_ne_bytes());
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(value);
    b.resize((b.len() + 3) & !3, 0);
    b
}

/// A nested attribute (with the kernel's NLA_F_NESTED bit set) of `parts`.
fn nested(kind: u16, parts: &[Vec<u8>]) -> Vec<u8> {
    attr(kind | 0x8000, &parts.concat())
}

/// A generic netlink answer of `cmd` with `attrs`, parsed back as the caller would.
fn answer(cmd: u8, attrs: &[Vec<u8>]) -> Vec<u8> {
    let body = attrs.concat();
    let mut b = Vec::new();
    b.extend_from_slice(&u32::try_from(20 + body.len()).unwrap().to_ne_bytes());
    b.extend_from_slice(&0x22u16.to_ne_bytes());
    b.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
    b.extend_from_slice(&9u32.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[cmd, 1, 0, 0]);
    b.extend_from_slice(&body);
    b
}

fn decode<T>(bytes: &[u8], f: fn(u8, Attrs<'_>) -> Result<Option<T>, NetlinkError>) -> T {
    match replies(bytes).next() {
        Some(Ok(Reply::Genl { cmd, attrs, .. })) => f(cmd, attrs).unwrap().expect("decoded"),
        other => panic!("not a generic answer: {other:?}"),
    }
}

#[test]
fn requests_name_the_command_and_the_interface() {
    let b = stations_request(0x22, 4, 7);
    assert_eq!(b.len(), 28);
    assert_eq!(u16::from_ne_bytes([b[4], b[5]]), 0x22);
    assert_eq!(u16::from_ne_bytes([b[6], b[7]]), 0x301);
    assert_eq!(b[16], 17);
    assert_eq!(u16::from_ne_bytes([b[20], b[21]]), 8);
    assert_eq!(u16::from_ne_bytes([b[22], b[23]]), 3);
    assert_eq!(u32::from_ne_bytes([b[24], b[25], b[26], b[27]]), 7);
    assert_eq!(survey_request(0x22, 5, 7)[16], 50);
    assert_eq!(interfaces_request(0x22, 6).len(), 20);
}

#[test]
fn an_ht_station_reads_as_iw_prints_it() {
    let tx_rate = nested(
        STA_TX_BITRATE,
        &[
            attr(RATE_BITRATE, &1444u16.to_ne_bytes()),
            attr(RATE_BITRATE32, &1444u32.to_ne_bytes()),
            attr(RATE_MCS, &[15]),
            attr(RATE_SHORT_GI, &[]),
        ],
    );
    let rx_rate = nested(STA_RX_BITRATE, &[attr(RATE_BITRATE, &10u16.to_ne_bytes())]);
    let info = nested(
        ATTR_STA_INFO,
        &[
            attr(STA_INACTIVE_TIME, &76u32.to_ne_bytes()),
            attr(STA_TX_BYTES, &1000u32.to_ne_bytes()),
            attr(STA_TX_BYTES64, &5_000_000_000u64.to_ne_bytes()),
            attr(STA_SIGNAL, &[(-30i8).cast_unsigned()]),
            attr(STA_SIGNAL_AVG, &[(-31i8).cast_unsigned()]),
            nested(
                STA_CHAIN_SIGNAL,
                &[
                    attr(0, &[(-33i8).cast_unsigned()]),
                    attr(1, &[(-35i8).cast_unsigned()]),
                ],
            ),
            tx_rate,
            rx_rate,
            attr(STA_TX_PACKETS, &80651u32.to_ne_bytes()),
            attr(STA_TX_RETRIES, &12u32.to_ne_bytes()),
            attr(STA_TX_FAILED, &0u32.to_ne_bytes()),
            attr(STA_EXPECTED_THROUGHPUT, &47149u32.to_ne_bytes()),
            attr(STA_TX_DURATION, &0u64.to_ne_bytes()),
            attr(STA_CONNECTED_TIME, &5u32.to_ne_bytes()),
            attr(STA_BEACON_LOSS, &0u32.to_ne_bytes()),
        ],
    );
    let bytes = answer(
        CMD_NEW_STATION,
        &[
            attr(ATTR_IFINDEX, &3u32.to_ne_bytes()),
            attr(ATTR_MAC, &[2, 0, 0, 0, 1, 0]),
            info,
        ],
    );
    let s = decode(&bytes, station_of);
    assert_eq!(s.mac, [2, 0, 0, 0, 1, 0]);
    assert_eq!((s.signal_dbm, s.signal_avg_dbm), (Some(-30), Some(-31)));
    assert_eq!(s.chain_signal_dbm, vec![-33, -35]);
    assert_eq!(s.tx_bytes, Some(5_000_000_000), "the 64-bit counter wins");
    let tx = s.tx_rate.expect("tx rate");
    assert_eq!(tx.kind, RateKind::Ht);
    assert_eq!(
        (tx.mcs, tx.nss, tx.width_mhz),
        (Some(15), Some(2), Some(20))
    );
    assert_eq!(tx.gi, Some(GuardInterval::Short));
    assert_eq!(tx.mbps, Some(144.4));
    let rx = s.rx_rate.expect("rx rate");
    assert_eq!(
        (rx.kind, rx.mbps, rx.gi),
        (RateKind::Legacy, Some(1.0), None)
    );
    assert_eq!(
        (s.tx_packets, s.tx_retries, s.tx_failed),
        (Some(80651), Some(12), Some(0))
    );
    assert_eq!(s.expected_kbps, Some(47149));
    assert_eq!((s.tx_duration_us, s.rx_duration_us), (Some(0), None));
    assert_eq!((s.connected_s, s.beacon_loss), (Some(5), Some(0)));
}

#[test]
fn vht_and_he_rates_carry_nss_width_and_gi() {
    let vht = answer(
        CMD_NEW_STATION,
        &[
            attr(ATTR_MAC, &[1; 6]),
            nested(
                ATTR_STA_INFO,
                &[nested(
                    STA_TX_BITRATE,
                    &[
                        attr(RATE_BITRATE32, &17333u32.to_ne_bytes()),
                        attr(RATE_VHT_MCS, &[9]),
                        attr(RATE_VHT_NSS, &[4]),
                        attr(RATE_80_MHZ, &[]),
                        attr(RATE_SHORT_GI, &[]),
                    ],
                )],
            ),
        ],
    );
    let r = decode(&vht, station_of).tx_rate.unwrap();
    assert_eq!(r.words(), "VHT MCS 9 4SS 80MHz short GI 1733.3 Mbit/s");
    let he = answer(
        CMD_NEW_STATION,
        &[nested(
            ATTR_STA_INFO,
            &[nested(
                STA_RX_BITRATE,
                &[
                    attr(RATE_BITRATE32, &12010u32.to_ne_bytes()),
                    attr(RATE_HE_MCS, &[11]),
                    attr(RATE_HE_NSS, &[2]),
                    attr(RATE_HE_GI, &[0]),
                    attr(RATE_160_MHZ, &[]),
                ],
            )],
        )],
    );
    let r = decode(&he, station_of).rx_rate.unwrap();
    assert_eq!(r.words(), "HE MCS 11 2SS 160MHz GI 0.8 1201.0 Mbit/s");
}

#[test]
fn an_interface_and_a_survey_channel_decode() {
    let bytes = answer(
        CMD_NEW_INTERFACE,
        &[
            attr(ATTR_IFINDEX, &4u32.to_ne_bytes()),
            attr(ATTR_IFNAME, b"wlan0\0"),
            attr(ATTR_WIPHY, &0u32.to_ne_bytes()),
            attr(ATTR_IFTYPE, &3u32.to_ne_bytes()),
            attr(ATTR_MAC, &[2, 0, 0, 0, 0, 0]),
            attr(ATTR_SSID, b"perfpeer-hwsim"),
            attr(ATTR_WIPHY_FREQ, &2437u32.to_ne_bytes()),
            attr(ATTR_CHANNEL_WIDTH, &1u32.to_ne_bytes()),
        ],
    );
    let i = decode(&bytes, interface_of);
    assert_eq!(
        (i.ifindex, i.name.as_str(), i.mode()),
        (4, "wlan0", Mode::Ap)
    );
    assert_eq!(i.ssid.as_deref(), Some("perfpeer-hwsim"));
    assert_eq!((i.freq_mhz, i.width_mhz), (Some(2437), Some(20)));
    let bytes = answer(
        CMD_NEW_SURVEY_RESULTS,
        &[
            attr(ATTR_IFINDEX, &4u32.to_ne_bytes()),
            nested(
                ATTR_SURVEY_INFO,
                &[
                    attr(SURVEY_FREQUENCY, &2437u32.to_ne_bytes()),
                    attr(SURVEY_NOISE, &[(-92i8).cast_unsigned()]),
                    attr(SURVEY_IN_USE, &[]),
                    attr(SURVEY_TIME, &64u64.to_ne_bytes()),
                    attr(SURVEY_TIME_BUSY, &8u64.to_ne_bytes()),
                ],
            ),
        ],
    );
    let s = decode(&bytes, survey_of);
    assert_eq!((s.freq_mhz, s.noise_dbm, s.in_use), (2437, Some(-92), true));
    assert_eq!((s.active_ms, s.busy_ms, s.tx_ms), (Some(64), Some(8), None));
}

#[test]
fn answers_of_other_commands_and_bad_sizes_are_told() {
    let bytes = answer(CMD_NEW_STATION, &[attr(ATTR_MAC, &[1; 6])]);
    let Some(Ok(Reply::Genl { attrs, .. })) = replies(&bytes).next() else {
        panic!()
    };
    assert_eq!(interface_of(CMD_NEW_STATION, attrs), Ok(None));
    let bad = answer(CMD_NEW_STATION, &[attr(ATTR_MAC, &[1; 5])]);
    let Some(Ok(Reply::Genl { cmd, attrs, .. })) = replies(&bad).next() else {
        panic!()
    };
    assert_eq!(
        station_of(cmd, attrs),
        Err(NetlinkError::BadSize {
            kind: ATTR_MAC,
            len: 5
        })
    );
}

/// The datagrams of a capture (one hex line each) from the Wi-Fi guest: real kernel answers
/// (Debian 12's 6.1, mac80211_hwsim), kept with `iw`'s reading of the same moment (.txt).
fn captured(hex: &str) -> Vec<Vec<u8>> {
    hex.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let l = l.trim();
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).expect("hex"))
                .collect()
        })
        .collect()
}

fn decoded<T>(hex: &str, f: fn(u8, Attrs<'_>) -> Result<Option<T>, NetlinkError>) -> Vec<T> {
    let mut out = Vec::new();
    for datagram in captured(hex) {
        for reply in replies(&datagram) {
            if let Reply::Genl { cmd, attrs, .. } = reply.expect("a whole message") {
                out.extend(f(cmd, attrs).expect("decodes"));
            }
        }
    }
    out
}

#[test]
fn the_kernels_station_answer_reads_as_iw_printed_it() {
    // iw: signal -30, avg -30, tx 57.8 MBit/s MCS 11 short GI, rx 52.0 MBit/s MCS 11, tx
    // packets 142401, retries 5775, failed 135, beacon loss 0, expected 29.21 Mbps, tx and rx
    // duration 0 us, connected 76 s (fixtures/nl80211/station_sta.txt).
    let s = decoded(
        include_str!("../../fixtures/nl80211/station_sta.hex"),
        station_of,
    );
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!(s.mac, [2, 0, 0, 0, 0, 0]);
    assert_eq!((s.signal_dbm, s.signal_avg_dbm), (Some(-30), Some(-30)));
    let tx = s.tx_rate.expect("tx rate");
    assert_eq!(tx.words(), "HT MCS 11 2SS 20MHz short GI 57.8 Mbit/s");
    let rx = s.rx_rate.expect("rx rate");
    assert_eq!(rx.words(), "HT MCS 11 2SS 20MHz long GI 52.0 Mbit/s");
    assert_eq!(
        (s.tx_packets, s.tx_retries, s.tx_failed, s.beacon_loss),
        (Some(142_401), Some(5775), Some(135), Some(0))
    );
    // Rate control's estimate moves between two reads: iw's 29.21 Mbps within a few %.
    let expected = f64::from(s.expected_kbps.expect("expected throughput"));
    assert!((expected - 29_210.0).abs() < 29_210.0 * 0.05, "{expected}");
    assert_eq!((s.tx_duration_us, s.rx_duration_us), (Some(0), Some(0)));
    assert_eq!((s.connected_s, s.tx_bytes), (Some(76), Some(195_575_736)));
    assert!(s.chain_signal_dbm.is_empty(), "hwsim gives no chains");
}

#[test]
fn the_kernels_interface_and_survey_answers_decode() {
    let ap = decoded(
        include_str!("../../fixtures/nl80211/interface_ap.hex"),
        interface_of,
    );
    assert_eq!(ap.len(), 1);
    assert_eq!(
        (ap[0].name.as_str(), ap[0].mode(), ap[0].ifindex),
        ("wlan0", Mode::Ap, 2)
    );
    assert_eq!(ap[0].ssid.as_deref(), Some("perfpeer-hwsim"));
    assert_eq!((ap[0].freq_mhz, ap[0].width_mhz), (Some(2437), Some(20)));
    assert_eq!(ap[0].mac, [2, 0, 0, 0, 0, 0]);
    let sta = decoded(
        include_str!("../../fixtures/nl80211/interface_sta.hex"),
        interface_of,
    );
    assert_eq!(
        (sta[0].name.as_str(), sta[0].mode()),
        ("wlan1", Mode::Station)
    );
    let ap_stations = decoded(
        include_str!("../../fixtures/nl80211/station_ap.hex"),
        station_of,
    );
    assert_eq!(ap_stations.len(), 1);
    assert_eq!(ap_stations[0].mac, [2, 0, 0, 0, 1, 0]);
    // iw: one entry per channel the station's scan visited, 2412 MHz first, noise -92 dBm,
    // active 64 ms, busy 8 ms (fixtures/nl80211/survey_sta.txt).
    let survey = decoded(
        include_str!("../../fixtures/nl80211/survey_sta.hex"),
        survey_of,
    );
    let entries = include_str!("../../fixtures/nl80211/survey_sta.txt")
        .matches("Survey data from")
        .count();
    assert_eq!(survey.len(), entries);
    assert_eq!(survey[0].freq_mhz, 2412);
    assert_eq!(
        (survey[0].noise_dbm, survey[0].active_ms, survey[0].busy_ms),
        (Some(-92), Some(64), Some(8))
    );
}
