//! Admission of anonymous connections by source, shared by every listener (HTTP, the data port,
//! the stock-tool servers): a cap per source and a total cap with fair shedding, so a flood from
//! one address cannot deny a second one; and log lines rate-limited to a count per period, so a
//! flood cannot fill the log either.
//!
//! A "source" is an IPv4 address, or an IPv6 /64 (one host on a LAN can use any address of its
//! prefix).

use crate::util::lock;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The address group one host can send from: an IPv4 address or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    /// The source of a connection from `ip` (IPv4-mapped IPv6 counts as IPv4).
    pub fn of(ip: IpAddr) -> Source {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Source(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                Source(IpAddr::V6(bits.into()))
            }
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Its source already holds its share.
    #[error("too many connections from this address")]
    SourceFull,
    /// Every place is taken by sources holding no more than this one.
    #[error("too many connections")]
    Full,
}

/// Caps on connections held at once.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// All sources together.
    pub total: usize,
    /// One source.
    pub per_source: usize,
}

#[derive(Debug, Default)]
struct Held {
    by_source: HashMap<Source, VecDeque<(u64, CancellationToken)>>,
    total: usize,
    next_id: u64,
}

/// Connections held at once, by source. When the total is reached, a newcomer takes the place
/// of the oldest connection of the source holding the most, if that source holds more than the
/// newcomer's own: every source keeps a fair share however hard another one pushes.
#[derive(Debug)]
pub struct Admission {
    caps: Caps,
    held: Mutex<Held>,
}

/// A place held by one connection, given back on drop. [`Admitted::evicted`] is cancelled when
/// a fairer claim took the place: the holder should then close its connection.
#[derive(Debug)]
pub struct Admitted {
    admission: Arc<Admission>,
    source: Source,
    id: u64,
    evicted: CancellationToken,
}

impl Admitted {
    /// Cancelled when this connection was shed for another source's.
    pub fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut held = lock(&self.admission.held);
        if let Some(queue) = held.by_source.get_mut(&self.source)
            && let Some(at) = queue.iter().position(|(id, _)| *id == self.id)
        {
            queue.remove(at);
            if queue.is_empty() {
                held.by_source.remove(&self.source);
            }
            held.total -= 1;
        }
    }
}

impl Admission {
    /// An admission with `caps` (each at least 1).
    pub fn new(caps: Caps) -> Arc<Admission> {
        Arc::new(Admission {
            caps: Caps {
                total: caps.total.max(1),
                per_source: caps.per_source.clamp(1, caps.total.max(1)),
            },
            held: Mutex::new(Held::default()),
        })
    }

    /// Admits a connection from `ip`, shedding another source's oldest if that is fair.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        self.admit_with(ip, true)
    }

    /// [`Admission::admit`] for a connection from `from`; a refusal is counted in `log`.
    pub fn admit_or_warn(self: &Arc<Self>, from: SocketAddr, log: &LogLimit) -> Option<Admitted> {
        self.admit(from.ip())
            .inspect_err(|refusal| log.warn(from, refusal))
            .ok()
    }

    /// Admits a connection from `ip` only if there is a free place: for holders that cannot
    /// give theirs up at once (a thread blocked in a read, a running test).
    pub fn admit_without_shedding(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        self.admit_with(ip, false)
    }

    fn admit_with(self: &Arc<Self>, ip: IpAddr, shed: bool) -> Result<Admitted, Refusal> {
        let source = Source::of(ip);
        let mut held = lock(&self.held);
        let own = held.by_source.get(&source).map_or(0, VecDeque::len);
        if own >= self.caps.per_source {
            return Err(Refusal::SourceFull);
        }
        if held.total >= self.caps.total {
            let heaviest = held
                .by_source
                .iter()
                .max_by_key(|(_, q)| q.len())
                .map(|(s, q)| (*s, q.len()));
            match heaviest {
                Some((victim, n)) if shed && n > own + 1 => {
                    let queue = held.by_source.get_mut(&victim).expect("heaviest exists");
                    if let Some((_, token)) = queue.pop_front() {
                        token.cancel();
                        held.total -= 1;
                    }
                }
                _ => return Err(Refusal::Full),
            }
        }
        let id = held.next_id;
        held.next_id += 1;
        let evicted = CancellationToken::new();
        held.by_source
            .entry(source)
            .or_default()
            .push_back((id, evicted.clone()));
        held.total += 1;
        Ok(Admitted {
            admission: self.clone(),
            source,
            id,
            evicted,
        })
    }

    /// Connections held now (all sources).
    #[cfg(test)]
    fn held(&self) -> usize {
        lock(&self.held).total
    }
}

/// Accepts connections on `listener` until one is admitted, or `shutdown` (`None`). Refusals and
/// accept errors (out of descriptors, say: backed off, not spun on) are counted in `log`.
pub async fn accept_admitted(
    listener: &tokio::net::TcpListener,
    admission: &Arc<Admission>,
    log: &LogLimit,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Option<(tokio::net::TcpStream, SocketAddr, Admitted)> {
    let mut backoff = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return None,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, from)) => {
                backoff = Duration::from_millis(10);
                if let Some(place) = admission.admit_or_warn(from, log) {
                    return Some((stream, from, place));
                }
            }
            Err(e) => {
                log.warn("accept", e);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// A warning that may happen thousands of times a second under attack: the first one of a period
/// is logged with its details, the rest are counted and logged as one line when the next period
/// starts.
#[derive(Debug)]
pub struct LogLimit {
    what: &'static str,
    period: Duration,
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    period_start: Option<Instant>,
    suppressed: u64,
}

impl LogLimit {
    /// A limit for events described as `what`, at most one line (plus one count) per `period`.
    pub const fn new(what: &'static str, period: Duration) -> LogLimit {
        LogLimit {
            what,
            period,
            state: Mutex::new(LogState {
                period_start: None,
                suppressed: 0,
            }),
        }
    }

    /// Records one event from `source` with `detail`; logs it unless this period already did.
    pub fn warn(&self, source: impl std::fmt::Display, detail: impl std::fmt::Display) {
        if let Some(earlier) = self.admit_line(Instant::now()) {
            if earlier > 0 {
                tracing::warn!(
                    count = earlier,
                    "{}: {earlier} more in the last {} s",
                    self.what,
                    self.period.as_secs()
                );
            }
            tracing::warn!(%source, "{}: {detail}", self.what);
        }
    }

    /// Whether a line may be logged at `now`: `Some(events suppressed before)` if so.
    fn admit_line(&self, now: Instant) -> Option<u64> {
        let mut st = lock(&self.state);
        match st.period_start {
            Some(start) if now.duration_since(start) < self.period => {
                st.suppressed += 1;
                None
            }
            _ => {
                st.period_start = Some(now);
                Some(std::mem::take(&mut st.suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_sources_group_by_prefix_and_mapped_v4_is_v4() {
        assert_eq!(
            Source::of(ip("2001:db8::1")),
            Source::of(ip("2001:db8::ffff:1"))
        );
        assert_ne!(
            Source::of(ip("2001:db8::1")),
            Source::of(ip("2001:db8:0:1::1"))
        );
        assert_eq!(
            Source::of(ip("::ffff:10.0.0.1")),
            Source::of(ip("10.0.0.1"))
        );
        assert_eq!(Source::of(ip("2001:db8::1")).to_string(), "2001:db8::/64");
    }

    #[test]
    fn a_source_is_capped_and_its_places_come_back_on_drop() {
        let a = Admission::new(Caps {
            total: 10,
            per_source: 2,
        });
        let one = a.admit(ip("10.0.0.1")).unwrap();
        let _two = a.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(a.admit(ip("10.0.0.1")).unwrap_err(), Refusal::SourceFull);
        drop(one);
        assert!(a.admit(ip("10.0.0.1")).is_ok());
        assert_eq!(a.held(), 1, "the admitted-and-dropped place came back too");
    }

    #[test]
    fn a_flood_from_one_source_is_shed_for_another() {
        let a = Admission::new(Caps {
            total: 4,
            per_source: 4,
        });
        let flood: Vec<Admitted> = (0..4).map(|_| a.admit(ip("10.0.0.1")).unwrap()).collect();
        let second = a.admit(ip("10.0.0.2")).expect("a second source gets in");
        assert!(
            flood[0].evicted().is_cancelled(),
            "the oldest of the flood goes"
        );
        assert!(!flood[1].evicted().is_cancelled());
        assert_eq!(a.held(), 4);
        // Two sources at 3 and 1: the second may take one more from the flood (3 > 1 + 1) ...
        let _third = a.admit(ip("10.0.0.2")).unwrap();
        assert!(flood[1].evicted().is_cancelled());
        // ... but at 2 and 2 there is nothing fair left to shed.
        assert_eq!(a.admit(ip("10.0.0.2")).unwrap_err(), Refusal::Full);
        assert_eq!(a.admit(ip("10.0.0.1")).unwrap_err(), Refusal::Full);
        // An evicted holder's drop does not give back a place twice.
        drop(flood);
        assert_eq!(a.held(), 2);
        drop(second);
        assert_eq!(a.held(), 1);
    }

    #[test]
    fn without_shedding_a_full_admission_refuses() {
        let a = Admission::new(Caps {
            total: 2,
            per_source: 2,
        });
        let flood: Vec<Admitted> = (0..2).map(|_| a.admit(ip("10.0.0.1")).unwrap()).collect();
        assert_eq!(
            a.admit_without_shedding(ip("10.0.0.2")).unwrap_err(),
            Refusal::Full
        );
        assert!(flood.iter().all(|p| !p.evicted().is_cancelled()));
    }

    #[test]
    fn log_lines_are_one_per_period_with_a_count() {
        let limit = LogLimit::new("test", Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(limit.admit_line(t0), Some(0));
        for i in 1..1000 {
            assert_eq!(limit.admit_line(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(limit.admit_line(t0 + Duration::from_secs(10)), Some(999));
        assert_eq!(limit.admit_line(t0 + Duration::from_secs(11)), None);
    }
}
