//! UDP stream workers: a paced sender that stamps each datagram with a sequence number and its
//! send time and ends with fin datagrams, and a receiver that feeds [`UdpRxStats`].

use std::io;
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::pacing::{Pacer, tighten_timer_slack, wait_until};
use super::udp_stats::UdpRxStats;
use super::wire::{DataHeader, UdpControl};
use super::{POLL, Worker, is_retry, payload};

/// Fin datagrams sent at the end (one may be lost; the receiver needs only one).
const FIN_COPIES: usize = 3;
/// A draining receiver that hears nothing for this long assumes the fins were lost.
const DRAIN_IDLE: Duration = Duration::from_millis(300);
/// A draining receiver gives up after this long even if datagrams keep coming.
const DRAIN_LIMIT: Duration = Duration::from_secs(3);

pub(super) fn send(sock: &UdpSocket, w: &Worker) -> io::Result<()> {
    sock.set_write_timeout(Some(POLL))?;
    let mut buf = payload(w.len);
    let mut pacer = w.rate.map(|r| Pacer::new(r, Instant::now()));
    if pacer.is_some() {
        tighten_timer_slack();
    }
    let epoch = w.control.epoch;
    let mut seq = 0u64;
    let mut bytes = 0u64;
    while !w.control.stopping() {
        if w.control.take_budget(w.len).is_none() {
            break;
        }
        if let Some(p) = &pacer
            && !wait_until(p.due(), || w.control.stopping())
        {
            break;
        }
        DataHeader {
            seq: seq + 1,
            sent: epoch.elapsed(),
        }
        .write(&mut buf);
        match sock.send(&buf) {
            Ok(n) => {
                seq += 1;
                bytes += n as u64;
                w.counters.packets.store(seq, Ordering::Relaxed);
                w.counters.bytes.store(bytes, Ordering::Relaxed);
            }
            // A full queue (ENOBUFS) or an ICMP error for an earlier datagram: this one was not
            // sent, so its sequence number is reused.
            Err(e) if is_retry(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                std::thread::yield_now();
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        }
        if let Some(p) = &mut pacer {
            p.on_sent(w.len as u64, Instant::now());
        }
    }
    let fin = UdpControl::Fin {
        stream_id: w.id,
        packets: seq,
    }
    .encode();
    for _ in 0..FIN_COPIES {
        let _ = sock.send(&fin);
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

pub(super) fn receive(sock: &UdpSocket, w: &Worker) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 65_536];
    let epoch = w.control.epoch;
    let mut bytes = 0u64;
    let mut last_arrival = Instant::now();
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if UdpControl::is_control(&buf[..n]) => {
                if let Ok(UdpControl::Fin { packets, .. }) = UdpControl::decode(&buf[..n]) {
                    lock(&w.counters.udp_rx).on_fin(packets);
                    return Ok(());
                }
                // A repeated hello or a stray control datagram: not data.
            }
            Ok(n) => {
                let Ok(header) = DataHeader::read(&buf[..n]) else {
                    continue;
                };
                last_arrival = Instant::now();
                lock(&w.counters.udp_rx).on_datagram(header.seq, header.sent, epoch.elapsed());
                bytes += n as u64;
                w.counters.bytes.store(bytes, Ordering::Relaxed);
            }
            Err(e) if is_retry(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        if w.control.aborted() {
            return Ok(());
        }
        if let Some(draining) = w.control.draining_for()
            && (last_arrival.elapsed() > DRAIN_IDLE || draining > DRAIN_LIMIT)
        {
            return Ok(());
        }
    }
}

fn lock(m: &std::sync::Mutex<UdpRxStats>) -> std::sync::MutexGuard<'_, UdpRxStats> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
