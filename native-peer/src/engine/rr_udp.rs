//! Request/response over datagrams (`--rr -u`, netperf's UDP_RR): the requesting end sends one
//! request datagram and waits for its answer; the answering end answers each request with one
//! response datagram. One transaction in flight. A request or answer that is lost is given up
//! after [`ANSWER_TIMEOUT`] and the next request is sent (netperf itself stalls until the test
//! ends). Requests of 8 bytes or more carry a transaction number the answer echoes, so a late
//! answer is never taken for the current one.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::rr::{RrFinal, RttHistogram};
use perfpeer_shared::spec::RequestResponse;

use super::datagram::Datagrams;
use super::wire::UdpControl;
use super::{Worker, datagram_dropped, is_retry, payload};

/// How long a request waits for its answer before it counts as lost.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(200);
/// A draining answerer that hears nothing for this long is done.
const DRAIN_IDLE: Duration = Duration::from_millis(300);
/// Bytes of the transaction number at the start of requests and answers that have room.
const TAG: usize = 8;

fn tag_of(buf: &[u8]) -> Option<u64> {
    (buf.len() >= TAG).then(|| u64::from_be_bytes(buf[..TAG].try_into().expect("8 bytes")))
}

/// The requesting end: runs transactions until stop.
pub(super) fn request(sock: &impl Datagrams, w: &Worker, rr: RequestResponse) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    sock.set_write_timeout(Some(Duration::from_millis(100)))?;
    let mut req = payload(w.len);
    let mut resp = vec![0u8; (rr.response_len as usize).max(TAG) + 64];
    let mut hist = RttHistogram::new();
    let mut total = 0u64;
    let mut seq = 0u64;
    let result = loop {
        if w.control.stopping() || w.control.take_budget(w.len) != Some(w.len) {
            break Ok(());
        }
        seq += 1;
        if req.len() >= TAG {
            req[..TAG].copy_from_slice(&seq.to_be_bytes());
        }
        let t0 = Instant::now();
        match sock.send(&req) {
            Ok(_) => {}
            Err(e) if datagram_dropped(&e) => continue,
            Err(e) => break Err(e),
        }
        total += w.len as u64;
        w.counters.bytes.store(total, Ordering::Relaxed);
        // Wait for this request's answer; older answers and stray datagrams are skipped.
        while t0.elapsed() < ANSWER_TIMEOUT && !w.control.aborted() {
            match sock.recv(&mut resp) {
                Ok(n) if UdpControl::is_control(&resp[..n]) => {}
                Ok(n) if req.len() >= TAG && n >= TAG && tag_of(&resp[..n]) != Some(seq) => {}
                Ok(_) => {
                    hist.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
                    break;
                }
                Err(e) if is_retry(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e),
            }
        }
    };
    let fin = RrFinal {
        transactions: hist.count(),
        request_len: u32::try_from(w.len).unwrap_or(u32::MAX),
        response_len: rr.response_len,
        rtt: hist.summary(),
    };
    *w.counters.rr.lock().unwrap_or_else(|p| p.into_inner()) = Some(fin);
    result
}

/// The answering end: answers each request until the test stops.
pub(super) fn answer(sock: &impl Datagrams, w: &Worker, rr: RequestResponse) -> io::Result<()> {
    let resp = payload(rr.response_len as usize);
    answer_each(sock, w, DRAIN_IDLE, resp, |req, resp| {
        // Echo the transaction number when both have room for it.
        if let (Some(tag), true) = (tag_of(req), resp.len() >= TAG) {
            resp[..TAG].copy_from_slice(&tag.to_be_bytes());
        }
        true
    })
}

/// Reads requests until the test stops (or, once it is stopping, until none has come for
/// `drain_idle`); `answer` writes each one's answer into `resp` and says whether to send it.
/// Control datagrams are skipped; a datagram that cannot be sent is lost, as on the wire.
pub(super) fn answer_each(
    sock: &impl Datagrams,
    w: &Worker,
    drain_idle: Duration,
    mut resp: Vec<u8>,
    mut answer: impl FnMut(&[u8], &mut [u8]) -> bool,
) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    sock.set_write_timeout(Some(Duration::from_millis(100)))?;
    let mut req = vec![0u8; 65_536];
    let mut total = 0u64;
    let mut last = Instant::now();
    loop {
        match sock.recv(&mut req) {
            Ok(n) if UdpControl::is_control(&req[..n]) => {}
            Ok(n) => {
                last = Instant::now();
                total += n as u64;
                w.counters.bytes.store(total, Ordering::Relaxed);
                if answer(&req[..n], &mut resp) {
                    match sock.send(&resp) {
                        Ok(_) => {}
                        Err(e) if datagram_dropped(&e) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) if is_retry(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        if w.control.aborted()
            || (w.control.draining_for().is_some() && last.elapsed() > drain_idle)
        {
            return Ok(());
        }
    }
}
