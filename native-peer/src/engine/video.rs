//! The sender of a video-like stream (`--isochronous`): a frame every 1/fps seconds on the
//! monotonic clock, its size drawn by [`FrameSizes`], sent as a burst of datagrams that each
//! carry the format's header (wall-clock stamped: the test measures trip times) and the
//! frame's mark: perfpeer's [`FrameTag`], or iperf 2's isochronous block (`perfpeer iperf -c
//! --isochronous`). A frame once started is sent whole; a sender late for its next frame sends it
//! at once (the receiver sees it late), it never skips one. Over TCP ([`send_tcp`]) a frame is
//! one write, stamped at its start as iperf 2 stamps a write. The receiver's side is the UDP or
//! TCP receiver's, which hands each frame's place to
//! [`super::udp_stats::UdpRxStats::on_frame`].

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::video::{FrameSizes, VideoSpec};

use super::datagram::Datagrams;
use super::pacing::{tighten_timer_slack, wait_until};
use super::udp::{Refusals, signal_end};
use super::wire::{FramePlace, FrameTag};
use super::{POLL, Worker, is_retry};
use crate::util::wall_clock;
use perfpeer_proto::iperf2::TCP_STAMP_LEN;

/// The stream's frame sizes, seeded with any bits: the low 64 of the time in ns, and its id.
fn frame_sizes(w: &Worker, video: &VideoSpec, streams: u16) -> FrameSizes {
    let nanos = wall_clock().as_nanos() & u128::from(u64::MAX);
    let seed = u64::from(w.id) ^ u64::try_from(nanos).unwrap_or_default();
    FrameSizes::new(video, streams, seed)
}

/// Sends frames until the test stops or its byte budget (`-n`) ends, both checked between
/// frames: the last frame is sent whole, even past the budget.
pub(super) fn send(
    sock: &impl Datagrams,
    w: &Worker,
    video: VideoSpec,
    streams: u16,
) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    tighten_timer_slack();
    let mut buf = w.payload();
    let len = buf.len();
    let header = w.format.min_frame_len();
    let mut sizes = frame_sizes(w, &video, streams);
    let period = Duration::from_secs_f64(video.period_s());
    let start = Instant::now();
    let started_wall = wall_clock();
    let period_us = u32::try_from(period.as_micros()).unwrap_or(u32::MAX);
    let (mut seq, mut bytes, mut frame) = (0u64, 0u64, 0u32);
    let mut refused = Refusals::default();
    'frames: while !w.control.stopping() {
        let due = start + period * frame;
        if !wait_until(due, || w.control.stopping()) {
            break;
        }
        frame += 1;
        let size = sizes.next_bytes();
        if w.control
            .take_budget(usize::try_from(size).unwrap_or(usize::MAX))
            .is_none()
        {
            break;
        }
        // Whole datagrams of -l bytes, the last one shorter (never below the header and tag).
        let count = u32::try_from(size.div_ceil(len as u64).max(1)).unwrap_or(u32::MAX);
        for index in 0..count {
            let this_len = if index + 1 == count {
                let rest = size - u64::from(index) * len as u64;
                usize::try_from(rest).map_or(len, |rest| rest.clamp(header, len))
            } else {
                len
            };
            let tag = FrameTag {
                frame,
                index,
                count,
            };
            let sent_before = u64::from(index) * len as u64;
            let place = FramePlace {
                frame_bytes: u32::try_from(size).unwrap_or(u32::MAX),
                remaining: u32::try_from(size.saturating_sub(sent_before).max(this_len as u64))
                    .unwrap_or(u32::MAX),
                period_us,
                start: started_wall,
            };
            loop {
                let wall = wall_clock();
                w.format.write_data(&mut buf, seq + 1, wall, wall);
                w.format.write_frame(&mut buf, tag, place);
                match sock.send(&buf[..this_len]) {
                    Ok(n) => {
                        seq += 1;
                        bytes += n as u64;
                        w.counters.packets.store(seq, Ordering::Relaxed);
                        w.counters.bytes.store(bytes, Ordering::Relaxed);
                        break;
                    }
                    // A full queue: the same datagram again (a frame is sent whole).
                    Err(e) if is_retry(&e) || crate::sys::is_no_buffer_space(&e) => {
                        if w.control.stopping() {
                            break 'frames;
                        }
                        std::thread::yield_now();
                    }
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        refused.on_refusal()?;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    signal_end(sock, w, seq);
    Ok(())
}

/// Sends frames over TCP: each frame one write of its size (in pieces of the buffer), stamped at
/// its start as iperf 2 stamps a write — its send time, number and length — so the receiver
/// times each frame from its send to the read of its last byte. A frame once started is sent
/// whole; the stream ends (EOF) when the test stops or its byte budget ends.
pub(super) fn send_tcp(
    sock: &std::net::TcpStream,
    w: &Worker,
    video: VideoSpec,
    streams: u16,
) -> io::Result<()> {
    use std::io::Write;
    sock.set_write_timeout(Some(POLL))?;
    tighten_timer_slack();
    let mut buf = w.payload();
    let mut sizes = frame_sizes(w, &video, streams);
    let period = Duration::from_secs_f64(video.period_s());
    let (start, started_wall) = (Instant::now(), wall_clock());
    let stamp = super::tcp::write_stamps_of(w);
    let (mut bytes, mut frame) = (0u64, 0u32);
    let mut writer = sock;
    'frames: while !w.control.stopping() {
        if !wait_until(start + period * frame, || w.control.stopping()) {
            break;
        }
        frame += 1;
        let size = usize::try_from(sizes.next_bytes())
            .unwrap_or(usize::MAX)
            .max(TCP_STAMP_LEN);
        if w.control.take_budget(size).is_none() {
            break;
        }
        stamp.write_stamp(
            &mut buf,
            (u64::from(frame), size),
            wall_clock(),
            started_wall,
        );
        let mut left = size;
        while left > 0 {
            // Only the frame's first bytes are read as its stamp: the buffer again for the rest.
            match writer.write(&buf[..left.min(buf.len())]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    left -= n;
                    bytes += n as u64;
                    w.counters.bytes.store(bytes, Ordering::Relaxed);
                }
                Err(e) if is_retry(&e) => {
                    if w.control.aborted() {
                        break 'frames;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        w.counters
            .packets
            .store(u64::from(frame), Ordering::Relaxed);
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    Ok(())
}
