//! `perfpeer plan run|compare`: a regression plan (a TOML file) run case by case with a
//! progress line, its table filling in, kept whole with its comparison to a baseline; and two
//! kept plan runs compared. The exit status says pass (0), failed to run (1), usage (2),
//! below expectation (3), not judged (4).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use perfpeer_shared::format::plan as plan_text;
use perfpeer_shared::history::Origin;
use perfpeer_shared::plan::{Comparison, DEFAULT_MIN_CHANGE_PERCENT, Judgement, PlanResult};
use perfpeer_shared::verdict::Outcome;

use super::UsageError;
use crate::plan::file::{self, MAX_PLAN_BYTES};
use crate::plan::{PlanEvent, Stop};
use crate::session::client::ClientOptions;
use crate::store::{Kept, Store};

/// `perfpeer plan`.
#[derive(Debug, Args)]
pub(super) struct PlanArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Run a plan file's cases in order and keep the run (docs/plans.md).
    Run(RunArgs),
    /// Read a plan file and list its cases and testing time, running nothing (exit 2 with the
    /// line and the reason when it is wrong).
    Check {
        /// The plan file (TOML).
        plan: String,
    },
    /// Compare two kept plan runs (ids, or files of `perfpeer results show ID --format json`), case by case.
    Compare {
        /// The baseline.
        before: String,
        /// The run judged against it.
        after: String,
        #[command(flatten)]
        common: Common,
    },
}

/// Flags both `plan run` and `plan compare` take.
#[derive(Debug, Args)]
struct Common {
    /// The least change that counts, % (a smaller one is "same").
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_MIN_CHANGE_PERCENT)]
    min_change: f64,
    /// JSON on stdout at the end (progress stays on stderr).
    #[arg(short = 'J', long)]
    json: bool,
    /// Where results are kept (default as `perfpeer serve`).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<String>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The plan file (TOML).
    plan: String,
    /// A tag for this run and each of its tests (fw=1.2.3, board:a7); repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Compare with this kept plan run: its id, a file of `perfpeer results show ID --format
    /// json`, or `last` (the newest complete run of this plan kept here; none the first time).
    #[arg(long, value_name = "ID|FILE|last")]
    baseline: Option<String>,
    #[command(flatten)]
    common: Common,
    /// Keep nothing (each test's far end still keeps its own).
    #[arg(long)]
    no_store: bool,
    /// The far peers' access token (not needed to run tests against them).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    #[command(flatten)]
    lab: super::lab_store::LabStoreArgs,
}

/// Runs `perfpeer plan …`.
pub(super) async fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    match args.action {
        Action::Run(run) => run_plan(run).await,
        Action::Check { plan } => check_plan(&plan),
        Action::Compare {
            before,
            after,
            common:
                Common {
                    min_change,
                    json,
                    data_dir,
                },
        } => {
            check_min_change(min_change)?;
            let store = open_store(data_dir.as_deref())?;
            let (before, before_id) = load_run(store.as_ref(), &before)?;
            let (after, _) = load_run(store.as_ref(), &after)?;
            let mut cmp = Comparison::of(&before, &after, min_change);
            cmp.baseline_id = Some(before_id);
            if json {
                outln!("{}", perfpeer_shared::format::pretty_json(&cmp)?);
            } else {
                out!("{}", plan_text::comparison_text(&cmp));
            }
            Ok(ExitCode::from(if cmp.count(Judgement::Worse) > 0 {
                super::EXIT_BELOW_EXPECTATION
            } else {
                super::EXIT_PASS
            }))
        }
    }
}

fn check_min_change(pct: f64) -> anyhow::Result<()> {
    if pct.is_finite() && (0.0..100.0).contains(&pct) {
        Ok(())
    } else {
        Err(UsageError(format!("--min-change {pct}: a share from 0 to 100")).into())
    }
}

/// Reads the plan file at `path`; a usage error (exit 2) naming the line when it is wrong.
fn load_plan(path: &str) -> anyhow::Result<file::Plan> {
    let usage = |e: String| anyhow::Error::from(UsageError(e));
    let text = read_plan(path).map_err(|e| usage(format!("{e:#}")))?;
    file::parse(path, &text).map_err(|e| usage(e.to_string()))
}

/// `perfpeer plan check`: the plan's cases, as `plan run` would run them.
fn check_plan(path: &str) -> anyhow::Result<ExitCode> {
    let plan = load_plan(path)?;
    let runs: u32 = plan.cases.iter().map(|c| c.repeats).sum();
    outln!(
        "{path}: plan {}, {} cases, {runs} test runs, about {} of testing",
        plan.name,
        plan.cases.len(),
        words_of(crate::plan::plan_time(&plan.cases))
    );
    outln!("peers: {}", crate::plan::peers_of(&plan).replace(',', ", "));
    for case in &plan.cases {
        outln!("  {} ×{}", case.label, case.repeats);
    }
    Ok(ExitCode::from(super::EXIT_PASS))
}

async fn run_plan(args: RunArgs) -> anyhow::Result<ExitCode> {
    check_min_change(args.common.min_change)?;
    let usage = |e: String| anyhow::Error::from(UsageError(e));
    let plan = load_plan(&args.plan)?;
    let tags = perfpeer_shared::history::Notes {
        text: String::new(),
        tags: args.tags.clone(),
    }
    .checked()
    .map_err(|e| usage(format!("--tag: {e}")))?
    .tags;
    // A wrong --store URL is a usage error before anything runs.
    let lab = args.lab.lab()?;
    let store = if args.no_store {
        None
    } else {
        open_store(args.common.data_dir.as_deref())?
    };
    // Every repeat and the whole run go to the lab store too (a lost database: they wait in
    // the local history, written by the next command attached to it).
    let lab = match (&store, lab) {
        (Some(store), Some(lab)) => Some(lab).filter(|lab| super::lab_store::attach(store, lab)),
        (None, Some(_)) => {
            return Err(
                UsageError("--store needs the local history (not --no-store)".into()).into(),
            );
        }
        _ => None,
    };
    // The baseline is read before anything runs: a wrong id must not cost a night's run. The
    // flag's, else the plan file's.
    let from_file = plan.baseline.as_ref().map(|b| match b {
        file::Baseline::Last => "last".to_string(),
        file::Baseline::Id(id) => id.clone(),
    });
    let baseline = match args.baseline.as_deref().or(from_file.as_deref()) {
        Some("last") => {
            let store = store
                .as_ref()
                .ok_or_else(|| usage("--baseline last: no result store (--no-store)".into()))?;
            let last = crate::plan::find_baseline(store, &plan.name, &file::Baseline::Last)
                .map_err(|e| usage(format!("--baseline last: {e}")))?;
            if last.is_none() {
                eprintln!(
                    "perfpeer: no complete run of plan {} is kept yet: this one becomes the baseline",
                    plan.name
                );
            }
            last
        }
        other => other
            .map(|b| load_run(store.as_ref(), b))
            .transpose()
            .map_err(|e| usage(format!("--baseline: {e:#}")))?,
    };
    let opts = ClientOptions {
        token: args.token.clone(),
        ..ClientOptions::default()
    };
    let stop = stop_on_ctrl_c();
    eprintln!(
        "perfpeer: plan {}: {} cases, about {} of testing",
        plan.name,
        plan.cases.len(),
        words_of(crate::plan::plan_time(&plan.cases))
    );
    if !args.common.json {
        out!("{}", plan_text::table_head());
    }
    let json = args.common.json;
    let mut result = crate::plan::run(
        &plan,
        Origin::Cli,
        &tags,
        &opts,
        store.as_ref(),
        &stop,
        |ev| match ev {
            PlanEvent::Starting {
                index,
                of,
                case,
                repeat,
                eta,
            } => eprintln!(
                "perfpeer: case {} of {of}: {} (repeat {repeat} of {}), about {} left",
                index + 1,
                case.label,
                case.repeats,
                words_of(eta)
            ),
            PlanEvent::CaseDone { case, .. } => {
                if !json {
                    out!("{}", plan_text::row(case));
                }
            }
        },
    )
    .await;
    if let Some((base, id)) = &baseline {
        result.compare_with(base, id, args.common.min_change);
    }
    let kept = store
        .as_ref()
        .map(|s| s.save_plan(Origin::Cli, &crate::plan::peers_of(&plan), &result));
    let id = match kept {
        Some(Ok(id)) => {
            if let Some(s) = &store {
                let _ = s.set_notes(&id, &crate::plan::run_notes(&plan.name, &tags));
            }
            Some(id)
        }
        Some(Err(e)) => {
            eprintln!("perfpeer: the plan run was not kept: {e}");
            None
        }
        None => None,
    };
    if json {
        let mut v = perfpeer_shared::format::json_value(&result);
        if let (Some(obj), Some(id)) = (v.as_object_mut(), &id) {
            obj.insert("result_id".into(), id.clone().into());
        }
        if let (Some(obj), Some(outcome)) = (v.as_object_mut(), result.outcome()) {
            obj.insert(
                "outcome".into(),
                perfpeer_shared::format::json_value(&outcome),
            );
        }
        outln!("{}", perfpeer_shared::format::pretty_json(&v)?);
    } else {
        if result.status == perfpeer_shared::plan::PlanStatus::Stopped {
            outln!(
                "Stopped after {} of {} cases.",
                result.cases.len(),
                result.planned_cases
            );
        }
        if let Some(cmp) = &result.comparison {
            out!("\n{}", plan_text::comparison_text(cmp));
        }
        if let Some(line) = plan_text::verdict_line(&result) {
            outln!("{line}");
        }
        if let Some(id) = &id {
            outln!(
                "Kept as {id}: perfpeer results show {id} (and /r/{id} on this machine's perfpeer serve)"
            );
        }
    }
    #[cfg(feature = "postgres")]
    if let (Some(store), Some(lab)) = (&store, &lab) {
        super::lab_store::flush(store, lab).await;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = lab;
    Ok(ExitCode::from(exit_code(&result)))
}

/// 1 when a case could not run at all or the run was stopped, else by the plan's verdict.
fn exit_code(result: &PlanResult) -> u8 {
    let none_ran = result
        .cases
        .iter()
        .any(|c| c.runs.iter().all(|r| r.error.is_some()));
    if none_ran || result.status == perfpeer_shared::plan::PlanStatus::Stopped {
        return 1;
    }
    match result.outcome() {
        Some(Outcome::Fail) => super::EXIT_BELOW_EXPECTATION,
        Some(Outcome::Unjudged) => super::EXIT_NOT_JUDGED,
        _ => super::EXIT_PASS,
    }
}

fn read_plan(path: &str) -> anyhow::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {path}"))?;
    let mut text = String::new();
    file.take(MAX_PLAN_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {path} as text"))?;
    if text.len() as u64 > MAX_PLAN_BYTES {
        anyhow::bail!(
            "{path}: a plan file is at most {} KiB",
            MAX_PLAN_BYTES / 1024
        );
    }
    Ok(text)
}

fn open_store(dir: Option<&str>) -> anyhow::Result<Option<Arc<Store>>> {
    let dir = crate::server::token::data_dir(dir.map(std::path::Path::new));
    let (store, note) = Store::open(&dir)
        .with_context(|| format!("cannot open the results in {}", dir.display()))?;
    if let Some(note) = note {
        eprintln!("perfpeer: {note}");
    }
    Ok(Some(Arc::new(store)))
}

/// A kept plan run by id (or the start of one), or a file of its JSON; with what names it.
fn load_run(store: Option<&Arc<Store>>, what: &str) -> anyhow::Result<(PlanResult, String)> {
    let path = std::path::Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {what}"))?;
        let run: PlanResult = serde_json::from_str(&text).with_context(|| {
            format!("{what} is not a plan run's JSON (perfpeer results show ID --format json)")
        })?;
        return Ok((run, what.to_string()));
    }
    let store = store.context("no result store to find it in (--no-store)")?;
    match super::results::find(store, what)? {
        Kept::Plan(kept) => Ok((kept.result, kept.id)),
        _ => anyhow::bail!("{what} is not a plan run"),
    }
}

/// Ctrl-C once: stop after the running case; twice: stop the running test too; three times:
/// quit at once.
fn stop_on_ctrl_c() -> Stop {
    let stop = Stop::default();
    let signals = stop.clone();
    crate::util::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("perfpeer: stopping after this case (Ctrl-C again to stop it now)");
            signals.after_case.cancel();
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("perfpeer: stopping the running test");
            signals.now.cancel();
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(130);
        }
    });
    stop
}

fn words_of(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}
