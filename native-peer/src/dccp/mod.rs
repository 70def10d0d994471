//! DCCP sockets for the data plane, behind a platform seam: `linux.rs` makes SOCK_DCCP sockets
//! and reads the kernel's DCCP options; `fallback.rs` (other systems) says DCCP is unsupported.
//! Capability detection tells a kernel without DCCP (Linux ≥ 6.16, or built without it) apart
//! from modules that are merely not loaded. No test logic here.

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod imp;
#[cfg(not(target_os = "linux"))]
#[path = "fallback.rs"]
mod imp;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use perfpeer_shared::dccp::DccpStreamInfo;
use socket2::{SockRef, Socket};

pub(crate) use imp::support;

/// A connected DCCP socket: one datagram per send, one per recv.
#[derive(Debug)]
pub(crate) struct DccpSocket {
    inner: Socket,
}

/// Longest pause between retries when the kernel's DCCP send queue is full (EAGAIN).
const MAX_BACKOFF: Duration = Duration::from_millis(2);

impl DccpSocket {
    /// Connects to `server` with `service` (and `ccid` for both half-connections, if given).
    pub(crate) fn connect(
        server: SocketAddr,
        bind: Option<IpAddr>,
        service: u32,
        ccid: Option<u8>,
        timeout: Duration,
    ) -> io::Result<DccpSocket> {
        imp::connect(server, bind, service, ccid, timeout).map(|inner| DccpSocket { inner })
    }

    /// Socket options (buffers, TOS) go through this.
    pub(crate) fn sock_ref(&self) -> SockRef<'_> {
        SockRef::from(&self.inner)
    }

    /// Sends one datagram. A full send queue (EAGAIN, even on a blocking DCCP socket) is
    /// retried with a short back-off until the write timeout passes, then reported as
    /// `WouldBlock` for the caller to retry.
    pub(crate) fn send(&self, buf: &[u8]) -> io::Result<usize> {
        let limit = self
            .inner
            .write_timeout()?
            .unwrap_or(Duration::from_secs(1));
        let start = Instant::now();
        let mut backoff = Duration::from_micros(50);
        loop {
            match self.inner.send(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && start.elapsed() < limit => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                other => return other,
            }
        }
    }

    /// Receives one datagram. A closed connection reads as `WouldBlock` after the read timeout
    /// (the receive loop's drain logic ends the stream), so it never spins.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `u8` and `MaybeUninit<u8>` have the same layout; recv only writes into it.
        let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
        match self.inner.recv(uninit) {
            Ok(0) if !buf.is_empty() => {
                std::thread::sleep(
                    self.inner
                        .read_timeout()?
                        .unwrap_or(Duration::from_millis(50)),
                );
                Err(io::ErrorKind::WouldBlock.into())
            }
            other => other,
        }
    }

    /// SO_RCVTIMEO.
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_read_timeout(t)
    }

    /// SO_SNDTIMEO (also bounds the EAGAIN back-off in [`DccpSocket::send`]).
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.inner.set_write_timeout(t)
    }

    /// Local address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()?.as_socket().ok_or_else(not_ip)
    }

    /// Peer address.
    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()?.as_socket().ok_or_else(not_ip)
    }

    /// What the kernel says about this connection now (CCIDs, MPS, and for CCID 3 the TFRC
    /// state of the half-connection that carries data: the sender's if `sending`, else the
    /// receiver's; the idle half's figures mean nothing).
    pub(crate) fn info(&self, sending: bool) -> DccpStreamInfo {
        let mut info = imp::stream_info(&self.inner);
        if sending {
            info.tfrc_rx = None;
        } else {
            info.tfrc_tx = None;
        }
        info
    }

    /// Socket buffers big enough that a burst is not dropped at the receiver (as for UDP),
    /// unless the test sets its own window.
    pub(crate) fn set_default_buffers(&self) {
        set_big_buffers(&self.inner);
    }

    /// The path's current maximum packet size (DCCP_SOCKOPT_GET_CUR_MPS).
    pub(crate) fn cur_mps(&self) -> Option<u32> {
        imp::stream_info(&self.inner).cur_mps
    }
}

/// Buffer size for DCCP data sockets without `-w`, as UDP streams get.
const DEFAULT_BUFFER: usize = 4 << 20;

fn set_big_buffers(s: &Socket) {
    let _ = s.set_recv_buffer_size(DEFAULT_BUFFER);
    let _ = s.set_send_buffer_size(DEFAULT_BUFFER);
}

fn not_ip() -> io::Error {
    io::Error::other("not an IP socket")
}

/// A listening DCCP socket on the data port.
#[derive(Debug)]
pub(crate) struct DccpListener {
    inner: Socket,
}

impl DccpListener {
    /// Listens on `addr` (dual-stack for `[::]`) for the service codes in `services`.
    pub(crate) fn bind(addr: SocketAddr, services: &[u32]) -> io::Result<DccpListener> {
        let inner = imp::listen(addr, services)?;
        // Accepted sockets inherit these; a test's -w is applied after accept.
        set_big_buffers(&inner);
        Ok(DccpListener { inner })
    }

    /// Waits up to `timeout` for a connection (`WouldBlock` when none came).
    pub(crate) fn accept(&self, timeout: Duration) -> io::Result<(DccpSocket, SocketAddr)> {
        self.inner.set_read_timeout(Some(timeout))?;
        let (socket, from) = self.inner.accept()?;
        socket.set_nonblocking(false)?;
        let from = from.as_socket().ok_or_else(not_ip)?;
        Ok((DccpSocket { inner: socket }, from))
    }
}

/// What was found out about the kernel when no DCCP socket could be made.
// Read on Linux only; the diagnosis is tested on every system.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct KernelFacts {
    /// `uname -r`, e.g. `6.18.44-fc-v1045`.
    pub release: String,
    /// `CONFIG_IP_DCCP` from the kernel's config, if readable: `Some("y"|"m")`, `Some("")` for
    /// "is not set".
    pub config: Option<String>,
    /// Which of `dccp`, `dccp_ipv4`, `dccp_ipv6` are loaded (/sys/module, /proc/modules).
    pub loaded: Vec<String>,
    /// Whether the DCCP modules are installed under /lib/modules/<release>.
    pub modules_installed: bool,
}

/// (major, minor) of a kernel release string.
// Read on Linux only; the diagnosis is tested on every system.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The one-line reason DCCP is unavailable, told apart by cause: a kernel without DCCP at all,
/// one built without it, modules not loaded, or some other error.
// Read on Linux only; the diagnosis is tested on every system.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn diagnose(facts: &KernelFacts, ipv6: bool, error: &str) -> String {
    let loaded = |m: &str| facts.loaded.iter().any(|l| l == m);
    if kernel_version(&facts.release).is_some_and(|v| v >= (6, 16)) {
        return format!(
            "this kernel has no DCCP (removed from Linux in 6.16; this is Linux {})",
            facts.release
        );
    }
    if facts.config.as_deref() == Some("") {
        return format!(
            "this kernel ({}) was built without DCCP (CONFIG_IP_DCCP is not set)",
            facts.release
        );
    }
    let family_module = if ipv6 { "dccp_ipv6" } else { "dccp_ipv4" };
    if loaded("dccp") && !loaded(family_module) {
        return format!("the {family_module} module is not loaded (modprobe {family_module})");
    }
    if !loaded("dccp") && (facts.modules_installed || facts.config.as_deref() == Some("m")) {
        return "the DCCP modules are not loaded (modprobe dccp_ipv4 dccp_ipv6)".into();
    }
    format!("DCCP sockets are not available here: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(release: &str, config: Option<&str>, loaded: &[&str], installed: bool) -> KernelFacts {
        KernelFacts {
            release: release.into(),
            config: config.map(String::from),
            loaded: loaded.iter().map(|s| s.to_string()).collect(),
            modules_installed: installed,
        }
    }

    #[test]
    fn causes_are_told_apart() {
        let err = "Socket type not supported (os error 94)";
        let gone = diagnose(&facts("6.18.44-fc-v1045", None, &[], false), false, err);
        assert_eq!(
            gone,
            "this kernel has no DCCP (removed from Linux in 6.16; this is Linux 6.18.44-fc-v1045)"
        );
        let built_without = diagnose(&facts("6.1.0-57-amd64", Some(""), &[], false), false, err);
        assert!(
            built_without.contains("CONFIG_IP_DCCP is not set"),
            "{built_without}"
        );
        let not_loaded = diagnose(&facts("6.1.0-57-amd64", Some("m"), &[], true), false, err);
        assert!(
            not_loaded.contains("not loaded (modprobe dccp_ipv4 dccp_ipv6)"),
            "{not_loaded}"
        );
        let no_v6 = diagnose(
            &facts("6.1.0-57-amd64", Some("m"), &["dccp", "dccp_ipv4"], true),
            true,
            err,
        );
        assert_eq!(
            no_v6,
            "the dccp_ipv6 module is not loaded (modprobe dccp_ipv6)"
        );
        let other = diagnose(&facts("5.10.0", None, &[], false), false, err);
        assert!(other.ends_with(err), "{other}");
        assert_eq!(kernel_version("6.1.0-57-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("junk"), None);
    }
}
