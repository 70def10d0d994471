//! Runs kept whole in the result database: a packet-size sweep a browser started (the target,
//! the spec each size ran and the `SweepResult`), a latency-under-load run (the target, its
//! `LatencyRequest` and the `LatencyResult`) and a regression plan's run (its peers, its cases
//! and the `PlanResult`), each when it ends, in one table told apart by its
//! `kind`, under a 128-bit random id that is also its share link (`/r/<id>`), which the token
//! holder can turn off or delete like a test's (`Store::set_link`, `Store::delete` cover both
//! tables). A sweep or latency run this peer served as the far end of an anonymous client is
//! kept here too (origin `far_end`, with the client's source), within the far end's share of
//! the history like that client's tests.

use perfpeer_shared::history::KeptLatency;
#[cfg(feature = "plans")]
use perfpeer_shared::history::KeptPlan;
use perfpeer_shared::latency::{LatencyRequest, LatencyResult};
use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::sweep::SweepResult;
use rusqlite::{OptionalExtension, params};

use super::{HistoryEntry, KeptSweep, Origin, Store, StoreError, now_ms};
use crate::admission::Source;
use perfpeer_shared::history::from_word;

const SWEEP: &str = "sweep";
const LATENCY: &str = "latency";
#[cfg(feature = "plans")]
const PLAN: &str = "plan";
/// The kinds a build lists: one without plans cannot read a plan run (kept by a PC build
/// sharing the directory), so it leaves them out rather than fail the list.
#[cfg(feature = "plans")]
const LISTED_KINDS: &str = "1 = 1";
#[cfg(not(feature = "plans"))]
const LISTED_KINDS: &str = "kind != 'plan'";

/// A run this peer served as the far end, as it keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Served {
    /// A sweep: the spec its sizes ran (the first one's `len`) and its rows.
    Sweep(TestSpec, SweepResult),
    /// A latency run: the request its tests tell, and its load.
    Latency(LatencyRequest, LatencyResult),
}

impl Store {
    /// Keeps a finished sweep; returns its new result id.
    pub(crate) fn save_sweep(
        &self,
        peer: &str,
        spec: &TestSpec,
        result: &SweepResult,
    ) -> Result<String, StoreError> {
        self.save_whole(
            SWEEP,
            (Origin::Browser, None),
            peer,
            serde_json::to_string(spec)?,
            serde_json::to_string(result)?,
        )
    }

    /// Keeps a run this peer served as the far end of `peer`, an anonymous client from
    /// `source`; returns its new result id.
    pub(crate) fn save_served(
        &self,
        source: Source,
        peer: &str,
        run: &Served,
    ) -> Result<String, StoreError> {
        let (kind, spec_json, result_json) = match run {
            Served::Sweep(spec, result) => (
                SWEEP,
                serde_json::to_string(spec)?,
                serde_json::to_string(result)?,
            ),
            Served::Latency(request, result) => (
                LATENCY,
                serde_json::to_string(request)?,
                serde_json::to_string(result)?,
            ),
        };
        self.save_whole(
            kind,
            (Origin::FarEnd, Some(source)),
            peer,
            spec_json,
            result_json,
        )
    }

    /// Keeps a finished latency-under-load run started by `origin`; returns its new result id.
    pub(crate) fn save_latency(
        &self,
        origin: Origin,
        peer: &str,
        request: &LatencyRequest,
        result: &LatencyResult,
    ) -> Result<String, StoreError> {
        self.save_whole(
            LATENCY,
            (origin, None),
            peer,
            serde_json::to_string(request)?,
            serde_json::to_string(result)?,
        )
    }

    /// Keeps a finished (or stopped) plan run started by `origin` against `peers`; returns
    /// its new result id. Its spec column keeps the cases as planned. (Plans run on PC builds;
    /// every build reads them.)
    #[cfg(feature = "plans")]
    pub(crate) fn save_plan(
        &self,
        origin: Origin,
        peers: &str,
        result: &perfpeer_shared::plan::PlanResult,
    ) -> Result<String, StoreError> {
        let cases: Vec<&perfpeer_shared::plan::PlanCase> =
            result.cases.iter().map(|c| &c.case).collect();
        self.save_whole(
            PLAN,
            (origin, None),
            peers,
            serde_json::to_string(&cases)?,
            serde_json::to_string(result)?,
        )
    }

    /// Writes a run kept whole, started by `origin` (with the anonymous client's source, for a
    /// run this peer served), then prunes to the retention.
    fn save_whole(
        &self,
        kind: &str,
        (origin, source): (Origin, Option<Source>),
        peer: &str,
        spec_json: String,
        result_json: String,
    ) -> Result<String, StoreError> {
        let id = crate::util::random_id();
        let bytes = spec_json.len() + result_json.len() + peer.len();
        let inserted = self.conn().execute(
            "INSERT INTO sweeps (id, created_ms, peer, spec_json, result_json, kind, origin, source, kept_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![id, super::sql_int(now_ms()), peer, spec_json, result_json, kind, origin.word(), source.map(|s| s.to_string()), super::sql_int(bytes as u64)],
        );
        self.noted(inserted.map_err(StoreError::from))?;
        // Kept whatever pruning meets (it is said in the peer's store problem).
        let _ = self.noted(self.prune());
        Ok(id)
    }

    /// The kept runs' history lines (sweeps and latency runs), newest first (at most `limit`).
    pub(super) fn sweep_summaries(&self, limit: u32) -> Result<Vec<HistoryEntry>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM sweeps WHERE {LISTED_KINDS} ORDER BY created_ms DESC LIMIT ?1"
        ))?;
        let rows = stmt.query_map([limit], WholeRow::read)?;
        rows.map(|row| {
            let row = row?;
            Ok(match row.kind.as_str() {
                LATENCY => row.latency()?.summary(),
                #[cfg(feature = "plans")]
                PLAN => row.plan()?.summary(),
                _ => row.sweep()?.summary(),
            })
        })
        .collect()
    }

    /// The sweep with `id`, link on or off.
    pub(crate) fn sweep(&self, id: &str) -> Result<Option<KeptSweep>, StoreError> {
        self.whole(id, SWEEP)?.map(WholeRow::sweep).transpose()
    }

    /// The latency-under-load run with `id`, link on or off.
    pub(crate) fn latency(&self, id: &str) -> Result<Option<KeptLatency>, StoreError> {
        self.whole(id, LATENCY)?.map(WholeRow::latency).transpose()
    }

    /// The plan run with `id`, link on or off.
    #[cfg(feature = "plans")]
    pub(crate) fn plan(&self, id: &str) -> Result<Option<KeptPlan>, StoreError> {
        self.whole(id, PLAN)?.map(WholeRow::plan).transpose()
    }

    /// The newest complete run of the plan named `name` (a nightly run's baseline: last
    /// night's), if one is kept. Newest first, each row's name and status read until one
    /// matches (this build's SQLite has no JSON functions).
    #[cfg(feature = "plans")]
    pub(crate) fn latest_plan(&self, name: &str) -> Result<Option<KeptPlan>, StoreError> {
        /// What a kept run is matched by.
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
            status: perfpeer_shared::plan::PlanStatus,
        }
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM sweeps WHERE kind = ?1 ORDER BY created_ms DESC, rowid DESC"
        ))?;
        for row in stmt.query_map([PLAN], WholeRow::read)? {
            let row = row?;
            let matches = serde_json::from_str::<Named>(&row.result_json).is_ok_and(|n| {
                n.name == name && n.status == perfpeer_shared::plan::PlanStatus::Complete
            });
            if matches {
                return row.plan().map(Some);
            }
        }
        Ok(None)
    }

    fn whole(&self, id: &str, kind: &str) -> Result<Option<WholeRow>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM sweeps WHERE id = ?1 AND kind = ?2"),
                [id, kind],
                WholeRow::read,
            )
            .optional()?)
    }
}

/// The columns [`WholeRow::read`] reads, in order.
const COLUMNS: &str =
    "id, created_ms, peer, spec_json, result_json, link_enabled, kind, origin, notes_json";

/// A `sweeps` row as SQLite gives it, its JSON not yet decoded.
struct WholeRow {
    id: String,
    created_ms: i64,
    peer: String,
    spec_json: String,
    result_json: String,
    link_enabled: bool,
    kind: String,
    origin: String,
    notes_json: Option<String>,
}

impl WholeRow {
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<WholeRow> {
        Ok(WholeRow {
            id: r.get(0)?,
            created_ms: r.get(1)?,
            peer: r.get(2)?,
            spec_json: r.get(3)?,
            result_json: r.get(4)?,
            link_enabled: r.get(5)?,
            kind: r.get(6)?,
            origin: r.get(7)?,
            notes_json: r.get(8)?,
        })
    }

    fn sweep(self) -> Result<KeptSweep, StoreError> {
        Ok(KeptSweep {
            id: self.id,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            peer: self.peer,
            spec: serde_json::from_str(&self.spec_json)?,
            result: serde_json::from_str(&self.result_json)?,
            link_enabled: self.link_enabled,
            origin: from_word(&self.origin).unwrap_or(Origin::Browser),
            notes: super::notes_of(self.notes_json),
        })
    }

    #[cfg(feature = "plans")]
    fn plan(self) -> Result<KeptPlan, StoreError> {
        Ok(KeptPlan {
            id: self.id,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            peer: self.peer,
            result: serde_json::from_str(&self.result_json)?,
            link_enabled: self.link_enabled,
            origin: from_word(&self.origin).unwrap_or(Origin::Cli),
            notes: super::notes_of(self.notes_json),
        })
    }

    fn latency(self) -> Result<KeptLatency, StoreError> {
        Ok(KeptLatency {
            id: self.id,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            peer: self.peer,
            request: serde_json::from_str(&self.spec_json)?,
            result: serde_json::from_str(&self.result_json)?,
            link_enabled: self.link_enabled,
            origin: from_word(&self.origin).unwrap_or(Origin::Browser),
            notes: super::notes_of(self.notes_json),
        })
    }
}
