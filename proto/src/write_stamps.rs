//! The send times a TCP sender of a `--trip-times` test stamps at the start of each write: every
//! write is `len` bytes and begins with a [`DataHeader`] (sequence, wall-clock send time), so
//! write `k` is stream bytes `k × len ..` and its stamp is its first 16 bytes. [`WriteStamps`]
//! follows the stream's offset across reads of any size and hands back the stamp of each write
//! whose last byte a read brought: the write's one-way delay is that read's time minus it.

use std::time::Duration;

use crate::wire::{DATA_HEADER_LEN, DataHeader};

/// Where a receiver is in a stream of stamped writes.
#[derive(Debug, Clone)]
pub struct WriteStamps {
    len: u64,
    offset: u64,
    header: [u8; DATA_HEADER_LEN],
}

impl WriteStamps {
    /// A stream of writes of `len` bytes (at least the 16-byte stamp).
    pub fn new(len: usize) -> WriteStamps {
        WriteStamps {
            len: len.max(DATA_HEADER_LEN) as u64,
            offset: 0,
            header: [0; DATA_HEADER_LEN],
        }
    }

    /// Takes the next `bytes` of the stream; calls `done` with the send time of every write it
    /// completes (in order).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "positions within one read and within a 16-byte stamp are below the read's length"
    )]
    pub fn on_read(&mut self, bytes: &[u8], mut done: impl FnMut(Duration)) {
        let end = self.offset + bytes.len() as u64;
        let mut pos = self.offset;
        while pos < end {
            let write_start = pos - pos % self.len;
            let within = pos - write_start;
            if within < DATA_HEADER_LEN as u64 {
                let take = (DATA_HEADER_LEN as u64 - within).min(end - pos);
                let from = (pos - self.offset) as usize;
                let (at, n) = (within as usize, take as usize);
                self.header[at..at + n].copy_from_slice(&bytes[from..from + n]);
                pos += take;
                if pos - write_start < DATA_HEADER_LEN as u64 {
                    continue;
                }
            }
            let write_end = write_start + self.len;
            if write_end <= end {
                if let Ok(h) = DataHeader::read(&self.header) {
                    done(h.sent);
                }
                pos = write_end;
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
        let mut w = WriteStamps::new(len);
        let mut at = 0;
        pieces
            .iter()
            .map(|&n| {
                let mut got = Vec::new();
                w.on_read(&s[at..at + n], |t| got.push(t.as_secs()));
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
}
