//! Receiving a multicast group for `perfpeer iperf -s -u -B GROUP[%DEV] [-H SOURCE]`: the UDP
//! socket bound to the group's address and port, joined on the interface asked for (any-source,
//! IGMP/MLD), or to one source only (source-specific: IGMPv3 or MLDv2). A multicast receiver never
//! answers: the server sends no report to a flow that came to a group.

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
    let index = match &join.device {
        Some(device) => {
            crate::sys::bind_device(SockRef::from(&socket), device)?;
            Some(interface_index(device)?)
        }
        None => None,
    };
    socket.bind(&addr.into())?;
    match (join.group, join.source) {
        (IpAddr::V4(group), None) => {
            let interface = index.map_or(
                InterfaceIndexOrAddress::Address(Ipv4Addr::UNSPECIFIED),
                InterfaceIndexOrAddress::Index,
            );
            socket.join_multicast_v4_n(&group, &interface)?;
            crate::sys::receive_own_groups_only(&socket, false)?;
        }
        (IpAddr::V4(group), Some(IpAddr::V4(source))) => {
            socket.join_ssm_v4(&source, &group, &Ipv4Addr::UNSPECIFIED)?;
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
