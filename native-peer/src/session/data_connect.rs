//! The client's side of data-stream setup (blocking; run it off the async runtime): connect each
//! TCP stream and present the cookie, bind each UDP stream (hello, the server's challenge echoed
//! in a confirm, its ack), or connect each DCCP stream (service code, CCID) and send the hello
//! as its first packet.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::report::StreamRole;
use perfpeer_shared::spec::{Protocol, TestSpec};
use socket2::{Domain, SockAddr, SockRef, Socket, Type};

use crate::dccp::DccpSocket;
use crate::engine::wire::{Cookie, StreamHello, UdpControl};
use crate::engine::{DataSocket, StreamSetup, sockopt};

/// How often an unanswered UDP hello (or confirm) is repeated.
const HELLO_RETRY: Duration = Duration::from_millis(200);
/// Hellos and confirms sent per stream before relying on the server's `ready` instead of an ack.
const HELLO_TRIES: usize = 20;

/// Where the client's data streams leave from: a local address (`-B`), a network interface
/// (`--bind-dev`) and a local port for the first stream, the next ones for the others (netperf's
/// `-- -P`), each if given.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalEnd {
    /// Local address.
    pub ip: Option<IpAddr>,
    /// Network interface.
    pub device: Option<String>,
    /// Local port of the first stream.
    pub first_port: Option<u16>,
}

impl LocalEnd {
    /// The local end of the stream at `index` in the plan: the first port plus the index.
    fn for_stream(&self, index: usize) -> io::Result<LocalEnd> {
        let first_port = match self.first_port {
            Some(first) => Some(nth_port(first, index).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("local port {first} leaves no port for stream {}", index + 1),
                )
            })?),
            None => None,
        };
        Ok(LocalEnd {
            first_port,
            ..self.clone()
        })
    }
}

/// The local port of the stream at `index` when the first one has `first` (iperf3's `--cport`,
/// netperf's `-- -P`); `None` past 65535.
pub(crate) fn nth_port(first: u16, index: usize) -> Option<u16> {
    u16::try_from(index).ok().and_then(|i| first.checked_add(i))
}

/// Opens every stream of `spec` to `server`, presenting `cookie`.
pub(crate) fn open_streams(
    spec: &TestSpec,
    server: SocketAddr,
    bind: &LocalEnd,
    cookie: Cookie,
    connect_timeout: Duration,
) -> io::Result<Vec<StreamSetup>> {
    spec.stream_plan()
        .into_iter()
        .enumerate()
        .map(|(index, (id, client_sends))| {
            let bind = &bind.for_stream(index)?;
            let role = if client_sends {
                StreamRole::Sender
            } else {
                StreamRole::Receiver
            };
            let socket = match spec.protocol {
                Protocol::Tcp => DataSocket::Tcp(Arc::new(connect_tcp(
                    spec,
                    server,
                    bind,
                    id,
                    cookie,
                    connect_timeout,
                )?)),
                Protocol::Udp => {
                    DataSocket::Udp(Arc::new(connect_udp(spec, server, bind, id, cookie)?))
                }
                Protocol::Dccp => DataSocket::Dccp(Arc::new(connect_dccp(
                    spec,
                    server,
                    bind,
                    id,
                    cookie,
                    connect_timeout,
                )?)),
            };
            Ok(StreamSetup { id, role, socket })
        })
        .collect()
}

/// A socket of `ty` for `server`'s family, bound to `bind`'s device, address and first port.
pub(crate) fn new_socket(server: SocketAddr, ty: Type, bind: &LocalEnd) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(server), ty, None)?;
    if let Some(dev) = &bind.device {
        crate::sys::bind_device(SockRef::from(&socket), dev)?;
    }
    if bind.ip.is_some() || bind.first_port.is_some() {
        let ip = bind.ip.unwrap_or(if server.is_ipv6() {
            IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        });
        let local = SocketAddr::new(ip, bind.first_port.unwrap_or(0));
        socket
            .bind(&SockAddr::from(local))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind to {local}: {e}")))?;
    }
    Ok(socket)
}

fn connect_tcp(
    spec: &TestSpec,
    server: SocketAddr,
    bind: &LocalEnd,
    id: u32,
    cookie: Cookie,
    connect_timeout: Duration,
) -> io::Result<TcpStream> {
    let socket = new_socket(server, Type::STREAM, bind)?;
    sockopt::apply(SockRef::from(&socket), spec, server.is_ipv6())?;
    socket
        .connect_timeout(&SockAddr::from(server), connect_timeout)
        .map_err(|e| io::Error::new(e.kind(), format!("data connection to {server}: {e}")))?;
    let mut stream: TcpStream = socket.into();
    stream.write_all(
        &StreamHello {
            stream_id: id,
            cookie,
        }
        .encode(),
    )?;
    Ok(stream)
}

fn connect_dccp(
    spec: &TestSpec,
    server: SocketAddr,
    bind: &LocalEnd,
    id: u32,
    cookie: Cookie,
    connect_timeout: Duration,
) -> io::Result<DccpSocket> {
    if bind.device.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "--bind-dev applies to TCP and UDP streams, not DCCP (use -B with the interface's address)",
        ));
    }
    let opts = spec.dccp.unwrap_or_default();
    let socket = DccpSocket::connect(server, bind.ip, opts.service, opts.ccid, connect_timeout)?;
    if spec.window.is_none() {
        socket.set_default_buffers();
    }
    sockopt::apply(socket.sock_ref(), spec, server.is_ipv6())?;
    if let Some(mps) = socket.cur_mps()
        && spec.len > mps
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "-l {} is over this path's DCCP maximum packet size of {mps} bytes (DCCP_SOCKOPT_GET_CUR_MPS): use -l {mps} or less",
                spec.len
            ),
        ));
    }
    socket.set_write_timeout(Some(connect_timeout))?;
    let hello = StreamHello {
        stream_id: id,
        cookie,
    }
    .encode();
    socket.send(&hello)?;
    Ok(socket)
}

fn connect_udp(
    spec: &TestSpec,
    server: SocketAddr,
    bind: &LocalEnd,
    id: u32,
    cookie: Cookie,
) -> io::Result<UdpSocket> {
    let socket = new_socket(server, Type::DGRAM, bind)?;
    sockopt::apply(SockRef::from(&socket), spec, server.is_ipv6())?;
    // Big enough receive buffer that a burst at the start of a reverse test is not dropped.
    if spec.window.is_none() {
        let _ = socket.set_recv_buffer_size(4 << 20);
        let _ = socket.set_send_buffer_size(4 << 20);
    }
    socket.connect(&SockAddr::from(server))?;
    let udp: UdpSocket = socket.into();
    udp.set_read_timeout(Some(HELLO_RETRY))?;
    bind_udp(&udp, server, id, cookie)?;
    Ok(udp)
}

/// Binds a UDP stream: hellos until the server's challenge, then confirms (its nonce echoed)
/// until the ack. Each step is sent again after [`HELLO_RETRY`], [`HELLO_TRIES`] times in all;
/// acks can be lost, so running out of tries is not an error: the server's `ready` tells
/// whether the stream arrived.
fn bind_udp(udp: &UdpSocket, server: SocketAddr, id: u32, cookie: Cookie) -> io::Result<()> {
    let mut outgoing = UdpControl::Hello {
        stream_id: id,
        cookie,
    }
    .encode();
    let mut buf = [0u8; 64];
    for _ in 0..HELLO_TRIES {
        udp.send(&outgoing)?;
        let n = match udp.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("nothing listens on UDP {server}"),
                ));
            }
            Err(e) => return Err(e),
        };
        match UdpControl::decode(&buf[..n]) {
            Ok(UdpControl::Challenge { stream_id, nonce }) if stream_id == id => {
                outgoing = UdpControl::Confirm {
                    stream_id: id,
                    cookie,
                    nonce,
                }
                .encode();
            }
            Ok(UdpControl::HelloAck {
                stream_id,
                cookie: c,
            }) if stream_id == id && c == cookie => return Ok(()),
            _ => {}
        }
    }
    Ok(())
}
