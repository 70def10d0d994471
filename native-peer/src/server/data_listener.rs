//! The data port: accepts TCP data streams and UDP stream hellos, and hands each one to the
//! test whose cookie it presents. Anything else is dropped without a reply, so nothing is ever
//! sent to an address that has not proven it belongs to a test.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::Semaphore;

use super::state::{IncomingStream, ServerState};
use crate::engine::DataSocket;
use crate::engine::wire::{STREAM_HELLO_LEN, StreamHello, UdpControl};

/// Time a new data connection has to present its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Data connections that may be waiting for their hello at once.
const MAX_UNIDENTIFIED: usize = 256;

/// Binds the TCP and UDP data listeners on `addr`, both on the same port number (port 0: a
/// free port for both).
pub fn bind(addr: SocketAddr) -> io::Result<(TcpListener, UdpSocket)> {
    let mut last_err = None;
    for _ in 0..8 {
        let tcp = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
        dual_stack(&tcp, addr)?;
        tcp.set_reuse_address(true)?;
        tcp.bind(&addr.into())?;
        tcp.listen(1024)?;
        tcp.set_nonblocking(true)?;
        let port = tcp
            .local_addr()?
            .as_socket()
            .map_or(addr.port(), |a| a.port());
        let udp = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
        dual_stack(&udp, addr)?;
        udp.set_reuse_address(true)?;
        match udp.bind(&SocketAddr::new(addr.ip(), port).into()) {
            Ok(()) => {
                udp.set_nonblocking(true)?;
                return Ok((
                    TcpListener::from_std(tcp.into())?,
                    UdpSocket::from_std(udp.into())?,
                ));
            }
            // With port 0 the TCP port may be taken for UDP: try another one.
            Err(e) if addr.port() == 0 => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free data port")))
}

fn dual_stack(socket: &Socket, addr: SocketAddr) -> io::Result<()> {
    if addr.is_ipv6() {
        socket.set_only_v6(false)?;
    }
    Ok(())
}

/// Accepts TCP data streams until shutdown.
pub async fn run_tcp(listener: TcpListener, state: Arc<ServerState>) {
    let unidentified = Arc::new(Semaphore::new(MAX_UNIDENTIFIED));
    let mut backoff = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            _ = state.shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let (stream, from) = match accepted {
            Ok(a) => {
                backoff = Duration::from_millis(10);
                a
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "data accept failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let Ok(permit) = unidentified.clone().try_acquire_owned() else {
            tracing::warn!(%from, "too many unidentified data connections; dropping one");
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(reason) = identify_tcp(stream, &state).await {
                tracing::debug!(%from, reason, "data connection dropped");
            }
            drop(permit);
        });
    }
}

async fn identify_tcp(
    mut stream: tokio::net::TcpStream,
    state: &ServerState,
) -> Result<(), String> {
    let mut hello = [0u8; STREAM_HELLO_LEN];
    tokio::time::timeout(HELLO_TIMEOUT, stream.read_exact(&mut hello))
        .await
        .map_err(|_| "no hello in time".to_string())?
        .map_err(|e| format!("closed before its hello: {e}"))?;
    let hello = StreamHello::decode(&hello).map_err(|e| e.to_string())?;
    let std_stream = stream.into_std().map_err(|e| e.to_string())?;
    std_stream
        .set_nonblocking(false)
        .map_err(|e| e.to_string())?;
    let incoming = IncomingStream {
        id: hello.stream_id,
        socket: DataSocket::Tcp(Arc::new(std_stream)),
    };
    state
        .deliver(&hello.cookie, incoming)
        .map_err(|_| "unknown cookie".to_string())
}

/// Answers UDP stream hellos until shutdown: each valid one gets its own socket on the data port,
/// connected to the client, which the kernel then prefers for that client's datagrams.
pub async fn run_udp(socket: UdpSocket, state: Arc<ServerState>) {
    let local = match socket.local_addr() {
        Ok(a) => a,
        Err(e) => return tracing::error!(error = %e, "UDP data socket has no address"),
    };
    let mut buf = [0u8; 2048];
    loop {
        let received = tokio::select! {
            _ = state.shutdown.cancelled() => return,
            r = socket.recv_from(&mut buf) => r,
        };
        let Ok((n, from)) = received else { continue };
        let Ok(UdpControl::Hello { stream_id, cookie }) = UdpControl::decode(&buf[..n]) else {
            continue; // stray data or garbage: no reply
        };
        if !state.is_pending(&cookie) {
            continue;
        }
        match connected_udp_socket(local, from) {
            Ok(udp) => {
                let ack = UdpControl::HelloAck { stream_id, cookie }.encode();
                let _ = udp.send(&ack);
                let incoming = IncomingStream {
                    id: stream_id,
                    socket: DataSocket::Udp(Arc::new(udp)),
                };
                if state.deliver(&cookie, incoming).is_err() {
                    tracing::debug!(%from, "UDP stream for a test that is no longer waiting");
                }
            }
            Err(e) => tracing::warn!(%from, error = %e, "cannot create a UDP stream socket"),
        }
    }
}

/// A UDP socket bound to the listening address `local` (beside the listener, which needs
/// SO_REUSEADDR too) and connected to `peer`, so the kernel hands it that peer's datagrams.
pub fn connected_udp_socket(
    local: SocketAddr,
    peer: SocketAddr,
) -> io::Result<std::net::UdpSocket> {
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, None)?;
    dual_stack(&socket, local)?;
    socket.set_reuse_address(true)?;
    let _ = socket.set_recv_buffer_size(4 << 20);
    let _ = socket.set_send_buffer_size(4 << 20);
    socket.bind(&SockAddr::from(local))?;
    socket.connect(&SockAddr::from(peer))?;
    Ok(socket.into())
}
