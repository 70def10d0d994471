//! Arrival timestamps of UDP datagrams on loopback, taken by the kernel for an AF_PACKET socket
//! bound to `lo`: the same instrument for every tool, so pacing is judged alike. Needs root (or
//! CAP_NET_RAW); without it the runner says so and leaves the pacing columns out.
//!
//! The instrument must not take the CPU the tools it watches need (a 1 Gbit/s paced stream is
//! 89 000 datagrams a second, and this machine has two cores), so it costs no system call and no
//! wake-up per packet: a classic BPF filter in the kernel keeps only arriving UDP datagrams to the
//! port, cut to their headers, and the kernel files them, stamped, into a TPACKET_V3 ring shared
//! with this process, which wakes once per filled or timed-out block (libpcap's method).

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_ptr_alignment,
    reason = "FFI with AF_PACKET: libc gives its constants as c_int where the kernel's structs take u16 and sizes as usize where it takes socklen_t; each value is a small constant; ring headers sit at offsets the kernel aligns (TPACKET_ALIGNMENT)"
)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::bail;

use crate::sockopt;

/// Bytes kept of each datagram: its IPv4 (up to 60) and UDP (8) headers.
const SNAP_LEN: u32 = 68;
/// Ring geometry: 32 blocks of 1 MiB, each holding thousands of cut packets; a block is handed
/// over when full or [`BLOCK_TIMEOUT_MS`] after its first packet.
const BLOCK_SIZE: u32 = 1 << 20;
const BLOCK_COUNT: u32 = 32;
/// A frame: the packet header, the address, the cut packet, aligned (the kernel checks only that
/// frames tile the blocks; V3 packs packets by their real length).
const FRAME_SIZE: u32 = 256;
const BLOCK_TIMEOUT_MS: u32 = 10;
/// `TPACKET_V3` of `enum tpacket_versions`.
const TPACKET_V3: libc::c_int = 2;

/// A running capture of IPv4 UDP datagrams to one destination port on `lo`.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<io::Result<Arrivals>>,
}

/// What a capture saw.
struct Arrivals {
    datagrams: Vec<(u64, usize)>,
    /// Packets the filter kept (filed in the ring or dropped for want of room).
    kept: u32,
    /// Packets the filter kept but the ring had no room for.
    dropped: u32,
}

struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// The shared ring, unmapped on drop.
struct Ring {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by one thread at a time (moved into the capture thread).
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `open_lo`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The kernel-side filter: unfragmented IPv4 UDP to `port`, kept to [`SNAP_LEN`] bytes;
/// everything else dropped. (Bound to ETH_P_IP, not ETH_P_ALL, the socket sees each loopback
/// packet once, arriving, not also leaving.)
fn filter(port: u16) -> [libc::sock_filter; 9] {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    use libc::{
        BPF_ABS, BPF_B, BPF_H, BPF_IND, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_LDX,
        BPF_MSH, BPF_RET,
    };
    // A jump skips its offset in instructions past the next one: to 7 keeps, to 8 drops.
    [
        op(BPF_LD | BPF_B | BPF_ABS, 0, 0, 9),
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 6, libc::IPPROTO_UDP as u32),
        op(BPF_LD | BPF_H | BPF_ABS, 0, 0, 6),
        op(BPF_JMP | BPF_JSET | BPF_K, 4, 0, 0x1fff),
        op(BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0),
        op(BPF_LD | BPF_H | BPF_IND, 0, 0, 2),
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, u32::from(port)),
        op(BPF_RET | BPF_K, 0, 0, SNAP_LEN),
        op(BPF_RET | BPF_K, 0, 0, 0),
    ]
}

fn open_lo(port: u16) -> io::Result<(Fd, Ring)> {
    let proto = libc::c_int::from((libc::ETH_P_IP as u16).to_be());
    // SAFETY: plain socket calls with stack-allocated, correctly sized arguments; the mapping's
    // length is the ring's, as the kernel made it.
    unsafe {
        let fd = Fd(check(libc::socket(
            libc::AF_PACKET,
            libc::SOCK_DGRAM,
            proto,
        ))?);
        // The filter goes on before the bind, so nothing unfiltered is queued in between.
        let mut program = filter(port);
        let fprog = libc::sock_fprog {
            len: program.len() as u16,
            filter: program.as_mut_ptr(),
        };
        sockopt::set(fd.0, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)?;
        sockopt::set(fd.0, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V3)?;
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_SIZE,
            tp_block_nr: BLOCK_COUNT,
            tp_frame_size: FRAME_SIZE,
            tp_frame_nr: BLOCK_SIZE / FRAME_SIZE * BLOCK_COUNT,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        sockopt::set(fd.0, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let len = (BLOCK_SIZE * BLOCK_COUNT) as usize;
        let base = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.0,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring = Ring {
            base: base.cast(),
            len,
        };
        let ifindex = libc::if_nametoindex(c"lo".as_ptr());
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto as u16;
        sll.sll_ifindex = ifindex as i32;
        check(libc::bind(
            fd.0,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ))?;
        Ok((fd, ring))
    }
}

/// The UDP payload length of an IPv4 packet to `port`, or `None` for anything else.
pub fn udp_payload_to(packet: &[u8], port: u16) -> Option<usize> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != libc::IPPROTO_UDP as u8 {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let udp = packet.get(ihl..ihl + 8)?;
    if u16::from_be_bytes([udp[2], udp[3]]) != port {
        return None;
    }
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    udp_len.checked_sub(8)
}

/// Reads every block the kernel has handed over, in ring order from `next`, and gives each back.
fn drain(ring: &Ring, next: &mut u32, port: u16, out: &mut Vec<(u64, usize)>) {
    loop {
        // SAFETY: block `next` lies inside the mapping; its descriptor is the kernel's layout.
        // The status is read volatile (the kernel writes it) and, once it says the block is
        // ours, an acquire fence orders the reads of its packets after it.
        let block = unsafe { ring.base.add((*next * BLOCK_SIZE) as usize) };
        let desc = block.cast::<libc::tpacket_block_desc>();
        let status = unsafe { std::ptr::addr_of!((*desc).hdr.bh1.block_status).read_volatile() };
        if status & libc::TP_STATUS_USER == 0 {
            return;
        }
        fence(Ordering::Acquire);
        let (count, first) = unsafe {
            let h = &(*desc).hdr.bh1;
            (h.num_pkts, h.offset_to_first_pkt)
        };
        let mut at = first as usize;
        for _ in 0..count {
            // SAFETY: the kernel chains a block's packets by `tp_next_offset` inside the block.
            let hdr = unsafe { &*block.add(at).cast::<libc::tpacket3_hdr>() };
            let data = unsafe {
                std::slice::from_raw_parts(
                    block.add(at + usize::from(hdr.tp_net)),
                    hdr.tp_snaplen as usize,
                )
            };
            if let Some(payload) = udp_payload_to(data, port) {
                out.push((
                    u64::from(hdr.tp_sec) * 1_000_000_000 + u64::from(hdr.tp_nsec),
                    payload,
                ));
            }
            at += hdr.tp_next_offset as usize;
        }
        fence(Ordering::Release);
        // SAFETY: as above; handing the block back is writing TP_STATUS_KERNEL to its status.
        unsafe {
            std::ptr::addr_of_mut!((*desc).hdr.bh1.block_status)
                .write_volatile(libc::TP_STATUS_KERNEL);
        }
        *next = (*next + 1) % BLOCK_COUNT;
    }
}

fn run(fd: &Fd, ring: &Ring, port: u16, stop: &AtomicBool) -> io::Result<Arrivals> {
    let mut datagrams = Vec::with_capacity(1 << 20);
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut pfd = libc::pollfd {
            fd: fd.0,
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // SAFETY: one pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 100) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        drain(ring, &mut next, port, &mut datagrams);
    }
    // The block being filled is handed over at its timeout: wait for it, then take the rest.
    std::thread::sleep(Duration::from_millis(u64::from(BLOCK_TIMEOUT_MS) * 3));
    drain(ring, &mut next, port, &mut datagrams);
    let mut stats = libc::tpacket_stats_v3 {
        tp_packets: 0,
        tp_drops: 0,
        tp_freeze_q_cnt: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as u32;
    // SAFETY: PACKET_STATISTICS fills a tpacket_stats_v3 of the length given.
    check(unsafe {
        libc::getsockopt(
            fd.0,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut stats as *mut libc::tpacket_stats_v3).cast(),
            &mut len,
        )
    })?;
    Ok(Arrivals {
        datagrams,
        kept: stats.tp_packets,
        dropped: stats.tp_drops,
    })
}

impl Capture {
    /// Starts capturing datagrams to `port` on loopback.
    pub fn start(port: u16) -> io::Result<Capture> {
        let (fd, ring) = open_lo(port)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || run(&fd, &ring, port, &flag));
        Ok(Capture { stop, thread })
    }

    /// Stops and returns (arrival ns, payload bytes) in arrival order; an error if the ring
    /// overflowed (the arrivals would have holes, and the figures from them would be wrong).
    pub fn finish(self) -> anyhow::Result<Vec<(u64, usize)>> {
        let seen = self.stop_and_collect()?;
        if seen.dropped > 0 {
            bail!(
                "the capture on lo lost {} of {} packets (its ring was full)",
                seen.dropped,
                seen.kept
            );
        }
        Ok(seen.datagrams)
    }

    fn stop_and_collect(self) -> io::Result<Arrivals> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| io::Error::other("capture thread panicked"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_payload_length_is_read_from_ipv4_and_udp_headers() {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = 17;
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..26].copy_from_slice(&1408u16.to_be_bytes());
        assert_eq!(udp_payload_to(&p, 5201), Some(1400));
        assert_eq!(udp_payload_to(&p, 5202), None, "other port");
        p[9] = 6;
        assert_eq!(udp_payload_to(&p, 5201), None, "TCP");
        assert_eq!(udp_payload_to(&p[..10], 5201), None, "runt");
    }

    #[test]
    fn the_capture_sees_each_datagram_to_its_port_once_stamped_in_order() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: not root, no AF_PACKET capture");
            return;
        }
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = rx.local_addr().unwrap().port();
        let capture = Capture::start(port).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        for i in 0..500usize {
            tx.send_to(&vec![7u8; 100 + i % 3], rx.local_addr().unwrap())
                .unwrap();
            tx.send_to(&[1u8; 1400], other.local_addr().unwrap())
                .unwrap();
        }
        // A TCP packet to the same port number is not a datagram.
        let _ = std::net::TcpStream::connect(("127.0.0.1", port));
        let seen = capture.stop_and_collect().unwrap();
        assert_eq!(seen.dropped, 0);
        assert_eq!(
            seen.kept, 500,
            "the kernel's filter keeps only these datagrams"
        );
        let seen = seen.datagrams;
        assert_eq!(seen.len(), 500, "each datagram once");
        for (i, (at, len)) in seen.iter().enumerate() {
            assert_eq!(*len, 100 + i % 3, "payload length of datagram {i}");
            assert!(*at >= before, "stamped by the wall clock");
        }
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "in order");
    }
}
