//! The send times a TCP sender of a `--trip-times` test stamps at the start of each write.
//! perfpeer's writes are all `len` bytes and begin with a [`DataHeader`] (sequence, wall-clock
//! send time); iperf 2.1's begin with its 92-byte [`TcpStamp`], which also says the write's
//! length. [`WriteStamps`] follows the stream's offset across reads of any size and hands back
//! the stamp of each write whose last byte a read brought: the write's one-way delay is that
//! read's time minus it. A stamp that cannot be one (an iperf 2 size beyond belief) ends the
//! counting for the rest of the stream: the writes' bounds are lost with it.

use std::time::Duration;

use crate::iperf2::{TCP_STAMP_LEN, TcpStamp};
use crate::wire::{DATA_HEADER_LEN, DataHeader, DatagramFormat};

/// Where a receiver is in a stream of stamped writes.
#[derive(Debug, Clone)]
pub struct WriteStamps {
    /// iperf 2's stamps (else perfpeer's, writes of `len`).
    iperf2: bool,
    len: u64,
    /// Stream offset of the write being read.
    write_start: u64,
    /// Its length, send time and number, once its stamp is read whole.
    current: Option<(u64, Duration, u64)>,
    offset: u64,
    stamp: [u8; TCP_STAMP_LEN],
    lost: bool,
}

impl WriteStamps {
    /// A stream of writes stamped as `format`'s senders stamp them: perfpeer's of `len` bytes
    /// (at least the 16-byte stamp), iperf 2's of the length each stamp says.
    pub fn new(len: usize, format: DatagramFormat) -> WriteStamps {
        WriteStamps {
            iperf2: matches!(format, DatagramFormat::Iperf2 { .. }),
            len: len.max(DATA_HEADER_LEN) as u64,
            write_start: 0,
            current: None,
            offset: 0,
            stamp: [0; TCP_STAMP_LEN],
            lost: false,
        }
    }

    fn stamp_len(&self) -> u64 {
        if self.iperf2 {
            TCP_STAMP_LEN as u64
        } else {
            DATA_HEADER_LEN as u64
        }
    }

    /// The write's length, send time and number from its whole stamp.
    fn read_stamp(&self) -> Option<(u64, Duration, u64)> {
        if self.iperf2 {
            TcpStamp::read(&self.stamp).map(|s| (u64::from(s.size), s.sent, u64::from(s.id)))
        } else {
            DataHeader::read(&self.stamp[..DATA_HEADER_LEN])
                .ok()
                .map(|h| (self.len, h.sent, h.seq))
        }
    }

    /// Takes the next `bytes` of the stream; calls `done` with the send time and the number of
    /// every write it completes (in order).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "positions within one read and within a 92-byte stamp are below the read's length"
    )]
    pub fn on_read(&mut self, bytes: &[u8], mut done: impl FnMut(Duration, u64)) {
        let end = self.offset + bytes.len() as u64;
        let mut pos = self.offset;
        let stamp_len = self.stamp_len();
        while pos < end && !self.lost {
            let within = pos - self.write_start;
            if self.current.is_none() {
                let take = (stamp_len - within).min(end - pos);
                let from = (pos - self.offset) as usize;
                let (at, n) = (within as usize, take as usize);
                self.stamp[at..at + n].copy_from_slice(&bytes[from..from + n]);
                pos += take;
                if pos - self.write_start < stamp_len {
                    continue;
                }
                match self.read_stamp() {
                    Some(write) => self.current = Some(write),
                    None if self.iperf2 => {
                        self.lost = true;
                        break;
                    }
                    // perfpeer's writes keep their length: an unreadable stamp skips one.
                    None => self.current = Some((self.len, Duration::ZERO, 0)),
                }
            }
            let Some((len, sent, id)) = self.current else {
                break;
            };
            let write_end = self.write_start + len;
            if write_end <= end {
                if !sent.is_zero() {
                    done(sent, id);
                }
                pos = write_end;
                self.write_start = write_end;
                self.current = None;
            } else {
                pos = end;
            }
        }
        self.offset = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three writes of `len` bytes stamped 1, 2 and 3 s.
    fn stream(len: usize) -> Vec<u8> {
        let mut s = vec![0xAA; 3 * len];
        for k in 0..3 {
            DataHeader {
                seq: k as u64 + 1,
                sent: Duration::from_secs(k as u64 + 1),
            }
            .write(&mut s[k * len..]);
        }
        s
    }

    fn stamps_read_in(len: usize, pieces: &[usize]) -> Vec<Vec<u64>> {
        let s = stream(len);
        let mut w = WriteStamps::new(len, DatagramFormat::Perfpeer);
        let mut at = 0;
        pieces
            .iter()
            .map(|&n| {
                let mut got = Vec::new();
                w.on_read(&s[at..at + n], |t, _| got.push(t.as_secs()));
                at += n;
                got
            })
            .collect()
    }

    #[test]
    fn each_write_is_done_by_the_read_of_its_last_byte() {
        // Writes of 100 bytes, read whole.
        assert_eq!(
            stamps_read_in(100, &[100, 100, 100]),
            vec![vec![1], vec![2], vec![3]]
        );
        // Read in one gulp: all three at once, in order.
        assert_eq!(stamps_read_in(100, &[300]), vec![vec![1, 2, 3]]);
        // Stamps split across reads, a read ending one byte short of a write's end.
        assert_eq!(
            stamps_read_in(100, &[7, 92, 1, 10, 150, 40]),
            vec![vec![], vec![], vec![1], vec![], vec![2], vec![3]]
        );
        // Writes no longer than their stamp.
        assert_eq!(
            stamps_read_in(16, &[8, 8, 20, 12]),
            vec![vec![], vec![1], vec![2], vec![3]]
        );
    }

    #[test]
    fn byte_by_byte_gives_the_same_stamps() {
        let all: Vec<u64> = stamps_read_in(40, &[1; 120])
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(all, vec![1, 2, 3]);
    }

    /// iperf 2's writes of 100, 300 and 92 bytes stamped 1, 2 and 3 s, read in `pieces`.
    fn iperf2_stamps_read_in(pieces: &[usize]) -> Vec<u64> {
        let mut s = Vec::new();
        for (k, size) in (1u32..).zip([100u32, 300, 92]) {
            let mut write = vec![0x55; size as usize];
            TcpStamp {
                sent: Duration::from_secs(u64::from(k)),
                id: k,
                size,
            }
            .write(Duration::from_secs(1), &mut write);
            s.extend_from_slice(&write);
        }
        let mut w = WriteStamps::new(1, DatagramFormat::Iperf2 { seq64: false });
        let (mut at, mut got) = (0, Vec::new());
        for &n in pieces {
            let n = n.min(s.len() - at);
            w.on_read(&s[at..at + n], |t, _| got.push(t.as_secs()));
            at += n;
        }
        got
    }

    #[test]
    fn iperf2_writes_say_their_own_length() {
        assert_eq!(iperf2_stamps_read_in(&[492]), vec![1, 2, 3]);
        assert_eq!(iperf2_stamps_read_in(&[1; 492]), vec![1, 2, 3]);
        assert_eq!(iperf2_stamps_read_in(&[50, 50, 299, 93]), vec![1, 2, 3]);
        assert_eq!(
            iperf2_stamps_read_in(&[50, 50, 299]),
            vec![1],
            "the second is one byte short"
        );
    }

    #[test]
    fn an_iperf2_stamp_beyond_belief_ends_the_counting() {
        let mut w = WriteStamps::new(1, DatagramFormat::Iperf2 { seq64: false });
        let mut got = Vec::new();
        let mut bad = vec![0u8; 200];
        bad[48..52].copy_from_slice(&10u32.to_be_bytes());
        w.on_read(&bad, |t, _| got.push(t));
        let mut good = vec![0u8; 100];
        TcpStamp {
            sent: Duration::from_secs(5),
            id: 1,
            size: 100,
        }
        .write(Duration::ZERO, &mut good);
        w.on_read(&good, |t, _| got.push(t));
        assert!(got.is_empty(), "{got:?}");
    }
}
