//! iperf 2.1's `--bounceback` test, both sides. The server's: each request (a [`BounceBack`] header
//! and its padding, `-l` bytes; shorter than a 2.1 server takes, down to 8, answered too) is
//! read whole, stamped with the server's read time, held as the
//! client asks (at most [`MAX_HOLD`]), stamped with the write time and sent back whole, on the
//! client's own TCP connection (which proved its address), never larger than what came in. The
//! test ends with the client's stop message, its EOF, its silence, the server's `--max-duration`
//! or the loss of its place. The client's ([`run_client`]): bursts of requests against a
//! stock (or our) server, each round trip timed.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::codec::{BOUNCEBACK_SMALLEST, BounceBack, bb};
use crate::engine::sockopt::set_tos;
use crate::util::wall_clock;

/// Largest request accepted: bounce-back requests are small (100 bytes by default); this is
/// what the memory budget is charged for each test.
pub(crate) const MAX_SIZE: u32 = 8 << 20;
/// Longest hold between a request's read and its reply, whatever the client asks.
const MAX_HOLD: Duration = Duration::from_secs(1);
/// A client that sends no request for this long has ended its test.
const IDLE: Duration = Duration::from_secs(10);
/// Time the client has to send its first request whole.
const FIRST_REQUEST: Duration = Duration::from_secs(5);

/// Why a bounce-back test was not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BounceError {
    /// The request size is outside what a 2.1 server reads and what we hold.
    #[error("refused a bounce-back test of {0}-byte requests: 8 to {MAX_SIZE} bytes are served")]
    Size(u32),
    /// The first request did not arrive whole.
    #[error("bounce-back request: {0}")]
    Request(String),
}

/// What a finished bounce-back test moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounced {
    /// Replies sent.
    pub replies: u64,
    /// Bytes read and written (as iperf 2's server counts them).
    pub bytes: u64,
    /// From the first request to the end.
    pub duration: Duration,
}

/// Reads the first request whole after its flag word `first` and checks its size; returns its
/// header and its bytes.
pub(crate) async fn first_request(
    stream: &mut TcpStream,
    first: [u8; 4],
) -> Result<(BounceBack, Vec<u8>), BounceError> {
    // The flag word and the size: what a request needs to be answered.
    const _: () = assert!(BOUNCEBACK_SMALLEST == 8);
    let mut head = [0u8; BOUNCEBACK_SMALLEST];
    head[..4].copy_from_slice(&first);
    read_within(stream, &mut head[4..], FIRST_REQUEST).await?;
    let size = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if !(8..=MAX_SIZE).contains(&size) {
        return Err(BounceError::Size(size));
    }
    let mut request = vec![0u8; size as usize];
    request[..BOUNCEBACK_SMALLEST].copy_from_slice(&head);
    read_within(stream, &mut request[BOUNCEBACK_SMALLEST..], FIRST_REQUEST).await?;
    let header = BounceBack::decode(&request).map_err(|e| BounceError::Request(e.to_string()))?;
    Ok((header, request))
}

async fn read_within(
    stream: &mut TcpStream,
    buf: &mut [u8],
    limit: Duration,
) -> Result<(), BounceError> {
    tokio::time::timeout(limit, stream.read_exact(buf))
        .await
        .map_err(|_| BounceError::Request("not sent whole in time".into()))?
        .map(|_| ())
        .map_err(|e| BounceError::Request(e.to_string()))
}

/// Serves the test whose first request is `head` until it ends (see the module's
/// comment); `stop` is cancelled when the server shuts down or the test loses its place, and
/// `activity` is told the bytes moved so far after each reply.
pub(crate) async fn serve(
    stream: &mut TcpStream,
    header: BounceBack,
    head: Vec<u8>,
    limit: Duration,
    stop: &CancellationToken,
    mut activity: impl FnMut(u64),
) -> Result<Bounced, BounceError> {
    let size = header.size as usize;
    let mut buf = head;
    let _ = stream.set_nodelay(true);
    if header.bb_flags & bb::TOS != 0
        && let Ok(peer) = stream.peer_addr()
    {
        let ipv6 = peer.ip().to_canonical().is_ipv6();
        let tos = u32::from(header.tos & 0xFF);
        let _ = set_tos(&socket2::SockRef::from(&*stream), tos, ipv6);
    }
    let quickack = header.bb_flags & bb::QUICKACK != 0;
    let hold = Duration::from_micros(u64::from(header.hold_us)).min(MAX_HOLD);
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + limit;
    let mut moved = Bounced {
        replies: 0,
        bytes: size as u64,
        duration: Duration::ZERO,
    };
    BounceBack::stamp_read(&mut buf, wall_clock());
    loop {
        if !hold.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(hold) => {}
                () = stop.cancelled() => break,
            }
        }
        BounceBack::stamp_write(&mut buf, wall_clock());
        let write = tokio::time::timeout_at(deadline, stream.write_all(&buf));
        match write.await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => break,
        }
        moved.replies += 1;
        moved.bytes += size as u64;
        activity(moved.bytes);
        if quickack {
            let _ = crate::sys::set_tcp_quickack(&socket2::SockRef::from(&*stream));
        }
        let read = tokio::select! {
            r = tokio::time::timeout(IDLE, stream.read_exact(&mut buf)) => r,
            () = tokio::time::sleep_until(deadline) => break,
            () = stop.cancelled() => break,
        };
        match read {
            Ok(Ok(_)) if !is_stop(&buf) => {
                moved.bytes += size as u64;
                BounceBack::stamp_read(&mut buf, wall_clock());
            }
            // The stop message, EOF, an error or silence: over.
            _ => break,
        }
    }
    moved.duration = started.elapsed();
    Ok(moved)
}

/// Whether a request is the client's last (a message too short for the flags never is).
fn is_stop(request: &[u8]) -> bool {
    request.len() >= 14 && u16::from_be_bytes([request[12], request[13]]) & bb::STOP != 0
}

/// What `perfpeer iperf -c HOST --bounceback` asks of an iperf 2 server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BounceRequest {
    /// Bytes of each request and reply (`-l`; 100 by default, as iperf 2).
    pub size: u32,
    /// Requests in each burst (iperf 2's default: 10).
    pub burst: u32,
    /// Time between bursts (iperf 2's default: 1 s).
    pub period: Duration,
    /// The server holds each reply this long (`--bounceback-hold`).
    pub hold: Duration,
    /// Test length.
    pub duration: Duration,
    /// TOS of the requests and, by the flag, the replies.
    pub tos: Option<u8>,
}

/// What a bounce-back client measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BounceOutcome {
    /// Requests answered, bytes written and read, and the time from the first request to the
    /// last reply.
    pub bounced: Bounced,
    /// Round trips: mean, min, max, stdev and percentiles (the delay statistics fit them).
    pub rtt: Option<perfpeer_shared::one_way::OneWayFinal>,
    /// Our address and the server's, of the test's connection.
    pub addresses: (String, String),
}

impl BounceOutcome {
    /// Round trips a second at the measured mean (iperf 2's RPS: requests over their summed
    /// round-trip times); `None` without a round trip.
    pub(crate) fn requests_per_second(&self) -> Option<f64> {
        self.rtt
            .as_ref()
            .filter(|r| r.mean_ms > 0.0)
            .map(|r| 1e3 / r.mean_ms)
    }
}

/// Runs a bounce-back test against the iperf 2 server at `server` (blocking): bursts of
/// requests, each read back whole before the next; a stop message at the end.
pub(crate) fn run_client(
    server: std::net::SocketAddr,
    ask: &BounceRequest,
    connect_timeout: Duration,
    cancelled: &dyn Fn() -> bool,
) -> std::io::Result<BounceOutcome> {
    use std::io::{Read, Write};
    let size = usize::try_from(ask.size)
        .unwrap_or(usize::MAX)
        .clamp(BOUNCEBACK_SMALLEST, MAX_SIZE as usize);
    let mut stream = std::net::TcpStream::connect_timeout(&server, connect_timeout)?;
    stream.set_nodelay(true)?;
    if let Some(tos) = ask.tos {
        let ipv6 = server.ip().to_canonical().is_ipv6();
        let _ = set_tos(&socket2::SockRef::from(&stream), u32::from(tos), ipv6);
    }
    // A reply later than the hold and a second is a server that stopped answering.
    stream.set_read_timeout(Some(ask.hold + Duration::from_secs(2)))?;
    let mut bb_flags = bb::QUICKACK;
    let tos = ask.tos.map_or(0, |t| {
        bb_flags |= bb::TOS;
        u16::from(t)
    });
    let hold_us = u32::try_from(ask.hold.as_micros()).unwrap_or(u32::MAX);
    let mut request = vec![0u8; size];
    let mut reply = vec![0u8; size];
    let mut rtts = perfpeer_shared::one_way::OneWayDelays::default();
    let started = Instant::now();
    let mut moved = Bounced {
        replies: 0,
        bytes: 0,
        duration: Duration::ZERO,
    };
    let mut id = 0u32;
    'bursts: for burst_no in 0u32.. {
        let due = started + ask.period * burst_no;
        if due.duration_since(started) >= ask.duration || cancelled() {
            break;
        }
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        for _ in 0..ask.burst.max(1) {
            if started.elapsed() >= ask.duration || cancelled() {
                break 'bursts;
            }
            id += 1;
            let header = BounceBack {
                size: ask.size,
                id,
                bb_flags,
                tos,
                hold_us,
            };
            header.encode(wall_clock(), &mut request);
            let sent = Instant::now();
            stream.write_all(&request)?;
            stream.read_exact(&mut reply)?;
            rtts.record(sent.elapsed().as_secs_f64());
            moved.replies += 1;
            moved.bytes += 2 * size as u64;
        }
    }
    // The test lasts its time, as iperf 2's client reports it, whatever the last burst took.
    std::thread::sleep(ask.duration.saturating_sub(started.elapsed()));
    moved.duration = started.elapsed();
    // The stop message: the server answers it with nothing and ends.
    let stop = BounceBack {
        size: ask.size,
        id: 0,
        bb_flags: bb_flags | bb::STOP,
        tos,
        hold_us,
    };
    stop.encode(wall_clock(), &mut request);
    let _ = stream.write_all(&request);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let addresses = (
        stream
            .local_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string()),
        server.to_string(),
    );
    Ok(BounceOutcome {
        addresses,
        bounced: moved,
        rtt: rtts.finish(perfpeer_shared::one_way::ClockBasis::SameHost),
    })
}
