//! [`crate::sys`] where perfpeer has no implementation for the system: every call says it is
//! unavailable, and the callers take their portable path. Compiled into the tests on Linux too,
//! where each answer is checked.

// On Linux this module is built only for its tests: the live calls are `linux`'s; on
// Windows only the calls `windows` has no counterpart for are used.
#![cfg_attr(
    any(target_os = "linux", target_os = "macos", windows),
    allow(dead_code)
)]

use std::io;
use std::time::Duration;

use super::{AsSocket, HostTimes, TcpInfo, Uname};

fn unsupported(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} is not available on this system"),
    )
}

/// No netlink here (nor nl80211): the Wi-Fi link is not measured.
pub(crate) fn generic_netlink_socket(_timeout: Duration) -> io::Result<socket2::Socket> {
    Err(unsupported("netlink"))
}

/// No rtnetlink here (the neighbour table is only read for the Wi-Fi link, not measured here).
pub(crate) fn route_netlink_socket(_timeout: Duration) -> io::Result<socket2::Socket> {
    Err(unsupported("netlink"))
}

/// No batched UDP calls here: datagram streams send and receive one at a time.
pub(crate) const BATCHED_UDP: bool = false;

/// No TCP_QUICKACK here: TCP acknowledges as it does.
pub(crate) fn set_tcp_quickack(_sock: &socket2::Socket) -> io::Result<()> {
    Err(unsupported("TCP_QUICKACK"))
}

/// Nothing to do here: only Linux delivers other groups' datagrams to a group's socket.
pub(crate) fn receive_own_groups_only(_sock: &socket2::Socket, _ipv6: bool) -> io::Result<()> {
    Ok(())
}

/// No IPv6 source-specific join here (Linux's MCAST_JOIN_SOURCE_GROUP).
pub(crate) fn join_ssm_v6(
    _sock: &socket2::Socket,
    _group: std::net::Ipv6Addr,
    _source: std::net::Ipv6Addr,
    _index: u32,
) -> io::Result<()> {
    Err(unsupported(
        "an IPv6 source-specific join (-H with an IPv6 group)",
    ))
}

/// No IPv6 traffic class here.
pub(crate) fn set_tclass_v6(_sock: &socket2::Socket, _tclass: u32) -> io::Result<()> {
    Err(unsupported("the IPv6 traffic class (-S with IPv6)"))
}

/// Not used here: readers wake for any data.
pub(crate) fn set_recv_low_water<S: AsSocket>(_sock: &S, _bytes: usize) -> io::Result<()> {
    Err(unsupported("SO_RCVLOWAT"))
}

/// No socket priority here.
pub(crate) fn set_priority(_sock: &socket2::Socket, _priority: u32) -> io::Result<u32> {
    Err(unsupported("the socket priority (SO_PRIORITY)"))
}

/// No MSS setting here.
pub(crate) fn set_tcp_mss(_sock: &socket2::Socket, _mss: u32) -> io::Result<()> {
    Err(unsupported("setting the TCP MSS (-M)"))
}

/// Unknown here.
pub(crate) fn tcp_mss(_sock: &socket2::Socket) -> io::Result<u32> {
    Err(unsupported("reading the TCP MSS"))
}

/// No choice of congestion control here.
pub(crate) fn set_tcp_congestion(_sock: &socket2::Socket, _name: &str) -> io::Result<()> {
    Err(unsupported("choosing the TCP congestion control (-C)"))
}

/// Unknown here.
pub(crate) fn tcp_congestion(_sock: &socket2::Socket) -> io::Result<Vec<u8>> {
    Err(unsupported("reading the TCP congestion control"))
}

/// No SO_DEBUG here: the caller says so.
pub(crate) fn set_so_debug<S: AsSocket>(_sock: &S) -> io::Result<()> {
    Err(unsupported("SO_DEBUG"))
}

/// No batch scheduling class here: the thread keeps the default one.
pub(crate) fn run_as_batch() -> io::Result<()> {
    Err(unsupported("the batch scheduling class (SCHED_BATCH)"))
}

/// No CPU pinning here: the caller says so.
pub(crate) fn pin_to_cpu(_cpu: usize) -> io::Result<()> {
    Err(unsupported("setting the CPU affinity (-A)"))
}

/// No daemon here: the caller says so.
pub(crate) fn daemonize() -> io::Result<()> {
    Err(unsupported("running as a daemon"))
}

/// No high-resolution wait here: the caller waits in its socket's read timeout instead.
pub(crate) fn wait_readable<S: AsSocket>(_sock: &S, _timeout: Duration) -> io::Result<bool> {
    Err(unsupported("ppoll"))
}

/// Leaves the open-file limit as it is.
pub(crate) fn raise_fd_limit() {}

/// Unknown here.
pub(crate) fn unsent_bytes<S: AsSocket>(_sock: &S) -> Option<u64> {
    None
}

/// Unknown here: CPU figures are reported as not measured.
pub(crate) fn process_cpu_times() -> Option<(Duration, Duration)> {
    None
}

/// Unknown here: host CPU figures are reported as not measured.
pub(crate) fn host_cpu_times() -> Option<HostTimes> {
    None
}

/// Unknown here: budgets take their fixed defaults.
pub(crate) fn total_memory() -> Option<u64> {
    None
}

/// Unknown here: a running test's writer is named by its pid and start time alone.
pub(crate) fn boot_id() -> Option<String> {
    None
}

/// Unknown here: no process can be told alive, so a `running` row left by another process is
/// taken as abandoned.
pub(crate) fn process_start_time(_pid: u32) -> Option<String> {
    None
}

/// What std knows: the system's name and the machine.
pub(crate) fn uname() -> Option<Uname> {
    Some(Uname {
        sysname: std::env::consts::OS.to_string(),
        machine: std::env::consts::ARCH.to_string(),
        ..Uname::default()
    })
}

/// Unknown here: the store keeps its fixed default size.
pub(crate) fn filesystem_bytes(_path: &std::path::Path) -> Option<u64> {
    None
}

/// Nothing to tighten here.
pub(crate) fn tighten_timer_slack() {}

/// No error means "no buffer space" here beyond what `WouldBlock` already says.
pub(crate) fn is_no_buffer_space(_e: &io::Error) -> bool {
    false
}

/// Unavailable: the caller reads and copies.
pub(crate) fn recv_discard<S: AsSocket>(_sock: &S, _buf: &mut [u8]) -> io::Result<usize> {
    Err(unsupported("a discarding receive (MSG_TRUNC)"))
}

/// Unavailable: traffic follows the routes.
pub(crate) fn bind_device(_sock: socket2::SockRef<'_>, _device: &str) -> io::Result<()> {
    Err(unsupported("binding to a device (SO_BINDTODEVICE)"))
}

/// Unavailable: perfpeer paces in user space.
pub(crate) fn set_max_pacing_rate<S: AsSocket>(_sock: &S, _bytes_per_sec: u64) -> io::Result<()> {
    Err(unsupported("kernel pacing (SO_MAX_PACING_RATE)"))
}

/// Unknown here: no retransmit or RTT figures.
pub(crate) fn tcp_info<S: AsSocket>(_sock: &S) -> Option<TcpInfo> {
    None
}

/// Unavailable: the caller sends one datagram at a time.
pub(crate) fn send_batch<S: AsSocket>(_sock: &S, _bufs: &[Vec<u8>]) -> io::Result<usize> {
    Err(unsupported("batched UDP sends (sendmmsg)"))
}

/// Unavailable: the caller receives one datagram at a time.
pub(crate) fn recv_batch<S: AsSocket>(
    _sock: &S,
    _buf: &mut [u8],
    _slot: usize,
    _lens: &mut [usize],
) -> io::Result<usize> {
    Err(unsupported("batched UDP receives (recvmmsg)"))
}

/// Unavailable: no UDP GSO.
pub(crate) fn set_udp_segment<S: AsSocket>(_sock: &S, _size: usize) -> io::Result<()> {
    Err(unsupported("UDP segmentation offload"))
}

/// Unavailable (only DCCP uses raw options, and DCCP is Linux's).
pub(crate) fn setsockopt_bytes<S: AsSocket>(
    _sock: &S,
    _level: i32,
    _opt: i32,
    _bytes: &[u8],
) -> io::Result<()> {
    Err(unsupported("raw socket options"))
}

/// Unavailable (only DCCP uses raw options, and DCCP is Linux's).
///
/// # Safety
/// As on Linux: `T` must be plain old data.
pub(crate) unsafe fn getsockopt_into<S: AsSocket, T>(
    _sock: &S,
    _level: i32,
    _opt: i32,
    _out: &mut T,
) -> io::Result<usize> {
    Err(unsupported("raw socket options"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_says_it_is_unavailable_and_nothing_panics() {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        raise_fd_limit();
        tighten_timer_slack();
        assert_eq!(unsent_bytes(&udp), None);
        assert_eq!(process_cpu_times(), None);
        assert_eq!(host_cpu_times(), None);
        assert_eq!(total_memory(), None);
        assert_eq!(boot_id(), None);
        assert_eq!(process_start_time(std::process::id()), None);
        assert_eq!(tcp_info(&udp), None);
        assert!(!is_no_buffer_space(&io::Error::from_raw_os_error(105)));
        let u = uname().unwrap();
        assert_eq!(u.sysname, std::env::consts::OS);
        let kind = |r: io::Result<usize>| r.unwrap_err().kind();
        assert_eq!(
            kind(recv_discard(&udp, &mut [0; 8])),
            io::ErrorKind::Unsupported
        );
        assert_eq!(
            kind(send_batch(&udp, &[vec![0; 8]])),
            io::ErrorKind::Unsupported
        );
        assert_eq!(
            kind(recv_batch(&udp, &mut [0; 64], 32, &mut [0; 2])),
            io::ErrorKind::Unsupported
        );
        assert!(set_udp_segment(&udp, 1400).is_err());
        let timeout = std::time::Duration::from_millis(1);
        assert!(generic_netlink_socket(timeout).is_err());
        assert!(route_netlink_socket(timeout).is_err());
        let sock = socket2::SockRef::from(&udp);
        assert!(set_tclass_v6(&sock, 0).is_err());
        assert!(set_tcp_mss(&sock, 1000).is_err());
        assert!(tcp_mss(&sock).is_err());
        assert!(set_tcp_congestion(&sock, "cubic").is_err());
        assert!(tcp_congestion(&sock).is_err());
        assert!(set_max_pacing_rate(&udp, 1).is_err());
        assert!(setsockopt_bytes(&udp, 0, 0, &[]).is_err());
        let mut out = 0u32;
        // SAFETY: u32 is plain old data (and nothing is written here).
        assert!(unsafe { getsockopt_into(&udp, 0, 0, &mut out) }.is_err());
    }
}

/// No sendfile from a memory file here: senders write from their buffer.
#[derive(Debug)]
pub(crate) struct SendSource;

impl SendSource {
    /// Always unsupported here.
    pub(crate) fn new(_data: &[u8]) -> io::Result<SendSource> {
        Err(unsupported("sending with sendfile(2)"))
    }

    /// Never called: there is no source.
    pub(crate) fn send(
        &self,
        _sock: &impl AsSocket,
        _range: std::ops::Range<usize>,
    ) -> io::Result<usize> {
        Err(unsupported("sending with sendfile(2)"))
    }
}
