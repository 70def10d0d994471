//! The calls POSIX systems share (Linux and macOS): SO_DEBUG, the open-file limit, the
//! process's CPU times, uname, a filesystem's size and ENOBUFS, each with its `unsafe` block and
//! why it is sound. `linux` and `macos` re-export them beside their own.

use std::ffi::CStr;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::Uname;

/// `-1` from a call becomes the OS error; anything else is the result.
pub(super) fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The size of `T` as a socket option length.
pub(super) fn socklen_of<T>() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<T>()).expect("option values are small")
}

/// SO_DEBUG on a socket (ttcp's `-d`; the kernel wants CAP_NET_ADMIN for it).
pub(crate) fn set_so_debug(sock: &impl AsRawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads one c_int from a live local of the size passed.
    check(unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DEBUG,
            (&one as *const libc::c_int).cast(),
            socklen_of::<libc::c_int>(),
        )
    })
    .map(|_| ())
}

/// Lifts the soft limit on open files to the hard one (at most 65,536).
pub(crate) fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max.min(65_536).max(limit.rlim_cur);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec.clamp(0, 999_999)).unwrap_or(0);
    Duration::new(secs, micros * 1000)
}

/// This process's (user, system) CPU time so far.
pub(crate) fn process_cpu_times() -> Option<(Duration, Duration)> {
    // SAFETY: getrusage fills the zeroed struct we pass; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return None;
        }
        usage
    };
    Some((timeval(usage.ru_utime), timeval(usage.ru_stime)))
}

/// The system's names.
pub(crate) fn uname() -> Option<Uname> {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return None;
        }
        let field = |f: &[libc::c_char]| CStr::from_ptr(f.as_ptr()).to_string_lossy().into_owned();
        Some(Uname {
            sysname: field(&u.sysname),
            nodename: field(&u.nodename),
            release: field(&u.release),
            version: field(&u.version),
            machine: field(&u.machine),
        })
    }
}

/// The size of the filesystem holding `path`, in bytes (statvfs); `None` if it cannot be read.
pub(crate) fn filesystem_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads the NUL-terminated path and fills the zeroed struct we pass.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    // Field widths differ by target (32-bit fsblkcnt_t on some): widen each to u64.
    #[allow(clippy::useless_conversion)]
    let (blocks, frsize) = (u64::from(st.f_blocks), u64::from(st.f_frsize));
    blocks.checked_mul(frsize)
}

/// Whether `e` means the kernel's buffers are full for now (ENOBUFS): a sender tries again.
pub(crate) fn is_no_buffer_space(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOBUFS)
}
