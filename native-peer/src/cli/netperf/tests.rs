//! Flag parsing of `perfpeer netperf`: netperf's global and test-specific options into a spec.

use super::*;
use clap::Parser;
use perfpeer_shared::spec::ValidSpec;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    args: NetperfArgs,
}

fn parse(argv: &[&str]) -> Result<NetperfArgs, String> {
    let mut full = vec!["perfpeer"];
    full.extend_from_slice(argv);
    Wrap::try_parse_from(full)
        .map(|w| w.args)
        .map_err(|e| e.to_string())
}

fn spec_of(argv: &[&str]) -> Result<TestSpec, String> {
    let args = parse(argv)?;
    let t = TestOptions::try_parse_from(&args.test_options).map_err(|e| e.to_string())?;
    args.spec(&t)
        .map(ValidSpec::into_inner)
        .map_err(|e| format!("{e:#}"))
}

#[test]
fn defaults_are_netperfs() {
    let args = parse(&[]).unwrap();
    assert_eq!(args.host, "localhost");
    assert_eq!(args.test, NetperfTest::TcpStream);
    assert_eq!(args.length, Length::Time(Duration::from_secs(10)));
    assert_eq!(args.headers, 1);
    let s = spec_of(&[]).unwrap();
    assert_eq!(
        (s.protocol, s.direction),
        (Protocol::Tcp, Direction::Normal)
    );
    // The default send size is the send buffer of a fresh socket, as netperf's.
    assert_eq!(
        s.len,
        client::default_send_size(Protocol::Tcp, None, ([0, 0, 0, 0], 0).into())
    );
    assert!(s.len >= 4096, "{}", s.len);
}

#[test]
fn tests_map_onto_specs() {
    let s = spec_of(&[
        "-H",
        "pc:6000",
        "-t",
        "tcp_maerts",
        "-l",
        "3",
        "--",
        "-m",
        "64K",
    ])
    .unwrap();
    assert_eq!(s.direction, Direction::Reverse);
    assert_eq!(s.len, 65536);
    assert_eq!(
        s.end,
        EndCondition::Time {
            duration: Duration::from_secs(3)
        }
    );
    let s = spec_of(&["-t", "UDP_STREAM", "--", "-m", "1400"]).unwrap();
    assert_eq!(
        (s.protocol, s.len, s.bitrate),
        (Protocol::Udp, 1400, None),
        "UDP is unpaced"
    );
    let s = spec_of(&["-t", "UDP_STREAM"]).unwrap();
    assert!(s.len <= MAX_UDP_LEN && s.len >= 4096, "{}", s.len);
    let s = spec_of(&["-t", "TCP_RR"]).unwrap();
    assert_eq!(
        (s.len, s.rr),
        (
            1,
            Some(RequestResponse {
                response_len: 1,
                probe_interval_us: None,
                connection_per_transaction: None,
                bursts: None,
            })
        )
    );
    let s = spec_of(&["-t", "TCP_RR", "--", "-r", "32K,100", "-D"]).unwrap();
    assert_eq!(
        (s.len, s.rr.map(|r| r.response_len), s.no_delay),
        (32768, Some(100), true)
    );
    let s = spec_of(&["-t", "TCP_RR", "--", "-r", "200"]).unwrap();
    assert_eq!(
        (s.len, s.rr.map(|r| r.response_len)),
        (200, Some(200)),
        "one value sets both"
    );
    let s = spec_of(&["-t", "TCP_RR", "--", "-r", "64,"]).unwrap();
    assert_eq!((s.len, s.rr.map(|r| r.response_len)), (64, Some(1)));
}

#[test]
fn global_flags() {
    let args = parse(&["-c", "-C", "-P", "0", "-4", "-H", "10.0.0.2"]).unwrap();
    assert!(args.local_cpu && args.remote_cpu && args.ipv4);
    assert_eq!(args.headers, 0);
    assert_eq!(args.options().family, Some(Family::V4));
    assert!(parse(&["-P", "2"]).is_err());
    assert!(parse(&["-4", "-6"]).is_err());
}

#[test]
fn socket_buffers_become_the_one_window() {
    let s = spec_of(&["--", "-s", "128K", "-S", "128K", "-m", "16K"]).unwrap();
    assert_eq!((s.window, s.len), (Some(131_072), 16384));
    let s = spec_of(&["--", "-S", "1m"]).unwrap();
    assert_eq!(
        s.window,
        Some(1_000_000),
        "lower-case suffixes are powers of 1000"
    );
    let err = spec_of(&["--", "-s", "64K", "-S", "128K"]).unwrap_err();
    assert!(err.contains("one socket buffer size"), "{err}");
    let err = spec_of(&["--", "-s", "64K,128K"]).unwrap_err();
    assert!(err.contains("one socket buffer size"), "{err}");
}

#[test]
fn netperf_sizes() {
    assert_eq!(parse_size("16384"), Ok(16384));
    assert_eq!(parse_size("32K"), Ok(32768));
    assert_eq!(parse_size("2M"), Ok(2 << 20));
    assert_eq!(parse_size("3k"), Ok(3000));
    assert!(parse_size("8X").is_err());
    assert!(parse_size("").is_err());
    assert!(parse_size("-5").is_err());
    assert!(parse_size("8G").is_err(), "does not fit 32 bits");
    assert_eq!(parse_pair(",7"), Ok((None, Some(7))));
}

#[test]
fn unsupported_and_bad_input_is_refused_clearly() {
    for (argv, needle) in [
        (
            vec!["-t", "UDP_RR", "--", "-m", "64"],
            "-m applies to stream tests",
        ),
        (vec!["-t", "SCTP_STREAM"], "unknown test"),
        (vec!["-l", "-0"], "negative -l is a count"),
        (vec!["-l", "-2.5"], "negative -l is a count"),
        (vec!["-l", "0"], "more than 0"),
        (vec!["-l", "ten"], "not a number"),
        (
            vec!["-t", "TCP_RR", "--", "-m", "100"],
            "-m applies to stream tests",
        ),
        (vec!["--", "-r", "1,1"], "-r applies to TCP_RR"),
        (vec!["-t", "UDP_STREAM", "--", "-m", "8"], "UDP length"),
        (
            vec!["-t", "TCP_RR", "--", "-r", "1M"],
            "request/response sizes",
        ),
        (vec!["--", "-m", "1,2"], "one message size"),
        (vec!["--", "-x"], "unexpected argument"),
    ] {
        let err = spec_of(&argv).unwrap_err();
        assert!(err.contains(needle), "{argv:?}: {err}");
    }
}

#[test]
fn a_negative_length_counts_bytes_or_transactions() {
    let stream = spec_of(&["-l", "-1000"]).unwrap();
    assert_eq!(stream.end, EndCondition::Bytes { bytes: 1000 });
    let rr = spec_of(&["-t", "TCP_RR", "-l", "-1000", "--", "-r", "64,64"]).unwrap();
    assert_eq!(
        rr.end,
        EndCondition::Bytes { bytes: 64_000 },
        "1000 requests of 64 bytes"
    );
}
