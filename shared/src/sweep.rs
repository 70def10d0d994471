//! Packet-size sweeps (`--sweep-len 16,32,...,1420`): one short test per datagram size, summed
//! into one row each — the classic CCID rate-limiter table of size, throughput and packets per
//! second. Pure: the CLI runs the tests, the browser reads a [`SweepResult`] as a table or chart.

use serde::{Deserialize, Serialize};

use crate::report::TestResult;
use crate::spec::{Direction, MAX_UDP_LEN, MIN_UDP_LEN, Protocol, TestSpec};

/// Most sizes in one sweep.
pub const MAX_SWEEP_POINTS: usize = 64;

/// One size of a sweep, as the receiving end measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Datagram payload size, bytes.
    pub len: u32,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// Seconds the receiver measured.
    pub seconds: f64,
    /// Received bit/s.
    pub bits_per_second: f64,
    /// Datagrams received.
    pub packets: u64,
    /// Datagrams received per second.
    pub packets_per_second: f64,
    /// Datagrams lost.
    pub lost: u64,
    /// Loss in percent of expected datagrams.
    pub lost_percent: f64,
    /// Why this size has no figures (the test failed), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SweepPoint {
    /// The row of one finished test of `len`-byte datagrams (received figures of its first
    /// data flow); `None` if no end reported receiving.
    pub fn from_result(len: u32, result: &TestResult) -> Option<SweepPoint> {
        let flows = result.flows();
        let received = flows.first()?.received.as_ref()?;
        let rx = received.udp_rx.clone().unwrap_or_default();
        let packets = rx.received;
        let per_sec = |v: f64| {
            if received.seconds > 0.0 {
                v / received.seconds
            } else {
                0.0
            }
        };
        Some(SweepPoint {
            len,
            bytes: received.bytes,
            seconds: received.seconds,
            bits_per_second: received.bits_per_second,
            packets,
            packets_per_second: per_sec(packets as f64),
            lost: rx.lost,
            lost_percent: rx.lost_percent(),
            error: None,
        })
    }

    /// The row of one size's test, whatever became of it: its figures when it completed,
    /// else why not (what it ended early for, or that no end reported receiving).
    pub fn of_test(len: u32, result: &TestResult) -> SweepPoint {
        match result.status.ended_early() {
            None => SweepPoint::from_result(len, result)
                .unwrap_or_else(|| SweepPoint::failed(len, "no receiver report")),
            Some(why) => SweepPoint::failed(len, why),
        }
    }

    /// A row for a size whose test failed.
    pub fn failed(len: u32, error: impl Into<String>) -> SweepPoint {
        SweepPoint {
            len,
            bytes: 0,
            seconds: 0.0,
            bits_per_second: 0.0,
            packets: 0,
            packets_per_second: 0.0,
            lost: 0,
            lost_percent: 0.0,
            error: Some(error.into()),
        }
    }
}

/// A whole sweep: what ran and one row per size, in the order run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// UDP or DCCP.
    pub protocol: Protocol,
    /// The CCID asked for (DCCP), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccid: Option<u8>,
    /// Target rate per test, bit/s (`None` = unlimited).
    pub bitrate: Option<u64>,
    /// Seconds per size.
    pub seconds_per_size: f64,
    /// The rows.
    pub points: Vec<SweepPoint>,
}

impl SweepResult {
    /// The sweep of `spec` (its `len` replaced by each size) with these rows.
    pub fn new(spec: &TestSpec, points: Vec<SweepPoint>) -> SweepResult {
        SweepResult {
            protocol: spec.protocol,
            ccid: spec.dccp.and_then(|d| d.ccid),
            bitrate: spec.bitrate.map(|b| b.0),
            seconds_per_size: spec.total_time().map_or(0.0, |t| t.as_secs_f64()),
            points,
        }
    }
}

/// Checks a sweep request as a whole (a size that does not suit the spec fails alone, as its
/// own row): a datagram transport, one direction, no request/response, and 1 to
/// [`MAX_SWEEP_POINTS`] sizes in range.
pub fn check_request(spec: &TestSpec, sizes: &[u32]) -> Result<(), String> {
    if spec.protocol == Protocol::Tcp {
        return Err("a packet-size sweep runs over UDP or DCCP, not TCP".into());
    }
    if spec.direction == Direction::Bidir {
        return Err("a packet-size sweep runs in one direction (not both)".into());
    }
    if spec.rr.is_some() {
        return Err("a packet-size sweep measures throughput, not request/response".into());
    }
    if sizes.is_empty() || sizes.len() > MAX_SWEEP_POINTS {
        return Err(format!(
            "a sweep has 1 to {MAX_SWEEP_POINTS} sizes, not {}",
            sizes.len()
        ));
    }
    if let Some(bad) = sizes
        .iter()
        .find(|n| !(MIN_UDP_LEN..=MAX_UDP_LEN).contains(*n))
    {
        return Err(format!(
            "sweep size {bad} is out of range ({MIN_UDP_LEN} to {MAX_UDP_LEN} bytes)"
        ));
    }
    Ok(())
}

/// Parses `16,32,64,...,1420`: sizes separated by commas; `...` between two sizes doubles from
/// the one before it up to (and including) the one after it.
pub fn parse_sizes(text: &str) -> Result<Vec<u32>, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut sizes: Vec<u32> = Vec::new();
    let mut pending_range = false;
    for part in parts {
        if part == "..." || part == ".." {
            if sizes.is_empty() || pending_range {
                return Err(format!("'{text}': '...' needs a size on each side"));
            }
            pending_range = true;
            continue;
        }
        let n: u32 = part
            .parse()
            .map_err(|_| format!("'{part}' in --sweep-len is not a size in bytes"))?;
        if !(MIN_UDP_LEN..=MAX_UDP_LEN).contains(&n) {
            return Err(format!(
                "sweep size {n} is out of range ({MIN_UDP_LEN} to {MAX_UDP_LEN} bytes)"
            ));
        }
        if pending_range {
            let mut next = sizes.last().copied().unwrap_or(n).saturating_mul(2);
            while next < n {
                sizes.push(next);
                next = next.saturating_mul(2);
            }
            pending_range = false;
        }
        sizes.push(n);
        if sizes.len() > MAX_SWEEP_POINTS {
            return Err(format!("a sweep has at most {MAX_SWEEP_POINTS} sizes"));
        }
    }
    if pending_range {
        return Err(format!("'{text}': '...' needs a size on each side"));
    }
    if sizes.is_empty() {
        return Err("--sweep-len needs at least one size".into());
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_a_doubling_range() {
        assert_eq!(
            parse_sizes("16,32,64,...,1420").unwrap(),
            vec![16, 32, 64, 128, 256, 512, 1024, 1420]
        );
        assert_eq!(parse_sizes("100, 200").unwrap(), vec![100, 200]);
        assert_eq!(parse_sizes("1400").unwrap(), vec![1400]);
        for bad in [
            "",
            "16,...",
            "...,64",
            "16,x",
            "8,16",
            "16,...,...,64",
            "70000",
        ] {
            assert!(parse_sizes(bad).is_err(), "{bad}");
        }
        let many = vec!["100"; MAX_SWEEP_POINTS + 1].join(",");
        assert!(parse_sizes(&many).unwrap_err().contains("at most"));
    }

    #[test]
    fn requests_are_checked_as_a_whole() {
        let udp = TestSpec::new(Protocol::Udp);
        assert!(check_request(&udp, &[64, 1400]).is_ok());
        assert!(check_request(&TestSpec::new(Protocol::Dccp), &[16]).is_ok());
        assert!(
            check_request(&TestSpec::new(Protocol::Tcp), &[64])
                .unwrap_err()
                .contains("TCP")
        );
        let mut both = udp.clone();
        both.direction = Direction::Bidir;
        assert!(check_request(&both, &[64]).is_err());
        assert!(check_request(&udp, &[]).is_err());
        assert!(check_request(&udp, &[64; MAX_SWEEP_POINTS + 1]).is_err());
        assert!(
            check_request(&udp, &[64, 70_000])
                .unwrap_err()
                .contains("70000")
        );
    }

    #[test]
    fn failed_rows_say_why() {
        let p = SweepPoint::failed(64, "refused");
        assert_eq!((p.len, p.error.as_deref()), (64, Some("refused")));
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""error":"refused""#), "{json}");
    }
}
