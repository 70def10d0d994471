//! The command line: `perfpeer serve`, `test`, `results`, and the stock-tool personas `iperf3`,
//! `iperf`, `ttcp` and `netperf`. Each subcommand's flags live in its own module and are
//! validated into typed settings before anything runs; every usage error exits 2.

/// `print!` for everything the CLI writes to stdout: never panics, and once stdout is closed
/// (`| head`), prints nothing more while the command goes on (a server keeps serving).
macro_rules! out {
    ($($arg:tt)*) => {{
        let _written = $crate::cli::write_stdout(format_args!($($arg)*));
    }};
}

/// `println!` the same way as [`out!`].
macro_rules! outln {
    () => {{
        let _written = $crate::cli::write_stdout(format_args!("\n"));
    }};
    ($($arg:tt)*) => {{
        let _written = $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)));
    }};
}

pub(crate) mod any_target;
mod flags;
mod iperf;
mod iperf3;
mod lab_store;
mod latency;
mod live;
mod modes;
mod netperf;
mod netserver;
mod output;
mod persona;
#[cfg(feature = "plans")]
mod plan;
mod results;
mod serve;
mod test;
mod ttcp;
mod wifi;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `perfpeer --version`: the version, then the target, linking and UI of this build
/// (native-peer/build.rs).
pub(crate) const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("PERFPEER_BUILD"), ")");

/// Network throughput peers: run `perfpeer serve` on one machine and `perfpeer test HOST` on another.
#[derive(Debug, Parser)]
#[command(name = "perfpeer", version = VERSION, about, after_help = EXIT_STATUS)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a long-lived peer: the far end of tests, a web UI and a WebSocket control endpoint.
    Serve(serve::ServeArgs),
    /// Run a test from this machine against a perfpeer peer.
    Test(Box<test::TestArgs>),
    /// Speak iperf3's protocol: serve stock iperf3 clients (-s) or test against a stock server (-c).
    Iperf3(iperf3::Iperf3Args),
    /// netperf's flags and tables (TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_STREAM) against a perfpeer peer.
    Netperf(netperf::NetperfArgs),
    /// Serve stock netperf clients and flent: netserver 2.7's control protocol (port 12865).
    Netserver(netserver::NetserverArgs),
    /// Speak iperf 2.1's protocol: serve stock iperf clients (-s) or test against a stock server (-c).
    Iperf(iperf::IperfArgs),
    /// The result history on this machine: list, show, export as HTML, delete.
    Results(results::ResultsArgs),
    /// Classic ttcp: -t HOST transmits, -r receives (-s for a generated pattern).
    Ttcp(ttcp::TtcpArgs),
    /// This host's Wi-Fi radios now: mode, network, channel, each station's signal and rates.
    Wifi(wifi::WifiArgs),
    /// Regression plans: run a plan file's cases and judge them, compare two runs.
    #[cfg(feature = "plans")]
    Plan(Box<plan::PlanArgs>),
}

/// What `perfpeer --help` says of the exit status (the stock-tool personas keep their tool's).
const EXIT_STATUS: &str = "Exit status:
  0  the test (or every case of a plan) ran and met every --expect
  1  it failed to run, or ended early
  2  usage: a flag, an expectation or a plan file is wrong
  3  it ran and missed an expectation (a plan: some case did)
  4  it ran, but a figure an expectation needs was not measured";

/// A test ran and met every expectation.
pub(crate) const EXIT_PASS: u8 = 0;
/// A test ran and missed an expectation.
pub(crate) const EXIT_BELOW_EXPECTATION: u8 = 3;
/// A test ran but an expectation's figure was not measured.
pub(crate) const EXIT_NOT_JUDGED: u8 = 4;

/// The exit code of a test that ran to its end: by its verdict, if it had expectations.
pub(crate) fn verdict_code(verdict: Option<&perfpeer_shared::verdict::Verdict>) -> ExitCode {
    use perfpeer_shared::verdict::Outcome;
    ExitCode::from(match verdict.map(|v| v.outcome) {
        None | Some(Outcome::Pass) => EXIT_PASS,
        Some(Outcome::Fail) => EXIT_BELOW_EXPECTATION,
        Some(Outcome::Unjudged) => EXIT_NOT_JUDGED,
    })
}

/// The command line. Invoked as `ttcp`, `iperf` or `iperf3` (a symlink to perfpeer), the
/// binary plays that tool with its conventions (`cli::persona`), so existing scripts run
/// unchanged; otherwise perfpeer's (a usage error exits 2).
pub fn parse_args() -> Cli {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match argv.first().and_then(persona::of) {
        Some(tool) => persona::parse(tool, argv),
        None => Cli::parse_from(argv),
    }
}

/// The version line of each tool's persona: the tool's version it speaks, then perfpeer's
/// (a script that reads `iperf 3.x` from `iperf3 -v` finds it).
pub(crate) fn persona_version(tool: &str) -> &'static str {
    macro_rules! line {
        ($speaks:literal) => {
            concat!(
                $speaks,
                " (perfpeer ",
                env!("CARGO_PKG_VERSION"),
                " (",
                env!("PERFPEER_BUILD"),
                "))"
            )
        };
    }
    match tool {
        "iperf3" => line!("iperf 3.12-compatible"),
        "iperf" => line!("iperf version 2.1.8-compatible"),
        "netserver" => line!("Netperf version 2.7.1-compatible"),
        _ => line!("ttcp-compatible"),
    }
}

/// Set once a write to stdout failed (a closed pipe, most often).
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where a command's output goes, when not plainly to stdout: iperf3's `-T` (every line starts
/// with the title) and `--logfile` (appended to a file instead).
#[derive(Debug, Default)]
pub(crate) struct OutputSink {
    title: Option<String>,
    file: Option<std::sync::Mutex<std::fs::File>>,
    /// Whether the next byte written starts a line.
    mid_line: std::sync::atomic::AtomicBool,
}

static OUTPUT: std::sync::OnceLock<OutputSink> = std::sync::OnceLock::new();

/// Sends output to `logfile` (created if missing, appended to) and starts every line with
/// `title:  `, as iperf3's `--logfile` and `-T` do. Call before anything is printed.
pub(crate) fn set_output(
    title: Option<String>,
    logfile: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let file = logfile
        .map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))
        })
        .transpose()?;
    let _ = OUTPUT.set(OutputSink {
        title,
        file: file.map(std::sync::Mutex::new),
        mid_line: std::sync::atomic::AtomicBool::new(false),
    });
    Ok(())
}

/// Writes `text` where output goes (stdout, or the log file), with the title at line starts.
pub(crate) fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let sink = OUTPUT.get();
    let titled;
    let text = match sink.and_then(|s| s.title.as_deref().map(|t| (s, t))) {
        Some((sink, title)) => {
            let mut out = String::with_capacity(text.len() + 16);
            let mut mid_line = sink.mid_line.load(Ordering::Relaxed);
            for piece in text.split_inclusive('\n') {
                if !mid_line {
                    out.push_str(title);
                    out.push_str(":  ");
                }
                out.push_str(piece);
                mid_line = !piece.ends_with('\n');
            }
            sink.mid_line.store(mid_line, Ordering::Relaxed);
            titled = out;
            titled.as_str()
        }
        None => text,
    };
    match sink.and_then(|s| s.file.as_ref()) {
        Some(file) => {
            let mut file = crate::util::lock(file);
            file.write_all(text.as_bytes())?;
            file.flush()
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()
        }
    }
}

/// Writes `args` where output goes and flushes; after the first failure (stdout closed: EPIPE,
/// since Rust ignores SIGPIPE), writes nothing more. Returns whether it was written.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) -> bool {
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return false;
    }
    let written = emit(&args.to_string()).is_ok();
    if !written {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
    written
}

/// A usage error found after parsing (a flag's value that clap cannot judge alone): printed
/// like clap's and exits 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs the chosen subcommand on a fresh tokio runtime.
pub fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    // netserver binds its port first, so that a port in use is said before it daemonizes.
    if let Command::Netserver(args) = &mut cli.command {
        args.bind_early()?;
    }
    // Into the background before any thread exists (`iperf3 -s -D`, `iperf -s -D`).
    let daemon = match &cli.command {
        Command::Iperf3(args) => args.daemon(),
        Command::Iperf(args) => args.daemon(),
        Command::Netserver(args) => args.daemon(),
        _ => false,
    };
    if daemon {
        crate::sys::daemonize().map_err(|e| anyhow::anyhow!("cannot run as a daemon: {e}"))?;
    }
    // `iperf3 -A n`: every thread started from here on inherits the CPU.
    if let Command::Iperf3(args) = &cli.command
        && let Some(cpu) = args.pinned_cpu()
    {
        crate::sys::pin_to_cpu(cpu)
            .map_err(|e| anyhow::anyhow!("unable to set CPU affinity to {cpu}: {e}"))?;
    }
    // Sized to the machine: two workers at most (the data path runs on its own threads), one on
    // a single-core router; blocking work (opening streams, joining them, the store) is short
    // and capped well below tokio's default of 512 threads.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores.min(2))
        .max_blocking_threads(64)
        .enable_all()
        .thread_name("perfpeer-rt")
        .build()?;
    // Each subcommand's future boxed: tokio's `block_on` (the runtime's entry, its parking and
    // its budget, inlined with the future's first poll) is then compiled once, not once per
    // subcommand.
    fn boxed<'a>(
        main: impl Future<Output = anyhow::Result<ExitCode>> + 'a,
    ) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<ExitCode>> + 'a>> {
        Box::pin(main)
    }
    let main = match cli.command {
        Command::Serve(args) => boxed(serve::run(args)),
        Command::Test(args) => boxed(test::run(*args)),
        Command::Iperf3(args) => boxed(iperf3::run(args)),
        Command::Netperf(args) => boxed(netperf::run(args)),
        Command::Netserver(args) => boxed(netserver::run(args)),
        Command::Ttcp(args) => boxed(ttcp::run(args)),
        Command::Results(args) => return results::run(args),
        Command::Wifi(args) => return wifi::run(&args),
        Command::Iperf(args) => boxed(iperf::run(args)),
        #[cfg(feature = "plans")]
        Command::Plan(args) => boxed(plan::run(*args)),
    };
    runtime.block_on(main)
}

/// Logs go to stderr; `RUST_LOG` (`level` or `target=level,…` directives) overrides
/// `default_level`. A `RUST_LOG` that cannot be read is said once, then the default is used.
fn init_logging(default_level: &str) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (filter, bad) = match from_env.as_deref().map(str::parse::<Targets>) {
        Some(Ok(filter)) => (filter, None),
        Some(Err(e)) => (default_targets(default_level), Some(e)),
        None => (default_targets(default_level), None),
    };
    let ansi = cfg!(feature = "console") && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init();
    if let Some(e) = bad {
        tracing::warn!("RUST_LOG not understood ({e}); logging at {default_level}");
    }
}

fn default_targets(level: &str) -> tracing_subscriber::filter::Targets {
    level
        .parse()
        .unwrap_or_else(|_| tracing_subscriber::filter::Targets::new())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn program_name_picks_the_role() {
        let of = |s: &str| super::persona::of(&std::ffi::OsString::from(s));
        assert_eq!(of("/usr/local/bin/iperf3"), Some("iperf3"));
        assert_eq!(of("ttcp"), Some("ttcp"));
        assert_eq!(of("iperf"), Some("iperf"));
        assert_eq!(of("perfpeer"), None);
        assert_eq!(of("/opt/iperf3x"), None);
    }

    #[test]
    fn help_lists_the_exit_codes() {
        let help = super::Cli::command().render_long_help().to_string();
        for line in [
            "0  the test (or every case of a plan) ran and met every --expect",
            "3  it ran and missed an expectation",
            "4  it ran, but a figure an expectation needs was not measured",
        ] {
            assert!(help.contains(line), "{help}");
        }
    }

    #[test]
    fn every_subcommand_has_consistent_flags() {
        // Catches duplicate short flags and other clap definition errors before a user does.
        super::Cli::command().debug_assert();
    }
}
