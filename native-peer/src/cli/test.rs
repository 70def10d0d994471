//! `perfpeer test PEER`: flags as iperf3 spells them, validated into a `TestSpec`, run against a
//! perfpeer peer, printed live as iperf3 text, JSON (`-J`) or JSON lines (`--json-stream`).

use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use perfpeer_shared::report::{TestResult, TestStatus};
use perfpeer_shared::spec::{Direction, EndCondition, Protocol, RequestResponse, TestSpec};
use perfpeer_shared::units::{BitRate, parse_rate, parse_size};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::UsageError;
use super::output::{Printer, Style};
use crate::session::client::{ClientOptions, TestEvent};
use crate::session::target::Family;

/// Flags of `perfpeer test` (iperf3's letters where iperf3 has the option).
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The peer: host, host:port or [v6addr]:port (its control port, default 5210); or a stock
    /// server: iperf3://host[:port], iperf://host[:port], ttcp://host[:port].
    peer: String,
    /// Where this machine keeps its result history (default as `perfpeer serve`).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<std::path::PathBuf>,
    /// Do not keep this test in the result history.
    #[arg(long)]
    no_store: bool,
    #[command(flatten)]
    flags: TestFlags,
    #[command(flatten)]
    modes: super::modes::ModeFlags,
}

/// Which of the common flags were given (modes pick their own defaults for the others).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    /// `-u`.
    pub udp: bool,
    /// `-l`.
    pub len: bool,
    /// `-b`.
    pub bitrate: bool,
    /// `-t`.
    pub time: bool,
    /// `-n`.
    pub bytes: bool,
}

/// Test flags shared by `perfpeer test` and `perfpeer iperf3 -c`.
#[derive(Debug, Args)]
pub struct TestFlags {
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Seconds to transmit (default 10).
    #[arg(
        short = 't',
        long,
        value_name = "SECS",
        conflicts_with = "bytes",
        allow_negative_numbers = true
    )]
    time: Option<f64>,
    /// Bytes to transmit per direction instead of a time (K/M/G = 1024-based).
    #[arg(short = 'n', long, value_parser = parse_size_arg)]
    bytes: Option<u64>,
    /// Bytes per write (TCP, default 128K) or per datagram (UDP, default 1448).
    #[arg(short = 'l', long, value_parser = parse_size_arg)]
    len: Option<u64>,
    /// Parallel streams per direction.
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: u16,
    /// Reverse: the peer sends, this machine receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    bidir: bool,
    /// Target rate (K/M/G = 1000-based; 0 = unlimited; UDP default 1M): for the whole test per
    /// direction with `perfpeer test`, per stream with `perfpeer iperf3` (as iperf3 has it).
    #[arg(short = 'b', long, value_parser = parse_rate_arg)]
    bitrate: Option<BitRate>,
    /// Socket buffer size (SO_SNDBUF/SO_RCVBUF).
    #[arg(short = 'w', long, value_parser = parse_size_arg)]
    window: Option<u64>,
    /// TCP maximum segment size.
    #[arg(short = 'M', long = "mss")]
    mss: Option<u32>,
    /// TCP congestion control algorithm (e.g. cubic, bbr, reno).
    #[arg(short = 'C', long)]
    congestion: Option<String>,
    /// TCP_NODELAY on data streams.
    #[arg(short = 'N', long = "no-delay")]
    no_delay: bool,
    /// IP type of service / traffic class (decimal, 0x hex or 0 octal).
    #[arg(short = 'S', long, value_parser = parse_tos)]
    tos: Option<u8>,
    /// Seconds to omit from the start (TCP slow start).
    #[arg(
        short = 'O',
        long,
        value_name = "SECS",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    omit: f64,
    /// Seconds between interval reports (default 1).
    #[arg(short = 'i', long, value_name = "SECS", allow_negative_numbers = true)]
    interval: Option<f64>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    ipv6: bool,
    /// Local address for the data streams.
    #[arg(short = 'B', long)]
    bind: Option<IpAddr>,
    /// The peer's access token (not needed to run a test against it).
    #[arg(long)]
    token: Option<String>,
    /// Output one JSON object at the end, with iperf3 -J's keys.
    #[arg(short = 'J', long, conflicts_with = "json_stream")]
    json: bool,
    /// Output one JSON object per line as things happen (iperf3 3.17's --json-stream).
    #[arg(long)]
    json_stream: bool,
    /// Request/response mode (like netperf TCP_RR): one request of -l bytes (default 1), one
    /// response, one transaction at a time; reports transactions/s and round-trip percentiles.
    #[arg(long)]
    rr: bool,
    /// Response size in request/response mode (default: the request size).
    #[arg(long, value_name = "N", requires = "rr", value_parser = parse_size_arg)]
    response_len: Option<u64>,
    /// Receivers let the kernel discard the data instead of copying it out (MSG_TRUNC), like
    /// iperf3's --skip-rx-copy.
    #[arg(long)]
    skip_rx_copy: bool,
    /// Pace TCP with the kernel's SO_MAX_PACING_RATE instead of perfpeer's clock (needs -b).
    #[arg(long)]
    fq_pacing: bool,
    /// Seconds to wait for the peer to answer.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    connect_timeout: f64,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn parse_rate_arg(s: &str) -> Result<BitRate, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

fn parse_tos(s: &str) -> Result<u8, String> {
    let parsed = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u8::from_str_radix(&s[1..], 8)
    } else {
        s.parse()
    };
    parsed.map_err(|_| format!("'{s}' is not a TOS value (0-255)"))
}

fn seconds(name: &str, v: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{name} must be a non-negative number of seconds, got {v}"))
}

impl TestFlags {
    /// Builds and validates the spec; `rate_per_stream` reads `-b` as iperf3 does.
    pub fn spec(&self, rate_per_stream: bool) -> anyhow::Result<TestSpec> {
        let protocol = if self.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let mut spec = TestSpec::new(protocol);
        spec.direction = match (self.reverse, self.bidir) {
            (true, _) => Direction::Reverse,
            (_, true) => Direction::Bidir,
            _ => Direction::Normal,
        };
        spec.end = match (self.bytes, self.time) {
            (Some(bytes), _) => EndCondition::Bytes { bytes },
            (None, Some(t)) => EndCondition::Time {
                duration: seconds("-t", t)?,
            },
            (None, None) => spec.end,
        };
        spec.omit = seconds("-O", self.omit)?;
        spec.interval = seconds("-i", self.interval.unwrap_or(1.0))?;
        spec.streams = self.parallel;
        if let Some(len) = self.len {
            spec.len = u32::try_from(len).unwrap_or(u32::MAX);
        }
        if let Some(rate) = self.bitrate {
            let scale = if rate_per_stream {
                u64::from(self.parallel.max(1))
            } else {
                1
            };
            spec.bitrate = (rate.0 > 0).then_some(BitRate(rate.0.saturating_mul(scale)));
        }
        spec.window = self.window.map(|w| u32::try_from(w).unwrap_or(u32::MAX));
        spec.mss = self.mss;
        spec.congestion = self.congestion.clone();
        spec.no_delay = self.no_delay;
        spec.tos = self.tos;
        spec.skip_rx_copy = self.skip_rx_copy;
        spec.fq_pacing = self.fq_pacing;
        if self.rr {
            if self.len.is_none() {
                spec.len = 1;
            }
            let response_len = self
                .response_len
                .map_or(spec.len, |n| u32::try_from(n).unwrap_or(u32::MAX));
            spec.rr = Some(RequestResponse { response_len });
        }
        if let Err(e) = spec.validate() {
            bail!("{e}");
        }
        Ok(spec)
    }

    /// Which flags were given.
    pub fn given(&self) -> Given {
        Given {
            udp: self.udp,
            len: self.len.is_some(),
            bitrate: self.bitrate.is_some(),
            time: self.time.is_some(),
            bytes: self.bytes.is_some(),
        }
    }

    /// Whether `-i` was given (iperf2 prints intervals only then).
    pub fn interval_given(&self) -> bool {
        self.interval.is_some()
    }

    /// `-B`, if given.
    pub fn bind_addr(&self) -> Option<IpAddr> {
        self.bind
    }

    /// Whether `-4` was given.
    pub fn ipv4_only(&self) -> bool {
        self.ipv4
    }

    /// Connection options.
    pub fn options(&self) -> anyhow::Result<ClientOptions> {
        let family = match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        };
        let connect_timeout = seconds("--connect-timeout", self.connect_timeout)?;
        if connect_timeout.is_zero() {
            bail!("--connect-timeout must be more than 0");
        }
        Ok(ClientOptions {
            token: self.token.clone(),
            connect_timeout,
            family,
            bind: self.bind,
        })
    }

    /// Output style chosen by `-J` / `--json-stream`.
    pub fn style(&self) -> Style {
        if self.json {
            Style::Json
        } else if self.json_stream {
            Style::JsonStream
        } else {
            Style::Text
        }
    }
}

/// Runs the test and prints it; exit 0 only for a complete test.
pub async fn run(args: TestArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    // Every flag error is a usage error (exit 2), whether clap or the spec's check found it.
    let usage = |e: anyhow::Error| anyhow::Error::from(UsageError(format!("{e:#}")));
    let spec = args
        .modes
        .apply(args.flags.spec(false).map_err(usage)?, args.flags.given())
        .map_err(usage)?;
    let opts = args.flags.options().map_err(usage)?;
    let style = args.flags.style();
    if let Some(sizes) = args.modes.sweep_sizes().map_err(usage)? {
        return super::modes::run_sweep(&args.peer, &spec, sizes, &opts, style).await;
    }
    if args.modes.is_cbr() && style == Style::Text {
        return super::modes::run_cbr(&args.peer, &spec, &opts).await;
    }
    let (events_tx, events) = mpsc::unbounded_channel();
    let cancel = cancel_on_ctrl_c();
    let mut printer = Printer::new(style, &spec);
    let outcome = print_while(
        &mut printer,
        events,
        crate::targets::run(&args.peer, &spec, &opts, events_tx, cancel),
    )
    .await?;
    if let (Ok(result), false) = (&outcome, args.no_store) {
        keep(result, &args);
    }
    let dccp_lines = match (&outcome, style) {
        (Ok(result), Style::Text) => perfpeer_shared::format::dccp::text(result),
        _ => String::new(),
    };
    let code = finish(
        &mut printer,
        outcome.map_err(anyhow::Error::new),
        &args.peer,
    )?;
    out!("{dccp_lines}");
    Ok(code)
}

/// Adds a finished test to this machine's history; a store that cannot be opened is only a
/// warning, since the test itself succeeded.
fn keep(result: &TestResult, args: &TestArgs) {
    let dir = crate::server::token::data_dir(args.data_dir.as_deref());
    match crate::store::Store::open(&dir) {
        Ok((store, note)) => {
            if let Some(note) = note {
                eprintln!("perfpeer: {note}");
            }
            let store = std::sync::Arc::new(store);
            let peer = result.server_addr.clone();
            if let Some(rec) = crate::store::Recording::begin(
                &store,
                &result.id,
                crate::store::Origin::Cli,
                result.local.role,
                &peer,
                &result.spec,
            ) {
                rec.finish(result);
            }
        }
        Err(e) => eprintln!("perfpeer: the result was not kept: {e}"),
    }
}

/// A token cancelled by Ctrl-C (the test then ends with a partial result).
pub fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    cancel
}

/// Runs a stock-tool server (`perfpeer iperf3 -s`, `perfpeer iperf -s`) until it ends or Ctrl-C
/// stops it, handing each of its events to `print`.
pub async fn serve_printing<E, F>(
    port: u16,
    serve: impl FnOnce(CancellationToken) -> F,
    mut events: mpsc::UnboundedReceiver<E>,
    mut print: impl FnMut(E),
) -> anyhow::Result<ExitCode>
where
    F: std::future::Future<Output = std::io::Result<()>>,
{
    let serve = serve(cancel_on_ctrl_c());
    tokio::pin!(serve);
    loop {
        tokio::select! {
            r = &mut serve => {
                while let Ok(ev) = events.try_recv() {
                    print(ev);
                }
                r.with_context(|| format!("cannot serve on port {port}"))?;
                return Ok(ExitCode::SUCCESS);
            }
            Some(ev) = events.recv() => print(ev),
        }
    }
}

/// Prints live events while `test` runs; returns its outcome.
pub async fn print_while<T>(
    printer: &mut Printer<'_>,
    mut events: mpsc::UnboundedReceiver<TestEvent>,
    test: impl std::future::Future<Output = T>,
) -> anyhow::Result<T> {
    tokio::pin!(test);
    let outcome = loop {
        tokio::select! {
            r = &mut test => break r,
            Some(ev) = events.recv() => printer.event(&ev)?,
        }
    };
    while let Ok(ev) = events.try_recv() {
        printer.event(&ev)?;
    }
    Ok(outcome)
}

/// Prints the result (or the error in JSON styles) and picks the exit code.
pub fn finish(
    printer: &mut Printer<'_>,
    outcome: anyhow::Result<TestResult>,
    peer: &str,
) -> anyhow::Result<ExitCode> {
    match outcome {
        Ok(result) => {
            printer.result(&result)?;
            Ok(match result.status {
                TestStatus::Complete => ExitCode::SUCCESS,
                TestStatus::Partial { .. } => ExitCode::from(1),
            })
        }
        Err(e) => {
            printer.error(&e.to_string())?;
            Err(e.context(format!("test against {peer} failed")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: TestArgs,
    }

    fn spec_of(argv: &[&str]) -> anyhow::Result<TestSpec> {
        let mut full = vec!["perfpeer"];
        full.extend_from_slice(argv);
        Wrap::try_parse_from(full)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .args
            .flags
            .spec(false)
    }

    #[test]
    fn iperf3_style_flags_build_the_spec() {
        let s = spec_of(&[
            "pc", "-u", "-b", "15M", "-l", "1400", "-t", "3", "-P", "2", "-R",
        ])
        .unwrap();
        assert_eq!(s.protocol, Protocol::Udp);
        assert_eq!(s.bitrate, Some(BitRate(15_000_000)));
        assert_eq!(s.len, 1400);
        assert_eq!(s.streams, 2);
        assert_eq!(s.direction, Direction::Reverse);
        assert_eq!(
            s.end,
            EndCondition::Time {
                duration: Duration::from_secs(3)
            }
        );
        let s = spec_of(&["pc", "-n", "10M", "--bidir", "-S", "0x10", "-C", "reno"]).unwrap();
        assert_eq!(s.end, EndCondition::Bytes { bytes: 10 << 20 });
        assert_eq!((s.tos, s.direction), (Some(16), Direction::Bidir));
        let s = spec_of(&["pc", "-u", "-b", "0"]).unwrap();
        assert_eq!(s.bitrate, None, "-b 0 is unlimited");
    }

    #[test]
    fn request_response_and_data_plane_flags() {
        let s = spec_of(&["pc", "--rr", "-t", "2"]).unwrap();
        assert_eq!(s.len, 1, "--rr defaults to 1-byte requests");
        assert_eq!(s.rr, Some(RequestResponse { response_len: 1 }));
        let s = spec_of(&["pc", "--rr", "-l", "100", "--response-len", "2K"]).unwrap();
        assert_eq!((s.len, s.rr.map(|r| r.response_len)), (100, Some(2048)));
        let s = spec_of(&["pc", "--skip-rx-copy", "--fq-pacing", "-b", "1G"]).unwrap();
        assert!(s.skip_rx_copy && s.fq_pacing);
        for (argv, needle) in [
            (vec!["pc", "--rr", "-u", "-b", "1M"], "needs no rate limit"),
            (vec!["pc", "--rr", "--bidir"], "needs one direction"),
            (vec!["pc", "--response-len", "5"], "--rr"),
            (vec!["pc", "--fq-pacing"], "--fq-pacing"),
        ] {
            let err = spec_of(&argv).unwrap_err().to_string();
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
    }

    fn spec_with_modes(argv: &[&str]) -> anyhow::Result<TestSpec> {
        let mut full = vec!["perfpeer"];
        full.extend_from_slice(argv);
        let w = Wrap::try_parse_from(full).map_err(|e| anyhow::anyhow!("{e}"))?;
        w.args
            .modes
            .apply(w.args.flags.spec(false)?, w.args.flags.given())
    }

    #[test]
    fn dccp_sweep_and_cbr_flags() {
        let s = spec_with_modes(&["pc", "--dccp", "--ccid", "3", "-b", "10M", "-R"]).unwrap();
        assert_eq!(
            (s.protocol, s.len, s.bitrate),
            (Protocol::Dccp, 1400, Some(BitRate(10_000_000)))
        );
        assert_eq!(
            s.dccp.map(|d| (d.ccid, d.service)),
            Some((Some(3), perfpeer_shared::dccp::DEFAULT_SERVICE))
        );
        let s = spec_with_modes(&["pc", "--dccp", "--dccp-service", "42"]).unwrap();
        assert_eq!(
            (s.bitrate, s.dccp.map(|d| d.service)),
            (None, Some(42)),
            "DCCP is unlimited by default"
        );
        let s = spec_with_modes(&["pc", "--cbr", "48k", "--len", "160"]).unwrap();
        assert_eq!(
            (s.protocol, s.bitrate, s.len),
            (Protocol::Udp, Some(BitRate(48_000)), 160)
        );
        assert_eq!(s.total_time(), Some(Duration::from_secs(3600)));
        let s = spec_with_modes(&["pc", "--cbr", "mp3", "--dccp", "-t", "30"]).unwrap();
        assert_eq!(
            (s.protocol, s.len, s.total_time()),
            (Protocol::Dccp, 160, Some(Duration::from_secs(30)))
        );
        let s = spec_with_modes(&["pc", "--sweep-len", "16,...,64"]).unwrap();
        assert_eq!(
            (s.protocol, s.total_time()),
            (Protocol::Udp, Some(Duration::from_secs(2)))
        );
        for (argv, needle) in [
            (vec!["pc", "--ccid", "3"], "--dccp"),
            (vec!["pc", "--dccp", "-u"], "cannot be used with"),
            (
                vec!["pc", "--dccp", "--ccid", "5"],
                "CCID must be 2, 3 or 4",
            ),
            (vec!["pc", "--cbr", "48k"], "--len"),
            (
                vec!["pc", "--cbr", "48k", "-b", "1M", "--len", "160"],
                "cannot be used with",
            ),
            (
                vec!["pc", "--dccp", "--dccp-service", "TOOLONG"],
                "service code",
            ),
            (vec!["pc", "--dccp", "-C", "reno"], "TCP only"),
        ] {
            let err = format!("{:#}", spec_with_modes(&argv).unwrap_err());
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
    }

    #[test]
    fn bad_flags_are_clear_errors() {
        for (argv, needle) in [
            (vec!["pc", "-P", "0"], "parallel streams"),
            (vec!["pc", "-u", "-l", "8"], "UDP length"),
            (vec!["pc", "-t", "-1"], "non-negative"),
            (vec!["pc", "-b", "fast"], "not a rate"),
            (vec!["pc", "-R", "--bidir"], "cannot be used with"),
            (vec!["pc", "-t", "5", "-n", "1M"], "cannot be used with"),
            (vec!["pc", "-u", "-M", "1000"], "TCP only"),
            (vec!["pc", "-S", "300"], "TOS"),
        ] {
            let err = spec_of(&argv).unwrap_err().to_string();
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
    }
}
