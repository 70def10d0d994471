//! The Linux side of [`crate::sys`]: each call with its `unsafe` block and why it is sound (the
//! calls POSIX systems share are `unix`'s).

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::unix::{check, socklen_of};
use super::{BATCH, HostTimes, TcpInfo};

pub(crate) use super::unix::{
    filesystem_bytes, is_no_buffer_space, process_cpu_times, raise_fd_limit, set_so_debug, uname,
};

/// `sendmmsg` and `recvmmsg` are there.
pub(crate) const BATCHED_UDP: bool = true;

/// Binds `sock` to the network interface `device` (SO_BINDTODEVICE: its traffic leaves and
/// arrives only there, whatever the routes say — iperf3's `--bind-dev`).
pub(crate) fn bind_device(sock: socket2::SockRef<'_>, device: &str) -> io::Result<()> {
    sock.bind_device(Some(device.as_bytes()))
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind to device {device}: {e}")))
}

/// A generic netlink socket (nl80211's family, for the Wi-Fi link beside a test); reads time
/// out after `timeout`. The kernel binds it to a port of its own at the first send.
pub(crate) fn generic_netlink_socket(timeout: Duration) -> io::Result<socket2::Socket> {
    netlink_socket(libc::NETLINK_GENERIC, timeout)
}

/// An rtnetlink socket (the IPv6 neighbour table, for the station an IPv6 far end is
/// behind); reads time out after `timeout`.
pub(crate) fn route_netlink_socket(timeout: Duration) -> io::Result<socket2::Socket> {
    netlink_socket(libc::NETLINK_ROUTE, timeout)
}

fn netlink_socket(protocol: libc::c_int, timeout: Duration) -> io::Result<socket2::Socket> {
    let sock = socket2::Socket::new(
        socket2::Domain::from(libc::AF_NETLINK),
        socket2::Type::RAW,
        Some(socket2::Protocol::from(protocol)),
    )?;
    sock.set_read_timeout(Some(timeout))?;
    Ok(sock)
}

/// Asks TCP to acknowledge at once for now (TCP_QUICKACK; it turns itself off again).
pub(crate) fn set_tcp_quickack(sock: &socket2::Socket) -> io::Result<()> {
    sock.set_tcp_quickack(true)
}

/// A socket bound to a multicast group gets that group's datagrams only, not those of every
/// group another socket of this host joined (IP_MULTICAST_ALL / IPV6_MULTICAST_ALL off).
pub(crate) fn receive_own_groups_only(sock: &socket2::Socket, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        sock.set_multicast_all_v6(false)
    } else {
        sock.set_multicast_all_v4(false)
    }
}

/// Joins IPv6 `group` for `source`'s datagrams only (an (S,G) join, MLDv2's source-specific
/// membership) on interface `index` (0: the one the kernel routes the group to). socket2 joins
/// IPv4 (S,G) only; this is MCAST_JOIN_SOURCE_GROUP (RFC 3678), which Linux takes for both.
pub(crate) fn join_ssm_v6(
    sock: &socket2::Socket,
    group: std::net::Ipv6Addr,
    source: std::net::Ipv6Addr,
    index: u32,
) -> io::Result<()> {
    let storage_of = |addr: std::net::Ipv6Addr| {
        let v6: socket2::SockAddr = std::net::SocketAddr::from((addr, 0)).into();
        v6.as_storage()
    };
    // SAFETY: group_source_req is plain old data (an integer and two sockaddr_storage).
    let mut req: libc::group_source_req = unsafe { std::mem::zeroed() };
    req.gsr_interface = index;
    // SAFETY: both are sockaddr_storage, socket2's of an IPv6 address: the same layout.
    unsafe {
        std::ptr::copy_nonoverlapping(
            std::ptr::from_ref(&storage_of(group)).cast::<u8>(),
            std::ptr::from_mut(&mut req.gsr_group).cast::<u8>(),
            std::mem::size_of::<libc::sockaddr_storage>(),
        );
        std::ptr::copy_nonoverlapping(
            std::ptr::from_ref(&storage_of(source)).cast::<u8>(),
            std::ptr::from_mut(&mut req.gsr_source).cast::<u8>(),
            std::mem::size_of::<libc::sockaddr_storage>(),
        );
    }
    // SAFETY: `req` lives across the call and its size is given; the kernel copies it.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::MCAST_JOIN_SOURCE_GROUP,
            std::ptr::from_ref(&req).cast(),
            socklen_of::<libc::group_source_req>(),
        )
    };
    check(rc).map(|_| ())
}

/// Sets the IPv6 traffic class (the TOS byte's place in IPv6).
pub(crate) fn set_tclass_v6(sock: &socket2::Socket, tclass: u32) -> io::Result<()> {
    sock.set_tclass_v6(tclass)
}

/// Wakes a reader only once `bytes` are queued (SO_RCVLOWAT), or its receive timeout passes,
/// or the stream ends.
pub(crate) fn set_recv_low_water(sock: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_bytes(
        sock,
        libc::SOL_SOCKET,
        libc::SO_RCVLOWAT,
        &value.to_ne_bytes(),
    )
}

/// Sets the socket's priority (SO_PRIORITY: the queueing class traffic control and Wi-Fi
/// access categories read) and returns what the kernel then holds. Above 6 it needs
/// CAP_NET_ADMIN.
pub(crate) fn set_priority(sock: &socket2::Socket, priority: u32) -> io::Result<u32> {
    sock.set_priority(priority)?;
    sock.priority()
}

/// Sets the TCP maximum segment size (TCP_MAXSEG).
pub(crate) fn set_tcp_mss(sock: &socket2::Socket, mss: u32) -> io::Result<()> {
    sock.set_tcp_mss(mss)
}

/// The TCP maximum segment size (TCP_MAXSEG).
pub(crate) fn tcp_mss(sock: &socket2::Socket) -> io::Result<u32> {
    sock.tcp_mss()
}

/// Chooses the TCP congestion control by name (TCP_CONGESTION).
pub(crate) fn set_tcp_congestion(sock: &socket2::Socket, name: &str) -> io::Result<()> {
    sock.set_tcp_congestion(name.as_bytes())
}

/// The TCP congestion control's name, NUL-padded as the kernel gives it.
pub(crate) fn tcp_congestion(sock: &socket2::Socket) -> io::Result<Vec<u8>> {
    sock.tcp_congestion()
}

/// Pins the calling thread — and every thread it starts afterwards — to CPU `cpu` (`iperf3
/// -A`). Call it before the runtime's threads exist, so the whole process runs there.
pub(crate) fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes one bit inside it for an index we checked
    // is below its size; sched_setaffinity reads the set we pass with its true size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))
        .map(|_| ())
    }
}

/// Makes the calling thread a batch thread (SCHED_BATCH): woken, it does not preempt the thread
/// that is running but waits for that one's time slice to end. Its share of the CPU is
/// unchanged (same policy class, same nice level); busy threads sharing a core then take turns
/// by slice instead of switching at every wake-up.
pub(crate) fn run_as_batch() -> io::Result<()> {
    // SAFETY: sched_param is plain data (musl's has reserved fields, so it is zeroed, not built);
    // pthread_self names this thread, alive for the call; the parameter is only read.
    let err = unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_BATCH, &param)
    };
    match err {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Goes on in the background (`iperf3 -s -D`): forks, the parent exits, the child leaves the
/// terminal's session, works from `/` and has stdin, stdout and stderr on /dev/null. Call it
/// before any thread is started.
pub(crate) fn daemonize() -> io::Result<()> {
    // SAFETY: daemon(3) forks and calls setsid; the caller guarantees no other thread exists.
    check(unsafe { libc::daemon(0, 0) }).map(|_| ())
}

/// Bytes a TCP socket holds that the peer has not acknowledged (TIOCOUTQ); `None` if the
/// kernel does not say.
pub(crate) fn unsent_bytes(sock: &impl AsRawFd) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one int through the pointer we pass.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    (rc == 0).then(|| u64::try_from(n).unwrap_or(0))
}

/// Asks the kernel for 1 µs timer slack on this thread so short sleeps end on time.
pub(crate) fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            libc::c_ulong::from(1000u16),
            0,
            0,
            0,
        );
    }
}

/// Waits until `sock` has something to read or `timeout` passes (ppoll: a high-resolution
/// timer, where a socket's SO_RCVTIMEO counts in scheduler ticks of up to 10 ms). `Ok(false)`:
/// the time passed, or a signal came.
pub(crate) fn wait_readable(sock: &impl AsRawFd, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // time_t and c_long are 32 bits on the 32-bit DUT targets: the conversions can fail there.
    // (time_t is not named: the libc crate marks it deprecated on 32-bit musl, whose libc.a
    // still has the 32-bit calls it describes, until 2038.)
    #[allow(
        clippy::unnecessary_fallible_conversions,
        reason = "fallible where c_long is 32 bits"
    )]
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(i32::MAX.into()),
        tv_nsec: libc::c_long::try_from(timeout.subsec_nanos()).unwrap_or(0),
    };
    // SAFETY: one valid pollfd and a valid timespec, both living through the call; no signal
    // mask is changed (null).
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    match n {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// Receives up to `buf.len()` bytes of a TCP socket and lets the kernel drop them instead of
/// copying them out (MSG_TRUNC); returns how many bytes were consumed.
pub(crate) fn recv_discard(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes; with MSG_TRUNC the kernel does not even
        // write to it.
        let n = unsafe {
            libc::recv(
                sock.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
            )
        };
        if let Ok(n) = usize::try_from(n) {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Caps the kernel's pacing of this socket at `bytes_per_sec` (SO_MAX_PACING_RATE): TCP paces
/// itself to it, and the fq qdisc does for any socket.
pub(crate) fn set_max_pacing_rate(sock: &impl AsRawFd, bytes_per_sec: u64) -> io::Result<()> {
    // SAFETY: a plain setsockopt with a u64 value and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&bytes_per_sec as *const u64).cast(),
            socklen_of::<u64>(),
        )
    };
    check(rc).map(|_| ())
}

/// Reads TCP_INFO; `None` if the kernel refuses or writes too little of it to hold the fields
/// perfpeer reads (qemu-user, say, passes on only an int's worth).
pub(crate) fn tcp_info(sock: &impl AsRawFd) -> Option<TcpInfo> {
    // The last field read; every other one lies before it.
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_total_retrans) + 4;
    // SAFETY: we pass a zeroed tcp_info and its true size; the kernel writes at most that much.
    let info = unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = socklen_of::<libc::tcp_info>();
        let rc = libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 || (len as usize) < needed {
            return None;
        }
        (info, len as usize)
    };
    let (info, len) = info;
    let has_snd_wnd = len >= std::mem::offset_of!(libc::tcp_info, tcpi_snd_wnd) + 4;
    Some(TcpInfo {
        total_retrans: info.tcpi_total_retrans,
        snd_cwnd: info.tcpi_snd_cwnd,
        snd_mss: info.tcpi_snd_mss,
        rtt: info.tcpi_rtt,
        rttvar: info.tcpi_rttvar,
        pmtu: info.tcpi_pmtu,
        snd_wnd: has_snd_wnd.then_some(info.tcpi_snd_wnd),
    })
}

/// `sendmmsg` of `bufs` (at most [`BATCH`]) on a connected UDP socket; returns how many
/// datagrams the kernel took.
pub(crate) fn send_batch(sock: &impl AsRawFd, bufs: &[Vec<u8>]) -> io::Result<usize> {
    let n = bufs.len().min(BATCH);
    // SAFETY: zeroed iovec/mmsghdr are valid "empty" values; each msghdr points at one iovec
    // that points into a live buffer, and all of it outlives the call.
    let rc = unsafe {
        let mut iov: [libc::iovec; BATCH] = std::mem::zeroed();
        let mut msgs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
        for i in 0..n {
            iov[i] = libc::iovec {
                iov_base: bufs[i].as_ptr() as *mut libc::c_void,
                iov_len: bufs[i].len(),
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        let count = libc::c_uint::try_from(n).expect("at most BATCH");
        libc::sendmmsg(sock.as_raw_fd(), msgs.as_mut_ptr(), count, 0)
    };
    check(rc).map(|sent| usize::try_from(sent).unwrap_or(0))
}

/// `recvmmsg` into `buf` cut in slots of `slot` bytes; fills `lens` with each datagram's true
/// length (MSG_TRUNC) and returns the count. Waits (up to the socket timeout) for the first.
pub(crate) fn recv_batch(
    sock: &impl AsRawFd,
    buf: &mut [u8],
    slot: usize,
    lens: &mut [usize],
) -> io::Result<usize> {
    let n = (buf.len() / slot).min(BATCH).min(lens.len());
    // SAFETY: as in `send_batch`; each iovec covers its own slot of `buf`.
    unsafe {
        let mut iov: [libc::iovec; BATCH] = std::mem::zeroed();
        let mut msgs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
        for i in 0..n {
            iov[i] = libc::iovec {
                iov_base: buf.as_mut_ptr().add(i * slot).cast(),
                iov_len: slot,
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        let flags = libc::MSG_WAITFORONE | libc::MSG_TRUNC;
        let count = libc::c_uint::try_from(n).expect("at most BATCH");
        let rc = libc::recvmmsg(
            sock.as_raw_fd(),
            msgs.as_mut_ptr(),
            count,
            // c_int in glibc's declaration, c_uint in musl's.
            flags as _,
            std::ptr::null_mut(),
        );
        let got = usize::try_from(check(rc)?).unwrap_or(0);
        for i in 0..got {
            lens[i] = msgs[i].msg_len as usize;
        }
        Ok(got)
    }
}

/// `SOL_UDP` option: segment size for UDP GSO.
const UDP_SEGMENT: libc::c_int = 103;

/// Sets (or with 0 clears) a UDP socket's GSO segment size.
pub(crate) fn set_udp_segment(sock: &impl AsRawFd, size: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "segment size too large"))?;
    // SAFETY: a plain setsockopt with an int value and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_UDP,
            UDP_SEGMENT,
            (&v as *const libc::c_int).cast(),
            socklen_of::<libc::c_int>(),
        )
    };
    check(rc).map(|_| ())
}

/// setsockopt with a value given as its bytes.
pub(crate) fn setsockopt_bytes(
    sock: &impl AsRawFd,
    level: i32,
    opt: i32,
    bytes: &[u8],
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option value too large"))?;
    // SAFETY: `bytes` is valid for its length; the kernel copies it.
    let rc = unsafe { libc::setsockopt(sock.as_raw_fd(), level, opt, bytes.as_ptr().cast(), len) };
    check(rc).map(|_| ())
}

/// getsockopt into `out`; returns the length the kernel wrote.
///
/// # Safety
/// `T` must be plain old data (an integer, a byte array, a `repr(C)` struct of those): the
/// kernel writes any bytes into it.
pub(crate) unsafe fn getsockopt_into<T>(
    sock: &impl AsRawFd,
    level: i32,
    opt: i32,
    out: &mut T,
) -> io::Result<usize> {
    let mut len = socklen_of::<T>();
    // SAFETY: `out` is a valid, writable `T` of `len` bytes, and the caller promises any bytes
    // are a valid `T`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            opt,
            (out as *mut T).cast(),
            &mut len,
        )
    };
    check(rc)?;
    Ok(len as usize)
}

/// The host's CPU times (the first line of /proc/stat, in clock ticks).
pub(crate) fn host_cpu_times() -> Option<HostTimes> {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| parse_proc_stat(&t))
}

/// Parses /proc/stat's text; `None` if the aggregate `cpu` line is missing or malformed.
fn parse_proc_stat(text: &str) -> Option<HostTimes> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let mut fields = first.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields
        .map(|f| f.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if v.len() < 7 {
        return None;
    }
    let steal = v.get(7).copied().unwrap_or(0);
    let cpus = text
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    let cpus = u32::try_from(cpus).unwrap_or(u32::MAX);
    Some(HostTimes {
        user: v[0] + v[1],
        system: v[2] + v[5] + v[6],
        total: v[..7].iter().sum::<u64>() + steal,
        cpus,
    })
}

/// The machine's memory in bytes (MemTotal of /proc/meminfo).
pub(crate) fn total_memory() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total(&text))
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// This boot's id (/proc/sys/kernel/random/boot_id).
pub(crate) fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// When process `pid` started (field 22 of /proc/<pid>/stat, in clock ticks since boot), as
/// text; `None` if there is no such process.
pub(crate) fn process_start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 10 3 2 0 0 0\ncpu0 50 2 25 400 5 1 1 0 0 0\ncpu1 50 3 25 400 5 2 1 0 0 0\nintr 1\n";

    #[test]
    fn proc_stat_is_parsed() {
        let h = parse_proc_stat(STAT).unwrap();
        assert_eq!(
            h,
            HostTimes {
                user: 105,
                system: 55,
                total: 970,
                cpus: 2
            }
        );
        assert_eq!(parse_proc_stat("intr 5\n"), None);
        assert_eq!(parse_proc_stat("cpu 1 2 x\n"), None);
    }

    #[test]
    fn meminfo_is_parsed() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(mem_total("garbage"), None);
    }
}

/// A payload kept in kernel memory (a memfd), sent with sendfile(2): the sender's pages are
/// referenced by the socket instead of copied from user memory on every send. The file is
/// never written after it is made, so pages still in flight keep their bytes.
#[derive(Debug)]
pub(crate) struct SendSource {
    file: std::fs::File,
    len: usize,
}

impl SendSource {
    /// A memfd holding `data`; fails where memfds are missing (Linux before 3.17).
    pub(crate) fn new(data: &[u8]) -> io::Result<SendSource> {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        // SAFETY: a NUL-terminated name and flags; the result is checked before use.
        let fd = unsafe { libc::memfd_create(c"perfpeer-payload".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.write_all(data)?;
        Ok(SendSource {
            file,
            len: data.len(),
        })
    }

    /// Sends bytes `range` of the payload on `sock`; how many went (a socket timeout with
    /// nothing sent is `WouldBlock`, as a write's).
    pub(crate) fn send(
        &self,
        sock: &impl AsRawFd,
        range: std::ops::Range<usize>,
    ) -> io::Result<usize> {
        let range = range.start.min(self.len)..range.end.min(self.len);
        let mut offset = libc::off_t::try_from(range.start)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        loop {
            // SAFETY: both descriptors are open; `offset` is a valid off_t the call advances.
            let n = unsafe {
                libc::sendfile(
                    sock.as_raw_fd(),
                    self.file.as_raw_fd(),
                    &raw mut offset,
                    range.len(),
                )
            };
            if let Ok(n) = usize::try_from(n) {
                return Ok(n);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Moves the calling thread into a network namespace of its own (tests that lay out links
/// with `ip`); false where that is not allowed (not root).
#[cfg(test)]
pub(crate) fn enter_own_net_namespace() -> bool {
    // SAFETY: a plain call; it changes only this thread's network namespace.
    unsafe { libc::unshare(libc::CLONE_NEWNET) == 0 }
}

/// The index of interface `name` in this thread's network namespace (0: none).
#[cfg(test)]
pub(crate) fn interface_index(name: &std::ffi::CStr) -> u32 {
    // SAFETY: a NUL-terminated name; the call only reads it.
    unsafe { libc::if_nametoindex(name.as_ptr()) }
}
