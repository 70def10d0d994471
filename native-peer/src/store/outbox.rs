//! The outbox of a lab's shared store (`--store postgres://…`): every kept result this process
//! writes or changes here is queued by id in `lab_outbox` (TEMP triggers on this connection's
//! `results` and `sweeps`, so no write path changes), a deletion by the token holder as a
//! `delete`. The replicator (`lab::replicate`) takes the queue in order, writes each result as
//! it stands here, and removes an entry only once the lab database has committed it, and only
//! if no newer change of that id was queued meanwhile. A running test waits in the queue until
//! it ends; a result pruned here before it could be written is dropped from the queue (the
//! queue is bounded by the store's own retention).

use perfpeer_shared::history::OpenedResult;
use rusqlite::params;

use super::{Store, StoreError};

/// One queued change, as the replicator writes it.
#[derive(Debug)]
pub(crate) struct Queued {
    /// The result's id.
    pub id: String,
    /// Its place in the queue (the entry's rowid): a newer change of the id has a higher one.
    pub seq: i64,
    /// What to write.
    pub change: Change,
}

/// What a queued change asks of the lab store.
#[derive(Debug)]
pub(crate) enum Change {
    /// Write the result as it is kept here.
    Put(Box<OpenedResult>),
    /// Delete it (the token holder deleted it here).
    Delete,
    /// Nothing: it is no longer kept here (pruned before it could be written).
    Gone,
}

/// The triggers that queue every result written or changed through this connection. TEMP:
/// they live as long as the connection, so only a process attached to a lab store queues.
const TRIGGERS: &str = "
    CREATE TEMP TRIGGER IF NOT EXISTS lab_results_added AFTER INSERT ON results BEGIN
        INSERT OR REPLACE INTO lab_outbox (id, op) VALUES (NEW.id, 'put');
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS lab_results_changed AFTER UPDATE ON results BEGIN
        INSERT OR REPLACE INTO lab_outbox (id, op) VALUES (NEW.id, 'put');
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS lab_runs_added AFTER INSERT ON sweeps BEGIN
        INSERT OR REPLACE INTO lab_outbox (id, op) VALUES (NEW.id, 'put');
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS lab_runs_changed AFTER UPDATE ON sweeps BEGIN
        INSERT OR REPLACE INTO lab_outbox (id, op) VALUES (NEW.id, 'put');
    END;";

/// Entries whose result is not still running (those wait until it ends), oldest first.
const READY: &str =
    "SELECT o.id, o.rowid, o.op FROM lab_outbox o LEFT JOIN results r ON r.id = o.id
     WHERE r.status IS NULL OR r.status != 'running'";

impl Store {
    /// Queues, from now on, every result this process keeps or changes for the lab store.
    pub(crate) fn start_outbox(&self) -> Result<(), StoreError> {
        self.conn().execute_batch(TRIGGERS)?;
        self.outbox_on
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Queues every finished result kept here since `since_ms` (also those kept before a lab
    /// store was attached: `perfpeer results push`); how many were queued that were not yet.
    /// Writing one twice is one row in the lab, so nothing is lost by queuing it again.
    pub(crate) fn queue_all(&self, since_ms: u64) -> Result<u64, StoreError> {
        let since = super::sql_int(since_ms);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let tests = tx.execute(
            "INSERT OR IGNORE INTO lab_outbox (id, op)
             SELECT id, 'put' FROM results WHERE status != 'running' AND created_ms >= ?1",
            [since],
        )?;
        let runs = tx.execute(
            "INSERT OR IGNORE INTO lab_outbox (id, op)
             SELECT id, 'put' FROM sweeps WHERE created_ms >= ?1",
            [since],
        )?;
        tx.commit()?;
        Ok((tests + runs) as u64)
    }

    /// Queues the deletion of `id` (when an outbox is on).
    pub(super) fn queue_deletion(&self, id: &str) -> Result<(), StoreError> {
        if self.outbox_on.load(std::sync::atomic::Ordering::Acquire) {
            self.conn().execute(
                "INSERT OR REPLACE INTO lab_outbox (id, op) VALUES (?1, 'delete')",
                [id],
            )?;
        }
        Ok(())
    }

    /// Up to `limit` changes ready to be written, oldest first, each with what to write.
    pub(crate) fn outbox_batch(&self, limit: u32) -> Result<Vec<Queued>, StoreError> {
        let entries: Vec<(String, i64, String)> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(&format!("{READY} ORDER BY o.rowid LIMIT ?1"))?;
            stmt.query_map([limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        let mut batch = Vec::with_capacity(entries.len());
        for (id, seq, op) in entries {
            let change = if op == "delete" {
                Change::Delete
            } else {
                match self.kept(&id)? {
                    Some(kept) => Change::Put(Box::new(kept.opened())),
                    None => Change::Gone,
                }
            };
            batch.push(Queued { id, seq, change });
        }
        Ok(batch)
    }

    /// Removes the entries written (each only if no newer change of its id came since).
    pub(crate) fn outbox_done(&self, written: &[(String, i64)]) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for (id, seq) in written {
            tx.execute(
                "DELETE FROM lab_outbox WHERE id = ?1 AND rowid = ?2",
                params![id, seq],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Results waiting to be written to the lab store (running tests not counted).
    pub(crate) fn outbox_waiting(&self) -> Result<u64, StoreError> {
        let n: i64 =
            self.conn()
                .query_row(&format!("SELECT count(*) FROM ({READY})"), [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
