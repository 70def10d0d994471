//! Arrival timestamps of UDP datagrams on loopback, taken by the kernel for an AF_PACKET socket
//! bound to `lo`: the same instrument for every tool, so pacing is judged alike. Needs root (or
//! CAP_NET_RAW); without it the runner says so and leaves the pacing columns out.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "FFI with AF_PACKET: libc gives its constants as c_int where the kernel's structs take u16 and sizes as usize where it takes socklen_t; each value is a small constant, and lengths and timestamps are used only after their sign is checked"
)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// SIOCGSTAMPNS: the kernel timestamp of the last packet read.
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

/// A running capture of IPv4 UDP datagrams to one destination port on `lo`.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<io::Result<Vec<(u64, usize)>>>,
}

struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.0) };
    }
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn open_lo() -> io::Result<Fd> {
    let proto = libc::c_int::from((libc::ETH_P_IP as u16).to_be());
    // SAFETY: plain socket/ioctl/bind calls with stack-allocated, correctly sized arguments.
    unsafe {
        let fd = Fd(check(libc::socket(
            libc::AF_PACKET,
            libc::SOCK_DGRAM,
            proto,
        ))?);
        let ifindex = libc::if_nametoindex(c"lo".as_ptr());
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto as u16;
        sll.sll_ifindex = ifindex as i32;
        check(libc::bind(
            fd.0,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ))?;
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 100_000,
        };
        check(libc::setsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        ))?;
        let big: libc::c_int = 64 << 20;
        let _ = libc::setsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&big as *const libc::c_int).cast(),
            4,
        );
        Ok(fd)
    }
}

/// The UDP payload length of an IPv4 packet to `port`, or `None` for anything else.
pub fn udp_payload_to(packet: &[u8], port: u16) -> Option<usize> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != libc::IPPROTO_UDP as u8 {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let udp = packet.get(ihl..ihl + 8)?;
    if u16::from_be_bytes([udp[2], udp[3]]) != port {
        return None;
    }
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    udp_len.checked_sub(8)
}

fn run(fd: Fd, port: u16, stop: &AtomicBool) -> io::Result<Vec<(u64, usize)>> {
    let mut out = Vec::with_capacity(1 << 20);
    let mut buf = [0u8; 128];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: buffers are valid for their stated lengths.
        let (n, sll) = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            let n = libc::recvfrom(
                fd.0,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
                (&mut sll as *mut libc::sockaddr_ll).cast(),
                &mut len,
            );
            (n, sll)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) {
                continue;
            }
            return Err(e);
        }
        // Loopback shows each packet twice: leaving (OUTGOING) and arriving (HOST).
        if sll.sll_pkttype != libc::PACKET_HOST {
            continue;
        }
        let seen = (n as usize).min(buf.len());
        let Some(payload) = udp_payload_to(&buf[..seen], port) else {
            continue;
        };
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: SIOCGSTAMPNS writes one timespec.
        check(unsafe { libc::ioctl(fd.0, SIOCGSTAMPNS as _, &mut ts) })?;
        out.push((
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            payload,
        ));
    }
    Ok(out)
}

impl Capture {
    /// Starts capturing datagrams to `port` on loopback.
    pub fn start(port: u16) -> io::Result<Capture> {
        let fd = open_lo()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || run(fd, port, &flag));
        Ok(Capture { stop, thread })
    }

    /// Stops and returns (arrival ns, payload bytes) in arrival order.
    pub fn finish(self) -> io::Result<Vec<(u64, usize)>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| io::Error::other("capture thread panicked"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_payload_length_is_read_from_ipv4_and_udp_headers() {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = 17;
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..26].copy_from_slice(&1408u16.to_be_bytes());
        assert_eq!(udp_payload_to(&p, 5201), Some(1400));
        assert_eq!(udp_payload_to(&p, 5202), None, "other port");
        p[9] = 6;
        assert_eq!(udp_payload_to(&p, 5201), None, "TCP");
        assert_eq!(udp_payload_to(&p[..10], 5201), None, "runt");
    }
}
