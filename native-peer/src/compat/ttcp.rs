//! ttcp on the wire: a plain TCP byte stream, or UDP datagrams between 4-byte sentinels. The
//! transmitter connects and sends `nbuf` buffers of `buflen` bytes; the receiver accepts one
//! connection (or the first datagram) and counts until the end. In sink/source mode (`-s`)
//! perfpeer's engine moves the bytes; otherwise stdin is copied to the network, or the network
//! to stdout, as classic ttcp does.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perfpeer_shared::format::ttcp::TtcpFigures;
use perfpeer_shared::report::{PeerRole, SideReport, StreamRole, TestResult};
use perfpeer_shared::spec::{Protocol, TestSpec};
use socket2::{Domain, SockAddr, SockRef, Socket, Type};

use crate::engine::cpu::CpuSnapshot;
use crate::engine::wire::DatagramFormat;
use crate::engine::{DataSocket, StreamSetup, WireOptions, sockopt};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::session::SessionError;
use crate::session::driver::{FarEnd, Ready, drive};
use crate::session::events::TestEvent;
use crate::session::measure::Measurement;

/// A UDP receiver that has had data and then hears nothing for this long stops.
const UDP_SILENCE: Duration = Duration::from_secs(2);

/// Default port of SGI ttcp 1.12 (the original BRL ttcp used 2000).
pub(crate) const DEFAULT_PORT: u16 = 5001;

/// Receive buffer a UDP receiver asks for when `-b` does not say: a classic transmitter sends
/// unpaced, and the kernel's default (208 KiB) holds about 25 of its 8 KiB datagrams while
/// the receiver starts; the kernel caps the request at its `rmem_max`.
const UDP_RECEIVE_BUFFER: usize = 4 << 20;

fn new_socket(addr: SocketAddr, ty: Type, spec: &TestSpec) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), ty, None)?;
    sockopt::apply(SockRef::from(&socket), spec, addr.is_ipv6())?;
    Ok(socket)
}

/// Opens the transmitter's socket to `server` (blocking).
pub(crate) fn connect(
    spec: &TestSpec,
    server: SocketAddr,
    timeout: Duration,
) -> io::Result<DataSocket> {
    match spec.protocol {
        Protocol::Tcp => {
            let socket = new_socket(server, Type::STREAM, spec)?;
            socket.connect_timeout(&SockAddr::from(server), timeout)?;
            Ok(DataSocket::Tcp(Arc::new(socket.into())))
        }
        Protocol::Udp | Protocol::Dccp => {
            let socket = new_socket(server, Type::DGRAM, spec)?;
            socket.connect(&SockAddr::from(server))?;
            Ok(DataSocket::Udp(Arc::new(socket.into())))
        }
    }
}

/// Waits for the transmitter (blocking): accepts one TCP connection, or waits for the first
/// datagram on the bound UDP socket (left queued for the receiver to count).
pub(crate) fn accept(spec: &TestSpec, listen: SocketAddr) -> io::Result<DataSocket> {
    match spec.protocol {
        Protocol::Tcp => {
            let socket = new_socket(listen, Type::STREAM, spec)?;
            socket.set_reuse_address(true)?;
            socket.bind(&SockAddr::from(listen))?;
            socket.listen(1)?;
            let listener: TcpListener = socket.into();
            let (stream, _) = listener.accept()?;
            Ok(DataSocket::Tcp(Arc::new(stream)))
        }
        Protocol::Udp | Protocol::Dccp => {
            let socket = new_socket(listen, Type::DGRAM, spec)?;
            if spec.window.is_none() {
                let _ = socket.set_recv_buffer_size(UDP_RECEIVE_BUFFER);
            }
            socket.set_reuse_address(true)?;
            socket.bind(&SockAddr::from(listen))?;
            let udp: UdpSocket = socket.into();
            let mut probe = [0u8; 1];
            let (_, from) = udp.peek_from(&mut probe)?;
            udp.connect(from)?;
            Ok(DataSocket::Udp(Arc::new(udp)))
        }
    }
}

/// Runs one sink/source transfer on `socket` with the engine; `role` says which end we are.
pub(crate) async fn run_engine(
    spec: &TestSpec,
    socket: DataSocket,
    role: StreamRole,
    peer: String,
    events: &UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<TestResult, SessionError> {
    let ready = Ready {
        test_id: String::new(),
        server_addr: peer,
        setups: vec![StreamSetup {
            id: 1,
            role,
            socket,
        }],
        wire: WireOptions {
            format: DatagramFormat::Ttcp,
            payload_template: None,
            first_datagrams: Vec::new(),
            one_way: None,
        },
        role: if role == StreamRole::Sender {
            PeerRole::Client
        } else {
            PeerRole::Server
        },
    };
    let far = TtcpFarEnd {
        udp_receiver: role == StreamRole::Receiver && spec.protocol == Protocol::Udp,
        received: 0,
        still_since: Instant::now(),
        lost_end: None,
    };
    drive(far, ready, spec, events, cancel).await
}

/// The other ttcp: no control connection, the transfer ends with the data (TCP close, UDP
/// sentinels), or for a UDP receiver whose sentinels were all lost, after a silence.
struct TtcpFarEnd {
    udp_receiver: bool,
    /// Bytes received at the last check, and since when they have not grown.
    received: u64,
    still_since: Instant,
    /// When a UDP receiver gave up waiting for the sentinels.
    lost_end: Option<Instant>,
}

impl FarEnd for TtcpFarEnd {
    fn done(&mut self, m: &Measurement, _spec: &TestSpec) -> bool {
        let e = m.engine();
        if e.senders_done() && e.receivers_done() {
            return true;
        }
        let now = e.bytes(StreamRole::Receiver);
        if now != self.received {
            (self.received, self.still_since) = (now, Instant::now());
        } else if self.udp_receiver && now > 0 && self.still_since.elapsed() > UDP_SILENCE {
            self.lost_end = Some(Instant::now());
            return true;
        }
        false
    }

    fn abort_streams(&self, ended_early: bool) -> bool {
        ended_early || self.lost_end.is_some()
    }

    async fn finals(
        &mut self,
        local: &mut SideReport,
        _events: &UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        let Some(stopped) = self.lost_end else {
            return Ok(None);
        };
        // The transfer ended with the last datagram, not when we gave up waiting.
        let silence = stopped.duration_since(self.still_since);
        for s in &mut local.streams {
            s.duration = s.duration.saturating_sub(silence);
        }
        Err(format!(
            "no end sentinel arrived; stopped after {} s of silence",
            UDP_SILENCE.as_secs()
        ))
    }
}

/// Copies `input` to `output` until EOF in reads of at most `buf`'s size (ttcp's buffers), or
/// in whole buffers (the last may be short) with `whole_blocks` (`-B`); returns the bytes
/// copied.
fn copy_in_pieces(
    input: &mut impl Read,
    output: &mut impl Write,
    buf: &mut [u8],
    whole_blocks: bool,
) -> io::Result<u64> {
    let mut total = 0u64;
    loop {
        let n = if whole_blocks {
            read_full(input, buf)?
        } else {
            input.read(buf)?
        };
        if n == 0 {
            return Ok(total);
        }
        output.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Reads until `buf` is full or the stream ends (classic ttcp's `mread`, for `-B`); returns
/// the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Without `-s`: copies stdin to the socket (transmit) or the socket to stdout (receive), in
/// `buflen` pieces (whole ones only with `full_blocks`, `-B`, except the last), and returns
/// the figures. Blocking. A UDP transmitter sends no start sentinel here, as classic ttcp
/// sends none without `-s` (a classic receiver would write it out as data), only the end
/// sentinels.
pub(crate) fn run_copy(
    socket: DataSocket,
    role: StreamRole,
    buflen: usize,
    full_blocks: bool,
) -> io::Result<TtcpFigures> {
    let cpu = CpuSnapshot::take();
    let start = Instant::now();
    let mut buf = vec![0u8; buflen.max(5)];
    let mut bytes = 0u64;
    match (&socket, role) {
        (DataSocket::Tcp(s), StreamRole::Sender) => {
            bytes = copy_in_pieces(&mut io::stdin().lock(), &mut &**s, &mut buf, false)?;
            s.shutdown(std::net::Shutdown::Write)?;
        }
        (DataSocket::Tcp(s), StreamRole::Receiver) => {
            let mut out = io::stdout().lock();
            bytes = copy_in_pieces(&mut &**s, &mut out, &mut buf, full_blocks)?;
            out.flush()?;
        }
        (DataSocket::Udp(s), StreamRole::Sender) => {
            let mut input = io::stdin().lock();
            loop {
                let n = input.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                // Datagrams of 4 bytes or fewer are sentinels: pad short reads.
                let len = n.max(5);
                s.send(&buf[..len])?;
                bytes += len as u64;
            }
            for _ in 0..4 {
                s.send(b"    ")?;
            }
        }
        (DataSocket::Udp(s), StreamRole::Receiver) => {
            let mut out = io::stdout().lock();
            let mut seen_data = false;
            loop {
                let n = s.recv(&mut buf)?;
                if n <= 4 {
                    if seen_data {
                        break;
                    }
                    continue;
                }
                seen_data = true;
                out.write_all(&buf[..n])?;
                bytes += n as u64;
            }
            out.flush()?;
        }
        (DataSocket::Dccp(_), _) => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "ttcp does not speak DCCP",
            ));
        }
    }
    let usage = CpuSnapshot::take().usage_since(&cpu);
    Ok(TtcpFigures {
        bytes,
        real_s: start.elapsed().as_secs_f64(),
        cpu_s: usage.process_user_s + usage.process_system_s,
    })
}

#[cfg(test)]
mod tests {
    /// A reader that hands out at most 3 bytes a call, as a TCP socket may.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn full_blocks_are_filled_across_short_reads() {
        let mut input = Trickle(b"0123456789abc");
        let mut buf = [0u8; 8];
        assert_eq!(super::read_full(&mut input, &mut buf).unwrap(), 8);
        assert_eq!(&buf, b"01234567");
        assert_eq!(super::read_full(&mut input, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"89abc");
        assert_eq!(super::read_full(&mut input, &mut buf).unwrap(), 0);
    }
}
