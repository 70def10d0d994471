//! The one `setsockopt` the runner's own sockets use (the capture's and the probe's): a value of
//! any fixed-size type, its size taken from the type, the error from errno.

use std::io;
use std::os::fd::RawFd;

/// Sets option `name` at `level` on `fd` to `value`.
pub fn set<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    let len = libc::socklen_t::try_from(std::mem::size_of::<T>()).map_err(io::Error::other)?;
    // SAFETY: `value` is a live T and `len` its size; the kernel reads at most `len` bytes.
    let rc = unsafe { libc::setsockopt(fd, level, name, (value as *const T).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
