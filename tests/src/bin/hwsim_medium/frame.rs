//! mac80211_hwsim's medium messages (`include/.../mac80211_hwsim.h`, 6.1): the frame a radio
//! hands over (`HWSIM_CMD_FRAME`: transmitter, frame, flags, retry chain, cookie, frequency),
//! and the two answers, a copy to a receiving radio and the sender's tx status with the tries
//! used. Bytes only, no socket.

use perfpeer_proto::netlink::{Attrs, GenlMessage, NLM_F_ACK, NLM_F_REQUEST};

/// The family's name.
pub(crate) const FAMILY: &str = "MAC80211_HWSIM";
const CMD_REGISTER: u8 = 1;
/// A frame, from a radio or to one.
pub(crate) const CMD_FRAME: u8 = 2;
const CMD_TX_INFO_FRAME: u8 = 3;
const ATTR_ADDR_RECEIVER: u16 = 1;
const ATTR_ADDR_TRANSMITTER: u16 = 2;
const ATTR_FRAME: u16 = 3;
const ATTR_FLAGS: u16 = 4;
const ATTR_RX_RATE: u16 = 5;
const ATTR_SIGNAL: u16 = 6;
const ATTR_TX_INFO: u16 = 7;
const ATTR_COOKIE: u16 = 8;
const ATTR_FREQ: u16 = 19;
const ATTR_TX_INFO_FLAGS: u16 = 21;
/// `FLAGS`: the sender wants no acknowledgement (group-addressed frames).
const TX_CTL_NO_ACK: u32 = 2;
/// `FLAGS` of the status: the frame was acknowledged.
const TX_STAT_ACK: u32 = 4;
/// `TX_INFO_FLAGS`: the rate is an HT MCS, a VHT MCS.
const RC_MCS: u16 = 1 << 3;
const RC_VHT_MCS: u16 = 1 << 8;
/// hwsim drops a received frame whose legacy rate index is beyond the band's rates.
const LEGACY_RATES: i8 = 12;
/// The generic netlink version the medium speaks (wmediumd's).
const VERSION: u8 = 1;

/// One rate of a frame's retry chain: hwsim's index, tries, and its `TX_INFO_FLAGS`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxRate {
    /// HT: the MCS; VHT: NSS-1 << 4 | MCS; legacy: the band's rate index; -1: unused.
    pub(crate) idx: i8,
    /// Tries at this rate.
    pub(crate) count: u8,
    flags: u16,
}

impl TxRate {
    /// An unused place of the chain.
    pub(crate) const UNUSED: TxRate = TxRate {
        idx: -1,
        count: 0,
        flags: 0,
    };

    /// The same rate with another number of tries.
    pub(crate) fn with_count(self, count: u8) -> TxRate {
        TxRate { count, ..self }
    }

    /// The modulation index of an HT or VHT rate (HT MCS mod 8); `None` for a legacy rate.
    pub(crate) fn modulation(self) -> Option<u8> {
        let idx = u8::try_from(self.idx).ok()?;
        if self.flags & RC_VHT_MCS != 0 {
            Some(idx & 0x0f)
        } else if self.flags & RC_MCS != 0 {
            Some(idx % 8)
        } else {
            None
        }
    }

    /// `MCS 15`, `VHT-MCS 9 NSS 2`, `legacy 0`.
    pub(crate) fn label(self) -> String {
        match (self.flags & RC_VHT_MCS != 0, self.flags & RC_MCS != 0) {
            (true, _) => format!("VHT-MCS {} NSS {}", self.idx & 0x0f, (self.idx >> 4) + 1),
            (_, true) => format!("MCS {}", self.idx),
            _ => format!("legacy {}", self.idx),
        }
    }

    /// The receiver's `RX_RATE`: hwsim takes only a legacy index there (1 Mbit/s for HT).
    fn rx_index(self) -> u32 {
        match self.modulation() {
            None if self.idx < LEGACY_RATES => u32::try_from(self.idx).unwrap_or(0),
            _ => 0,
        }
    }
}

/// A frame hwsim handed over, as far as the medium needs it.
pub(crate) struct Frame<'a> {
    /// The sending radio's address (42:00:00:00:NN:00).
    pub(crate) transmitter: [u8; 6],
    frame: &'a [u8],
    flags: u32,
    cookie: u64,
    freq: Option<u32>,
    /// The retry chain rate control chose.
    pub(crate) rates: [TxRate; 4],
}

impl<'a> Frame<'a> {
    /// The frame in a `HWSIM_CMD_FRAME`'s attributes.
    pub(crate) fn parse(attrs: Attrs<'a>) -> Result<Frame<'a>, String> {
        let mut f = Frame {
            transmitter: [0; 6],
            frame: &[],
            flags: 0,
            cookie: 0,
            freq: None,
            rates: [TxRate::UNUSED; 4],
        };
        let mut has_transmitter = false;
        for a in attrs {
            let a = a.map_err(|e| e.to_string())?;
            let v = a.value;
            match a.kind {
                ATTR_ADDR_TRANSMITTER => {
                    f.transmitter = v.try_into().map_err(|_| "a transmitter of 6 bytes")?;
                    has_transmitter = true;
                }
                ATTR_FRAME => f.frame = v,
                ATTR_FLAGS => f.flags = a.u32().map_err(|e| e.to_string())?,
                ATTR_COOKIE => f.cookie = a.u64().map_err(|e| e.to_string())?,
                ATTR_FREQ => f.freq = a.u32().ok(),
                ATTR_TX_INFO => {
                    for (r, pair) in f.rates.iter_mut().zip(v.chunks_exact(2)) {
                        r.idx = i8::from_ne_bytes([pair[0]]);
                        r.count = pair[1];
                    }
                }
                ATTR_TX_INFO_FLAGS => {
                    for (r, t) in f.rates.iter_mut().zip(v.chunks_exact(3)) {
                        r.flags = u16::from_ne_bytes([t[1], t[2]]);
                    }
                }
                _ => {}
            }
        }
        if !has_transmitter || f.frame.len() < 10 {
            return Err("a frame without transmitter or 802.11 header".into());
        }
        Ok(f)
    }

    /// An 802.11 data frame (frame control type 2).
    pub(crate) fn is_data(&self) -> bool {
        (self.frame[0] >> 2) & 3 == 2
    }

    /// Sent once, without acknowledgement (group-addressed).
    pub(crate) fn no_ack(&self) -> bool {
        self.flags & TX_CTL_NO_ACK != 0
    }

    /// The frame as `receiver` gets it, at the rate it got through with.
    pub(crate) fn delivery(
        &self,
        family: u16,
        seq: u32,
        receiver: &[u8; 6],
        rate: TxRate,
        signal_dbm: i32,
    ) -> Vec<u8> {
        let mut m = GenlMessage::new(family, NLM_F_REQUEST, seq, CMD_FRAME, VERSION);
        m.attr(ATTR_ADDR_RECEIVER, receiver)
            .attr(ATTR_FRAME, self.frame)
            .attr_u32(ATTR_RX_RATE, rate.rx_index())
            .attr_u32(ATTR_SIGNAL, signal_dbm.cast_unsigned());
        if let Some(freq) = self.freq {
            m.attr_u32(ATTR_FREQ, freq);
        }
        m.into_bytes()
    }

    /// The sender's tx status: the tries `used` per rate, acknowledged or not. hwsim keeps the
    /// frame pending until it gets this (all five attributes are required).
    pub(crate) fn status(
        &self,
        family: u16,
        seq: u32,
        used: &[TxRate; 4],
        acked: bool,
        signal_dbm: i32,
    ) -> Vec<u8> {
        let tx_info: Vec<u8> = used
            .iter()
            .flat_map(|r| [r.idx.to_ne_bytes()[0], r.count])
            .collect();
        let flags = self.flags | if acked { TX_STAT_ACK } else { 0 };
        let mut m = GenlMessage::new(family, NLM_F_REQUEST, seq, CMD_TX_INFO_FRAME, VERSION);
        m.attr(ATTR_ADDR_TRANSMITTER, &self.transmitter)
            .attr_u32(ATTR_FLAGS, flags)
            .attr_u32(ATTR_SIGNAL, signal_dbm.cast_unsigned())
            .attr(ATTR_TX_INFO, &tx_info)
            .attr_u64(ATTR_COOKIE, self.cookie);
        m.into_bytes()
    }
}

/// The request that makes this socket hwsim's medium (acknowledged).
pub(crate) fn register(family: u16, seq: u32) -> Vec<u8> {
    GenlMessage::new(
        family,
        NLM_F_REQUEST | NLM_F_ACK,
        seq,
        CMD_REGISTER,
        VERSION,
    )
    .into_bytes()
}

/// A `HWSIM_CMD_FRAME` as radio 1 hands it over: a QoS data frame (or a beacon) with the
/// chain MCS 15 ×2, MCS 11 ×3, legacy 0 ×4.
#[cfg(test)]
pub(crate) fn sample_frame(data: bool, flags: u32) -> Vec<u8> {
    let mut header = [0u8; 24];
    header[0] = if data { 0x88 } else { 0x80 };
    let mut m = GenlMessage::new(33, 0, 0, CMD_FRAME, VERSION);
    m.attr(ATTR_ADDR_TRANSMITTER, &[0x42, 0, 0, 0, 1, 0])
        .attr(ATTR_FRAME, &header)
        .attr_u32(ATTR_FLAGS, flags)
        .attr(ATTR_TX_INFO, &[15, 2, 11, 3, 0, 4, 0xff, 0])
        .attr(
            ATTR_TX_INFO_FLAGS,
            &[15, 0x88, 0, 11, 0x08, 0, 0, 0, 0, 0xff, 0, 0],
        )
        .attr_u64(ATTR_COOKIE, 77)
        .attr_u32(ATTR_FREQ, 2437);
    m.into_bytes()
}

#[cfg(test)]
mod tests {
    use perfpeer_proto::netlink::{self, Reply};

    use super::*;

    fn attrs_of(bytes: &[u8]) -> Attrs<'_> {
        match netlink::replies(bytes).next() {
            Some(Ok(Reply::Genl { attrs, .. })) => attrs,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_frame_is_read_with_its_chain() {
        let bytes = sample_frame(true, 1);
        let f = Frame::parse(attrs_of(&bytes)).expect("parses");
        assert_eq!(f.transmitter, [0x42, 0, 0, 0, 1, 0]);
        assert!(f.is_data() && !f.no_ack());
        let chain: Vec<(i8, u8, Option<u8>)> = f
            .rates
            .iter()
            .map(|r| (r.idx, r.count, r.modulation()))
            .collect();
        assert_eq!(
            chain,
            [
                (15, 2, Some(7)),
                (11, 3, Some(3)),
                (0, 4, None),
                (-1, 0, None)
            ]
        );
        assert_eq!(f.rates[0].label(), "MCS 15");
        assert_eq!((f.rates[0].rx_index(), f.rates[2].rx_index()), (0, 0));
    }

    #[test]
    fn the_status_carries_the_tries_used_and_the_ack() {
        let bytes = sample_frame(true, 1);
        let f = Frame::parse(attrs_of(&bytes)).expect("parses");
        let used = [
            f.rates[0],
            f.rates[1].with_count(1),
            TxRate::UNUSED,
            TxRate::UNUSED,
        ];
        let status = f.status(33, 9, &used, true, -60);
        let mut seen = Vec::new();
        for a in attrs_of(&status) {
            let a = a.expect("attribute");
            seen.push(a.kind);
            match a.kind {
                ATTR_FLAGS => assert_eq!(a.u32(), Ok(1 | TX_STAT_ACK)),
                ATTR_SIGNAL => assert_eq!(a.u32(), Ok((-60i32).cast_unsigned())),
                ATTR_TX_INFO => assert_eq!(a.value, [15, 2, 11, 1, 0xff, 0, 0xff, 0]),
                ATTR_COOKIE => assert_eq!(a.u64(), Ok(77)),
                _ => {}
            }
        }
        assert_eq!(
            seen,
            [
                ATTR_ADDR_TRANSMITTER,
                ATTR_FLAGS,
                ATTR_SIGNAL,
                ATTR_TX_INFO,
                ATTR_COOKIE
            ]
        );
    }
}
