//! perfpeer's own data-plane wire formats, as pure encode/decode functions (no sockets here).
//!
//! - TCP stream hello, the first 24 bytes of every data connection:
//!   `"PPT1"` | stream id (u32 BE) | cookie (16 bytes).
//! - UDP control datagrams: `"PPU1"` | kind (u8) | 3 zero bytes | stream id (u32 BE) | body:
//!   hello (kind 1) and hello-ack (kind 2) carry the 16-byte cookie; fin (kind 3) carries the
//!   number of datagrams sent (u64 BE); challenge (kind 4) carries a 16-byte nonce; confirm
//!   (kind 5) carries the cookie and then the nonce. A UDP stream is bound in two round trips:
//!   hello → challenge (the same size, so a forged hello reflects nothing larger), confirm (the
//!   nonce echoed, which only a receiver at that address could have seen) → hello-ack.
//! - UDP data datagrams start with a 16-byte header: sequence number (u64 BE, from 1) | send
//!   time seconds (u32 BE) | nanoseconds (u32 BE). A data header never starts with `"PPU1"`
//!   (that would need a sequence number above 5·10^18), so both kinds share one socket.

use std::time::Duration;

/// The secret a client presents on each data stream; it ties the stream to one test.
pub type Cookie = [u8; 16];

/// The value a UDP stream's challenge carries: the client proves it receives by echoing it.
pub type Nonce = [u8; 16];

/// Length of a TCP stream hello.
pub const STREAM_HELLO_LEN: usize = 24;
/// Length of a UDP data header.
pub const DATA_HEADER_LEN: usize = 16;
const TCP_MAGIC: &[u8; 4] = b"PPT1";
const UDP_MAGIC: &[u8; 4] = b"PPU1";

/// A data-plane message that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the format needs.
    #[error("truncated {what}: {got} of {need} bytes")]
    Truncated {
        /// Which message.
        what: &'static str,
        /// Bytes present.
        got: usize,
        /// Bytes needed.
        need: usize,
    },
    /// Wrong magic: not a perfpeer data stream.
    #[error("not a perfpeer data stream (bad magic)")]
    BadMagic,
    /// Unknown UDP control kind.
    #[error("unknown UDP control kind {0}")]
    BadKind(u8),
    /// A frame tag whose datagram is not inside its frame.
    #[error("a frame tag out of its frame")]
    BadFrameTag,
}

fn need(buf: &[u8], n: usize, what: &'static str) -> Result<(), WireError> {
    if buf.len() < n {
        Err(WireError::Truncated {
            what,
            got: buf.len(),
            need: n,
        })
    } else {
        Ok(())
    }
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

/// An iperf send time: seconds at `sec_at`, microseconds after them (u32 each, clamped below a
/// second).
fn time_at(buf: &[u8], sec_at: usize) -> Duration {
    Duration::new(
        u64::from(u32_at(buf, sec_at)),
        u32_at(buf, sec_at + 4).min(999_999) * 1000,
    )
}

fn u64_at(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

/// First bytes of a TCP data stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHello {
    /// Stream id within the test.
    pub stream_id: u32,
    /// The test's cookie.
    pub cookie: Cookie,
}

impl StreamHello {
    /// The 24 wire bytes.
    pub fn encode(&self) -> [u8; STREAM_HELLO_LEN] {
        let mut out = [0u8; STREAM_HELLO_LEN];
        out[..4].copy_from_slice(TCP_MAGIC);
        out[4..8].copy_from_slice(&self.stream_id.to_be_bytes());
        out[8..].copy_from_slice(&self.cookie);
        out
    }

    /// Reads a hello from exactly the first 24 bytes of a stream.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, STREAM_HELLO_LEN, "stream hello")?;
        if &buf[..4] != TCP_MAGIC {
            return Err(WireError::BadMagic);
        }
        Ok(StreamHello {
            stream_id: u32_at(buf, 4),
            cookie: buf[8..24].try_into().expect("16 bytes"),
        })
    }
}

/// A UDP control datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpControl {
    /// Client → server: bind this address to stream `stream_id` of the test with `cookie`.
    Hello {
        /// Stream id.
        stream_id: u32,
        /// Cookie.
        cookie: Cookie,
    },
    /// Server → client: the stream is bound (after a confirm).
    HelloAck {
        /// Stream id.
        stream_id: u32,
        /// Cookie.
        cookie: Cookie,
    },
    /// Server → client, in answer to a hello: prove you receive at this address.
    Challenge {
        /// Stream id.
        stream_id: u32,
        /// A fresh random value; only the hello's source address is sent it.
        nonce: Nonce,
    },
    /// Client → server: the challenge's nonce, echoed with the cookie.
    Confirm {
        /// Stream id.
        stream_id: u32,
        /// Cookie.
        cookie: Cookie,
        /// The nonce of the challenge.
        nonce: Nonce,
    },
    /// Sender → receiver: the sender stopped after `packets` datagrams.
    Fin {
        /// Stream id.
        stream_id: u32,
        /// Datagrams sent.
        packets: u64,
    },
}

impl UdpControl {
    /// Encodes into a fresh buffer.
    pub fn encode(&self) -> Vec<u8> {
        let (kind, id) = match *self {
            UdpControl::Hello { stream_id, .. } => (1u8, stream_id),
            UdpControl::HelloAck { stream_id, .. } => (2, stream_id),
            UdpControl::Fin { stream_id, .. } => (3, stream_id),
            UdpControl::Challenge { stream_id, .. } => (4, stream_id),
            UdpControl::Confirm { stream_id, .. } => (5, stream_id),
        };
        let mut out = Vec::with_capacity(44);
        out.extend_from_slice(UDP_MAGIC);
        out.extend_from_slice(&[kind, 0, 0, 0]);
        out.extend_from_slice(&id.to_be_bytes());
        match *self {
            UdpControl::Hello { cookie, .. } | UdpControl::HelloAck { cookie, .. } => {
                out.extend_from_slice(&cookie)
            }
            UdpControl::Fin { packets, .. } => out.extend_from_slice(&packets.to_be_bytes()),
            UdpControl::Challenge { nonce, .. } => out.extend_from_slice(&nonce),
            UdpControl::Confirm { cookie, nonce, .. } => {
                out.extend_from_slice(&cookie);
                out.extend_from_slice(&nonce);
            }
        }
        out
    }

    /// Whether `buf` is a control datagram (as opposed to data).
    pub fn is_control(buf: &[u8]) -> bool {
        buf.len() >= 4 && &buf[..4] == UDP_MAGIC
    }

    /// Decodes a control datagram.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, 12, "UDP control")?;
        if !Self::is_control(buf) {
            return Err(WireError::BadMagic);
        }
        let stream_id = u32_at(buf, 8);
        match buf[4] {
            1 | 2 => {
                need(buf, 28, "UDP hello")?;
                let cookie: Cookie = buf[12..28].try_into().expect("16 bytes");
                Ok(if buf[4] == 1 {
                    UdpControl::Hello { stream_id, cookie }
                } else {
                    UdpControl::HelloAck { stream_id, cookie }
                })
            }
            3 => {
                need(buf, 20, "UDP fin")?;
                Ok(UdpControl::Fin {
                    stream_id,
                    packets: u64_at(buf, 12),
                })
            }
            4 => {
                need(buf, 28, "UDP challenge")?;
                Ok(UdpControl::Challenge {
                    stream_id,
                    nonce: buf[12..28].try_into().expect("16 bytes"),
                })
            }
            5 => {
                need(buf, 44, "UDP confirm")?;
                Ok(UdpControl::Confirm {
                    stream_id,
                    cookie: buf[12..28].try_into().expect("16 bytes"),
                    nonce: buf[28..44].try_into().expect("16 bytes"),
                })
            }
            other => Err(WireError::BadKind(other)),
        }
    }
}

/// The header at the start of every UDP data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// Sequence number, from 1.
    pub seq: u64,
    /// Send time on the sender's monotonic clock (only differences are meaningful).
    pub sent: Duration,
}

impl DataHeader {
    /// Writes the header into the first 16 bytes of `buf`.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the header carries seconds as 32 bits (136 years of monotonic time)"
    )]
    pub fn write(&self, buf: &mut [u8]) {
        buf[..8].copy_from_slice(&self.seq.to_be_bytes());
        buf[8..12].copy_from_slice(&(self.sent.as_secs() as u32).to_be_bytes());
        buf[12..16].copy_from_slice(&self.sent.subsec_nanos().to_be_bytes());
    }

    /// Reads the header of a data datagram.
    pub fn read(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, DATA_HEADER_LEN, "UDP data header")?;
        let nanos = u32_at(buf, 12).min(999_999_999);
        Ok(DataHeader {
            seq: u64_at(buf, 0),
            sent: Duration::new(u64::from(u32_at(buf, 8)), nanos),
        })
    }
}

/// Length of a video datagram's frame tag, after its [`DataHeader`].
pub const FRAME_TAG_LEN: usize = 12;

/// Where a datagram of a video-like test (`--isochronous`) sits in its frame: bytes 16..28 of
/// the datagram, after the [`DataHeader`], as three u32 (BE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTag {
    /// The frame's number, from 1.
    pub frame: u32,
    /// This datagram's place in the frame, from 0.
    pub index: u32,
    /// Datagrams in the frame.
    pub count: u32,
}

impl FrameTag {
    /// Writes the tag after the data header (`buf` holds at least 28 bytes).
    pub fn write(&self, buf: &mut [u8]) {
        let at = DATA_HEADER_LEN;
        buf[at..at + 4].copy_from_slice(&self.frame.to_be_bytes());
        buf[at + 4..at + 8].copy_from_slice(&self.index.to_be_bytes());
        buf[at + 8..at + 12].copy_from_slice(&self.count.to_be_bytes());
    }

    /// Reads the tag of a data datagram; a tag whose place is not inside its frame, or a frame
    /// numbered 0, is refused.
    pub fn read(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, DATA_HEADER_LEN + FRAME_TAG_LEN, "frame tag")?;
        let at = DATA_HEADER_LEN;
        let tag = FrameTag {
            frame: u32_at(buf, at),
            index: u32_at(buf, at + 4),
            count: u32_at(buf, at + 8),
        };
        if tag.frame == 0 || tag.index >= tag.count {
            return Err(WireError::BadFrameTag);
        }
        Ok(tag)
    }
}

/// A received datagram's place in a video-like frame and how its frames are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameMark {
    /// Its frame and place in it.
    pub tag: FrameTag,
    /// The frame period, s: a frame whose latency is longer is late.
    pub period_s: f64,
    /// The sender may stop in the middle of its last frame when the test's time is up (iperf
    /// 2's client does; perfpeer's sends every frame it starts whole): a last frame cut short
    /// is then not counted lost.
    pub last_may_be_cut: bool,
}

/// What iperf 2's isochronous mark says beyond a [`FrameTag`] (perfpeer's own tag needs none
/// of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramePlace {
    /// The frame's bytes.
    pub frame_bytes: u32,
    /// Its bytes from this datagram's first on.
    pub remaining: u32,
    /// The frame period, µs.
    pub period_us: u32,
    /// When the frames began (the sender's wall clock).
    pub start: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_tag_bytes_and_bounds() {
        let mut buf = [0u8; 40];
        let tag = FrameTag {
            frame: 3,
            index: 1,
            count: 2,
        };
        tag.write(&mut buf);
        assert_eq!(&buf[16..28], b"\0\0\0\x03\0\0\0\x01\0\0\0\x02");
        assert_eq!(FrameTag::read(&buf), Ok(tag));
        assert!(FrameTag::read(&buf[..27]).is_err());
        for (frame, index, count) in [(0, 0, 1), (1, 2, 2), (1, 0, 0)] {
            FrameTag {
                frame,
                index,
                count,
            }
            .write(&mut buf);
            assert_eq!(FrameTag::read(&buf), Err(WireError::BadFrameTag));
        }
    }

    const COOKIE: Cookie = *b"0123456789abcdef";

    #[test]
    fn stream_hello_bytes() {
        let hello = StreamHello {
            stream_id: 3,
            cookie: COOKIE,
        };
        let bytes = hello.encode();
        assert_eq!(&bytes[..8], b"PPT1\0\0\0\x03");
        assert_eq!(StreamHello::decode(&bytes), Ok(hello));
        assert_eq!(
            StreamHello::decode(b"GET / HTTP/1.1\r\nHost: xx"),
            Err(WireError::BadMagic)
        );
        assert!(matches!(
            StreamHello::decode(&bytes[..10]),
            Err(WireError::Truncated { got: 10, .. })
        ));
    }

    #[test]
    fn udp_control_round_trip() {
        for msg in [
            UdpControl::Hello {
                stream_id: 1,
                cookie: COOKIE,
            },
            UdpControl::HelloAck {
                stream_id: 7,
                cookie: COOKIE,
            },
            UdpControl::Fin {
                stream_id: 2,
                packets: 1 << 40,
            },
            UdpControl::Challenge {
                stream_id: 3,
                nonce: [9; 16],
            },
            UdpControl::Confirm {
                stream_id: 3,
                cookie: COOKIE,
                nonce: [9; 16],
            },
        ] {
            let bytes = msg.encode();
            assert!(UdpControl::is_control(&bytes));
            assert_eq!(UdpControl::decode(&bytes), Ok(msg));
        }
        let fin = UdpControl::Fin {
            stream_id: 2,
            packets: 5,
        }
        .encode();
        assert_eq!(fin, b"PPU1\x03\0\0\0\0\0\0\x02\0\0\0\0\0\0\0\x05");
        assert_eq!(
            UdpControl::decode(b"PPU1\x09\0\0\0\0\0\0\x01"),
            Err(WireError::BadKind(9))
        );
        assert!(UdpControl::decode(b"PPU1\x01\0\0\0\0\0\0\x01short").is_err());
    }

    #[test]
    fn a_challenge_is_no_larger_than_the_hello_it_answers() {
        let hello = UdpControl::Hello {
            stream_id: 1,
            cookie: COOKIE,
        }
        .encode();
        let challenge = UdpControl::Challenge {
            stream_id: 1,
            nonce: [0xab; 16],
        }
        .encode();
        assert_eq!(challenge.len(), hello.len());
        assert_eq!(&challenge[..12], b"PPU1\x04\0\0\0\0\0\0\x01");
        assert_eq!(&challenge[12..], &[0xab; 16]);
        let confirm = UdpControl::Confirm {
            stream_id: 1,
            cookie: COOKIE,
            nonce: [0xab; 16],
        }
        .encode();
        assert_eq!(confirm.len(), 44);
        assert_eq!(&confirm[12..28], &COOKIE);
        // A confirm cut short is not a confirm.
        assert!(UdpControl::decode(&confirm[..43]).is_err());
    }

    #[test]
    fn data_header_round_trip_and_is_not_control() {
        let mut buf = [0u8; 64];
        let h = DataHeader {
            seq: 42,
            sent: Duration::new(7, 250),
        };
        h.write(&mut buf);
        assert_eq!(&buf[..16], b"\0\0\0\0\0\0\0\x2a\0\0\0\x07\0\0\0\xfa");
        assert_eq!(DataHeader::read(&buf), Ok(h));
        assert!(!UdpControl::is_control(&buf));
        assert!(DataHeader::read(&buf[..15]).is_err());
    }
}

/// How data datagrams are laid out: perfpeer's own format, or a stock tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatagramFormat {
    /// [`DataHeader`]; the sender ends with [`UdpControl::Fin`].
    #[default]
    Perfpeer,
    /// iperf3: seconds (u32 BE), microseconds (u32 BE), counter (u32 or u64 BE) from 1; the end
    /// is signalled on the control connection only.
    Iperf3 {
        /// 64-bit counter (`udp_counters_64bit`).
        counter64: bool,
    },
    /// iperf2: id low 32 bits, wall-clock seconds, microseconds, id high 32 bits (BE), the test
    /// header at offset 16; a negative id is the sender's fin.
    Iperf2 {
        /// 64-bit ids (HEADER_SEQNO64B).
        seq64: bool,
    },
    /// ttcp: no header at all; datagrams of at most 4 bytes start and end the stream.
    Ttcp,
}

/// What a received datagram is, in a given [`DatagramFormat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datagram {
    /// Data with its sequence number and send time (ttcp: no number, no time).
    Data {
        /// Sequence number (from 1), if the format has one.
        seq: Option<u64>,
        /// Send time on the sender's clock, if the format has one.
        sent: Option<Duration>,
    },
    /// The sender is done; it may say how many datagrams it sent.
    End {
        /// Datagrams sent, if known.
        packets: Option<u64>,
    },
    /// Not data (a repeated hello, a ttcp start sentinel, a runt).
    Other,
}

/// `t`'s seconds (the low 32 bits) and microseconds, as iperf's datagrams and headers carry
/// a time.
#[allow(
    clippy::cast_possible_truncation,
    reason = "wall-clock seconds in 32 bits, as iperf's datagrams carry them (until 2106)"
)]
pub(crate) fn split_time(t: Duration) -> (u32, u32) {
    (t.as_secs() as u32, t.subsec_micros())
}

impl DatagramFormat {
    /// Whether the end datagram is also the last datagram of data: iperf 2's fin is a
    /// full-size datagram numbered one past the last, and its receivers count it (a stock
    /// server reports 71 datagrams for 70 and the fin).
    pub fn fin_is_data(self) -> bool {
        matches!(self, DatagramFormat::Iperf2 { .. })
    }

    /// Whether data datagrams carry the sender's wall-clock time (iperf 2's), so their one-way
    /// delay can be read against the receiver's wall clock.
    pub fn stamps_wall_clock(self) -> bool {
        matches!(self, DatagramFormat::Iperf2 { .. })
    }

    /// Whether senders in this format can mark video frames and stamp TCP writes with their
    /// wall-clock time (perfpeer's and iperf 2's; iperf3's and ttcp's cannot).
    pub fn marks_frames(self) -> bool {
        matches!(
            self,
            DatagramFormat::Perfpeer | DatagramFormat::Iperf2 { .. }
        )
    }

    /// The send time an iperf 2 fin carries, where its data datagrams carry theirs.
    pub fn fin_sent(self, buf: &[u8]) -> Option<Duration> {
        (self.fin_is_data() && buf.len() >= self.min_len()).then(|| time_at(buf, 4))
    }

    /// Smallest datagram that can carry this format's header.
    pub fn min_len(self) -> usize {
        match self {
            DatagramFormat::Perfpeer => DATA_HEADER_LEN,
            DatagramFormat::Iperf3 { counter64: false } => 12,
            DatagramFormat::Iperf3 { counter64: true } => 16,
            DatagramFormat::Iperf2 { .. } => 16,
            DatagramFormat::Ttcp => 5,
        }
    }

    /// Writes the header of data datagram `seq` into `buf`. `mono` is the sender's monotonic
    /// time, `wall` the time since the Unix epoch (iperf2 puts wall-clock time on the wire).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "iperf and ttcp datagrams carry a 32-bit sequence number where we keep 64: the low word is the wire value"
    )]
    pub fn write_data(self, buf: &mut [u8], seq: u64, mono: Duration, wall: Duration) {
        match self {
            DatagramFormat::Perfpeer => DataHeader { seq, sent: mono }.write(buf),
            DatagramFormat::Iperf3 { counter64 } => {
                let (s, us) = split_time(mono);
                buf[0..4].copy_from_slice(&s.to_be_bytes());
                buf[4..8].copy_from_slice(&us.to_be_bytes());
                if counter64 {
                    buf[8..16].copy_from_slice(&seq.to_be_bytes());
                } else {
                    buf[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
                }
            }
            DatagramFormat::Iperf2 { .. } => {
                let (s, us) = split_time(wall);
                buf[0..4].copy_from_slice(&(seq as u32).to_be_bytes());
                buf[4..8].copy_from_slice(&s.to_be_bytes());
                buf[8..12].copy_from_slice(&us.to_be_bytes());
                buf[12..16].copy_from_slice(&((seq >> 32) as u32).to_be_bytes());
            }
            DatagramFormat::Ttcp => {}
        }
    }

    /// Where a received data datagram sits in a video-like frame, and how its frames are
    /// judged: perfpeer's tag in a video test (`video_period_s`, from its spec), iperf 2's
    /// isochronous mark (which says its period itself) in any iperf 2 flow.
    pub fn frame_of(self, buf: &[u8], video_period_s: Option<f64>) -> Option<FrameMark> {
        match self {
            DatagramFormat::Perfpeer => Some(FrameMark {
                tag: FrameTag::read(buf).ok()?,
                period_s: video_period_s?,
                last_may_be_cut: false,
            }),
            DatagramFormat::Iperf2 { .. } => {
                crate::iperf2::IsochMark::read(buf).map(|m| FrameMark {
                    tag: m.frame_tag(buf.len()),
                    period_s: f64::from(m.period_us) / 1e6,
                    last_may_be_cut: true,
                })
            }
            _ => None,
        }
    }

    /// Marks a video datagram's place in its frame: perfpeer's tag, or iperf 2's isochronous
    /// mark (the frame's bytes and what is left of them from this datagram on, the period
    /// and the frames' start on the sender's wall clock).
    pub fn write_frame(self, buf: &mut [u8], tag: FrameTag, place: FramePlace) {
        match self {
            DatagramFormat::Iperf2 { .. } => crate::iperf2::IsochMark {
                period_us: place.period_us,
                start: place.start,
                prev_frame: tag.frame - 1,
                frame: tag.frame,
                frame_bytes: place.frame_bytes,
                remaining: place.remaining,
            }
            .write(buf),
            _ => tag.write(buf),
        }
    }

    /// Stamps a TCP write of `len` bytes (`buf`: at least the stamp) with its number `seq`
    /// and its wall-clock send time, for `--trip-times`: perfpeer's [`DataHeader`], or iperf
    /// 2's [`crate::iperf2::TcpStamp`] (which says the write's length and, with it, the test's
    /// `start`).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "iperf 2's write numbers and lengths are 32-bit words: a write is at most 1 MiB, the number wraps as iperf 2's does"
    )]
    pub fn write_stamp(
        self,
        buf: &mut [u8],
        (seq, len): (u64, usize),
        sent: Duration,
        start: Duration,
    ) {
        match self {
            DatagramFormat::Iperf2 { .. } => crate::iperf2::TcpStamp {
                sent,
                id: seq as u32,
                size: len as u32,
            }
            .write(start, buf),
            _ => DataHeader { seq, sent }.write(buf),
        }
    }

    /// Smallest datagram of a video frame in this format: the header and the frame's tag (or
    /// iperf 2's test header, its isochronous block and start time).
    pub fn min_frame_len(self) -> usize {
        match self {
            DatagramFormat::Iperf2 { .. } => crate::iperf2::UDP_TRIP_TIMES_LEN,
            _ => DATA_HEADER_LEN + FRAME_TAG_LEN,
        }
    }

    /// Reads a received datagram.
    #[allow(
        clippy::cast_possible_wrap,
        clippy::cast_sign_loss,
        reason = "iperf's 32-bit sequence numbers are signed on the wire (a negative one is a fin): the bits are the value"
    )]
    pub fn classify(self, buf: &[u8]) -> Datagram {
        let time = |sec_at: usize| Some(time_at(buf, sec_at));
        match self {
            DatagramFormat::Perfpeer if UdpControl::is_control(buf) => {
                match UdpControl::decode(buf) {
                    Ok(UdpControl::Fin { packets, .. }) => Datagram::End {
                        packets: Some(packets),
                    },
                    _ => Datagram::Other,
                }
            }
            DatagramFormat::Perfpeer => match DataHeader::read(buf) {
                Ok(h) => Datagram::Data {
                    seq: Some(h.seq),
                    sent: Some(h.sent),
                },
                Err(_) => Datagram::Other,
            },
            _ if buf.len() < self.min_len() => match self {
                DatagramFormat::Ttcp => Datagram::End { packets: None },
                _ => Datagram::Other,
            },
            DatagramFormat::Iperf3 { counter64 } => {
                let seq = if counter64 {
                    u64_at(buf, 8)
                } else {
                    u64::from(u32_at(buf, 8))
                };
                Datagram::Data {
                    seq: Some(seq),
                    sent: time(0),
                }
            }
            DatagramFormat::Iperf2 { seq64 } => {
                let id = if seq64 {
                    (i64::from(u32_at(buf, 12)) << 32) | i64::from(u32_at(buf, 0))
                } else {
                    i64::from(u32_at(buf, 0) as i32)
                };
                if id < 0 {
                    // The fin carries −(last id + 1).
                    Datagram::End {
                        packets: Some(id.unsigned_abs().saturating_sub(1)),
                    }
                } else {
                    Datagram::Data {
                        seq: Some(id as u64),
                        sent: time(4),
                    }
                }
            }
            DatagramFormat::Ttcp => Datagram::Data {
                seq: None,
                sent: None,
            },
        }
    }
}

/// A cookie as 32 lowercase hex digits (its form in control messages).
pub fn cookie_to_hex(cookie: &Cookie) -> String {
    cookie.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a cookie from 32 hex digits.
pub fn cookie_from_hex(text: &str) -> Option<Cookie> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A fresh random cookie.
pub fn random_cookie() -> Cookie {
    let mut cookie = [0u8; 16];
    getrandom::fill(&mut cookie).expect("the OS random source is available");
    cookie
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn iperf3_datagram_bytes() {
        let mut buf = [0u8; 16];
        let f = DatagramFormat::Iperf3 { counter64: false };
        f.write_data(&mut buf, 5, Duration::new(3, 250_000), Duration::ZERO);
        assert_eq!(&buf[..12], b"\0\0\0\x03\0\0\x00\xfa\0\0\0\x05");
        assert_eq!(
            f.classify(&buf),
            Datagram::Data {
                seq: Some(5),
                sent: Some(Duration::new(3, 250_000))
            }
        );
        let f64 = DatagramFormat::Iperf3 { counter64: true };
        f64.write_data(&mut buf, 1 << 33, Duration::ZERO, Duration::ZERO);
        assert_eq!(&buf[8..16], b"\0\0\0\x02\0\0\0\0");
        assert!(matches!(f64.classify(&buf), Datagram::Data { seq: Some(s), .. } if s == 1 << 33));
        assert_eq!(f.classify(&buf[..8]), Datagram::Other);
    }

    #[test]
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a test building a negative 32-bit fin id from its bits"
    )]
    fn iperf2_datagram_bytes_and_fin() {
        let mut buf = [0u8; 76];
        let f = DatagramFormat::Iperf2 { seq64: true };
        f.write_data(
            &mut buf,
            7,
            Duration::ZERO,
            Duration::new(1_700_000_000, 5_000),
        );
        assert_eq!(&buf[..4], b"\0\0\0\x07");
        assert_eq!(&buf[4..8], &1_700_000_000u32.to_be_bytes());
        assert_eq!(&buf[8..12], &5u32.to_be_bytes());
        assert!(matches!(
            f.classify(&buf),
            Datagram::Data { seq: Some(7), .. }
        ));
        // The fin after datagram 7 carries id −8: both halves of the 64-bit two's complement.
        let fin = (-8i64) as u64;
        buf[..4].copy_from_slice(&(fin as u32).to_be_bytes());
        buf[12..16].copy_from_slice(&((fin >> 32) as u32).to_be_bytes());
        assert_eq!(f.classify(&buf), Datagram::End { packets: Some(7) });
        assert!(f.fin_is_data());
        assert!(!DatagramFormat::Iperf3 { counter64: false }.fin_is_data());
        // A 32-bit peer only looks at the low word.
        assert_eq!(
            DatagramFormat::Iperf2 { seq64: false }.classify(&buf),
            Datagram::End { packets: Some(7) }
        );
    }

    #[test]
    fn ttcp_sentinels_and_data() {
        let f = DatagramFormat::Ttcp;
        assert_eq!(f.classify(b"abcd"), Datagram::End { packets: None });
        assert_eq!(
            f.classify(b"abcdefgh"),
            Datagram::Data {
                seq: None,
                sent: None
            }
        );
    }

    #[test]
    fn perfpeer_format_matches_its_codecs() {
        let f = DatagramFormat::Perfpeer;
        let mut buf = [0u8; 32];
        f.write_data(&mut buf, 9, Duration::new(1, 2), Duration::ZERO);
        assert_eq!(
            f.classify(&buf),
            Datagram::Data {
                seq: Some(9),
                sent: Some(Duration::new(1, 2))
            }
        );
        let fin = UdpControl::Fin {
            stream_id: 1,
            packets: 9,
        }
        .encode();
        assert_eq!(f.classify(&fin), Datagram::End { packets: Some(9) });
        let hello = UdpControl::Hello {
            stream_id: 1,
            cookie: [0; 16],
        }
        .encode();
        assert_eq!(f.classify(&hello), Datagram::Other);
    }
}

#[cfg(test)]
mod hex_tests {
    use super::*;

    #[test]
    fn cookie_hex_round_trip() {
        let c = *b"\x00\x01\xfe\xff0123456789ab";
        let hex = cookie_to_hex(&c);
        assert_eq!(&hex[..8], "0001feff");
        assert_eq!(cookie_from_hex(&hex), Some(c));
        assert_eq!(cookie_from_hex("zz"), None);
        assert_eq!(cookie_from_hex(&"g".repeat(32)), None);
        assert_ne!(random_cookie(), random_cookie());
    }
}
