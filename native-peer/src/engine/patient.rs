//! Blocking reads and writes of a whole buffer on a socket with a short timeout (the engine's
//! [`super::POLL`]), riding out each timeout until the caller says to give up: the one loop
//! behind request/response transactions (`rr`) and netperf's data and control exchanges.
//! What to count and when to give up are the caller's; the loop only moves bytes.

use std::io::{self, Read, Write};

use super::is_retry;

/// Why the loop asks whether to give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pause {
    /// The socket timed out with nothing moved.
    TimedOut,
    /// A call moved part of the buffer (a far end may trickle a byte at a time, so that no
    /// call ever times out).
    Partial,
}

/// How much a read takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// The whole buffer.
    All,
    /// Whatever one successful call brings.
    Some,
}

/// How a patient read or write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moved {
    /// What was wanted.
    All,
    /// The far end closed the stream after this many bytes of the buffer (reads only).
    Closed(usize),
    /// The caller gave up after this many bytes.
    GaveUp(usize),
}

/// Writes all of `buf`; `on_moved` is told each call's bytes, `give_up` is asked at each
/// timeout and after each partial write. A write of nothing is the far end gone (`Closed`).
pub(crate) fn write_all(
    mut sock: impl Write,
    buf: &[u8],
    on_moved: impl FnMut(usize),
    give_up: impl FnMut(Pause) -> bool,
) -> io::Result<Moved> {
    patiently(
        buf.len(),
        Want::All,
        |done| sock.write(&buf[done..]),
        on_moved,
        give_up,
    )
}

/// Reads into `buf` as `want` says; `on_moved` is told each call's bytes, `give_up` is asked
/// at each timeout and after each partial read.
pub(crate) fn read(
    mut sock: impl Read,
    buf: &mut [u8],
    want: Want,
    on_moved: impl FnMut(usize),
    give_up: impl FnMut(Pause) -> bool,
) -> io::Result<Moved> {
    let len = buf.len();
    patiently(
        len,
        want,
        |done| sock.read(&mut buf[done..]),
        on_moved,
        give_up,
    )
}

/// The loop: `call(done)` moves bytes from offset `done` of a buffer of `len`.
fn patiently(
    len: usize,
    want: Want,
    mut call: impl FnMut(usize) -> io::Result<usize>,
    mut on_moved: impl FnMut(usize),
    mut give_up: impl FnMut(Pause) -> bool,
) -> io::Result<Moved> {
    let mut done = 0;
    while done < len {
        match call(done) {
            Ok(0) => return Ok(Moved::Closed(done)),
            Ok(n) => {
                on_moved(n);
                done += n;
                if want == Want::Some {
                    break;
                }
                if done < len && give_up(Pause::Partial) {
                    return Ok(Moved::GaveUp(done));
                }
            }
            Err(e) if is_retry(&e) => {
                if give_up(Pause::TimedOut) {
                    return Ok(Moved::GaveUp(done));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Moved::All)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A socket that answers each call from a script: bytes moved, or an error kind.
    struct Scripted(VecDeque<Result<usize, io::ErrorKind>>);

    impl Scripted {
        fn next(&mut self, len: usize) -> io::Result<usize> {
            match self.0.pop_front() {
                Some(Ok(n)) => Ok(n.min(len)),
                Some(Err(kind)) => Err(io::Error::from(kind)),
                None => Err(io::Error::from(io::ErrorKind::WouldBlock)),
            }
        }
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.next(buf.len())
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.next(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn script(calls: &[Result<usize, io::ErrorKind>]) -> Scripted {
        Scripted(calls.iter().copied().collect())
    }

    use io::ErrorKind::{ConnectionReset, TimedOut, WouldBlock};

    #[test]
    fn timeouts_are_ridden_out_until_the_caller_gives_up() {
        let mut asked = Vec::new();
        let mut calls = Vec::new();
        let moved = write_all(
            script(&[Ok(3), Err(WouldBlock), Err(TimedOut), Ok(5)]),
            &[0; 8],
            |n| calls.push(n),
            |p| {
                asked.push(p);
                false
            },
        )
        .unwrap();
        assert_eq!(moved, Moved::All);
        assert_eq!(calls, [3, 5]);
        assert_eq!(asked, [Pause::Partial, Pause::TimedOut, Pause::TimedOut]);

        let mut timeouts = 0;
        let moved = read(
            script(&[Ok(2)]),
            &mut [0; 8],
            Want::All,
            |_| {},
            |p| {
                timeouts += usize::from(p == Pause::TimedOut);
                timeouts == 3
            },
        )
        .unwrap();
        assert_eq!(moved, Moved::GaveUp(2));
    }

    #[test]
    fn a_trickle_is_asked_about_at_each_byte() {
        let moved = write_all(
            script(&[Ok(1); 10]),
            &[0; 10],
            |_| {},
            |p| p == Pause::Partial,
        )
        .unwrap();
        assert_eq!(moved, Moved::GaveUp(1));
    }

    #[test]
    fn a_read_ends_at_the_close_with_what_came_and_stops_at_errors() {
        let mut buf = [0; 8];
        assert_eq!(
            read(
                script(&[Ok(3), Ok(0)]),
                &mut buf,
                Want::All,
                |_| {},
                |_| false
            )
            .unwrap(),
            Moved::Closed(3)
        );
        assert_eq!(
            read(script(&[Ok(0)]), &mut buf, Want::All, |_| {}, |_| false).unwrap(),
            Moved::Closed(0)
        );
        assert_eq!(
            read(
                script(&[Ok(3), Ok(4)]),
                &mut buf,
                Want::Some,
                |_| {},
                |_| false
            )
            .unwrap(),
            Moved::All,
            "one call is enough"
        );
        assert_eq!(
            write_all(script(&[Ok(2), Ok(0)]), &buf, |_| {}, |_| false).unwrap(),
            Moved::Closed(2),
            "a write of nothing ends the loop instead of spinning"
        );
        let e = read(
            script(&[Err(ConnectionReset)]),
            &mut buf,
            Want::All,
            |_| {},
            |_| false,
        );
        assert_eq!(e.unwrap_err().kind(), ConnectionReset);
    }
}
