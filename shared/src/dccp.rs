//! DCCP in the shared model: the test options (`--dccp-service`, `--ccid`), what a peer can do
//! (`DccpSupport`, carried in `PeerInfo`), and the figures a kernel reports about a DCCP
//! connection (negotiated CCIDs, maximum packet size, TFRC state for CCID 3). No sockets here.

use serde::{Deserialize, Serialize};

/// Default service code: the four ASCII bytes `"PERF"` (0x50455246), as DCCP service codes are
/// conventionally written. Both the data listener and the client use it unless told otherwise.
pub const DEFAULT_SERVICE: u32 = u32::from_be_bytes(*b"PERF");

/// The CCIDs a test may ask for (CCID 4 was never in mainline Linux; asking for it gets an error
/// that lists what the kernel offers).
pub const KNOWN_CCIDS: [u8; 3] = [2, 3, 4];

/// DCCP options of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DccpSpec {
    /// Service code set on every DCCP socket before connect (and accepted by the listener).
    pub service: u32,
    /// CCID for both half-connections (DCCP_SOCKOPT_CCID); `None` = the kernel's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccid: Option<u8>,
}

impl Default for DccpSpec {
    fn default() -> Self {
        DccpSpec {
            service: DEFAULT_SERVICE,
            ccid: None,
        }
    }
}

/// Parses a service code: a number (decimal or `0x` hex) or one to four ASCII letters/digits
/// (`PERF`), as DCCP service codes are written.
pub fn parse_service(text: &str) -> Result<u32, String> {
    let t = text.trim();
    let number = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() {
        t.parse().ok()
    } else {
        None
    };
    if let Some(n) = number {
        // 4294967295 is reserved as "invalid" (RFC 4340 §8.1.2).
        return (n != u32::MAX)
            .then_some(n)
            .ok_or_else(|| "service code 4294967295 is reserved as invalid".to_string());
    }
    if (1..=4).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric()) {
        let mut bytes = [0u8; 4];
        bytes[..t.len()].copy_from_slice(t.as_bytes());
        return Ok(u32::from_be_bytes(bytes));
    }
    Err(format!(
        "'{text}' is not a DCCP service code (a number, 0x hex, or 1-4 ASCII letters like PERF)"
    ))
}

/// A service code as people read it: four printable ASCII bytes as text, else the number.
pub fn service_name(code: u32) -> String {
    let bytes = code.to_be_bytes();
    let text: Vec<u8> = bytes.iter().copied().take_while(|&b| b != 0).collect();
    if !text.is_empty()
        && text.iter().all(u8::is_ascii_alphanumeric)
        && bytes[text.len()..].iter().all(|&b| b == 0)
    {
        String::from_utf8_lossy(&text).into_owned()
    } else {
        code.to_string()
    }
}

/// Whether a peer can run DCCP tests, and why not (absent from an older peer: no DCCP).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DccpSupport {
    /// A DCCP socket could be created (IPv4 or IPv6).
    pub available: bool,
    /// CCIDs the kernel offers (DCCP_SOCKOPT_AVAILABLE_CCIDS), e.g. `[2, 3]`.
    #[serde(default)]
    pub ccids: Vec<u8>,
    /// IPv6 DCCP works too (the `dccp_ipv6` module is loaded).
    #[serde(default)]
    pub ipv6: bool,
    /// Why DCCP is unavailable (or only partly available), in one line for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DccpSupport {
    /// The one-line refusal for a test that asks for DCCP over `ipv6` (or `None` if it can run).
    pub fn refusal(&self, ipv6: bool) -> Option<String> {
        if !self.available {
            return Some(
                self.reason
                    .clone()
                    .unwrap_or_else(|| "DCCP is not available on this peer".into()),
            );
        }
        if ipv6 && !self.ipv6 {
            return Some(self.reason.clone().unwrap_or_else(|| {
                "DCCP over IPv6 is not available here (load the dccp_ipv6 module)".into()
            }));
        }
        None
    }

    /// The refusal for asking `ccid` of a kernel that does not offer it.
    pub fn ccid_refusal(&self, ccid: u8) -> Option<String> {
        (self.available && !self.ccids.is_empty() && !self.ccids.contains(&ccid)).then(|| {
            format!(
                "CCID {ccid} is not available in this kernel; it offers {}",
                ccid_list(&self.ccids)
            )
        })
    }
}

/// `"CCID 2 and 3"`, `"CCID 2"`, `"no CCID"`.
pub fn ccid_list(ccids: &[u8]) -> String {
    let names: Vec<String> = ccids.iter().map(u8::to_string).collect();
    match names.as_slice() {
        [] => "no CCID".into(),
        [one] => format!("CCID {one}"),
        [init @ .., last] => format!("CCID {} and {last}", init.join(", ")),
    }
}

/// TFRC sender state of a CCID 3 half-connection (DCCP_SOCKOPT_CCID_TX_INFO).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TfrcTx {
    /// Allowed sending rate X, bytes/s.
    pub x_bytes_per_sec: f64,
    /// Receive rate the receiver reported (X_recv), bytes/s.
    pub x_recv_bytes_per_sec: f64,
    /// Rate from the throughput equation (X_calc), bytes/s.
    pub x_calc_bytes_per_sec: f64,
    /// RTT estimate, µs.
    pub rtt_us: u32,
    /// Loss event rate p (0–1).
    pub p: f64,
    /// Retransmission timeout, µs.
    pub rto_us: u32,
    /// Inter-packet interval, µs.
    pub ipi_us: u32,
}

/// TFRC receiver state of a CCID 3 half-connection (DCCP_SOCKOPT_CCID_RX_INFO).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TfrcRx {
    /// Receive rate X_recv, bytes/s.
    pub x_recv_bytes_per_sec: f64,
    /// RTT the sender communicated, µs.
    pub rtt_us: u32,
    /// Loss event rate p (0–1).
    pub p: f64,
}

/// CCID 3's state at the end of one interval, at the end that carries data: the sender's allowed
/// rate X with the X_recv, p and RTT it knows, or the receiver's X_recv, p and RTT.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TfrcSample {
    /// Allowed sending rate X, bytes/s (sender only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_bytes_per_sec: Option<f64>,
    /// Receive rate X_recv, bytes/s.
    pub x_recv_bytes_per_sec: f64,
    /// Loss event rate p (0–1).
    pub p: f64,
    /// RTT estimate, µs.
    pub rtt_us: u32,
}

impl From<&TfrcTx> for TfrcSample {
    fn from(t: &TfrcTx) -> Self {
        TfrcSample {
            x_bytes_per_sec: Some(t.x_bytes_per_sec),
            x_recv_bytes_per_sec: t.x_recv_bytes_per_sec,
            p: t.p,
            rtt_us: t.rtt_us,
        }
    }
}

impl From<&TfrcRx> for TfrcSample {
    fn from(r: &TfrcRx) -> Self {
        TfrcSample {
            x_bytes_per_sec: None,
            x_recv_bytes_per_sec: r.x_recv_bytes_per_sec,
            p: r.p,
            rtt_us: r.rtt_us,
        }
    }
}

/// What the kernel says about one DCCP data stream (in its [`crate::report::SocketInfo`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DccpStreamInfo {
    /// CCID of this end's sending half-connection (DCCP_SOCKOPT_TX_CCID).
    pub tx_ccid: Option<u8>,
    /// CCID of this end's receiving half-connection (DCCP_SOCKOPT_RX_CCID).
    pub rx_ccid: Option<u8>,
    /// Current maximum packet size (DCCP_SOCKOPT_GET_CUR_MPS), bytes.
    pub cur_mps: Option<u32>,
    /// CCIDs this end's kernel offers (DCCP_SOCKOPT_AVAILABLE_CCIDS).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available_ccids: Vec<u8>,
    /// TFRC sender state (CCID 3, sending end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfrc_tx: Option<TfrcTx>,
    /// TFRC receiver state (CCID 3, receiving end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfrc_rx: Option<TfrcRx>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_codes_parse_as_numbers_or_letters() {
        assert_eq!(parse_service("PERF"), Ok(DEFAULT_SERVICE));
        assert_eq!(DEFAULT_SERVICE, 0x5045_5246);
        assert_eq!(parse_service("42"), Ok(42));
        assert_eq!(parse_service("0x10"), Ok(16));
        assert_eq!(parse_service("AB"), Ok(0x4142_0000));
        assert!(parse_service("4294967295").is_err());
        assert!(
            parse_service("TOOLONG")
                .unwrap_err()
                .contains("service code")
        );
        assert!(parse_service("").is_err());
        assert!(parse_service("a b").is_err());
        assert_eq!(service_name(DEFAULT_SERVICE), "PERF");
        assert_eq!(service_name(0x4142_0000), "AB");
        assert_eq!(service_name(42), "42");
    }

    #[test]
    fn dccp_specs_are_checked_by_the_spec() {
        use crate::spec::{Protocol, SpecError, TestSpec};
        let mut d = TestSpec::new(Protocol::Dccp);
        assert_eq!((d.validate(), d.len, d.bitrate), (Ok(()), 1400, None));
        d.dccp = Some(DccpSpec {
            service: 7,
            ccid: Some(3),
        });
        assert_eq!(d.validate(), Ok(()));
        d.dccp = Some(DccpSpec {
            service: 7,
            ccid: Some(5),
        });
        assert_eq!(d.validate(), Err(SpecError::Ccid(5)));
        d.dccp = None;
        d.len = 8;
        assert_eq!(d.validate(), Err(SpecError::DccpLen(8)));
        let mut u = TestSpec::new(Protocol::Udp);
        u.dccp = Some(DccpSpec::default());
        assert_eq!(u.validate(), Err(SpecError::DccpOnly));
        let json = serde_json::to_string(&TestSpec::new(Protocol::Dccp)).unwrap();
        assert!(
            json.contains(r#""protocol":"dccp""#) && !json.contains("service"),
            "{json}"
        );
    }

    #[test]
    fn refusals_name_the_cause() {
        let none = DccpSupport {
            reason: Some("this kernel has no DCCP (removed from Linux in 6.16)".into()),
            ..Default::default()
        };
        assert!(none.refusal(false).unwrap().contains("6.16"));
        let v4_only = DccpSupport {
            available: true,
            ccids: vec![2, 3],
            ipv6: false,
            reason: None,
        };
        assert_eq!(v4_only.refusal(false), None);
        assert!(v4_only.refusal(true).unwrap().contains("dccp_ipv6"));
        assert_eq!(
            v4_only.ccid_refusal(4).unwrap(),
            "CCID 4 is not available in this kernel; it offers CCID 2 and 3"
        );
        assert_eq!(v4_only.ccid_refusal(3), None);
        assert_eq!(ccid_list(&[2]), "CCID 2");
        // Older peers without the field read as "no DCCP".
        let old: DccpSupport = serde_json::from_str("{}").unwrap();
        assert!(!old.available);
    }
}
