//! `perfpeer test` modes beyond one bulk transfer: DCCP (`--dccp`, `--dccp-service`, `--ccid`),
//! packet-size sweeps (`--sweep-len`) and constant-bitrate streams (`--cbr`). The flags become a
//! `perfpeer_shared::request::RequestInput`, folded by the same builder as the browser's form;
//! sweeps run one short test per size.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use perfpeer_shared::dccp::{DccpSpec, parse_service};
use perfpeer_shared::format::cbr::{self, StreamError};
use perfpeer_shared::format::{dccp as dccp_text, sweep as sweep_text};
use perfpeer_shared::request::{Mode, RequestError, RequestInput, TestRequest};
use perfpeer_shared::spec::{Bursts, RequestResponse, TestSpec, ValidSpec};
use perfpeer_shared::sweep::parse_sizes;
use perfpeer_shared::working_load::WorkingLoad;
use tokio::sync::mpsc;

use super::flags::Given;
use super::live::{cancel_on_ctrl_c, run_printing};
use super::output::Style;
use crate::session::client::ClientOptions;
use crate::session::events::SweepEvent;
use crate::session::events::TestEvent;

/// DCCP, sweep and constant-bitrate flags of `perfpeer test`.
#[derive(Debug, Args)]
pub(super) struct ModeFlags {
    /// DCCP instead of TCP (datagrams with UDP's sequence header, in a congestion-controlled
    /// connection; Linux before 6.16 with the dccp modules loaded).
    #[arg(long, conflicts_with = "udp")]
    dccp: bool,
    /// DCCP service code (a number, 0x hex, or 1-4 ASCII letters); the peer must accept it.
    #[arg(long, value_name = "CODE", requires = "dccp", value_parser = parse_service)]
    dccp_service: Option<u32>,
    /// DCCP congestion control: CCID 2 (TCP-like), 3 (TFRC) or 4 (TFRC-SP, if the kernel has it).
    // (u16, as clap's other small numbers: a parser for u8 alone is 3 KB of a router's binary)
    #[arg(long, value_name = "2|3|4", requires = "dccp", value_parser = clap::value_parser!(u16).range(0..=255))]
    ccid: Option<u16>,
    /// Packet-size sweep: one short test per size (e.g. 16,32,64,...,1420: '...' doubles), then
    /// a table of size, throughput and packets per second. UDP unless --dccp.
    #[arg(long, value_name = "SIZES", conflicts_with_all = ["bidir", "cbr", "rr"])]
    sweep_len: Option<String>,
    /// Constant-bitrate stream: RATE (e.g. 48k) with --len BYTES, or a preset (mp3 = 48 kbit/s
    /// in 160-byte packets, g711 = 64 kbit/s in 160-byte packets); evenly spaced packets for an
    /// hour unless -t, with rate, packets/s, loss, jitter and the longest gap live. UDP unless
    /// --dccp.
    #[arg(long, value_name = "RATE|PRESET", conflicts_with_all = ["bitrate", "rr"])]
    cbr: Option<String>,
    /// Bounce-back (iperf 2's --bounceback[=N]): bursts of N (10) request/response round trips
    /// over TCP, a burst every --bounceback-period, with -l bytes (100) each way; reports the
    /// round trips and the requests a second at their mean.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "10",
        conflicts_with_all = ["sweep_len", "cbr", "rr", "udp", "dccp", "bitrate"]
    )]
    bounceback: Option<u32>,
    /// Bounce-back: the far end holds each answer this many milliseconds (0 to 1000).
    #[arg(long, value_name = "MS", requires = "bounceback")]
    bounceback_hold: Option<f64>,
    /// Bounce-back: seconds from one burst's start to the next (0.001 to 60; default 1).
    #[arg(long, value_name = "SECS", requires = "bounceback")]
    bounceback_period: Option<f64>,
    /// Bounce-back: a working load beside the bursts (iperf 2's --bounceback-congest): N (1)
    /// TCP streams to the same peer for the test's time, up, down or bidir (both ways, the
    /// default); their rates are reported with the round trips.
    #[arg(
        long,
        value_name = "[up|down|bidir][,N]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "bidir",
        requires = "bounceback"
    )]
    bounceback_congest: Option<String>,
}

impl ModeFlags {
    /// The request these flags make of `spec` (built from the common flags), through the
    /// shared builder the browser's form uses too: the one check of `perfpeer test`'s spec.
    pub(super) fn request(
        &self,
        target: &str,
        mut spec: TestSpec,
        given: Given,
    ) -> anyhow::Result<TestRequest> {
        if let Some(count) = self.bounceback {
            self.bounce_back(&mut spec, count, given)?;
        }
        let mode = match (&self.sweep_len, &self.cbr) {
            (Some(sizes), _) => {
                Mode::Sweep(parse_sizes(sizes).map_err(|e| anyhow::anyhow!("{e}"))?)
            }
            (None, Some(rate)) => Mode::Stream(rate.clone()),
            (None, None) => Mode::Test,
        };
        let dccp = self.dccp.then(|| DccpSpec {
            service: self
                .dccp_service
                .unwrap_or(perfpeer_shared::dccp::DEFAULT_SERVICE),
            ccid: self.ccid.and_then(|c| u8::try_from(c).ok()),
        });
        let input = RequestInput {
            target: target.to_string(),
            spec,
            mode,
            dccp,
            len_given: given.len,
            bitrate_given: given.bitrate,
            end_given: given.time || given.bytes,
        };
        input.build().map_err(|e| match e {
            RequestError::Stream { error, text } => stream_words(error, &text),
            other => anyhow::anyhow!("{other}"),
        })
    }

    /// Makes `spec` a bounce-back test: request/response in bursts of `count` (100-byte requests
    /// and answers unless -l), no rate.
    fn bounce_back(&self, spec: &mut TestSpec, count: u32, given: Given) -> anyhow::Result<()> {
        let micros = |what: &str, v: f64, most: f64| -> anyhow::Result<u32> {
            if v.is_finite() && (0.0..=most).contains(&v) {
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a checked, non-negative figure of at most 60 s in µs"
                )]
                Ok((v * 1e6).round() as u32)
            } else {
                anyhow::bail!("{what} is out of range")
            }
        };
        let hold_us = micros(
            "--bounceback-hold",
            self.bounceback_hold.unwrap_or(0.0) / 1e3,
            1.0,
        )?;
        let congest = self
            .bounceback_congest
            .as_deref()
            .map(WorkingLoad::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--bounceback-congest: {e}"))?;
        let period_us = micros(
            "--bounceback-period",
            self.bounceback_period.unwrap_or(1.0),
            60.0,
        )?;
        if !given.len {
            spec.len = 100;
        }
        spec.bitrate = None;
        spec.rr = Some(RequestResponse {
            response_len: spec.len,
            probe_interval_us: None,
            connection_per_transaction: None,
            bursts: Some(Bursts {
                count,
                period_us,
                hold_us,
                congest,
            }),
        });
        Ok(())
    }

    /// Whether this is a constant-bitrate stream.
    pub(super) fn is_cbr(&self) -> bool {
        self.cbr.is_some()
    }
}

/// `--cbr` problems in the flags' terms.
fn stream_words(error: StreamError, text: &str) -> anyhow::Error {
    match error {
        StreamError::NotARate => anyhow::anyhow!(
            "--cbr takes a rate (e.g. 48k) or a preset ({})",
            cbr::preset_names()
        ),
        StreamError::ZeroRate => anyhow::anyhow!("--cbr needs a rate above 0"),
        StreamError::NeedsLen => anyhow::anyhow!(
            "--cbr {text} needs --len BYTES (bytes per packet), e.g. --cbr 48k --len 160"
        ),
    }
}

/// Runs one short test per size and prints the table (or, with -J, the `SweepResult` JSON).
pub(super) async fn run_sweep(
    peer: &str,
    spec: &TestSpec,
    sizes: Vec<u32>,
    opts: &ClientOptions,
    style: Style,
) -> anyhow::Result<ExitCode> {
    let cancel = cancel_on_ctrl_c();
    let (tx, mut events) = mpsc::unbounded_channel();
    let progress = crate::util::spawn(async move {
        while let Some(ev) = events.recv().await {
            if let SweepEvent::Point(p) = ev
                && style == Style::Text
            {
                let done = if p.error.is_some() { "failed" } else { "done" };
                eprintln!("sweep: {} B {done}", p.len);
            }
        }
    });
    let result = crate::sweep::run(peer, spec, &sizes, opts, tx, cancel).await;
    let _ = progress.await;
    if style == Style::Text {
        out!(
            "{}",
            sweep_text::text(&result, spec.dccp.map(|d| d.service))
        );
    } else {
        outln!("{}", perfpeer_shared::format::pretty_json(&result)?);
    }
    let all_ok = result.points.iter().all(|p| p.error.is_none());
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs a constant-bitrate stream with live receiver lines; prints the summary (text only).
pub(super) async fn run_cbr(
    peer: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
) -> anyhow::Result<ExitCode> {
    outln!(
        "Constant bitrate over {}: {} in {}-byte packets ({:.1} packets/s); Ctrl-C ends it",
        spec.protocol.upper_name(),
        spec.bitrate.map_or("?".into(), |b| b.to_string()),
        spec.len,
        spec.bitrate
            .map_or(0.0, |b| b.0 as f64 / 8.0 / f64::from(spec.len))
    );
    outln!("{}", cbr::header());
    let outcome = run_printing(
        |events, cancel| crate::targets::run(peer, spec, opts, events, cancel),
        print_live,
    )
    .await?;
    let result = outcome.with_context(|| format!("constant-bitrate stream to {peer} failed"))?;
    out!("{}", cbr::summary(&result));
    out!("{}", dccp_text::text(&result));
    if let Some(reason) = result.status.ended_early() {
        outln!("(partial: {reason})");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_live(ev: &TestEvent) -> std::io::Result<()> {
    if let TestEvent::Interval { report, .. } = ev {
        for line in cbr::lines(report) {
            outln!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_problems_are_worded_in_the_flags_terms() {
        assert!(
            stream_words(StreamError::NeedsLen, "48k")
                .to_string()
                .contains("--cbr 48k needs --len")
        );
        assert!(format!("{:#}", stream_words(StreamError::NotARate, "loud")).contains("mp3"));
        assert!(
            stream_words(StreamError::ZeroRate, "0")
                .to_string()
                .contains("above 0")
        );
    }
}
