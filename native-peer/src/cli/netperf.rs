//! `perfpeer netperf -H PEER`: netperf's flags (global ones, then test-specific ones after `--`),
//! run against a perfpeer peer, or with `--netserver` against a netserver (netperf's own
//! protocol, `compat::netperf::client`), and printed as netperf's tables by
//! `perfpeer_shared::format::netperf`. Bad flags exit 2, a partial test or a failure 1.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser};
use perfpeer_shared::format::netperf::select::{self, Style};
use perfpeer_shared::format::netperf::{self as fmt, NetperfTest};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::spec::{
    Direction, EndCondition, MAX_UDP_LEN, Protocol, RequestResponse, TestSpec, ValidSpec,
};

use super::live::run_printing;
use crate::compat::netperf::{client, codec};
use crate::session::client::ClientOptions;
use crate::session::events::TestEvent;
use crate::session::far_ends::run_test;
use crate::session::target::{Family, split_host_port};

/// Flags of `perfpeer netperf` (netperf's letters).
#[derive(Debug, Args)]
pub(super) struct NetperfArgs {
    /// The perfpeer peer: host, host:port or [v6addr]:port (its control port, default 5210;
    /// a netserver's 12865).
    #[arg(short = 'H', value_name = "PEER", default_value = "localhost")]
    host: String,
    /// The far end is a netserver (stock netperf's, or `perfpeer netserver`): speak netperf
    /// 2.7's control protocol (default port 12865). TCP_CRR and TCP_CC run only this way.
    #[arg(long)]
    netserver: bool,
    /// TCP_STREAM, TCP_MAERTS (the peer sends), TCP_RR, UDP_STREAM, UDP_RR; with --netserver
    /// also TCP_CRR and TCP_CC (a connection per transaction).
    #[arg(short = 't', value_name = "TEST", default_value = "TCP_STREAM", value_parser = parse_test)]
    test: NetperfTest,
    /// Test length: seconds, or -N for N bytes (stream tests) or N transactions (_RR tests).
    #[arg(short = 'l', value_name = "SECS|-N", default_value = "10", allow_negative_numbers = true,
          value_parser = parse_length)]
    length: Length,
    /// The peer's control port (instead of -H's :PORT).
    #[arg(short = 'p', value_name = "PORT")]
    port: Option<u16>,
    /// Throughput units: k, m (default), g for 10^3/10^6/10^9 bits/s; K, M, G for KB/MB/GB/s.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = parse_units)]
    units: fmt::Units,
    /// Verbosity: 0 prints only the headline figure, 1 netperf's table, 2 adds the round-trip
    /// percentiles of an _RR test.
    #[arg(short = 'v', value_name = "0|1|2", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(0..=2))]
    verbosity: u16,
    /// Keep latency statistics (accepted: perfpeer's _RR tests always keep their round trips).
    #[arg(short = 'j')]
    latency_stats: bool,
    /// Report local CPU utilisation and service demand.
    #[arg(short = 'c')]
    local_cpu: bool,
    /// Report remote CPU utilisation and service demand.
    #[arg(short = 'C')]
    remote_cpu: bool,
    /// 1 prints the banner and column titles, 0 only the figures.
    #[arg(short = 'P', value_name = "0|1", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(0..=1))]
    headers: u16,
    /// IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6')]
    ipv6: bool,
    /// Test-specific options after `--`: -m SIZE, -M SIZE, -s SIZE, -S SIZE, -r REQ[,RESP], -D.
    #[arg(last = true, value_name = "TEST-OPTIONS")]
    test_options: Vec<String>,
}

/// netperf's test-specific options (the part after `--`).
#[derive(Debug, Parser)]
#[command(
    name = "perfpeer netperf -- (test-specific options)",
    no_binary_name = true
)]
struct TestOptions {
    /// Bytes per send (default: the local socket send buffer, as netperf; UDP at most 65507).
    #[arg(short = 'm', value_name = "SIZE", value_parser = parse_one_size)]
    send_size: Option<u32>,
    /// Bytes per receive: accepted for netperf's scripts; perfpeer's receivers read in their own size.
    #[arg(short = 'M', value_name = "SIZE", value_parser = parse_pair)]
    recv_size: Option<Pair>,
    /// Local socket buffer SEND[,RECV] (perfpeer applies one size to both ends).
    #[arg(short = 's', value_name = "SIZE", value_parser = parse_pair)]
    local_buffer: Option<Pair>,
    /// Remote socket buffer SEND[,RECV] (perfpeer applies one size to both ends).
    #[arg(short = 'S', value_name = "SIZE", value_parser = parse_pair)]
    remote_buffer: Option<Pair>,
    /// TCP_RR request and response sizes REQ[,RESP] (one value sets both; default 1,1).
    #[arg(short = 'r', value_name = "REQ,RESP", value_parser = parse_pair)]
    rr_sizes: Option<Pair>,
    /// TCP_NODELAY on the data connection.
    #[arg(short = 'D')]
    no_delay: bool,
    /// Data connection ports LOCAL[,REMOTE]: the local one is bound; the remote one is asked
    /// of a netserver (a perfpeer peer names its own data port, `serve --data-port`).
    #[arg(short = 'P', value_name = "LPORT[,RPORT]", value_parser = parse_ports)]
    ports: Option<DataPorts>,
    /// Output selectors as CSV: a list (NAME,NAME…) or a file of them; alone, netperf's defaults.
    #[arg(short = 'o', value_name = "LIST|FILE", num_args = 0..=1, default_missing_value = "",
          conflicts_with_all = ["columns", "keyval"])]
    csv: Option<String>,
    /// Output selectors in columns (as -o).
    #[arg(short = 'O', value_name = "LIST|FILE", num_args = 0..=1, default_missing_value = "",
          conflicts_with = "keyval")]
    columns: Option<String>,
    /// Output selectors as NAME=value lines (as -o; what flent reads).
    #[arg(short = 'k', value_name = "LIST|FILE", num_args = 0..=1, default_missing_value = "")]
    keyval: Option<String>,
}

impl TestOptions {
    /// The selectors asked for and their style, if any.
    fn selection(&self, test: NetperfTest) -> anyhow::Result<Option<(Vec<&'static str>, Style)>> {
        let Some((arg, style)) = [
            (&self.csv, Style::Csv),
            (&self.columns, Style::Columns),
            (&self.keyval, Style::KeyValue),
        ]
        .into_iter()
        .find_map(|(a, s)| a.as_ref().map(|a| (a, s))) else {
            return Ok(None);
        };
        if arg.is_empty() {
            return Ok(Some((select::default_list(test), style)));
        }
        // As netperf: a readable file holds the list, anything else is the list itself.
        let list = match std::fs::read_to_string(arg) {
            Ok(text) => text,
            Err(_) => arg.clone(),
        };
        Ok(Some((
            select::parse_list(&list).map_err(anyhow::Error::msg)?,
            style,
        )))
    }
}

/// How long a test runs: netperf's `-l` (seconds, or a negative count).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Length {
    Time(Duration),
    /// Bytes of a stream test, transactions of a request/response test.
    Count(u64),
}

/// Two sizes as netperf's `break_args` reads `A,B`: `A` alone sets both, an empty side neither.
type Pair = (Option<u32>, Option<u32>);

/// The data ports of `-- -P` (0 or none: any).
#[derive(Debug, Clone, Copy)]
struct DataPorts {
    local: Option<u16>,
    remote: Option<u16>,
}

fn parse_ports(s: &str) -> Result<DataPorts, String> {
    let port = |t: &str| -> Result<Option<u16>, String> {
        match t.trim() {
            "" | "0" => Ok(None),
            p => p
                .parse::<u16>()
                .map(Some)
                .map_err(|_| format!("-P {s}: '{p}' is not a port")),
        }
    };
    let (local, remote) = match s.split_once(',') {
        Some((l, r)) => (port(l)?, port(r)?),
        None => (port(s)?, None),
    };
    Ok(DataPorts { local, remote })
}

fn parse_test(s: &str) -> Result<NetperfTest, String> {
    match s.to_ascii_uppercase().as_str() {
        "TCP_STREAM" => Ok(NetperfTest::TcpStream),
        "TCP_MAERTS" => Ok(NetperfTest::TcpMaerts),
        "TCP_RR" => Ok(NetperfTest::TcpRr),
        "UDP_STREAM" => Ok(NetperfTest::UdpStream),
        "UDP_RR" => Ok(NetperfTest::UdpRr),
        "TCP_CRR" => Ok(NetperfTest::TcpCrr),
        "TCP_CC" => Ok(NetperfTest::TcpCc),
        _ => Err(format!(
            "unknown test '{s}': perfpeer netperf runs TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, TCP_CC, UDP_STREAM and UDP_RR"
        )),
    }
}

fn parse_length(s: &str) -> Result<Length, String> {
    if let Some(count) = s.strip_prefix('-') {
        return match count.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Length::Count(n)),
            _ => Err(format!(
                "-l {s}: a negative -l is a count of bytes or transactions, a whole number"
            )),
        };
    }
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(Length::Time(d)),
        _ => Err(format!("-l must be more than 0 seconds, got {s}")),
    }
}

fn parse_units(s: &str) -> Result<fmt::Units, String> {
    let letter = super::flags::unit_letter(s, "kmgKMG", "a netperf unit")?;
    fmt::Units::from_flag(letter).ok_or_else(|| format!("'{s}' is not a netperf unit"))
}

/// A size as netperf's `convert` reads it: K/M/G multiply by 1024ⁿ, k/m/g by 1000ⁿ.
fn parse_size(s: &str) -> Result<u32, String> {
    let bad = || format!("'{s}' is not a size (a number with an optional K, M, G, k, m or g)");
    let (digits, scale) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale: u64 = match c {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'k' => 1_000,
                'm' => 1_000_000,
                'g' => 1_000_000_000,
                _ => return Err(bad()),
            };
            (&s[..i], scale)
        }
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    u32::try_from(n.saturating_mul(scale)).map_err(|_| format!("'{s}' is too large"))
}

fn parse_pair(s: &str) -> Result<Pair, String> {
    let side = |v: &str| (!v.is_empty()).then(|| parse_size(v)).transpose();
    match s.split_once(',') {
        Some((a, b)) => Ok((side(a)?, side(b)?)),
        None => {
            let v = parse_size(s)?;
            Ok((Some(v), Some(v)))
        }
    }
}

fn parse_one_size(s: &str) -> Result<u32, String> {
    match parse_pair(s)? {
        (Some(v), Some(w)) if v == w => Ok(v),
        (Some(v), None) => Ok(v),
        _ => Err(format!(
            "-m {s}: perfpeer uses one message size; give -m SIZE"
        )),
    }
}

impl TestOptions {
    /// `-m` belongs to stream tests, `-r` to request/response ones.
    fn check_sizes(&self, test: NetperfTest) -> anyhow::Result<()> {
        if test.is_transactional() && self.send_size.is_some() {
            bail!("-m applies to stream tests; give the request/response sizes with -r REQ,RESP");
        }
        if !test.is_transactional() && self.rr_sizes.is_some() {
            bail!(
                "-r applies to TCP_RR, UDP_RR, TCP_CRR and TCP_CC; give the send size of a stream \
                 test with -m"
            );
        }
        Ok(())
    }

    /// The one socket buffer size perfpeer can apply, from every -s/-S value given.
    fn window(&self) -> anyhow::Result<Option<u32>> {
        let mut sizes = [self.local_buffer, self.remote_buffer]
            .into_iter()
            .flatten()
            .flat_map(|(a, b)| [a, b])
            .flatten();
        let Some(first) = sizes.next() else {
            return Ok(None);
        };
        if sizes.any(|s| s != first) {
            bail!(
                "-s/-S: perfpeer applies one socket buffer size to both ends and both directions; \
                 give them a single value"
            );
        }
        Ok(Some(first))
    }
}

impl NetperfArgs {
    /// The spec of the chosen test with the test-specific options applied, validated.
    fn spec(&self, t: &TestOptions) -> anyhow::Result<ValidSpec> {
        if matches!(self.test, NetperfTest::TcpCrr | NetperfTest::TcpCc) {
            bail!(
                "{} opens a connection per transaction, which only a netserver runs: add \
                 --netserver (stock netserver or perfpeer netserver at the far end)",
                self.test.name()
            );
        }
        if let Some(r) = t.ports.and_then(|p| p.remote) {
            bail!(
                "-P ,{r}: a perfpeer peer names its own data port (serve --data-port), so the \
                 remote port cannot be chosen; give -P LPORT for the local one"
            );
        }
        let protocol = self.test.protocol();
        let mut spec = TestSpec::new(protocol);
        let rr = self.test.is_transactional();
        spec.direction = match self.test {
            NetperfTest::TcpMaerts => Direction::Reverse,
            _ => Direction::Normal,
        };
        // netperf sends as fast as it can: no rate, also for UDP.
        spec.bitrate = None;
        spec.window = t.window()?;
        spec.no_delay = t.no_delay;
        t.check_sizes(self.test)?;
        if rr {
            let (req, resp) = t.rr_sizes.unwrap_or((None, None));
            spec.len = req.unwrap_or(1);
            spec.rr = Some(RequestResponse {
                response_len: resp.unwrap_or(1),
                probe_interval_us: None,
                connection_per_transaction: None,
                bursts: None,
            });
        } else {
            spec.len = t.send_size.unwrap_or_else(|| {
                client::default_send_size(protocol, spec.window, ([0, 0, 0, 0], 0).into())
            });
        }
        spec.end = match self.length {
            Length::Time(duration) => EndCondition::Time { duration },
            // Transactions of an _RR test: each sends one request of spec.len bytes.
            Length::Count(n) if rr => EndCondition::Bytes {
                bytes: n.saturating_mul(u64::from(spec.len)),
            },
            Length::Count(bytes) => EndCondition::Bytes { bytes },
        };
        Ok(ValidSpec::new(spec)?)
    }

    fn options(&self) -> ClientOptions {
        let family = match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        };
        ClientOptions {
            family,
            ..ClientOptions::default()
        }
    }
}

fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Runs the test and prints netperf's banner (when the streams are up) and table.
pub(super) async fn run(args: NetperfArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    let test_opts = match TestOptions::try_parse_from(&args.test_options) {
        Ok(t) => t,
        Err(e) => {
            let _ = e.print();
            return Ok(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)));
        }
    };
    let selection = match test_opts.selection(args.test) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("perfpeer netperf: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    let headers = args.headers == 1;
    let host = split_host_port(&args.host).map_or_else(|_| args.host.clone(), |(h, _)| h);
    let opts = fmt::Options {
        host: &host,
        local_cpu: args.local_cpu,
        remote_cpu: args.remote_cpu,
        headers,
        units: args.units,
    };
    // Against a netserver, the classic table prints each end's socket sizes as its data socket
    // was made, as stock netperf does; the selectors' *_SOCKET_SIZE_END, the final ones.
    let (result, classic) = if args.netserver {
        match against_netserver(&args, &test_opts, &host).await? {
            Ok(finished) => {
                let classic = finished.for_classic_table();
                (finished.result, Some(classic))
            }
            Err(code) => return Ok(code),
        }
    } else {
        match against_peer(&args, &test_opts, &host).await? {
            Ok(result) => (result, None),
            Err(code) => return Ok(code),
        }
    };
    match (selection, args.verbosity) {
        (Some((names, style)), _) => print(&select::render(&result, &names, style, &opts)?)?,
        (None, 0) => print(&format!(
            "{:.2}\n",
            fmt::headline(&result, args.units)?.value
        ))?,
        (None, verbosity) => {
            print(&fmt::table(classic.as_ref().unwrap_or(&result), &opts)?)?;
            if verbosity == 2 {
                print(&fmt::rr_detail(&result))?;
            }
        }
    }
    Ok(match result.status.ended_early() {
        None => ExitCode::SUCCESS,
        Some(reason) => {
            eprintln!(
                "perfpeer netperf: the test ended early ({reason}); the figures cover what ran"
            );
            ExitCode::from(1)
        }
    })
}

/// A usage error's exit, or the finished test.
type Ran<T = TestResult> = Result<T, ExitCode>;

fn usage_error<T>(e: &anyhow::Error) -> Ran<T> {
    eprintln!("perfpeer netperf: {e:#}");
    Err(ExitCode::from(2))
}

/// Runs the test against a perfpeer peer, printing the banner when the streams are up.
async fn against_peer(args: &NetperfArgs, t: &TestOptions, host: &str) -> anyhow::Result<Ran> {
    let spec = match args.spec(t) {
        Ok(spec) => spec,
        Err(e) => return Ok(usage_error(&e)),
    };
    let target = match args.port {
        Some(port) if host.contains(':') => format!("[{host}]:{port}"),
        Some(port) => format!("{host}:{port}"),
        None => args.host.clone(),
    };
    let mut client_opts = args.options();
    client_opts.data_port = t.ports.and_then(|p| p.local);
    let mut banner_due = args.headers == 1;
    let on_event = |ev: &TestEvent| -> std::io::Result<()> {
        if let TestEvent::Started { server_addr, .. } = ev
            && std::mem::take(&mut banner_due)
        {
            let ip = server_addr.parse::<SocketAddr>().ok().map(|a| a.ip());
            print(&fmt::banner(args.test, host, ip, spec.no_delay))?;
        }
        Ok(())
    };
    let outcome = run_printing(
        |events, cancel| run_test(&target, &spec, &client_opts, events, cancel),
        on_event,
    )
    .await?;
    match outcome {
        Ok(result) => Ok(Ok(result)),
        Err(e) => Err(anyhow::Error::new(e).context(format!("test against {target} failed"))),
    }
}

/// Runs the test against a netserver with netperf's own protocol, on a blocking thread;
/// Ctrl-C ends its data phase and the figures cover what ran.
async fn against_netserver(
    args: &NetperfArgs,
    t: &TestOptions,
    host: &str,
) -> anyhow::Result<Ran<client::Finished>> {
    let port = match (args.port, split_host_port(&args.host)) {
        (Some(port), _) | (None, Ok((_, port))) => port,
        (None, Err(_)) => codec::DEFAULT_PORT,
    };
    // Flags are checked before the name is looked up: a usage error sends nothing.
    let mut plan = match args.netserver_plan(t, SocketAddr::from(([0, 0, 0, 0], port))) {
        Ok(plan) => plan,
        Err(e) => return Ok(usage_error(&e)),
    };
    let family = args.options().family;
    let server = match crate::session::target::resolve_host(host, port, family).await {
        Ok(addr) => addr,
        Err(e) => bail!("{e}"),
    };
    plan.server = server;
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = {
        let stop = stop.clone();
        crate::util::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.store(true, Ordering::Relaxed);
            }
        })
    };
    let (test, no_delay, headers, host) = (
        plan.test,
        plan.no_delay,
        args.headers == 1,
        host.to_string(),
    );
    let outcome = crate::util::spawn_blocking(move || {
        client::run(&plan, &stop, |ip| {
            if headers {
                let _ = print(&fmt::banner(test, &host, Some(ip), no_delay));
            }
        })
    })
    .await;
    stopper.abort();
    match outcome? {
        Ok(finished) => Ok(Ok(finished)),
        Err(e) => Err(anyhow::Error::new(e).context(format!("test against {server} failed"))),
    }
}

impl NetperfArgs {
    /// The test as netperf's protocol asks a netserver for it.
    fn netserver_plan(&self, t: &TestOptions, server: SocketAddr) -> anyhow::Result<client::Plan> {
        let length = match self.length {
            Length::Time(d) if d.subsec_nanos() == 0 => client::Length::Seconds(
                u32::try_from(d.as_secs())
                    .unwrap_or(u32::MAX)
                    .min(u32::try_from(i32::MAX).unwrap_or(u32::MAX)),
            ),
            Length::Time(d) => bail!("-l {}: a netserver takes whole seconds", d.as_secs_f64()),
            Length::Count(n) => client::Length::Count(
                u32::try_from(n)
                    .ok()
                    .filter(|&n| i32::try_from(n).is_ok())
                    .ok_or_else(|| {
                        anyhow::anyhow!("-l -{n}: a netserver counts up to {}", i32::MAX)
                    })?,
            ),
        };
        t.check_sizes(self.test)?;
        let transactional = self.test.is_transactional();
        let (request, response) = t.rr_sizes.unwrap_or((None, None));
        let udp = self.test.protocol() == Protocol::Udp;
        let send_size = if transactional {
            Some(request.unwrap_or(1))
        } else {
            t.send_size
        };
        let response_size = response.unwrap_or(1);
        let limit = if udp { MAX_UDP_LEN } else { 1 << 20 };
        for (what, size) in [("send", send_size), ("response", Some(response_size))] {
            if size.is_some_and(|n| n == 0 || n > limit) {
                bail!("the {what} size must be 1 to {limit} bytes here");
            }
        }
        if matches!(self.test, NetperfTest::TcpCrr | NetperfTest::TcpCc)
            && t.ports.and_then(|p| p.local).is_some()
        {
            bail!(
                "-P LPORT: {} opens a connection per transaction; one local port cannot serve them",
                self.test.name()
            );
        }
        Ok(client::Plan {
            test: self.test,
            server,
            length,
            send_size,
            recv_size: t.recv_size.and_then(|(a, b)| a.or(b)),
            response_size,
            local_buffers: t.local_buffer.unwrap_or((None, None)),
            remote_buffers: t.remote_buffer.unwrap_or((None, None)),
            no_delay: t.no_delay,
            local_port: t.ports.and_then(|p| p.local),
            remote_port: t.ports.and_then(|p| p.remote),
            local_cpu: self.local_cpu,
            remote_cpu: self.remote_cpu,
        })
    }
}

#[cfg(test)]
mod tests;
