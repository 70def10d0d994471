//! `perfpeer iperf -s | -c HOST`: iperf 2.1 on the wire (port 5001) and in the output
//! (`[ ID] Interval  Transfer  Bandwidth`). The server takes TCP and UDP on one port and any
//! number of clients; legacy dual tests (`-d`, `-r`) are refused with a reason, never answered
//! with a surprise connection back.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use perfpeer_shared::format::iperf2 as fmt;
use perfpeer_shared::report::PeerRole;
use perfpeer_shared::spec::{Direction, Protocol};
use tokio::sync::mpsc;

use super::flags::{TestFlags, unit_letter};
use super::live::{run_printing, serve_printing};
use crate::compat::iperf2::codec::DEFAULT_PORT;
use crate::compat::iperf2::{client, server};
use crate::session::events::TestEvent;
use crate::session::target::{Family, resolve_host};

/// Flags of `perfpeer iperf` (iperf 2's letters; `-b` is per stream, as in iperf 2).
#[derive(Debug, Args)]
pub(super) struct IperfArgs {
    /// Run as a server (TCP and UDP).
    #[arg(short = 's', long, conflicts_with = "client")]
    server: bool,
    /// Run as a client of the iperf 2 server at HOST.
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<String>,
    /// Port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// IPv6.
    #[arg(short = 'V', long = "ipv6_domain")]
    ipv6_domain: bool,
    /// Enhanced output: a sending client's rows add Write/Err, Rtry, Cwnd/RTT(var) and NetPwr
    /// (TCP) or Write/Err and PPS (UDP), as iperf 2.1's `-e`.
    #[arg(short = 'e', long)]
    enhanced: bool,
    /// Legacy dual test: refused (it needs a connection back to the client).
    #[arg(short = 'd', long = "dualtest")]
    dualtest: bool,
    /// Legacy tradeoff test: refused, as -d.
    #[arg(short = 'r', long = "tradeoff")]
    tradeoff: bool,
    /// Server: longest test accepted, seconds.
    #[arg(long, default_value_t = 3600)]
    max_duration: u64,
    /// Server: memory the buffers of the tests served may take at once (K/M/G = x1024); a test
    /// that would go over is refused. Default: an eighth of this machine's memory, between 16M
    /// and 1G.
    #[arg(long, value_name = "SIZE", value_parser = super::serve::parse_memory_arg)]
    max_memory: Option<u64>,
    /// Report style: `C` for iperf 2's CSV lines (one per stream and interval).
    // (Strings, read when the command starts: clap's reader of a char is code of its own.)
    #[arg(short = 'y', long = "reportstyle", value_name = "C")]
    reportstyle: Option<String>,
    /// Write the report to this file (appended) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// Units: k, m, g (bandwidth in K/M/Gbits/sec, transfer in K/M/GBytes) or K, M, G (both in
    /// bytes); adaptive if not given.
    #[arg(short = 'f', long = "format", value_name = "kmgKMG")]
    units: Option<String>,
    /// Server: run in the background (the report goes to -o's file, or nowhere).
    #[arg(short = 'D', long)]
    daemon: bool,
    /// Server: serve one client address's TCP streams at a time; the others wait their turn.
    #[arg(short = '1', long = "singleclient")]
    single_client: bool,
    /// Client: the datagrams' time-to-live (hop limit); 1 for a multicast group unless given.
    #[arg(short = 'T', long = "ttl", value_name = "HOPS", value_parser = clap::value_parser!(u32).range(1..=255))]
    ttl: Option<u32>,
    /// Client: a bounce-back test — bursts of small requests (-l, 100 bytes by default), each
    /// sent back by the server, their round trips timed (iperf 2.1's --bounceback).
    #[arg(long)]
    bounceback: bool,
    /// Client, --bounceback: the server holds each reply this many milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 0.0,
        requires = "bounceback"
    )]
    bounceback_hold: f64,
    /// Client, --bounceback: seconds between bursts of 10 requests.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1.0,
        requires = "bounceback"
    )]
    bounceback_period: f64,
    /// Client, --bounceback: a working load beside the bursts (iperf 2.1's flag): N (1) TCP
    /// streams to the server for the test's time, up, down or bidir (full duplex, the
    /// default).
    #[arg(
        long,
        value_name = "[up|down|bidir][,N]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "bidir",
        requires = "bounceback"
    )]
    bounceback_congest: Option<String>,
    /// Server: the source of a source-specific multicast group (-B GROUP): only its datagrams
    /// are received (an (S,G) join).
    #[arg(short = 'H', long = "ssm-host", value_name = "SOURCE")]
    ssm_host: Option<IpAddr>,
    #[command(flatten)]
    flags: TestFlags,
}

fn parse_units(s: &str) -> Result<char, String> {
    unit_letter(s, "kmgKMG", "a format")
}

fn parse_style(s: &str) -> Result<char, String> {
    match s {
        "C" | "c" => Ok('C'),
        _ => Err(format!("'{s}' is not a report style: only C (CSV) is")),
    }
}

impl IperfArgs {
    /// Whether to run in the background (before anything else starts: see `cli::run`).
    pub(super) fn daemon(&self) -> bool {
        self.server && self.daemon
    }

    fn csv(&self) -> bool {
        self.reportstyle
            .as_deref()
            .is_some_and(|s| parse_style(s).is_ok())
    }

    /// `-f`'s unit (checked when the command starts).
    fn units(&self) -> fmt::Units {
        self.units.as_deref().and_then(|s| parse_units(s).ok())
    }
}

/// Runs the server or the client.
pub(super) async fn run(args: IperfArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    if let Some(bad) = args.units.as_deref().and_then(|s| parse_units(s).err()) {
        return Err(super::UsageError(format!("-f: {bad}")).into());
    }
    if let Some(bad) = args
        .reportstyle
        .as_deref()
        .and_then(|s| parse_style(s).err())
    {
        return Err(super::UsageError(format!("-y: {bad}")).into());
    }
    args.flags.check_histograms()?;
    super::set_output(None, args.output.as_deref().map(std::path::Path::new))?;
    if args.dualtest || args.tradeoff {
        bail!(
            "-d and -r (dual/tradeoff tests) are not supported: they need the server to connect back to the client; run -R and a normal test instead"
        );
    }
    match (&args.client, args.server) {
        (Some(host), false) => run_client(host.clone(), &args).await,
        (None, true) => run_server(&args).await,
        _ => bail!("give -s (server) or -c HOST (client)"),
    }
}

/// iperf 2's UDP datagram size when `-l` is not given (perfpeer's own is 1448).
const IPERF2_UDP_LEN: u32 = 1470;

async fn run_client(host: String, args: &IperfArgs) -> anyhow::Result<ExitCode> {
    if args.bounceback {
        return run_bounceback(host, args).await;
    }
    let mut spec = args.flags.build_spec(true)?;
    if spec.protocol == Protocol::Udp && !args.flags.given().len {
        spec.len = IPERF2_UDP_LEN;
    }
    // The client's own limits on these flags are usage errors (exit 2), said before connecting.
    let multicast = host.parse::<IpAddr>().is_ok_and(|ip| ip.is_multicast());
    if spec.video.is_some() && spec.direction != Direction::Normal {
        return Err(super::UsageError(
            "--isochronous: perfpeer iperf -c sends the frames itself: leave out -R and --full-duplex".into(),
        )
        .into());
    }
    // The stamps (and an --isochronous frame's mark) need room in every datagram or write.
    let stamp_room = match spec.protocol {
        Protocol::Udp => client::TRIP_TIMES_MIN_LEN,
        _ => client::TCP_TRIP_TIMES_MIN_LEN,
    };
    if spec.trip_times && (spec.len as usize) < stamp_room {
        let what = if spec.protocol == Protocol::Udp {
            "datagrams"
        } else {
            "writes"
        };
        let flag = if spec.video.is_some() {
            "--isochronous"
        } else {
            "--trip-times"
        };
        return Err(super::UsageError(format!(
            "{flag} needs {what} of at least {stamp_room} bytes (-l)"
        ))
        .into());
    }
    if multicast && (spec.protocol != Protocol::Udp || spec.direction != Direction::Normal) {
        return Err(super::UsageError(
            "a multicast group takes UDP sent to it: add -u (and no -R or --full-duplex)".into(),
        )
        .into());
    }
    let spec = perfpeer_shared::spec::ValidSpec::new(spec)?;
    let mut opts = args.flags.options()?;
    if args.ipv6_domain {
        opts.family = Some(Family::V6);
    }
    let server = resolve_host(&host, args.port, opts.family)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach {host}: {e}"))?;
    let extras = client::Iperf2Extras {
        ttl: args.ttl,
        announce_trip_times: args.flags.trip_times(),
    };
    let csv = args.csv();
    if !csv {
        out!(
            "{}",
            fmt::client_banner(&host, args.port, spec.protocol, spec.window)
        );
        if let Some(video) = &spec.video {
            out!("{}", fmt::isochronous_line(video));
        }
        if server.ip().is_multicast() {
            outln!(
                "Sending to multicast group {} (TTL {}): no server report comes back",
                server.ip(),
                args.ttl.unwrap_or(1)
            );
        }
    }
    let udp_rx = spec.protocol == Protocol::Udp && spec.direction != Direction::Normal;
    // -e's columns are a sender's: a client that receives (-R) prints the plain rows.
    let enhanced = args.enhanced && spec.direction == Direction::Normal;
    // A reverse TCP --trip-times test: the server stamps its writes, we time them.
    let write_delays =
        spec.protocol == Protocol::Tcp && spec.trip_times && spec.direction == Direction::Reverse;
    let (mut started_ms, mut our_sockets) = (0u64, Vec::new());
    let print = |ev: &TestEvent| {
        match ev {
            TestEvent::Started { sockets, .. } => {
                started_ms = crate::util::unix_ms_now();
                our_sockets.clone_from(sockets);
                if !csv {
                    for s in sockets {
                        out!("{}", fmt::connected_line(s.id, &s.local, &s.remote));
                    }
                    if enhanced {
                        out!("{}", fmt::enhanced_header(spec.protocol));
                    } else if write_delays {
                        out!("{}", fmt::write_latency_header());
                    } else {
                        out!("{}", fmt::header(udp_rx));
                    }
                }
            }
            TestEvent::Interval {
                role: PeerRole::Client,
                report,
            } if args.flags.interval_given() => {
                if csv {
                    out!("{}", fmt::csv_interval(started_ms, &our_sockets, report));
                } else if enhanced {
                    out!("{}", fmt::enhanced_interval_rows(report, args.units()));
                } else {
                    out!("{}", fmt::interval_rows_in(report, args.units()));
                }
            }
            TestEvent::Interval { .. }
            | TestEvent::Stored { .. }
            | TestEvent::FarEndOutput { .. } => {}
        }
        Ok(())
    };
    let outcome = run_printing(
        |events, cancel| client::run(server, &spec, &opts, extras, events, cancel),
        print,
    )
    .await?;
    let result = outcome.with_context(|| format!("test against {host} failed"))?;
    if csv {
        out!("{}", fmt::csv_final(&result));
    } else if enhanced {
        out!("{}", fmt::enhanced_final_rows(&result, args.units()));
    } else {
        out!("{}", fmt::final_rows_in(&result, args.units()));
    }
    Ok(match result.status.ended_early() {
        None => ExitCode::SUCCESS,
        Some(reason) => {
            eprintln!("perfpeer: the test ended early: {reason}");
            ExitCode::from(1)
        }
    })
}

/// `-B GROUP[%DEV]` (and `-H SOURCE`): the group to receive; `-H` without a group is a usage
/// error.
fn multicast_join(args: &IperfArgs, ip: IpAddr) -> anyhow::Result<Option<server::Join>> {
    if !ip.is_multicast() {
        return match args.ssm_host {
            Some(_) => Err(super::UsageError(
                "-H (the source of a source-specific group) needs -B GROUP".into(),
            )
            .into()),
            None => Ok(None),
        };
    }
    Ok(Some(server::Join {
        group: ip,
        device: args.flags.bind_device(),
        local: None,
        source: args.ssm_host,
    }))
}

/// iperf 2's bounce-back request size when `-l` is not given.
const BOUNCEBACK_LEN: u32 = 100;

/// `-c HOST --bounceback`: bursts of requests against an iperf 2 server, in iperf 2's layout.
async fn run_bounceback(host: String, args: &IperfArgs) -> anyhow::Result<ExitCode> {
    use crate::compat::iperf2::bounceback::{self, BounceRequest};
    let usage = |m: String| anyhow::Error::from(super::UsageError(m));
    let spec = args.flags.build_spec(true)?;
    if spec.protocol != Protocol::Tcp || spec.direction != Direction::Normal {
        return Err(usage(
            "--bounceback runs over TCP, one way (no -u, -R)".into(),
        ));
    }
    let duration = match spec.end {
        perfpeer_shared::spec::EndCondition::Time { duration } => duration,
        perfpeer_shared::spec::EndCondition::Bytes { .. } => {
            return Err(usage("--bounceback runs for a time (-t), not -n".into()));
        }
    };
    let seconds = |what: &str, v: f64, max: f64| {
        (v.is_finite() && (0.0..=max).contains(&v))
            .then(|| Duration::from_secs_f64(v))
            .ok_or_else(|| usage(format!("{what} is 0 to {max}")))
    };
    let ask = BounceRequest {
        size: if args.flags.given().len {
            spec.len
        } else {
            BOUNCEBACK_LEN
        },
        burst: 10,
        period: seconds("--bounceback-period", args.bounceback_period, 3600.0)?
            .max(Duration::from_millis(1)),
        hold: seconds("--bounceback-hold (ms)", args.bounceback_hold, 1000.0)? / 1000,
        duration,
        tos: spec.tos,
    };
    let congest = args
        .bounceback_congest
        .as_deref()
        .map(perfpeer_shared::working_load::WorkingLoad::parse)
        .transpose()
        .map_err(|e| usage(format!("--bounceback-congest: {e}")))?;
    if !(8..=bounceback::MAX_SIZE).contains(&ask.size) {
        return Err(usage(format!(
            "-l: a bounce-back request is 8 to {} bytes",
            bounceback::MAX_SIZE
        )));
    }
    let opts = args.flags.options()?;
    let server = resolve_host(&host, args.port, opts.family)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach {host}: {e}"))?;
    out!(
        "{}",
        fmt::client_banner(&host, args.port, Protocol::Tcp, spec.window)
    );
    outln!(
        "Bounce-back test (size= {} Byte) (server hold req={} usecs)",
        ask.size,
        ask.hold.as_micros()
    );
    let timeout = opts.connect_timeout;
    let bursts = crate::util::spawn_blocking(move || {
        bounceback::run_client(server, &ask, timeout, &|| false)
    });
    // --bounceback-congest: the load runs beside the bursts, as its own iperf 2 test.
    let load = congest.and_then(|load| {
        let load_spec = perfpeer_shared::spec::ValidSpec::new(load.spec_beside(&spec)).ok()?;
        let opts = opts.clone();
        let task = crate::util::spawn_erased(async move {
            let (events, _unread) = mpsc::unbounded_channel();
            let cancel = tokio_util::sync::CancellationToken::new();
            let extras = client::Iperf2Extras::default();
            client::run(server, &load_spec, &opts, extras, events, cancel).await
        });
        Some((load, task))
    });
    let outcome = bursts
        .await?
        .with_context(|| format!("bounce-back test against {host} failed"))?;
    let loaded = match load {
        Some((load, task)) => Some((load, task.await?)),
        None => None,
    };
    let (local, remote) = &outcome.addresses;
    out!("{}", fmt::connected_line(1, local, remote));
    out!("{}", fmt::bounceback_header());
    let Some(rtt) = &outcome.rtt else {
        bail!("the server answered no request");
    };
    out!(
        "{}",
        fmt::bounceback_row(
            1,
            outcome.bounced.duration.as_secs_f64(),
            outcome.bounced.bytes,
            (
                rtt.count,
                [rtt.mean_ms, rtt.min_ms, rtt.max_ms, rtt.stdev_ms]
            ),
            outcome.requests_per_second().unwrap_or(0.0),
            args.units(),
        )
    );
    if let Some((load, loaded)) = loaded {
        let words = perfpeer_shared::working_load::WorkingLoadResult::of(
            load,
            loaded.as_ref().map_err(ToString::to_string),
        )
        .words();
        outln!("Working load: {words}");
        if let Ok(result) = &loaded {
            out!("{}", fmt::final_rows_in(result, args.units()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_server(args: &IperfArgs) -> anyhow::Result<ExitCode> {
    let ip = match args.flags.bind_addr() {
        Some(ip) => ip,
        None if args.ipv6_domain => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        None if args.flags.ipv4_only() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let config = server::ServerConfig {
        max_duration: Duration::from_secs(args.max_duration),
        max_memory: args
            .max_memory
            .unwrap_or_else(crate::budget::MemoryBudget::default_limit),
        one_client_at_a_time: args.single_client,
        multicast: multicast_join(args, ip)?,
        histograms: args
            .flags
            .histogram(perfpeer_shared::histogram::HistogramSpec::DEFAULT),
    };
    let (tx, events) = mpsc::unbounded_channel();
    let csv = args.csv();
    match (&config.multicast, csv) {
        (_, true) => {}
        (Some(join), false) => out!(
            "{}",
            fmt::group_banner(args.port, &join.joined_line(), config.histograms)
        ),
        (None, false) => out!(
            "{}",
            fmt::server_banner(
                args.port,
                args.flags.spec(true).ok().and_then(|s| s.window),
                config.histograms
            )
        ),
    }
    let addr = SocketAddr::new(ip, args.port);
    serve_printing(
        args.port,
        |shutdown| server::run(addr, config, tx, shutdown),
        events,
        |ev| match ev {
            server::ServerEvent::Finished(result) if csv => out!("{}", fmt::csv_final(&result)),
            server::ServerEvent::Finished(result) => {
                out!("{}", fmt::text_in(&result, args.units()));
            }
            server::ServerEvent::Sum { sum, .. } if !csv => {
                out!(
                    "{}",
                    fmt::client_sum_row(sum.seconds, sum.bytes, args.units())
                );
            }
            server::ServerEvent::Sum { .. } => {}
            server::ServerEvent::BounceBack {
                id,
                local,
                from,
                header,
                bounced,
            } => out!(
                "{}",
                fmt::bounceback_text(
                    id,
                    (&local, &from.to_string()),
                    (header.size, header.hold_us),
                    bounced.duration.as_secs_f64(),
                    bounced.bytes,
                    args.units(),
                )
            ),
            server::ServerEvent::Refused { from, reason } => outln!("[ ID] {from}: {reason}"),
            // The server lets through a few events of each kind per period and counts the rest
            // (every line a client can cause is rate-limited before it gets here).
            server::ServerEvent::Suppressed {
                what,
                count,
                period_secs,
            } => outln!("[ ID] {count} more {what} in the last {period_secs} s"),
        },
    )
    .await
}
