//! Request/response workers (`--rr`, netperf's TCP_RR): the sending end writes one request,
//! reads the whole response and records the round trip; the receiving end reads one whole
//! request and answers it. One transaction in flight. `bytes` counts request bytes at both ends,
//! so they agree exactly; the round-trip histogram is published once, when the stream ends.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::rr::{RrFinal, RttHistogram};
use perfpeer_shared::spec::RequestResponse;

use super::{POLL, Worker, is_retry, payload};

/// How long the answering end waits for EOF after stop before giving up.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// What a blocking read or write loop ended with.
enum Io {
    Done,
    /// Clean EOF before the first byte.
    Eof,
    /// The test was aborted (or stopped, while waiting to write).
    Stopped,
}

/// Writes all of `buf`, riding out socket timeouts until the test is aborted; each write call
/// that moved data is counted (the stream's sends, iperf 2's Write column).
fn write_all(mut sock: &TcpStream, buf: &[u8], w: &Worker) -> io::Result<Io> {
    let mut off = 0;
    while off < buf.len() {
        match sock.write(&buf[off..]) {
            Ok(n) => {
                w.counters.packets.fetch_add(1, Ordering::Relaxed);
                off += n;
                // A partial write: the peer reads slowly, maybe a byte at a time; do not
                // outlive it.
                if off < buf.len() && w.control.aborted() {
                    return Ok(Io::Stopped);
                }
            }
            Err(e) if is_retry(&e) => {
                if w.control.aborted() {
                    return Ok(Io::Stopped);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Io::Done)
}

/// Reads exactly `buf.len()` bytes; `count` is called with each chunk read. `on_idle` is asked
/// at each socket timeout and after each partial read whether to give up (`Some(result)`).
fn read_full(
    mut sock: &TcpStream,
    buf: &mut [u8],
    mut count: impl FnMut(usize),
    on_idle: impl Fn() -> Option<io::Result<Io>>,
) -> io::Result<Io> {
    let mut fill = 0;
    while fill < buf.len() {
        match sock.read(&mut buf[fill..]) {
            Ok(0) if fill == 0 => return Ok(Io::Eof),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the stream in the middle of a message",
                ));
            }
            Ok(n) => {
                fill += n;
                count(n);
                // A partial message: the peer may trickle it a byte at a time, so a read never
                // times out; ask here too.
                if fill < buf.len()
                    && let Some(r) = on_idle()
                {
                    return r;
                }
            }
            Err(e) if is_retry(&e) => {
                if let Some(r) = on_idle() {
                    return r;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Io::Done)
}

/// The requesting end: runs transactions until stop, then closes its direction.
pub(super) fn request(sock: &TcpStream, w: &Worker, rr: RequestResponse) -> io::Result<()> {
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(POLL))?;
    sock.set_write_timeout(Some(POLL))?;
    let req = payload(w.len);
    let mut resp = vec![0u8; rr.response_len as usize];
    let mut hist = RttHistogram::new();
    let mut total = 0u64;
    let result = loop {
        if w.control.stopping() || w.control.take_budget(w.len) != Some(w.len) {
            break Ok(());
        }
        let t0 = Instant::now();
        match write_all(sock, &req, w) {
            Ok(Io::Done) => {}
            Ok(_) => break Ok(()),
            Err(e) => break Err(e),
        }
        total += w.len as u64;
        w.counters.bytes.store(total, Ordering::Relaxed);
        let answered = read_full(
            sock,
            &mut resp,
            |_| {},
            || w.control.aborted().then_some(Ok(Io::Stopped)),
        );
        match answered {
            Ok(Io::Done) => hist.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)),
            Ok(Io::Eof) => {
                break Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the stream instead of answering",
                ));
            }
            Ok(Io::Stopped) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    let fin = RrFinal {
        transactions: hist.count(),
        request_len: u32::try_from(w.len).unwrap_or(u32::MAX),
        response_len: rr.response_len,
        rtt: hist.summary(),
    };
    *w.counters.rr.lock().unwrap_or_else(|p| p.into_inner()) = Some(fin);
    // EOF tells the answering end that every request we counted has been sent.
    let _ = sock.shutdown(Shutdown::Write);
    result
}

/// The answering end: reads whole requests and answers each, until the requester's EOF.
pub(super) fn answer(sock: &TcpStream, w: &Worker, rr: RequestResponse) -> io::Result<()> {
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(POLL))?;
    sock.set_write_timeout(Some(POLL))?;
    let mut req = vec![0u8; w.len];
    let resp = payload(rr.response_len as usize);
    let mut total = 0u64;
    let idle = || {
        if w.control.aborted() {
            return Some(Ok(Io::Stopped));
        }
        w.control
            .draining_for()
            .is_some_and(|d| d > DRAIN_LIMIT)
            .then(|| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "requester never closed the stream",
                ))
            })
    };
    loop {
        let got = read_full(
            sock,
            &mut req,
            |n| {
                total += n as u64;
                w.counters.bytes.store(total, Ordering::Relaxed);
            },
            idle,
        )?;
        match got {
            Io::Done => {}
            Io::Eof | Io::Stopped => return Ok(()),
        }
        if let Io::Stopped = write_all(sock, &resp, w)? {
            return Ok(());
        }
    }
}
