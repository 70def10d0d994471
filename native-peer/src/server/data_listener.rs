//! The data port: accepts TCP data streams and UDP stream hellos, and hands each one to the
//! test whose cookie it presents, if it comes from the address that opened the test. Anything
//! else is dropped without a reply, and a UDP stream is sent nothing until its address has
//! proven it receives (a challenge echoed), so the port reflects nothing to a forged source.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, UdpSocket};

use perfpeer_shared::spec::Protocol;

use super::metrics::Refusal;
use super::state::{IncomingStream, ServerState, StreamRefusal};
use crate::admission::{Admission, Caps, LogLimit, accept_admitted_by};
use crate::engine::DataSocket;
use crate::engine::wire::{Cookie, STREAM_HELLO_LEN, StreamHello, UdpControl};

/// Time a new data connection has to present its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Data connections that may be waiting for their hello at once, from all sources and from one.
/// A flood from one source is shed for another's connections (see [`crate::admission`]).
pub(crate) const UNIDENTIFIED_CAPS: Caps = Caps {
    total: 512,
    per_source: 512,
};

static DROPPED_TCP: LogLimit = LogLimit::new(
    "data connections dropped before their hello",
    Duration::from_secs(10),
);
static DROPPED_UDP: LogLimit =
    LogLimit::new("UDP stream hellos not answered", Duration::from_secs(10));

/// Binds the TCP and UDP data listeners on `addr`, both on the same port number (port 0: a
/// free port for both).
pub(crate) fn bind(addr: SocketAddr) -> io::Result<(TcpListener, UdpSocket)> {
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
pub(crate) async fn run_tcp(listener: TcpListener, state: Arc<ServerState>) {
    let unidentified = Admission::new(UNIDENTIFIED_CAPS);
    // A connection from the address of a test waiting for its streams is expected: it takes
    // another source's idle place when all are taken, so idle connections from many
    // addresses cannot starve an admitted test of its streams.
    let admit = |from: SocketAddr| {
        if state.expects_streams_from(from.ip()) {
            unidentified.admit_expected(from.ip())
        } else {
            unidentified.admit(from.ip())
        }
        .inspect_err(|_| state.metrics.refused(Refusal::Admission))
    };
    while let Some((stream, from, place)) =
        accept_admitted_by(&listener, admit, &DROPPED_TCP, &state.shutdown).await
    {
        let state = state.clone();
        let tasks = state.tasks.clone();
        tasks.spawn(crate::util::boxed(async move {
            let outcome = tokio::select! {
                r = identify_tcp(stream, from, &state) => r,
                _ = place.evicted().cancelled() => Err("shed for another source's connection".into()),
            };
            if let Err(reason) = outcome {
                DROPPED_TCP.warn(from, reason);
            }
            drop(place);
        }));
    }
}

async fn identify_tcp(
    mut stream: tokio::net::TcpStream,
    from: SocketAddr,
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
        .deliver(&hello.cookie, from, incoming)
        .map_err(|(refusal, _)| refusal.to_string())?;
    state.metrics.data_connection(Protocol::Tcp);
    Ok(())
}

/// Binds UDP streams until shutdown, in two round trips: a hello with the test's cookie, from
/// the address of the test's control connection, is answered with a challenge of the same
/// size; a confirm that echoes the challenge's nonce proves the source receives there, and only
/// then does the stream get its own socket on the data port, connected to the client (the
/// kernel then prefers it for that client's datagrams), and the hello-ack. Nothing else gets a
/// reply, so the data port sends nothing to an address that did not ask for it.
pub(crate) async fn run_udp(socket: UdpSocket, state: Arc<ServerState>) {
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
        match UdpControl::decode(&buf[..n]) {
            Ok(UdpControl::Hello { stream_id, cookie }) => {
                match state.challenge(&cookie, stream_id, from) {
                    Ok(nonce) => {
                        let challenge = UdpControl::Challenge { stream_id, nonce }.encode();
                        let _ = socket.send_to(&challenge, from).await;
                    }
                    // An unknown cookie is stray data or a guess: not worth a log line.
                    Err(StreamRefusal::UnknownCookie) => {}
                    Err(refusal) => DROPPED_UDP.warn(from, refusal),
                }
            }
            Ok(UdpControl::Confirm {
                stream_id,
                cookie,
                nonce,
            }) if state.confirms(&cookie, stream_id, from, &nonce) => {
                bind_udp_stream(local, from, stream_id, cookie, &state);
            }
            // Stray data, garbage, a wrong nonce: no reply.
            _ => {}
        }
    }
}

/// Gives a confirmed UDP stream its connected socket, acks it, and hands it to its test.
fn bind_udp_stream(
    local: SocketAddr,
    from: SocketAddr,
    stream_id: u32,
    cookie: Cookie,
    state: &ServerState,
) {
    match connected_udp_socket(local, from) {
        Ok(udp) => {
            let ack = UdpControl::HelloAck { stream_id, cookie }.encode();
            let _ = udp.send(&ack);
            let incoming = IncomingStream {
                id: stream_id,
                socket: DataSocket::Udp(Arc::new(udp)),
            };
            match state.deliver(&cookie, from, incoming) {
                Ok(()) => state.metrics.data_connection(Protocol::Udp),
                Err((refusal, _)) => DROPPED_UDP.warn(from, refusal),
            }
        }
        Err(e) => DROPPED_UDP.warn(from, format!("cannot create a UDP stream socket: {e}")),
    }
}

/// A UDP socket bound to the listening address `local` (beside the listener, which needs
/// SO_REUSEADDR too) and connected to `peer`, so the kernel hands it that peer's datagrams.
pub(crate) fn connected_udp_socket(
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
