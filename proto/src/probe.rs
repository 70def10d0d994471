//! The latency probe's datagrams (`perfpeer test --latency-under-load`): a request/response
//! stream over UDP whose requester sends at a fixed rate and whose answerer stamps each answer
//! with the times it took the request in and sent the answer out, each on its own clock.
//!
//! - Request: sequence number (u64 BE, from 1) | the requester's send time in ns on its own
//!   clock (u64 BE) | zero or more filler bytes. 16 bytes at least.
//! - Answer: the request's sequence number and send time echoed | the answerer's receive time and
//!   send time in ns on its clock (u64 BE each) | how many requests it had taken in by then,
//!   this one included (u64 BE) | filler. 40 bytes at least.
//!
//! A request never starts with `"PPU1"` (that would need a sequence number above 5·10^18), so it
//! shares a socket with the UDP control datagrams of [`crate::wire`].

use crate::wire::WireError;

/// Bytes of a probe request without filler.
pub const REQUEST_LEN: usize = 16;
/// Bytes of a probe answer without filler.
pub const ANSWER_LEN: usize = 40;

fn u64_at(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

fn need(buf: &[u8], n: usize, what: &'static str) -> Result<(), WireError> {
    if buf.len() < n {
        return Err(WireError::Truncated {
            what,
            got: buf.len(),
            need: n,
        });
    }
    Ok(())
}

/// A probe request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRequest {
    /// Sequence number, from 1.
    pub seq: u64,
    /// The requester's send time, ns on its own clock.
    pub sent_ns: u64,
}

impl ProbeRequest {
    /// Writes the request over the start of `buf` (at least [`REQUEST_LEN`] bytes).
    pub fn write(&self, buf: &mut [u8]) {
        buf[..8].copy_from_slice(&self.seq.to_be_bytes());
        buf[8..16].copy_from_slice(&self.sent_ns.to_be_bytes());
    }

    /// Reads a request.
    pub fn read(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, REQUEST_LEN, "probe request")?;
        Ok(ProbeRequest {
            seq: u64_at(buf, 0),
            sent_ns: u64_at(buf, 8),
        })
    }
}

/// A probe answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// The request it answers.
    pub request: ProbeRequest,
    /// When the answerer took the request in, ns on the answerer's clock.
    pub far_received_ns: u64,
    /// When the answerer sent this answer, ns on the answerer's clock.
    pub far_sent_ns: u64,
    /// Requests the answerer had taken in by then, this one included.
    pub far_count: u64,
}

impl ProbeAnswer {
    /// Writes the answer over the start of `buf` (at least [`ANSWER_LEN`] bytes).
    pub fn write(&self, buf: &mut [u8]) {
        self.request.write(buf);
        buf[16..24].copy_from_slice(&self.far_received_ns.to_be_bytes());
        buf[24..32].copy_from_slice(&self.far_sent_ns.to_be_bytes());
        buf[32..40].copy_from_slice(&self.far_count.to_be_bytes());
    }

    /// Reads an answer.
    pub fn read(buf: &[u8]) -> Result<Self, WireError> {
        need(buf, ANSWER_LEN, "probe answer")?;
        Ok(ProbeAnswer {
            request: ProbeRequest::read(buf)?,
            far_received_ns: u64_at(buf, 16),
            far_sent_ns: u64_at(buf, 24),
            far_count: u64_at(buf, 32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let mut buf = [0xAAu8; 20];
        ProbeRequest {
            seq: 0x0102,
            sent_ns: 0x0A0B_0C0D,
        }
        .write(&mut buf);
        assert_eq!(
            buf,
            [
                0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 0xAA, 0xAA, 0xAA, 0xAA
            ]
        );
        assert_eq!(
            ProbeRequest::read(&buf),
            Ok(ProbeRequest {
                seq: 0x0102,
                sent_ns: 0x0A0B_0C0D
            })
        );
        assert!(ProbeRequest::read(&buf[..15]).is_err());
    }

    #[test]
    fn answer_round_trip_and_truncation() {
        let a = ProbeAnswer {
            request: ProbeRequest {
                seq: 7,
                sent_ns: 1_000,
            },
            far_received_ns: 5_000_000,
            far_sent_ns: 5_000_100,
            far_count: 6,
        };
        let mut buf = vec![0u8; 64];
        a.write(&mut buf);
        assert_eq!(&buf[32..40], &[0, 0, 0, 0, 0, 0, 0, 6]);
        assert_eq!(ProbeAnswer::read(&buf), Ok(a));
        assert_eq!(
            ProbeAnswer::read(&buf[..39]),
            Err(WireError::Truncated {
                what: "probe answer",
                got: 39,
                need: 40
            })
        );
    }

    #[test]
    fn a_request_is_never_a_control_datagram() {
        let mut buf = [0u8; REQUEST_LEN];
        ProbeRequest {
            seq: u64::from(u32::MAX),
            sent_ns: 0,
        }
        .write(&mut buf);
        assert!(!crate::wire::UdpControl::is_control(&buf));
    }
}
