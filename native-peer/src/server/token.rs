//! The access token: given with `--token`, `--token-file` or `PERFPEER_TOKEN`, or generated
//! once and kept in the data directory so the URL a phone bookmarked keeps working across
//! restarts; and the count of wrong tokens by source that slows guessing down.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::admission::Source;

/// The data directory: `--data-dir`, else `$XDG_DATA_HOME/perfpeer`, else `~/.local/share/perfpeer`
/// (on Windows `%LOCALAPPDATA%\perfpeer`).
pub(crate) fn data_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    #[cfg(windows)]
    if let Some(local) = std::env::var_os("LOCALAPPDATA").filter(|v| !v.is_empty()) {
        return PathBuf::from(local).join("perfpeer");
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("perfpeer");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/perfpeer"),
        None => PathBuf::from("/var/lib/perfpeer"),
    }
}

/// Reads the stored token, or creates one (readable by the owner only).
pub(crate) fn load_or_create(dir: &Path) -> io::Result<String> {
    let path = dir.join("token");
    match std::fs::read_to_string(&path) {
        Ok(t) if is_valid(t.trim()) => return Ok(t.trim().to_string()),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "stored token is malformed; making a new one")
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
    crate::store::create_private_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    let token = crate::util::random_id();
    write_private(&path, &token)?;
    Ok(token)
}

/// Whether `t` is acceptable as a token: 8 to 128 URL-safe characters (what a stored token
/// must be; a token given by the user must also be [`strong`]).
pub(crate) fn is_valid(t: &str) -> bool {
    (8..=128).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
}

/// Shortest token a user may choose.
pub(crate) const MIN_CHOSEN_LEN: usize = 16;
/// Fewest different characters in a chosen token.
const MIN_DISTINCT: usize = 8;

/// Whether a token the user chose is strong enough to stand against guessing at the rate the
/// peer allows: at least 16 characters, at least 8 of them different.
pub(crate) fn strong(t: &str) -> bool {
    let distinct: std::collections::HashSet<u8> = t.bytes().collect();
    is_valid(t) && t.len() >= MIN_CHOSEN_LEN && distinct.len() >= MIN_DISTINCT
}

/// A source that guessed wrong too often.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("too many wrong tokens from this address: wait a minute")]
pub(crate) struct TooManyFailures;
impl warp::reject::Reject for TooManyFailures {}

/// Wrong tokens a source may send per [`FAILURE_WINDOW`].
const MAX_FAILURES: u32 = 10;
/// The period failures are counted over.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Sources whose failures are counted one by one (expired windows are forgotten to make room).
const MAX_SOURCES: usize = 4096;
/// Sources remembered as having given the right token (the most recent ones).
const MAX_TRUSTED: usize = 64;

/// Failures counted over one window.
#[derive(Debug, Clone, Copy)]
struct Window {
    since: Instant,
    failures: u32,
}

impl Window {
    fn new(now: Instant) -> Window {
        Window {
            since: now,
            failures: 0,
        }
    }

    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.since) >= FAILURE_WINDOW
    }

    fn exhausted(&self, now: Instant) -> bool {
        !self.expired(now) && self.failures >= MAX_FAILURES
    }

    fn count(&mut self, now: Instant) {
        if self.expired(now) {
            *self = Window::new(now);
        }
        self.failures += 1;
    }
}

#[derive(Debug)]
struct Attempts {
    by_source: HashMap<Source, Window>,
    /// The one window every source shares while `by_source` is full of live windows: the
    /// limiter fails closed (a newcomer's guesses count with every other newcomer's).
    overflow: Window,
    /// Sources that gave the right token lately, newest last: a table filled by guessers
    /// never holds them back.
    trusted: Vec<Source>,
}

/// Wrong tokens by source: after [`MAX_FAILURES`] in a minute, a source's token is not even
/// checked until the minute is over, so guessing runs at 10 a minute, not thousands a second.
/// Other sources are not slowed. When [`MAX_SOURCES`] sources are being counted at once,
/// further sources share one count (fail closed): an attacker with more addresses than that
/// gets 10 guesses a minute in all, and holds back other newcomers with it — but never a
/// source that gave the right token lately.
#[derive(Debug)]
pub(crate) struct FailedAttempts {
    attempts: Mutex<Attempts>,
}

impl Default for FailedAttempts {
    fn default() -> FailedAttempts {
        FailedAttempts {
            attempts: Mutex::new(Attempts {
                by_source: HashMap::new(),
                overflow: Window::new(Instant::now()),
                trusted: Vec::new(),
            }),
        }
    }
}

impl FailedAttempts {
    /// Checks `given` against `expected` for a request from `ip`: whether it matches, or
    /// [`TooManyFailures`] while the source is held back.
    pub(crate) fn check(
        &self,
        ip: IpAddr,
        given: &str,
        expected: &str,
    ) -> Result<bool, TooManyFailures> {
        self.check_at(Instant::now(), ip, given, expected)
    }

    /// [`FailedAttempts::check`] at `now`.
    fn check_at(
        &self,
        now: Instant,
        ip: IpAddr,
        given: &str,
        expected: &str,
    ) -> Result<bool, TooManyFailures> {
        let source = Source::of(ip);
        let mut a = crate::util::lock(&self.attempts);
        let trusted = a.trusted.contains(&source);
        if !a.by_source.contains_key(&source) && a.by_source.len() >= MAX_SOURCES {
            a.by_source.retain(|_, w| !w.expired(now));
        }
        let tracked = a.by_source.contains_key(&source) || a.by_source.len() < MAX_SOURCES;
        let held_back = match a.by_source.get(&source) {
            Some(w) => w.exhausted(now),
            None => !tracked && !trusted && a.overflow.exhausted(now),
        };
        if held_back {
            return Err(TooManyFailures);
        }
        let right = constant_time_eq(given.as_bytes(), expected.as_bytes());
        if right {
            a.trusted.retain(|s| *s != source);
            if a.trusted.len() >= MAX_TRUSTED {
                a.trusted.remove(0);
            }
            a.trusted.push(source);
        } else if tracked {
            a.by_source
                .entry(source)
                .or_insert_with(|| Window::new(now))
                .count(now);
        } else {
            a.overflow.count(now);
        }
        Ok(right)
    }
}

/// Compares without an early exit, so the time taken tells nothing of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn write_private(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = crate::store::private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_created_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("perfpeer-token-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = load_or_create(&dir).unwrap();
        assert!(is_valid(&first));
        assert_eq!(load_or_create(&dir).unwrap(), first);
        std::fs::write(dir.join("token"), "bad token!").unwrap();
        let replaced = load_or_create(&dir).unwrap();
        assert_ne!(replaced, first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn token_syntax() {
        assert!(is_valid("abcdefgh"));
        assert!(!is_valid("short"));
        assert!(!is_valid("has space in it"));
        assert!(!is_valid("#fragment"));
    }

    #[test]
    fn chosen_tokens_must_be_strong() {
        assert!(!strong("abcdefgh"), "8 characters");
        assert!(!strong("aaaaaaaaaaaaaaaaaaaa"), "one character");
        assert!(!strong("abababababababababab"), "two characters");
        assert!(strong("correct-horse-battery"));
        assert!(strong(&crate::util::random_id()), "a generated token");
    }

    #[test]
    fn guessing_is_held_back_per_source() {
        let attempts = FailedAttempts::default();
        let guesser: IpAddr = "10.0.0.9".parse().unwrap();
        let owner: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(!attempts.check(guesser, "wrong", "right-token").unwrap());
        }
        // Held back now, even with the right token ...
        assert!(
            attempts
                .check(guesser, "right-token", "right-token")
                .is_err()
        );
        // ... while another source is not slowed at all.
        assert!(attempts.check(owner, "right-token", "right-token").unwrap());
        assert!(!attempts.check(owner, "wrong", "right-token").unwrap());
    }

    /// The i-th of many IPv4 sources (10.x.y.z).
    fn nth_source(i: usize) -> IpAddr {
        let i = u32::try_from(i).unwrap();
        IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 | i))
    }

    #[test]
    fn a_full_table_fails_closed_but_not_for_the_token_holder() {
        let attempts = FailedAttempts::default();
        let t0 = Instant::now();
        let owner: IpAddr = "192.168.1.2".parse().unwrap();
        assert!(
            attempts
                .check_at(t0, owner, "right-token", "right-token")
                .unwrap()
        );
        // Fill every place with a live window, one wrong token each.
        for i in 0..MAX_SOURCES {
            assert!(
                !attempts
                    .check_at(t0, nth_source(i), "wrong", "right-token")
                    .unwrap()
            );
        }
        // A newcomer's guesses are counted all the same: 10, then held back ...
        let newcomer = nth_source(MAX_SOURCES);
        let checked = (0..300)
            .filter(|_| {
                attempts
                    .check_at(t0, newcomer, "wrong", "right-token")
                    .is_ok()
            })
            .count();
        assert_eq!(checked, usize::try_from(MAX_FAILURES).unwrap());
        // ... and so is every other newcomer (one shared count), even with the right token ...
        let other = nth_source(MAX_SOURCES + 1);
        assert!(
            attempts
                .check_at(t0, other, "right-token", "right-token")
                .is_err()
        );
        // ... but not the source that gave the right token before the flood.
        assert!(
            attempts
                .check_at(t0, owner, "right-token", "right-token")
                .unwrap()
        );
        // A minute later the windows have expired: places are free again.
        let later = t0 + FAILURE_WINDOW;
        assert!(
            attempts
                .check_at(later, other, "right-token", "right-token")
                .unwrap()
        );
    }
}
