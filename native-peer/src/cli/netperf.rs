//! `perfpeer netperf -H PEER`: netperf's flags (global ones, then test-specific ones after `--`),
//! run against a perfpeer peer (not a stock netserver) and printed as netperf's tables by
//! `perfpeer_shared::format::netperf`. Bad flags exit 2, a partial test or a failure 1.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser};
use perfpeer_shared::format::netperf::select::{self, Style};
use perfpeer_shared::format::netperf::{self as fmt, NetperfTest};
use perfpeer_shared::spec::{
    Direction, EndCondition, MAX_UDP_LEN, Protocol, RequestResponse, TestSpec, ValidSpec,
};

use super::live::run_printing;
use crate::session::client::{ClientOptions, run_test};
use crate::session::events::TestEvent;
use crate::session::target::{Family, split_host_port};

/// Flags of `perfpeer netperf` (netperf's letters).
#[derive(Debug, Args)]
pub struct NetperfArgs {
    /// The perfpeer peer: host, host:port or [v6addr]:port (its control port, default 5210).
    #[arg(short = 'H', value_name = "PEER", default_value = "localhost")]
    host: String,
    /// TCP_STREAM, TCP_MAERTS (the peer sends), TCP_RR or UDP_STREAM.
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
          value_parser = clap::value_parser!(u8).range(0..=2))]
    verbosity: u8,
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
          value_parser = clap::value_parser!(u8).range(0..=1))]
    headers: u8,
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
    /// Data connection ports LOCAL[,REMOTE]: the local one is bound; a perfpeer peer names its
    /// own data port (`serve --data-port`), so a remote one is refused.
    #[arg(short = 'P', value_name = "LPORT[,RPORT]", value_parser = parse_ports)]
    ports: Option<LocalPort>,
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

/// The local data port of `-- -P` (0 or none: any).
#[derive(Debug, Clone, Copy)]
struct LocalPort(Option<u16>);

fn parse_ports(s: &str) -> Result<LocalPort, String> {
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
    if let Some(r) = remote {
        return Err(format!(
            "-P {s}: a perfpeer peer names its own data port (serve --data-port), so remote port {r} cannot be chosen; give -P LPORT for the local one"
        ));
    }
    Ok(LocalPort(local))
}

fn parse_test(s: &str) -> Result<NetperfTest, String> {
    match s.to_ascii_uppercase().as_str() {
        "TCP_STREAM" => Ok(NetperfTest::TcpStream),
        "TCP_MAERTS" => Ok(NetperfTest::TcpMaerts),
        "TCP_RR" => Ok(NetperfTest::TcpRr),
        "UDP_STREAM" => Ok(NetperfTest::UdpStream),
        "UDP_RR" => Ok(NetperfTest::UdpRr),
        _ => Err(format!(
            "unknown test '{s}': perfpeer netperf runs TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_STREAM and UDP_RR"
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

/// netperf's default send size: the send buffer of a fresh socket with the requested size
/// (Linux reports twice what was asked), capped for UDP; 4096 if it cannot be read.
fn default_send_size(protocol: Protocol, window: Option<u32>) -> u32 {
    use socket2::{Domain, Socket, Type};
    let ty = match protocol {
        Protocol::Tcp => Type::STREAM,
        Protocol::Udp | Protocol::Dccp => Type::DGRAM,
    };
    let probed = Socket::new(Domain::IPV4, ty, None).and_then(|s| {
        if let Some(w) = window {
            s.set_send_buffer_size(w as usize)?;
        }
        s.send_buffer_size()
    });
    match (probed, protocol) {
        (Ok(n), Protocol::Udp) if n > 0 => {
            u32::try_from(n).map_or(MAX_UDP_LEN, |n| n.min(MAX_UDP_LEN))
        }
        (Ok(n), Protocol::Tcp) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX),
        _ => 4096,
    }
}

impl NetperfArgs {
    /// The spec of the chosen test with the test-specific options applied, validated.
    fn spec(&self, t: &TestOptions) -> anyhow::Result<ValidSpec> {
        let protocol = match self.test {
            NetperfTest::UdpStream | NetperfTest::UdpRr => Protocol::Udp,
            _ => Protocol::Tcp,
        };
        let mut spec = TestSpec::new(protocol);
        let rr = matches!(self.test, NetperfTest::TcpRr | NetperfTest::UdpRr);
        spec.direction = match self.test {
            NetperfTest::TcpMaerts => Direction::Reverse,
            _ => Direction::Normal,
        };
        // netperf sends as fast as it can: no rate, also for UDP.
        spec.bitrate = None;
        spec.window = t.window()?;
        spec.no_delay = t.no_delay;
        if matches!(self.test, NetperfTest::TcpRr | NetperfTest::UdpRr) {
            if t.send_size.is_some() {
                bail!(
                    "-m applies to stream tests; give the request/response sizes with -r REQ,RESP"
                );
            }
            let (req, resp) = t.rr_sizes.unwrap_or((None, None));
            spec.len = req.unwrap_or(1);
            spec.rr = Some(RequestResponse {
                response_len: resp.unwrap_or(1),
                probe_interval_us: None,
            });
        } else {
            if t.rr_sizes.is_some() {
                bail!(
                    "-r applies to TCP_RR and UDP_RR; give the send size of a stream test with -m"
                );
            }
            spec.len = t
                .send_size
                .unwrap_or_else(|| default_send_size(protocol, spec.window));
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
pub async fn run(args: NetperfArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    let test_opts = match TestOptions::try_parse_from(&args.test_options) {
        Ok(t) => t,
        Err(e) => {
            let _ = e.print();
            return Ok(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)));
        }
    };
    let spec = match args.spec(&test_opts) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("perfpeer netperf: {e:#}");
            return Ok(ExitCode::from(2));
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
    let target = match args.port {
        Some(port) if host.contains(':') => format!("[{host}]:{port}"),
        Some(port) => format!("{host}:{port}"),
        None => args.host.clone(),
    };
    let mut client_opts = args.options();
    client_opts.data_port = test_opts.ports.and_then(|p| p.0);
    let mut banner_due = headers;
    let on_event = |ev: &TestEvent| -> std::io::Result<()> {
        if let TestEvent::Started { server_addr, .. } = ev
            && std::mem::take(&mut banner_due)
        {
            let ip = server_addr.parse::<SocketAddr>().ok().map(|a| a.ip());
            print(&fmt::banner(args.test, &host, ip, spec.no_delay))?;
        }
        Ok(())
    };
    let outcome = run_printing(
        |events, cancel| run_test(&target, &spec, &client_opts, events, cancel),
        on_event,
    )
    .await?;
    let result = match outcome {
        Ok(result) => result,
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("test against {target} failed")));
        }
    };
    match (selection, args.verbosity) {
        (Some((names, style)), _) => print(&select::render(&result, &names, style, &opts)?)?,
        (None, 0) => print(&format!(
            "{:.2}\n",
            fmt::headline(&result, args.units)?.value
        ))?,
        (None, verbosity) => {
            print(&fmt::table(&result, &opts)?)?;
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

#[cfg(test)]
mod tests;
