//! rtnetlink's IPv6 neighbour table (NDP), sans I/O: the `RTM_GETNEIGH` dump request and the
//! `RTM_NEWNEIGH` answers read back as (interface, address, MAC). The Wi-Fi link uses it on an
//! access point to find the station an IPv6 far end is behind. The messages ride the netlink
//! framing of [`crate::netlink`] (each answer is a [`crate::netlink::Reply::Genl`] whose
//! `body` is the `ndmsg` and its attributes); the socket is the peer's (`native-peer`'s `sys`).

use crate::netlink::{Attrs, NLM_F_DUMP, NLM_F_REQUEST, NetlinkError, ne_u16, ne_u32};

/// A neighbour entry (an answer of the dump).
pub const RTM_NEWNEIGH: u16 = 28;
/// The request for the neighbour table.
pub const RTM_GETNEIGH: u16 = 30;
/// Linux's IPv6 address family (`ndm_family`).
const AF_INET6: u8 = 10;
/// `struct ndmsg`: family, 3 bytes of padding, ifindex (s32), state (u16), flags, type.
const NDMSG_LEN: usize = 12;
/// The request's length: the netlink header and an `ndmsg`.
const REQUEST_LEN: u32 = 28;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
/// Entries whose address is not (or no longer) known: `NUD_INCOMPLETE | NUD_FAILED`.
const NUD_UNRESOLVED: u16 = 0x01 | 0x20;

/// One IPv6 neighbour with an Ethernet-sized link-layer address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbour {
    /// The interface it is on.
    pub ifindex: u32,
    /// Its IPv6 address, in network byte order.
    pub ip: [u8; 16],
    /// Its MAC address.
    pub mac: [u8; 6],
}

/// The dump request for the IPv6 neighbour table, sequence `seq` (28 bytes: the netlink
/// header and an `ndmsg` asking for `AF_INET6`).
pub fn neighbours_request(seq: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + NDMSG_LEN);
    b.extend_from_slice(&REQUEST_LEN.to_ne_bytes());
    b.extend_from_slice(&RTM_GETNEIGH.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.push(AF_INET6);
    b.resize(16 + NDMSG_LEN, 0);
    b
}

/// The neighbour in a message of type `kind` whose payload is `body`: `None` for another
/// message, another family, an unresolved entry or a link-layer address that is not 6 bytes
/// or is all zeros (loopback's entries).
pub fn neighbour_of(kind: u16, body: &[u8]) -> Result<Option<Neighbour>, NetlinkError> {
    if kind != RTM_NEWNEIGH {
        return Ok(None);
    }
    if body.len() < NDMSG_LEN {
        return Err(NetlinkError::Truncated);
    }
    if body[0] != AF_INET6 || ne_u16(body, 8) & NUD_UNRESOLVED != 0 {
        return Ok(None);
    }
    let (mut ip, mut mac) = (None, None);
    for attr in Attrs::new(&body[NDMSG_LEN..]) {
        let attr = attr?;
        match attr.kind {
            NDA_DST => ip = Some(attr.exact::<16>()?),
            NDA_LLADDR => mac = attr.exact::<6>().ok().filter(|m| *m != [0; 6]),
            _ => {}
        }
    }
    Ok(ip.zip(mac).map(|(ip, mac)| Neighbour {
        ifindex: ne_u32(body, 4),
        ip,
        mac,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::{NLMSG_DONE, Reply, replies};

    /// An `RTM_NEWNEIGH` message: ifindex, state, then the attributes.
    fn entry(ifindex: u32, state: u16, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![AF_INET6, 0, 0, 0];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&state.to_ne_bytes());
        body.extend_from_slice(&[0, 1]);
        for (kind, value) in attrs {
            body.extend_from_slice(&(4 + u16::try_from(value.len()).unwrap()).to_ne_bytes());
            body.extend_from_slice(&kind.to_ne_bytes());
            body.extend_from_slice(value);
            body.resize((body.len() + 3) & !3, 0);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&(16 + u32::try_from(body.len()).unwrap()).to_ne_bytes());
        b.extend_from_slice(&RTM_NEWNEIGH.to_ne_bytes());
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.extend_from_slice(&9u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&body);
        b
    }

    /// Every neighbour of a datagram, and whether it ended the dump.
    fn decoded(datagram: &[u8]) -> (Vec<Neighbour>, bool) {
        let (mut out, mut done) = (Vec::new(), false);
        for reply in replies(datagram) {
            match reply.expect("a whole message") {
                Reply::Genl { kind, body, .. } => out.extend(neighbour_of(kind, body).unwrap()),
                Reply::Done { .. } => done = true,
                _ => {}
            }
        }
        (out, done)
    }

    #[test]
    fn the_request_asks_for_every_ipv6_neighbour() {
        let b = neighbours_request(7);
        assert_eq!(b.len(), 28);
        assert_eq!(ne_u32(&b, 0), 28);
        assert_eq!(ne_u16(&b, 4), RTM_GETNEIGH);
        assert_eq!(ne_u16(&b, 6), 0x301);
        assert_eq!(ne_u32(&b, 8), 7);
        assert_eq!(&b[16..], &[10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn resolved_entries_are_read_and_the_rest_passed_over() {
        let ip: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mac = [2, 0, 0, 0, 1, 0];
        let mut datagram = [
            entry(3, 0x02, &[(NDA_DST, &ip), (NDA_LLADDR, &mac)]),
            // Incomplete: no address yet.
            entry(3, 0x01, &[(NDA_DST, &ip)]),
            // A link-layer address of another size (a tunnel), and loopback's zeros.
            entry(4, 0x40, &[(NDA_DST, &ip), (NDA_LLADDR, &[1, 2, 3, 4])]),
            entry(1, 0x40, &[(NDA_DST, &ip), (NDA_LLADDR, &[0; 6])]),
        ]
        .concat();
        datagram.extend_from_slice(&20u32.to_ne_bytes());
        datagram.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        datagram.extend_from_slice(&[0; 14]);
        let (all, done) = decoded(&datagram);
        assert!(done);
        assert_eq!(
            all,
            vec![Neighbour {
                ifindex: 3,
                ip,
                mac
            }]
        );
        // A destination that is not 16 bytes is the kernel's error, said as such.
        let bad = entry(3, 0x02, &[(NDA_DST, &[1, 2, 3, 4]), (NDA_LLADDR, &mac)]);
        let Some(Ok(Reply::Genl { kind, body, .. })) = replies(&bad).next() else {
            panic!("a message");
        };
        assert_eq!(
            neighbour_of(kind, body),
            Err(NetlinkError::BadSize { kind: 1, len: 4 })
        );
        // An ndmsg cut short.
        assert_eq!(
            neighbour_of(RTM_NEWNEIGH, &[10, 0, 0]),
            Err(NetlinkError::Truncated)
        );
    }

    #[test]
    fn a_kernel_dump_gives_the_reachable_neighbours() {
        // `ip -6 neigh` in a network namespace over a veth pair (fixtures/rtnetlink/
        // neigh_v6.txt): two reachable entries of 02:36:00:00:00:0b, one failed, and the
        // NOARP multicast entries.
        let text = include_str!("../fixtures/rtnetlink/neigh_v6.hex").trim();
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect();
        let (all, done) = decoded(&bytes);
        assert!(done);
        let peer: Vec<String> = all
            .iter()
            .filter(|n| n.mac == [2, 0x36, 0, 0, 0, 0x0b])
            .map(|n| format!("{} {}", n.ifindex, std::net::Ipv6Addr::from(n.ip)))
            .collect();
        assert_eq!(peer, ["8 fe80::36:ff:fe00:b", "8 fd36::b"]);
        assert!(
            all.iter()
                .all(|n| n.ip != [0xfd, 0x36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99])
        );
    }
}
