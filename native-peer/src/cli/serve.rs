//! `perfpeer serve`: bind the control and data ports, announce the URLs (and a QR code on a
//! terminal), serve until SIGINT/SIGTERM.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::UsageError;
use clap::Args;
use perfpeer_shared::control::PeerInfo;
use perfpeer_shared::units::{BitRate, parse_rate};
use tokio_util::sync::CancellationToken;

use crate::engine::sockopt;
use crate::hostinfo;
use crate::server::state::{ServeConfig, ServerState};
use crate::server::{self, token};
use crate::store::{Retention, Store};

/// Flags of `perfpeer serve`.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Address and port for HTTP and the /ws control endpoint (default [::]:5210, all addresses).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Port for data streams, TCP and UDP, on the same address.
    #[arg(long, default_value_t = 5211, value_name = "PORT")]
    data_port: u16,
    /// Tests that may run at once (as far end or started here).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_tests: u32,
    /// Longest test accepted, in seconds.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    max_duration: u64,
    /// Highest bitrate accepted per direction (e.g. 100M); tests must then ask for a rate.
    #[arg(long, value_parser = parse_rate_arg)]
    max_bitrate: Option<BitRate>,
    /// Access token for privileged requests, at least 16 characters (8 of them different).
    /// Visible to other local users in `ps`: prefer --token-file or PERFPEER_TOKEN. Default:
    /// generated once, kept in the data dir.
    #[arg(long, env = "PERFPEER_TOKEN", hide_env_values = true, conflicts_with_all = ["open", "token_file"])]
    token: Option<String>,
    /// Reads the access token from the first line of FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "open")]
    token_file: Option<String>,
    /// A host name the control port answers to besides its IP addresses, `localhost` and this
    /// machine's name (repeatable). A request naming any other host is refused: that is what
    /// stops DNS rebinding.
    #[arg(long = "host-name", value_name = "NAME")]
    host_names: Vec<String>,
    /// A page origin (`http://host:port`) that may use /ws and the API besides the peer's own
    /// page (repeatable). Pages from any other site are refused.
    #[arg(long = "allow-origin", value_name = "URL", value_parser = parse_origin)]
    allowed_origins: Vec<String>,
    /// No token: anyone who reaches the control port may use every request.
    #[arg(long)]
    open: bool,
    /// Serve Prometheus's `/metrics` without the token (the counts and the last tests' figures
    /// per far peer, readable by anyone who reaches the control port).
    #[arg(long)]
    metrics_open: bool,
    /// Where the token and the result history are kept (a directory perfpeer makes is 0700).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<String>,
    /// Take data streams from any address, not only the test's control connection's (for NAT
    /// that maps a client's connections to several addresses; off: a cookie is then enough to
    /// aim streams elsewhere).
    #[arg(long)]
    data_from_any_address: bool,
    /// Results kept in the history, the oldest going first (anonymous clients' tests keep to
    /// half, one address to a quarter, and never push out this peer's own).
    #[arg(long, default_value_t = 1000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    keep_results: u32,
    /// Largest size of the result database (K/M/G = x1024; oldest results go first; anonymous
    /// clients' tests keep to half, one address to a quarter). Default: a tenth of the data
    /// dir's filesystem, 1M to 64M. On a router keep the data dir in RAM: flash wears.
    #[arg(long, value_name = "SIZE", value_parser = parse_store_size)]
    max_results_size: Option<u64>,
    /// Memory the buffers of the tests this peer serves may take at once (K/M/G = x1024); a test
    /// that would go over is refused. Default: an eighth of this machine's memory, between 16M
    /// and 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory_arg)]
    max_memory: Option<u64>,
    /// DCCP service codes the data port accepts besides the default PERF (a number, 0x hex, or
    /// up to 4 ASCII letters; repeatable).
    #[arg(long, value_name = "CODE", value_parser = perfpeer_shared::dccp::parse_service)]
    dccp_service: Vec<u32>,
    /// A directory of plan files (`*.toml`, docs/plans.md) a browser holding the token may run
    /// on this peer (at most 64 listed; links out of DIR are not read).
    #[cfg(feature = "plans")]
    #[arg(long, value_name = "DIR")]
    plans: Option<std::path::PathBuf>,
    #[command(flatten)]
    wifi: super::wifi::WifiFlags,
    #[command(flatten)]
    lab: super::lab_store::LabStoreArgs,
}

fn parse_origin(s: &str) -> Result<String, String> {
    let rest = s
        .strip_prefix("http://")
        .or_else(|| s.strip_prefix("https://"))
        .ok_or("an origin starts with http:// or https://")?;
    if rest.trim_end_matches('/').is_empty() || rest.trim_end_matches('/').contains('/') {
        return Err("an origin is scheme://host[:port], with no path".into());
    }
    Ok(s.to_string())
}

/// The default `--max-results-size` for a data dir on a filesystem of `fs_bytes`: a tenth of
/// it, between 1 MiB and 64 MiB (64 MiB when its size is unknown).
fn default_store_size(fs_bytes: Option<u64>) -> u64 {
    const MIN: u64 = 1 << 20;
    const MAX: u64 = 64 << 20;
    fs_bytes.map_or(MAX, |total| (total / 10).clamp(MIN, MAX))
}

fn parse_store_size(s: &str) -> Result<u64, String> {
    match perfpeer_shared::units::parse_size(s) {
        Ok(n) if n < 1 << 20 => {
            Err("at least 1M: one result with its intervals can take that".into())
        }
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

pub(super) fn parse_memory_arg(s: &str) -> Result<u64, String> {
    match perfpeer_shared::units::parse_size(s) {
        Ok(n) if n < 1 << 20 => Err("at least 1M: a single test needs more than that".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_rate_arg(s: &str) -> Result<BitRate, String> {
    match parse_rate(s) {
        Ok(BitRate(0)) => Err("a cap of 0 would refuse every test".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs the peer until a signal.
pub(super) async fn run(args: ServeArgs) -> anyhow::Result<std::process::ExitCode> {
    super::init_logging("info");
    args.wifi.apply()?;
    crate::sys::raise_fd_limit();
    let token = resolve_token(&args)?;
    let lab = args.lab.lab()?;
    let bound = bind(&args)?;
    let control = bound.control_addr()?;
    let data = bound.data_addr()?;
    let info = PeerInfo {
        name: hostinfo::hostname(),
        version: hostinfo::VERSION.to_string(),
        system: hostinfo::system_line(),
        // Where it listens, not every interface's address.
        addresses: listen_hosts(control)
            .iter()
            .map(IpAddr::to_string)
            .collect(),
        data_port: data.port(),
        congestion_controls: sockopt::congestion_controls(),
        max_tests: args.max_tests,
        max_duration_s: args.max_duration,
        max_bitrate: args.max_bitrate.map_or(0, |b| b.0),
        dccp: crate::dccp::support(),
        store_problem: None,
        wifi: Vec::new(),
        wifi_not_measured: !crate::wifi::MEASURED,
        #[cfg(feature = "postgres")]
        lab_store: None,
    };
    let config = ServeConfig {
        max_tests: args.max_tests,
        max_duration: Duration::from_secs(args.max_duration),
        max_bitrate: args.max_bitrate,
        token: token.clone(),
        data_from_any_address: args.data_from_any_address,
        max_memory: args
            .max_memory
            .unwrap_or_else(crate::budget::MemoryBudget::default_limit),
        host_names: args.host_names.clone(),
        allowed_origins: args.allowed_origins.clone(),
        metrics_open: args.metrics_open,
    };
    let runner = super::any_target::AnyTarget::default();
    #[cfg(feature = "plans")]
    let runner = match &args.plans {
        Some(dir) => super::any_target::AnyTarget::with_plans(
            crate::plan::shelf::Shelf::open(dir)
                .map_err(|e| UsageError(format!("--plans {}: {e}", dir.display())))?,
        ),
        None => runner,
    };
    let shutdown = CancellationToken::new();
    let state = ServerState::new(config, info, Arc::new(runner), shutdown.clone());
    let mut dccp_services = vec![perfpeer_shared::dccp::DEFAULT_SERVICE];
    dccp_services.extend(
        args.dccp_service
            .iter()
            .filter(|c| !dccp_services.contains(c))
            .copied()
            .collect::<Vec<_>>(),
    );
    server::dccp_listener::spawn(data, dccp_services, state.clone());
    open_store(&args, &state, lab);
    announce(control, data, token.as_deref());
    crate::util::spawn(wait_for_signal(shutdown));
    server::run(bound, state).await;
    tracing::info!("stopped");
    Ok(std::process::ExitCode::SUCCESS)
}

/// Keeps results in the data directory (and, with `--store`, copies them to the lab store in
/// the background); a peer without a usable store still serves tests.
fn open_store(args: &ServeArgs, state: &ServerState, lab: Option<super::lab_store::Lab>) {
    let dir = token::data_dir(args.data_dir.as_deref().map(std::path::Path::new));
    match Store::open(&dir) {
        Ok((mut store, note)) => {
            if let Some(note) = note {
                tracing::warn!("{note}");
                eprintln!("perfpeer: {note}");
            }
            let max_bytes = args.max_results_size.unwrap_or_else(|| {
                let default = default_store_size(crate::sys::filesystem_bytes(&dir));
                tracing::info!(
                    "keeping results up to {} MiB in {} (--max-results-size)",
                    default >> 20,
                    dir.display()
                );
                default
            });
            store.set_retention(Retention {
                max_results: args.keep_results,
                max_bytes,
            });
            let store = std::sync::Arc::new(store);
            if let Some(lab) = lab
                && super::lab_store::attach(&store, &lab)
            {
                #[cfg(feature = "postgres")]
                {
                    tracing::info!(
                        peer_name = lab.kept_by(),
                        "keeping results in the lab store too"
                    );
                    crate::util::spawn(crate::store::lab::replicate::run(
                        store.clone(),
                        lab,
                        state.shutdown.clone(),
                    ));
                }
            }
            state.set_store(store);
        }
        Err(e) => {
            tracing::warn!(error = %e, "results will not be kept");
            eprintln!("perfpeer: results will not be kept: {e}");
        }
    }
}

fn resolve_token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    if args.open {
        return Ok(None);
    }
    let chosen = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --token-file {path}"))?
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string(),
        ),
        None => args.token.clone(),
    };
    if let Some(t) = chosen {
        if !token::strong(&t) {
            return Err(UsageError(format!(
                "the access token must be {} to 128 characters of A-Z a-z 0-9 - _ . ~, at least 8 of them different (or leave it out: the peer makes a strong one)",
                token::MIN_CHOSEN_LEN
            ))
            .into());
        }
        return Ok(Some(t));
    }
    let dir = token::data_dir(args.data_dir.as_deref().map(std::path::Path::new));
    let t = token::load_or_create(&dir)
        .with_context(|| format!("cannot keep the access token in {}", dir.display()))?;
    Ok(Some(t))
}

fn bind(args: &ServeArgs) -> anyhow::Result<server::Bound> {
    if let Some(listen) = args.listen {
        return Ok(server::bind(listen, args.data_port)?);
    }
    // All addresses, IPv6 and IPv4 together; IPv4 only where IPv6 is off.
    let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 5210);
    match server::bind(v6, args.data_port) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(e.into()),
        Err(_) => Ok(server::bind(
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 5210),
            args.data_port,
        )?),
    }
}

/// The addresses the peer answers on: the one it listens on, or every LAN address when it
/// listens on all (IPv4 ones only for an IPv4 listener); loopback when there is none.
fn listen_hosts(control: SocketAddr) -> Vec<IpAddr> {
    let mut hosts: Vec<IpAddr> = if control.ip().is_unspecified() {
        hostinfo::lan_addresses()
    } else {
        vec![control.ip()]
    };
    if control.ip().is_ipv4() {
        hosts.retain(IpAddr::is_ipv4);
    }
    if hosts.is_empty() {
        hosts.push(if control.is_ipv4() {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        });
    }
    hosts
}

fn announce(control: SocketAddr, data: SocketAddr, token: Option<&str>) {
    outln!(
        "perfpeer {} serving: control and web UI on port {}, data on port {} (TCP and UDP)",
        hostinfo::VERSION,
        control.port(),
        data.port()
    );
    let fragment = token.map(|t| format!("#token={t}")).unwrap_or_default();
    let hosts = listen_hosts(control);
    let urls: Vec<String> = hosts
        .iter()
        .map(|ip| format!("http://{}/{fragment}", SocketAddr::new(*ip, control.port())))
        .collect();
    outln!("Open from a phone or browser on the same network:");
    for url in &urls {
        outln!("  {url}");
    }
    if token.is_none() {
        outln!("(open mode: no access token)");
    }
    #[cfg(feature = "console")]
    if std::io::IsTerminal::is_terminal(&std::io::stdout())
        && let Ok(code) = qrcode::QrCode::new(urls[0].as_bytes())
    {
        outln!(
            "{}",
            code.render::<qrcode::render::unicode::Dense1x2>()
                .quiet_zone(true)
                .build()
        );
    }
}

/// Waits for SIGTERM or SIGINT (Ctrl-C), then asks everything to stop.
#[cfg(unix)]
async fn wait_for_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return tracing::warn!("cannot listen for signals");
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
    tracing::info!("shutting down");
    shutdown.cancel();
}

/// Waits for Ctrl-C or Ctrl-Break, or the console window closing, then asks everything to stop.
#[cfg(windows)]
async fn wait_for_signal(shutdown: CancellationToken) {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let (Ok(mut c), Ok(mut brk), Ok(mut close)) = (ctrl_c(), ctrl_break(), ctrl_close()) else {
        return tracing::warn!("cannot listen for console events");
    };
    tokio::select! {
        _ = c.recv() => {},
        _ = brk.recv() => {},
        _ = close.recv() => {},
    }
    tracing::info!("shutting down");
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use super::default_store_size;

    #[test]
    fn the_store_default_follows_the_filesystem() {
        // A router's 6 MB overlay, a 64 MB tmpfs, a PC's disk, an unknown one.
        assert_eq!(default_store_size(Some(6 << 20)), 1 << 20);
        assert_eq!(default_store_size(Some(64 << 20)), (64 << 20) / 10);
        assert_eq!(default_store_size(Some(500 << 30)), 64 << 20);
        assert_eq!(default_store_size(None), 64 << 20);
    }

    #[test]
    fn the_filesystem_size_is_read() {
        let here = crate::sys::filesystem_bytes(std::path::Path::new("/"));
        assert!(here.is_some_and(|b| b > 1 << 20), "{here:?}");
        assert_eq!(
            crate::sys::filesystem_bytes(std::path::Path::new("/no/such/dir")),
            None
        );
    }
}
