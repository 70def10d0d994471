//! `perfpeer test PEER --latency-under-load`: the flags of a latency-under-load run (phases,
//! probe, load) folded with the common ones (`-t` each loaded phase, `-P` streams per direction,
//! `-C` congestion control), the run with a line per phase as it ends, then the table — or, with
//! `-J`, the whole result as JSON under `latency_under_load` — and, with `--html FILE`, the
//! self-contained result page with its two pictures.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use perfpeer_shared::format::latency as latency_text;
use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, LatencyResult, Live};
use perfpeer_shared::spec::{EndCondition, TestSpec};
use perfpeer_shared::units::BitRate;
use perfpeer_shared::verdict::Verdict;
use tokio::sync::mpsc;

use super::flags::Given;
use super::live::cancel_on_ctrl_c;
use super::output::Style;
use crate::session::client::ClientOptions;

/// Flags of a latency-under-load run.
#[derive(Debug, Args)]
pub(super) struct LatencyFlags {
    /// Latency under load: a UDP probe through four phases (idle, download, upload, both) while
    /// TCP load fills the link; throughput, round trip and one-way percentiles, added latency
    /// and RPM per phase. `-t` each loaded phase (5 s), `-P` load streams per direction (4),
    /// `-C` their congestion control, `-b` their rate per direction (unpaced).
    #[arg(
        long,
        visible_alias = "lul",
        conflicts_with_all = ["udp", "reverse", "bidir", "rr", "bytes", "sweep_len", "cbr", "dccp", "omit"]
    )]
    latency_under_load: bool,
    /// Seconds of the idle phase (latency under load; default 2).
    #[arg(long, value_name = "SECS", requires = "latency_under_load")]
    idle_time: Option<f64>,
    /// Milliseconds between probes (latency under load; default 10).
    #[arg(long, value_name = "MS", requires = "latency_under_load")]
    probe_interval: Option<f64>,
    /// Probe payload bytes, each way (latency under load; default 64).
    #[arg(long, value_name = "BYTES", requires = "latency_under_load")]
    probe_size: Option<u32>,
    /// IP TOS / DSCP byte of the probe (e.g. 0xb8 for EF), to check a priority queue.
    #[arg(long, value_name = "TOS", requires = "latency_under_load", value_parser = parse_tos)]
    probe_tos: Option<u8>,
    /// Add a UDP load at RATE per direction to the TCP load (K/M/G = 1000-based).
    #[arg(long, value_name = "RATE", requires = "latency_under_load", value_parser = parse_rate)]
    udp_load: Option<BitRate>,
    /// Also write the result page (pictures and table, no server needed) to FILE.
    #[arg(long, value_name = "FILE", requires = "latency_under_load")]
    html: Option<String>,
}

/// Keeps the run in this machine's history (as `perfpeer test` keeps a test); a store that
/// cannot be opened or written is only a warning, since the run itself succeeded.
fn keep(dir: &std::path::Path, peer: &str, req: &LatencyRequest, result: &LatencyResult) {
    let kept = crate::store::Store::open(dir).and_then(|(store, note)| {
        if let Some(note) = note {
            eprintln!("perfpeer: {note}");
        }
        store.save_latency(crate::store::Origin::Cli, peer, req, result)
    });
    match kept {
        Ok(id) => eprintln!("perfpeer: kept as {id} (perfpeer results show {id})"),
        Err(e) => eprintln!("perfpeer: the run was not kept: {e}"),
    }
}

fn parse_tos(s: &str) -> Result<u8, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    u8::from_str_radix(digits, radix).map_err(|_| format!("'{s}' is not a TOS byte (0-255)"))
}

fn parse_rate(s: &str) -> Result<BitRate, String> {
    perfpeer_shared::units::parse_rate(s).map_err(|e| e.to_string())
}

impl LatencyFlags {
    /// Whether a latency-under-load run was asked for.
    pub(super) fn asked(&self) -> bool {
        self.latency_under_load
    }

    /// The request, from these flags and the common ones' spec (`-t`, `-P`, `-C`).
    pub(super) fn request(&self, spec: &TestSpec, given: Given) -> anyhow::Result<LatencyRequest> {
        let mut req = LatencyRequest::default();
        if given.time
            && let EndCondition::Time { duration } = spec.end
        {
            req.load_seconds = duration.as_secs_f64();
        }
        if given.parallel {
            req.streams = spec.streams;
        }
        req.congestion.clone_from(&spec.congestion);
        if let Some(s) = self.idle_time {
            req.idle_seconds = s;
        }
        if let Some(ms) = self.probe_interval {
            req.probe_interval_ms = ms;
        }
        if let Some(b) = self.probe_size {
            req.probe_bytes = b;
        }
        req.probe_tos = self.probe_tos.or(spec.tos);
        if given.bitrate {
            req.load_bits_per_second = spec.bitrate.map(|b| b.0);
        }
        req.udp_bits_per_second = self.udp_load.map(|r| r.0);
        req.check()?;
        Ok(req)
    }
}

/// Runs the test, printing a row per phase as it ends; exit 0 only if every phase ran.
pub(super) async fn run(
    peer: &str,
    flags: &LatencyFlags,
    req: &LatencyRequest,
    opts: &ClientOptions,
    style: Style,
    keep_in: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let cancel = cancel_on_ctrl_c();
    let (tx, mut events) = mpsc::unbounded_channel();
    let text = style == Style::Text;
    let progress = crate::util::spawn(async move {
        let mut live = Live::default();
        while let Some(ev) = events.recv().await {
            live.apply(&ev);
            if style == Style::JsonStream {
                // One object per line as things happen, each with its `event` word.
                outln!("{}", serde_json::to_string(&ev).unwrap_or_default());
            }
            if !text {
                continue;
            }
            match ev {
                LatencyEvent::Started { .. } => {
                    if let Some(so_far) = live.snapshot(None) {
                        out!("{}", latency_text::header(&so_far));
                        outln!("As each phase ends:");
                        out!("{}", latency_text::table_head());
                    }
                }
                LatencyEvent::PhaseDone { window, .. } => {
                    if let Some(row) = live
                        .snapshot(None)
                        .and_then(|r| r.phase(window.phase).map(latency_text::phase_row))
                    {
                        out!("{row}");
                    }
                }
                LatencyEvent::PhaseStarted { phase, .. } => {
                    eprintln!("perfpeer: {} phase", phase.name());
                }
                _ => {}
            }
        }
    });
    let outcome = crate::latency::run(peer, req, opts, tx, cancel).await;
    let _ = progress.await;
    let result = match outcome {
        Ok(result) => result,
        // A JSON reader gets the failure as JSON too (and the words on stderr).
        Err(e) if !text => {
            let message = format!(
                "{:#}",
                super::live::in_context(
                    anyhow::Error::new(e),
                    &format!("latency under load against {peer} could not start")
                )
            );
            let error = serde_json::json!({ "event": "error", "error": message });
            outln!(
                "{}",
                if style == Style::JsonStream {
                    error.to_string()
                } else {
                    perfpeer_shared::format::pretty_json(&error)?
                }
            );
            anyhow::bail!(message);
        }
        Err(e) => {
            return Err(super::live::in_context(
                anyhow::Error::new(e),
                &format!("latency under load against {peer} could not start"),
            ));
        }
    };
    #[derive(serde::Serialize)]
    struct Wrapped<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        event: Option<&'static str>,
        latency_under_load: &'a LatencyResult,
        #[serde(skip_serializing_if = "Option::is_none")]
        verdict: Option<&'a Verdict>,
    }
    let verdict = Verdict::of_latency(req, &result);
    match style {
        Style::Text => {
            outln!("Final (every probe settled):");
            out!("{}", latency_text::table(&result));
            if let Some(v) = &verdict {
                outln!("\nVerdict: {}", v.line());
            }
        }
        Style::Json => outln!(
            "{}",
            perfpeer_shared::format::pretty_json(&Wrapped {
                event: None,
                latency_under_load: &result,
                verdict: verdict.as_ref(),
            })?
        ),
        Style::JsonStream => outln!(
            "{}",
            serde_json::to_string(&Wrapped {
                event: Some("end"),
                latency_under_load: &result,
                verdict: verdict.as_ref(),
            })?
        ),
    }
    if let Some(dir) = keep_in {
        keep(dir, peer, req, &result);
    }
    if let Some(path) = &flags.html {
        let page = perfpeer_shared::format::html::latency_page(
            &result,
            &latency_text::title(&result),
            verdict.as_ref(),
            &perfpeer_shared::history::Notes::default(),
        );
        std::fs::write(path, page).with_context(|| format!("writing {path}"))?;
    }
    let complete = result.error.is_none() && result.phases.iter().all(|p| p.error.is_none());
    Ok(if complete {
        super::verdict_code(verdict.as_ref())
    } else {
        ExitCode::from(1)
    })
}
