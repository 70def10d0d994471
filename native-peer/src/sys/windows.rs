//! The Windows side of [`crate::sys`]: the calls Windows has a counterpart for (process and
//! host CPU times, memory and disk sizes, a process's start time, TCP_INFO by SIO_TCP_INFO),
//! each with its `unsafe` block and why it is sound; everything else is `fallback`'s answer.

use std::io;
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, STILL_ACTIVE};
use windows_sys::Win32::Networking::WinSock::{
    SIO_TCP_INFO, SOCKET, SOCKET_ERROR, TCP_INFO_v0, WSAENOBUFS, WSAIoctl,
};
use windows_sys::Win32::Storage::FileSystem::GetDiskFreeSpaceExW;
use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, GetProcessTimes, GetSystemTimes, OpenProcess,
    PROCESS_QUERY_LIMITED_INFORMATION,
};

use super::{AsSocket, HostTimes, TcpInfo, Uname};

pub(crate) use super::fallback::{
    BATCHED_UDP, SendSource, bind_device, daemonize, generic_netlink_socket, join_ssm_v6,
    pin_to_cpu, raise_fd_limit, receive_own_groups_only, recv_batch, recv_discard,
    route_netlink_socket, run_as_batch, send_batch, set_max_pacing_rate, set_priority,
    set_recv_low_water, set_so_debug, set_tclass_v6, set_tcp_congestion, set_tcp_mss,
    set_tcp_quickack, set_udp_segment, tcp_congestion, tcp_mss, tighten_timer_slack, unsent_bytes,
    wait_readable,
};

/// A FILETIME as one count of 100 ns units.
fn ticks(t: FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}

fn duration(t: FILETIME) -> Duration {
    let t = ticks(t);
    Duration::new(
        t / 10_000_000,
        u32::try_from(t % 10_000_000).unwrap_or(0) * 100,
    )
}

const ZERO_TIME: FILETIME = FILETIME {
    dwLowDateTime: 0,
    dwHighDateTime: 0,
};

/// (creation, kernel, user) times of the process behind `handle`.
fn times_of(
    handle: windows_sys::Win32::Foundation::HANDLE,
) -> Option<(FILETIME, FILETIME, FILETIME)> {
    let (mut created, mut exited, mut kernel, mut user) =
        (ZERO_TIME, ZERO_TIME, ZERO_TIME, ZERO_TIME);
    // SAFETY: GetProcessTimes writes four FILETIMEs through the pointers to our locals; the
    // handle is the caller's, open with query rights.
    let ok = unsafe { GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user) };
    (ok != 0).then_some((created, kernel, user))
}

/// This process's (user, system) CPU time so far.
pub(crate) fn process_cpu_times() -> Option<(Duration, Duration)> {
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
    let me = unsafe { GetCurrentProcess() };
    let (_, kernel, user) = times_of(me)?;
    Some((duration(user), duration(kernel)))
}

/// The host's CPU times (GetSystemTimes, 100 ns units summed over the CPUs).
pub(crate) fn host_cpu_times() -> Option<HostTimes> {
    let (mut idle, mut kernel, mut user) = (ZERO_TIME, ZERO_TIME, ZERO_TIME);
    // SAFETY: three FILETIMEs written through pointers to our locals.
    if unsafe { GetSystemTimes(&mut idle, &mut kernel, &mut user) } == 0 {
        return None;
    }
    // Kernel time includes the idle time.
    let (idle, kernel, user) = (ticks(idle), ticks(kernel), ticks(user));
    Some(HostTimes {
        user,
        system: kernel.saturating_sub(idle),
        total: kernel.saturating_add(user),
        cpus: std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(1),
    })
}

/// The machine's physical memory in bytes.
pub(crate) fn total_memory() -> Option<u64> {
    let mut status = MEMORYSTATUSEX {
        dwLength: u32::try_from(std::mem::size_of::<MEMORYSTATUSEX>()).ok()?,
        dwMemoryLoad: 0,
        ullTotalPhys: 0,
        ullAvailPhys: 0,
        ullTotalPageFile: 0,
        ullAvailPageFile: 0,
        ullTotalVirtual: 0,
        ullAvailVirtual: 0,
        ullAvailExtendedVirtual: 0,
    };
    // SAFETY: the struct is ours, its dwLength set as the call requires.
    let ok = unsafe { GlobalMemoryStatusEx(&mut status) };
    (ok != 0 && status.ullTotalPhys > 0).then_some(status.ullTotalPhys)
}

/// No boot id here: a process is named by its pid and creation time, which a reboot does not
/// repeat.
pub(crate) fn boot_id() -> Option<String> {
    None
}

/// When process `pid` was created (100 ns units since 1601), as text; `None` if no such
/// process is running.
pub(crate) fn process_start_time(pid: u32) -> Option<String> {
    // SAFETY: OpenProcess returns a handle we close below, or null.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: a live handle with query rights; one u32 written to our local.
    let running = unsafe { GetExitCodeProcess(handle, &mut code) } != 0
        && i64::from(code) == i64::from(STILL_ACTIVE);
    let created = times_of(handle).map(|(created, _, _)| ticks(created));
    // SAFETY: the handle came from OpenProcess and is closed once.
    unsafe { CloseHandle(handle) };
    running.then_some(created?.to_string())
}

/// The system's names, as far as std and the environment know them.
pub(crate) fn uname() -> Option<Uname> {
    Some(Uname {
        sysname: "Windows".to_string(),
        nodename: std::env::var("COMPUTERNAME").unwrap_or_default(),
        machine: std::env::consts::ARCH.to_string(),
        ..Uname::default()
    })
}

/// The size of the volume holding `path`, in bytes.
pub(crate) fn filesystem_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::windows::ffi::OsStrExt as _;
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    let mut total = 0u64;
    // SAFETY: a NUL-terminated wide path; one u64 written to our local, the others not asked.
    let ok = unsafe {
        GetDiskFreeSpaceExW(
            wide.as_ptr(),
            std::ptr::null_mut(),
            &mut total,
            std::ptr::null_mut(),
        )
    };
    (ok != 0 && total > 0).then_some(total)
}

/// Whether `e` means the system's buffers are full for now (WSAENOBUFS): a sender tries again.
pub(crate) fn is_no_buffer_space(e: &io::Error) -> bool {
    e.raw_os_error() == Some(WSAENOBUFS)
}

/// The TCP figures Windows 10 1703+ gives by SIO_TCP_INFO (version 0); `None` where the call is
/// missing (older Windows, wine).
pub(crate) fn tcp_info<S: AsSocket>(sock: &S) -> Option<TcpInfo> {
    let version = 0u32;
    // SAFETY: TCP_INFO_v0 is plain old data (integers and a bool the call sets to 0 or 1).
    let mut info: TCP_INFO_v0 = unsafe { std::mem::zeroed() };
    let mut returned = 0u32;
    // SAFETY: input and output buffers are our locals with their sizes; no overlapped I/O.
    let rc = unsafe {
        WSAIoctl(
            SOCKET::try_from(sock.as_raw_socket()).ok()?,
            SIO_TCP_INFO,
            (&version as *const u32).cast(),
            4,
            (&mut info as *mut TCP_INFO_v0).cast(),
            u32::try_from(std::mem::size_of::<TCP_INFO_v0>()).ok()?,
            &mut returned,
            std::ptr::null_mut(),
            None,
        )
    };
    if rc == SOCKET_ERROR
        || usize::try_from(returned).unwrap_or(0) < std::mem::size_of::<TCP_INFO_v0>()
    {
        return None;
    }
    let mss = info.Mss.max(1);
    Some(TcpInfo {
        // Windows counts retransmitted bytes; in segments as Linux counts them.
        total_retrans: info.BytesRetrans.div_ceil(mss),
        snd_cwnd: info.Cwnd / mss,
        snd_mss: info.Mss,
        rtt: info.RttUs,
        // Not given: Windows keeps the minimum RTT, not the variance.
        rttvar: 0,
        pmtu: 0,
        snd_wnd: Some(info.SndWnd),
    })
}
