//! The bare loops the runner measures perfpeer against ("close to the machine"): a TCP sender
//! that sends one 128 KiB buffer with sendfile from a memfd until its time is up and a receiver
//! that reads to EOF, woken for 128 KiB at a time (SO_RCVLOWAT) — the calls perfpeer's lone TCP
//! stream makes; a UDP
//! sender that offers 64 datagrams per call (UDP GSO, as perfpeer's unpaced sender) and a
//! receiver that takes 64 per `recvmmsg`. No pacing, no statistics, no control protocol: what is
//! left of perfpeer's figure against these is its own cost. The runner starts them as
//! `perfpeer-bench probe ROLE PORT [SECS LEN]`; each prints one JSON line at its end.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::sockopt;

/// Datagrams per `recvmmsg`, and at most per GSO send.
const BATCH: usize = 64;
/// Bytes one GSO send may carry (a UDP payload's limit, with room for headers).
const GSO_BYTES: usize = 65_000;

/// Runs `probe ROLE PORT [SECS LEN]` (the arguments after `probe`).
pub fn main(args: &[String]) -> anyhow::Result<()> {
    let arg = |i: usize, what: &str| -> anyhow::Result<u64> {
        args.get(i)
            .with_context(|| format!("probe: missing {what}"))?
            .parse()
            .with_context(|| format!("probe: {what} is not a number"))
    };
    let port = u16::try_from(arg(1, "port")?)?;
    let line = match args.first().map(String::as_str) {
        Some("tcp-server") => tcp_server(port)?,
        Some("tcp-client") => tcp_client(port, arg(2, "seconds")?, arg(3, "length")?)?,
        Some("udp-server") => udp_server(port)?,
        Some("udp-client") => udp_client(port, arg(2, "seconds")?, arg(3, "length")?)?,
        other => bail!("probe: unknown role {other:?}"),
    };
    println!("{line}");
    Ok(())
}

/// What a TCP probe sends and reads at a time.
const TCP_CHUNK: usize = 128 * 1024;

fn tcp_server(port: u16) -> anyhow::Result<String> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let (mut s, _) = listener.accept()?;
    let lowat = libc::c_int::try_from(TCP_CHUNK)?;
    sockopt::set(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, &lowat)
        .context("SO_RCVLOWAT")?;
    let mut buf = vec![0u8; TCP_CHUNK];
    let mut bytes = 0u64;
    let mut first = None;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        bytes += n as u64;
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    Ok(format!(r#"{{"bytes":{bytes},"secs":{secs}}}"#))
}

fn tcp_client(port: u16, secs: u64, len: u64) -> anyhow::Result<String> {
    use std::os::fd::FromRawFd;
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    let len = usize::try_from(len)?;
    // SAFETY: a NUL-terminated name and flags; the result is checked before use.
    let fd = unsafe { libc::memfd_create(c"probe-payload".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        bail!("memfd_create: {}", std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(&vec![0x5au8; len])?;
    let start = Instant::now();
    let until = start + Duration::from_secs(secs);
    let mut bytes = 0u64;
    while Instant::now() < until {
        let mut offset: libc::off_t = 0;
        while usize::try_from(offset)? < len {
            let left = len - usize::try_from(offset)?;
            // SAFETY: both descriptors are open; `offset` is a valid off_t the call advances.
            let n =
                unsafe { libc::sendfile(s.as_raw_fd(), file.as_raw_fd(), &raw mut offset, left) };
            if n <= 0 {
                bail!("sendfile: {}", std::io::Error::last_os_error());
            }
        }
        bytes += len as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    s.shutdown(Shutdown::Write)?;
    let _ = s.read(&mut [0u8; 1]);
    Ok(format!(r#"{{"bytes":{bytes},"secs":{secs}}}"#))
}

/// Receives until three empty datagrams (the client's end) or 3 s without any.
fn udp_server(port: u16) -> anyhow::Result<String> {
    let s = UdpSocket::bind(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    let mut bufs = vec![[0u8; 2048]; BATCH];
    let (mut received, mut ends) = (0u64, 0);
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    while ends == 0 {
        let lens = recv_batch(&s, &mut bufs)?;
        if lens.is_empty() {
            break;
        }
        let now = Instant::now();
        for len in lens {
            if len == 0 {
                ends += 1;
            } else {
                received += 1;
                first.get_or_insert(now);
                last = now;
            }
        }
    }
    let secs = first.map_or(0.0, |f| (last - f).as_secs_f64());
    Ok(format!(r#"{{"received":{received},"secs":{secs}}}"#))
}

/// `recvmmsg` of up to [`BATCH`] datagrams; their lengths (none after the read timeout).
fn recv_batch(s: &UdpSocket, bufs: &mut [[u8; 2048]]) -> anyhow::Result<Vec<usize>> {
    let mut iov: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    // SAFETY: mmsghdr is plain data; zeroed is a valid empty header.
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: every header points at one iovec of a live buffer of its stated length; the
    // kernel writes at most `msgs.len()` headers and that much data into them.
    let n = unsafe {
        libc::recvmmsg(
            s.as_raw_fd(),
            msgs.as_mut_ptr(),
            u32::try_from(msgs.len())?,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            return Ok(Vec::new());
        }
        return Err(e.into());
    }
    Ok(msgs[..usize::try_from(n)?]
        .iter()
        .map(|m| m.msg_len as usize)
        .collect())
}

/// Sends `len`-byte datagrams, up to [`BATCH`] per call with UDP GSO (no more than
/// [`GSO_BYTES`] together), then three empty ones.
fn udp_client(port: u16, secs: u64, len: u64) -> anyhow::Result<String> {
    let s = UdpSocket::bind("127.0.0.1:0")?;
    s.connect(("127.0.0.1", port))?;
    set_udp_segment(&s, libc::c_int::try_from(len)?).context("UDP_SEGMENT")?;
    let len = usize::try_from(len)?;
    let per_send = (GSO_BYTES / len.max(1)).clamp(1, BATCH);
    let buf = vec![0x5au8; len * per_send];
    let until = Instant::now() + Duration::from_secs(secs);
    let mut sent = 0u64;
    while Instant::now() < until {
        match s.send(&buf) {
            Ok(_) => sent += per_send as u64,
            // A full queue: the datagrams were not sent; try again.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // 0 turns segmentation off for the empty end datagrams.
    set_udp_segment(&s, 0)?;
    for _ in 0..3 {
        let _ = s.send(&[]);
    }
    Ok(format!(r#"{{"sent":{sent}}}"#))
}

/// UDP_SEGMENT: the size of each datagram a larger send is cut into (0: none).
fn set_udp_segment(s: &UdpSocket, size: libc::c_int) -> std::io::Result<()> {
    sockopt::set(s.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, &size)
}
