//! The latency probe (`--latency-under-load`): a UDP request/response stream on its own thread
//! and socket. The requester sends a small request every interval, whatever is answered, and
//! settles each probe once: answered (with the far end's time stamps) or given up after
//! [`LOSS_TIMEOUT`]. The answerer answers each request at once with the times it took the request
//! in and sent the answer, on its own clock. Datagram layouts: `perfpeer_proto::probe`.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use perfpeer_proto::probe::{ANSWER_LEN, ProbeAnswer, ProbeRequest};
use perfpeer_shared::latency::{ProbeEcho, ProbeSample};
use perfpeer_shared::spec::RequestResponse;
use portable_atomic::Ordering;

use super::datagram::Datagrams;
use super::wire::UdpControl;
use super::{Worker, datagram_dropped, is_retry, payload};

/// A probe unanswered for this long is lost (a bloated queue of several seconds is itself the
/// finding; waiting longer would hold the end of the test).
pub(crate) const LOSS_TIMEOUT: Duration = Duration::from_secs(3);
/// Shortest wait for an answer between sends (socket timeouts are coarser than this anyway).
const MIN_WAIT: Duration = Duration::from_millis(1);
/// A draining answerer that hears nothing for this long is done.
const DRAIN_IDLE: Duration = Duration::from_millis(500);

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Probes sent and not yet settled, in sequence order.
struct Outstanding(VecDeque<(u64, u64)>);

impl Outstanding {
    /// The send time of the probe `seq`, if it is still out.
    fn sent_ns(&self, seq: u64) -> Option<u64> {
        let at = self.0.binary_search_by_key(&seq, |&(s, _)| s).ok()?;
        self.0.get(at).map(|&(_, sent)| sent)
    }

    /// Takes the probe `seq` out, with its send time.
    fn take(&mut self, seq: u64) -> Option<u64> {
        let at = self.0.binary_search_by_key(&seq, |&(s, _)| s).ok()?;
        self.0.remove(at).map(|(_, sent)| sent)
    }
}

fn settle(w: &Worker, sample: ProbeSample) {
    w.counters
        .probes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(sample);
}

fn lost(seq: u64, sent_ns: u64) -> ProbeSample {
    ProbeSample {
        seq,
        sent_ns,
        echo: None,
    }
}

/// The requesting end: a request every `interval` until stop, then waits up to
/// [`LOSS_TIMEOUT`] for the answers still out.
pub(super) fn request(
    sock: &std::net::UdpSocket,
    w: &Worker,
    rr: RequestResponse,
    interval: Duration,
) -> io::Result<()> {
    Datagrams::set_write_timeout(sock, Some(Duration::from_millis(100)))?;
    crate::sys::tighten_timer_slack();
    let epoch = w.control.epoch;
    let mut req = payload(w.len.max(perfpeer_proto::probe::REQUEST_LEN));
    let mut buf = vec![0u8; (rr.response_len as usize).max(ANSWER_LEN) + 64];
    let mut out = Outstanding(VecDeque::new());
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut next = Instant::now();
    let mut stopped_at: Option<Instant> = None;
    loop {
        if w.control.aborted() {
            return Ok(());
        }
        let now = Instant::now();
        if stopped_at.is_none() && w.control.stopping() {
            stopped_at = Some(now);
        }
        if let Some(at) = stopped_at
            && (out.0.is_empty() || now.duration_since(at) > LOSS_TIMEOUT)
        {
            break;
        }
        if stopped_at.is_none() && now >= next {
            seq += 1;
            let sent_ns = ns(now.saturating_duration_since(epoch));
            ProbeRequest { seq, sent_ns }.write(&mut req);
            match Datagrams::send(sock, &req) {
                Ok(_) => {}
                // A request the kernel would not take is a probe lost on the way out.
                Err(e) if datagram_dropped(&e) => {}
                Err(e) => return Err(e),
            }
            out.0.push_back((seq, sent_ns));
            bytes += req.len() as u64;
            w.counters.bytes.store(bytes, Ordering::Relaxed);
            w.counters.packets.store(seq, Ordering::Relaxed);
            // Keep the schedule; a sender that fell behind skips the slots it missed rather
            // than sending them back to back.
            next += interval;
            if next <= now {
                next = now + interval;
            }
        }
        while let Some(&(s, sent)) = out.0.front() {
            if now.saturating_duration_since(epoch + Duration::from_nanos(sent)) < LOSS_TIMEOUT {
                break;
            }
            out.0.pop_front();
            settle(w, lost(s, sent));
        }
        let wait = if stopped_at.is_some() {
            Duration::from_millis(20)
        } else {
            next.saturating_duration_since(Instant::now())
        };
        // Wait precisely (the next send is due then), then read what came.
        match crate::sys::wait_readable(sock, wait) {
            Ok(false) => continue,
            Ok(true) => sock.set_read_timeout(Some(MIN_WAIT))?,
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                sock.set_read_timeout(Some(wait.max(MIN_WAIT)))?;
            }
            Err(e) => return Err(e),
        }
        match Datagrams::recv(sock, &mut buf) {
            Ok(n) if UdpControl::is_control(&buf[..n]) => {}
            Ok(n) => {
                let received_ns = ns(Instant::now().saturating_duration_since(epoch));
                let Ok(answer) = ProbeAnswer::read(&buf[..n]) else {
                    continue;
                };
                // A late answer to a probe already given up, a stray datagram, or an answer
                // that does not echo the request (a peer that answers as `--rr` does, without
                // stamps): ignored.
                let echoes = out.sent_ns(answer.request.seq) == Some(answer.request.sent_ns);
                if !echoes || answer.far_sent_ns < answer.far_received_ns {
                    continue;
                }
                if let Some(sent_ns) = out.take(answer.request.seq) {
                    settle(
                        w,
                        ProbeSample {
                            seq: answer.request.seq,
                            sent_ns,
                            echo: Some(ProbeEcho {
                                received_ns,
                                far_received_ns: answer.far_received_ns,
                                far_sent_ns: answer.far_sent_ns,
                                far_count: answer.far_count,
                            }),
                        },
                    );
                }
            }
            Err(e) if is_retry(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
    }
    for (s, sent) in out.0.drain(..) {
        settle(w, lost(s, sent));
    }
    Ok(())
}

/// The answering end: answers each request at once, stamped, until the test stops.
pub(super) fn answer(sock: &impl Datagrams, w: &Worker, rr: RequestResponse) -> io::Result<()> {
    let epoch = Instant::now();
    let mut taken = 0u64;
    let resp = payload((rr.response_len as usize).max(ANSWER_LEN));
    super::rr_udp::answer_each(sock, w, DRAIN_IDLE, resp, |req, resp| {
        let far_received_ns = ns(epoch.elapsed());
        let Ok(request) = ProbeRequest::read(req) else {
            return false;
        };
        taken += 1;
        ProbeAnswer {
            request,
            far_received_ns,
            far_sent_ns: ns(epoch.elapsed()),
            far_count: taken,
        }
        .write(resp);
        true
    })
}
