//! Every call into the operating system that std and socket2 do not offer, behind one seam:
//! nothing else in perfpeer names `libc`. [`linux`] implements each call; on other systems
//! `fallback` answers that a call is unavailable (`Unsupported`, `None`, or nothing done), so
//! callers keep a portable path: plain sends where batching is missing, no retransmit figures
//! where TCP_INFO is missing. (`fallback` is also built in this crate's tests on Linux, so it
//! cannot rot unseen.)
//!
//! [`unix`] holds the calls Linux and macOS share; [`macos`] takes those and `fallback`'s answer
//! for the rest. [`windows`] implements what Windows has a counterpart for (CPU times of the process and the
//! host, memory and disk sizes, a process's start time) and takes `fallback`'s answer for the
//! rest.
//!
//! The calls: socket options (pacing rate, TCP_INFO, UDP GSO segment size, raw get/set for
//! DCCP's options), batched UDP (`sendmmsg`, `recvmmsg` with MSG_TRUNC), a TCP read that
//! discards (MSG_TRUNC), a TCP socket's unsent bytes (TIOCOUTQ), the process's CPU times
//! (getrusage) and the host's (/proc/stat), the memory size, this boot's id and a process's start
//! time (who owns a running test), uname, a filesystem's size (statvfs), the open-file limit,
//! timer slack, the batch scheduling class (SCHED_BATCH), going into the background (daemon),
//! SO_DEBUG, TCP_QUICKACK, a multicast socket that takes its own groups only, and which I/O
//! errors mean "no buffer space".

#[cfg(any(not(target_os = "linux"), test))]
mod fallback;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub(crate) use fallback::*;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;
#[cfg(target_os = "macos")]
pub(crate) use macos::*;
#[cfg(windows)]
pub(crate) use windows::*;

/// What a socket is to the system's calls: a file descriptor, or a Windows SOCKET.
#[cfg(unix)]
pub(crate) use std::os::fd::AsRawFd as AsSocket;
#[cfg(windows)]
pub(crate) use std::os::windows::io::AsRawSocket as AsSocket;

/// Datagrams per batched UDP call at most.
pub(crate) const BATCH: usize = 32;

/// The TCP_INFO fields perfpeer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TcpInfo {
    /// Retransmitted segments since the connection began.
    pub total_retrans: u32,
    /// Congestion window in segments.
    pub snd_cwnd: u32,
    /// Sender MSS.
    pub snd_mss: u32,
    /// Smoothed RTT, µs.
    pub rtt: u32,
    /// RTT variance, µs.
    pub rttvar: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// The peer's advertised receive window, bytes; `None` from a kernel older than 6.2,
    /// whose TCP_INFO ends before it.
    pub snd_wnd: Option<u32>,
}

/// The system's names, as `uname` gives them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Uname {
    /// `Linux`.
    pub sysname: String,
    /// The host name.
    pub nodename: String,
    /// `6.1.0-18-amd64`.
    pub release: String,
    /// `#1 SMP PREEMPT_DYNAMIC …`.
    pub version: String,
    /// `x86_64`.
    pub machine: String,
}

/// Host-wide CPU time counters since boot, in the system's own unit (clock ticks on Linux,
/// 100 ns on Windows): only their ratios are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HostTimes {
    /// Time in user mode (with nice).
    pub user: u64,
    /// Time in the kernel (with interrupts), idle time not included.
    pub system: u64,
    /// Everything, idle included.
    pub total: u64,
    /// Logical CPUs.
    pub cpus: u32,
}
