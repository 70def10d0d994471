//! What a test target names: a perfpeer peer (`host[:port]`, the default) or a stock tool
//! (`iperf3://host[:port]`, `iperf://host[:port]`, `ttcp://host[:port]`). One entry point runs
//! a spec against any of them with the same live events and the same result model; figures a
//! stock tool cannot report are absent from the result, not zero.

use std::time::Duration;

use perfpeer_shared::control::ErrorCode;
use perfpeer_shared::report::{StreamRole, TestResult};
use perfpeer_shared::spec::{Direction, TestSpec, ValidSpec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::compat::{iperf2, iperf3, ttcp};
use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::events::TestEvent;
use crate::session::target::{resolve_host, split_host_port_or};

/// The kind of far end a target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A perfpeer peer's control endpoint.
    Perfpeer,
    /// A stock `iperf3 -s`.
    Iperf3,
    /// A stock `iperf -s` (2.1).
    Iperf2,
    /// A stock `ttcp -r`.
    Ttcp,
}

/// Splits `iperf3://host:port` into its kind and `host:port` with the tool's default port.
pub(crate) fn parse(target: &str) -> Result<(Kind, String, u16), String> {
    let (kind, rest, default_port) = match target.split_once("://") {
        None => (
            Kind::Perfpeer,
            target,
            crate::session::target::DEFAULT_CONTROL_PORT,
        ),
        Some(("iperf3", rest)) => (Kind::Iperf3, rest, iperf3::codec::DEFAULT_PORT),
        Some(("iperf" | "iperf2", rest)) => (Kind::Iperf2, rest, iperf2::codec::DEFAULT_PORT),
        Some(("ttcp", rest)) => (Kind::Ttcp, rest, ttcp::DEFAULT_PORT),
        Some(("perfpeer", rest)) => (
            Kind::Perfpeer,
            rest,
            crate::session::target::DEFAULT_CONTROL_PORT,
        ),
        Some((scheme, _)) => {
            return Err(format!(
                "unknown target kind '{scheme}://' (use iperf3://, iperf://, ttcp:// or a perfpeer peer)"
            ));
        }
    };
    let (host, port) = split_host_port_or(rest.trim_end_matches('/'), default_port)?;
    Ok((kind, host, port))
}

/// A multicast test's receivers as one target names them (`shared::multicast::receivers_in`:
/// `10.0.0.2, 10.0.0.3:5210`), each a perfpeer peer.
pub(crate) fn group_receivers(target: &str) -> Result<Vec<String>, SessionError> {
    let receivers: Vec<String> = perfpeer_shared::multicast::receivers_in(target)
        .map_err(|message| SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message,
        })?
        .into_iter()
        .map(|r| r.strip_prefix("perfpeer://").unwrap_or(r).to_string())
        .collect();
    if let Some(stock) = receivers.iter().find(|r| r.contains("://")) {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message: format!(
                "a multicast test's receivers are perfpeer peers (host[:port]), not {stock}"
            ),
        });
    }
    Ok(receivers)
}

/// Runs `spec` against `target`, whatever kind of far end it names (a multicast test: the
/// group's receivers it names).
pub(crate) async fn run(
    target: &str,
    spec: &ValidSpec,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    if spec.multicast.is_some() {
        return crate::session::far_ends::run_group(
            &group_receivers(target)?,
            spec,
            opts,
            events,
            cancel,
        )
        .await;
    }
    let (kind, host, port) = parse(target).map_err(|reason| SessionError::Unreachable {
        target: target.to_string(),
        reason,
    })?;
    if kind == Kind::Perfpeer {
        return crate::session::far_ends::run_test(
            target.split_once("://").map_or(target, |(_, r)| r),
            spec,
            opts,
            events,
            cancel,
        )
        .await;
    }
    if spec.rr.and_then(|rr| rr.bursts?.congest).is_some() {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message: "--bounceback-congest runs its load against perfpeer peers (perfpeer iperf -c --bounceback against an iperf 2 server)".into(),
        });
    }
    if spec.protocol == perfpeer_shared::spec::Protocol::Dccp {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message:
                "stock iperf3, iperf and ttcp do not speak DCCP: test DCCP against a perfpeer peer"
                    .into(),
        });
    }
    if spec.video.is_some() && kind != Kind::Iperf2 {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message: "--isochronous: video frames go to perfpeer peers and iperf 2 servers (iperf://), not to stock iperf3 or ttcp".into(),
        });
    }
    if spec.histogram.is_some() {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message: "--histograms: a stock server reports no bins (an iperf 2 server prints its own with `iperf -s --histograms`); use --trip-times here, or test against a perfpeer peer".into(),
        });
    }
    if spec.trip_times && kind != Kind::Iperf2 {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message: "--trip-times is measured by perfpeer peers and iperf 2 servers (iperf://), not by stock iperf3 or ttcp".into(),
        });
    }
    let server = resolve_host(&host, port, opts.family)
        .await
        .map_err(|reason| SessionError::Unreachable {
            target: target.to_string(),
            reason,
        })?;
    match kind {
        Kind::Iperf3 => {
            iperf3::client::run(server, spec, Default::default(), opts, events, cancel).await
        }
        Kind::Iperf2 => {
            // The server reads the stamps when told: --trip-times (or --isochronous, which
            // implies it) says so here.
            let extras = iperf2::client::Iperf2Extras {
                ttl: None,
                announce_trip_times: spec.trip_times,
            };
            iperf2::client::run(server, spec, opts, extras, events, cancel).await
        }
        Kind::Ttcp => run_ttcp(server, spec, opts.connect_timeout, &events, &cancel).await,
        Kind::Perfpeer => unreachable!("handled above"),
    }
}

async fn run_ttcp(
    server: std::net::SocketAddr,
    spec: &TestSpec,
    timeout: Duration,
    events: &mpsc::UnboundedSender<TestEvent>,
    cancel: &CancellationToken,
) -> Result<TestResult, SessionError> {
    if spec.direction != Direction::Normal || spec.streams != 1 {
        return Err(SessionError::Refused {
            code: ErrorCode::InvalidSpec,
            message:
                "a ttcp receiver takes one stream from one sender: run a single-stream TX test"
                    .into(),
        });
    }
    let s = spec.clone();
    let socket = crate::util::spawn_blocking(move || ttcp::connect(&s, server, timeout))
        .await
        .map_err(|e| SessionError::Internal(e.to_string()))?
        .map_err(|e| SessionError::Unreachable {
            target: server.to_string(),
            reason: e.to_string(),
        })?;
    ttcp::run_engine(
        spec,
        socket,
        StreamRole::Sender,
        server.to_string(),
        events,
        cancel,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_default_ports() {
        assert_eq!(parse("pc"), Ok((Kind::Perfpeer, "pc".into(), 5210)));
        assert_eq!(parse("iperf3://pc"), Ok((Kind::Iperf3, "pc".into(), 5201)));
        assert_eq!(
            parse("iperf3://pc:6000"),
            Ok((Kind::Iperf3, "pc".into(), 6000))
        );
        assert_eq!(
            parse("iperf://10.0.0.2"),
            Ok((Kind::Iperf2, "10.0.0.2".into(), 5001))
        );
        assert_eq!(
            parse("ttcp://[::1]:2000"),
            Ok((Kind::Ttcp, "::1".into(), 2000))
        );
        assert_eq!(parse("ttcp://[::1]"), Ok((Kind::Ttcp, "::1".into(), 5001)));
        assert_eq!(
            parse("iperf3://::1"),
            Ok((Kind::Iperf3, "::1".into(), 5201))
        );
        assert!(
            parse("http://pc")
                .unwrap_err()
                .contains("unknown target kind")
        );
        assert!(parse("iperf3://").is_err());
    }
}
