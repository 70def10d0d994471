//! Child processes of the runner: started with stdout to a file, ended with a deadline, and
//! reaped with `wait4` so each one's CPU time (user + system, all threads) is known exactly.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a process could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Its output file could not be created or read.
    #[error("output file {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// A running child.
pub struct Proc {
    pid: libc::pid_t,
    out: PathBuf,
    _child: std::process::Child,
}

/// How a child ended.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// User + system CPU seconds.
    pub cpu_s: f64,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Exit status 0.
    pub success: bool,
}

/// Starts `argv` with stdout to `out` and stderr discarded.
pub fn spawn(argv: &[String], out: PathBuf) -> Result<Proc, ProcError> {
    let file = File::create(&out).map_err(|source| ProcError::Output {
        path: out.clone(),
        source,
    })?;
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(file)
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|source| ProcError::Spawn {
            program: argv[0].clone(),
            source,
        })?;
    Ok(Proc {
        pid: libc::pid_t::try_from(child.id()).expect("Linux pids fit pid_t"),
        out,
        _child: child,
    })
}

fn reap(pid: libc::pid_t, block: bool) -> Option<(i32, f64)> {
    let mut status = 0;
    // SAFETY: rusage is plain data the kernel fills in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: waiting for our own child with valid out-pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
    if rc != pid {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((status, tv(ru.ru_utime) + tv(ru.ru_stime)))
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: signalling our own, not yet reaped child.
    unsafe { libc::kill(pid, sig) };
}

impl Proc {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        u32::try_from(self.pid).unwrap_or(0)
    }

    /// Waits until it exits; past `deadline` it is killed.
    pub fn wait(self, limit: Duration) -> Result<Ended, ProcError> {
        let deadline = Instant::now() + limit;
        let mut timed_out = false;
        let (status, cpu_s) = loop {
            if let Some(r) = reap(self.pid, false) {
                break r;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                signal(self.pid, libc::SIGKILL);
                break reap(self.pid, true).unwrap_or((-1, f64::NAN));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let stdout = std::fs::read_to_string(&self.out).map_err(|source| ProcError::Output {
            path: self.out.clone(),
            source,
        })?;
        Ok(Ended {
            stdout,
            cpu_s,
            timed_out,
            success: !timed_out && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        })
    }

    /// Asks it to stop (SIGINT), then waits up to 2 s before killing it.
    pub fn stop(self) -> Result<Ended, ProcError> {
        if reap_peek(self.pid) {
            signal(self.pid, libc::SIGINT);
        }
        self.wait(Duration::from_secs(2))
    }
}

/// Whether the child still runs (without reaping it).
fn reap_peek(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Waits (at most `limit`) until something listens on TCP `port`, read from the kernel's socket
/// tables rather than by connecting (a probe connection would be `iperf3 -s -1`'s one client).
/// Whether it does; a server started on a busy machine may take more than a fixed pause.
pub fn wait_listening(port: u16, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if tcp_listening(port) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `/proc/net/tcp` or `tcp6` has a socket in LISTEN (state 0A) on `port`.
fn tcp_listening(port: u16) -> bool {
    let local = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).is_ok_and(|text| {
            text.lines().skip(1).any(|line| {
                let mut fields = line.split_whitespace();
                let addr = fields.nth(1).unwrap_or("");
                let state = fields.nth(1).unwrap_or("");
                addr.ends_with(&local) && state == "0A"
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_port_is_seen_and_a_closed_one_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(wait_listening(port, Duration::from_secs(1)));
        drop(listener);
        assert!(!wait_listening(port, Duration::from_millis(100)));
    }
}
