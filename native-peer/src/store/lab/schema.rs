//! The lab store's schema as numbered migrations, as the SQLite store keeps its own: the table
//! `perfpeer_schema` holds the version; opening runs the missing migrations, each in one
//! transaction that first takes a transaction-scoped advisory lock, so peers starting at once
//! migrate one after the other. Never edit a migration that has shipped: add the next one.

use tokio_postgres::Client;

use super::LabError;

/// Migrations in order; migration `n` (1-based) brings the schema to version `n`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: every kept result of the lab, one row each (tests, sweeps, latency and plan runs,
    // told apart by `kind`): the facts it is listed and filtered by as columns, its history
    // line and the whole result (`OpenedResult`, intervals included) as JSON; newest first.
    "CREATE TABLE perfpeer_kept (
        id text PRIMARY KEY,
        kind text NOT NULL,
        kept_by text NOT NULL,
        created_ms bigint NOT NULL,
        peer text NOT NULL,
        origin text NOT NULL,
        status text NOT NULL,
        verdict text,
        tags text[] NOT NULL DEFAULT '{}',
        link_enabled boolean NOT NULL,
        summary_json text NOT NULL,
        body_json text NOT NULL,
        written_ms bigint NOT NULL
     );
     CREATE INDEX perfpeer_kept_by_time ON perfpeer_kept (created_ms DESC, id DESC);",
    // 2: the lab's filters: by the peer that kept a result, and by tag.
    "CREATE INDEX perfpeer_kept_by_peer ON perfpeer_kept (kept_by, created_ms DESC, id DESC);
     CREATE INDEX perfpeer_kept_by_tag ON perfpeer_kept USING gin (tags);",
];

/// The advisory lock every migration takes ("perfpeer" in ASCII).
const MIGRATION_LOCK: i64 = 0x7065_7266_7065_6572;

/// The schema version this build writes.
pub(crate) fn current_version() -> u32 {
    u32::try_from(MIGRATIONS.len()).expect("a handful of migrations")
}

/// Runs the migrations the database has not seen, up to `target` (tests pass an older target
/// to build an old schema); the version it is at. A database a newer perfpeer migrated is
/// refused rather than written in a shape this build does not know.
pub(crate) async fn migrate_to(client: &mut Client, target: u32) -> Result<u32, LabError> {
    loop {
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS perfpeer_schema (version integer NOT NULL)")
            .await?;
        let found: Option<i32> = tx
            .query_opt("SELECT version FROM perfpeer_schema", &[])
            .await?
            .map(|row| row.get(0));
        let version = found.map_or(0, |v| u32::try_from(v).unwrap_or(0));
        if version > current_version() {
            return Err(LabError::Newer(version));
        }
        if version >= target.min(current_version()) {
            tx.commit().await?;
            return Ok(version);
        }
        tx.batch_execute(MIGRATIONS[version as usize]).await?;
        let next = i32::try_from(version + 1).unwrap_or(i32::MAX);
        if found.is_some() {
            tx.execute("UPDATE perfpeer_schema SET version = $1", &[&next])
                .await?;
        } else {
            tx.execute(
                "INSERT INTO perfpeer_schema (version) VALUES ($1)",
                &[&next],
            )
            .await?;
        }
        tx.commit().await?;
    }
}
