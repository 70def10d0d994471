//! `perfpeer test PEER`: flags as iperf3 spells them, validated into a `TestSpec`, run against a
//! perfpeer peer, printed live as iperf3 text, JSON (`-J`) or JSON lines (`--json-stream`).

use std::process::ExitCode;

use clap::Args;
use perfpeer_shared::multicast::MulticastSpec;
use perfpeer_shared::report::TestResult;
use perfpeer_shared::verdict::Expectation;

use super::UsageError;
use super::flags::TestFlags;
use super::live::{finish, run_printing};
use super::output::{Printer, Style};

/// Flags of `perfpeer test` (iperf3's letters where iperf3 has the option).
#[derive(Debug, Args)]
pub(super) struct TestArgs {
    /// The peer: host, host:port or [v6addr]:port (its control port, default 5210); or a stock
    /// server: iperf3://host[:port], iperf://host[:port], ttcp://host[:port].
    peer: String,
    /// Where this machine keeps its result history (default as `perfpeer serve`).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<String>,
    /// Do not keep this test in the result history.
    #[arg(long)]
    no_store: bool,
    /// Run the test from another perfpeer peer (host[:port] of its control port) to PEER, as
    /// the browser does: this command only asks and follows; that peer measures and keeps the
    /// result (--token is its token).
    #[arg(long, value_name = "PEER", conflicts_with_all = ["sweep_len", "cbr", "latency_under_load"])]
    from: Option<String>,
    /// Further receiving peers of a --multicast test (PEER is the first).
    #[arg(value_name = "MORE_PEERS", requires = "multicast")]
    more_peers: Vec<String>,
    /// Send one UDP stream to this multicast group (GROUP[:PORT], an IPv6 group as
    /// [GROUP]:PORT; port 5212 unless given): PEER and each further peer join it and report
    /// what they received, each on its own row.
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["sweep_len", "cbr", "latency_under_load"])]
    multicast: Option<String>,
    /// The group's datagrams live this many hops (IPv6 hop limit): 1, this link, unless given.
    #[arg(long, value_name = "HOPS", requires = "multicast", value_parser = clap::value_parser!(u16).range(1..=255))]
    ttl: Option<u16>,
    /// Receivers join for this end's address only (source-specific multicast: IGMPv3, MLDv2).
    #[arg(long, requires = "multicast")]
    ssm: bool,
    /// Judge the result: FIGURE>=VALUE or FIGURE<=VALUE, FIGURE one of rx, tx (bit/s: 300M),
    /// loss (%), jitter (ms), retransmits, rr (transactions/s), and with
    /// --latency-under-load p99 and added (ms). Repeat or separate with commas. A test that
    /// ran and missed one exits 3 (4 when a figure it needs was not measured).
    #[arg(long, value_name = "EXPECTATION", conflicts_with_all = ["sweep_len", "multicast"])]
    expect: Vec<String>,
    #[command(flatten)]
    flags: TestFlags,
    #[command(flatten)]
    modes: super::modes::ModeFlags,
    #[command(flatten)]
    latency: super::latency::LatencyFlags,
    #[command(flatten)]
    wifi: super::wifi::WifiFlags,
    #[command(flatten)]
    lab: super::lab_store::LabStoreArgs,
}

/// Runs the test and prints it; exit 0 only for a complete test.
pub(super) async fn run(args: TestArgs) -> anyhow::Result<ExitCode> {
    super::init_logging("warn");
    // Every flag error is a usage error (exit 2), whether clap or the spec's check found it.
    let usage = |e: anyhow::Error| anyhow::Error::from(UsageError(format!("{e:#}")));
    args.wifi.apply()?;
    // A --store this build cannot use, or not a database's URL, is said before the test.
    args.lab.lab()?;
    let expect = args.expectations().map_err(usage)?;
    if args.latency.asked() {
        let spec = args.flags.build_spec(false).map_err(usage)?;
        let mut req = args
            .latency
            .request(&spec, args.flags.given())
            .map_err(usage)?;
        req.expect = expect;
        req.check()
            .map_err(|e| usage(anyhow::anyhow!("--expect: {e}")))?;
        let opts = args.flags.options().map_err(usage)?;
        let keep_in = (!args.no_store).then(|| {
            crate::server::token::data_dir(args.data_dir.as_deref().map(std::path::Path::new))
        });
        return super::latency::run(
            &args.peer,
            &args.latency,
            &req,
            &opts,
            args.flags.style(),
            keep_in.as_deref(),
        )
        .await;
    }
    let mut spec = args.flags.build_spec(false).map_err(usage)?;
    spec.multicast = args.group().map_err(usage)?;
    spec.expect = expect;
    let request = args
        .modes
        .request(&args.peer, spec, args.flags.given())
        .map_err(usage)?;
    let spec = request.spec;
    let opts = args.flags.options().map_err(usage)?;
    let style = args.flags.style();
    if let Some(sizes) = request.sweep {
        return super::modes::run_sweep(&args.peer, &spec, sizes, &opts, style).await;
    }
    if args.modes.is_cbr() && style == Style::Text {
        return super::modes::run_cbr(&args.peer, &spec, &opts).await;
    }
    let mut printer = Printer::new(style, &spec).with_wifi(args.wifi.shown());
    if let Some(from) = &args.from
        && (args.peer.contains("://") || from.contains("://"))
    {
        return Err(usage(anyhow::anyhow!(
            "--from runs a test between two perfpeer peers: give both as host[:port]"
        )));
    }
    let outcome = run_printing(
        |events, cancel| async {
            // A group's receivers are one target, as the browser's field names them.
            let target = args.target();
            match &args.from {
                Some(from) => {
                    crate::session::remote::run(from, &target, &spec, &opts, events, cancel).await
                }
                None => crate::targets::run(&target, &spec, &opts, events, cancel).await,
            }
        },
        |ev| printer.event(ev),
    )
    .await?;
    // A test run from another peer is that peer's to keep (it said where).
    if let (Ok(result), false, None) = (&outcome, args.no_store, &args.from) {
        keep(result, &args).await;
    }
    let extra_lines = match (&outcome, style) {
        (Ok(result), Style::Text) => {
            perfpeer_shared::format::latency::flow_rtt_text(result)
                + &perfpeer_shared::format::dccp::text(result)
        }
        _ => String::new(),
    };
    let against = match spec.multicast {
        Some(group) => format!("multicast group {}", group.address()),
        None => args.peer.clone(),
    };
    let code = finish(&mut printer, outcome.map_err(anyhow::Error::new), &against)?;
    out!("{extra_lines}");
    Ok(code)
}

impl TestArgs {
    /// `--expect`, each given once or several to a flag (commas between them).
    fn expectations(&self) -> anyhow::Result<Vec<Expectation>> {
        let mut all = Vec::new();
        for text in &self.expect {
            all.extend(
                Expectation::parse_list(text).map_err(|e| anyhow::anyhow!("--expect: {e}"))?,
            );
        }
        Ok(all)
    }

    /// `--multicast GROUP[:PORT]` with its `--ttl` and `--ssm`, checked.
    fn group(&self) -> anyhow::Result<Option<MulticastSpec>> {
        let Some(text) = &self.multicast else {
            return Ok(None);
        };
        let mut group =
            MulticastSpec::parse(text).map_err(|e| anyhow::anyhow!("--multicast: {e}"))?;
        group.ttl = self.ttl.and_then(|t| u8::try_from(t).ok()).unwrap_or(1);
        group.source_specific = self.ssm;
        // The receivers as the test will name them: the same rules, refused here as usage.
        crate::targets::group_receivers(&self.target())
            .map_err(|e| anyhow::anyhow!("--multicast: {e}"))?;
        Ok(Some(group))
    }

    /// PEER, and for a group test every further peer, as one target (commas between them).
    fn target(&self) -> String {
        std::iter::once(self.peer.as_str())
            .chain(self.more_peers.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Adds a finished test to this machine's history; a store that cannot be opened is only a
/// warning, since the test itself succeeded.
async fn keep(result: &TestResult, args: &TestArgs) {
    let dir = crate::server::token::data_dir(args.data_dir.as_deref().map(std::path::Path::new));
    match crate::store::Store::open(&dir) {
        Ok((store, note)) => {
            if let Some(note) = note {
                eprintln!("perfpeer: {note}");
            }
            let store = std::sync::Arc::new(store);
            let lab = args.lab.lab().ok().flatten();
            let lab = lab.filter(|lab| super::lab_store::attach(&store, lab));
            let peer = result.server_addr.clone();
            if let Some(rec) = crate::store::Recording::begin(
                &store,
                &result.id,
                crate::store::Origin::Cli,
                result.local.role,
                &peer,
                &result.spec,
            ) {
                rec.finish(result).await;
            }
            #[cfg(feature = "postgres")]
            if let Some(lab) = lab {
                super::lab_store::flush(&store, &lab).await;
            }
            #[cfg(not(feature = "postgres"))]
            let _ = lab;
        }
        Err(e) => eprintln!("perfpeer: the result was not kept: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;
    use perfpeer_shared::spec::{
        Direction, EndCondition, Protocol, RequestResponse, TestSpec, ValidSpec,
    };
    use perfpeer_shared::units::BitRate;

    use super::*;

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
            .map(ValidSpec::into_inner)
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
        assert_eq!(
            s.rr,
            Some(RequestResponse {
                response_len: 1,
                probe_interval_us: None,
                connection_per_transaction: None,
                bursts: None,
            })
        );
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
            .request("pc", w.args.flags.build_spec(false)?, w.args.flags.given())
            .map(|r| r.spec.into_inner())
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
