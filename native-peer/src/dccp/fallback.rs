//! DCCP on systems other than Linux: every operation is `Unsupported` with a clear message, and
//! the peer announces DCCP as unavailable with the reason.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use perfpeer_shared::dccp::{DccpStreamInfo, DccpSupport};
use socket2::Socket;

const WHY: &str = "DCCP is supported on Linux only (and there only on kernels before 6.16)";

fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, WHY)
}

pub(super) fn connect(
    _server: SocketAddr,
    _bind: Option<IpAddr>,
    _service: u32,
    _ccid: Option<u8>,
    _timeout: Duration,
) -> io::Result<Socket> {
    Err(unsupported())
}

pub(super) fn listen(_addr: SocketAddr, _services: &[u32]) -> io::Result<Socket> {
    Err(unsupported())
}

pub(super) fn stream_info(_s: &Socket) -> DccpStreamInfo {
    DccpStreamInfo::default()
}

/// DCCP is never available here.
pub(crate) fn support() -> DccpSupport {
    DccpSupport {
        reason: Some(WHY.into()),
        ..Default::default()
    }
}
