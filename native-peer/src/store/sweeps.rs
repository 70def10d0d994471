//! Packet-size sweeps in the result database: a sweep a browser started is kept whole when it
//! ends (the target, the spec each size ran and the `SweepResult`), under a 128-bit random id that
//! is also its share link (`/r/<id>`), which the token holder can turn off or delete like a
//! test's (`Store::set_link`, `Store::delete` cover both tables).

use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::sweep::SweepResult;
use rusqlite::{OptionalExtension, params};

use super::{HistoryEntry, KeptSweep, Store, StoreError, now_ms};

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
    pub fn sweep(&self, id: &str) -> Result<Option<KeptSweep>, StoreError> {
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

    fn decode(self) -> Result<KeptSweep, StoreError> {
        Ok(KeptSweep {
            id: self.id,
            created_ms: u64::try_from(self.created_ms).unwrap_or(0),
            peer: self.peer,
            spec: serde_json::from_str(&self.spec_json)?,
            result: serde_json::from_str(&self.result_json)?,
            link_enabled: self.link_enabled,
        })
    }
}
