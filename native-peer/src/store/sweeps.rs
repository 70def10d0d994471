//! Packet-size sweeps in the result database: a sweep a browser started is kept whole when it
//! ends (the target, the spec each size ran and the `SweepResult`), under a 128-bit random id that
//! is also its share link (`/r/<id>`), which the token holder can turn off or delete like a
//! test's (`Store::set_link`, `Store::delete` cover both tables).

use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::sweep::SweepResult;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, now_ms};

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

impl Store {
    /// Keeps a finished sweep; returns its new result id.
    pub fn save_sweep(
        &self,
        peer: &str,
        spec: &TestSpec,
        result: &SweepResult,
    ) -> Result<String, StoreError> {
        let id = crate::engine::wire::cookie_to_hex(&crate::engine::wire::random_cookie());
        self.conn().execute(
            "INSERT INTO sweeps (id, created_ms, peer, spec_json, result_json) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                id,
                now_ms() as i64,
                peer,
                serde_json::to_string(spec)?,
                serde_json::to_string(result)?
            ],
        )?;
        Ok(id)
    }

    /// The sweep with `id`, link on or off.
    pub fn sweep(&self, id: &str) -> Result<Option<StoredSweep>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT id, created_ms, peer, spec_json, result_json, link_enabled FROM sweeps WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, bool>(5)?,
                    ))
                },
            )
            .optional()?;
        let Some((id, created_ms, peer, spec, result, link_enabled)) = row else {
            return Ok(None);
        };
        Ok(Some(StoredSweep {
            id,
            created_ms: created_ms.max(0) as u64,
            peer,
            spec: serde_json::from_str(&spec)?,
            result: serde_json::from_str(&result)?,
            link_enabled,
        }))
    }
}
