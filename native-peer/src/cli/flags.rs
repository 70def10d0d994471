//! The test flags that `perfpeer test`, `perfpeer iperf3 -c` and `perfpeer iperf -c` share
//! (iperf3's letters), and how they become one `TestSpec`, the client's options and the output
//! style.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use perfpeer_shared::histogram::HistogramSpec;
use perfpeer_shared::spec::{
    Direction, EndCondition, MAX_INTERVAL, MAX_TEST_TIME, Protocol, RequestResponse, TestSpec,
    ValidSpec,
};
use perfpeer_shared::units::{BitRate, parse_rate, parse_size};
use perfpeer_shared::video::VideoSpec;

use super::output::Style;
use crate::session::client::ClientOptions;
use crate::session::target::Family;

/// Which of the common flags were given (modes pick their own defaults for the others).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Given {
    /// `-l`.
    pub len: bool,
    /// `-b`.
    pub bitrate: bool,
    /// `-t`.
    pub time: bool,
    /// `-n`.
    pub bytes: bool,
    /// `-P`.
    pub parallel: bool,
}

/// Test flags shared by `perfpeer test` and `perfpeer iperf3 -c`.
#[derive(Debug, Args)]
pub(super) struct TestFlags {
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
    /// Parallel streams per direction (default 1; 4 with --latency-under-load).
    #[arg(short = 'P', long)]
    parallel: Option<u16>,
    /// Reverse: the peer sends, this machine receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    reverse: bool,
    /// Both directions at once (iperf 2's --full-duplex: one connection each way's streams
    /// share).
    #[arg(long, visible_alias = "full-duplex")]
    bidir: bool,
    /// Target rate (K/M/G = 1000-based; 0 = unlimited; UDP default 1M): for the whole test per
    /// direction with `perfpeer test`, per stream with `perfpeer iperf3` (as iperf3 has it).
    /// With `/N` (`-b 10M/20`), each stream sends N writes back to back, then waits for the
    /// rate, as iperf3's burst mode.
    #[arg(short = 'b', long, value_name = "RATE[/BURST]", value_parser = parse_rate_arg)]
    bitrate: Option<RateArg>,
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
    /// Local address for the data streams, and optionally its interface: `ADDR[%DEV]` (as
    /// --bind-dev DEV). `perfpeer iperf -s -u -B GROUP[%DEV]` joins a multicast group.
    #[arg(short = 'B', long, value_name = "ADDR[%DEV]", value_parser = parse_bind)]
    bind: Option<BindArg>,
    /// Network interface for every connection of the test (SO_BINDTODEVICE), e.g. wlan0: the
    /// test leaves and arrives there whatever the routes say.
    #[arg(long, value_name = "DEV", value_parser = parse_device)]
    bind_dev: Option<String>,
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
    /// UDP: the one-way delay of every datagram (the sender's wall-clock time against the
    /// receiver's): exact on one host, as good as the clocks' NTP/PTP sync between two.
    #[arg(long = "trip-times")]
    trip_times: bool,
    /// One-way delays also counted in bins (iperf 2's --histograms[=WIDTH[u|m][,BINS]]):
    /// 100 µs × 10000 unless given; implies --trip-times (the iperf server: counts the delays
    /// of clients that send --trip-times).
    #[arg(
        long = "histograms",
        aliases = ["udp-histograms", "udp-histogram"],
        value_name = "WIDTH[u|m][,BINS]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    histograms: Option<String>,
    /// UDP: video-like frames, iperf 2's --isochronous[=FPS:MEAN,STDEV] (60:20m,0 unless given):
    /// FPS frames a second, sizes log-normal around MEAN bit/s, each sent as a burst of -l
    /// datagrams; reports frames whole, lost and late and their latency. Implies --trip-times;
    /// not with -b.
    #[arg(
        long = "isochronous",
        value_name = "FPS:MEAN,STDEV",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "60:20m,0",
        value_parser = VideoSpec::parse
    )]
    isochronous: Option<VideoSpec>,
    /// Pace TCP with the kernel's SO_MAX_PACING_RATE instead of perfpeer's clock (needs -b).
    #[arg(long)]
    fq_pacing: bool,
    /// Seconds to wait for the peer to answer (default 5).
    #[arg(long, value_name = "SECS")]
    connect_timeout: Option<f64>,
}

/// How a tool reads the common flags where the tools differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `perfpeer test`: `-b` for a whole direction, `-t 0` and `-i 0` refused,
    /// `--connect-timeout` in seconds.
    Perfpeer,
    /// iperf3: `-b` per stream, `-t 0` until stopped, `-i 0` no reports during the test,
    /// `--connect-timeout` in milliseconds.
    Iperf3,
}

/// One of `letters`, as the tools' `-f` takes a unit (`k`, `M`, …); anything else is refused
/// as not being `what`, with the letters that are.
pub(super) fn unit_letter(s: &str, letters: &str, what: &str) -> Result<char, String> {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if letters.contains(c) => Ok(c),
        _ => {
            let choices: Vec<String> = letters.chars().map(String::from).collect();
            Err(format!(
                "'{s}' is not {what}: one of {}",
                choices.join(", ")
            ))
        }
    }
}

/// `--histograms`' value: the bins given, `None` for the command's default (read when the
/// command starts, [`TestFlags::check_histograms`]: a clap reader of its own type would be
/// code of its own on a router).
fn parse_histograms(s: &str) -> Result<Option<HistogramSpec>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    HistogramSpec::parse(s, HistogramSpec::DEFAULT).map(Some)
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// A network interface's name as the kernel takes it: 1 to 15 bytes, no `/`, no spaces.
fn parse_device(s: &str) -> Result<String, String> {
    let ok = (1..=15).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not an interface name (1 to 15 characters, like wlan0 or eth0.10)"
        ))
    }
}

/// `-B ADDR[%DEV]` as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BindArg {
    /// The address.
    pub ip: IpAddr,
    /// The interface after `%`, if given.
    pub device: Option<String>,
}

fn parse_bind(s: &str) -> Result<BindArg, String> {
    let (addr, device) = match s.split_once('%') {
        Some((addr, dev)) => (addr, Some(parse_device(dev)?)),
        None => (s, None),
    };
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    let ip = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IP address (ADDR or ADDR%DEV)"))?;
    Ok(BindArg { ip, device })
}

/// `-b RATE[/BURST]` as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RateArg {
    rate: BitRate,
    burst: Option<u32>,
}

fn parse_rate_arg(s: &str) -> Result<RateArg, String> {
    let (rate, burst) = match s.split_once('/') {
        Some((rate, burst)) => {
            let n = burst
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=perfpeer_shared::spec::MAX_BURST).contains(n))
                .ok_or_else(|| {
                    format!(
                        "'{burst}' is not a burst: writes per burst, 1 to {}",
                        perfpeer_shared::spec::MAX_BURST
                    )
                })?;
            (rate, Some(n))
        }
        None => (s, None),
    };
    Ok(RateArg {
        rate: parse_rate(rate).map_err(|e| e.to_string())?,
        burst,
    })
}

fn parse_tos(s: &str) -> Result<u8, String> {
    perfpeer_shared::units::parse_tos(s).ok_or_else(|| format!("'{s}' is not a TOS value (0-255)"))
}

fn seconds(name: &str, v: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{name} must be a non-negative number of seconds, got {v}"))
}

impl TestFlags {
    /// Builds and validates the spec; `rate_per_stream` reads `-b` as iperf3 does.
    pub(super) fn spec(&self, rate_per_stream: bool) -> anyhow::Result<ValidSpec> {
        Ok(ValidSpec::new(self.build_spec(rate_per_stream)?)?)
    }

    /// Builds the spec as `dialect` reads the flags, not yet validated.
    pub(super) fn build_spec_as(&self, dialect: Dialect) -> anyhow::Result<TestSpec> {
        let mut spec = self.build_spec(dialect == Dialect::Iperf3)?;
        if dialect == Dialect::Iperf3 {
            if self.time == Some(0.0) && self.bytes.is_none() {
                // Until Ctrl-C (or the far end's limit).
                spec.end = EndCondition::Time {
                    duration: MAX_TEST_TIME,
                };
            }
            if self.interval == Some(0.0) {
                // No reports during the test: one interval for all of it.
                spec.interval = MAX_INTERVAL;
            }
        }
        Ok(spec)
    }

    /// Builds the spec from the flags, not yet validated (`perfpeer test`'s modes change it
    /// further before it is).
    pub(super) fn build_spec(&self, rate_per_stream: bool) -> anyhow::Result<TestSpec> {
        self.check_histograms()?;
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
        spec.streams = self.parallel.unwrap_or(1);
        if let Some(len) = self.len {
            spec.len = u32::try_from(len).unwrap_or(u32::MAX);
        }
        if let Some(RateArg { rate, burst }) = self.bitrate {
            let scale = if rate_per_stream {
                u64::from(self.parallel.unwrap_or(1).max(1))
            } else {
                1
            };
            spec.bitrate = (rate.0 > 0).then_some(BitRate(rate.0.saturating_mul(scale)));
            // A burst of 1 is no burst (iperf3 reads it so too).
            spec.burst = burst.filter(|&b| b > 1);
        }
        spec.window = self.window.map(|w| u32::try_from(w).unwrap_or(u32::MAX));
        spec.mss = self.mss;
        spec.congestion = self.congestion.clone();
        spec.no_delay = self.no_delay;
        spec.tos = self.tos;
        spec.skip_rx_copy = self.skip_rx_copy;
        spec.histogram = self.histogram(HistogramSpec::DEFAULT);
        spec.trip_times = self.trip_times || spec.histogram.is_some();
        if let Some(video) = self.isochronous {
            if self.bitrate.is_some() {
                return Err(super::UsageError(
                    "--isochronous sets the rate (FPS:MEAN,STDEV): leave out -b".into(),
                )
                .into());
            }
            spec.video = Some(video);
            spec.bitrate = None;
            spec.trip_times = true;
        }
        spec.fq_pacing = self.fq_pacing;
        if self.rr {
            if self.len.is_none() {
                spec.len = 1;
            }
            let response_len = self
                .response_len
                .map_or(spec.len, |n| u32::try_from(n).unwrap_or(u32::MAX));
            spec.rr = Some(RequestResponse {
                response_len,
                probe_interval_us: None,
                connection_per_transaction: None,
                bursts: None,
            });
        }
        Ok(spec)
    }

    /// Which flags were given.
    pub(super) fn given(&self) -> Given {
        Given {
            len: self.len.is_some(),
            bitrate: self.bitrate.is_some(),
            time: self.time.is_some(),
            bytes: self.bytes.is_some(),
            parallel: self.parallel.is_some(),
        }
    }

    /// Whether `-i` was given (iperf2 prints intervals only then).
    pub(super) fn interval_given(&self) -> bool {
        self.interval.is_some()
    }

    /// `--trip-times`.
    pub(super) fn trip_times(&self) -> bool {
        self.trip_times || self.histograms.is_some()
    }

    /// Whether `--isochronous` was given.
    pub(super) fn isochronous(&self) -> bool {
        self.isochronous.is_some()
    }

    /// `--histograms`' value, checked: a usage error when it is not bins.
    pub(super) fn check_histograms(&self) -> anyhow::Result<()> {
        match self.histograms.as_deref().map(parse_histograms) {
            Some(Err(e)) => Err(super::UsageError(format!("--histograms: {e}")).into()),
            _ => Ok(()),
        }
    }

    /// The bins `--histograms` asked for, `default`'s where it gave none; `None` without it.
    pub(super) fn histogram(&self, default: HistogramSpec) -> Option<HistogramSpec> {
        self.histograms
            .as_deref()
            .map(|s| parse_histograms(s).ok().flatten().unwrap_or(default))
    }

    /// `-B`, if given.
    pub(super) fn bind_addr(&self) -> Option<IpAddr> {
        self.bind.as_ref().map(|b| b.ip)
    }

    /// The interface to bind to: `--bind-dev`, or `-B`'s `%DEV`.
    pub(super) fn bind_device(&self) -> Option<String> {
        self.bind_dev
            .clone()
            .or_else(|| self.bind.as_ref().and_then(|b| b.device.clone()))
    }

    /// Whether `-4` was given.
    pub(super) fn ipv4_only(&self) -> bool {
        self.ipv4
    }

    /// Connection options.
    pub(super) fn options(&self) -> anyhow::Result<ClientOptions> {
        let family = match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        };
        let connect_timeout = self.connect_timeout_as(Dialect::Perfpeer)?;
        Ok(ClientOptions {
            token: self.token.clone(),
            connect_timeout,
            family,
            bind: self.bind_addr(),
            device: self.bind_device(),
            data_port: None,
            group: None,
        })
    }

    /// `--connect-timeout` as `dialect` reads it (iperf3's is in milliseconds).
    pub(super) fn connect_timeout_as(&self, dialect: Dialect) -> anyhow::Result<Duration> {
        let timeout = match (self.connect_timeout, dialect) {
            (None, _) => Duration::from_secs(5),
            (Some(ms), Dialect::Iperf3) => seconds("--connect-timeout", ms / 1000.0)?,
            (Some(s), _) => seconds("--connect-timeout", s)?,
        };
        if timeout.is_zero() {
            bail!("--connect-timeout must be more than 0");
        }
        Ok(timeout)
    }

    /// Output style chosen by `-J` / `--json-stream`.
    pub(super) fn style(&self) -> Style {
        if self.json {
            Style::Json
        } else if self.json_stream {
            Style::JsonStream
        } else {
            Style::Text
        }
    }
}
