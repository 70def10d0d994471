//! A lab's shared store: one PostgreSQL database that many peers write their results to
//! (`--store postgres://…`), each row carrying the peer that kept it, and that any of them
//! lists the whole lab's results from. The local SQLite store stays the truth of what this
//! peer keeps; [`replicate`] copies its changes here through the store's outbox, so a lost
//! database never fails a test. Every query has a time limit; a connection lost is made again
//! on the next use. TLS as the URL's `sslmode` and `sslrootcert` ask, read as libpq reads them.
//!
//! - [`schema`]: numbered migrations under an advisory lock.
//! - [`replicate`]: the outbox's writer, with its backoff.
//! - [`tls`]: the URL's TLS settings, and the rustls connector they make.

pub(crate) mod replicate;
pub(crate) mod schema;
pub(crate) mod tls;

use std::sync::Mutex;
use std::time::Duration;

use perfpeer_shared::control::LabStoreState;
use perfpeer_shared::history::{HistoryEntry, OpenedResult};
use tokio_postgres::Client;
use tokio_postgres::config::SslMode;

use super::outbox::{Change, Queued};
use super::{ListQuery, now_ms, sql_int};

/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one query or one batch of writes.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// A lab store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LabError {
    /// The URL is not one of a PostgreSQL database.
    #[error("--store {0}")]
    Url(String),
    /// PostgreSQL said no, or could not be reached (with every cause: a TLS handshake's
    /// failure says which certificate check failed).
    #[error("lab database: {}", with_causes(.0))]
    Db(#[from] tokio_postgres::Error),
    /// The TLS settings could not be made.
    #[error("lab database TLS: {0}")]
    Tls(String),
    /// It did not answer in time.
    #[error("lab database: no answer within {0:?}")]
    Timeout(Duration),
    /// A newer perfpeer migrated it.
    #[error("lab database: schema version {0} is a newer perfpeer's")]
    Newer(u32),
    /// A stored value did not read back (or could not be written).
    #[error("lab database holds a malformed record: {0}")]
    Json(#[from] serde_json::Error),
    /// The local store said no.
    #[error(transparent)]
    Local(#[from] super::StoreError),
    /// A blocking task on the local store failed.
    #[error("the local store's task: {0}")]
    Task(String),
}

/// `error` and its causes, `: `-separated.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

/// The lab store as this process reaches it.
pub(crate) struct LabStore {
    config: tokio_postgres::Config,
    /// The TLS connector (none: `sslmode=disable`).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    kept_by: String,
    /// The connection, made when first needed and again after it is lost; one query at a time.
    client: tokio::sync::Mutex<Option<Client>>,
    state: Mutex<LabStoreState>,
}

impl std::fmt::Debug for LabStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabStore")
            .field("kept_by", &self.kept_by)
            .finish_non_exhaustive()
    }
}

/// The facts of a result the lab's list filters on, as columns.
struct Row {
    kind: String,
    origin: String,
    status: String,
    verdict: Option<String>,
}

impl LabStore {
    /// The store at `url` (`postgres://user@host/db?sslmode=verify-full&sslrootcert=ca.pem`),
    /// writing as `kept_by`. Nothing is connected yet; a URL that is not one, or root
    /// certificates that cannot be read, are said now.
    pub(crate) fn new(url: &str, kept_by: &str) -> Result<LabStore, LabError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(LabError::Url(format!(
                "{}: not a postgres:// or postgresql:// URL",
                redacted(url)
            )));
        }
        let (url, tls) = tls::from_url(url)?;
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| LabError::Url(format!("{}: {e}", redacted(&url))))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        if config.get_application_name().is_none() {
            config.application_name("perfpeer");
        }
        Ok(LabStore {
            tls: match tls.mode {
                SslMode::Disable => None,
                _ => Some(tls.connector()?),
            },
            config,
            kept_by: kept_by.to_string(),
            client: tokio::sync::Mutex::new(None),
            state: Mutex::new(LabStoreState::default()),
        })
    }

    /// The name this peer's rows carry.
    pub(crate) fn kept_by(&self) -> &str {
        &self.kept_by
    }

    /// How it stands, for `/api/info`.
    pub(crate) fn state(&self) -> LabStoreState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Notes the results waiting in the outbox.
    pub(crate) fn set_waiting(&self, waiting: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).waiting = waiting;
    }

    /// Notes whether the last use reached the database.
    fn note(&self, outcome: Result<(), &LabError>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let reachable = outcome.is_ok();
        if state.reachable != reachable || state.since_ms == 0 {
            state.since_ms = now_ms();
        }
        state.reachable = reachable;
        state.problem = outcome.err().map(|e| e.to_string());
    }

    /// Runs `work` on the connection (made first if needed) within the query time limit; a
    /// failure that lost the connection drops it, to be made again next time.
    async fn with_client<T>(
        &self,
        work: impl AsyncFnOnce(&mut Client) -> Result<T, LabError>,
    ) -> Result<T, LabError> {
        let mut held = self.client.lock().await;
        let outcome = match tokio::time::timeout(QUERY_TIMEOUT, async {
            if held.as_ref().is_none_or(Client::is_closed) {
                *held = Some(self.connect().await?);
            }
            let client = held.as_mut().expect("connected just above");
            work(client).await
        })
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => {
                // A query cut off mid-way leaves the connection in an unknown state.
                *held = None;
                Err(LabError::Timeout(QUERY_TIMEOUT))
            }
        };
        if outcome.is_err() && held.as_ref().is_some_and(Client::is_closed) {
            *held = None;
        }
        self.note(outcome.as_ref().map(|_| ()));
        outcome
    }

    /// A new connection, its schema migrated to this build's.
    async fn connect(&self) -> Result<Client, LabError> {
        let mut client = if let Some(tls) = &self.tls {
            let (client, connection) = self.config.connect(tls.clone()).await?;
            crate::util::spawn(async move {
                let _ = connection.await;
            });
            client
        } else {
            let (client, connection) = self.config.connect(tokio_postgres::NoTls).await?;
            crate::util::spawn(async move {
                let _ = connection.await;
            });
            client
        };
        schema::migrate_to(&mut client, schema::current_version()).await?;
        Ok(client)
    }

    /// Connects now (and migrates) if not connected, to say at once whether it can be reached.
    pub(crate) async fn reach(&self) -> Result<(), LabError> {
        self.with_client(async |_| Ok(())).await
    }

    /// Writes a batch of queued changes in one transaction: a result as kept here (again, if
    /// it was: the row is replaced, never doubled), a deletion by id.
    pub(crate) async fn write(&self, batch: &[Queued]) -> Result<(), LabError> {
        let kept_by = self.kept_by.clone();
        let mut rows = Vec::with_capacity(batch.len());
        for queued in batch {
            if let Change::Put(opened) = &queued.change {
                let mut opened = opened.as_ref().clone();
                opened.summary.kept_by = Some(kept_by.clone());
                let row = Row::of(&opened.summary);
                let facts = (
                    row.kind,
                    row.origin,
                    row.status,
                    row.verdict,
                    serde_json::to_string(&opened.summary)?,
                );
                rows.push((opened, facts));
            }
        }
        let deletions: Vec<&str> = batch
            .iter()
            .filter(|q| matches!(q.change, Change::Delete))
            .map(|q| q.id.as_str())
            .collect();
        self.with_client(async |client| {
            let tx = client.transaction().await?;
            let upsert = tx
                .prepare(
                    "INSERT INTO perfpeer_kept (id, kind, kept_by, created_ms, peer, origin, status, verdict, tags, link_enabled, summary_json, body_json, written_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                     ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, kept_by = EXCLUDED.kept_by,
                        created_ms = EXCLUDED.created_ms, peer = EXCLUDED.peer, origin = EXCLUDED.origin,
                        status = EXCLUDED.status, verdict = EXCLUDED.verdict, tags = EXCLUDED.tags,
                        link_enabled = EXCLUDED.link_enabled, summary_json = EXCLUDED.summary_json,
                        body_json = EXCLUDED.body_json, written_ms = EXCLUDED.written_ms",
                )
                .await?;
            let written = sql_int(now_ms());
            for (opened, (kind, origin, status, verdict, summary_json)) in &rows {
                let summary = &opened.summary;
                let body = serde_json::to_string(opened)?;
                tx.execute(
                    &upsert,
                    &[
                        &summary.id,
                        kind,
                        &kept_by,
                        &sql_int(summary.created_ms),
                        &summary.peer,
                        origin,
                        status,
                        verdict,
                        &summary.notes.tags,
                        &summary.link_enabled,
                        summary_json,
                        &body,
                        &written,
                    ],
                )
                .await?;
            }
            for id in &deletions {
                tx.execute("DELETE FROM perfpeer_kept WHERE id = $1", &[id])
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// The lab's results that `query` asks for, newest first (ties by id), at most its limit.
    pub(crate) async fn list(&self, query: &ListQuery) -> Result<Vec<HistoryEntry>, LabError> {
        let (before_ms, before_id) = match &query.before {
            Some((ms, id)) => (Some(sql_int(*ms)), Some(id.clone())),
            None => (None, None),
        };
        let since = query.since_ms.map(sql_int);
        let until = query.until_ms.map(sql_int);
        let limit = i64::from(query.limit());
        let rows = self
            .with_client(async |client| {
                Ok(client
                    .query(
                        "SELECT summary_json FROM perfpeer_kept
                         WHERE ($1::text IS NULL OR strpos(lower(kept_by), lower($1)) > 0
                                OR strpos(lower(peer), lower($1)) > 0)
                           AND ($2::text IS NULL OR tags @> ARRAY[$2::text])
                           AND ($3::bigint IS NULL OR created_ms >= $3)
                           AND ($4::bigint IS NULL OR created_ms < $4)
                           AND ($5::bigint IS NULL OR (created_ms, id) < ($5, $6::text))
                         ORDER BY created_ms DESC, id DESC LIMIT $7",
                        &[
                            &query.peer,
                            &query.tag,
                            &since,
                            &until,
                            &before_ms,
                            &before_id,
                            &limit,
                        ],
                    )
                    .await?)
            })
            .await?;
        rows.iter()
            .map(|row| Ok(serde_json::from_str(row.get::<_, &str>(0))?))
            .collect()
    }

    /// The ids in the lab that start with `prefix` (at most two: one is a match, two say the
    /// prefix is too short).
    pub(crate) async fn ids_starting(&self, prefix: &str) -> Result<Vec<String>, LabError> {
        let rows = self
            .with_client(async |client| {
                Ok(client
                    .query(
                        "SELECT id FROM perfpeer_kept WHERE left(id, length($1)) = $1 ORDER BY id LIMIT 2",
                        &[&prefix],
                    )
                    .await?)
            })
            .await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// The result kept under `id` by any peer of the lab, link on or off.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<OpenedResult>, LabError> {
        let row = self
            .with_client(async |client| {
                Ok(client
                    .query_opt("SELECT body_json FROM perfpeer_kept WHERE id = $1", &[&id])
                    .await?)
            })
            .await?;
        row.map(|r| Ok(serde_json::from_str(r.get::<_, &str>(0))?))
            .transpose()
    }
}

impl Row {
    fn of(summary: &HistoryEntry) -> Row {
        let word = |v: serde_json::Value| v.as_str().map(str::to_string).unwrap_or_default();
        Row {
            kind: summary.kind.word(),
            origin: summary.origin.word(),
            status: summary.status.word(),
            verdict: summary
                .verdict
                .and_then(|v| serde_json::to_value(v).ok())
                .map(word),
        }
    }
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if scheme < at => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:…{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests;
