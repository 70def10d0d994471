//! iperf2's header, ack and server report as pure encode/decode functions, tested with the
//! bytes Debian's iperf 2.1.8 sends.

use std::time::Duration;

use crate::wire::FrameTag;

/// iperf2's default port (TCP and UDP).
pub const DEFAULT_PORT: u16 = 5001;
/// Length of the TCP test header a 2.1 client sends.
pub const TCP_HEADER_LEN: usize = 60;
/// Offset of the test header inside each UDP datagram.
pub const UDP_HEADER_AT: usize = 16;
/// Length of the server's header ack.
pub const ACK_LEN: usize = 28;
/// Length of a UDP datagram's headers when the client asks for trip-times: the datagram header,
/// the test header, iperf 2's isochronous block and the test's start time.
pub const UDP_TRIP_TIMES_LEN: usize = 128;
/// Where a UDP datagram carries the test's start time (trip-times).
const UDP_START_TIME_AT: usize = 112;
/// Length of the UDP datagram header and the test header as the flags count them for
/// trip-times (the start time follows, uncounted, as 2.1 sends it).
const UDP_TRIP_TIMES_COUNTED: u32 = 108;
/// Length of the UDP server report datagram.
pub const REPORT_LEN: usize = 128;

/// Header flag bits (first word).
pub mod flags {
    /// Legacy dual (-d) / tradeoff (-r) test: the server would connect back.
    pub const VERSION1: u32 = 0x8000_0000;
    /// Extended header present.
    pub const EXTEND: u32 = 0x4000_0000;
    /// UDP: 64-bit sequence numbers.
    pub const SEQNO64B: u32 = 0x0800_0000;
    /// 2.0.14+ reverse/full-duplex/peer-detect.
    pub const VERSION2: u32 = 0x0400_0000;
    /// The client wants the ack (`-X`).
    pub const V2PEERDETECT: u32 = 0x0200_0000;
    /// Bounce-back test (a different header: [`super::BounceBack`]).
    pub const BOUNCEBACK: u32 = 0x0080_0000;
    /// UDP: settings travel in every datagram (isochronous, trip-times, no fin).
    pub const UDPTESTS: u32 = 0x2000_0000;
    /// Permit key present (`--permit-key`).
    pub const KEYCHECK: u32 = 0x1000_0000;
    /// UDP trip-times with a datagram too small for the full header.
    pub const SMALL_TRIPTIMES: u32 = 0x0002_0000;
    /// The server report has the latency extension (same bit as EXTEND).
    pub const SERVER_EXTEND: u32 = 0x4000_0000;
    /// Bits 1..8 carry the header length.
    pub const LEN_BIT: u32 = 0x0001_0000;
    /// Mask of the length field.
    pub const LEN_MASK: u32 = 0x0000_01FE;
}

/// Upper-flag bits (u16 at offset 32 of the header).
pub mod upper {
    /// The server sends (`-R`).
    pub const REVERSE: u16 = 0x0400;
    /// Both send (`--full-duplex`).
    pub const FULLDUPLEX: u16 = 0x0800;
    /// Frames of video-like sizes (`--isochronous`).
    pub const ISOCH: u16 = 0x0001;
    /// No final report wanted (`--no-udp-fin`).
    pub const NOUDPFIN: u16 = 0x0008;
    /// The client stamps its writes for one-way delays (`--trip-times`).
    pub const TRIPTIME: u16 = 0x0010;
    /// A start time on the wall clock follows (`--txstart-time`).
    pub const EPOCH_START: u16 = 0x1000;
}

/// Bounce-back flags (u16 at offset 12 of [`BounceBack`]'s bytes).
pub mod bb {
    /// The server should set TCP_QUICKACK.
    pub const QUICKACK: u16 = 0x8000;
    /// The client's clock is taken as synchronised with the server's (`--trip-times`).
    pub const CLOCK_SYNCED: u16 = 0x4000;
    /// The TOS field is set.
    pub const TOS: u16 = 0x2000;
    /// The client's last message: no reply.
    pub const STOP: u16 = 0x1000;
}

/// Version words of the iperf2 we claim to be: 2.1.8 final.
const VERSION_U: u32 = 0x0002_0001;
const VERSION_L: u32 = 0x0008_0003;

/// Something an iperf2 peer sent that we cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Too short.
    #[error("truncated iperf2 {what}: {got} of {need} bytes")]
    Truncated {
        /// Which message.
        what: &'static str,
        /// Bytes present.
        got: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A header length outside 24..=256.
    #[error("iperf2 header length {0} is out of range")]
    BadLength(usize),
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf2's signed 32-bit fields travel as their two's-complement bits"
)]
fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at) as i32
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

/// How long a test runs, as the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// For this long (the wire has 10 ms units).
    Time(Duration),
    /// This many bytes.
    Bytes(u64),
}

/// The test header (the fields perfpeer uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Flag word.
    pub flags: u32,
    /// `-P`.
    pub threads: i32,
    /// Server port.
    pub port: i32,
    /// `-l` if given, else 0.
    pub buflen: i32,
    /// Test length.
    pub amount: Amount,
    /// Upper flags.
    pub upper: u16,
    /// `-b` in bit/s, if set.
    pub rate: Option<u64>,
    /// TOS.
    pub tos: u8,
}

impl Header {
    /// A 2.1-style header for a test of `amount` (`udp` sets the UDP flags).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the header length (60) fits its flag field"
    )]
    pub fn new(amount: Amount, threads: u16, port: u16, udp: bool) -> Header {
        let base = if udp {
            flags::SEQNO64B | flags::EXTEND | flags::LEN_BIT | (76 << 1)
        } else {
            flags::EXTEND | flags::LEN_BIT | ((TCP_HEADER_LEN as u32) << 1)
        };
        Header {
            flags: base,
            threads: i32::from(threads),
            port: i32::from(port),
            buflen: 0,
            amount,
            upper: 0,
            rate: None,
            tos: 0,
        }
    }

    /// Asks the server to send (`-R`): a version-2 header with the REVERSE flag.
    pub fn reverse(mut self) -> Header {
        self.flags |= flags::VERSION2;
        self.upper |= upper::REVERSE;
        self
    }

    /// Asks the server to send too, on the same connection (`--full-duplex`): a version-2
    /// header with the FULLDUPLEX flag.
    pub fn full_duplex(mut self) -> Header {
        self.flags |= flags::VERSION2;
        self.upper |= upper::FULLDUPLEX;
        self
    }

    /// Asks for one-way delays (UDP `--trip-times`): the flags a 2.1 client sends; the datagram
    /// then carries the start time ([`put_udp_start_time`]).
    pub fn with_trip_times(mut self) -> Header {
        self.flags = (self.flags & !flags::LEN_MASK)
            | flags::UDPTESTS
            | flags::EXTEND
            | flags::LEN_BIT
            | (UDP_TRIP_TIMES_COUNTED << 1);
        self.upper |= upper::TRIPTIME;
        self
    }

    /// Says the UDP datagrams carry video frames (`--isochronous`): the ISOCH upper flag,
    /// which a 2.1 server reads in each datagram with its [`IsochMark`], and the header's
    /// length through that block, as a 2.1 client counts it.
    pub fn isochronous(mut self) -> Header {
        self.flags = (self.flags & !flags::LEN_MASK)
            | flags::UDPTESTS
            | flags::EXTEND
            | flags::LEN_BIT
            | (UDP_TRIP_TIMES_COUNTED << 1);
        self.upper |= upper::ISOCH;
        self
    }

    /// Asks for one-way delays of TCP writes (`--trip-times`): a 2.1 client's 80-byte header
    /// ([`Header::encode_with_start`]), each write then stamped ([`TcpStamp`]).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the header length (80) fits its flag field"
    )]
    pub fn with_tcp_trip_times(mut self) -> Header {
        self.flags = (self.flags & !flags::LEN_MASK)
            | flags::EXTEND
            | flags::LEN_BIT
            | ((TCP_TRIP_TIMES_HEADER_LEN as u32) << 1);
        self.upper |= upper::TRIPTIME;
        self
    }

    /// The header a 2.1 server sends first on a reverse `--trip-times` stream, before its
    /// stamped writes: the client's own, no longer asking for a reverse test (the client reads
    /// the server's start time from it).
    pub fn reverse_reply(mut self) -> Header {
        self.flags &= !flags::VERSION2;
        self.upper &= !upper::REVERSE;
        self
    }

    /// The 80 bytes of a TCP `--trip-times` header: the 60 of [`Header::encode`] and the start
    /// time of the test (the sender's wall clock).
    pub fn encode_with_start(&self, start: Duration) -> [u8; TCP_TRIP_TIMES_HEADER_LEN] {
        let mut b = [0u8; TCP_TRIP_TIMES_HEADER_LEN];
        b[..TCP_HEADER_LEN].copy_from_slice(&self.encode());
        put_time(&mut b, TCP_HEADER_LEN + 4, start);
        b
    }

    /// The 60 header bytes.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "iperf2's header has 32-bit fields: the amount is clamped first, the rate is split into its low word and its high bits as iperf2 splits it"
    )]
    pub fn encode(&self) -> [u8; TCP_HEADER_LEN] {
        let mut b = [0u8; TCP_HEADER_LEN];
        let amount = match self.amount {
            Amount::Time(d) => -((d.as_millis() / 10).min(i32::MAX as u128) as i32),
            Amount::Bytes(n) => (n & 0x7FFF_FFFF) as i32,
        };
        b[0..4].copy_from_slice(&self.flags.to_be_bytes());
        b[4..8].copy_from_slice(&self.threads.to_be_bytes());
        b[8..12].copy_from_slice(&self.port.to_be_bytes());
        b[12..16].copy_from_slice(&self.buflen.to_be_bytes());
        b[20..24].copy_from_slice(&amount.to_be_bytes());
        b[32..34].copy_from_slice(&self.upper.to_be_bytes());
        b[36..40].copy_from_slice(&VERSION_U.to_be_bytes());
        b[40..44].copy_from_slice(&VERSION_L.to_be_bytes());
        b[46..48].copy_from_slice(&u16::from(self.tos).to_be_bytes());
        if let Some(rate) = self.rate {
            b[48..52].copy_from_slice(&(rate as u32).to_be_bytes());
            b[52..56].copy_from_slice(&(((rate >> 32) as u32) << 8).to_be_bytes());
        }
        b
    }

    /// How long the whole header is, from its first word; `None` for a plain data stream
    /// (no header: `-C` clients, ttcp).
    pub fn length_from_flags(word: u32) -> Result<Option<usize>, CodecError> {
        if word & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND) == 0 {
            return Ok(None);
        }
        let len = if word & flags::LEN_BIT != 0 {
            ((word & flags::LEN_MASK) >> 1) as usize
        } else {
            let v1 = if word & (flags::VERSION1 | flags::EXTEND) != 0 {
                24
            } else {
                0
            };
            let v2 = if word & (flags::VERSION2 | flags::EXTEND) != 0 {
                36
            } else {
                0
            };
            v1 + v2
        };
        if !(24..=256).contains(&len) {
            return Err(CodecError::BadLength(len));
        }
        Ok(Some(len))
    }

    /// Reads a header from its bytes (at least 24; the extended fields when present).
    #[allow(
        clippy::cast_sign_loss,
        reason = "a non-negative amount (checked by the branch) is a byte count"
    )]
    pub fn decode(b: &[u8]) -> Result<Header, CodecError> {
        if b.len() < 24 {
            return Err(CodecError::Truncated {
                what: "header",
                got: b.len(),
                need: 24,
            });
        }
        let raw_amount = i32_at(b, 20);
        let amount = if raw_amount < 0 {
            Amount::Time(Duration::from_millis(
                u64::from(raw_amount.unsigned_abs()) * 10,
            ))
        } else {
            Amount::Bytes(raw_amount as u64)
        };
        let extended = b.len() >= TCP_HEADER_LEN;
        let rate = (extended && u32_at(b, 48) != 0)
            .then(|| u64::from(u32_at(b, 48)) | (u64::from(u32_at(b, 52) >> 8) << 32));
        Ok(Header {
            flags: u32_at(b, 0),
            threads: i32_at(b, 4),
            port: i32_at(b, 8),
            buflen: i32_at(b, 12),
            amount,
            upper: if extended { u16_at(b, 32) } else { 0 },
            rate,
            tos: if extended { b[47] } else { 0 },
        })
    }

    /// A legacy dual/tradeoff test (the server would connect back to the client).
    pub fn wants_connect_back(&self) -> bool {
        self.flags & flags::VERSION1 != 0 && self.flags & flags::VERSION2 == 0
    }

    /// The server sends on this stream.
    pub fn is_reverse(&self) -> bool {
        self.flags & flags::VERSION2 != 0 && self.upper & upper::REVERSE != 0
    }

    /// Both send on this stream.
    pub fn is_full_duplex(&self) -> bool {
        self.flags & flags::VERSION2 != 0 && self.upper & upper::FULLDUPLEX != 0
    }

    /// The client stamps its datagrams or writes for one-way delays (`--trip-times`).
    pub fn wants_trip_times(&self) -> bool {
        self.flags & flags::EXTEND != 0 && self.upper & upper::TRIPTIME != 0
    }

    /// Whether a 2.1 server acks this header.
    pub fn wants_ack(&self) -> bool {
        (self.flags & flags::EXTEND != 0 && self.flags & flags::VERSION2 == 0)
            || self.flags & flags::V2PEERDETECT != 0
    }
}

/// The 28-byte ack a server sends after a header.
#[allow(
    clippy::cast_possible_truncation,
    reason = "the ack length (28) fits its 32-bit field"
)]
pub fn ack() -> [u8; ACK_LEN] {
    let mut b = [0u8; ACK_LEN];
    b[0..4].copy_from_slice(&2u32.to_be_bytes());
    b[4..8].copy_from_slice(&(ACK_LEN as u32).to_be_bytes());
    b[12..16].copy_from_slice(&VERSION_U.to_be_bytes());
    b[16..20].copy_from_slice(&VERSION_L.to_be_bytes());
    b
}

/// The UDP server report ("AckFIN").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerReport {
    /// Bytes received.
    pub bytes: u64,
    /// Test duration at the server.
    pub duration: Duration,
    /// Lost datagrams.
    pub lost: u64,
    /// Out-of-order datagrams.
    pub out_of_order: u64,
    /// Datagrams expected (highest sequence number).
    pub datagrams: u64,
    /// Jitter.
    pub jitter: Duration,
    /// One-way delays, when the client asked for them (`--trip-times`).
    pub transit: Option<TransitReport>,
}

/// The latency extension of a UDP server report: what a 2.1 server measured of the datagrams'
/// one-way delays (`--trip-times`), each figure as whole seconds and microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransitReport {
    /// Smallest delay, s.
    pub min_s: f64,
    /// Largest delay, s.
    pub max_s: f64,
    /// Sum of the delays, s (the client's mean is sum / count).
    pub sum_s: f64,
    /// Mean delay, s.
    pub mean_s: f64,
    /// Welford's M2 of the delays, s² (the client's stdev is √(M2 / (count − 1))).
    pub m2_s2: f64,
    /// Delays measured.
    pub count: u32,
    /// Datagrams per second over the test.
    pub packets_per_second: u32,
}

/// A figure as iperf 2 splits it: its whole part and its millionths (rounded, where iperf 2
/// truncates: a figure that went through a unit change would lose one), each a 32-bit word
/// (the whole part wraps as the C cast does).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "iperf 2 casts a double to long and sends its low 32 bits: this is that cast"
)]
fn split_figure(x: f64) -> (u32, u32) {
    let whole = x.trunc();
    (
        (whole as i64) as u32,
        (((x - whole) * 1e6).round() as i64) as u32,
    )
}

/// The inverse of [`split_figure`], reading the words as signed (a negative delay stays one).
#[allow(
    clippy::cast_possible_wrap,
    reason = "the words are the two's-complement bits of iperf 2's signed parts"
)]
fn join_figure(whole: u32, millionths: u32) -> f64 {
    f64::from(whole as i32) + f64::from(millionths as i32) / 1e6
}

impl ServerReport {
    /// The 128 report bytes.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "iperf2's report splits 64-bit counts into a low and a high 32-bit word; the low word is the truncation"
    )]
    pub fn encode(&self) -> [u8; REPORT_LEN] {
        let mut b = [0u8; REPORT_LEN];
        let put = |b: &mut [u8; REPORT_LEN], at: usize, v: u32| {
            b[at..at + 4].copy_from_slice(&v.to_be_bytes())
        };
        put(&mut b, 16, flags::VERSION1 | flags::SEQNO64B);
        put(&mut b, 20, (self.bytes >> 32) as u32);
        put(&mut b, 24, self.bytes as u32);
        put(&mut b, 28, self.duration.as_secs() as u32);
        put(&mut b, 32, self.duration.subsec_micros());
        put(&mut b, 36, self.lost as u32);
        put(&mut b, 40, self.out_of_order as u32);
        put(&mut b, 44, self.datagrams as u32);
        put(&mut b, 48, self.jitter.as_secs() as u32);
        put(&mut b, 52, self.jitter.subsec_micros());
        if let Some(t) = &self.transit {
            put(
                &mut b,
                16,
                flags::VERSION1 | flags::SEQNO64B | flags::SERVER_EXTEND,
            );
            let figures = [t.min_s, t.max_s, t.sum_s, t.mean_s, t.m2_s2 * 1e12];
            for (i, x) in figures.into_iter().enumerate() {
                let (whole, millionths) = split_figure(x);
                put(&mut b, 56 + 8 * i, whole);
                put(&mut b, 60 + 8 * i, millionths);
            }
            put(&mut b, 104, t.count);
            put(&mut b, 108, t.packets_per_second);
            // The client divides the count by this "sum of gaps": one second.
            put(&mut b, 112, 1);
        }
        put(&mut b, 116, (self.lost >> 32) as u32);
        put(&mut b, 120, (self.out_of_order >> 32) as u32);
        put(&mut b, 124, (self.datagrams >> 32) as u32);
        b
    }

    /// Reads a report datagram.
    pub fn decode(b: &[u8]) -> Result<ServerReport, CodecError> {
        if b.len() < 56 {
            return Err(CodecError::Truncated {
                what: "server report",
                got: b.len(),
                need: 56,
            });
        }
        let wide = u32_at(b, 16) & flags::SEQNO64B != 0 && b.len() >= REPORT_LEN;
        let pair = |lo_at: usize, hi_at: usize| {
            u64::from(u32_at(b, lo_at))
                | if wide {
                    u64::from(u32_at(b, hi_at)) << 32
                } else {
                    0
                }
        };
        let time = |at: usize| {
            Duration::new(
                u64::from(u32_at(b, at)),
                u32_at(b, at + 4).min(999_999) * 1000,
            )
        };
        let transit = (u32_at(b, 16) & flags::SERVER_EXTEND != 0 && b.len() >= 116).then(|| {
            let figure = |i: usize| join_figure(u32_at(b, 56 + 8 * i), u32_at(b, 60 + 8 * i));
            let gaps = u32_at(b, 112).max(1);
            TransitReport {
                min_s: figure(0),
                max_s: figure(1),
                sum_s: figure(2),
                mean_s: figure(3),
                // M2 is never negative: its words are read unsigned, as a 2.1 client reads them.
                m2_s2: (f64::from(u32_at(b, 88)) + f64::from(u32_at(b, 92)) / 1e6) * 1e-12,
                count: u32_at(b, 104),
                packets_per_second: u32_at(b, 108) / gaps,
            }
        });
        Ok(ServerReport {
            transit,
            bytes: (u64::from(u32_at(b, 20)) << 32) | u64::from(u32_at(b, 24)),
            duration: time(28),
            lost: pair(36, 116),
            out_of_order: pair(40, 120),
            datagrams: pair(44, 124),
            jitter: time(48),
        })
    }
}

/// Bytes of a bounce-back message a 2.1 server reads before the payload: the flag word and the
/// 60-byte bounce-back header (a 2.1 server refuses shorter messages).
pub const BOUNCEBACK_MIN: usize = 64;
/// Bytes up to the end of the size field: a shorter message cannot be answered. Messages
/// shorter than [`BOUNCEBACK_MIN`] are answered with the fields and stamps that fit.
pub const BOUNCEBACK_SMALLEST: usize = 8;

/// The bounce-back header at the start of each request of a `--bounceback` test; the server
/// stamps its read and write times into it and sends the whole message back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BounceBack {
    /// Bytes of each request and each reply (the header included).
    pub size: u32,
    /// Running number of the request.
    pub id: u32,
    /// [`bb`] flags.
    pub bb_flags: u16,
    /// TOS the server should reply with (when [`bb::TOS`] is set).
    pub tos: u16,
    /// Delay the server should hold each reply, µs (`--bounceback-hold`). A field the message
    /// is too short to carry reads 0.
    pub hold_us: u32,
}

impl BounceBack {
    /// Whether a connection's first word opens a bounce-back test (checked before any other
    /// header, as a 2.1 server does).
    pub fn opens(word: u32) -> bool {
        word & flags::BOUNCEBACK != 0
    }

    /// Reads the header from a message's first bytes (at least [`BOUNCEBACK_SMALLEST`]), as many
    /// as the message has, up to [`BOUNCEBACK_MIN`].
    pub fn decode(b: &[u8]) -> Result<BounceBack, CodecError> {
        if b.len() < BOUNCEBACK_SMALLEST {
            return Err(CodecError::Truncated {
                what: "bounce-back header",
                got: b.len(),
                need: BOUNCEBACK_SMALLEST,
            });
        }
        let has = |end: usize| b.len() >= end;
        Ok(BounceBack {
            size: u32_at(b, 4),
            id: if has(12) { u32_at(b, 8) } else { 0 },
            bb_flags: if has(14) { u16_at(b, 12) } else { 0 },
            tos: if has(16) { u16_at(b, 14) } else { 0 },
            hold_us: if has(48) { u32_at(b, 44) } else { 0 },
        })
    }

    /// Writes the header of request `self.id` sent at `sent` (wall clock) into `buf` (at least
    /// [`BOUNCEBACK_MIN`] bytes); the server's times are left unset (all ones), as 2.1 does.
    pub fn encode(&self, sent: Duration, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&flags::BOUNCEBACK.to_be_bytes());
        buf[4..8].copy_from_slice(&self.size.to_be_bytes());
        buf[8..12].copy_from_slice(&self.id.to_be_bytes());
        buf[12..14].copy_from_slice(&self.bb_flags.to_be_bytes());
        buf[14..16].copy_from_slice(&self.tos.to_be_bytes());
        buf[16..20].fill(0);
        put_time(buf, 20, sent);
        buf[28..44].fill(0xFF);
        buf[44..48].copy_from_slice(&self.hold_us.to_be_bytes());
    }

    /// Stamps the server's read time of a request into its bytes (if they have room).
    pub fn stamp_read(buf: &mut [u8], wall: Duration) {
        if buf.len() >= 36 {
            put_time(buf, 28, wall);
        }
    }

    /// Stamps the server's write time of the reply into its bytes (if they have room).
    pub fn stamp_write(buf: &mut [u8], wall: Duration) {
        if buf.len() >= 44 {
            put_time(buf, 36, wall);
        }
    }

    /// The client's send time and the server's read and write times a reply carries.
    pub fn times(buf: &[u8]) -> Option<[Duration; 3]> {
        let time = |at: usize| {
            let (s, us) = (u32_at(buf, at), u32_at(buf, at + 4));
            (us < 1_000_000).then(|| Duration::new(u64::from(s), us * 1000))
        };
        (buf.len() >= BOUNCEBACK_MIN).then_some(())?;
        Some([time(20)?, time(28)?, time(36)?])
    }
}

/// Writes the test's start time (wall clock) into a UDP datagram of at least
/// [`UDP_TRIP_TIMES_LEN`] bytes, where a 2.1 server reads it to accept trip-times (it ignores
/// them when the time is not within a few seconds of its own clock).
pub fn put_udp_start_time(datagram: &mut [u8], start: Duration) {
    put_time(datagram, UDP_START_TIME_AT, start);
}

/// Where an `--isochronous` client's block sits in each UDP datagram: after the datagram
/// header (16 bytes), the test header (24) and its extension (36).
pub const ISOCH_AT: usize = 76;
/// The end of that block (eight u32: period, start time, previous and this frame's number,
/// the frame's bytes, the bytes left of it from this datagram on, a reserved word).
pub const ISOCH_END: usize = ISOCH_AT + 32;

/// A datagram's place in a video-like frame, as an iperf 2.1 `--isochronous` client marks
/// every UDP datagram (and its upper flags say ISOCH in each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsochMark {
    /// The frame period, µs.
    pub period_us: u32,
    /// When the sender's frames began (its wall clock).
    pub start: Duration,
    /// The frame before this one.
    pub prev_frame: u32,
    /// This datagram's frame, from 1 (the flow's first datagram, sent before the first frame,
    /// says 0).
    pub frame: u32,
    /// The frame's size, bytes.
    pub frame_bytes: u32,
    /// The frame's bytes from this datagram's first on: the frame's last datagram carries
    /// exactly its own length.
    pub remaining: u32,
}

impl IsochMark {
    /// Reads the mark of a frame's datagram: `None` for a datagram that carries none (too short,
    /// no ISOCH flag, frame 0, or sizes that do not fit together).
    pub fn read(datagram: &[u8]) -> Option<IsochMark> {
        if datagram.len() < ISOCH_END || u16_at(datagram, UDP_HEADER_AT + 32) & upper::ISOCH == 0 {
            return None;
        }
        let at = |k: usize| u32_at(datagram, ISOCH_AT + 4 * k);
        let micros = at(2);
        let mark = IsochMark {
            period_us: at(0),
            start: Duration::new(u64::from(at(1)), micros.min(999_999) * 1000),
            prev_frame: at(3),
            frame: at(4),
            frame_bytes: at(5),
            remaining: at(6),
        };
        (mark.frame > 0 && mark.period_us > 0 && (1..=mark.frame_bytes).contains(&mark.remaining))
            .then_some(mark)
    }

    /// Writes the mark into a datagram of at least [`ISOCH_END`] bytes (whose test header's
    /// upper flags say ISOCH).
    pub fn write(&self, datagram: &mut [u8]) {
        let (secs, micros) = crate::wire::split_time(self.start);
        let words = [
            self.period_us,
            secs,
            micros,
            self.prev_frame,
            self.frame,
            self.frame_bytes,
            self.remaining,
            0,
        ];
        for (k, w) in words.iter().enumerate() {
            let at = ISOCH_AT + 4 * k;
            datagram[at..at + 4].copy_from_slice(&w.to_be_bytes());
        }
    }

    /// The datagram's place as perfpeer's receivers count frames, from its own length `len`: a
    /// full-size datagram gives the frame's datagram count; the frame's last one, shorter,
    /// cannot, and says only that it is not the first — its frame completes only if an earlier
    /// datagram of it arrived and said how many to expect.
    pub fn frame_tag(&self, len: usize) -> FrameTag {
        let len = u32::try_from(len).unwrap_or(u32::MAX).max(1);
        let before = self.frame_bytes.saturating_sub(self.remaining);
        if self.remaining > len {
            let count = self.frame_bytes.div_ceil(len);
            FrameTag {
                frame: self.frame,
                index: (before / len).min(count - 1),
                count,
            }
        } else if before == 0 {
            FrameTag {
                frame: self.frame,
                index: 0,
                count: 1,
            }
        } else {
            FrameTag {
                frame: self.frame,
                index: u32::MAX - 1,
                count: u32::MAX,
            }
        }
    }
}

/// Bytes of the stamp an iperf 2.1 `--trip-times` TCP client puts at the start of each write
/// (its "burst" header): the server reads the write's size and wall-clock send time from it.
pub const TCP_STAMP_LEN: usize = 92;
/// Largest TCP write whose stamp a receiver believes (iperf 2's writes are at most a few MB).
const TCP_STAMP_MAX_WRITE: u32 = 1 << 30;

/// The stamp at the start of each write of an iperf 2.1 `--trip-times` TCP stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpStamp {
    /// The write's send time (the sender's wall clock).
    pub sent: Duration,
    /// The write's number, from 1.
    pub id: u32,
    /// The write's length, stamp included.
    pub size: u32,
}

impl TcpStamp {
    /// Reads a write's stamp ([`TCP_STAMP_LEN`] bytes); `None` when its size cannot be a write
    /// (shorter than the stamp, or beyond belief) or its time is not one.
    pub fn read(b: &[u8]) -> Option<TcpStamp> {
        if b.len() < TCP_STAMP_LEN {
            return None;
        }
        let size = u32_at(b, 48);
        let micros = u32_at(b, 24);
        let size_fits =
            usize::try_from(size).is_ok_and(|n| n >= TCP_STAMP_LEN) && size <= TCP_STAMP_MAX_WRITE;
        (size_fits && micros < 1_000_000).then(|| TcpStamp {
            sent: Duration::new(u64::from(u32_at(b, 20)), micros * 1000),
            id: u32_at(b, 44),
            size,
        })
    }

    /// Writes the stamp at the start of a write (`buf`: at least [`TCP_STAMP_LEN`] bytes) of a
    /// test that began at `start`, as a 2.1 client does (its write count in the sequence
    /// words too).
    pub fn write(&self, start: Duration, buf: &mut [u8]) {
        put_time(buf, 12, start);
        put_time(buf, 20, self.sent);
        buf[44..48].copy_from_slice(&self.id.to_be_bytes());
        buf[48..52].copy_from_slice(&self.size.to_be_bytes());
        buf[52..56].copy_from_slice(&self.id.to_be_bytes());
        buf[56..60].copy_from_slice(&0u32.to_be_bytes());
    }
}

/// Length of a 2.1 client's TCP test header when it asks for trip-times: the header and its
/// start-time block, whose time the server takes as the test's start.
pub const TCP_TRIP_TIMES_HEADER_LEN: usize = 80;

/// Writes `wall` as iperf 2's seconds and microseconds (u32 BE each) at `at`.
fn put_time(buf: &mut [u8], at: usize, wall: Duration) {
    let (secs, micros) = crate::wire::split_time(wall);
    buf[at..at + 4].copy_from_slice(&secs.to_be_bytes());
    buf[at + 4..at + 8].copy_from_slice(&micros.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 60 bytes Debian's iperf 2.1.8 sent for `iperf -c 127.0.0.1 -p 25001 -t 1 -l 1000`.
    const STOCK_TCP: &str = "4001007800000001000061a9000003e800000000ffffff9c00000000000000000000000000020001000800030000000000000000000000000000000000";
    /// … and with `-R` (port 25002).
    const STOCK_TCP_REVERSE: &str = "4401007800000001000061aa0000000000000000ffffff9c000000000000000004000000000200010008000300000000000000000000000000000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn stock_tcp_header_decodes() {
        let b = hex(STOCK_TCP);
        let word = u32_at(&b, 0);
        assert_eq!(Header::length_from_flags(word), Ok(Some(60)));
        let h = Header::decode(&b[..60]).unwrap();
        assert_eq!((h.threads, h.port, h.buflen), (1, 25001, 1000));
        assert_eq!(h.amount, Amount::Time(Duration::from_secs(1)));
        assert!(h.wants_ack() && !h.is_reverse() && !h.wants_connect_back());
        let r = Header::decode(&hex(STOCK_TCP_REVERSE)).unwrap();
        assert!(r.is_reverse() && !r.wants_ack());
    }

    #[test]
    fn our_header_matches_stock_bytes() {
        let mut h = Header::new(Amount::Time(Duration::from_secs(1)), 1, 25001, false);
        h.buflen = 1000;
        assert_eq!(h.encode().to_vec(), hex(STOCK_TCP)[..60].to_vec());
        let r = Header::new(Amount::Time(Duration::from_secs(1)), 1, 25002, false).reverse();
        assert_eq!(r.encode().to_vec(), hex(STOCK_TCP_REVERSE));
    }

    #[test]
    fn plain_streams_and_bad_lengths() {
        assert_eq!(
            Header::length_from_flags(0x3031_3233),
            Ok(None),
            "ASCII data is no header"
        );
        assert_eq!(
            Header::length_from_flags(flags::EXTEND | flags::LEN_BIT | (4 << 1)),
            Err(CodecError::BadLength(4))
        );
        assert_eq!(Header::length_from_flags(flags::VERSION1), Ok(Some(24)));
        assert!(Header::decode(&[0u8; 10]).is_err());
        let dual = Header::decode(&{
            let mut b = [0u8; 24];
            b[0] = 0x80;
            b
        })
        .unwrap();
        assert!(dual.wants_connect_back());
    }

    #[test]
    fn rate_and_bytes_amount() {
        let mut h = Header::new(Amount::Bytes(1_000_000), 2, 5001, true);
        h.rate = Some(5_000_000_000);
        let back = Header::decode(&h.encode()).unwrap();
        assert_eq!(back.amount, Amount::Bytes(1_000_000));
        assert_eq!(back.rate, Some(5_000_000_000));
        assert_eq!(h.flags, 0x4801_0098, "UDP flags as 2.1.8 sends them");
    }

    #[test]
    fn report_round_trip_and_ack() {
        let r = ServerReport {
            bytes: 660_030,
            duration: Duration::new(1, 2_900_000),
            lost: 3,
            out_of_order: 1,
            datagrams: 449,
            jitter: Duration::from_micros(6),
            transit: None,
        };
        let b = r.encode();
        assert_eq!(&b[16..20], &[0x88, 0, 0, 0]);
        assert_eq!(ServerReport::decode(&b), Ok(r));
        assert!(ServerReport::decode(&b[..40]).is_err());
        assert_eq!(&ack()[..8], &[0, 0, 0, 2, 0, 0, 0, 28]);
    }

    /// The report Debian's iperf 2.1.8 server sent for `iperf -c … -u --trip-times -t 1 -b 1M`
    /// (its client printed `0.186/0.090/0.473/0.080 ms 91 pps`).
    const STOCK_TRIP_TIMES_REPORT: &str = "00000000000000000000000000000000c80000000000000000021606000000010000527000000000000000000000005d0000000000000051000000000000005a00000000000001d900000000000043a400000000000000ba0008e48a0007e02100000000000000400000005d0000005b00000001000000000000000000000000";
    /// The first 100 bytes of `iperf -c … --bounceback --bounceback-hold 5 -S 0x20`.
    const STOCK_BOUNCEBACK: &str = "008000000000006400000001a0000020000000006b151e920004c87fffffffffffffffffffffffffffffffff000013885a5a5a5a5a5a5a5a5a5a5a5a30313233343536373839303132333435363738393031323334353637383930313233343536373839";

    #[test]
    fn stock_trip_times_report_decodes_and_encodes() {
        let b = hex(STOCK_TRIP_TIMES_REPORT);
        let r = ServerReport::decode(&b).unwrap();
        assert_eq!((r.bytes, r.datagrams, r.lost), (136_710, 93, 0));
        let t = r.transit.unwrap();
        assert_eq!((t.count, t.packets_per_second), (93, 91));
        assert!((t.min_s - 90e-6).abs() < 1e-9 && (t.max_s - 473e-6).abs() < 1e-9);
        assert!((t.sum_s / f64::from(t.count) * 1e3 - 0.186).abs() < 5e-4);
        let stdev_ms = (t.m2_s2 / f64::from(t.count - 1)).sqrt() * 1e3;
        assert!((stdev_ms - 0.080).abs() < 5e-4, "{stdev_ms}");
        // Ours carries the same words (iperf 2's vdTransit, which no client reads, stays 0).
        let mut ours = r.encode();
        ours[100..104].copy_from_slice(&b[100..104]);
        assert_eq!(ours.to_vec(), b);
    }

    #[test]
    fn stock_bounceback_header() {
        let b = hex(STOCK_BOUNCEBACK);
        assert!(BounceBack::opens(u32_at(&b, 0)));
        assert!(!BounceBack::opens(u32_at(&hex(STOCK_TCP), 0)));
        let h = BounceBack::decode(&b).unwrap();
        assert_eq!((h.size, h.id, h.tos, h.hold_us), (100, 1, 0x20, 5000));
        assert_eq!(h.bb_flags, bb::QUICKACK | bb::TOS);
        assert_eq!(BounceBack::times(&b), None, "the server's times are unset");
        let sent = Duration::new(0x6b15_1e92, 0x0004_c87f * 1000);
        let mut ours = vec![0x5A; 100];
        h.encode(sent, &mut ours);
        assert_eq!(ours[..48], b[..48]);
        BounceBack::stamp_read(&mut ours, Duration::from_secs(7));
        BounceBack::stamp_write(&mut ours, Duration::from_micros(7_000_010));
        assert_eq!(
            BounceBack::times(&ours),
            Some([
                sent,
                Duration::from_secs(7),
                Duration::from_micros(7_000_010)
            ])
        );
        let short = BounceBack::decode(&b[..40]).unwrap();
        assert_eq!(
            (short.size, short.hold_us),
            (100, 0),
            "a short message holds nothing"
        );
        assert_eq!(BounceBack::decode(&b[..10]).unwrap().bb_flags, 0);
        assert!(BounceBack::decode(&b[..7]).is_err());
    }

    /// The first 128 bytes of the first datagram of `iperf -c … -p 25041 -u --trip-times -t 1
    /// -b 1M -l 1000` (2.1.8).
    const STOCK_UDP_TRIP_TIMES: &str = "000000016b152362000297b500000000680100d800000001000061d1000003e800000000ffffff9c0000000000000000001000000002000100080003000000000010000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000006b152362000297b50000000000000000";

    #[test]
    fn our_trip_times_datagram_matches_stock_bytes() {
        let b = hex(STOCK_UDP_TRIP_TIMES);
        let theirs = Header::decode(&b[UDP_HEADER_AT..]).unwrap();
        assert!(theirs.wants_trip_times());
        let mut h = Header::new(Amount::Time(Duration::from_secs(1)), 1, 25041, true);
        h.buflen = 1000;
        h.rate = Some(1 << 20);
        let h = h.with_trip_times();
        assert!(h.wants_trip_times() && !Header::new(h.amount, 1, 1, true).wants_trip_times());
        let mut ours = vec![0u8; UDP_TRIP_TIMES_LEN];
        ours[..16].copy_from_slice(&b[..16]);
        ours[UDP_HEADER_AT..UDP_HEADER_AT + TCP_HEADER_LEN].copy_from_slice(&h.encode());
        put_udp_start_time(&mut ours, Duration::new(0x6b15_2362, 0x0002_97b5 * 1000));
        assert_eq!(ours, b);
    }

    /// The first 112 bytes of the second datagram of `iperf -c 127.0.0.1 -p 5702 -u
    /// --isochronous=60:20m,5m -t 1 --trip-times` (2.1.8): frame 1 of 53,157 bytes, 1470-byte
    /// datagrams, 16,666 µs apart.
    const STOCK_ISOCH: &str = "000000026b15ac3a000e0a9d00000000680100d800000001000016460000000000000000ffffff9c0000000000000000001100000002000100080003000000000010000000000000000000000000411a6b15ac3a000e0a9d00000000000000010000cfa50000cfa50000000000000000";

    #[test]
    fn stock_isochronous_datagrams_give_their_frame() {
        let b = hex(STOCK_ISOCH);
        let mark = IsochMark::read(&b).expect("a frame's datagram");
        assert_eq!(
            (
                mark.period_us,
                mark.prev_frame,
                mark.frame,
                mark.frame_bytes
            ),
            (16_666, 0, 1, 53_157)
        );
        assert_eq!(mark.remaining, 53_157, "the frame's first datagram");
        assert_eq!(mark.start, Duration::new(0x6b15_ac3a, 0x000e_0a9d * 1000));
        // Written back, the same bytes.
        let mut ours = b.clone();
        ours[ISOCH_AT..ISOCH_END].fill(0);
        mark.write(&mut ours);
        assert_eq!(ours, b);
        // 37 datagrams of 1470 bytes: 36 full ones and 237 bytes.
        let at = |remaining: u32| IsochMark { remaining, ..mark }.frame_tag(1470);
        assert_eq!((at(53_157).index, at(53_157).count), (0, 37), "first of 37");
        assert_eq!(at(53_157 - 1470).index, 1);
        let last = at(237);
        assert!(
            last.index > 0 && last.index < last.count,
            "the last: not the first"
        );
        // A one-datagram frame, and the marks that say nothing.
        let small = IsochMark {
            frame_bytes: 200,
            remaining: 200,
            ..mark
        };
        assert_eq!(
            (small.frame_tag(200).index, small.frame_tag(200).count),
            (0, 1)
        );
        let mut first = b.clone();
        first[ISOCH_AT..ISOCH_END].fill(0);
        assert_eq!(
            IsochMark::read(&first),
            None,
            "the flow's first datagram: frame 0"
        );
        let mut plain = b.clone();
        plain[UDP_HEADER_AT + 32..UDP_HEADER_AT + 34]
            .copy_from_slice(&upper::TRIPTIME.to_be_bytes());
        assert_eq!(IsochMark::read(&plain), None, "no ISOCH flag");
        assert_eq!(IsochMark::read(&b[..ISOCH_END - 1]), None);
        let mut bad = b.clone();
        bad[ISOCH_AT + 24..ISOCH_AT + 28].copy_from_slice(&60_000u32.to_be_bytes());
        assert_eq!(IsochMark::read(&bad), None, "more left than the frame has");
    }

    /// The first 80 bytes of `iperf -c 127.0.0.1 -p 5704 -t 1 --trip-times -l 1000 -b 1m`
    /// (2.1.8): its header with the start time.
    const STOCK_TCP_TRIP_TIMES: &str = "400100a00000000100001648000003e800000000ffffff9c000000000000000000100000000200010008000300000000000f42400000000000000000000000006b15ac85000894b20000000000000000";

    #[test]
    fn tcp_trip_times_header_and_stamps() {
        let b = hex(STOCK_TCP_TRIP_TIMES);
        assert_eq!(
            Header::length_from_flags(u32_at(&b, 0)),
            Ok(Some(TCP_TRIP_TIMES_HEADER_LEN))
        );
        let theirs = Header::decode(&b).unwrap();
        assert!(theirs.wants_trip_times());
        let mut h = Header::new(Amount::Time(Duration::from_secs(1)), 1, 5704, false);
        h.buflen = 1000;
        h.rate = Some(1_000_000);
        let ours = h
            .with_tcp_trip_times()
            .encode_with_start(Duration::new(0x6b15_ac85, 0x0008_94b2 * 1000));
        assert_eq!(ours.as_slice(), b.as_slice());
        // A write's stamp, read back; sizes that cannot be a write are refused.
        let mut write = vec![0xAAu8; 1000];
        let stamp = TcpStamp {
            sent: Duration::new(0x6b15_ac85, 0x0008_94c9 * 1000),
            id: 1,
            size: 1000,
        };
        stamp.write(Duration::new(0x6b15_ac85, 0x0008_94c4 * 1000), &mut write);
        assert_eq!(&write[12..28], &hex("6b15ac85000894c46b15ac85000894c9")[..]);
        assert_eq!(TcpStamp::read(&write), Some(stamp));
        for size in [0u32, 91, (1 << 30) + 1] {
            write[48..52].copy_from_slice(&size.to_be_bytes());
            assert_eq!(TcpStamp::read(&write), None, "size {size}");
        }
        assert_eq!(TcpStamp::read(&write[..91]), None);
    }
}
