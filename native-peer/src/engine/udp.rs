//! UDP stream workers: a paced sender that stamps each datagram with a sequence number and its
//! send time (in the stream's [`DatagramFormat`]) and signals its end, and a receiver that feeds
//! [`super::udp_stats::UdpRxStats`] until the sender's end (or a drain limit after stop). DCCP streams run the
//! same workers over any [`Datagrams`] socket.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::one_way::ClockBasis;

use super::datagram::Datagrams;
use super::pacing::{Pacer, tighten_timer_slack, wait_until};
use super::udp_stats::UdpRxStats;
use super::wire::{Datagram, DatagramFormat, UdpControl};
use super::{POLL, Worker, is_retry};
use crate::util::wall_clock;

/// End datagrams sent (one may be lost; the receiver needs only one).
const FIN_COPIES: usize = 3;
/// ttcp sends up to four end sentinels after its data.
const TTCP_END_SENTINELS: usize = 4;
/// A draining receiver that hears nothing for this long assumes the end was lost.
pub(super) const DRAIN_IDLE: Duration = Duration::from_millis(300);
/// A draining receiver gives up after this long even if datagrams keep coming.
pub(super) const DRAIN_LIMIT: Duration = Duration::from_secs(3);

pub(super) fn send(sock: &impl Datagrams, w: &Worker) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let mut buf = w.payload();
    let mut pacer = w
        .rate
        .map(|r| Pacer::new(r, Instant::now()).with_burst(w.burst));
    if pacer.is_some() {
        tighten_timer_slack();
    }
    if w.format == DatagramFormat::Ttcp {
        let _ = sock.send(&buf[..4]);
    }
    let epoch = w.control.epoch;
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut refused = Refusals::default();
    while !w.control.stopping() {
        if w.control.take_budget(w.len).is_none() {
            break;
        }
        if let Some(p) = &pacer
            && !wait_until(p.due(), || w.control.stopping())
        {
            break;
        }
        let wall = wall_clock();
        let mono = if w.stamp_wall { wall } else { epoch.elapsed() };
        w.format.write_data(&mut buf, seq + 1, mono, wall);
        match sock.send(&buf) {
            Ok(n) => {
                seq += 1;
                bytes += n as u64;
                w.counters.packets.store(seq, Ordering::Relaxed);
                w.counters.bytes.store(bytes, Ordering::Relaxed);
            }
            // A full queue (ENOBUFS) or an ICMP error for an earlier datagram: this one was not
            // sent, so its sequence number is reused.
            Err(e) if is_retry(&e) || crate::sys::is_no_buffer_space(&e) => {
                std::thread::yield_now();
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                refused.on_refusal()?;
                continue;
            }
            Err(e) => return Err(e),
        }
        if let Some(p) = &mut pacer {
            p.on_sent(w.len as u64, Instant::now());
        }
    }
    signal_end(sock, w, seq);
    Ok(())
}

/// Tells the receiver we are done, the way the format does it. iperf3 ends on its control
/// connection and iperf2's fin/report exchange is run by its driver, so both send nothing here.
pub(super) fn signal_end(sock: &impl Datagrams, w: &Worker, packets: u64) {
    let (datagram, copies) = match w.format {
        DatagramFormat::Perfpeer => (
            UdpControl::Fin {
                stream_id: w.id,
                packets,
            }
            .encode(),
            FIN_COPIES,
        ),
        DatagramFormat::Ttcp => (vec![b' '; 4], TTCP_END_SENTINELS),
        DatagramFormat::Iperf3 { .. } | DatagramFormat::Iperf2 { .. } => return,
    };
    // ttcp's sentinels follow an unpaced blast that may still fill the receiver's queue: space
    // them out so at least one finds room.
    let gap = if w.format == DatagramFormat::Ttcp {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(1)
    };
    for _ in 0..copies {
        let _ = sock.send(&datagram);
        std::thread::sleep(gap);
    }
}

pub(super) fn receive(sock: &impl Datagrams, w: &Worker) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 65_536];
    let epoch = w.control.epoch;
    let mut bytes = 0u64;
    let mut count = 0u64;
    let mut last_arrival = Instant::now();
    let mut preloaded = w.first_datagrams.iter();
    loop {
        let received = match preloaded.next() {
            Some(first) => {
                buf[..first.len()].copy_from_slice(first);
                Ok(first.len())
            }
            None => sock.recv(&mut buf),
        };
        match received {
            Ok(n) => match w.format.classify(&buf[..n]) {
                Datagram::Data { seq, sent } => {
                    last_arrival = Instant::now();
                    count += 1;
                    let arrived = epoch.elapsed();
                    let mut stats = lock(&w.counters.udp_rx);
                    stats.on_datagram(seq.unwrap_or(count), sent.unwrap_or(arrived), arrived);
                    if let (Some(clock), Some(sent)) = (w.one_way, sent) {
                        record_one_way(&mut stats, &buf[..n], sent, clock, w);
                    }
                    drop(stats);
                    bytes += n as u64;
                    w.counters.bytes.store(bytes, Ordering::Relaxed);
                    w.counters.mark_data(arrived);
                }
                // A ttcp start sentinel (nothing received yet) is not the end.
                Datagram::End { .. } if w.format == DatagramFormat::Ttcp && count == 0 => {}
                Datagram::End { packets } => {
                    let mut stats = lock(&w.counters.udp_rx);
                    let packets = match packets {
                        Some(p) if w.format.fin_is_data() => {
                            // Counted as the datagram after the last, as its sender counts it.
                            let arrived = epoch.elapsed();
                            let sent = w.format.fin_sent(&buf[..n]).unwrap_or(arrived);
                            stats.on_datagram(p + 1, sent, arrived);
                            if let (Some(clock), Some(sent)) =
                                (w.one_way, w.format.fin_sent(&buf[..n]))
                            {
                                record_one_way(&mut stats, &[], sent, clock, w);
                            }
                            bytes += n as u64;
                            w.counters.bytes.store(bytes, Ordering::Relaxed);
                            w.counters.mark_data(arrived);
                            Some(p + 1)
                        }
                        other => other,
                    };
                    if let Some(p) = packets {
                        stats.on_fin(p);
                    }
                    return Ok(());
                }
                Datagram::Other => {}
            },
            Err(e) if is_receive_retry(&e) => {}
            Err(e) => return Err(e),
        }
        if receiver_done(w, last_arrival) {
            return Ok(());
        }
    }
}

/// ICMP refusals (port or host unreachable, surfacing as ECONNREFUSED on a connected socket) a
/// sender takes before it stops its stream: the receiver is gone, or its address never wanted
/// the stream. One is tolerated twice over: a stale error from an earlier test on the same ports.
const REFUSALS_TO_STOP: u32 = 3;

/// Counts a sender's ICMP refusals.
#[derive(Debug, Default)]
pub(super) struct Refusals(u32);

impl Refusals {
    /// Counts one; an error once the receiver has refused [`REFUSALS_TO_STOP`] times.
    pub(super) fn on_refusal(&mut self) -> io::Result<()> {
        self.0 += 1;
        if self.0 >= REFUSALS_TO_STOP {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "the receiver's address refuses datagrams (ICMP unreachable): stream stopped",
            ));
        }
        Ok(())
    }
}

/// A receive error that only means "nothing yet" (a timeout, or an ICMP refusal surfacing on a
/// connected socket before the sender's first datagram).
pub(super) fn is_receive_retry(e: &io::Error) -> bool {
    is_retry(e) || e.kind() == io::ErrorKind::ConnectionRefused
}

/// Whether a datagram receiver stops now: the test was aborted, or it is draining and the
/// stream went quiet (or the drain ran out of time).
pub(super) fn receiver_done(w: &Worker, last_arrival: Instant) -> bool {
    w.control.aborted()
        || w.control
            .draining_for()
            .is_some_and(|draining| last_arrival.elapsed() > DRAIN_IDLE || draining > DRAIN_LIMIT)
}

pub(super) use crate::util::lock;

/// Largest one-way delay believed, either way: beyond, the send time was not wall-clock time (a
/// far end that does not stamp it) or the clocks are hours apart, and the delay is not counted.
const MAX_ONE_WAY_S: f64 = 3600.0;

/// Counts a datagram's one-way delay (now on our wall clock minus its wall-clock send time)
/// and, in a video test (or an iperf 2 `--isochronous` flow), its place in its frame
/// (`datagram`: its bytes, with the frame's tag or mark).
pub(super) fn record_one_way(
    stats: &mut UdpRxStats,
    datagram: &[u8],
    sent: Duration,
    clock: ClockBasis,
    w: &Worker,
) {
    let now = wall_clock();
    if !count_one_way(stats, now, sent, clock, w) {
        return;
    }
    let video_period = w.video.map(|(video, _)| video.period_s());
    if let Some(mark) = w.format.frame_of(datagram, video_period) {
        let times = (sent.as_secs_f64(), now.as_secs_f64());
        stats.on_frame(mark, times, clock, w.histogram);
    }
}

/// Counts one one-way delay, `now` minus `sent` (both wall-clock times), unless it is beyond
/// belief ([`MAX_ONE_WAY_S`]); whether it was counted. UDP datagrams and TCP writes alike.
pub(super) fn count_one_way(
    stats: &mut UdpRxStats,
    now: Duration,
    sent: Duration,
    clock: ClockBasis,
    w: &Worker,
) -> bool {
    let delay = now.as_secs_f64() - sent.as_secs_f64();
    let believed = delay.abs() <= MAX_ONE_WAY_S;
    if believed {
        stats.on_one_way(delay, clock, w.histogram);
    }
    believed
}
