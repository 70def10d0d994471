//! Multicast sockets: a receiver's (`perfpeer iperf -s -u -B GROUP[%DEV] [-H SOURCE]`, and a
//! perfpeer peer receiving a group test for the client that asked it) bound to the group's
//! address and port and joined on an interface (any-source, IGMP/MLD, or one source only:
//! IGMPv3 or MLDv2); and a sender's, with its TTL and the interface it leaves by. A multicast
//! receiver never answers: nothing is sent to a group's flow or to the group.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use socket2::{Domain, InterfaceIndexOrAddress, SockRef, Socket, Type};

/// The group to receive, where, and from whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Join {
    /// The group.
    pub group: IpAddr,
    /// The interface to join on (the routes' choice if none).
    pub device: Option<String>,
    /// Or the interface that holds this address (where no device is named).
    pub local: Option<IpAddr>,
    /// Only this source's datagrams (SSM), if given.
    pub source: Option<IpAddr>,
}

impl Join {
    /// The line the server prints once joined, as iperf 2 says it.
    pub(crate) fn joined_line(&self) -> String {
        let on = self
            .device
            .as_ref()
            .map_or_else(String::new, |d| format!(" on {d}"));
        match self.source {
            Some(source) => format!("Joining multicast (S,G)={source},{}{on}", self.group),
            None => format!("Joining multicast group {}{on}", self.group),
        }
    }
}

/// An interface's index, from sysfs (Linux): what IGMP/MLD joins name an interface by.
fn interface_index(device: &str) -> io::Result<u32> {
    let path = format!("/sys/class/net/{device}/ifindex");
    std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("no interface {device}: {e}")))?
        .trim()
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}")))
}

/// A UDP socket bound to `join.group`:`port` and joined as `join` says.
pub(crate) fn bind_and_join(join: &Join, port: u16) -> io::Result<std::net::UdpSocket> {
    if !join.group.is_multicast() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a multicast group", join.group),
        ));
    }
    let addr = SocketAddr::new(join.group, port);
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    socket.set_reuse_address(true)?;
    let _ = socket.set_recv_buffer_size(4 << 20);
    let index = match (&join.device, join.local) {
        (Some(device), _) => {
            crate::sys::bind_device(SockRef::from(&socket), device)?;
            Some(interface_index(device)?)
        }
        (None, Some(IpAddr::V6(local))) => Some(index_of_v6(local)?),
        (None, _) => None,
    };
    let v4_interface = match join.local {
        Some(IpAddr::V4(local)) if index.is_none() => local,
        _ => Ipv4Addr::UNSPECIFIED,
    };
    socket.bind(&addr.into())?;
    match (join.group, join.source) {
        (IpAddr::V4(group), None) => {
            let interface = index.map_or(
                InterfaceIndexOrAddress::Address(v4_interface),
                InterfaceIndexOrAddress::Index,
            );
            socket.join_multicast_v4_n(&group, &interface)?;
            crate::sys::receive_own_groups_only(&socket, false)?;
        }
        (IpAddr::V4(group), Some(IpAddr::V4(source))) => {
            socket.join_ssm_v4(&source, &group, &v4_interface)?;
            crate::sys::receive_own_groups_only(&socket, false)?;
        }
        (IpAddr::V6(group), None) => {
            socket.join_multicast_v6(&group, index.unwrap_or(0))?;
            crate::sys::receive_own_groups_only(&socket, true)?;
        }
        (IpAddr::V6(group), Some(IpAddr::V6(source))) => {
            crate::sys::join_ssm_v6(&socket, group, source, index.unwrap_or(0))?;
            crate::sys::receive_own_groups_only(&socket, true)?;
        }
        (IpAddr::V6(_), Some(IpAddr::V4(_))) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "-H: an IPv6 group's source is an IPv6 address",
            ));
        }
        (IpAddr::V4(_), Some(IpAddr::V6(_))) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "-H: an IPv4 group's source is an IPv4 address",
            ));
        }
    }
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// The index of the interface that holds IPv6 address `local` (Linux: /proc/net/if_inet6),
/// what an MLD join names an interface by.
fn index_of_v6(local: std::net::Ipv6Addr) -> io::Result<u32> {
    let hex: String = local.octets().iter().map(|b| format!("{b:02x}")).collect();
    let table = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    table
        .lines()
        .filter_map(|line| {
            let mut cols = line.split_whitespace();
            let (addr, index) = (cols.next()?, cols.next()?);
            (addr == hex).then(|| u32::from_str_radix(index, 16).ok())?
        })
        .next()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface holds {local} to join the group on"),
            )
        })
}

/// A UDP socket that sends to `group`:`port` from `local` (its interface, or `device`'s if
/// named), with datagrams that live `ttl` hops; connected, so the engine's sender runs on it
/// as on any stream. Loopback stays on: a receiver on the sender's own host gets the group too.
pub(crate) fn sender_socket(
    group: IpAddr,
    port: u16,
    ttl: u8,
    local: IpAddr,
    device: Option<&str>,
) -> io::Result<std::net::UdpSocket> {
    let to = SocketAddr::new(group, port);
    let socket = Socket::new(Domain::for_address(to), Type::DGRAM, None)?;
    let index = match device {
        Some(device) => {
            crate::sys::bind_device(SockRef::from(&socket), device)?;
            Some(interface_index(device)?)
        }
        None => None,
    };
    match (group, local) {
        (IpAddr::V4(_), IpAddr::V4(local)) => {
            // A named device is bound above (SO_BINDTODEVICE): it decides the interface.
            socket.set_multicast_ttl_v4(u32::from(ttl))?;
            if !local.is_unspecified() {
                socket.set_multicast_if_v4(&local)?;
            }
        }
        (IpAddr::V6(_), IpAddr::V6(local)) => {
            socket.set_multicast_hops_v6(u32::from(ttl))?;
            let index = match index {
                Some(i) => i,
                None => index_of_v6(local)?,
            };
            socket.set_multicast_if_v6(index)?;
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the group {group} and this end's address {local} are not one family"),
            ));
        }
    }
    socket.bind(&SocketAddr::new(local, 0).into())?;
    socket.connect(&to.into())?;
    Ok(socket.into())
}

/// The address of this host that faces `peer` (the one its route there leaves from): the
/// interface a receiver joins a group on when its sender is `peer`. Sends nothing.
pub(crate) fn local_toward(peer: IpAddr) -> io::Result<IpAddr> {
    let any = if peer.is_ipv6() {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    let probe = std::net::UdpSocket::bind(SocketAddr::new(any, 0))?;
    probe.connect(SocketAddr::new(peer, 9))?;
    Ok(probe.local_addr()?.ip())
}
