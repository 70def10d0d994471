//! Socket options for data streams (window, MSS, congestion control, no-delay, TOS) and the
//! kernel's view of a TCP sender (TCP_INFO). Linux-specific calls live here and nowhere else.

use std::io;

use perfpeer_shared::spec::{Protocol, TestSpec};
use perfpeer_shared::units::BitRate;
use socket2::SockRef;

/// Applies the spec's options to a data socket. Window and MSS should be applied before connect.
pub(crate) fn apply(sock: SockRef<'_>, spec: &TestSpec, is_ipv6: bool) -> io::Result<()> {
    if let Some(w) = spec.window {
        sock.set_send_buffer_size(w as usize)?;
        sock.set_recv_buffer_size(w as usize)?;
    }
    if let Some(tos) = spec.tos {
        set_tos(&sock, u32::from(tos), is_ipv6)?;
    }
    if spec.protocol == Protocol::Tcp {
        if let Some(mss) = spec.mss {
            crate::sys::set_tcp_mss(&sock, mss)?;
        }
        if spec.no_delay {
            sock.set_tcp_nodelay(true)?;
        }
        if let Some(cc) = &spec.congestion {
            set_congestion(&sock, cc)?;
        }
    }
    Ok(())
}

/// IP TOS (IPv4) or traffic class (IPv6).
pub(crate) fn set_tos(sock: &socket2::Socket, tos: u32, is_ipv6: bool) -> io::Result<()> {
    if is_ipv6 {
        crate::sys::set_tclass_v6(sock, tos)
    } else {
        sock.set_tos_v4(tos)
    }
}

/// TCP congestion control by name; the error names it.
pub(crate) fn set_congestion(sock: &socket2::Socket, cc: &str) -> io::Result<()> {
    crate::sys::set_tcp_congestion(sock, cc).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("congestion control '{cc}' is not available here: {e}"),
        )
    })
}

/// Caps the kernel's pacing of this socket at `rate` (SO_MAX_PACING_RATE, in bytes per second):
/// TCP paces itself to it, and the fq qdisc does for any socket.
pub(crate) fn set_max_pacing_rate(
    sock: &impl crate::sys::AsSocket,
    rate: BitRate,
) -> io::Result<()> {
    crate::sys::set_max_pacing_rate(sock, (rate.0 / 8).max(1))
}

/// What the kernel set: (SO_SNDBUF, SO_RCVBUF).
pub(crate) fn buffer_sizes(sock: SockRef<'_>) -> (Option<u32>, Option<u32>) {
    (
        sock.send_buffer_size()
            .ok()
            .and_then(|v| u32::try_from(v).ok()),
        sock.recv_buffer_size()
            .ok()
            .and_then(|v| u32::try_from(v).ok()),
    )
}

/// TCP MSS and congestion control name of a TCP socket.
pub(crate) fn tcp_mss_and_congestion(sock: SockRef<'_>) -> (Option<u32>, Option<String>) {
    let cc = crate::sys::tcp_congestion(&sock).ok().map(|b| {
        String::from_utf8_lossy(&b)
            .trim_end_matches('\0')
            .to_string()
    });
    (crate::sys::tcp_mss(&sock).ok(), cc)
}

pub(crate) use crate::sys::{TcpInfo, tcp_info};

/// TCP congestion controls this kernel lets unprivileged sockets choose.
pub(crate) fn congestion_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn options_apply_and_tcp_info_reads_on_a_real_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.window = Some(256 * 1024);
        spec.no_delay = true;
        spec.congestion = Some("reno".into());
        apply(SockRef::from(&client), &spec, false).unwrap();
        let (snd, rcv) = buffer_sizes(SockRef::from(&client));
        assert!(
            snd.unwrap() >= 256 * 1024 && rcv.unwrap() >= 256 * 1024,
            "{snd:?} {rcv:?}"
        );
        let (mss, cc) = tcp_mss_and_congestion(SockRef::from(&client));
        assert_eq!(cc.as_deref(), Some("reno"));
        assert!(mss.unwrap() > 0);
        let info = tcp_info(&client).unwrap();
        assert!(info.snd_mss > 0 && info.snd_cwnd > 0, "{info:?}");
    }

    #[test]
    fn unknown_congestion_control_is_a_clear_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut spec = TestSpec::new(Protocol::Tcp);
        spec.congestion = Some("nosuchcc".into());
        let err = apply(SockRef::from(&client), &spec, false).unwrap_err();
        assert!(
            err.to_string().contains("'nosuchcc' is not available"),
            "{err}"
        );
    }
}
