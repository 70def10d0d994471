//! `perfpeer results`: the result history on this machine — list, show a result in any tool's
//! layout (a kept sweep as its table or JSON), export it as a self-contained HTML file, write
//! notes on it, delete it.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::format::{html, sweep, wifi};
use perfpeer_shared::units::format_bytes;

use crate::server::token;
use crate::store::{HistoryEntry, Kept, Store};

/// Flags of `perfpeer results`.
#[derive(Debug, Args)]
pub(super) struct ResultsArgs {
    /// The data directory holding results.db (default as `perfpeer serve`).
    #[arg(long, value_name = "DIR", global = true)]
    data_dir: Option<String>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// The history, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
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
    let dir = token::data_dir(args.data_dir.as_deref().map(std::path::Path::new));
    let (store, note) = Store::open(&dir)
        .with_context(|| format!("cannot open the results in {}", dir.display()))?;
    if let Some(note) = note {
        eprintln!("perfpeer: {note}");
    }
    match args.action {
        Action::List { limit } => list(&store, limit)?,
        Action::Show { id, format } => match find(&store, &id)? {
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
            let page = match find(&store, &id)? {
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
            store.set_notes(&id, &notes)?;
        }
        Action::Delete { id } => {
            if !store.delete(&id)? {
                bail!("no result {id}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

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
