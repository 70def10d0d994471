//! `perfpeer results`: the result history on this machine — list, show a result in any tool's
//! layout (a kept sweep as its table or JSON), export it as a self-contained HTML file, write
//! notes on it, delete it. PC builds also read a lab's shared store (`--store`): the whole
//! lab's list, filtered and a page at a time, its results shown and exported, and this
//! machine's history pushed to it.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::format::{html, sweep, wifi};
use perfpeer_shared::units::format_bytes;

use super::lab_store::Lab;
#[cfg(feature = "postgres")]
use super::lab_store::LabStoreArgs;
use crate::server::token;
use crate::store::{HistoryEntry, Kept, Store};

/// Flags of `perfpeer results`.
#[derive(Debug, Args)]
pub(super) struct ResultsArgs {
    /// The data directory holding results.db (default as `perfpeer serve`).
    #[arg(long, value_name = "DIR", global = true)]
    data_dir: Option<String>,
    /// A lab's store: `list`, `show` and `export` read the whole lab's results from it; `note`,
    /// `delete` and `push` write this machine's changes to it. (Not in DUT builds.)
    #[cfg(feature = "postgres")]
    #[command(flatten)]
    lab: LabStoreArgs,
    #[command(subcommand)]
    action: Action,
}

/// The filters and paging of `results list` (PC builds; a DUT build lists its newest).
#[cfg(feature = "postgres")]
#[derive(Debug, Args)]
struct ListFilters {
    /// Only results kept by a peer of the lab whose --peer-name holds NAME, or run against a
    /// far end whose address or name holds it (any case).
    #[arg(long, value_name = "NAME")]
    peer: Option<String>,
    /// Only results carrying this tag.
    #[arg(long, value_name = "TAG")]
    tag: Option<String>,
    /// Only results begun at or after WHEN: a date (2026-12-01) or date and time
    /// (2026-12-01 14:00), both UTC, or a span back from now (30m, 24h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = parse_when_ms)]
    since: Option<u64>,
    /// Only results begun before WHEN (as --since).
    #[arg(long, value_name = "WHEN", value_parser = parse_when_ms)]
    until: Option<u64>,
    /// The page after this cursor (a full page ends by printing the next one's).
    #[arg(long, value_name = "CURSOR", value_parser = parse_cursor)]
    before: Option<(u64, String)>,
    /// The page as JSON: {"results": [...], "next": the next page's cursor or null, "from":
    /// "lab" or "local"}.
    #[arg(short = 'J', long)]
    json: bool,
}

/// A `--since`/`--until` value, in ms since the Unix epoch.
#[cfg(feature = "postgres")]
fn parse_when_ms(s: &str) -> Result<u64, String> {
    let now = crate::util::unix_ms_now() / 1000;
    perfpeer_shared::calendar::parse_when(s, now, 0).map(|secs| secs.saturating_mul(1000))
}

/// A `--before` value: a cursor a full page printed.
#[cfg(feature = "postgres")]
fn parse_cursor(s: &str) -> Result<(u64, String), String> {
    crate::store::ListQuery::parse_cursor(s)
        .ok_or_else(|| format!("'{s}' is not a cursor of this list (a full page prints one)"))
}

#[derive(Debug, Subcommand)]
enum Action {
    /// The history, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[cfg(feature = "postgres")]
        #[command(flatten)]
        filters: ListFilters,
    },
    /// One result, in a tool's layout.
    Show {
        /// Result id (or a unique prefix of it).
        id: String,
        /// Layout: iperf3, iperf2, ttcp, netperf, stream or json.
        #[arg(long, value_parser = parse_layout, default_value = "iperf3")]
        format: Layout,
    },
    /// One result as a self-contained HTML file that opens offline.
    Export {
        /// Result id (or a unique prefix of it).
        id: String,
        /// Where to write it.
        #[arg(long, value_name = "FILE")]
        html: String,
    },
    /// Write notes on a result (driver version, channel, board): shown in the list, on its
    /// page and in the browser's history. Without --text and --tag, the notes are cleared.
    Note {
        /// Result id (or a unique prefix of it).
        id: String,
        /// Free text.
        #[arg(long, default_value = "")]
        text: String,
        /// A tag (repeat for more; at most 8).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// Delete a result.
    Delete {
        /// Result id (the whole id).
        id: String,
    },
    /// Write this machine's results to the lab store given by --store, those kept before it
    /// was attached too (a result already there is replaced, never doubled).
    #[cfg(feature = "postgres")]
    Push {
        /// Only results begun at or after WHEN (as `list --since`).
        #[arg(long, value_name = "WHEN", value_parser = parse_when_ms)]
        since: Option<u64>,
    },
}

/// A `--format` value: the id of one of the shared layouts.
fn parse_layout(s: &str) -> Result<Layout, String> {
    Layout::from_id(s).ok_or_else(|| {
        let ids: Vec<&str> = Layout::ALL.iter().map(|l| l.id()).collect();
        format!("'{s}' is not a layout: use one of {}", ids.join(", "))
    })
}

/// Runs the chosen action.
pub(super) fn run(args: ResultsArgs) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "postgres")]
    let lab = args.lab.lab()?;
    #[cfg(not(feature = "postgres"))]
    let lab: Option<Lab> = None;
    let dir = token::data_dir(args.data_dir.as_deref().map(std::path::Path::new));
    let (store, note) = Store::open(&dir)
        .with_context(|| format!("cannot open the results in {}", dir.display()))?;
    if let Some(note) = note {
        eprintln!("perfpeer: {note}");
    }
    #[cfg(feature = "postgres")]
    let store = std::sync::Arc::new(store);
    match args.action {
        #[cfg(feature = "postgres")]
        Action::List { limit, filters } => list(&store, limit, &filters, lab.as_ref())?,
        #[cfg(not(feature = "postgres"))]
        Action::List { limit } => list(&store, limit)?,
        Action::Show { id, format } => match find_anywhere(&store, &id, lab.as_ref())? {
            Kept::Test(found) => out!("{}", render(&found.result, format)?),
            // A sweep has one layout (its table), or its SweepResult JSON.
            Kept::Sweep(sweep) if format == Layout::Json => {
                outln!("{}", perfpeer_shared::format::pretty_json(&sweep.result)?)
            }
            Kept::Sweep(sweep) => out!(
                "{}",
                sweep::text(&sweep.result, sweep.spec.dccp.map(|d| d.service))
            ),
            // A latency run: its table, or its LatencyResult JSON.
            Kept::Latency(run) if format == Layout::Json => {
                outln!("{}", perfpeer_shared::format::pretty_json(&run.result)?)
            }
            Kept::Latency(run) => out!("{}", perfpeer_shared::format::latency::text(&run.result)),
            // A plan run: its table and comparison, or its PlanResult JSON.
            #[cfg(feature = "plans")]
            Kept::Plan(run) if format == Layout::Json => {
                outln!("{}", perfpeer_shared::format::pretty_json(&run.result)?)
            }
            #[cfg(feature = "plans")]
            Kept::Plan(run) => out!("{}", perfpeer_shared::format::plan::text(&run.result)),
        },
        Action::Export { id, html: path } => {
            let page = match find_anywhere(&store, &id, lab.as_ref())? {
                Kept::Test(found) => html::page(&found.result, &found.summary.notes),
                Kept::Sweep(s) => html::sweep_page(&s.result, &s.title(), &s.context(), &s.notes),
                Kept::Latency(l) => {
                    html::latency_page(&l.result, &l.title(), l.verdict().as_ref(), &l.notes)
                }
                #[cfg(feature = "plans")]
                Kept::Plan(p) => html::plan_page(&p),
            };
            std::fs::write(&path, page).with_context(|| format!("cannot write {path}"))?;
            outln!("{path}");
        }
        Action::Note { id, text, tags } => {
            let notes = perfpeer_shared::history::Notes { text, tags }
                .checked()
                .map_err(|e| anyhow::Error::from(super::UsageError(e.to_string())))?;
            let id = kept_id(&find(&store, &id)?);
            #[cfg(feature = "postgres")]
            let lab = attached(&store, lab);
            store.set_notes(&id, &notes)?;
            #[cfg(feature = "postgres")]
            flushed(&store, lab);
        }
        Action::Delete { id } => {
            #[cfg(feature = "postgres")]
            let lab = attached(&store, lab);
            if !store.delete(&id)? {
                bail!("no result {id}");
            }
            #[cfg(feature = "postgres")]
            flushed(&store, lab);
        }
        #[cfg(feature = "postgres")]
        Action::Push { since } => return push(&store, lab, since.unwrap_or(0)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The lab store attached to `store` (its changes queued for it from now on), if one is given.
#[cfg(feature = "postgres")]
fn attached(store: &Store, lab: Option<Lab>) -> Option<Lab> {
    if let Some(lab) = &lab
        && store.attach_lab(lab.clone()).is_err()
    {
        eprintln!("perfpeer: the change stays on this machine: the lab store is not attached");
        return None;
    }
    lab
}

/// Writes the queued changes to `lab` (a few seconds at most; what waits goes with the next
/// command attached to it).
#[cfg(feature = "postgres")]
fn flushed(store: &std::sync::Arc<Store>, lab: Option<Lab>) {
    if let Some(lab) = &lab {
        lab_runtime().block_on(super::lab_store::flush(store, lab));
    }
}

/// The runtime the lab store's calls run on (a `results` command has no other).
#[cfg(feature = "postgres")]
fn lab_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime with its I/O and timers")
}

/// `results push`: every finished result kept here since `since_ms` written to the lab store.
#[cfg(feature = "postgres")]
fn push(
    store: &std::sync::Arc<Store>,
    lab: Option<Lab>,
    since_ms: u64,
) -> anyhow::Result<ExitCode> {
    let Some(lab) = lab else {
        return Err(super::UsageError(
            "results push: give the lab store with --store URL (or PERFPEER_STORE)".into(),
        )
        .into());
    };
    store.attach_lab(lab.clone())?;
    let queued = store.queue_all(since_ms)?;
    let runtime = lab_runtime();
    runtime
        .block_on(lab.reach())
        .context("the lab store cannot be reached")?;
    let waiting = runtime.block_on(crate::store::lab::replicate::drain(
        store,
        &lab,
        std::time::Duration::from_secs(600),
    ));
    if waiting > 0 {
        let why = lab.state().problem.unwrap_or_default();
        bail!("{waiting} result(s) still wait for the lab store ({why}); run push again");
    }
    outln!(
        "{queued} result(s) of {} written to the lab store as {}",
        store.path().display(),
        lab.kept_by()
    );
    Ok(ExitCode::SUCCESS)
}

/// `results list` in a DUT build: this machine's newest.
#[cfg(not(feature = "postgres"))]
fn list(store: &Store, limit: u32) -> anyhow::Result<()> {
    let rows = store.list(limit)?;
    if rows.is_empty() {
        outln!("no results yet in {}", store.path().display());
    }
    for r in rows {
        outln!("{}", list_line(&r));
    }
    Ok(())
}

/// `results list`: a page of the lab's list with a lab store (this machine's own if the lab
/// cannot be reached: said on stderr), else of this machine's, as `filters` ask.
#[cfg(feature = "postgres")]
fn list(store: &Store, limit: u32, filters: &ListFilters, lab: Option<&Lab>) -> anyhow::Result<()> {
    use crate::store::ListQuery;
    if !(1..=ListQuery::MAX_LIMIT).contains(&limit) {
        return Err(super::UsageError(format!(
            "--limit {limit}: a page holds 1 to {} results (--before gives the next)",
            ListQuery::MAX_LIMIT
        ))
        .into());
    }
    let query = ListQuery {
        peer: filters.peer.clone(),
        tag: filters.tag.clone(),
        since_ms: filters.since,
        until_ms: filters.until,
        before: filters.before.clone(),
        limit: Some(limit),
    };
    let mut from_lab = None;
    if let Some(lab) = lab {
        match lab_runtime().block_on(lab.list(&query)) {
            Ok(rows) => from_lab = Some(rows),
            Err(e) => eprintln!("perfpeer: {e}; listing this machine's results only"),
        }
    }
    let (rows, from) = match from_lab {
        Some(rows) => (rows, "lab"),
        None => {
            let kept_by = lab.map_or_else(crate::hostinfo::hostname, |l| l.kept_by().to_string());
            (store.list_matching(&query, &kept_by)?, "local")
        }
    };
    let next = if rows.len() == query.limit() as usize {
        rows.last().map(HistoryEntry::cursor_after)
    } else {
        None
    };
    if filters.json {
        let page = serde_json::json!({ "results": rows, "next": next, "from": from });
        outln!("{}", perfpeer_shared::format::pretty_json(&page)?);
        return Ok(());
    }
    let filtered = query.peer.is_some()
        || query.tag.is_some()
        || query.since_ms.is_some()
        || query.until_ms.is_some()
        || query.before.is_some();
    if rows.is_empty() {
        match (from, filtered) {
            ("lab", _) => outln!("no results in the lab store match"),
            (_, true) => outln!("no results in {} match", store.path().display()),
            _ => outln!("no results yet in {}", store.path().display()),
        }
    }
    for r in &rows {
        outln!("{}", list_line(r));
    }
    if let Some(next) = next {
        eprintln!("perfpeer: more: the same list with --before {next}");
    }
    Ok(())
}

/// One result's line in `results list`: id, time, who started it, what ran, bytes and rate,
/// status, the other peer, then the Wi-Fi figures and the notes where it has them.
fn list_line(r: &HistoryEntry) -> String {
    let when = perfpeer_shared::calendar::http_date(r.created_ms / 1000);
    let rate = r
        .bits_per_second
        .map(perfpeer_shared::units::format_rate)
        .unwrap_or_else(|| "-".into());
    let bytes = r
        .bytes
        .map(|b| format_bytes(b as f64).trim().to_string())
        .unwrap_or_else(|| "-".into());
    // A sweep's rate is its best size's, a latency run's its best phase's one way, a plan's
    // its first case's median.
    let what = if r.kind == perfpeer_shared::history::ResultKind::Test {
        r.role.word()
    } else {
        r.kind.word()
    };
    let verdict = r
        .verdict
        .map(|v| format!("  {}", v.word()))
        .unwrap_or_default();
    let wifi = match r.wifi.as_ref().map(wifi::brief_words) {
        Some(words) if !words.is_empty() => format!("  {words}"),
        _ => String::new(),
    };
    let notes = if r.notes.is_empty() {
        String::new()
    } else {
        format!("  [{}]", r.notes.line(60))
    };
    #[cfg(feature = "postgres")]
    let kept_by = r
        .kept_by
        .as_ref()
        .map(|k| format!("  kept by {k}"))
        .unwrap_or_default();
    #[cfg(feature = "postgres")]
    return format!(
        "{}  {when}  {:8} {:6} {:4} {:7} {:>12} {:>14}  {}{verdict}  {}{kept_by}{wifi}{notes}",
        r.id, r.origin, what, r.protocol, r.direction, bytes, rate, r.status, r.peer
    );
    #[cfg(not(feature = "postgres"))]
    format!(
        "{}  {when}  {:8} {:6} {:4} {:7} {:>12} {:>14}  {}{verdict}  {}{wifi}{notes}",
        r.id, r.origin, what, r.protocol, r.direction, bytes, rate, r.status, r.peer
    )
}

/// The full id of a kept result.
fn kept_id(kept: &Kept) -> String {
    match kept {
        Kept::Test(found) => found.summary.id.clone(),
        Kept::Sweep(s) => s.id.clone(),
        Kept::Latency(l) => l.id.clone(),
        #[cfg(feature = "plans")]
        Kept::Plan(p) => p.id.clone(),
    }
}

/// The result kept here under `id` (or a unique prefix of it).
#[cfg(feature = "postgres")]
pub(super) fn find(store: &Store, id: &str) -> anyhow::Result<Kept> {
    lookup(store, id)?.with_context(|| format!("no result {id} (see `perfpeer results list`)"))
}

/// The result kept here under `id` (or a unique prefix of it). The same search as `lookup`,
/// written out once more for DUT builds: their size budget had no room for the split
/// (docs/dut.md).
#[cfg(not(feature = "postgres"))]
pub(super) fn find(store: &Store, id: &str) -> anyhow::Result<Kept> {
    if let Some(found) = store.kept(id)? {
        return Ok(found);
    }
    let matches: Vec<String> = store
        .list(u32::MAX)?
        .into_iter()
        .map(|s| s.id)
        .filter(|i| i.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => store.kept(one)?.context("the result vanished"),
        [] => bail!("no result {id} (see `perfpeer results list`)"),
        _ => bail!(
            "{id} matches {} results: give more of the id",
            matches.len()
        ),
    }
}

/// The result under `id` (or a unique prefix): kept here, else in the lab store if one is given.
#[cfg(not(feature = "postgres"))]
fn find_anywhere(store: &Store, id: &str, _: Option<&Lab>) -> anyhow::Result<Kept> {
    find(store, id)
}

/// The result under `id` (or a unique prefix): kept here, else in the lab store if one is given.
#[cfg(feature = "postgres")]
fn find_anywhere(store: &Store, id: &str, lab: Option<&Lab>) -> anyhow::Result<Kept> {
    if let Some(lab) = lab
        && lookup(store, id)?.is_none()
    {
        return lab_runtime().block_on(async {
            match lab.ids_starting(id).await?.as_slice() {
                [one] => lab
                    .get(one)
                    .await?
                    .and_then(Kept::from_opened)
                    .with_context(|| {
                        format!("{one} in the lab store: not a kind this build reads")
                    }),
                [] => bail!("no result {id} here or in the lab store"),
                _ => bail!("{id} matches several results in the lab store: give more of the id"),
            }
        });
    }
    find(store, id)
}

/// The result kept here under `id` or a unique prefix of it; None if none; an error if the
/// prefix matches several.
#[cfg(feature = "postgres")]
fn lookup(store: &Store, id: &str) -> anyhow::Result<Option<Kept>> {
    if let Some(found) = store.kept(id)? {
        return Ok(Some(found));
    }
    let matches: Vec<String> = store
        .list(u32::MAX)?
        .into_iter()
        .map(|s| s.id)
        .filter(|i| i.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok(Some(store.kept(one)?.context("the result vanished")?)),
        [] => Ok(None),
        _ => bail!(
            "{id} matches {} results: give more of the id",
            matches.len()
        ),
    }
}

fn render(result: &perfpeer_shared::report::TestResult, format: Layout) -> anyhow::Result<String> {
    format
        .render(result)
        .map_err(|why| anyhow::anyhow!("{why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_ends_with_its_wifi_figures_and_notes() {
        let mut line: HistoryEntry = serde_json::from_str(
            r#"{"id":"ab12","created_ms":1764684187000,"origin":"cli","role":"client",
               "peer":"pc:5210","protocol":"tcp","direction":"normal","status":"complete",
               "bytes":1000000,"bits_per_second":941000000.0,"link_enabled":true,
               "wifi":{"signal_dbm":-52.0,"phy_mbps":144.4,"retries_percent":2.1,"far":true}}"#,
        )
        .unwrap();
        line.notes.tags = vec!["ch36".into()];
        let text = list_line(&line);
        assert!(text.starts_with("ab12  "), "{text}");
        assert!(
            text.ends_with(
                "complete  pc:5210  Wi-Fi (other peer) -52 dBm · 144 Mbit/s PHY · 2.1 % retries  [ch36]"
            ),
            "{text}"
        );
        line.wifi = None;
        assert!(list_line(&line).ends_with("complete  pc:5210  [ch36]"));
    }
}
