//! The result history: every test this peer runs or serves, in SQLite (WAL mode) in the data
//! directory. A test is written when it begins (status `running`), each interval as it is
//! measured, and the whole result before it is announced; a test still `running` when the store
//! is next opened belonged to a peer that died, and becomes `aborted` with its intervals so far.
//!
//! - [`schema`]: numbered migrations.
//! - [`record`]: the recorder a running test writes through.
//! - [`sweeps`]: packet-size sweeps, kept whole with a share link of their own.

mod record;
pub mod schema;
mod sweeps;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use perfpeer_shared::report::{
    HostInfo, IntervalReport, PeerRole, SideReport, TestResult, TestStatus,
};
use perfpeer_shared::spec::TestSpec;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub use record::Recording;
pub use sweeps::StoredSweep;

/// Name of the database file in the data directory.
pub const FILE_NAME: &str = "results.db";

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite said no.
    #[error("result database: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored value did not read back.
    #[error("result database holds a malformed record: {0}")]
    Json(#[from] serde_json::Error),
    /// The file system said no.
    #[error("result database: {0}")]
    Io(#[from] std::io::Error),
}

/// Where a stored test came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `perfpeer test` on this machine.
    Cli,
    /// A browser's `run` on this peer.
    Browser,
    /// This peer was the far end (`perfpeer serve`).
    FarEnd,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Cli => "cli",
            Origin::Browser => "browser",
            Origin::FarEnd => "far_end",
        }
    }
}

/// One line of the history list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Result id (the share link's secret).
    pub id: String,
    /// `test`, or `sweep` (a packet-size sweep kept whole: `bytes` is its total and
    /// `bits_per_second` its best size's rate).
    #[serde(default = "test_kind")]
    pub kind: String,
    /// When it began, ms since the Unix epoch.
    pub created_ms: u64,
    /// cli, browser or far_end.
    pub origin: String,
    /// This peer's role.
    pub role: String,
    /// The other end.
    pub peer: String,
    /// tcp / udp.
    pub protocol: String,
    /// normal / reverse / bidir.
    pub direction: String,
    /// running, complete, cancelled, failed or aborted.
    pub status: String,
    /// Why it did not complete.
    pub reason: Option<String>,
    /// Bytes received (or sent, when nothing was received).
    pub bytes: Option<u64>,
    /// Throughput of that.
    pub bits_per_second: Option<f64>,
    /// Whether `/r/<id>` answers.
    pub link_enabled: bool,
}

/// A stored result with its history-list facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// The list facts.
    pub summary: Summary,
    /// The result, with both ends' intervals.
    pub result: TestResult,
}

/// Whatever is kept under a result id: a test or a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// A test.
    Test(Box<Stored>),
    /// A packet-size sweep.
    Sweep(Box<StoredSweep>),
}

/// The status word for a finished result.
pub fn status_word(status: &TestStatus) -> (&'static str, Option<String>) {
    match status {
        TestStatus::Complete => ("complete", None),
        TestStatus::Partial { reason } if reason == "cancelled" => {
            ("cancelled", Some(reason.clone()))
        }
        TestStatus::Partial { reason } => ("failed", Some(reason.clone())),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The result database.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Store {
    /// Opens (or creates) the database in `dir`. A file that is not a readable database is
    /// moved aside (kept, renamed `results.db.corrupt-<time>`) and a fresh one is started; the
    /// returned message says so. Tests left `running` by a peer that died become `aborted`.
    pub fn open(dir: &Path) -> Result<(Store, Option<String>), StoreError> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        match Store::open_file(&path) {
            Ok(store) => Ok((store, None)),
            Err(StoreError::Sql(e)) if is_corruption(&e) => {
                let aside = dir.join(format!("{FILE_NAME}.corrupt-{}", now_ms()));
                std::fs::rename(&path, &aside)?;
                for suffix in ["-wal", "-shm"] {
                    let _ = std::fs::rename(
                        dir.join(format!("{FILE_NAME}{suffix}")),
                        dir.join(format!("{}{suffix}", aside.display())),
                    );
                }
                let store = Store::open_file(&path)?;
                let msg = format!(
                    "{} is not a readable result database ({e}); kept it as {} and started a fresh one",
                    path.display(),
                    aside.display()
                );
                Ok((store, Some(msg)))
            }
            Err(e) => Err(e),
        }
    }

    fn open_file(path: &Path) -> Result<Store, StoreError> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let ok: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if ok != "ok" {
            return Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some(ok),
            )));
        }
        schema::migrate_to(&mut conn, schema::current_version())?;
        conn.execute("UPDATE results SET status = 'aborted', reason = 'the peer stopped during the test' WHERE status = 'running'", [])?;
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes a test that begins now and returns its new result id.
    pub fn begin(
        &self,
        test_id: &str,
        origin: Origin,
        role: PeerRole,
        peer: &str,
        spec: &TestSpec,
        host: &HostInfo,
    ) -> Result<String, StoreError> {
        let id = crate::engine::wire::cookie_to_hex(&crate::engine::wire::random_cookie());
        let role = role_word(role);
        let (protocol, direction) = (word(&spec.protocol), word(&spec.direction));
        self.conn().execute(
            "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'running')",
            params![id, test_id, now_ms() as i64, origin.as_str(), role, peer, protocol, direction, serde_json::to_string(spec)?, serde_json::to_string(host)?],
        )?;
        Ok(id)
    }

    /// Appends one interval of one end.
    pub fn append_interval(
        &self,
        id: &str,
        role: PeerRole,
        seq: u32,
        report: &IntervalReport,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO intervals (result_id, role, seq, report_json) VALUES (?1, ?2, ?3, ?4)",
            params![id, role_word(role), seq, serde_json::to_string(report)?],
        )?;
        Ok(())
    }

    /// Writes the finished result (its intervals are stored apart, so they are left out here).
    pub fn finish(&self, id: &str, result: &TestResult) -> Result<(), StoreError> {
        let (status, reason) = status_word(&result.status);
        let mut slim = result.clone();
        slim.local.intervals.clear();
        if let Some(r) = slim.remote.as_mut() {
            r.intervals.clear();
        }
        let (bytes, bps) = headline(result);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE results SET status = ?2, reason = ?3, bytes = ?4, bits_per_second = ?5, result_json = ?6, test_id = CASE WHEN ?7 = '' THEN test_id ELSE ?7 END WHERE id = ?1",
            params![id, status, reason, bytes.map(|b| b as i64), bps, serde_json::to_string(&slim)?, result.id],
        )?;
        // Intervals not written live (the short tail, the far end's) are added now.
        for side in [Some(&result.local), result.remote.as_ref()]
            .into_iter()
            .flatten()
        {
            for (seq, report) in side.intervals.iter().enumerate() {
                tx.execute(
                    "INSERT OR IGNORE INTO intervals (result_id, role, seq, report_json) VALUES (?1, ?2, ?3, ?4)",
                    params![id, role_word(side.role), seq as u32, serde_json::to_string(report)?],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks a test that ended without a result (its session failed).
    pub fn fail(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        self.conn().execute("UPDATE results SET status = 'failed', reason = ?2 WHERE id = ?1 AND status = 'running'", params![id, reason])?;
        Ok(())
    }

    /// The history (tests and kept sweeps), newest first (at most `limit`).
    pub fn list(&self, limit: u32) -> Result<Vec<Summary>, StoreError> {
        let mut rows: Vec<Summary> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(
                "SELECT id, created_ms, origin, role, peer, protocol, direction, status, reason, bytes, bits_per_second, link_enabled
                 FROM results ORDER BY created_ms DESC LIMIT ?1",
            )?;
            let rows = stmt.query_map([limit], summary_of)?;
            rows.collect::<Result<_, _>>()?
        };
        rows.extend(self.sweep_summaries(limit)?);
        rows.sort_by_key(|r| std::cmp::Reverse(r.created_ms));
        rows.truncate(limit as usize);
        Ok(rows)
    }

    /// One result with both ends' intervals.
    pub fn get(&self, id: &str) -> Result<Option<Stored>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT id, created_ms, origin, role, peer, protocol, direction, status, reason, bytes, bits_per_second, link_enabled,
                        spec_json, host_json, result_json, test_id FROM results WHERE id = ?1",
                [id],
                |r| Ok((summary_of(r)?, r.get::<_, String>(12)?, r.get::<_, String>(13)?, r.get::<_, Option<String>>(14)?, r.get::<_, String>(15)?)),
            )
            .optional()?;
        let Some((summary, spec_json, host_json, result_json, test_id)) = row else {
            return Ok(None);
        };
        let mut result: TestResult = match result_json {
            Some(json) => serde_json::from_str(&json)?,
            None => unfinished(
                &summary,
                &test_id,
                serde_json::from_str(&spec_json)?,
                serde_json::from_str(&host_json)?,
            ),
        };
        let mut stmt = conn.prepare(
            "SELECT role, report_json FROM intervals WHERE result_id = ?1 ORDER BY role, seq",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        for row in rows {
            let (role, json) = row?;
            let report: IntervalReport = serde_json::from_str(&json)?;
            if role == role_word(result.local.role) {
                result.local.intervals.push(report);
            } else if let Some(remote) = result.remote.as_mut() {
                remote.intervals.push(report);
            }
        }
        Ok(Some(Stored { summary, result }))
    }

    /// The test or sweep kept under `id`, link on or off.
    pub fn kept(&self, id: &str) -> Result<Option<Kept>, StoreError> {
        if let Some(found) = self.get(id)? {
            return Ok(Some(Kept::Test(Box::new(found))));
        }
        Ok(self.sweep(id)?.map(|s| Kept::Sweep(Box::new(s))))
    }

    /// Deletes a result (a test's or a sweep's); whether it existed.
    pub fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let conn = self.conn();
        let tests = conn.execute("DELETE FROM results WHERE id = ?1", [id])?;
        let sweeps = conn.execute("DELETE FROM sweeps WHERE id = ?1", [id])?;
        Ok(tests + sweeps > 0)
    }

    /// Turns a result's (a test's or a sweep's) share link on or off; whether it existed.
    pub fn set_link(&self, id: &str, enabled: bool) -> Result<bool, StoreError> {
        let conn = self.conn();
        let tests = conn.execute(
            "UPDATE results SET link_enabled = ?2 WHERE id = ?1",
            params![id, enabled],
        )?;
        let sweeps = conn.execute(
            "UPDATE sweeps SET link_enabled = ?2 WHERE id = ?1",
            params![id, enabled],
        )?;
        Ok(tests + sweeps > 0)
    }
}

fn role_word(role: PeerRole) -> &'static str {
    match role {
        PeerRole::Client => "client",
        PeerRole::Server => "server",
    }
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// A unit enum's serde name (`udp`, `normal`), as the tables store it.
fn word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn test_kind() -> String {
    "test".into()
}

fn summary_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Summary> {
    Ok(Summary {
        id: r.get(0)?,
        kind: test_kind(),
        created_ms: r.get::<_, i64>(1)? as u64,
        origin: r.get(2)?,
        role: r.get(3)?,
        peer: r.get(4)?,
        protocol: r.get(5)?,
        direction: r.get(6)?,
        status: r.get(7)?,
        reason: r.get(8)?,
        bytes: r.get::<_, Option<i64>>(9)?.map(|b| b as u64),
        bits_per_second: r.get(10)?,
        link_enabled: r.get(11)?,
    })
}

/// The result of a test that never finished: its spec and the intervals written so far.
fn unfinished(summary: &Summary, test_id: &str, spec: TestSpec, host: HostInfo) -> TestResult {
    let role = if summary.role == "server" {
        PeerRole::Server
    } else {
        PeerRole::Client
    };
    let local = SideReport::empty(role, host);
    TestResult {
        id: test_id.to_string(),
        spec,
        started_unix_ms: summary.created_ms,
        server_addr: summary.peer.clone(),
        local,
        remote: None,
        status: TestStatus::Partial {
            reason: summary
                .reason
                .clone()
                .unwrap_or_else(|| summary.status.clone()),
        },
    }
}

/// Bytes and throughput for the list: the first flow's receiver view, else its sender's.
fn headline(result: &TestResult) -> (Option<u64>, Option<f64>) {
    let flows = result.flows();
    let totals = flows.first().and_then(|f| f.received.or(f.sent));
    (totals.map(|t| t.bytes), totals.map(|t| t.bits_per_second))
}

#[cfg(test)]
mod tests;
