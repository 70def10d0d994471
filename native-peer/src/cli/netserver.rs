//! `perfpeer netserver` (or the binary named `netserver`): netserver 2.7's flags and control
//! protocol, for stock netperf clients and flent. As netserver, it goes into the background
//! unless given `-D`; it prints one line per test it served and per refusal — the first few of
//! each 10 s, then a count (what a client makes it print is bounded at the server).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use perfpeer_shared::units::{format_bits, format_bytes};
use tokio::sync::mpsc;

use super::live::serve_printing;
use crate::compat::netperf::codec::DEFAULT_PORT;
use crate::compat::netperf::data::Counts;
use crate::compat::netperf::server::{self, ServerEvent};
use crate::resolve::Family;

/// Flags of `perfpeer netserver` (netserver 2.7's letters).
#[derive(Debug, Args)]
pub(super) struct NetserverArgs {
    /// Do not daemonize: stay in the foreground.
    #[arg(short = 'D')]
    foreground: bool,
    /// Increase debugging output (the server's log on stderr).
    #[arg(short = 'd', action = clap::ArgAction::Count)]
    debug: u8,
    /// Do not spawn children for each test (accepted: perfpeer runs tests as threads).
    #[arg(short = 'f')]
    no_fork: bool,
    /// Listen on NAME's address, of FAMILY (4, 6, inet or inet6) if given.
    #[arg(short = 'L', value_name = "NAME[,FAMILY]")]
    listen: Option<String>,
    /// No debugging output, even if netperf asks (perfpeer never turns it on for a client).
    #[arg(short = 'N')]
    no_debug: bool,
    /// Listen for control connections on this port.
    #[arg(short = 'p', default_value_t = DEFAULT_PORT, value_name = "PORTNUM")]
    port: u16,
    /// IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6')]
    ipv6: bool,
    /// Verbosity level (accepted; the per-test lines are always printed).
    #[arg(short = 'v', value_name = "VERBOSITY")]
    verbosity: Option<u32>,
    /// Display the version and exit.
    #[arg(short = 'V')]
    show_version: bool,
    /// Expect this passphrase as the first message of every control connection.
    #[arg(short = 'Z', value_name = "PASSPHRASE")]
    passphrase: Option<String>,
    /// Tests served at once; one more is refused as busy (one client address may hold half),
    /// unless a test whose client has sent no data yet can give up its place.
    /// The default leaves room for flent's RRUL from one host (8 streams and the UDP pings).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=256))]
    max_tests: u32,
    /// Longest test accepted, seconds; also how long a test by count (`-l -N`) or `-l 0` may run.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    max_duration: u64,
    /// Memory the buffers of the tests served may take at once (K/M/G = x1024); a test that
    /// would go over is refused. Default: an eighth of this machine's memory, between 16M and 1G.
    #[arg(long, value_name = "SIZE", value_parser = super::serve::parse_memory_arg)]
    max_memory: Option<u64>,
    /// The control port, bound before the process goes into the background.
    #[arg(skip)]
    bound: Option<(std::net::TcpListener, String)>,
}

impl NetserverArgs {
    /// Whether to go into the background (before anything else starts: see `cli::run`).
    pub(super) fn daemon(&self) -> bool {
        !self.foreground && !self.show_version
    }

    fn family(&self) -> Option<Family> {
        match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        }
    }

    /// Binds the control port now if no name needs resolving (no `-L`, or `-L` with an address),
    /// so that a port in use is said to the shell before the process goes into the background,
    /// as netserver does; a `-L` name is resolved and bound later, on the runtime.
    pub(super) fn bind_early(&mut self) -> anyhow::Result<()> {
        if self.show_version {
            return Ok(());
        }
        let literal = match &self.listen {
            None => None,
            Some(spec) => {
                let (name, _) = parse_listen(spec)?;
                match name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                {
                    Ok(ip) => Some((ip, name)),
                    Err(_) => return Ok(()),
                }
            }
        };
        let (ip, label) = literal.unwrap_or_else(|| self.wildcard());
        self.bound = Some((listen_on(SocketAddr::new(ip, self.port), &label)?, label));
        Ok(())
    }

    /// The address and netserver's name for it when there is no `-L`.
    fn wildcard(&self) -> (IpAddr, String) {
        if self.family() == Some(Family::V4) {
            (IpAddr::V4(Ipv4Addr::UNSPECIFIED), "INADDR_ANY".to_string())
        } else {
            (
                IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                "IN(6)ADDR_ANY".to_string(),
            )
        }
    }
}

fn listen_on(addr: SocketAddr, label: &str) -> anyhow::Result<std::net::TcpListener> {
    server::listen(addr).with_context(|| {
        format!(
            "unable to start netserver with '{label}' port '{}'",
            addr.port()
        )
    })
}

/// `-L NAME[,FAMILY]` as a name and an optional family.
fn parse_listen(s: &str) -> anyhow::Result<(String, Option<Family>)> {
    let (name, family) = match s.split_once(',') {
        Some((n, f)) => (n, Some(f)),
        None => (s, None),
    };
    let family = match family {
        None | Some("" | "0" | "unspec" | "AF_UNSPEC") => None,
        Some("4" | "inet" | "AF_INET") => Some(Family::V4),
        Some("6" | "inet6" | "AF_INET6") => Some(Family::V6),
        Some(other) => {
            return Err(super::UsageError(format!(
                "-L {s}: '{other}' is not an address family (4, 6, inet, inet6)"
            ))
            .into());
        }
    };
    Ok((name.to_string(), family))
}

/// Runs the server.
pub(super) async fn run(mut args: NetserverArgs) -> anyhow::Result<ExitCode> {
    super::init_logging(match args.debug {
        0 => "warn",
        1 => "info",
        _ => "debug",
    });
    if args.show_version {
        outln!("{}", super::persona_version("netserver"));
        return Ok(ExitCode::SUCCESS);
    }
    let family = args.family();
    let (listener, label) = match (args.bound.take(), &args.listen) {
        (Some(bound), _) => bound,
        (None, Some(spec)) => {
            let (name, named_family) = parse_listen(spec)?;
            let addr =
                crate::session::target::resolve_host(&name, args.port, named_family.or(family))
                    .await
                    .map_err(|e| super::UsageError(format!("-L {spec}: {e}")))?;
            (listen_on(addr, &name)?, name)
        }
        (None, None) => {
            let (ip, label) = args.wildcard();
            (listen_on(SocketAddr::new(ip, args.port), &label)?, label)
        }
    };
    let config = server::ServerConfig {
        max_tests: args.max_tests,
        max_duration: Duration::from_secs(args.max_duration),
        max_memory: args
            .max_memory
            .unwrap_or_else(crate::budget::MemoryBudget::default_limit),
        passphrase: args.passphrase.clone(),
    };
    outln!(
        "Starting netserver with host '{label}' port '{}' and family {} (perfpeer, up to {} tests at once)",
        args.port,
        match family {
            Some(Family::V4) => "AF_INET",
            Some(Family::V6) => "AF_INET6",
            None => "AF_UNSPEC",
        },
        args.max_tests
    );
    let (tx, events) = mpsc::unbounded_channel();
    serve_printing(
        args.port,
        |shutdown| server::run(listener, config, tx, shutdown),
        events,
        |ev| match ev {
            ServerEvent::Finished {
                test,
                client,
                name,
                counts,
            } => outln!("{}", finished_line(test, client, name, &counts)),
            ServerEvent::Refused { client, reason } => {
                outln!("[{}] {reason}", shown(client));
            }
            ServerEvent::Unshown { what, count, secs } => {
                outln!("[netserver] {what}: {count} more in the last {secs} s, not shown");
            }
        },
    )
    .await
    .context("netserver")
}

/// A client's address as people write it (IPv4 clients of `[::]` without the ::ffff: prefix).
fn shown(client: SocketAddr) -> SocketAddr {
    SocketAddr::new(client.ip().to_canonical(), client.port())
}

/// One served test: number, client, test, what moved and at what rate.
fn finished_line(test: u64, client: SocketAddr, name: &str, c: &Counts) -> String {
    let mut line = format!(
        "[{test:3}] {} {name} {:.2} s:",
        shown(client),
        c.elapsed.as_secs_f64()
    );
    if c.bytes_received > 0 {
        line += &format!(
            " received {} ({}/sec)",
            format_bytes(c.bytes_received as f64),
            format_bits(c.received_bps())
        );
    }
    if c.bytes_sent > 0 {
        line += &format!(
            " sent {} ({}/sec)",
            format_bytes(c.bytes_sent as f64),
            format_bits(c.sent_bps())
        );
    }
    if c.transactions > 0 || name.ends_with("RR") || name.ends_with("CC") {
        line += &format!(
            " {} transactions ({:.1}/sec)",
            c.transactions,
            c.transactions_per_s()
        );
    }
    if c.foreign_dropped > 0 {
        line += &format!("; dropped {} from other sources", c.foreign_dropped);
    }
    if c.unanswered > 0 {
        line += &format!(
            "; {} requests unanswered (more than 3 times their bytes)",
            c.unanswered
        );
    }
    if let Some((_, e)) = &c.error {
        line += &format!("; ended by an error: {e}");
    }
    line
}
