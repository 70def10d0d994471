//! Request/response workers (`--rr`, netperf's TCP_RR): the sending end writes one request,
//! reads the whole response and records the round trip; the receiving end reads one whole
//! request and answers it. One transaction in flight. `bytes` counts request bytes at both ends,
//! so they agree exactly; the round-trip histogram is published once, when the stream ends.
//! Bounce-back (`rr.bursts`): the requester runs its transactions in bursts, a burst every
//! period on the monotonic clock, and the answering end holds each answer as asked.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::rr::{RrFinal, RttHistogram};
use perfpeer_shared::spec::RequestResponse;

use super::pacing::wait_until;
use super::patient::{self, Moved, Want};
use super::{POLL, Worker, payload};

/// How long the answering end waits for EOF after stop before giving up.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Writes all of `buf` until the test is aborted (also in the middle of a write a slow reader
/// takes a byte at a time); each call that moved data is counted (the stream's sends, iperf 2's
/// Write column). Whether all of it went.
fn send_whole(sock: &TcpStream, buf: &[u8], w: &Worker) -> io::Result<bool> {
    let moved = patient::write_all(
        sock,
        buf,
        |_| {
            w.counters.packets.fetch_add(1, Ordering::Relaxed);
        },
        |_| w.control.aborted(),
    )?;
    Ok(moved == Moved::All)
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
    let (started, mut in_burst, mut bursts_done) = (Instant::now(), 0u32, 0u32);
    let result = loop {
        if let Some(b) = rr.bursts
            && in_burst == b.count
        {
            // The burst is done: the next one starts a period after this one did.
            bursts_done += 1;
            in_burst = 0;
            let due = started + Duration::from_micros(u64::from(b.period_us)) * bursts_done;
            if !wait_until(due, || w.control.stopping()) {
                break Ok(());
            }
        }
        in_burst += 1;
        if w.control.stopping() || w.control.take_budget(w.len) != Some(w.len) {
            break Ok(());
        }
        let t0 = Instant::now();
        match send_whole(sock, &req, w) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
        total += w.len as u64;
        w.counters.bytes.store(total, Ordering::Relaxed);
        let answered = patient::read(sock, &mut resp, Want::All, |_| {}, |_| w.control.aborted());
        match answered {
            Ok(Moved::All) => {
                hist.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
            Ok(Moved::Closed(_)) => {
                break Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the stream instead of answering",
                ));
            }
            Ok(Moved::GaveUp(_)) => break Ok(()),
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
    // The requester's EOF ends the test; one that never comes after stop is given up on.
    let draining_too_long = || w.control.draining_for().is_some_and(|d| d > DRAIN_LIMIT);
    loop {
        let got = patient::read(
            sock,
            &mut req,
            Want::All,
            |n| {
                total += n as u64;
                w.counters.bytes.store(total, Ordering::Relaxed);
            },
            |_| w.control.aborted() || draining_too_long(),
        )?;
        match got {
            Moved::All => {}
            Moved::Closed(0) => return Ok(()),
            Moved::Closed(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the stream in the middle of a message",
                ));
            }
            Moved::GaveUp(_) if w.control.aborted() => return Ok(()),
            Moved::GaveUp(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "requester never closed the stream",
                ));
            }
        }
        if let Some(b) = rr.bursts.filter(|b| b.hold_us > 0) {
            let until = Instant::now() + Duration::from_micros(u64::from(b.hold_us));
            if !wait_until(until, || w.control.aborted()) {
                return Ok(());
            }
        }
        if !send_whole(sock, &resp, w)? {
            return Ok(());
        }
    }
}
