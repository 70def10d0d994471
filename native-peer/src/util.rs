//! Small helpers every layer uses, written once: a mutex lock that survives a panicked holder,
//! the wall clock in Unix milliseconds, 128-bit random ids in hex, an OS error in words, and
//! tasks spawned with their type erased.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A task's future with its type erased.
pub(crate) type BoxedTask<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// `future`, boxed as a [`BoxedTask`]: what every task is spawned as (`tokio::spawn`, a
/// `TaskTracker`'s spawn). tokio's code for a task (polling, waking, joining, about 1.5 KB of
/// MIPS code) is then in the binary once per output type, not once per spawn site: 114 KB of
/// a router's binary before. One allocation per task, one indirect call per poll.
pub(crate) fn boxed<T>(future: impl Future<Output = T> + Send + 'static) -> BoxedTask<T> {
    Box::pin(future)
}

/// `tokio::spawn` of `future` as a [`BoxedTask`].
pub(crate) fn spawn<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    tokio::spawn(boxed(future))
}

/// `tokio::task::spawn_blocking` of `work`, its type erased as [`spawn`]'s futures are, and its
/// output's too: tokio's code for a blocking task is then in the binary once, not once per
/// output type (about 900 B of MIPS code each). The task starts at once, awaited or not.
pub(crate) fn spawn_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> impl Future<Output = Result<T, tokio::task::JoinError>> + Send {
    let work: Box<dyn FnOnce() -> Box<dyn Any + Send> + Send> =
        Box::new(move || Box::new(work()) as Box<dyn Any + Send>);
    let task = tokio::task::spawn_blocking(work);
    async move {
        task.await.map(|output| {
            *output
                .downcast::<T>()
                .expect("a task's output is of its own type")
        })
    }
}

/// [`spawn`] with its output's type erased too, as [`spawn_blocking`]'s: tokio's task code is
/// then in the binary once for every such task, whatever it returns.
pub(crate) fn spawn_erased<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> impl Future<Output = Result<T, tokio::task::JoinError>> + Send {
    let task = spawn(async move { Box::new(future.await) as Box<dyn Any + Send> });
    async move {
        task.await.map(|output| {
            *output
                .downcast::<T>()
                .expect("a task's output is of its own type")
        })
    }
}

/// Locks `m`; a holder that panicked does not poison it for everyone else (the data behind
/// these locks stays consistent at every await and return).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Now on the wall clock, as time since the Unix epoch (zero for a clock before 1970): what
/// iperf 2 stamps its datagrams with, and what one-way delays are read against.
pub(crate) fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Now, in milliseconds since the Unix epoch (0 for a clock before 1970).
pub(crate) fn unix_ms_now() -> u64 {
    u64::try_from(wall_clock().as_millis()).unwrap_or(u64::MAX)
}

/// Microseconds since the Unix epoch on the wall clock (what peers compare their clocks by).
pub(crate) fn unix_us_now() -> u64 {
    u64::try_from(wall_clock().as_micros()).unwrap_or(u64::MAX)
}

/// 16 bytes from the OS random source.
pub(crate) fn random_16() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes
}

/// Bytes as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new unguessable id: 128 random bits as 32 hex digits.
pub(crate) fn random_id() -> String {
    hex(&random_16())
}

/// An error as people read it: the OS's words without Rust's ` (os error 111)` tail.
pub(crate) fn plain_error(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_lose_their_number() {
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(plain_error(&refused), "Connection refused");
        assert_eq!(
            plain_error(&"no (os error in the middle) here"),
            "no (os error in the middle) here"
        );
    }

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
        assert_eq!(hex(&[0, 0xab, 0x0f]), "00ab0f");
        assert!(unix_ms_now() > 1_700_000_000_000);
    }

    #[test]
    fn a_panicked_holder_does_not_poison_the_lock() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("holder fails");
        })
        .join();
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}
