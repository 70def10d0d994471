//! The result database's schema as numbered migrations. `PRAGMA user_version` says how many have
//! run; opening a database runs the missing ones in one transaction each. Never edit a
//! migration that has shipped: add the next one.

use rusqlite::Connection;

/// Migrations in order; migration `n` (1-based) brings the schema to version `n`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: results and their intervals.
    "CREATE TABLE results (
        id TEXT PRIMARY KEY,
        test_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        origin TEXT NOT NULL,
        role TEXT NOT NULL,
        peer TEXT NOT NULL,
        protocol TEXT NOT NULL,
        direction TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        host_json TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        bytes INTEGER,
        bits_per_second REAL,
        result_json TEXT
     );
     CREATE TABLE intervals (
        result_id TEXT NOT NULL REFERENCES results(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        seq INTEGER NOT NULL,
        report_json TEXT NOT NULL,
        PRIMARY KEY (result_id, role, seq)
     );",
    // 2: share links that the token holder can turn off; newest-first listing.
    "ALTER TABLE results ADD COLUMN link_enabled INTEGER NOT NULL DEFAULT 1;
     CREATE INDEX results_by_time ON results(created_ms DESC);",
    // 3: packet-size sweeps started from a browser, each kept whole (its rows are its result).
    "CREATE TABLE sweeps (
        id TEXT PRIMARY KEY,
        created_ms INTEGER NOT NULL,
        peer TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        result_json TEXT NOT NULL,
        link_enabled INTEGER NOT NULL DEFAULT 1
     );",
    // 4: who writes a running test (boot id, pid, start time), so only a dead writer's rows are
    // marked aborted; sweeps by time, for pruning.
    "ALTER TABLE results ADD COLUMN owner TEXT;
     CREATE INDEX sweeps_by_time ON sweeps(created_ms DESC);",
    // 5: runs kept whole besides sweeps: latency under load (its request in spec_json). The
    // table keeps its name; retention, deletion and links cover every kind in it.
    "ALTER TABLE sweeps ADD COLUMN kind TEXT NOT NULL DEFAULT 'sweep';",
    // 6: who started a run kept whole (a latency run from `perfpeer test` is `cli`).
    "ALTER TABLE sweeps ADD COLUMN origin TEXT NOT NULL DEFAULT 'browser';",
    // 7: the token holder's notes on a kept result (shared::history::Notes as JSON).
    "ALTER TABLE results ADD COLUMN notes_json TEXT;
     ALTER TABLE sweeps ADD COLUMN notes_json TEXT;",
    // 8: the client source (admission::Source: an IPv4 address or an IPv6 /64) of a test this
    // peer served as a far end, so anonymous results are pruned within a share per source
    // (older rows have none: one unknown source); the bytes of a finished result's text (its
    // row's and its intervals'), counted once when it is written.
    "ALTER TABLE results ADD COLUMN source TEXT;
     ALTER TABLE results ADD COLUMN kept_bytes INTEGER;
     CREATE INDEX results_by_origin ON results(origin, created_ms);",
    // 9: runs kept whole for anonymous clients too (a sweep or latency run this peer served as
    // the far end: origin `far_end`), with their client source and bytes, so they are pruned
    // within the far end's share as its tests are.
    "ALTER TABLE sweeps ADD COLUMN source TEXT;
     ALTER TABLE sweeps ADD COLUMN kept_bytes INTEGER;
     CREATE INDEX sweeps_by_origin ON sweeps(origin, created_ms);",
    // 10: a finished test's Wi-Fi link in three figures for its history line
    // (shared::wifi::LinkBrief as JSON; none without a radio, and for older rows).
    "ALTER TABLE results ADD COLUMN link_json TEXT;",
    // 11: a finished test's verdict against its expectations (shared::verdict::Outcome's
    // word), listed without reading its result.
    "ALTER TABLE results ADD COLUMN verdict TEXT;",
    // 12: the outbox of a lab's shared store (`--store postgres://…`): the kept results (ids)
    // that changed here and wait to be written there, `put` (write it as kept here) or
    // `delete`; its rowid tells a newer change of the same id from the one being written.
    "CREATE TABLE lab_outbox (
        id TEXT PRIMARY KEY,
        op TEXT NOT NULL
     );",
];

/// The schema version this build writes.
pub(crate) fn current_version() -> u32 {
    u32::try_from(MIGRATIONS.len()).expect("a handful of migrations")
}

/// Runs the migrations `conn` has not seen, up to `target` (tests pass an older target to build
/// an old database).
pub(crate) fn migrate_to(conn: &mut Connection, target: u32) -> rusqlite::Result<u32> {
    let mut version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    while version < target.min(current_version()) {
        let tx = conn.transaction()?;
        tx.execute_batch(MIGRATIONS[version as usize])?;
        version += 1;
        tx.execute_batch(&format!("PRAGMA user_version = {version}"))?;
        tx.commit()?;
    }
    Ok(version)
}
