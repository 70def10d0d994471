//! Multicast UDP in perfpeer's own tests: the group a test sends to (`MulticastSpec`, in the
//! TestSpec), and what each receiver that is a perfpeer peer reported back over its control
//! connection (`GroupReceiver`, in the sender's TestResult). A receiver counts only the
//! datagrams of the sender that asked it, and never sends anything to the group or the sender.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::report::{SideReport, TestResult};
use crate::units::{format_bytes, format_rate};

/// The port a group's datagrams go to unless the request names one: beside the control (5210)
/// and data (5211) ports, and not the data port itself (the receivers bind the group's port).
pub const DEFAULT_GROUP_PORT: u16 = 5212;

/// Most receivers one test reports (each a control connection and a join on its peer).
pub const MAX_RECEIVERS: usize = 32;

/// Where a multicast test's datagrams go, and how receivers take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MulticastSpec {
    /// The group (IPv4 224.0.0.0/4 or IPv6 ff00::/8).
    pub group: IpAddr,
    /// The group's UDP port.
    pub port: u16,
    /// The datagrams' time-to-live (IPv6 hop limit): 1 keeps them on the sender's link.
    pub ttl: u8,
    /// Receivers join for the sender's address only (source-specific: IGMPv3, MLDv2); else
    /// for any source.
    #[serde(default)]
    pub source_specific: bool,
    /// The UDP port the sender sends from: each receiver takes datagrams from the sender's
    /// address and this port only. Set by the sender once its socket is bound (0 before).
    #[serde(default)]
    pub sender_port: u16,
}

impl MulticastSpec {
    /// Reads `GROUP`, `GROUP:PORT`, `[V6GROUP]` or `[V6GROUP]:PORT` (TTL 1, any source).
    pub fn parse(text: &str) -> Result<MulticastSpec, String> {
        let text = text.trim();
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("'{text}': an IPv6 group is written [ff05::1]:PORT"))?;
            let port =
                match after {
                    "" => None,
                    p => Some(p.strip_prefix(':').ok_or_else(|| {
                        format!("'{text}': a port follows the group after a colon")
                    })?),
                };
            (host, port)
        } else if text.matches(':').count() == 1 {
            let (host, port) = text.split_once(':').unwrap_or((text, ""));
            (host, Some(port))
        } else {
            (text, None)
        };
        let group: IpAddr = host
            .parse()
            .map_err(|_| format!("'{host}' is not a multicast group address"))?;
        let port = match port {
            None => DEFAULT_GROUP_PORT,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("'{p}' is not a port (1 to 65535)"))?,
        };
        let spec = MulticastSpec {
            group,
            port,
            ttl: 1,
            source_specific: false,
            sender_port: 0,
        };
        spec.check().map(|()| spec)
    }

    /// Whether the group and TTL are ones a test may use: a multicast address outside the
    /// link's reserved control block (224.0.0.0/24, ff0X::/16 scopes 0 to 2 — all hosts, all
    /// routers, routing protocols), a port and a TTL of 1 or more.
    pub fn check(&self) -> Result<(), String> {
        let reserved = match self.group {
            IpAddr::V4(g) => !g.is_multicast() || g.octets()[..3] == [224, 0, 0],
            IpAddr::V6(g) => !g.is_multicast() || (g.segments()[0] & 0x000f) <= 2,
        };
        if reserved {
            return Err(format!(
                "{} is not a group a test may use: give a multicast address outside the link's \
                 reserved block (e.g. 239.255.1.1, or ff05::1:3 for IPv6)",
                self.group
            ));
        }
        if self.port == 0 || self.ttl == 0 {
            return Err("a multicast test needs a port and a TTL of 1 to 255".into());
        }
        Ok(())
    }

    /// `239.255.1.1:5212, TTL 1` (and `, source-specific`).
    pub fn words(&self) -> String {
        let ssm = if self.source_specific {
            ", source-specific"
        } else {
            ""
        };
        format!("{}, TTL {}{ssm}", self.address(), self.ttl)
    }

    /// `239.255.1.1:5212`, `[ff05::1:3]:5212`.
    pub fn address(&self) -> String {
        std::net::SocketAddr::new(self.group, self.port).to_string()
    }
}

/// A multicast test's receivers as one target names them (the browser's field, a `run`):
/// peers separated by commas or spaces, 1 to [`MAX_RECEIVERS`] of them.
pub fn receivers_in(target: &str) -> Result<Vec<&str>, String> {
    let receivers: Vec<&str> = target
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|r| !r.is_empty())
        .collect();
    match receivers.len() {
        0 => Err("no receiving peer: name each one, with commas between them".into()),
        n if n > MAX_RECEIVERS => Err(format!(
            "a multicast test reports at most {MAX_RECEIVERS} receiving peers, got {n}"
        )),
        _ => Ok(receivers),
    }
}

/// One receiver of a multicast test, as the sender collected it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupReceiver {
    /// The receiver peer as it was named (host[:port]).
    pub peer: String,
    /// Its final report (a receiver stream per sending stream), if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SideReport>,
    /// Where that peer kept the test, if it did (its result id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
    /// Its result page there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_url: Option<String>,
    /// Why it reported nothing (refused, unreachable, lost during the test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TestResult {
    /// Each receiver of a multicast test and what it received in words, for the result page
    /// and the phone: `735 KBytes, 2.00 Mbit/s; lost 0/520 (0.00 %), jitter 0.014 ms` (and
    /// its one-way delays), or why it has no report.
    pub fn group_receiver_words(&self) -> Vec<(String, String)> {
        self.group_receivers
            .iter()
            .map(|receiver| {
                let received = receiver.report.as_ref().and_then(|r| r.received().1);
                let words = match &received {
                    Some(rx) => {
                        let mut w = format!(
                            "{}, {}",
                            format_bytes(rx.bytes as f64).trim(),
                            format_rate(rx.bits_per_second)
                        );
                        if let Some(u) = &rx.udp_rx {
                            w.push_str(&format!(
                                "; lost {}/{} ({:.2} %), jitter {:.3} ms",
                                u.lost,
                                u.expected(),
                                u.lost_percent(),
                                u.jitter_ms
                            ));
                        }
                        if let Some(d) = rx.one_way() {
                            w.push_str(&format!("; one-way delay {}", d.words()));
                        }
                        if let Some(why) = &receiver.error {
                            w.push_str(&format!("; {why}"));
                        }
                        w
                    }
                    None => format!(
                        "no report: {}",
                        receiver.error.as_deref().unwrap_or("it sent none")
                    ),
                };
                (receiver.peer.clone(), words)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse_with_and_without_ports() {
        let g = MulticastSpec::parse("239.255.1.1").unwrap();
        assert_eq!((g.address(), g.ttl), ("239.255.1.1:5212".to_string(), 1));
        assert_eq!(
            MulticastSpec::parse("239.1.2.3:6000").unwrap().address(),
            "239.1.2.3:6000"
        );
        assert_eq!(
            MulticastSpec::parse("[ff05::1:3]:7000").unwrap().address(),
            "[ff05::1:3]:7000"
        );
        assert_eq!(
            MulticastSpec::parse("ff0e::42").unwrap().address(),
            "[ff0e::42]:5212"
        );
    }

    #[test]
    fn a_target_names_one_to_32_receivers() {
        assert_eq!(
            receivers_in(" a, b:5210 [fd00::4],,").unwrap(),
            ["a", "b:5210", "[fd00::4]"]
        );
        assert!(receivers_in(" , ").is_err());
        assert!(receivers_in(&vec!["pc"; MAX_RECEIVERS + 1].join(",")).is_err());
        assert_eq!(
            receivers_in(&vec!["pc"; MAX_RECEIVERS].join(" "))
                .unwrap()
                .len(),
            32
        );
    }

    #[test]
    fn unicast_reserved_and_malformed_groups_are_refused() {
        for bad in [
            "10.0.0.1",
            "224.0.0.1",
            "224.0.0.251",
            "ff02::1",
            "ff01::1",
            "::1",
            "239.1.1.1:0",
            "239.1.1.1:x",
            "[ff05::1",
            "[ff05::1]x",
            "host.example",
            "",
        ] {
            assert!(MulticastSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
