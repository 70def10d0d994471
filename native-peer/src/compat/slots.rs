//! The places of the tests a persona server runs at once (`--max-tests` of `perfpeer iperf3 -s`
//! and of `perfpeer netserver`), held from a test's request to its end, so that addresses that
//! ask for tests and stall — from 2 addresses or from a whole /24 — cannot deny another one.
//!
//! A place is *idle* while its test is being set up (iperf3: parameters, streams; netperf: until
//! the client's first data) or exchanges its results, and *running* while data moves; a running
//! test is never shed. When every place is taken, a newcomer takes the place of an idle test
//! that is no longer protected — of the source holding the most places, the one idle the
//! longest. A test is protected for [`SHED_AFTER`] from its admission (a client's whole setup
//! takes a few round trips), and after its data phase for as long again, but only if its source
//! was *clean*: a source that was refused as busy, had a test shed, or left a test before it ran
//! is not, for [`BAD_FOR`], and in that time its tests are not protected and it may not shed
//! another's. So a newcomer never sheds a client going through its setup, a source that hammers
//! or stalls gains nothing, and keeping every place with tests that never run takes
//! `--max-tests` fresh addresses every [`SHED_AFTER`]: 480 in [`BAD_FOR`] for iperf3's default 8
//! places, more than a LAN's /24 (1,920 for netserver's 32).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::admission::Source;
use crate::util::lock;

/// How long a test from a clean source is protected from shedding after its admission (and
/// after its data phase): longer than a client takes between its cookie and its last stream.
pub(crate) const SHED_AFTER: Duration = Duration::from_secs(2);

/// How long a source that was refused, shed or left a test before it ran stays unclean.
pub(crate) const BAD_FOR: Duration = Duration::from_secs(120);

/// Unclean sources remembered at once (the oldest is forgotten first).
const BAD_KEPT: usize = 4096;

/// Why a test got no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Busy {
    /// Its address already holds its share.
    #[error("this address holds its share of --max-tests")]
    SourceFull,
    /// Every place is taken by running tests or protected ones.
    #[error("--max-tests reached")]
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Running,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    source: Source,
    phase: Phase,
    /// Whether the test reached its data phase.
    ran: bool,
    /// When it was admitted or last became idle.
    since: Instant,
    /// Until when it may not be shed while idle.
    protected_until: Instant,
    shed: CancellationToken,
}

#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    next_id: u64,
    /// When each unclean source last was.
    bad: HashMap<Source, Instant>,
}

impl Table {
    fn clean(&self, source: Source, now: Instant, bad_for: Duration) -> bool {
        self.bad
            .get(&source)
            .is_none_or(|&at| now.saturating_duration_since(at) >= bad_for)
    }

    fn mark_bad(&mut self, source: Source, now: Instant) {
        if self.bad.len() >= BAD_KEPT
            && !self.bad.contains_key(&source)
            && let Some(oldest) = self.bad.iter().min_by_key(|(_, at)| **at).map(|(s, _)| *s)
        {
            self.bad.remove(&oldest);
        }
        self.bad.insert(source, now);
    }
}

/// The places, with a total and a share per source.
#[derive(Debug)]
pub(crate) struct Slots {
    total: usize,
    per_source: usize,
    shed_after: Duration,
    bad_for: Duration,
    table: Mutex<Table>,
}

/// One test's place, given back on drop. [`Slot::shed`] is cancelled when a newcomer took it
/// (only ever while the test is idle): the test should then end.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    shed: CancellationToken,
}

impl Slots {
    /// `total` places (at least 1), at most `per_source` (at least 1) for one source.
    pub(crate) fn new(total: usize, per_source: usize) -> Arc<Slots> {
        Slots::with_times(total, per_source, SHED_AFTER, BAD_FOR)
    }

    fn with_times(
        total: usize,
        per_source: usize,
        shed_after: Duration,
        bad_for: Duration,
    ) -> Arc<Slots> {
        let total = total.max(1);
        Arc::new(Slots {
            total,
            per_source: per_source.clamp(1, total),
            shed_after,
            bad_for,
            table: Mutex::new(Table::default()),
        })
    }

    /// A place for a test from `ip`; the source of the test shed for it, if one was.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<(Slot, Option<Source>), Busy> {
        self.admit_at(ip, Instant::now())
    }

    fn admit_at(
        self: &Arc<Self>,
        ip: IpAddr,
        now: Instant,
    ) -> Result<(Slot, Option<Source>), Busy> {
        let source = Source::of(ip);
        let mut table = lock(&self.table);
        let clean = table.clean(source, now, self.bad_for);
        let mut held: HashMap<Source, usize> = HashMap::new();
        for e in &table.entries {
            *held.entry(e.source).or_default() += 1;
        }
        let own = held.get(&source).copied().unwrap_or(0);
        if own >= self.per_source {
            table.mark_bad(source, now);
            return Err(Busy::SourceFull);
        }
        let mut shed = None;
        if table.entries.len() >= self.total {
            // An idle, unprotected test of a source holding more than the newcomer: of the
            // source holding the most, the one idle the longest.
            let victim = table
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    clean
                        && e.phase == Phase::Idle
                        && now >= e.protected_until
                        && held[&e.source] > own
                })
                .min_by_key(|(_, e)| (std::cmp::Reverse(held[&e.source]), e.since, e.id))
                .map(|(at, _)| at);
            let Some(at) = victim else {
                table.mark_bad(source, now);
                return Err(Busy::Full);
            };
            let victim = table.entries.swap_remove(at);
            victim.shed.cancel();
            table.mark_bad(victim.source, now);
            shed = Some(victim.source);
        }
        let id = table.next_id;
        table.next_id += 1;
        let token = CancellationToken::new();
        table.entries.push(Entry {
            id,
            source,
            phase: Phase::Idle,
            ran: false,
            since: now,
            protected_until: if clean { now + self.shed_after } else { now },
            shed: token.clone(),
        });
        Ok((
            Slot {
                slots: self.clone(),
                id,
                shed: token,
            },
            shed,
        ))
    }

    /// Places held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        lock(&self.table).entries.len()
    }
}

impl Slot {
    /// Cancelled when a newcomer took this place.
    pub(crate) fn shed(&self) -> &CancellationToken {
        &self.shed
    }

    /// The test's streams are up: it may no longer be shed. False if it was shed already.
    pub(crate) fn run(&self) -> bool {
        self.set(Phase::Running, Instant::now())
    }

    /// The test's data phase is over (its results are being exchanged): idle again, protected
    /// for [`SHED_AFTER`] from now.
    pub(crate) fn idle(&self) {
        self.set(Phase::Idle, Instant::now());
    }

    fn set(&self, phase: Phase, now: Instant) -> bool {
        let shed_after = self.slots.shed_after;
        let mut table = lock(&self.slots.table);
        match table.entries.iter_mut().find(|e| e.id == self.id) {
            Some(e) => {
                e.phase = phase;
                e.ran |= phase == Phase::Running;
                e.since = now;
                e.protected_until = now + shed_after;
                true
            }
            None => false,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let now = Instant::now();
        let mut table = lock(&self.slots.table);
        if let Some(at) = table.entries.iter().position(|e| e.id == self.id) {
            let left = table.entries.swap_remove(at);
            if !left.ran {
                // Left before its data phase: a stall, a refusal of its parameters, a close.
                table.mark_bad(left.source, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn slots(total: usize, per_source: usize) -> Arc<Slots> {
        Slots::with_times(
            total,
            per_source,
            Duration::from_secs(2),
            Duration::from_secs(120),
        )
    }

    #[test]
    fn a_whole_24_stalling_and_hammering_leaves_room_for_another() {
        let slots = slots(8, 4);
        let t0 = Instant::now();
        let mut stalled: Vec<Slot> = Vec::new();
        // Every address of 127.0.0.2-255 tries, and tries again, every 100 ms for 3 s: the
        // first 8 take the places and stall, the others are refused each time.
        for step in 0..30 {
            let now = t0 + Duration::from_millis(100 * step);
            for last in 2..=255 {
                if let Ok((slot, shed)) = slots.admit_at(ip(last), now) {
                    assert_eq!(shed, None, "a refused address never sheds");
                    stalled.push(slot);
                }
            }
        }
        assert_eq!(stalled.len(), 8);
        let now = t0 + Duration::from_secs(3);
        let (newcomer, shed) = slots.admit_at(ip(1), now).expect("room is made");
        assert!(shed.is_some(), "an unprotected stalled test goes");
        assert_eq!(slots.held(), 8);
        // The shed address and every other one try again: none can shed the newcomer (which
        // is protected anyway) or anyone else.
        for last in 2..=255 {
            assert!(slots.admit_at(ip(last), now).is_err());
        }
        assert!(!newcomer.shed().is_cancelled());
        assert!(newcomer.run());
        // A second clean address still gets in, and a third.
        assert!(slots.admit_at(IpAddr::from([10, 0, 0, 1]), now).is_ok());
        assert!(slots.admit_at(IpAddr::from([10, 0, 0, 2]), now).is_ok());
    }

    #[test]
    fn running_and_protected_tests_are_never_shed() {
        let slots = slots(2, 2);
        let t0 = Instant::now();
        let (running, _) = slots.admit_at(ip(2), t0).unwrap();
        assert!(running.run());
        let (fresh, _) = slots.admit_at(ip(3), t0).unwrap();
        assert_eq!(slots.admit_at(ip(4), t0).unwrap_err(), Busy::Full);
        // .4 was refused: not clean, it cannot shed even an unprotected test ...
        let later = t0 + Duration::from_secs(5);
        assert_eq!(slots.admit_at(ip(4), later).unwrap_err(), Busy::Full);
        // ... but a clean source can, never the running test.
        let (_third, shed) = slots.admit_at(ip(5), later).unwrap();
        assert_eq!(shed, Some(Source::of(ip(3))));
        assert!(fresh.shed().is_cancelled());
        assert!(!fresh.run(), "a shed test cannot start");
        assert!(!running.shed().is_cancelled());
        // Unclean sources are clean again after BAD_FOR.
        drop(_third);
        let (_back, _) = slots.admit_at(ip(4), later).unwrap();
        assert!(
            slots
                .admit_at(ip(3), later + Duration::from_secs(121))
                .is_ok()
        );
    }

    #[test]
    fn an_unclean_source_s_tests_are_not_protected() {
        let slots = slots(1, 1);
        let t0 = Instant::now();
        // .2 leaves a test before it ran: unclean.
        drop(slots.admit_at(ip(2), t0).unwrap());
        let (again, _) = slots.admit_at(ip(2), t0).unwrap();
        let (_other, shed) = slots.admit_at(ip(3), t0).expect("unprotected at once");
        assert_eq!(shed, Some(Source::of(ip(2))));
        assert!(again.shed().is_cancelled());
    }

    #[test]
    fn a_source_keeps_its_share_and_the_heaviest_source_is_shed_first() {
        let slots = slots(4, 3);
        let t0 = Instant::now();
        let heavy: Vec<Slot> = (0..3)
            .map(|i| {
                slots
                    .admit_at(ip(2), t0 + Duration::from_millis(i))
                    .unwrap()
                    .0
            })
            .collect();
        let (light, _) = slots.admit_at(ip(3), t0).unwrap();
        assert_eq!(
            slots.admit_at(ip(2), t0).unwrap_err(),
            Busy::SourceFull,
            "a fourth from one address"
        );
        // The source holding three loses one (its oldest) before the source holding one does.
        let (_newcomer, shed) = slots.admit_at(ip(4), t0 + Duration::from_secs(3)).unwrap();
        assert_eq!(shed, Some(Source::of(ip(2))));
        assert!(heavy[0].shed().is_cancelled());
        assert!(!light.shed().is_cancelled());
        // A source holding one may not shed another's only test.
        drop(heavy);
        let later = t0 + Duration::from_secs(10);
        let (_a, _) = slots.admit_at(ip(5), later).unwrap();
        let (_b, _) = slots.admit_at(ip(6), later).unwrap();
        let (_c, _) = slots
            .admit_at(ip(7), later + Duration::from_secs(3))
            .unwrap();
        assert_eq!(
            slots
                .admit_at(ip(4), later + Duration::from_secs(9))
                .unwrap_err(),
            Busy::Full
        );
    }
}
