//! The medium's netlink socket: a raw `NETLINK_GENERIC` socket to the kernel with an 8 MB
//! receive buffer and reads that give up after a time limit, and a family's id by name. Bytes
//! only: the messages are perfpeer-proto's `netlink` codec's.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use perfpeer_proto::netlink::{self, Reply};

/// A raw generic netlink socket.
pub(crate) struct Nl {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

pub(crate) fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl Nl {
    /// Opened, bound, with a large receive buffer and reads that give up after `timeout`.
    pub(crate) fn open(timeout: Duration) -> Result<Nl, String> {
        // SAFETY: plain socket(2); the descriptor is owned by the OwnedFd right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(os_err("netlink socket"));
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an all-zero sockaddr_nl is valid (port id 0: the kernel picks one).
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::sa_family_t::try_from(libc::AF_NETLINK).expect("AF_NETLINK");
        let len = socklen::<libc::sockaddr_nl>();
        // SAFETY: addr is a sockaddr_nl of the given length.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) };
        if rc < 0 {
            return Err(os_err("bind netlink"));
        }
        let nl = Nl {
            fd,
            seq: 0,
            buf: vec![0; 1 << 16],
        };
        let rcvbuf: libc::c_int = 8 << 20;
        nl.set(libc::SO_RCVBUFFORCE, &rcvbuf)?;
        let tv = libc::timeval {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(1),
            tv_usec: libc::suseconds_t::from(timeout.subsec_micros()),
        };
        nl.set(libc::SO_RCVTIMEO, &tv)?;
        Ok(nl)
    }

    fn set<T>(&self, option: libc::c_int, value: &T) -> Result<(), String> {
        // SAFETY: value points at a T of the length given.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                std::ptr::from_ref(value).cast(),
                socklen::<T>(),
            )
        };
        if rc < 0 {
            return Err(os_err("setsockopt"));
        }
        Ok(())
    }

    pub(crate) fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), String> {
        // SAFETY: bytes is a valid buffer of its length; the socket sends to the kernel.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if n < 0 {
            return Err(os_err("netlink send"));
        }
        Ok(())
    }

    /// One datagram, or `None` when the read timed out or a signal came.
    pub(crate) fn recv(&mut self) -> Result<Option<&[u8]>, String> {
        let (ptr, cap) = (self.buf.as_mut_ptr(), self.buf.len());
        // SAFETY: buf is a writable buffer of cap bytes.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), ptr.cast(), cap, 0) };
        match usize::try_from(n) {
            Ok(n) => Ok(Some(&self.buf[..n])),
            Err(_) => {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => Ok(None),
                    // The kernel dropped messages for a full buffer: counted by the caller.
                    Some(libc::ENOBUFS) => Ok(Some(&[])),
                    _ => Err(format!("netlink recv: {e}")),
                }
            }
        }
    }

    /// A generic netlink family's id.
    pub(crate) fn family(&mut self, name: &str) -> Result<u16, String> {
        let seq = self.next_seq();
        self.send(&netlink::get_family(name, seq))?;
        let datagram = self.recv()?.ok_or(format!("no answer for family {name}"))?;
        for reply in netlink::replies(datagram) {
            match reply.map_err(|e| e.to_string())? {
                Reply::Genl { attrs, .. } => {
                    return netlink::family_id(attrs).ok_or(format!("{name}: no family id"));
                }
                Reply::Error { errno, .. } if errno != 0 => {
                    return Err(format!("family {name}: errno {errno}"));
                }
                _ => {}
            }
        }
        Err(format!("family {name}: no answer"))
    }
}

fn socklen<T>() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<T>()).expect("small struct")
}
