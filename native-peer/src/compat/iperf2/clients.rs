//! Who holds what at an iperf 2 server. The TCP streams one client address has at once, as
//! iperf 2's server groups them: their `[SUM]` when the last of two or more ends, and `-1`
//! (`--singleclient`), which serves one address at a time while the others wait for their turn.
//! And the places of running streams and flows ([`Places`]): admitted by source
//! ([`crate::admission`]), a thread only with a permit, idle places shed first, and a UDP flow
//! on probation until it has sent for a while (a forged source costs nothing; a flow's place
//! must cost its sender something). No sockets here: the server reports what it sees.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::admission::{Admission, Admitted, Caps, Refusal};
use crate::util::lock;

/// Streams that may wait for their turn under `-1` at once; more are refused.
const MAX_WAITING: usize = 64;

/// The sum of a client's streams that ran together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClientSum {
    /// Streams in the group.
    pub streams: u32,
    /// Their bytes together.
    pub bytes: u64,
    /// From the first stream's start to the last one's end, seconds.
    pub seconds: f64,
}

#[derive(Debug)]
struct Group {
    active: u32,
    streams: u32,
    bytes: u64,
    since: Instant,
}

#[derive(Debug, Default)]
struct State {
    by_ip: HashMap<IpAddr, Group>,
    waiting: usize,
}

/// Every client address's group.
#[derive(Debug)]
pub(crate) struct Clients {
    state: Mutex<State>,
    turn: Notify,
    one_at_a_time: bool,
}

/// A stream's place in its client's group; the group's sum comes from [`Member::leave`].
#[derive(Debug)]
pub(crate) struct Member {
    clients: Arc<Clients>,
    ip: IpAddr,
    left: bool,
}

impl Clients {
    /// Groups for a server; with `one_at_a_time` (`-1`), one address is served at a time.
    pub(crate) fn new(one_at_a_time: bool) -> Arc<Clients> {
        Arc::new(Clients {
            state: Mutex::new(State::default()),
            turn: Notify::new(),
            one_at_a_time,
        })
    }

    /// Joins `ip`'s group, waiting under `-1` while another address is served; `Err` when too
    /// many wait already or the server shuts down.
    pub(crate) async fn join(
        self: &Arc<Self>,
        ip: IpAddr,
        shutdown: &CancellationToken,
    ) -> Result<Member, String> {
        let ip = ip.to_canonical();
        let mut counted_waiting = false;
        let joined = loop {
            let turn = self.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            {
                let mut state = lock(&self.state);
                let busy = self.one_at_a_time
                    && state
                        .by_ip
                        .iter()
                        .any(|(other, g)| *other != ip && g.active > 0);
                if !busy {
                    if counted_waiting {
                        state.waiting -= 1;
                    }
                    let group = state.by_ip.entry(ip).or_insert_with(|| Group {
                        active: 0,
                        streams: 0,
                        bytes: 0,
                        since: Instant::now(),
                    });
                    group.active += 1;
                    group.streams += 1;
                    break Ok(());
                }
                if !counted_waiting {
                    if state.waiting >= MAX_WAITING {
                        break Err(format!(
                            "-1: {MAX_WAITING} clients already wait for their turn"
                        ));
                    }
                    state.waiting += 1;
                    counted_waiting = true;
                }
            }
            tokio::select! {
                () = turn => {}
                () = shutdown.cancelled() => {
                    lock(&self.state).waiting -= 1;
                    break Err("the server is shutting down".into());
                }
            }
        };
        joined.map(|()| Member {
            clients: self.clone(),
            ip,
            left: false,
        })
    }
}

impl Member {
    /// Leaves the group with this stream's bytes; the group's sum if it was the last of two or
    /// more streams.
    pub(crate) fn leave(mut self, bytes: u64) -> Option<ClientSum> {
        self.left = true;
        self.clients.depart(self.ip, bytes)
    }
}

impl Clients {
    fn depart(&self, ip: IpAddr, bytes: u64) -> Option<ClientSum> {
        let mut state = lock(&self.state);
        let group = state.by_ip.get_mut(&ip)?;
        group.bytes += bytes;
        group.active -= 1;
        if group.active > 0 {
            return None;
        }
        let group = state.by_ip.remove(&ip)?;
        drop(state);
        self.turn.notify_waiters();
        (group.streams >= 2).then(|| ClientSum {
            streams: group.streams,
            bytes: group.bytes,
            seconds: group.since.elapsed().as_secs_f64(),
        })
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if !self.left {
            let _ = self.clients.depart(self.ip, 0);
        }
    }
}

/// How long after a newcomer was refused a quiet holder still gives its place up.
const PRESSED_FOR: Duration = Duration::from_secs(5);

/// How a holder earns a place that is never shed: by sending for `time` and at least `bytes`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probation {
    /// How long the holder must have sent for.
    pub time: Duration,
    /// How much it must have sent by then.
    pub bytes: u64,
}

/// The rules of one kind of place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlaceRules {
    /// Places held at once, in all and per source.
    pub caps: Caps,
    /// Threads of shed holders that may still be ending beyond `caps.total` (a newcomer waits
    /// for a permit past that: threads stay bounded however fast places change hands).
    pub draining: usize,
    /// A holder that moved nothing for this long is idle (shed first).
    pub idle_after: Duration,
    /// `None`: a holder is busy while it moves data, idle when not, and a busy place is shed
    /// only for fairness between sources (TCP: a source is an address that proved itself).
    /// `Some`: a holder stays idle (sheddable) until it passes its probation, then its place is
    /// never shed; it gives its place up when it falls quiet while newcomers are refused (UDP:
    /// a source may be forged, so sources are not weighed against each other).
    pub probation: Option<Probation>,
}

/// The places of one kind of running stream or flow at a server.
#[derive(Debug)]
pub(crate) struct Places {
    rules: PlaceRules,
    admission: Arc<Admission>,
    threads: Arc<Semaphore>,
    /// When a newcomer last found every place taken.
    last_full: Mutex<Option<Instant>>,
}

/// Why a place could not be held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlaceError {
    /// No place for it.
    #[error("{0}")]
    Refused(Refusal),
    /// A newcomer took it.
    #[error("shed for another client's stream or flow")]
    Shed,
    /// Shed holders' threads did not end in time.
    #[error("no thread free in time")]
    NoThread,
    /// A UDP flow that ended without its fin while still on probation (not reported).
    #[error("a flow ended without its fin before it had sent for a while")]
    Unproven,
}

/// What a holder should do after [`Place::observe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go on.
    Go,
    /// Give the place up: it fell quiet while newcomers are refused.
    Yield,
}

/// A place held by one stream or flow; given back on drop (with its thread permit, which the
/// holder drops only once its threads have ended).
#[derive(Debug)]
pub(crate) struct Place {
    places: Arc<Places>,
    admitted: Admitted,
    permit: Option<OwnedSemaphorePermit>,
    since: Instant,
    last_bytes: u64,
    last_change: Instant,
    busy: bool,
    established: bool,
}

impl Places {
    /// Places under `rules`.
    pub(crate) fn new(rules: PlaceRules) -> Arc<Places> {
        Arc::new(Places {
            rules,
            admission: Admission::new(rules.caps),
            threads: Arc::new(Semaphore::new(rules.caps.total + rules.draining)),
            last_full: Mutex::new(None),
        })
    }

    /// A place for a newcomer from `ip`, shedding an idle place (or, without probation, the
    /// oldest of a heavier source) when every place is taken.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Place, PlaceError> {
        let admitted = self.admission.admit(ip).map_err(|refusal| {
            if refusal == Refusal::Full {
                *lock(&self.last_full) = Some(Instant::now());
            }
            PlaceError::Refused(refusal)
        })?;
        let now = Instant::now();
        Ok(Place {
            places: self.clone(),
            admitted,
            permit: None,
            since: now,
            last_bytes: 0,
            last_change: now,
            busy: false,
            established: false,
        })
    }

    /// Whether a newcomer was refused for want of a place lately (by `now`).
    fn pressed(&self, now: Instant) -> bool {
        lock(&self.last_full).is_some_and(|at| now.saturating_duration_since(at) < PRESSED_FOR)
    }
}

impl Place {
    /// Cancelled when a newcomer took this place: the holder ends its stream or flow.
    pub(crate) fn evicted(&self) -> &CancellationToken {
        self.admitted.evicted()
    }

    /// Waits (at most `limit`) for the permit to run threads: at once unless shed holders'
    /// threads are still ending.
    pub(crate) async fn thread(&mut self, limit: Duration) -> Result<(), PlaceError> {
        let threads = self.places.threads.clone();
        let permit = tokio::select! {
            p = tokio::time::timeout(limit, threads.acquire_owned()) => p,
            () = self.admitted.evicted().cancelled() => return Err(PlaceError::Shed),
        };
        match permit {
            Ok(Ok(permit)) => {
                self.permit = Some(permit);
                Ok(())
            }
            _ => Err(PlaceError::NoThread),
        }
    }

    /// Records that the holder has moved `bytes` in all by `now`: a place that moved nothing
    /// for `idle_after` is idle; one that passed its probation is kept.
    pub(crate) fn observe(&mut self, now: Instant, bytes: u64) -> Verdict {
        let rules = self.places.rules;
        if bytes != self.last_bytes {
            (self.last_bytes, self.last_change) = (bytes, now);
        }
        let quiet = now.saturating_duration_since(self.last_change) >= rules.idle_after;
        match rules.probation {
            None => {
                if self.busy == quiet {
                    self.busy = !quiet;
                    self.admitted.set_busy(self.busy);
                }
                Verdict::Go
            }
            Some(probation) if !self.established => {
                if !quiet
                    && now.saturating_duration_since(self.since) >= probation.time
                    && bytes >= probation.bytes
                {
                    self.established = true;
                    self.admitted.protect();
                }
                Verdict::Go
            }
            Some(_) if quiet && self.places.pressed(now) => Verdict::Yield,
            Some(_) => Verdict::Go,
        }
    }

    /// Whether the holder passed its probation.
    pub(crate) fn established(&self) -> bool {
        self.established
    }

    /// The holder is answering its client now (a UDP report): not idle, whatever it moves.
    pub(crate) fn answering(&mut self) {
        self.busy = true;
        self.admitted.set_busy(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[tokio::test]
    async fn a_group_of_two_is_summed_when_its_last_stream_leaves() {
        let clients = Clients::new(false);
        let stop = CancellationToken::new();
        let a = clients.join(ip(1), &stop).await.unwrap();
        let b = clients.join(ip(1), &stop).await.unwrap();
        let lone = clients.join(ip(2), &stop).await.unwrap();
        assert_eq!(a.leave(100), None);
        let sum = b.leave(50).unwrap();
        assert_eq!((sum.streams, sum.bytes), (2, 150));
        assert_eq!(lone.leave(7), None, "one stream has no [SUM]");
    }

    #[tokio::test]
    async fn one_at_a_time_makes_other_addresses_wait() {
        let clients = Clients::new(true);
        let stop = CancellationToken::new();
        let first = clients.join(ip(1), &stop).await.unwrap();
        let same = clients.join(ip(1), &stop).await.unwrap();
        let other = {
            let clients = clients.clone();
            let stop = stop.clone();
            crate::util::spawn(async move { clients.join(ip(2), &stop).await.map(|m| m.leave(1)) })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!other.is_finished(), "the second address waits");
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !other.is_finished(),
            "until the first address's last stream ends"
        );
        drop(same);
        let served = tokio::time::timeout(Duration::from_secs(2), other).await;
        assert!(matches!(served, Ok(Ok(Ok(None)))), "{served:?}");
    }
    fn rules(probation: Option<Probation>) -> PlaceRules {
        PlaceRules {
            caps: Caps {
                total: 2,
                per_source: 2,
            },
            draining: 0,
            idle_after: Duration::from_secs(1),
            probation,
        }
    }

    #[test]
    fn a_flow_on_probation_is_shed_first_and_an_established_one_never() {
        let places = Places::new(rules(Some(Probation {
            time: Duration::from_secs(1),
            bytes: 1000,
        })));
        let t0 = Instant::now();
        let mut real = places.admit(ip(1)).unwrap();
        let forged = places.admit(ip(2)).unwrap();
        assert_eq!(
            real.observe(t0 + Duration::from_millis(500), 5000),
            Verdict::Go
        );
        assert!(!real.established(), "not before its probation time");
        real.observe(t0 + Duration::from_millis(1100), 9000);
        assert!(real.established());
        let newcomer = places.admit(ip(3)).unwrap();
        assert!(
            forged.evicted().is_cancelled(),
            "the flow on probation goes"
        );
        assert!(!real.evicted().is_cancelled());
        let mut next = places.admit(ip(4)).unwrap();
        assert!(newcomer.evicted().is_cancelled());
        assert!(
            !real.evicted().is_cancelled(),
            "an established flow is never shed"
        );
        // Both places established: a newcomer is refused, and a flow that falls quiet while
        // newcomers are refused gives its place up.
        let later = t0 + Duration::from_millis(2200);
        next.observe(later, 9000);
        assert!(next.established());
        assert_eq!(
            real.observe(later, 9000),
            Verdict::Go,
            "quiet, no one waiting"
        );
        let full = places.admit(ip(6));
        assert!(
            matches!(full, Err(PlaceError::Refused(Refusal::Full))),
            "{full:?}"
        );
        assert_eq!(next.observe(later, 9500), Verdict::Go, "sending");
        assert_eq!(real.observe(later, 9000), Verdict::Yield);
    }

    #[test]
    fn an_idle_stream_is_shed_before_a_busy_one() {
        let places = Places::new(rules(None));
        let t0 = Instant::now() + Duration::from_secs(2);
        let mut busy = places.admit(ip(1)).unwrap();
        let mut idle = places.admit(ip(2)).unwrap();
        busy.observe(t0, 1 << 20);
        idle.observe(t0, 0);
        let _newcomer = places.admit(ip(3)).unwrap();
        assert!(idle.evicted().is_cancelled());
        assert!(!busy.evicted().is_cancelled());
    }

    #[tokio::test]
    async fn a_newcomer_runs_no_thread_until_the_shed_holder_has_ended() {
        let places = Places::new(PlaceRules {
            caps: Caps {
                total: 1,
                per_source: 1,
            },
            ..rules(None)
        });
        let mut first = places.admit(ip(1)).unwrap();
        first.thread(Duration::from_secs(1)).await.unwrap();
        let mut second = places.admit(ip(2)).unwrap();
        assert!(first.evicted().is_cancelled());
        let waited = second.thread(Duration::from_millis(100)).await;
        assert_eq!(
            waited,
            Err(PlaceError::NoThread),
            "the shed holder's thread runs"
        );
        drop(first);
        second.thread(Duration::from_millis(100)).await.unwrap();
    }
}
