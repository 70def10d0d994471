//! Batched UDP for perfpeer's own datagram format: an unpaced sender that hands the kernel up to
//! 64 datagrams per send with UDP GSO (or [`BATCH`] per `sendmmsg` where GSO is missing), and a
//! receiver that takes up to [`BATCH`] per `recvmmsg` (with MSG_TRUNC, so `--skip-rx-copy`
//! copies only each datagram's header). Same datagrams, counters and end handling as `udp.rs`.

use std::io;
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::udp::{Refusals, is_receive_retry, lock, receiver_done, signal_end};
use super::wire::{Datagram, DatagramFormat};
use super::{POLL, Worker, is_retry};
use crate::sys::{self, recv_batch, send_batch, set_udp_segment};
use crate::util::wall_clock;

/// Datagrams per system call.
pub(super) const BATCH: usize = sys::BATCH;
/// Bytes kept of each datagram when the payload is not copied out: enough for any header.
const HEADER_SLOT: usize = 64;

/// Whether a sending stream takes the batched path: unpaced, in perfpeer's own format, on a
/// system with batched calls.
pub(super) fn sends(w: &Worker) -> bool {
    sys::BATCHED_UDP && w.rate.is_none() && w.format == DatagramFormat::Perfpeer
}

/// Whether a receiving stream takes the batched path: perfpeer's own format, on a system with
/// batched calls.
pub(super) fn receives(w: &Worker) -> bool {
    sys::BATCHED_UDP && w.format == DatagramFormat::Perfpeer
}

/// Most segments in one UDP GSO send (the kernel's limit is 64 on older kernels).
const GSO_SEGMENTS: usize = 64;
/// Largest UDP GSO send.
const GSO_BYTES: usize = 65_000;

/// Unpaced sender: with UDP GSO where the kernel offers it (one trip through the stack for up
/// to 64 datagrams, each with its own header, cut apart by the kernel), else `sendmmsg`.
pub(super) fn send(sock: &UdpSocket, w: &Worker) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let len = w.payload().len();
    let segments = (GSO_BYTES / len).min(GSO_SEGMENTS);
    if segments >= 2 && set_udp_segment(sock, len).is_ok() {
        let sent = send_gso(sock, w, segments);
        // Fins (and a fallback) must leave as plain datagrams.
        let _ = set_udp_segment(sock, 0);
        match sent {
            // A device that cannot take GSO refuses the very first send with EIO.
            Err(e)
                if e.raw_os_error() == Some(libc::EIO)
                    && w.counters.packets.load(Ordering::Relaxed) == 0 => {}
            Err(e) => return Err(e),
            Ok(packets) => {
                signal_end(sock, w, packets);
                return Ok(());
            }
        }
    }
    send_mmsg(sock, w)
}

/// The GSO loop; returns the datagrams sent.
fn send_gso(sock: &UdpSocket, w: &Worker, segments: usize) -> io::Result<u64> {
    let one = w.payload();
    let len = one.len();
    let mut buf: Vec<u8> = one.repeat(segments);
    let epoch = w.control.epoch;
    let (mut seq, mut reserved) = (0u64, 0usize);
    let mut refused = Refusals::default();
    while !w.control.stopping() {
        while reserved < segments && w.control.take_budget(w.len).is_some() {
            reserved += 1;
        }
        if reserved == 0 {
            break;
        }
        let wall = wall_clock();
        let mono = if w.stamp_wall { wall } else { epoch.elapsed() };
        for (i, d) in buf.chunks_mut(len).take(reserved).enumerate() {
            w.format.write_data(d, seq + 1 + i as u64, mono, wall);
        }
        match sock.send(&buf[..reserved * len]) {
            Ok(n) => {
                let sent = n / len;
                reserved -= sent;
                seq += sent as u64;
                w.counters.packets.store(seq, Ordering::Relaxed);
                w.counters.bytes.store(seq * len as u64, Ordering::Relaxed);
            }
            Err(e) if is_retry(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                std::thread::yield_now();
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused.on_refusal()?,
            Err(e) => return Err(e),
        }
    }
    Ok(seq)
}

/// The `sendmmsg` loop (kernels without UDP GSO).
fn send_mmsg(sock: &UdpSocket, w: &Worker) -> io::Result<()> {
    let one = w.payload();
    let len = one.len() as u64;
    let mut bufs: Vec<Vec<u8>> = vec![one; BATCH];
    let epoch = w.control.epoch;
    let (mut seq, mut bytes, mut reserved) = (0u64, 0u64, 0usize);
    let mut refused = Refusals::default();
    while !w.control.stopping() {
        while reserved < BATCH && w.control.take_budget(w.len).is_some() {
            reserved += 1;
        }
        if reserved == 0 {
            break;
        }
        let wall = wall_clock();
        let mono = if w.stamp_wall { wall } else { epoch.elapsed() };
        for (i, b) in bufs[..reserved].iter_mut().enumerate() {
            w.format.write_data(b, seq + 1 + i as u64, mono, wall);
        }
        match send_batch(sock, &bufs[..reserved]) {
            Ok(n) => {
                // Datagrams not taken keep their budget and are re-stamped next time.
                reserved -= n;
                seq += n as u64;
                bytes += n as u64 * len;
                w.counters.packets.store(seq, Ordering::Relaxed);
                w.counters.bytes.store(bytes, Ordering::Relaxed);
            }
            Err(e) if is_retry(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                std::thread::yield_now();
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused.on_refusal()?,
            Err(e) => return Err(e),
        }
    }
    signal_end(sock, w, seq);
    Ok(())
}

/// Receiver: a batch per call, statistics updated under one lock per batch.
pub(super) fn receive(sock: &UdpSocket, w: &Worker) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let slot = if w.skip_rx_copy {
        HEADER_SLOT
    } else {
        w.len.max(HEADER_SLOT).next_multiple_of(64)
    };
    let mut buf = vec![0u8; slot * BATCH];
    let mut lens = [0usize; BATCH];
    let epoch = w.control.epoch;
    let (mut bytes, mut count) = (0u64, 0u64);
    let mut last_arrival = Instant::now();
    loop {
        match recv_batch(sock, &mut buf, slot, &mut lens) {
            Ok(n) => {
                last_arrival = Instant::now();
                let arrived = epoch.elapsed();
                let mut ended = false;
                let mut stats = lock(&w.counters.udp_rx);
                for (i, &len) in lens[..n].iter().enumerate() {
                    let d = &buf[i * slot..i * slot + len.min(slot)];
                    match w.format.classify(d) {
                        Datagram::Data { seq, sent } => {
                            count += 1;
                            stats.on_datagram(
                                seq.unwrap_or(count),
                                sent.unwrap_or(arrived),
                                arrived,
                            );
                            if let (Some(clock), Some(sent)) = (w.one_way, sent) {
                                super::udp::record_one_way(&mut stats, d, sent, clock, w);
                            }
                            bytes += len as u64;
                        }
                        Datagram::End { packets } => {
                            if let Some(p) = packets {
                                stats.on_fin(p);
                            }
                            ended = true;
                        }
                        Datagram::Other => {}
                    }
                }
                drop(stats);
                w.counters.bytes.store(bytes, Ordering::Relaxed);
                w.counters.mark_data(arrived);
                if ended {
                    return Ok(());
                }
            }
            Err(e) if is_receive_retry(&e) => {}
            Err(e) => return Err(e),
        }
        if receiver_done(w, last_arrival) {
            return Ok(());
        }
    }
}
