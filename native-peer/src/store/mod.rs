//! The result history: every test this peer runs or serves, in SQLite (WAL mode) in the data
//! directory. A test is written when it begins (status `running`), each interval as it is
//! measured, and the whole result before it is announced; a test still `running` when the store
//! is next opened belonged to a peer that died, and becomes `aborted` with its intervals so far.
//!
//! - [`schema`]: numbered migrations.
//! - [`owner`]: which process writes a running test, so only a dead writer's rows are aborted.
//! - [`plausible`]: a far side's report checked (and its free text cut) before it is kept.
//! - [`retention`]: the budgets, and the far end's share of them that anonymous clients'
//!   results are pruned within, so they never evict the owner's.
//!
//! The database is the owner's alone (0600, in a 0700 directory it creates), bounded by a
//! [`Retention`] (oldest results pruned first, never a running one), opened read-only where
//! the directory cannot be written, and the last write failure (a full disk) is kept for
//! `/api/info` to show.
//! - [`record`]: the recorder a running test writes through.
//! - `outbox` and `lab` (feature `postgres`): a lab's shared PostgreSQL store
//!   (`--store postgres://…`) that this store's results are copied to, and read back from.
//! - [`sweeps`]: packet-size sweeps and latency-under-load runs, kept whole with a share link
//!   of their own (those this peer served as the far end among them, within the far end's
//!   share).

#[cfg(feature = "postgres")]
pub(crate) mod lab;
#[cfg(feature = "postgres")]
mod outbox;
mod owner;
mod plausible;
mod record;
mod retention;
pub(crate) mod schema;
mod sweeps;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use portable_atomic::{AtomicU64, Ordering};

use perfpeer_shared::history::{Notes, OpenedResult};
use perfpeer_shared::report::{
    HostInfo, IntervalReport, PeerRole, SideReport, TestResult, TestStatus,
};
use perfpeer_shared::spec::TestSpec;
use perfpeer_shared::wifi::LinkBrief;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub(crate) use record::Recording;
pub(crate) use retention::Retention;
pub(crate) use sweeps::Served;

/// Name of the database file in the data directory.
pub(crate) const FILE_NAME: &str = "results.db";

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StoreError {
    /// SQLite said no.
    #[error("result database: {0}")]
    Sql(rusqlite::Error),
    /// The file system holding the database has no room left (SQLITE_FULL, ENOSPC).
    #[error("disk full: the result database cannot grow ({0})")]
    DiskFull(String),
    /// A stored value did not read back.
    #[error("result database holds a malformed record: {0}")]
    Json(#[from] serde_json::Error),
    /// The file system said no.
    #[error("result database: {0}")]
    Io(std::io::Error),
}

impl From<rusqlite::Error> for StoreError {
    /// SQLITE_FULL is said as a full disk; the rest as SQLite says it.
    fn from(e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull(e.to_string()),
            _ => StoreError::Sql(e),
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> StoreError {
        match e.kind() {
            std::io::ErrorKind::StorageFull => StoreError::DiskFull(e.to_string()),
            _ => StoreError::Io(e),
        }
    }
}

pub(crate) use perfpeer_shared::history::{
    HistoryEntry, KeptLatency, KeptSweep, Origin, ResultKind, RunStatus,
};

/// A count or a time in ms as SQLite's integer (i64), saturating: no figure kept here comes
/// near 2^63.
pub(crate) fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A stored result with its history-list facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The list facts.
    pub summary: HistoryEntry,
    /// The result, with both ends' intervals.
    pub result: TestResult,
}

/// Whatever is kept under a result id: a test or a sweep.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kept {
    /// A test.
    Test(Box<Stored>),
    /// A packet-size sweep.
    Sweep(Box<KeptSweep>),
    /// A latency-under-load run.
    Latency(Box<KeptLatency>),
    /// A regression plan's run.
    #[cfg(feature = "plans")]
    Plan(Box<perfpeer_shared::history::KeptPlan>),
}

impl Kept {
    /// Its history line.
    pub(crate) fn summary(&self) -> HistoryEntry {
        match self {
            Kept::Test(found) => found.summary.clone(),
            Kept::Sweep(sweep) => sweep.summary(),
            Kept::Latency(run) => run.summary(),
            #[cfg(feature = "plans")]
            Kept::Plan(run) => run.summary(),
        }
    }

    /// As the token holder opens it (`GET /api/results/<id>`), and as a lab store keeps it.
    pub(crate) fn opened(self) -> OpenedResult {
        let summary = self.summary();
        let mut opened = OpenedResult {
            summary,
            result: None,
            sweep: None,
            latency: None,
            #[cfg(feature = "plans")]
            plan: None,
        };
        match self {
            Kept::Test(found) => opened.result = Some(found.result),
            Kept::Sweep(sweep) => opened.sweep = Some(*sweep),
            Kept::Latency(run) => opened.latency = Some(*run),
            #[cfg(feature = "plans")]
            Kept::Plan(run) => opened.plan = Some(*run),
        }
        opened
    }

    /// Back from [`Kept::opened`]; `None` for a kind this build does not read (a plan run in
    /// a build without plans) or an empty one.
    #[cfg(feature = "postgres")]
    pub(crate) fn from_opened(opened: OpenedResult) -> Option<Kept> {
        let OpenedResult {
            summary,
            result,
            sweep,
            latency,
            #[cfg(feature = "plans")]
            plan,
        } = opened;
        #[cfg(feature = "plans")]
        if let Some(run) = plan {
            return Some(Kept::Plan(Box::new(run)));
        }
        if let Some(result) = result {
            return Some(Kept::Test(Box::new(Stored { summary, result })));
        }
        if let Some(sweep) = sweep {
            return Some(Kept::Sweep(Box::new(sweep)));
        }
        latency.map(|run| Kept::Latency(Box::new(run)))
    }
}

/// Results asked of a history list (`GET /api/results`'s query, `perfpeer results list`'s
/// flags): a peer's, a tag's, a time span's, one page (newest first, ties by id) after a
/// cursor. (PC builds: a DUT build lists its newest 500.)
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListQuery {
    /// Kept by a peer whose `--peer-name` holds this, or run against a far end whose address
    /// or name holds it (any case).
    pub peer: Option<String>,
    /// Carrying this tag.
    pub tag: Option<String>,
    /// Begun at or after this time (ms since the Unix epoch).
    pub since_ms: Option<u64>,
    /// Begun before this time.
    pub until_ms: Option<u64>,
    /// After this line of the previous page: its `created_ms` and id.
    pub before: Option<(u64, String)>,
    /// Lines in the page (see [`ListQuery::limit`]).
    pub limit: Option<u32>,
}

#[cfg(feature = "postgres")]
impl ListQuery {
    /// Lines in a page at most.
    pub(crate) const MAX_LIMIT: u32 = 500;

    /// Lines in this page: as asked, within 1..=[`ListQuery::MAX_LIMIT`] (that by default).
    pub(crate) fn limit(&self) -> u32 {
        self.limit
            .unwrap_or(Self::MAX_LIMIT)
            .clamp(1, Self::MAX_LIMIT)
    }

    /// Reads a cursor made by [`HistoryEntry::cursor_after`].
    pub(crate) fn parse_cursor(cursor: &str) -> Option<(u64, String)> {
        let (ms, id) = cursor.split_once('_')?;
        let valid = id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric());
        valid.then(|| Some((ms.parse().ok()?, id.to_string())))?
    }

    /// Whether `line`, kept by `kept_by`, is one this query asks for (the page's limit aside).
    pub(crate) fn matches(&self, line: &HistoryEntry, kept_by: &str) -> bool {
        self.peer.as_deref().is_none_or(|p| {
            let p = p.to_lowercase();
            kept_by.to_lowercase().contains(&p) || line.peer.to_lowercase().contains(&p)
        }) && self
            .tag
            .as_ref()
            .is_none_or(|t| line.notes.tags.contains(t))
            && self.since_ms.is_none_or(|s| line.created_ms >= s)
            && self.until_ms.is_none_or(|u| line.created_ms < u)
            && self
                .before
                .as_ref()
                .is_none_or(|(ms, id)| (line.created_ms, line.id.as_str()) < (*ms, id.as_str()))
    }
}

/// Where a finished result stands in the history, and why it did not complete.
pub(crate) fn run_status(status: &TestStatus) -> (RunStatus, Option<String>) {
    match status {
        TestStatus::Complete => (RunStatus::Complete, None),
        TestStatus::Cancelled => (RunStatus::Cancelled, Some("cancelled".into())),
        TestStatus::Partial { reason } => (RunStatus::Failed, Some(reason.clone())),
    }
}

use crate::util::unix_ms_now as now_ms;

/// A test's row as it begins (what [`Store::begin`] writes).
#[derive(Debug, Clone)]
pub(crate) struct NewTest {
    /// The test's id (the session's).
    pub test_id: String,
    /// Who started it.
    pub origin: Origin,
    /// This peer's end of it.
    pub role: PeerRole,
    /// The other end.
    pub peer: String,
    /// What runs.
    pub spec: TestSpec,
    /// The anonymous client's source, for a test this peer serves as its far end: its results
    /// are kept within that source's share.
    pub source: Option<crate::admission::Source>,
}

/// Interval JSON kept per test and side; a longer test keeps its first part (and its result).
pub(crate) const MAX_INTERVAL_BYTES: usize = 8 << 20;

/// The result database.
pub(crate) struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    retention: Retention,
    read_only: bool,
    last_error: Mutex<Option<String>>,
    /// Writes that failed (a full disk, a read-only directory, a broken database).
    write_failures: AtomicU64,
    /// The thread every write from async code runs on.
    writer: writer::Writer,
    /// Whether changes are queued for a lab store (see `outbox`).
    #[cfg(feature = "postgres")]
    outbox_on: std::sync::atomic::AtomicBool,
    /// The lab store this process writes its results to, once attached.
    #[cfg(feature = "postgres")]
    lab: std::sync::OnceLock<std::sync::Arc<lab::LabStore>>,
}

impl Store {
    /// Opens (or creates) the database in `dir`. A file that is not a readable database is
    /// moved aside (kept, renamed `results.db.corrupt-<time>`) and a fresh one is started; the
    /// returned message says so. Tests left `running` by a peer that died become `aborted`.
    pub(crate) fn open(dir: &Path) -> Result<(Store, Option<String>), StoreError> {
        create_private_dir(dir)?;
        let path = dir.join(FILE_NAME);
        match Store::open_file(&path) {
            Ok(store) => Ok((store, None)),
            // A directory (or file system) we may read but not write: history stays readable.
            Err(e) if is_read_only(&e) && path.exists() => {
                let store = Store::open_read_only(&path)?;
                let msg = format!(
                    "{} cannot be written ({e}): history is readable, new results are not kept",
                    path.display()
                );
                *store.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(msg.clone());
                Ok((store, Some(msg)))
            }
            Err(e) => Store::open_after_corruption(dir, &path, e),
        }
    }

    /// A file that is not a readable database is kept aside and a fresh one started.
    fn open_after_corruption(
        dir: &Path,
        path: &Path,
        e: StoreError,
    ) -> Result<(Store, Option<String>), StoreError> {
        match e {
            StoreError::Sql(e) if is_corruption(&e) => {
                let aside = dir.join(format!("{FILE_NAME}.corrupt-{}", now_ms()));
                std::fs::rename(path, &aside)?;
                for suffix in ["-wal", "-shm"] {
                    let _ = std::fs::rename(
                        dir.join(format!("{FILE_NAME}{suffix}")),
                        dir.join(format!("{}{suffix}", aside.display())),
                    );
                }
                let store = Store::open_file(path)?;
                let msg = format!(
                    "{} is not a readable result database ({e}); kept it as {} and started a fresh one",
                    path.display(),
                    aside.display()
                );
                Ok((store, Some(msg)))
            }
            e => Err(e),
        }
    }

    fn open_file(path: &Path) -> Result<Store, StoreError> {
        create_private_file(path)?;
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
        abort_orphans(&conn)?;
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            retention: Retention::default(),
            read_only: false,
            last_error: Mutex::new(None),
            write_failures: AtomicU64::new(0),
            writer: writer::Writer::start(),
            #[cfg(feature = "postgres")]
            outbox_on: std::sync::atomic::AtomicBool::new(false),
            #[cfg(feature = "postgres")]
            lab: std::sync::OnceLock::new(),
        })
    }

    /// Opens a database this process may only read. SQLite reads a WAL database read-only
    /// when its -wal and -shm files are there (a peer that was killed left them); a database
    /// without them is read as immutable.
    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let plain = Connection::open_with_flags(path, flags).and_then(|c| {
            c.query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
                .map(|_| c)
        });
        let conn = match plain {
            Ok(c) => c,
            Err(_) => {
                Connection::open_with_flags(format!("file:{}?immutable=1", path.display()), flags)?
            }
        };
        let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > schema::current_version() {
            return Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                Some("a newer perfpeer's database".into()),
            )));
        }
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            retention: Retention::default(),
            read_only: true,
            last_error: Mutex::new(None),
            write_failures: AtomicU64::new(0),
            writer: writer::Writer::start(),
            #[cfg(feature = "postgres")]
            outbox_on: std::sync::atomic::AtomicBool::new(false),
            #[cfg(feature = "postgres")]
            lab: std::sync::OnceLock::new(),
        })
    }

    /// Keeps no more than `retention` from now on (and prunes to it now).
    pub(crate) fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
        if !self.read_only {
            let _ = self.prune();
        }
    }

    /// The last write that failed (a full disk, a read-only directory), until one succeeds.
    pub(crate) fn problem(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records the outcome of a write, for [`Store::problem`].
    fn noted<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        match &r {
            Ok(_) if !self.read_only => *last = None,
            Ok(_) => {}
            Err(e) => {
                self.write_failures.fetch_add(1, Ordering::Relaxed);
                *last = Some(format!("results are not being kept: {e}"));
            }
        }
        r
    }

    /// Writes that failed since the store was opened (for `/metrics`).
    pub(crate) fn write_failures(&self) -> u64 {
        self.write_failures.load(Ordering::Relaxed)
    }

    /// Whether results can be written here (not a read-only database).
    pub(crate) fn writable(&self) -> bool {
        !self.read_only
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes a test that begins now under the result id `id` (a new [`crate::util::random_id`]).
    pub(crate) fn begin(
        &self,
        id: &str,
        test: &NewTest,
        host: &HostInfo,
    ) -> Result<(), StoreError> {
        let role = test.role.word();
        let spec = &test.spec;
        let (protocol, direction) = (spec.protocol.word(), spec.direction.word());
        let source = test.source.map(|s| s.to_string());
        let inserted = self.conn().execute(
            "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status, owner, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'running', ?11, ?12)",
            params![id, test.test_id, sql_int(now_ms()), test.origin.word(), role, test.peer, protocol, direction, serde_json::to_string(spec)?, serde_json::to_string(host)?, owner::this_process(), source],
        );
        self.noted(inserted.map_err(StoreError::from)).map(|_| ())
    }

    /// Appends one interval of one end, already as its JSON.
    pub(crate) fn append_interval_json(
        &self,
        id: &str,
        role: PeerRole,
        seq: u32,
        json: &str,
    ) -> Result<(), StoreError> {
        let written = self.conn().execute(
            "INSERT OR REPLACE INTO intervals (result_id, role, seq, report_json) VALUES (?1, ?2, ?3, ?4)",
            params![id, role.word(), seq, json],
        );
        self.noted(written.map_err(StoreError::from)).map(|_| ())
    }

    /// Writes the finished result (its intervals are stored apart, so they are left out here).
    pub(crate) fn finish(&self, id: &str, result: &TestResult) -> Result<(), StoreError> {
        let checked = checked_remote(result);
        let written = self.write_finished(id, &checked);
        self.noted(written)?;
        self.noted(self.prune())
    }

    fn write_finished(&self, id: &str, result: &TestResult) -> Result<(), StoreError> {
        let (status, reason) = run_status(&result.status);
        let status = status.word();
        let mut slim = result.clone();
        slim.local.intervals.clear();
        if let Some(r) = slim.remote.as_mut() {
            r.intervals.clear();
        }
        let (bytes, bps) = headline(result);
        let link = LinkBrief::of(result)
            .map(|b| serde_json::to_string(&b))
            .transpose()?;
        let verdict = result.verdict().map(|v| outcome_word(v.outcome));
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        // A far end learns its client's name from the client's final report: the row's peer
        // becomes it then (a client's row keeps the target it was given).
        let peer = (result.local.role == PeerRole::Server).then_some(result.server_addr.as_str());
        tx.execute(
            "UPDATE results SET status = ?2, reason = ?3, bytes = ?4, bits_per_second = ?5, result_json = ?6, test_id = CASE WHEN ?7 = '' THEN test_id ELSE ?7 END, peer = COALESCE(?8, peer), link_json = ?9, verdict = ?10 WHERE id = ?1",
            params![id, status, reason, bytes.map(sql_int), bps, serde_json::to_string(&slim)?, result.id, peer, link, verdict],
        )?;
        // Intervals not written live (the short tail, the far end's) are added now.
        for side in [Some(&result.local), result.remote.as_ref()]
            .into_iter()
            .flatten()
        {
            let mut budget = MAX_INTERVAL_BYTES;
            for (seq, report) in side.intervals.iter().enumerate() {
                let json = serde_json::to_string(report)?;
                budget = match budget.checked_sub(json.len()) {
                    Some(left) => left,
                    None => break,
                };
                tx.execute(
                    "INSERT OR IGNORE INTO intervals (result_id, role, seq, report_json) VALUES (?1, ?2, ?3, ?4)",
                    params![id, side.role.word(), sql_int(seq as u64), json],
                )?;
            }
        }
        tx.execute(
            &format!(
                "UPDATE results SET kept_bytes = {} WHERE id = ?1",
                retention::ROW_BYTES
            ),
            [id],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Marks a test that ended without a result (its session failed).
    pub(crate) fn fail(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        self.conn().execute("UPDATE results SET status = 'failed', reason = ?2 WHERE id = ?1 AND status = 'running'", params![id, reason])?;
        Ok(())
    }

    /// The history (tests and kept sweeps), newest first (at most `limit`).
    pub(crate) fn list(&self, limit: u32) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut rows: Vec<HistoryEntry> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(
                "SELECT id, created_ms, origin, role, peer, protocol, direction, status, reason, bytes, bits_per_second, link_enabled,
                        notes_json, link_json, verdict FROM results ORDER BY created_ms DESC LIMIT ?1",
            )?;
            let rows = stmt.query_map([limit], summary_of)?;
            rows.collect::<Result<_, _>>()?
        };
        rows.extend(self.sweep_summaries(limit)?);
        rows.sort_by_key(|r| std::cmp::Reverse(r.created_ms));
        rows.truncate(limit as usize);
        Ok(rows)
    }

    /// The history lines `query` asks for, as [`ListQuery::matches`] reads them (this store's
    /// lines are all `kept_by`'s), newest first, ties by id.
    #[cfg(feature = "postgres")]
    pub(crate) fn list_matching(
        &self,
        query: &ListQuery,
        kept_by: &str,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut rows: Vec<HistoryEntry> = self
            .list(u32::MAX)?
            .into_iter()
            .filter(|line| query.matches(line, kept_by))
            .collect();
        rows.sort_by(|a, b| (b.created_ms, &b.id).cmp(&(a.created_ms, &a.id)));
        rows.truncate(query.limit() as usize);
        Ok(rows)
    }

    /// The lab store this process writes to, if one is attached.
    #[cfg(feature = "postgres")]
    pub(crate) fn lab(&self) -> Option<&std::sync::Arc<lab::LabStore>> {
        self.lab.get()
    }

    /// Attaches the lab store: every result kept or changed from now on is queued for it.
    #[cfg(feature = "postgres")]
    pub(crate) fn attach_lab(&self, lab: std::sync::Arc<lab::LabStore>) -> Result<(), StoreError> {
        self.start_outbox()?;
        let _ = self.lab.set(lab);
        Ok(())
    }

    /// One result with both ends' intervals.
    pub(crate) fn get(&self, id: &str) -> Result<Option<Stored>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT id, created_ms, origin, role, peer, protocol, direction, status, reason, bytes, bits_per_second, link_enabled,
                        notes_json, link_json, verdict, spec_json, host_json, result_json, test_id FROM results WHERE id = ?1",
                [id],
                |r| Ok((summary_of(r)?, r.get::<_, String>(15)?, r.get::<_, String>(16)?, r.get::<_, Option<String>>(17)?, r.get::<_, String>(18)?)),
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
            if role == result.local.role.word() {
                result.local.intervals.push(report);
            } else if let Some(remote) = result.remote.as_mut() {
                remote.intervals.push(report);
            }
        }
        Ok(Some(Stored { summary, result }))
    }

    /// The test or sweep kept under `id`, link on or off.
    pub(crate) fn kept(&self, id: &str) -> Result<Option<Kept>, StoreError> {
        if let Some(found) = self.get(id)? {
            return Ok(Some(Kept::Test(Box::new(found))));
        }
        if let Some(sweep) = self.sweep(id)? {
            return Ok(Some(Kept::Sweep(Box::new(sweep))));
        }
        #[cfg(feature = "plans")]
        if let Some(plan) = self.plan(id)? {
            return Ok(Some(Kept::Plan(Box::new(plan))));
        }
        Ok(self.latency(id)?.map(|l| Kept::Latency(Box::new(l))))
    }

    /// Deletes a result (a test's or a sweep's); whether it existed.
    pub(crate) fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let conn = self.conn();
        let tests = conn.execute("DELETE FROM results WHERE id = ?1", [id])?;
        let sweeps = conn.execute("DELETE FROM sweeps WHERE id = ?1", [id])?;
        drop(conn);
        #[cfg(feature = "postgres")]
        if tests + sweeps > 0 {
            self.queue_deletion(id)?;
        }
        Ok(tests + sweeps > 0)
    }

    /// Writes the token holder's notes on a kept result (any kind; empty notes clear them);
    /// whether it existed. The notes must have passed [`Notes::checked`].
    pub(crate) fn set_notes(&self, id: &str, notes: &Notes) -> Result<bool, StoreError> {
        let json = (!notes.is_empty())
            .then(|| serde_json::to_string(notes))
            .transpose()?;
        self.set_column(id, "notes_json", json)
    }

    /// Sets one column of a kept result, whichever table holds it; whether it existed.
    fn set_column(
        &self,
        id: &str,
        column: &str,
        value: impl rusqlite::ToSql,
    ) -> Result<bool, StoreError> {
        let conn = self.conn();
        let mut changed = 0;
        for table in ["results", "sweeps"] {
            changed += conn.execute(
                &format!("UPDATE {table} SET {column} = ?2 WHERE id = ?1"),
                params![id, value],
            )?;
        }
        Ok(changed > 0)
    }

    /// Turns a result's (a test's or a sweep's) share link on or off; whether it existed.
    pub(crate) fn set_link(&self, id: &str, enabled: bool) -> Result<bool, StoreError> {
        self.set_column(id, "link_enabled", enabled)
    }
}

/// `result` with its far side's free text cut to its bounds, and the report dropped if it does
/// not fit the test (the reason goes into the status).
pub(crate) fn checked_remote(result: &TestResult) -> TestResult {
    static IMPLAUSIBLE: crate::admission::LogLimit = crate::admission::LogLimit::with_burst(
        "a far side's report does not fit its test; kept without it",
        std::time::Duration::from_secs(10),
        5,
    );
    let mut checked = result.clone();
    if let Some(remote) = checked.remote.as_mut() {
        plausible::cut_free_text(remote);
    }
    if let Some(remote) = &checked.remote
        && let Some(problem) = plausible::remote_problem(result, remote)
    {
        IMPLAUSIBLE.warn(&result.server_addr, &problem);
        checked.remote = None;
        checked.status = TestStatus::Partial {
            reason: format!("the other end's report was not kept: {problem}"),
        };
    }
    checked
}

/// Marks `running` rows aborted whose writer is gone (not those of a live peer).
fn abort_orphans(conn: &Connection) -> Result<(), StoreError> {
    let owners: Vec<Option<String>> = conn
        .prepare("SELECT DISTINCT owner FROM results WHERE status = 'running'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for owner in owners.iter().filter(|o| !owner::is_alive(o.as_deref())) {
        conn.execute(
            "UPDATE results SET status = 'aborted', reason = 'the peer stopped during the test'
             WHERE status = 'running' AND owner IS ?1",
            params![owner],
        )?;
    }
    Ok(())
}

/// Creates `dir` (and its parents) readable by the owner only; an existing one is left as it is.
/// (On Windows a new directory takes its parent's access list: the user's own profile.)
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file readable by its owner only (mode 0600; on Windows the
/// directory's access list applies).
pub(crate) fn private_file_options() -> std::fs::OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Makes the database file the owner's alone (0600), creating it if it is missing, so SQLite
/// (which gives its WAL and index files the database's mode) never makes a readable one.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let file = private_file_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode();
        if mode & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    #[cfg(not(unix))]
    drop(file);
    Ok(())
}

/// Whether opening failed because the file or its directory cannot be written.
fn is_read_only(e: &StoreError) -> bool {
    match e {
        StoreError::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        ),
        StoreError::Sql(rusqlite::Error::SqliteFailure(f, _)) => matches!(
            f.code,
            rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::PermissionDenied
        ),
        _ => false,
    }
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// A unit enum's serde name (`udp`, `normal`), as the tables store it.
/// A word column read back as its enum (a word this version does not know is an error).
fn column<T: for<'de> serde::Deserialize<'de>>(
    r: &rusqlite::Row<'_>,
    index: usize,
) -> rusqlite::Result<T> {
    let text: String = r.get(index)?;
    perfpeer_shared::history::from_word(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("unknown word {text:?}").into(),
        )
    })
}

fn summary_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryEntry> {
    Ok(HistoryEntry {
        id: r.get(0)?,
        kind: ResultKind::Test,
        created_ms: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        origin: column(r, 2)?,
        role: column(r, 3)?,
        peer: r.get(4)?,
        protocol: column(r, 5)?,
        direction: column(r, 6)?,
        status: column(r, 7)?,
        reason: r.get(8)?,
        bytes: r
            .get::<_, Option<i64>>(9)?
            .and_then(|b| u64::try_from(b).ok()),
        bits_per_second: r.get(10)?,
        link_enabled: r.get(11)?,
        notes: notes_of(r.get(12)?),
        wifi: wifi_of(r.get(13)?),
        verdict: r
            .get::<_, Option<String>>(14)?
            .and_then(|w| perfpeer_shared::history::from_word(&w)),
        #[cfg(feature = "postgres")]
        kept_by: None,
    })
}

/// An outcome as the `verdict` column keeps it.
fn outcome_word(outcome: perfpeer_shared::verdict::Outcome) -> &'static str {
    use perfpeer_shared::verdict::Outcome;
    match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Unjudged => "unjudged",
    }
}

/// A test's Wi-Fi brief as kept (JSON), or none (no radio, a row kept before rows had it, or
/// one that no longer parses: the list must not fail for it).
fn wifi_of(json: Option<String>) -> Option<LinkBrief> {
    serde_json::from_str(&json?).ok()
}

/// Notes as kept (JSON), or none; notes that no longer parse are dropped rather than failing
/// the whole list.
pub(super) fn notes_of(json: Option<String>) -> Notes {
    json.and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default()
}

/// The result of a test that never finished: its spec and the intervals written so far.
fn unfinished(summary: &HistoryEntry, test_id: &str, spec: TestSpec, host: HostInfo) -> TestResult {
    let local = SideReport::empty(summary.role, host);
    TestResult {
        id: test_id.to_string(),
        spec,
        started_unix_ms: summary.created_ms,
        server_addr: summary.peer.clone(),
        local,
        remote: None,
        group_receivers: Vec::new(),
        working_load: None,
        status: TestStatus::Partial {
            reason: summary
                .reason
                .clone()
                .unwrap_or_else(|| summary.status.word()),
        },
    }
}

/// Bytes and throughput for the list: the first flow's receiver view, else its sender's.
fn headline(result: &TestResult) -> (Option<u64>, Option<f64>) {
    let flows = result.flows();
    let totals = flows
        .first()
        .and_then(|f| f.received.as_ref().or(f.sent.as_ref()));
    (totals.map(|t| t.bytes), totals.map(|t| t.bits_per_second))
}

#[cfg(test)]
mod tests;
