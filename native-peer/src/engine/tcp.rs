//! TCP stream workers: a sender that writes one reused buffer until told to stop (then shuts
//! down its direction so the receiver sees EOF), and a receiver that reads until EOF.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_proto::write_stamps::WriteStamps;

use super::pacing::{Pacer, tighten_timer_slack, wait_until};
use super::sockopt::set_max_pacing_rate;
use super::udp::count_one_way;
use super::wire::{DatagramFormat, FrameMark, FrameTag};
use super::{POLL, Worker, is_retry};
use crate::util::{lock, wall_clock};

/// How long a receiver waits for the sender's EOF after stop before giving up.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// Bytes a TCP receiver waits for before it is woken (SO_RCVLOWAT).
const RX_LOW_WATER: usize = 128 * 1024;
/// Longest a TCP receiver leaves fewer bytes than that unread.
const RX_WAIT: Duration = Duration::from_millis(10);
/// Smallest send made with sendfile: below it a plain write costs less than the call.
const SENDFILE_MIN: usize = 16 * 1024;
/// Largest read; one read per call keeps syscalls few.
pub(super) const MAX_READ: usize = 1 << 20;

/// An unpaced stream's thread runs in the batch scheduling class (SCHED_BATCH, Linux): woken
/// (data to read, room to write), it waits for the running thread's time slice instead of
/// preempting it. Where streams outnumber cores — four streams each way on two cores — each
/// wake-up was a switch; taking turns by slice, with receivers woken for a buffer's worth, made
/// `-P 4` half again as fast on loopback (docs/benchmarks.md, "Taking turns"). The thread's
/// share of the CPU is the same, and anything else on the host that wakes still preempts it.
/// A paced stream keeps the default class: its sender wakes on a timer that must not wait a
/// slice.
fn take_turns(w: &Worker) {
    if w.rate.is_none() {
        // Where the class is missing the stream runs as before.
        let _ = crate::sys::run_as_batch();
    }
}

pub(super) fn send(sock: &TcpStream, w: &Worker) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    take_turns(w);
    let mut buf = w.payload();
    let kernel_paced = match w.rate {
        Some(rate) if w.fq_pacing => {
            set_max_pacing_rate(sock, rate)?;
            true
        }
        _ => false,
    };
    let mut pacer = w
        .rate
        .filter(|_| !kernel_paced)
        .map(|r| Pacer::new(r, Instant::now()).with_burst(w.burst));
    if pacer.is_some() {
        tighten_timer_slack();
    }
    // A lone sending stream's large sends go out with sendfile from a memory file holding the
    // payload (no copy from user memory per send, as iperf3's -Z); with several streams, for
    // small sends, off Linux, or where that file cannot be made, the buffer is written.
    // A `--trip-times` stream stamps each write, so it writes.
    let source = (w.alone && buf.len() >= SENDFILE_MIN && !w.stamp_wall)
        .then(|| crate::sys::SendSource::new(&buf).ok())
        .flatten();
    let (mut total, mut writes) = (0u64, 0u64);
    let started = wall_clock();
    let mut writer = sock;
    'outer: while !w.control.stopping() {
        let Some(chunk) = w.control.take_budget(w.len) else {
            break;
        };
        if let Some(p) = &pacer
            && !wait_until(p.due(), || w.control.stopping())
        {
            break;
        }
        if w.stamp_wall {
            // The write's number and its wall-clock send time at its start (perfpeer's 16
            // bytes, or iperf 2's 92 with the write's length): the receiver reads them when
            // the write's last byte arrives (`WriteStamps`).
            w.format
                .write_stamp(&mut buf, (writes + 1, chunk), wall_clock(), started);
        }
        let mut off = 0;
        while off < chunk {
            let sent = match &source {
                Some(file) => file.send(sock, off..chunk),
                None => writer.write(&buf[off..chunk]),
            };
            match sent {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    off += n;
                    total += n as u64;
                    writes += 1;
                    w.counters.bytes.store(total, Ordering::Relaxed);
                    w.counters.packets.store(writes, Ordering::Relaxed);
                    // A receiver that reads a byte now and then never lets a write time out.
                    if off < chunk && w.control.aborted() {
                        break 'outer;
                    }
                }
                Err(e) if is_retry(&e) => {
                    if w.control.stopping() {
                        break 'outer;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(p) = &mut pacer {
            p.on_sent(chunk as u64, Instant::now());
        }
    }
    // EOF tells the receiver that everything we counted has been sent.
    let _ = sock.shutdown(Shutdown::Write);
    Ok(())
}

/// How a stream's TCP writes are stamped, for its sender and its receiver alike: a video test's
/// writes are its frames, each stamped as iperf 2 stamps a write (which says its length: the
/// frames' sizes vary); any other's in the stream's own format.
pub(super) fn write_stamps_of(w: &Worker) -> DatagramFormat {
    if w.video.is_some() {
        DatagramFormat::Iperf2 { seq64: false }
    } else {
        w.format
    }
}

pub(super) fn receive(sock: &TcpStream, w: &Worker) -> io::Result<()> {
    take_turns(w);
    let mut buf = vec![0u8; w.len.clamp(64 * 1024, MAX_READ)];
    // The receiver wakes for a buffer's worth, not for every segment (SO_RCVLOWAT): it then
    // reads in large gulps and costs its sender far fewer wake-ups; a slow stream's partial data
    // is read when RX_WAIT passes, so counts and arrival times lag by at most that. (Several
    // streams at once went slower with it until their threads took turns, `take_turns`.)
    // A `--trip-times` stream reads as bytes arrive: each write's delay ends with the read that
    // brings its last byte.
    let stamp_format = write_stamps_of(w);
    let video_period = w.video.map(|(video, _)| video.period_s());
    let mut stamps = w
        .one_way
        .map(|clock| (WriteStamps::new(w.len, stamp_format), clock));
    let gulp = stamps.is_none()
        && crate::sys::set_recv_low_water(sock, RX_LOW_WATER.min(buf.len())).is_ok();
    sock.set_read_timeout(Some(if gulp { RX_WAIT } else { POLL }))?;
    let mut total = 0u64;
    let mut reader = sock;
    loop {
        let got = if w.skip_rx_copy {
            crate::sys::recv_discard(sock, &mut buf)
        } else {
            reader.read(&mut buf)
        };
        match got {
            Ok(0) => return Ok(()),
            Ok(n) => {
                if let Some((stamps, clock)) = &mut stamps {
                    let now = wall_clock();
                    let mut rx = lock(&w.counters.udp_rx);
                    stamps.on_read(&buf[..n], |sent, id| {
                        let counted = count_one_way(&mut rx, now, sent, *clock, w);
                        if let (true, Some(period_s)) = (counted, video_period) {
                            let frame = FrameMark {
                                tag: FrameTag {
                                    frame: u32::try_from(id).unwrap_or(u32::MAX).max(1),
                                    index: 0,
                                    count: 1,
                                },
                                period_s,
                                last_may_be_cut: false,
                            };
                            let times = (sent.as_secs_f64(), now.as_secs_f64());
                            rx.on_frame(frame, times, *clock, w.histogram);
                        }
                    });
                }
                total += n as u64;
                w.counters.bytes.store(total, Ordering::Relaxed);
                w.counters.mark_data(w.control.epoch.elapsed());
            }
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e),
        }
        // Checked after every read, not only when one times out: a sender that trickles a byte
        // now and then never lets a read time out, and must not hold the stream past its end.
        if w.control.aborted() {
            return Ok(());
        }
        if w.control.stopping() && w.control.draining_for().is_some_and(|d| d > DRAIN_LIMIT) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "sender never closed the stream",
            ));
        }
    }
}
