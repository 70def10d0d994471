//! Golden tests of the netperf layouts: fixed results, expected text checked by hand against
//! netperf 2.7's printf formats (trailing spaces are part of netperf's output).

use std::time::Duration;

use super::*;
use crate::report::{
    CpuUsage, HostInfo, PeerRole, StreamFinal, StreamRole, TestStatus, UdpRxFinal,
};
use crate::spec::{ConnectionTest, EndCondition, RequestResponse};

const OPTS: Options<'static> = Options {
    host: "localhost",
    local_cpu: false,
    remote_cpu: false,
    headers: true,
    units: Units::MegaBits,
};

fn cpu(percent_user: f64, percent_system: f64, cpus: u32) -> CpuUsage {
    CpuUsage {
        elapsed: Duration::from_secs(10),
        process_user_s: 0.5,
        process_system_s: 1.5,
        host_user_percent: percent_user,
        host_system_percent: percent_system,
        cpus,
    }
}

fn side(role: PeerRole, bufs: (u32, u32), cpu: CpuUsage, streams: Vec<StreamFinal>) -> SideReport {
    SideReport {
        role,
        host: HostInfo::default(),
        sockets: Vec::new(),
        sndbuf_actual: Some(bufs.0),
        rcvbuf_actual: Some(bufs.1),
        tcp_mss: None,
        congestion_used: None,
        intervals: Vec::new(),
        streams,
        cpu,
    }
}

fn stream(role: StreamRole, bytes: u64, secs: f64) -> StreamFinal {
    StreamFinal {
        id: 1,
        role,
        bytes,
        duration: Duration::from_secs_f64(secs),
        packets: None,
        tcp: None,
        udp_rx: None,
        rr: None,
        writes: None,
        write_one_way: None,
        write_frames: None,
    }
}

/// 11 718 750 000 bytes in 10 s = 9375 Mbit/s. Client: 25 % of 4 CPUs; server: 30 % of 2 CPUs.
fn result(spec: TestSpec, client: Vec<StreamFinal>, server: Vec<StreamFinal>) -> TestResult {
    TestResult {
        id: "t".into(),
        spec,
        started_unix_ms: 0,
        server_addr: "127.0.0.1:5210".into(),
        local: side(
            PeerRole::Client,
            (16384, 131072),
            cpu(10.0, 15.0, 4),
            client,
        ),
        remote: Some(side(
            PeerRole::Server,
            (87040, 131072),
            cpu(5.0, 25.0, 2),
            server,
        )),
        group_receivers: Vec::new(),
        working_load: None,
        status: TestStatus::Complete,
    }
}

const BYTES: u64 = 11_718_750_000;

fn tcp(direction: Direction) -> TestResult {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.len = 16384;
    spec.direction = direction;
    // netperf's elapsed time is the client's; the server's differs a little.
    match direction {
        Direction::Reverse => result(
            spec,
            vec![stream(StreamRole::Receiver, BYTES, 10.0)],
            vec![stream(StreamRole::Sender, BYTES, 10.004)],
        ),
        _ => result(
            spec,
            vec![stream(StreamRole::Sender, BYTES, 10.0)],
            vec![stream(StreamRole::Receiver, BYTES, 10.004)],
        ),
    }
}

#[test]
fn tcp_stream_with_cpu_on_both_ends() {
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        ..OPTS
    };
    let expected = "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost \
                    (127.0.0.1) port 0 AF_INET\n\
Recv   Send    Send                          Utilization       Service Demand\n\
Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n\
Size   Size    Size     Time     Throughput  local    remote   local   remote\n\
bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n\
\n\
131072  16384  16384    10.00      9375.00   25.00    30.00    0.874   0.524  \n";
    assert_eq!(render(&tcp(Direction::Normal), &opts).unwrap(), expected);
}

#[test]
fn unasked_cpu_prints_minus_one_and_no_headers_leave_the_line() {
    let opts = Options {
        local_cpu: true,
        headers: false,
        ..OPTS
    };
    assert_eq!(
        render(&tcp(Direction::Normal), &opts).unwrap(),
        "131072  16384  16384    10.00      9375.00   25.00    -1.00    0.874   -1.000 \n"
    );
}

#[test]
fn service_demand_that_is_not_meaningful_is_not_known_in_the_table() {
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        headers: false,
        ..OPTS
    };
    // The far end's process was a sliver of its host's busy time: the same rule as the page.
    let mut r = tcp(Direction::Normal);
    let remote = r.remote.as_mut().unwrap();
    remote.cpu.process_user_s = 0.0;
    remote.cpu.process_system_s = 0.001;
    assert_eq!(
        render(&r, &opts).unwrap(),
        "131072  16384  16384    10.00      9375.00   25.00    30.00    0.874   -1.000 \n"
    );
}

#[test]
fn tcp_stream_and_maerts_without_cpu() {
    let header = "Recv   Send    Send                          \n\
Socket Socket  Message  Elapsed              \n\
Size   Size    Size     Time     Throughput  \n\
bytes  bytes   bytes    secs.    10^6bits/sec  \n\n";
    let stream = render(&tcp(Direction::Normal), &OPTS).unwrap();
    let (banner, table) = stream.split_once('\n').unwrap();
    assert!(
        banner.starts_with("MIGRATED TCP STREAM TEST from"),
        "{banner}"
    );
    assert_eq!(
        table,
        format!("{header}131072  16384  16384    10.00    9375.00   \n")
    );
    // MAERTS: local receive buffer, remote send buffer, throughput over the local receive time.
    let maerts = render(&tcp(Direction::Reverse), &OPTS).unwrap();
    let (banner, table) = maerts.split_once('\n').unwrap();
    assert!(
        banner.starts_with("MIGRATED TCP MAERTS TEST from"),
        "{banner}"
    );
    assert_eq!(
        table,
        format!("{header}131072  87040  16384    10.00    9375.00   \n")
    );
    let opts = Options {
        remote_cpu: true,
        ..OPTS
    };
    let maerts = render(&tcp(Direction::Reverse), &opts).unwrap();
    assert!(
        maerts.contains(
            "Socket Socket  Message  Elapsed              Recv     Send     Recv    Send\n"
        ),
        "{maerts}"
    );
}

fn rr_result() -> TestResult {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.len = 1;
    spec.rr = Some(RequestResponse {
        response_len: 1,
        probe_interval_us: None,
        connection_per_transaction: None,
        bursts: None,
    });
    let mut tx = stream(StreamRole::Sender, 200_000, 10.0);
    tx.rr = Some(RrFinal {
        transactions: 200_000,
        request_len: 1,
        response_len: 1,
        rtt: None,
    });
    result(
        spec,
        vec![tx],
        vec![stream(StreamRole::Receiver, 200_000, 10.0)],
    )
}

#[test]
fn tcp_rr_with_and_without_cpu() {
    let expected = "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to \
                    localhost (127.0.0.1) port 0 AF_INET : first burst 0\n\
Local /Remote\n\
Socket Size   Request  Resp.   Elapsed  Trans.\n\
Send   Recv   Size     Size    Time     Rate         \n\
bytes  Bytes  bytes    bytes   secs.    per sec   \n\
\n\
16384  131072 1        1       10.00    20000.00   \n\
87040  131072\n";
    assert_eq!(render(&rr_result(), &OPTS).unwrap(), expected);
    // CPU per transaction: 25 % of 4 CPUs for 10 s = 10 s of CPU over 200 000 = 50 us/Tr.
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        ..OPTS
    };
    let expected = "Local /Remote\n\
Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n\
Send   Recv   Size    Size   Time    Rate     local  remote local   remote\n\
bytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr\n\
\n\
16384  131072 1       1      10.00   20000.00  25.00  30.00  50.000  30.000 \n\
87040  131072\n";
    assert_eq!(table(&rr_result(), &opts).unwrap(), expected);
}

/// TCP_CRR and TCP_CC print TCP_RR's table under their own banners (netperf 2.7.1's, captured:
/// no "first burst" on either, TCP_CC not "MIGRATED" and without CPU method letters).
#[test]
fn connection_tests_print_the_request_response_table() {
    let mut crr = rr_result();
    let mut rr = crr.spec.rr.unwrap();
    rr.connection_per_transaction = Some(ConnectionTest::RequestResponse);
    crr.spec.rr = Some(rr);
    let out = render(&crr, &OPTS).unwrap();
    assert!(
        out.starts_with(
            "MIGRATED TCP Connect/Request/Response TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to \
             localhost (127.0.0.1) port 0 AF_INET\n"
        ),
        "{out}"
    );
    assert!(out.contains("10.00    20000.00   \n"), "{out}");
    assert_eq!(headline(&crr, Units::MegaBits).unwrap().units, "Trans/s");

    let mut cc = crr.clone();
    rr.connection_per_transaction = Some(ConnectionTest::ConnectOnly);
    cc.spec.rr = Some(rr);
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        ..OPTS
    };
    let out = render(&cc, &opts).unwrap();
    assert!(
        out.starts_with("TCP Connect/Close TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to"),
        "{out}"
    );
    assert!(
        out.contains("bytes  bytes  bytes   bytes  secs.   per sec  %      %      us/Tr   us/Tr\n"),
        "{out}"
    );
    assert!(
        out.contains("20000.00  25.00  30.00  50.000  30.000 \n"),
        "{out}"
    );
    assert_eq!(NetperfTest::of_spec(&cc.spec), Ok(NetperfTest::TcpCc));
    assert_eq!(NetperfTest::TcpCc.name(), "TCP_CC");
}

fn udp_result() -> TestResult {
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.len = 65507;
    spec.bitrate = None;
    spec.end = EndCondition::Time {
        duration: Duration::from_secs(10),
    };
    let mut tx = stream(StreamRole::Sender, 100_000 * 65507, 10.0);
    tx.packets = Some(100_000);
    let mut rx = stream(StreamRole::Receiver, 99_000 * 65507, 10.002);
    rx.udp_rx = Some(UdpRxFinal {
        received: 99_000,
        sender_packets: Some(100_000),
        lost: 1000,
        ..UdpRxFinal::default()
    });
    let mut r = result(spec, vec![tx], vec![rx]);
    r.local.sndbuf_actual = Some(212_992);
    if let Some(remote) = &mut r.remote {
        remote.rcvbuf_actual = Some(212_992);
    }
    r
}

#[test]
fn udp_stream_has_a_sender_and_a_receiver_line() {
    let expected = "Socket  Message  Elapsed      Messages                \n\
Size    Size     Time         Okay Errors   Throughput\n\
bytes   bytes    secs            #      #   10^6bits/sec\n\
\n\
212992   65507   10.00      100000      0    5240.56\n\
212992           10.00       99000           5188.15\n\
\n";
    assert_eq!(table(&udp_result(), &OPTS).unwrap(), expected);
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        ..OPTS
    };
    let expected = "Socket  Message  Elapsed      Messages                   CPU      Service\n\
Size    Size     Time         Okay Errors   Throughput   Util     Demand\n\
bytes   bytes    secs            #      #   10^6bits/sec % SS     us/KB\n\
\n\
212992   65507   10.00      100000      0     5240.6     25.00    1.563 \n\
212992           10.00       99000            5188.2     30.00    0.947 \n\
\n";
    assert_eq!(table(&udp_result(), &opts).unwrap(), expected);
    assert!(render(&udp_result(), &OPTS).unwrap().starts_with(
        "MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost"
    ));
}

#[test]
fn missing_far_end_and_unmeasured_cpu_print_minus_one() {
    let mut r = tcp(Direction::Normal);
    r.remote = None;
    r.local.cpu.cpus = 0;
    let opts = Options {
        local_cpu: true,
        remote_cpu: true,
        headers: false,
        ..OPTS
    };
    // Without the receiver's count the sender's bytes are used.
    assert_eq!(
        render(&r, &opts).unwrap(),
        "    -1  16384  16384    10.00      9375.00   -1.00    -1.00    -1.000  -1.000 \n"
    );
    let opts = Options {
        headers: true,
        ..opts
    };
    assert!(render(&r, &opts).unwrap().contains("% U      % U"));
}

#[test]
fn banner_flags_and_ipv6() {
    let ip: IpAddr = "fd00::2".parse().unwrap();
    assert_eq!(
        banner(NetperfTest::TcpStream, "dut", Some(ip), true),
        "MIGRATED TCP STREAM TEST from :: (::) port 0 AF_INET6 to dut (fd00::2) port 0 AF_INET6 \
         : nodelay\n"
    );
    assert_eq!(
        banner(NetperfTest::UdpStream, "dut", None, false),
        "MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to dut () port 0 AF_INET\n"
    );
    assert_eq!(
        banner(NetperfTest::UdpRr, "dut", None, false),
        "MIGRATED UDP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to dut () port 0 AF_INET \
         : first burst 0\n"
    );
    let mut spec = TestSpec::new(Protocol::Udp);
    spec.rr = Some(crate::spec::RequestResponse {
        response_len: 1,
        probe_interval_us: None,
        connection_per_transaction: None,
        bursts: None,
    });
    assert_eq!(NetperfTest::of_spec(&spec), Ok(NetperfTest::UdpRr));
}

#[test]
fn specs_without_a_netperf_test_are_refused() {
    let mut s = TestSpec::new(Protocol::Tcp);
    assert_eq!(NetperfTest::of_spec(&s), Ok(NetperfTest::TcpStream));
    s.direction = Direction::Bidir;
    assert!(NetperfTest::of_spec(&s).is_err());
    s.direction = Direction::Normal;
    s.streams = 2;
    assert!(NetperfTest::of_spec(&s).is_err());
    let mut u = TestSpec::new(Protocol::Udp);
    u.direction = Direction::Reverse;
    let mut r = tcp(Direction::Normal);
    r.spec = u;
    assert_eq!(
        render(&r, &OPTS),
        Err(NetperfError::NoEquivalent("UDP received from the far end"))
    );
}

#[test]
fn service_demand_per_transaction_is_cpu_time_over_transactions() {
    let c = cpu(10.0, 15.0, 4);
    assert_eq!(c.service_demand_us_per_transaction(200_000), Some(50.0));
    assert_eq!(c.service_demand_us_per_transaction(0), None);
    let unmeasured = CpuUsage { cpus: 0, ..c };
    assert_eq!(unmeasured.service_demand_us_per_transaction(10), None);
}
