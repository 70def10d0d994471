//! `hwsim_medium dump IFNAME`: nl80211's answers about one interface, as the kernel wrote them,
//! one `NLDUMP <kind> <hex>` line each, for the Wi-Fi test to save as the codec's fixtures.
//! The requests are perfpeer-proto's own (`nl80211::*_request`).

use std::ffi::CString;
use std::time::Duration;

use perfpeer_proto::netlink::{self, Reply};
use perfpeer_proto::nl80211;

use super::nl::{Nl, os_err};

/// Each message of a datagram, as bytes (netlink lengths, 4-byte aligned).
fn messages(datagram: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while rest.len() >= 16 {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < 16 || len > rest.len() {
            break;
        }
        out.push(&rest[..len]);
        rest = &rest[((len + 3) & !3).min(rest.len())..];
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Prints the interface's own message of the interface dump, and every datagram of its
/// station and survey dumps.
pub(crate) fn run(ifname: &str) -> Result<(), String> {
    let name = CString::new(ifname).map_err(|e| e.to_string())?;
    // SAFETY: name is a NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(os_err(ifname));
    }
    let mut nl = Nl::open(Duration::from_secs(5))?;
    let family = nl.family(nl80211::FAMILY)?;
    for kind in ["interface", "station", "survey"] {
        let seq = nl.next_seq();
        let request = match kind {
            "interface" => nl80211::interfaces_request(family, seq),
            "station" => nl80211::stations_request(family, seq, ifindex),
            _ => nl80211::survey_request(family, seq, ifindex),
        };
        nl.send(&request)?;
        while !print_answer(&mut nl, kind, ifindex)? {}
    }
    Ok(())
}

/// Prints one datagram of a dump's answer; whether it held the dump's end.
fn print_answer(nl: &mut Nl, kind: &str, ifindex: u32) -> Result<bool, String> {
    let datagram = nl.recv()?.ok_or(format!("{kind} dump: no answer"))?;
    if kind != "interface" {
        println!("NLDUMP {kind} {}", hex(datagram));
    }
    for msg in messages(datagram) {
        let Some(reply) = netlink::replies(msg).next() else {
            continue;
        };
        match reply.map_err(|e| e.to_string())? {
            Reply::Genl { cmd, attrs, .. } if kind == "interface" => {
                let found = nl80211::interface_of(cmd, attrs).map_err(|e| e.to_string())?;
                if found.is_some_and(|i| i.ifindex == ifindex) {
                    println!("NLDUMP {kind} {}", hex(msg));
                }
            }
            Reply::Done { .. } => return Ok(true),
            Reply::Error { errno, .. } if errno != 0 => {
                return Err(format!("{kind} dump: errno {errno}"));
            }
            _ => {}
        }
    }
    Ok(false)
}
