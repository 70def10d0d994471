//! Packet-size sweeps in the result database: a sweep a browser started is kept whole when it
//! ends (the target, the spec each size ran and the `SweepResult`), under a 128-bit random id that
//! is also its share link (`/r/<id>`), which the token holder can turn off or delete like a
//! test's (`Store::set_link`, `Store::delete` cover both tables).

use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::sweep::SweepResult;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{HistoryEntry, Origin, ResultKind, RunStatus, Store, StoreError, now_ms};
use perfpeer_shared::report::PeerRole;

/// A kept sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSweep {
    /// Result id (`/r/<id>`).
    pub id: String,
    /// When it was kept, Unix ms.
    pub created_ms: u64,
    /// The other peer, as given.
    pub peer: String,
    /// What each size ran (its `len` replaced by each size).
    pub spec: TestSpec,
    /// The rows.
    pub result: SweepResult,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
}

impl StoredSweep {
    /// Its page heading: the table's title line and the other peer.
    pub fn title(&self) -> String {
        let service = self.spec.dccp.map(|d| d.service);
        format!(
            "{} → {}",
            perfpeer_shared::format::sweep::title(&self.result, service),
            self.peer
        )
    }

    /// Its line in the history list: kind `sweep`, its total bytes and its best size's rate;
    /// `complete` when every size has figures, else `failed` saying how many did not.
    pub fn summary(&self) -> HistoryEntry {
        let points = &self.result.points;
        let failed = points.iter().filter(|p| p.error.is_some()).count();
        HistoryEntry {
            id: self.id.clone(),
            kind: ResultKind::Sweep,
            created_ms: self.created_ms,
            origin: Origin::Browser,
            role: PeerRole::Client,
            peer: self.peer.clone(),
            protocol: self.spec.protocol,
            direction: self.spec.direction,
            status: if failed == 0 {
                RunStatus::Complete
            } else {
                RunStatus::Failed
            },
            reason: (failed > 0).then(|| format!("{failed} of {} sizes failed", points.len())),
            bytes: Some(points.iter().map(|p| p.bytes).sum()),
            bits_per_second: points
                .iter()
                .filter(|p| p.error.is_none())
                .map(|p| p.bits_per_second)
                .reduce(f64::max),
            link_enabled: self.link_enabled,
        }
    }
}

impl Store {
    /// Keeps a finished sweep; returns its new result id.
    pub fn save_sweep(
        &self,
        peer: &str,
        spec: &TestSpec,
        result: &SweepResult,
    ) -> Result<String, StoreError> {
        let id = crate::util::random_id();
        self.conn().execute(
            "INSERT INTO sweeps (id, created_ms, peer, spec_json, result_json) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                id,
                super::sql_int(now_ms()),
                peer,
                serde_json::to_string(spec)?,
                serde_json::to_string(result)?
            ],
        )?;
        Ok(id)
    }

    /// The kept sweeps' history lines, newest first (at most `limit`).
    pub(super) fn sweep_summaries(&self, limit: u32) -> Result<Vec<HistoryEntry>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM sweeps ORDER BY created_ms DESC LIMIT ?1"
        ))?;
        let rows = stmt.query_map([limit], SweepRow::read)?;
        rows.map(|row| Ok(row?.decode()?.summary())).collect()
    }

    /// The sweep with `id`, link on or off.
    pub fn sweep(&self, id: &str) -> Result<Option<StoredSweep>, StoreError> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM sweeps WHERE id = ?1"),
                [id],
                SweepRow::read,
            )
            .optional()?;
        row.map(SweepRow::decode).transpose()
    }
}

/// The columns [`SweepRow::read`] reads, in order.
const COLUMNS: &str = "id, created_ms, peer, spec_json, result_json, link_enabled";

/// A `sweeps` row as SQLite gives it, its JSON not yet decoded.
struct SweepRow {
    id: String,
    created_ms: i64,
    peer: String,
    spec_json: String,
    result_json: String,
    link_enabled: bool,
}

impl SweepRow {
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<SweepRow> {
        Ok(SweepRow {
            id: r.get(0)?,
            created_ms: r.get(1)?,
            peer: r.get(2)?,
            spec_json: r.get(3)?,
            result_json: r.get(4)?,
            link_enabled: r.get(5)?,
        })
    }

    fn decode(self) -> Result<StoredSweep, StoreError> {
        Ok(StoredSweep {
            id: self.id,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            peer: self.peer,
            spec: serde_json::from_str(&self.spec_json)?,
            result: serde_json::from_str(&self.result_json)?,
            link_enabled: self.link_enabled,
        })
    }
}
