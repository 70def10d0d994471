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
pub(crate) struct Source(IpAddr);

impl Source {
    /// The source of a connection from `ip` (IPv4-mapped IPv6 counts as IPv4).
    pub(crate) fn of(ip: IpAddr) -> Source {
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
pub(crate) enum Refusal {
    /// Its source already holds its share.
    #[error("too many connections from this address")]
    SourceFull,
    /// Every place is taken by sources holding no more than this one.
    #[error("too many connections")]
    Full,
}

/// Caps on connections held at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// All sources together.
    pub total: usize,
    /// One source.
    pub per_source: usize,
}

/// One connection's place.
#[derive(Debug)]
struct Place {
    id: u64,
    evicted: CancellationToken,
    /// Not serving anything now (waiting for a request, a hello): the first kind shed.
    idle: bool,
    /// The token holder's: never shed.
    protected: bool,
}

#[derive(Debug, Default)]
struct Held {
    /// Each source's places, oldest first.
    by_source: HashMap<Source, VecDeque<Place>>,
    total: usize,
    next_id: u64,
}

impl Held {
    fn place_mut(&mut self, source: Source, id: u64) -> Option<&mut Place> {
        self.by_source
            .get_mut(&source)?
            .iter_mut()
            .find(|p| p.id == id)
    }

    /// The place to shed for a newcomer from a source that holds `own`: the oldest idle place
    /// of the heaviest source if it holds more than `own + 1` (else its oldest one that is not
    /// protected); failing that, the oldest idle place of any source holding more than `own`.
    /// A busy place is shed only for fairness between sources, a protected one never.
    fn victim(&self, own: usize) -> Option<(Source, u64)> {
        let sheddable = |p: &&Place| !p.protected;
        let heaviest = self
            .by_source
            .iter()
            .max_by_key(|(_, q)| q.len())
            .filter(|(_, q)| q.len() > own + 1);
        if let Some((source, queue)) = heaviest {
            let place = queue
                .iter()
                .filter(sheddable)
                .find(|p| p.idle)
                .or_else(|| queue.iter().find(|p| !p.protected));
            if let Some(place) = place {
                return Some((*source, place.id));
            }
        }
        self.by_source
            .iter()
            .filter(|(_, q)| q.len() > own)
            .filter_map(|(source, q)| {
                q.iter()
                    .filter(sheddable)
                    .find(|p| p.idle)
                    .map(|p| (*source, p.id))
            })
            .min_by_key(|(_, id)| *id)
    }

    /// The oldest idle place, not protected, of any source but `source`.
    fn oldest_idle_elsewhere(&self, source: Source) -> Option<(Source, u64)> {
        self.by_source
            .iter()
            .filter(|(s, _)| **s != source)
            .filter_map(|(s, q)| {
                q.iter()
                    .find(|p| p.idle && !p.protected)
                    .map(|p| (*s, p.id))
            })
            .min_by_key(|(_, id)| *id)
    }

    fn remove(&mut self, source: Source, id: u64) -> Option<Place> {
        let queue = self.by_source.get_mut(&source)?;
        let at = queue.iter().position(|p| p.id == id)?;
        let place = queue.remove(at);
        if queue.is_empty() {
            self.by_source.remove(&source);
        }
        self.total -= 1;
        place
    }
}

/// What a newcomer may take when every place is taken.
#[derive(Debug, Clone, Copy)]
enum Claim {
    /// A place that fairness between sources gives it ([`Held::victim`]).
    Fair,
    /// Nothing: only a free place.
    FreeOnly,
    /// The oldest idle place of any other source ([`Admission::admit_expected`]).
    Expected,
}

/// Connections held at once, by source. When the total is reached, a newcomer takes the place
/// of the oldest connection of the source holding the most, if that source holds more than the
/// newcomer's own: every source keeps a fair share however hard another one pushes. When every
/// source holds about as much (many addresses, a place or two each), the newcomer takes the
/// oldest *idle* place instead (a connection waiting for a request or a hello), so the totals
/// hold against as many addresses as there are places while the connections that are doing
/// something, and the token holder's ([`Admitted::protect`]), are kept.
#[derive(Debug)]
pub(crate) struct Admission {
    caps: Caps,
    held: Mutex<Held>,
}

/// A place held by one connection, given back on drop. [`Admitted::evicted`] is cancelled when
/// a fairer claim took the place: the holder should then close its connection. A new place
/// counts as idle until its holder says it is busy ([`Admitted::set_busy`]).
#[derive(Debug)]
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    source: Source,
    id: u64,
    evicted: CancellationToken,
}

impl Admitted {
    /// Cancelled when this connection was shed for another source's.
    pub(crate) fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }

    /// Says whether the connection is serving something now (a request, a test): an idle one
    /// is the first to be shed when every place is taken.
    pub(crate) fn set_busy(&self, busy: bool) {
        if let Some(place) = lock(&self.admission.held).place_mut(self.source, self.id) {
            place.idle = !busy;
        }
    }

    /// Marks the place busy until the guard is dropped.
    pub(crate) fn busy(&self) -> BusyGuard<'_> {
        self.set_busy(true);
        BusyGuard(self)
    }

    /// The token holder's connection: never shed.
    pub(crate) fn protect(&self) {
        if let Some(place) = lock(&self.admission.held).place_mut(self.source, self.id) {
            place.protected = true;
        }
    }
}

/// A place marked busy while this lives (see [`Admitted::busy`]).
#[derive(Debug)]
pub(crate) struct BusyGuard<'a>(&'a Admitted);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.set_busy(false);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.admission.held).remove(self.source, self.id);
    }
}

impl Admission {
    /// An admission with `caps` (each at least 1).
    pub(crate) fn new(caps: Caps) -> Arc<Admission> {
        Arc::new(Admission {
            caps: Caps {
                total: caps.total.max(1),
                per_source: caps.per_source.clamp(1, caps.total.max(1)),
            },
            held: Mutex::new(Held::default()),
        })
    }

    /// Admits a connection from `ip`, shedding another source's if that is fair.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        self.admit_with(ip, Claim::Fair)
    }

    /// Admits a connection from `ip` only if there is a free place: for holders that cannot
    /// give theirs up at once (a thread blocked in a read, a running test).
    pub(crate) fn admit_without_shedding(
        self: &Arc<Self>,
        ip: IpAddr,
    ) -> Result<Admitted, Refusal> {
        self.admit_with(ip, Claim::FreeOnly)
    }

    /// Admits an expected connection from `ip` (a data stream of a test its source opened):
    /// when every place is taken it takes the oldest idle place of any other source, whatever
    /// that source holds, and its own place is protected until dropped. Many addresses
    /// churning idle connections cannot then starve the streams of a test that was admitted.
    pub(crate) fn admit_expected(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        let place = self.admit_with(ip, Claim::Expected)?;
        place.protect();
        Ok(place)
    }

    fn admit_with(self: &Arc<Self>, ip: IpAddr, claim: Claim) -> Result<Admitted, Refusal> {
        let source = Source::of(ip);
        let mut held = lock(&self.held);
        let own = held.by_source.get(&source).map_or(0, VecDeque::len);
        if own >= self.caps.per_source {
            return Err(Refusal::SourceFull);
        }
        if held.total >= self.caps.total {
            let victim = match claim {
                Claim::Fair => held.victim(own),
                Claim::FreeOnly => None,
                Claim::Expected => held.oldest_idle_elsewhere(source),
            };
            let Some((victim, id)) = victim else {
                return Err(Refusal::Full);
            };
            if let Some(place) = held.remove(victim, id) {
                place.evicted.cancel();
            }
        }
        let id = held.next_id;
        held.next_id += 1;
        let evicted = CancellationToken::new();
        held.by_source.entry(source).or_default().push_back(Place {
            id,
            evicted: evicted.clone(),
            idle: true,
            protected: false,
        });
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
pub(crate) async fn accept_admitted(
    listener: &tokio::net::TcpListener,
    admission: &Arc<Admission>,
    log: &LogLimit,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Option<(tokio::net::TcpStream, SocketAddr, Admitted)> {
    accept_admitted_by(listener, |from| admission.admit(from.ip()), log, shutdown).await
}

/// [`accept_admitted`] with the admission decided by `admit` (say, [`Admission::admit_expected`]
/// for a source that is expected).
pub(crate) async fn accept_admitted_by(
    listener: &tokio::net::TcpListener,
    admit: impl Fn(SocketAddr) -> Result<Admitted, Refusal>,
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
                match admit(from) {
                    Ok(place) => return Some((stream, from, place)),
                    Err(refusal) => log.warn(from, refusal),
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

/// Lines that a client can cause, thousands of times a second under attack: the first `burst`
/// of a period are logged with their details, the rest are counted and logged as one line
/// when the next period starts. Every line an anonymous client can cause goes through one of
/// these (listeners, handlers, and the persona servers' printers through [`LogLimit::admit`]).
#[derive(Debug)]
pub(crate) struct LogLimit {
    what: &'static str,
    period: Duration,
    burst: u32,
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    period_start: Option<Instant>,
    lines: u32,
    suppressed: u64,
}

/// What [`LogLimit::admit`] allows for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogLine {
    /// Write the event's line; `suppressed` events of the kind went unwritten in the period
    /// before (write their count first when it is not 0).
    Write {
        /// Events not written in the period before this one.
        suppressed: u64,
    },
    /// Count it, write nothing.
    Suppress,
}

impl LogLimit {
    /// A limit for events described as `what`, at most one line (plus one count) per `period`.
    pub(crate) const fn new(what: &'static str, period: Duration) -> LogLimit {
        LogLimit::with_burst(what, period, 1)
    }

    /// A limit for events described as `what`, at most `burst` lines (plus one count) per
    /// `period`: for events worth a line each in normal use (a test served, a client refused),
    /// which a flood must still not turn into a line each.
    pub(crate) const fn with_burst(what: &'static str, period: Duration, burst: u32) -> LogLimit {
        LogLimit {
            what,
            period,
            burst,
            state: Mutex::new(LogState {
                period_start: None,
                lines: 0,
                suppressed: 0,
            }),
        }
    }

    /// What the events are called in the count line.
    pub(crate) fn what(&self) -> &'static str {
        self.what
    }

    /// The period, in whole seconds, for the count line.
    pub(crate) fn period_secs(&self) -> u64 {
        self.period.as_secs()
    }

    /// Records one event from `source` with `detail` as a warning, unless this period already
    /// wrote its lines.
    pub(crate) fn warn(&self, source: impl std::fmt::Display, detail: impl std::fmt::Display) {
        self.warn_dyn(&source, &detail);
    }

    /// [`LogLimit::warn`] at the info level: for events that are normal use one at a time.
    pub(crate) fn info(&self, source: impl std::fmt::Display, detail: impl std::fmt::Display) {
        self.info_dyn(&source, &detail);
    }

    /// [`LogLimit::warn`], compiled once rather than once per pair of argument types.
    fn warn_dyn(&self, source: &dyn std::fmt::Display, detail: &dyn std::fmt::Display) {
        if let LogLine::Write { suppressed } = self.admit() {
            self.log_count(suppressed);
            tracing::warn!(%source, "{}: {detail}", self.what);
        }
    }

    /// [`LogLimit::info`], compiled once.
    fn info_dyn(&self, source: &dyn std::fmt::Display, detail: &dyn std::fmt::Display) {
        if let LogLine::Write { suppressed } = self.admit() {
            self.log_count(suppressed);
            tracing::info!(%source, "{}: {detail}", self.what);
        }
    }

    fn log_count(&self, suppressed: u64) {
        if suppressed > 0 {
            tracing::warn!(
                count = suppressed,
                "{}: {suppressed} more in the last {} s",
                self.what,
                self.period.as_secs()
            );
        }
    }

    /// Records one event now; whether its line may be written (for callers that write it
    /// themselves, such as a persona server's printer on stdout).
    pub(crate) fn admit(&self) -> LogLine {
        self.admit_at(Instant::now())
    }

    /// [`LogLimit::admit`] at `now`.
    pub(crate) fn admit_at(&self, now: Instant) -> LogLine {
        let mut st = lock(&self.state);
        match st.period_start {
            Some(start) if now.duration_since(start) < self.period => {
                if st.lines < self.burst {
                    st.lines += 1;
                    LogLine::Write { suppressed: 0 }
                } else {
                    st.suppressed += 1;
                    LogLine::Suppress
                }
            }
            _ => {
                st.period_start = Some(now);
                st.lines = 1;
                LogLine::Write {
                    suppressed: std::mem::take(&mut st.suppressed),
                }
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
        // ... but at 2 and 2, with every place busy, there is nothing fair left to shed.
        flood.iter().for_each(|p| p.set_busy(true));
        _third.set_busy(true);
        second.set_busy(true);
        assert_eq!(a.admit(ip("10.0.0.2")).unwrap_err(), Refusal::Full);
        assert_eq!(a.admit(ip("10.0.0.1")).unwrap_err(), Refusal::Full);
        // An evicted holder's drop does not give back a place twice.
        drop(flood);
        assert_eq!(a.held(), 2);
        drop(second);
        assert_eq!(a.held(), 1);
    }

    #[test]
    fn many_sources_with_a_place_each_give_up_their_oldest_idle_one() {
        let a = Admission::new(Caps {
            total: 254,
            per_source: 4,
        });
        // 254 attackers hold a place each: no source is heavier than another.
        let held: Vec<Admitted> = (1..=254)
            .map(|i| a.admit(ip(&format!("10.0.1.{i}"))).unwrap())
            .collect();
        // The two oldest are busy (serving a request), the third is the token holder's.
        held[0].set_busy(true);
        let guard = held[1].busy();
        held[2].protect();
        let newcomer = a
            .admit(ip("10.0.9.9"))
            .expect("a newcomer gets the oldest idle place");
        assert!(
            held[3].evicted().is_cancelled(),
            "the oldest idle place goes"
        );
        assert!(held[..3].iter().all(|p| !p.evicted().is_cancelled()));
        drop(guard);
        let another = a.admit(ip("10.0.9.10")).unwrap();
        assert!(
            held[1].evicted().is_cancelled(),
            "idle again, and now the oldest idle"
        );
        // With every place busy there is nothing to shed.
        newcomer.set_busy(true);
        another.set_busy(true);
        held.iter().for_each(|p| p.set_busy(true));
        assert_eq!(a.admit(ip("10.0.9.11")).unwrap_err(), Refusal::Full);
        assert_eq!(a.held(), 254);
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
        assert_eq!(limit.admit_at(t0), LogLine::Write { suppressed: 0 });
        for i in 1..1000 {
            assert_eq!(
                limit.admit_at(t0 + Duration::from_millis(i)),
                LogLine::Suppress
            );
        }
        assert_eq!(
            limit.admit_at(t0 + Duration::from_secs(10)),
            LogLine::Write { suppressed: 999 }
        );
        assert_eq!(
            limit.admit_at(t0 + Duration::from_secs(11)),
            LogLine::Suppress
        );
    }

    #[test]
    fn a_burst_is_written_then_counted() {
        let limit = LogLimit::with_burst("test", Duration::from_secs(10), 3);
        let t0 = Instant::now();
        let lines: Vec<LogLine> = (0..10)
            .map(|i| limit.admit_at(t0 + Duration::from_millis(i)))
            .collect();
        assert!(
            lines[..3]
                .iter()
                .all(|l| *l == LogLine::Write { suppressed: 0 })
        );
        assert!(lines[3..].iter().all(|l| *l == LogLine::Suppress));
        assert_eq!(
            limit.admit_at(t0 + Duration::from_secs(10)),
            LogLine::Write { suppressed: 7 }
        );
    }
}
