//! `perfpeer ttcp`: classic ttcp's flags and output. `-t host` transmits, `-r` receives; with
//! `-s` the data is a generated pattern (sink/source), without it stdin goes to the network
//! (`-t`) or the network to stdout (`-r`). Wire-compatible with ttcp in both roles.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use perfpeer_shared::format::ttcp::{self as fmt, TtcpRole};
use perfpeer_shared::report::StreamRole;
use perfpeer_shared::spec::{EndCondition, MAX_TEST_TIME, Protocol, SpecError, TestSpec};
use tokio_util::sync::CancellationToken;

use crate::compat::ttcp::{self, DEFAULT_PORT};
use crate::engine::DataSocket;
use crate::session::target::resolve_host;

/// Flags of `perfpeer ttcp` (SGI ttcp 1.12's, values attached as in `-n128000` or separate).
#[derive(Debug, Args)]
pub(super) struct TtcpArgs {
    /// Transmit (connect to HOST and send).
    #[arg(
        short = 't',
        conflicts_with = "receive",
        required_unless_present = "receive"
    )]
    transmit: bool,
    /// Receive (listen and count).
    #[arg(short = 'r')]
    receive: bool,
    /// Sink/source mode: send a pattern, discard what arrives (otherwise stdin/stdout).
    #[arg(short = 's')]
    sink: bool,
    /// UDP instead of TCP.
    #[arg(short = 'u')]
    udp: bool,
    /// Number of buffers to send (with -s).
    #[arg(short = 'n', default_value_t = 2048, value_parser = clap::value_parser!(u64).range(1..))]
    nbuf: u64,
    /// Buffer length in bytes.
    #[arg(short = 'l', default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=16 * 1024 * 1024))]
    buflen: u32,
    /// Port.
    #[arg(short = 'p', default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Socket buffer size (SO_SNDBUF/SO_RCVBUF).
    #[arg(short = 'b')]
    sockbuf: Option<u32>,
    /// TCP_NODELAY.
    #[arg(short = 'D')]
    nodelay: bool,
    /// Verbose: the SGI "bytes in real seconds" line as well.
    #[arg(short = 'v')]
    verbose: bool,
    /// Rate unit of the -v line: k/m/g (Kbit, Mbit, Gbit) or K/M/G (KB, MB, GB), 1024-based.
    #[arg(short = 'f', default_value = "K", value_parser = parse_unit)]
    format: char,
    /// Buffer alignment (shown in the set-up line; perfpeer's buffers are its own).
    #[arg(short = 'A', default_value_t = 16_384)]
    align: u32,
    /// Buffer offset from the alignment (shown in the set-up line).
    #[arg(short = 'O', default_value_t = 0)]
    offset: u32,
    /// Touch the data received (accepted: perfpeer's receivers copy every byte out of the
    /// kernel already, the cost -T adds to classic ttcp's sink).
    #[arg(short = 'T')]
    touch: bool,
    /// SO_DEBUG on the TCP socket (needs CAP_NET_ADMIN).
    #[arg(short = 'd')]
    debug: bool,
    /// Receiver without -s: write whole -l blocks only (the last may be short), for tar.
    #[arg(short = 'B')]
    full_blocks: bool,
    /// The receiver, for -t.
    host: Option<String>,
}

fn parse_unit(s: &str) -> Result<char, String> {
    super::flags::unit_letter(s, "kmgKMG", "a ttcp format")
}

impl TtcpArgs {
    /// `-l`, padded to 5 bytes for UDP as classic ttcp pads it (4 bytes or fewer is a sentinel).
    fn buflen_used(&self) -> u32 {
        if self.udp {
            self.buflen.max(5)
        } else {
            self.buflen
        }
    }

    fn spec(&self) -> anyhow::Result<TestSpec> {
        let protocol = if self.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let mut spec = TestSpec::new(protocol);
        spec.len = self.buflen_used();
        spec.bitrate = None;
        spec.end = if self.transmit {
            EndCondition::Bytes {
                bytes: self.nbuf.saturating_mul(u64::from(self.buflen_used())),
            }
        } else {
            EndCondition::Time {
                duration: MAX_TEST_TIME,
            }
        };
        spec.window = self.sockbuf;
        spec.no_delay = self.nodelay;
        match spec.validate() {
            // ttcp only needs datagrams longer than its 4-byte sentinels.
            Err(SpecError::UdpLen(len)) if len >= 5 => Ok(spec),
            Err(e) => bail!("{e}"),
            Ok(()) => Ok(spec),
        }
    }
}

/// Runs the transmitter or the receiver and prints ttcp's lines (to stderr without -s, where
/// stdout carries the data).
pub(super) async fn run(args: TtcpArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    let spec = args.spec()?;
    let role = if args.transmit {
        TtcpRole::Transmit
    } else {
        TtcpRole::Receive
    };
    let host = args.host.clone();
    if args.transmit && host.is_none() {
        bail!("-t needs the receiver's host name");
    }
    let say = |text: String| {
        if args.sink {
            out!("{text}")
        } else {
            eprint!("{text}")
        }
    };
    say(fmt::setup_line(
        &fmt::Setup {
            role,
            buflen: args.buflen_used(),
            nbuf: args.nbuf,
            align: (args.align, args.offset),
            port: args.port,
            protocol: spec.protocol,
        },
        host.as_deref(),
    ));
    let (socket, peer) = if let Some(host) = &host {
        let addr = resolve_host(host, args.port, None)
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach {host}: {e}"))?;
        let s = spec.clone();
        let sock =
            crate::util::spawn_blocking(move || ttcp::connect(&s, addr, Duration::from_secs(10)))
                .await?
                .with_context(|| format!("connect to {addr}"))?;
        (sock, addr.to_string())
    } else {
        let listen = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), args.port);
        let s = spec.clone();
        let sock = match crate::util::spawn_blocking(move || ttcp::accept(&s, listen)).await? {
            Ok(sock) => sock,
            Err(_) => {
                let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), args.port);
                let s = spec.clone();
                crate::util::spawn_blocking(move || ttcp::accept(&s, v4))
                    .await?
                    .with_context(|| format!("listen on port {}", args.port))?
            }
        };
        (sock, format!("port {}", args.port))
    };
    if let (true, DataSocket::Tcp(tcp)) = (args.debug, &socket) {
        crate::sys::set_so_debug(&**tcp).context("setsockopt SO_DEBUG")?;
    }
    let stream_role = if args.transmit {
        StreamRole::Sender
    } else {
        StreamRole::Receiver
    };
    let figures = if args.sink {
        // Live intervals are not ttcp's; Ctrl-C ends the process as it ends classic ttcp.
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let result = ttcp::run_engine(
            &spec,
            socket,
            stream_role,
            peer,
            &events,
            &CancellationToken::new(),
        )
        .await?;
        if let Some(reason) = result.status.ended_early() {
            eprintln!("ttcp: transfer ended early: {reason}");
        }
        fmt::figures(&result).1
    } else {
        let (len, full) = (args.buflen_used() as usize, args.full_blocks);
        crate::util::spawn_blocking(move || ttcp::run_copy(socket, stream_role, len, full))
            .await??
    };
    if args.verbose {
        say(fmt::sgi_line(role, &figures, args.format));
    }
    say(fmt::summary_lines(role, &figures));
    Ok(ExitCode::SUCCESS)
}
