//! `perfpeer test` modes beyond one bulk transfer: DCCP (`--dccp`, `--dccp-service`, `--ccid`),
//! packet-size sweeps (`--sweep-len`) and constant-bitrate streams (`--cbr`). Flags are checked
//! here and folded into the one `TestSpec`; sweeps run one short test per size.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use perfpeer_shared::dccp::{DccpSpec, parse_service};
use perfpeer_shared::format::{cbr, dccp as dccp_text, sweep as sweep_text};
use perfpeer_shared::spec::{EndCondition, Protocol, TestSpec, ValidSpec};
use perfpeer_shared::sweep::parse_sizes;
use perfpeer_shared::units::BitRate;
use tokio::sync::mpsc;

use super::flags::Given;
use super::live::{cancel_on_ctrl_c, run_printing};
use super::output::Style;
use crate::session::client::ClientOptions;
use crate::session::events::SweepEvent;
use crate::session::events::TestEvent;

/// Seconds per size of a sweep unless `-t` says otherwise.
const SWEEP_SECONDS: u64 = 2;
/// Length of a constant-bitrate stream unless `-t`/`-n` say otherwise: an hour (Ctrl-C ends it
/// early with a partial result).
const CBR_SECONDS: u64 = 3600;

/// DCCP, sweep and constant-bitrate flags of `perfpeer test`.
#[derive(Debug, Args)]
pub struct ModeFlags {
    /// DCCP instead of TCP (datagrams with UDP's sequence header, in a congestion-controlled
    /// connection; Linux before 6.16 with the dccp modules loaded).
    #[arg(long, conflicts_with = "udp")]
    dccp: bool,
    /// DCCP service code (a number, 0x hex, or 1-4 ASCII letters); the peer must accept it.
    #[arg(long, value_name = "CODE", requires = "dccp", value_parser = parse_service)]
    dccp_service: Option<u32>,
    /// DCCP congestion control: CCID 2 (TCP-like), 3 (TFRC) or 4 (TFRC-SP, if the kernel has it).
    #[arg(long, value_name = "2|3|4", requires = "dccp")]
    ccid: Option<u8>,
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
}

impl ModeFlags {
    /// Folds the flags into `spec` (built from the common flags) and validates the result: the
    /// one check of `perfpeer test`'s spec.
    pub fn apply(&self, mut spec: TestSpec, given: Given) -> anyhow::Result<ValidSpec> {
        let datagram_mode = self.sweep_len.is_some() || self.cbr.is_some();
        let protocol = match (self.dccp, datagram_mode || given.udp) {
            (true, _) => Protocol::Dccp,
            (false, true) => Protocol::Udp,
            (false, false) => return Ok(ValidSpec::new(spec)?),
        };
        let defaults = TestSpec::new(protocol);
        spec.protocol = protocol;
        if !given.len {
            spec.len = defaults.len;
        }
        if !given.bitrate {
            spec.bitrate = defaults.bitrate;
        }
        if self.dccp {
            spec.dccp = Some(DccpSpec {
                service: self
                    .dccp_service
                    .unwrap_or(perfpeer_shared::dccp::DEFAULT_SERVICE),
                ccid: self.ccid,
            });
        }
        if let Some(cbr) = &self.cbr {
            let (rate, len) = cbr_rate_len(cbr, given.len.then_some(spec.len))?;
            spec.bitrate = Some(rate);
            spec.len = len;
            if !given.time && !given.bytes {
                spec.end = EndCondition::Time {
                    duration: Duration::from_secs(CBR_SECONDS),
                };
            }
        }
        if self.sweep_len.is_some() && !given.time {
            spec.end = EndCondition::Time {
                duration: Duration::from_secs(SWEEP_SECONDS),
            };
        }
        Ok(ValidSpec::new(spec)?)
    }

    /// The sweep's sizes, if `--sweep-len` was given.
    pub fn sweep_sizes(&self) -> anyhow::Result<Option<Vec<u32>>> {
        self.sweep_len
            .as_deref()
            .map(|s| parse_sizes(s).map_err(|e| anyhow::anyhow!("{e}")))
            .transpose()
    }

    /// Whether this is a constant-bitrate stream.
    pub fn is_cbr(&self) -> bool {
        self.cbr.is_some()
    }
}

/// `--cbr 48k` with `--len 160`, or `--cbr mp3`.
fn cbr_rate_len(text: &str, len: Option<u32>) -> anyhow::Result<(BitRate, u32)> {
    cbr::rate_and_len(text, len).map_err(|e| match e {
        cbr::StreamError::NotARate => anyhow::anyhow!(
            "--cbr takes a rate (e.g. 48k) or a preset ({})",
            cbr::preset_names()
        ),
        cbr::StreamError::ZeroRate => anyhow::anyhow!("--cbr needs a rate above 0"),
        cbr::StreamError::NeedsLen => anyhow::anyhow!(
            "--cbr {text} needs --len BYTES (bytes per packet), e.g. --cbr 48k --len 160"
        ),
    })
}

/// Runs one short test per size and prints the table (or, with -J, the `SweepResult` JSON).
pub async fn run_sweep(
    peer: &str,
    spec: &TestSpec,
    sizes: Vec<u32>,
    opts: &ClientOptions,
    style: Style,
) -> anyhow::Result<ExitCode> {
    let cancel = cancel_on_ctrl_c();
    let (tx, mut events) = mpsc::unbounded_channel();
    let progress = tokio::spawn(async move {
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
        outln!("{}", serde_json::to_string_pretty(&result)?);
    }
    let all_ok = result.points.iter().all(|p| p.error.is_none());
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs a constant-bitrate stream with live receiver lines; prints the summary (text only).
pub async fn run_cbr(
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
    fn cbr_rates_and_presets() {
        assert_eq!(cbr_rate_len("mp3", None).unwrap(), (BitRate(48_000), 160));
        assert_eq!(
            cbr_rate_len("48k", Some(160)).unwrap(),
            (BitRate(48_000), 160)
        );
        assert!(
            cbr_rate_len("48k", None)
                .unwrap_err()
                .to_string()
                .contains("--len")
        );
        assert!(format!("{:#}", cbr_rate_len("loud", None).unwrap_err()).contains("mp3"));
        assert!(cbr_rate_len("0", Some(160)).is_err());
    }
}
