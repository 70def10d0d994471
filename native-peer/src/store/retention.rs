//! How much history the store keeps, and who makes room for whom. The owner's results (run from
//! this peer's CLI or a browser, and any result the token holder wrote notes on) may fill the
//! whole budget. The results this peer kept as the far end of an anonymous client's test get a
//! share of it, and each client source (an IPv4 address or an IPv6 /64) a share of that; they
//! are pruned among themselves, so a stranger's tests evict a stranger's, never the owner's.
//! A sweep or latency run served for a stranger, kept whole, counts as one of that stranger's
//! results. The owner's own results go only when they alone fill the budget. A running test is
//! never pruned, nor counted.

use rusqlite::Connection;

use super::{Store, StoreError};

/// How much history the store keeps: the newest `max_results` results and sweeps, and no more
/// than `max_bytes` of database. The oldest go first; a running test is never pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retention {
    /// Results (tests and sweeps) kept.
    pub max_results: u32,
    /// Bytes the database may take (its pages in use).
    pub max_bytes: u64,
}

impl Default for Retention {
    /// 1000 results in at most 64 MiB: weeks of testing on a PC, and still bounded on a
    /// router's flash (which should keep its data dir in RAM: see README).
    fn default() -> Retention {
        Retention {
            max_results: 1000,
            max_bytes: 64 << 20,
        }
    }
}

/// What the results of anonymous clients may hold: results and bytes of their text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Share {
    /// Results.
    pub results: usize,
    /// Bytes of their text (rows and intervals).
    pub bytes: u64,
}

impl Retention {
    /// The far end's share for anonymous clients: half of each budget. Strangers never hold
    /// more; the owner's results may fill the whole budget (strangers' results make room for
    /// them). A PC that mostly serves as the far end of one device under test keeps that
    /// device's newest quarter.
    pub(crate) fn anonymous(&self) -> Share {
        Share {
            results: usize::try_from(self.max_results / 2)
                .unwrap_or(usize::MAX)
                .max(1),
            bytes: self.max_bytes / 2,
        }
    }

    /// One client source's share of [`Retention::anonymous`]: half of it, so one address
    /// (however many tests it runs) leaves the other half to every other client.
    pub(crate) fn per_source(&self) -> Share {
        let all = self.anonymous();
        Share {
            results: (all.results / 2).max(1),
            bytes: all.bytes / 2,
        }
    }
}

/// Which `results` and `sweeps` rows are an anonymous client's: kept as its far end, without the
/// token holder's notes.
const ANONYMOUS: &str = "origin = 'far_end' AND notes_json IS NULL";

/// The finished anonymous results of both tables as `id, source, bytes, created_ms, rowid`
/// (a run kept whole: its text's bytes).
fn anonymous_sql() -> String {
    format!(
        "SELECT id, COALESCE(source, ''), COALESCE(kept_bytes, {ROW_BYTES}), created_ms, rowid
         FROM results WHERE {ANONYMOUS} AND status != 'running'
         UNION ALL
         SELECT id, COALESCE(source, ''), COALESCE(kept_bytes, {WHOLE_BYTES}), created_ms, rowid
         FROM sweeps WHERE {ANONYMOUS}"
    )
}

/// The bytes of a `sweeps` row's text, as SQL on that row.
const WHOLE_BYTES: &str = "length(CAST(spec_json AS BLOB)) + length(CAST(result_json AS BLOB))
    + length(CAST(peer AS BLOB))";

/// Deletes a kept result from whichever table holds it; how many rows went.
fn delete_kept(conn: &Connection, id: &str) -> Result<usize, StoreError> {
    Ok(conn.execute("DELETE FROM results WHERE id = ?1", [id])?
        + conn.execute("DELETE FROM sweeps WHERE id = ?1", [id])?)
}

/// The bytes of a `results` row's text and its intervals', as SQL on that row.
pub(super) const ROW_BYTES: &str = "length(CAST(spec_json AS BLOB)) + length(CAST(host_json AS BLOB))
    + length(CAST(peer AS BLOB)) + COALESCE(length(CAST(result_json AS BLOB)), 0)
    + COALESCE(length(CAST(reason AS BLOB)), 0) + COALESCE(length(CAST(link_json AS BLOB)), 0)
    + COALESCE((SELECT sum(length(CAST(report_json AS BLOB))) FROM intervals WHERE result_id = results.id), 0)";

/// A finished anonymous result, as its share is counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AnonymousRow {
    /// Result id.
    pub id: String,
    /// Its client's source (`""` for rows kept before sources were).
    pub source: String,
    /// Bytes of its text: the row's and its intervals'.
    pub bytes: u64,
}

/// The rows of `newest_first` beyond their shares: per source, then all together. The newest
/// row of each source, and the newest of all, stay whatever their size (a result's share link
/// works at least until the next test); the database's size bound still applies to them.
pub(super) fn beyond_shares(newest_first: &[AnonymousRow], retention: &Retention) -> Vec<String> {
    use std::collections::HashMap;
    let (all, one) = (retention.anonymous(), retention.per_source());
    let mut by_source: HashMap<&str, Share> = HashMap::new();
    let mut kept = Share {
        results: 0,
        bytes: 0,
    };
    let mut doomed = Vec::new();
    for row in newest_first {
        let held = by_source.entry(&row.source).or_insert(Share {
            results: 0,
            bytes: 0,
        });
        let fits = |held: &Share, share: &Share| {
            held.results == 0
                || (held.results < share.results && held.bytes + row.bytes <= share.bytes)
        };
        if fits(held, &one) && fits(&kept, &all) {
            held.results += 1;
            held.bytes += row.bytes;
            kept.results += 1;
            kept.bytes += row.bytes;
        } else {
            doomed.push(row.id.clone());
        }
    }
    doomed
}

/// The finished anonymous results, newest first, with their sizes (counted when they were
/// written; rows of older versions and tests that ended without a result, now).
pub(super) fn anonymous_rows(conn: &Connection) -> Result<Vec<AnonymousRow>, StoreError> {
    let mut stmt = conn.prepare(&format!("{} ORDER BY 4 DESC, 5 DESC", anonymous_sql()))?;
    let rows = stmt.query_map([], |r| {
        Ok(AnonymousRow {
            id: r.get(0)?,
            source: r.get(1)?,
            bytes: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Deletes the `n` oldest finished anonymous results; how many went.
fn delete_oldest_anonymous(conn: &Connection, n: i64) -> Result<usize, StoreError> {
    let oldest: Vec<String> = conn
        .prepare(&format!(
            "{} ORDER BY 4 ASC, 5 ASC LIMIT ?1",
            anonymous_sql()
        ))?
        .query_map([n], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut removed = 0;
    for id in oldest {
        removed += delete_kept(conn, &id)?;
    }
    Ok(removed)
}

/// Deletes the `n` oldest of the owner's finished results and kept runs; how many went.
fn delete_oldest_owned(conn: &Connection, n: i64) -> Result<usize, StoreError> {
    let oldest: Vec<(String, bool)> = conn
        .prepare(&format!(
            "SELECT id, 1, created_ms, rowid FROM results WHERE NOT ({ANONYMOUS}) AND status != 'running'
             UNION ALL SELECT id, 0, created_ms, rowid FROM sweeps WHERE NOT ({ANONYMOUS})
             ORDER BY 3 ASC, 4 ASC LIMIT ?1"
        ))?
        .query_map([n], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut removed = 0;
    for (id, is_test) in oldest {
        let table = if is_test { "results" } else { "sweeps" };
        removed += conn.execute(&format!("DELETE FROM {table} WHERE id = ?1"), [id])?;
    }
    Ok(removed)
}

fn count(conn: &Connection, sql: &str) -> Result<i64, StoreError> {
    Ok(conn.query_row(sql, [], |r| r.get(0))?)
}

impl Store {
    /// Prunes to the retention: anonymous results beyond their shares; then, beyond the count,
    /// the oldest anonymous results and only then the owner's oldest; then the same while the
    /// database is over its size. Results of the same millisecond go in the order they were
    /// written (rowid).
    pub(super) fn prune(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        for id in beyond_shares(&anonymous_rows(&conn)?, &self.retention) {
            delete_kept(&conn, &id)?;
        }
        let anonymous_sql = format!("SELECT count(*) FROM ({})", anonymous_sql());
        let total = count(
            &conn,
            "SELECT (SELECT count(*) FROM results WHERE status != 'running') + (SELECT count(*) FROM sweeps)",
        )?;
        let excess = total - i64::from(self.retention.max_results);
        if excess > 0 {
            let anonymous = count(&conn, &anonymous_sql)?;
            delete_oldest_anonymous(&conn, excess.min(anonymous))?;
            if excess > anonymous {
                delete_oldest_owned(&conn, excess - anonymous)?;
            }
        }
        for _ in 0..64 {
            let used = count(
                &conn,
                "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
            )?;
            if u64::try_from(used).unwrap_or(0) <= self.retention.max_bytes {
                break;
            }
            // The oldest tenth (at least one) of the anonymous results while there are any,
            // and only then of the owner's.
            let anonymous = count(&conn, &anonymous_sql)?;
            let removed = if anonymous > 0 {
                delete_oldest_anonymous(&conn, (anonymous / 10).max(1))?
            } else {
                let owned = total.max(1);
                delete_oldest_owned(&conn, (owned / 10).max(1))?
            };
            if removed == 0 {
                break;
            }
        }
        Ok(())
    }
}
