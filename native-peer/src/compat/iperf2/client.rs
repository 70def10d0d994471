//! `perfpeer iperf -c HOST`: a client for stock iperf 2.1 servers. TCP streams open with the
//! test header and end with a half-close and a drain until the server closes; `-R` asks the
//! server to send on the same connection. UDP ends with negative-id fins until the server's
//! report arrives, which becomes the far end's figures; UDP `-R` sends the header datagram
//! (again, until the server's data arrives) and receives the server's flow to its fin.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perfpeer_shared::one_way::{ClockBasis, OneWayFinal};
use perfpeer_shared::report::{
    PeerRole, SideReport, StreamFinal, StreamRole, TestResult, UdpRxFinal,
};
use perfpeer_shared::spec::{Direction, EndCondition, Protocol, TestSpec};
use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::codec::{
    Amount, Header, IsochMark, ServerReport, TCP_HEADER_LEN, TCP_STAMP_LEN,
    TCP_TRIP_TIMES_HEADER_LEN, UDP_HEADER_AT, UDP_TRIP_TIMES_LEN, put_udp_start_time,
};
use crate::engine::wire::DatagramFormat;
use crate::engine::{DataSocket, StreamSetup, WireOptions, sockopt};
use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::driver::{FarEnd, Ready, drive};
use crate::session::events::TestEvent;
use crate::session::measure::Measurement;
use crate::util::wall_clock;

/// Fins sent at most (one every 10 ms: 2 s), as iperf2 does.
const FIN_TRIES: usize = 200;

fn data_err(e: impl std::fmt::Display) -> SessionError {
    SessionError::Data(e.to_string())
}

fn amount(spec: &TestSpec) -> Amount {
    match spec.end {
        EndCondition::Time { duration } => Amount::Time(duration),
        EndCondition::Bytes { bytes } => Amount::Bytes(bytes),
    }
}

#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf2's buffer length is a signed 32-bit field; our lengths are at most 1 MiB"
)]
fn header(spec: &TestSpec, port: u16, extras: &Iperf2Extras) -> Header {
    let mut h = Header::new(
        amount(spec),
        spec.streams,
        port,
        spec.protocol == Protocol::Udp,
    );
    h.buflen = spec.len as i32;
    h.rate = spec.per_stream_rate().map(|r| r.0);
    h.tos = spec.tos.unwrap_or(0);
    // A video test's datagrams carry their send times whatever was asked; the server is told
    // to read them only when --trip-times was given, as a 2.1 client tells it.
    match spec.protocol {
        Protocol::Udp if extras.announce_trip_times => h = h.with_trip_times(),
        Protocol::Tcp if spec.trip_times => h = h.with_tcp_trip_times(),
        _ => {}
    }
    // Over TCP our frames go as --trip-times writes of their own sizes (a 2.1 server times
    // each as a burst); the ISOCH flag is UDP's here.
    if spec.video.is_some() && spec.protocol == Protocol::Udp {
        h = h.isochronous();
    }
    match spec.direction {
        Direction::Reverse => h.reverse(),
        Direction::Bidir => h.full_duplex(),
        Direction::Normal => h,
    }
}

/// Smallest datagram that carries the trip-times headers (and a video frame's mark).
pub(crate) const TRIP_TIMES_MIN_LEN: usize = UDP_TRIP_TIMES_LEN;
/// Smallest TCP write that carries iperf 2's trip-times stamp.
pub(crate) const TCP_TRIP_TIMES_MIN_LEN: usize = TCP_STAMP_LEN;

/// What `perfpeer iperf -c` asks of an iperf 2 server beyond the test spec (whose
/// `trip_times` asks the server for one-way delays).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Iperf2Extras {
    /// `-T`: the TTL (hop limit) of the datagrams; 1 by default for a multicast group.
    pub ttl: Option<u32>,
    /// `--trip-times` was asked: the UDP header says so (a video test stamps its datagrams
    /// either way, and a stock server reads them only when told).
    pub announce_trip_times: bool,
}

/// A UDP datagram's first bytes: room for the per-datagram header, then the test header (and
/// for trip-times the test's start time on our wall clock).
fn udp_template(spec: &TestSpec, port: u16, extras: &Iperf2Extras) -> Vec<u8> {
    let mut t = vec![0u8; UDP_HEADER_AT];
    t.extend_from_slice(&header(spec, port, extras).encode());
    if spec.trip_times {
        t.resize(UDP_TRIP_TIMES_LEN, 0);
        let now = wall_clock();
        put_udp_start_time(&mut t, now);
        if let Some(video) = spec.video {
            // The mark of a datagram outside every frame (the fins): frame 0, which a 2.1
            // server counts in no frame, and a size above 0, which it asserts in each datagram
            // of an isochronous flow (a stock server aborts on a fin without one).
            IsochMark {
                period_us: u32::try_from(Duration::from_secs_f64(video.period_s()).as_micros())
                    .unwrap_or(u32::MAX),
                start: now,
                prev_frame: 0,
                frame: 0,
                frame_bytes: spec.len,
                remaining: 0,
            }
            .write(&mut t);
        }
    }
    t
}

/// Runs `spec` against the stock iperf2 server at `server`.
pub(crate) async fn run(
    server: SocketAddr,
    spec: &TestSpec,
    opts: &ClientOptions,
    extras: Iperf2Extras,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    let multicast = server.ip().is_multicast();
    let refuse = |message: &str| {
        Err(SessionError::Refused {
            code: perfpeer_shared::control::ErrorCode::InvalidSpec,
            message: message.into(),
        })
    };
    if multicast && (spec.protocol != Protocol::Udp || spec.direction != Direction::Normal) {
        return refuse("a multicast group takes UDP sent to it (-u, without -R)");
    }
    // Stamps (and a video frame's mark) need room in every datagram or write.
    let (room, what) = match spec.protocol {
        Protocol::Tcp => (TCP_TRIP_TIMES_MIN_LEN, "writes"),
        _ => (UDP_TRIP_TIMES_LEN, "datagrams"),
    };
    if spec.trip_times && (spec.len as usize) < room {
        return refuse(&format!(
            "--trip-times needs {what} of at least {room} bytes (-l)"
        ));
    }
    if spec.video.is_some() && spec.direction != Direction::Normal {
        return refuse("--isochronous: the client sends the frames (no -R or --full-duplex)");
    }
    if spec.direction == Direction::Bidir && spec.protocol != Protocol::Tcp {
        return Err(SessionError::Refused {
            code: perfpeer_shared::control::ErrorCode::InvalidSpec,
            message: "iperf2's UDP full-duplex test is not supported (a server would send to an unproven address): run -R and a normal test one after the other, or --full-duplex over TCP".into(),
        });
    }
    let (spec_c, opts_c) = (spec.clone(), opts.clone());
    let setups =
        crate::util::spawn_blocking(move || open_streams(&spec_c, server, &opts_c, &extras))
            .await
            .map_err(data_err)??;
    let template =
        (spec.protocol == Protocol::Udp).then(|| udp_template(spec, server.port(), &extras));
    let ready = Ready {
        test_id: String::new(),
        server_addr: server.to_string(),
        setups,
        wire: WireOptions {
            format: DatagramFormat::Iperf2 { seq64: true },
            payload_template: template.clone(),
            first_datagrams: Vec::new(),
            // A reverse or full-duplex --trip-times test: the server stamps its datagrams or
            // writes.
            one_way: (spec.trip_times && spec.direction.server_sends())
                .then(|| ClockBasis::of_peer(server.ip())),
        },
        role: PeerRole::Client,
    };
    let far = Iperf2FarEnd {
        spec: spec.clone(),
        template: template.unwrap_or_default(),
        sockets: Vec::new(),
        multicast,
        clock: ClockBasis::of_peer(server.ip()),
    };
    drive(far, ready, spec, &events, &cancel).await
}

/// A stock iperf2 server: no control connection; at the end, a half-close and drain (TCP) or
/// fins until its report (UDP).
struct Iperf2FarEnd {
    spec: TestSpec,
    /// The UDP datagram template (our header), for the fins.
    template: Vec<u8>,
    /// The data sockets, kept for the end's exchange.
    sockets: Vec<DataSocket>,
    /// Sent to a multicast group: fins but no report (nobody answers a group).
    multicast: bool,
    /// What the server's one-way delays rest on.
    clock: ClockBasis,
}

impl FarEnd for Iperf2FarEnd {
    /// In -R the server decides the length: allow it a margin before giving up.
    fn deadline(
        &self,
        spec: &TestSpec,
        started: tokio::time::Instant,
    ) -> Option<tokio::time::Instant> {
        let margin = if spec.direction == Direction::Reverse {
            Duration::from_secs(5)
        } else {
            Duration::ZERO
        };
        spec.total_time().map(|t| started + t + margin)
    }

    async fn end(&mut self, m: &Measurement) -> Result<(), SessionError> {
        self.sockets = m
            .engine()
            .streams()
            .iter()
            .map(|s| s.socket.clone())
            .collect();
        Ok(())
    }

    async fn finals(
        &mut self,
        local: &mut SideReport,
        _events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        let sockets = std::mem::take(&mut self.sockets);
        match self.spec.protocol {
            Protocol::Dccp => Ok(None),
            Protocol::Tcp => {
                // iperf2 counts its header as data.
                let header_len = if self.spec.trip_times {
                    TCP_TRIP_TIMES_HEADER_LEN
                } else {
                    TCP_HEADER_LEN
                } as u64;
                for s in local
                    .streams
                    .iter_mut()
                    .filter(|s| s.role == StreamRole::Sender)
                {
                    s.bytes += header_len;
                }
                crate::util::spawn_blocking(move || drain_until_closed(&sockets))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(None)
            }
            // The server sent: our receiver's figures are the test's; it sends no report.
            Protocol::Udp if self.spec.direction == Direction::Reverse => Ok(None),
            Protocol::Udp if self.multicast => {
                let template = self.template.clone();
                let finals = local.streams.clone();
                crate::util::spawn_blocking(move || send_group_fins(&sockets, &finals, &template))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(None)
            }
            Protocol::Udp => {
                let template = self.template.clone();
                let finals = local.streams.clone();
                let reports =
                    crate::util::spawn_blocking(move || fin_exchange(&sockets, &finals, &template))
                        .await
                        .map_err(|e| e.to_string())??;
                Ok(Some(remote_report(&reports, self.clock)))
            }
        }
    }
}

fn open_streams(
    spec: &TestSpec,
    server: SocketAddr,
    opts: &ClientOptions,
    extras: &Iperf2Extras,
) -> Result<Vec<StreamSetup>, SessionError> {
    // Each connection's streams: it sends, it receives, or (--full-duplex, TCP) both, the
    // stream it receives numbered after all the sending ones.
    let roles: &[StreamRole] = match spec.direction {
        Direction::Normal => &[StreamRole::Sender],
        Direction::Reverse => &[StreamRole::Receiver],
        Direction::Bidir => &[StreamRole::Sender, StreamRole::Receiver],
    };
    let streams = u32::from(spec.streams);
    let connections: Vec<DataSocket> = (1..=streams)
        .map(|_| {
            let socket = Socket::new(
                Domain::for_address(server),
                if spec.protocol == Protocol::Tcp {
                    Type::STREAM
                } else {
                    Type::DGRAM
                },
                None,
            )
            .map_err(data_err)?;
            if let Some(dev) = &opts.device {
                crate::sys::bind_device(SockRef::from(&socket), dev).map_err(data_err)?;
            }
            if let Some(ip) = opts.bind {
                socket
                    .bind(&SockAddr::from(SocketAddr::new(ip, 0)))
                    .map_err(data_err)?;
            }
            sockopt::apply(SockRef::from(&socket), spec, server.is_ipv6()).map_err(data_err)?;
            set_ttl(&socket, server, extras.ttl).map_err(data_err)?;
            let socket = match spec.protocol {
                Protocol::Tcp => {
                    socket
                        .connect_timeout(&SockAddr::from(server), opts.connect_timeout)
                        .map_err(|e| SessionError::Unreachable {
                            target: server.to_string(),
                            reason: e.to_string(),
                        })?;
                    let mut stream: TcpStream = socket.into();
                    // The header goes out as a write of its own, as iperf2's client sends it
                    // (with the test's start time for --trip-times).
                    let h = header(spec, server.port(), extras);
                    if spec.trip_times {
                        stream
                            .write_all(&h.encode_with_start(wall_clock()))
                            .map_err(data_err)?;
                    } else {
                        stream.write_all(&h.encode()).map_err(data_err)?;
                    }
                    if spec.trip_times && spec.direction.server_sends() {
                        read_reverse_header(&mut stream, opts.connect_timeout)?;
                    }
                    DataSocket::Tcp(Arc::new(stream))
                }
                Protocol::Udp | Protocol::Dccp => {
                    socket.connect(&SockAddr::from(server)).map_err(data_err)?;
                    let udp: UdpSocket = socket.into();
                    if spec.direction == Direction::Reverse {
                        ask_reverse_flow(&udp, spec, server, extras)?;
                    }
                    DataSocket::Udp(Arc::new(udp))
                }
            };
            Ok(socket)
        })
        .collect::<Result<_, SessionError>>()?;
    Ok((1..=streams)
        .zip(connections)
        .flat_map(|(id, socket)| {
            roles.iter().enumerate().map(move |(k, &role)| StreamSetup {
                id: id + streams * u32::try_from(k).unwrap_or(0),
                role,
                socket: socket.clone(),
            })
        })
        .collect())
}

/// TCP `-R --trip-times`: a 2.1 server sends its own header (with its start time) before its
/// stamped writes; read past it, so the receiver starts at the first write.
fn read_reverse_header(stream: &mut TcpStream, wait: Duration) -> Result<(), SessionError> {
    use std::io::Read;
    stream.set_read_timeout(Some(wait)).map_err(data_err)?;
    let mut word = [0u8; 4];
    stream.read_exact(&mut word).map_err(data_err)?;
    let len = Header::length_from_flags(u32::from_be_bytes(word))
        .map_err(data_err)?
        .unwrap_or(4);
    let mut rest = vec![0u8; len.saturating_sub(4)];
    stream.read_exact(&mut rest).map_err(data_err)?;
    stream.set_read_timeout(None).map_err(data_err)
}

/// Header datagrams sent for a UDP `-R` test before giving up (one every 250 ms).
const REVERSE_TRIES: usize = 8;

/// UDP `-R`: sends the test header as the first datagram (id 0), as iperf2's client does, again
/// until the server's first datagram is there to read (left queued for the receiver).
fn ask_reverse_flow(
    udp: &UdpSocket,
    spec: &TestSpec,
    server: SocketAddr,
    extras: &Iperf2Extras,
) -> Result<(), SessionError> {
    let mut hello = udp_template(spec, server.port(), extras);
    let format = DatagramFormat::Iperf2 { seq64: true };
    udp.set_read_timeout(Some(Duration::from_millis(250)))
        .map_err(data_err)?;
    let mut peek = [0u8; 64];
    for _ in 0..REVERSE_TRIES {
        let wall = wall_clock();
        format.write_data(&mut hello, 0, Duration::ZERO, wall);
        udp.send(&hello).map_err(data_err)?;
        match udp.peek(&mut peek) {
            Ok(_) => return udp.set_read_timeout(None).map_err(data_err),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                return Err(SessionError::Unreachable {
                    target: server.to_string(),
                    reason: e.to_string(),
                });
            }
        }
    }
    Err(SessionError::Unreachable {
        target: server.to_string(),
        reason: format!(
            "no UDP data from the iperf 2 server after {REVERSE_TRIES} reverse-test headers"
        ),
    })
}

/// After our half-close, reads (and drops) what the server still sends until it closes.
fn drain_until_closed(sockets: &[DataSocket]) {
    let mut buf = vec![0u8; 64 * 1024];
    for s in sockets {
        if let DataSocket::Tcp(t) = s {
            let _ = t.shutdown(Shutdown::Write);
            let _ = t.set_read_timeout(Some(Duration::from_secs(2)));
            let mut r = &**t;
            while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
        }
    }
}

/// `-T`: the datagrams' TTL (hop limit). A multicast group's is 1 unless given (the group stays
/// on the link, as iperf 2 keeps it); unicast keeps the system's default unless given.
fn set_ttl(socket: &Socket, to: SocketAddr, ttl: Option<u32>) -> std::io::Result<()> {
    match (to.ip().is_multicast(), to.is_ipv6(), ttl) {
        (true, false, ttl) => socket.set_multicast_ttl_v4(ttl.unwrap_or(1)),
        (true, true, hops) => socket.set_multicast_hops_v6(hops.unwrap_or(1)),
        (false, false, Some(ttl)) => socket.set_ttl_v4(ttl),
        (false, true, Some(hops)) => socket.set_unicast_hops_v6(hops),
        (false, _, None) => Ok(()),
    }
}

/// Fins a multicast sender ends each stream with: a few, 10 ms apart, as nobody will answer.
const GROUP_FINS: usize = 3;

/// Ends each stream sent to a multicast group with [`GROUP_FINS`] fins, awaiting nothing.
#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf2's fin ids are negative 32-bit counts: datagram counts stay far below 2^63"
)]
fn send_group_fins(sockets: &[DataSocket], finals: &[StreamFinal], template: &[u8]) {
    for (socket, fin) in sockets.iter().zip(finals) {
        let DataSocket::Udp(udp) = socket else {
            continue;
        };
        let mut fins = Fins::new(template, fin.packets.unwrap_or(0) as i64);
        for _ in 0..GROUP_FINS {
            fins.send(udp);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The fins of a stream that sent `sent` datagrams: ids −(N+1), −(N+2), …, each stamped now.
struct Fins {
    datagram: Vec<u8>,
    next: i64,
}

impl Fins {
    fn new(template: &[u8], sent: i64) -> Fins {
        let mut datagram = template.to_vec();
        datagram.resize(template.len().max(UDP_HEADER_AT + 60), 0);
        Fins {
            datagram,
            next: -(sent + 1),
        }
    }

    #[allow(
        clippy::cast_sign_loss,
        reason = "iperf2's fin ids are negative counts, written as their bits"
    )]
    fn send(&mut self, udp: &UdpSocket) {
        let wall = wall_clock();
        DatagramFormat::Iperf2 { seq64: true }.write_data(
            &mut self.datagram,
            self.next as u64,
            Duration::ZERO,
            wall,
        );
        let _ = udp.send(&self.datagram);
        self.next -= 1;
    }
}

/// Sends fins (id −(N+1), −(N+2), …) every 10 ms until each stream's server report arrives.
#[allow(
    clippy::cast_possible_wrap,
    reason = "iperf2's fin ids are negative 32-bit counts: datagram counts stay far below 2^63"
)]
fn fin_exchange(
    sockets: &[DataSocket],
    finals: &[StreamFinal],
    template: &[u8],
) -> Result<Vec<(u32, ServerReport)>, String> {
    let mut reports = Vec::new();
    for (socket, fin) in sockets.iter().zip(finals) {
        let DataSocket::Udp(udp) = socket else {
            continue;
        };
        let sent = fin.packets.unwrap_or(0) as i64;
        reports.push((fin.id, await_report(udp, sent, template)?));
    }
    Ok(reports)
}

fn await_report(udp: &UdpSocket, sent: i64, template: &[u8]) -> Result<ServerReport, String> {
    let mut fins = Fins::new(template, sent);
    let _ = udp.set_read_timeout(Some(Duration::from_millis(10)));
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    for _ in 0..FIN_TRIES {
        fins.send(udp);
        while let Ok(n) = udp.recv(&mut buf) {
            // A 28-byte header ack is not the report.
            if n > super::codec::ACK_LEN {
                return ServerReport::decode(&buf[..n]).map_err(|e| e.to_string());
            }
        }
    }
    Err(format!(
        "did not receive the server report after {} fins ({:.1} s)",
        FIN_TRIES,
        start.elapsed().as_secs_f64()
    ))
}

/// The server's side as far as its reports tell it.
fn remote_report(reports: &[(u32, ServerReport)], clock: ClockBasis) -> SideReport {
    let streams = reports
        .iter()
        .map(|(id, r)| StreamFinal {
            id: *id,
            role: StreamRole::Receiver,
            bytes: r.bytes,
            duration: r.duration,
            packets: None,
            tcp: None,
            udp_rx: Some(UdpRxFinal {
                received: r.datagrams.saturating_sub(r.lost),
                sender_packets: None,
                lost: r.lost,
                out_of_order: r.out_of_order,
                duplicates: 0,
                jitter_ms: r.jitter.as_secs_f64() * 1000.0,
                max_gap_ms: None,
                one_way: r.transit.map(|t| {
                    OneWayFinal::from_moments(
                        u64::from(t.count),
                        (t.min_s, t.sum_s / f64::from(t.count.max(1)), t.max_s),
                        t.m2_s2,
                        clock,
                    )
                }),
                frames: None,
            }),
            rr: None,
            writes: None,
            write_one_way: None,
            write_frames: None,
        })
        .collect();
    // iperf2 reports no CPU figures: the empty report's zero elapsed time marks them as not measured.
    SideReport {
        streams,
        ..SideReport::empty(PeerRole::Server, Default::default())
    }
}
