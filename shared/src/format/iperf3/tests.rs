//! Golden tests of the iperf3 text and JSON: fixed results (`tcp_single` is shared with the result
//! page's tests), the expected lines and keys as stock iperf3 prints them.

use std::time::Duration;

use serde_json::Value;

use super::text::two_significant;
use super::*;
use crate::report::{
    CpuUsage, HostInfo, IntervalReport, SideReport, StreamFinal, StreamInterval, StreamRole,
    TcpFinal, TcpSample, TestStatus, UdpRxFinal, UdpRxSample,
};
use crate::spec::Protocol;

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// `user`/`system` process seconds over 10 s; host busy `host_pct` % split 1:2 over `cpus`.
fn cpu(user: f64, system: f64, host_pct: f64, cpus: u32) -> CpuUsage {
    CpuUsage {
        elapsed: secs(10.0),
        process_user_s: user,
        process_system_s: system,
        host_user_percent: host_pct / 3.0,
        host_system_percent: host_pct * 2.0 / 3.0,
        cpus,
    }
}

fn side(role: PeerRole, streams: Vec<StreamFinal>, cpu: CpuUsage) -> SideReport {
    let (local, remote) = match role {
        PeerRole::Client => ("10.0.0.1:40000", "10.0.0.2:5201"),
        PeerRole::Server => ("10.0.0.2:5201", "10.0.0.1:40000"),
    };
    SideReport {
        role,
        host: HostInfo {
            hostname: "h".into(),
            system: "Linux h 6.8.0 x86_64".into(),
            version: "0.1.0".into(),
        },
        sockets: vec![SocketInfo {
            id: 1,
            local: local.into(),
            remote: remote.into(),
            dccp: None,
        }],
        sndbuf_actual: Some(16_384),
        rcvbuf_actual: Some(131_072),
        tcp_mss: Some(1448),
        congestion_used: None,
        intervals: Vec::new(),
        streams,
        cpu,
    }
}

fn fin(id: u32, role: StreamRole, bytes: u64, duration: f64) -> StreamFinal {
    StreamFinal {
        id,
        role,
        bytes,
        duration: secs(duration),
        packets: None,
        tcp: None,
        udp_rx: None,
        rr: None,
        writes: None,
        write_one_way: None,
        write_frames: None,
    }
}

fn tcp_tx(id: u32, bytes: u64, retransmits: u64) -> StreamFinal {
    let tcp = TcpFinal {
        retransmits,
        max_snd_cwnd: 3_145_728,
        max_rtt_us: 400,
        min_rtt_us: 90,
        mean_rtt_us: 150,
        max_snd_wnd: Some(4_194_304),
    };
    StreamFinal {
        tcp: Some(tcp),
        ..fin(id, StreamRole::Sender, bytes, 10.0)
    }
}

fn tx_interval(id: u32, bytes: u64, retransmits: u64, snd_cwnd: u64) -> StreamInterval {
    let tcp = TcpSample {
        retransmits,
        snd_cwnd,
        rtt_us: 120,
        rttvar_us: 30,
        pmtu: 1500,
        snd_wnd: Some(3_000_000),
    };
    StreamInterval {
        id,
        role: StreamRole::Sender,
        bytes,
        packets: None,
        tcp: Some(tcp),
        udp_rx: None,
        tfrc: None,
        probes: Vec::new(),
        writes: None,
    }
}

fn interval(start: f64, streams: Vec<StreamInterval>) -> IntervalReport {
    IntervalReport {
        start: secs(start),
        end: secs(start + 1.0),
        omitted: false,
        streams,
        wifi: None,
    }
}

fn result(spec: TestSpec, local: SideReport, remote: Option<SideReport>) -> TestResult {
    TestResult {
        id: "abc123".into(),
        spec,
        started_unix_ms: 1_796_220_497_250,
        server_addr: "10.0.0.2:5201".into(),
        local,
        remote,
        group_receivers: Vec::new(),
        working_load: None,
        status: TestStatus::Complete,
    }
}

/// Client sending TCP, one stream, 12.5 GB in 10 s.
pub(crate) fn tcp_single() -> TestResult {
    let mut local = side(
        PeerRole::Client,
        vec![tcp_tx(1, 12_500_000_000, 7)],
        cpu(0.32, 9.19, 10.0, 4),
    );
    local.intervals = vec![interval(
        0.0,
        vec![tx_interval(1, 1_250_000_000, 3, 1_572_864)],
    )];
    local.congestion_used = Some("cubic".into());
    let rx = fin(1, StreamRole::Receiver, 12_499_000_000, 10.04);
    let mut remote = side(PeerRole::Server, vec![rx], cpu(0.5, 7.5, 30.0, 2));
    remote.congestion_used = Some("bbr".into());
    result(TestSpec::new(Protocol::Tcp), local, Some(remote))
}

fn tcp_two_streams() -> TestResult {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.streams = 2;
    let tx = vec![tcp_tx(1, 5_000_000_000, 4), tcp_tx(2, 5_000_000_000, 5)];
    let mut local = side(PeerRole::Client, tx, cpu(0.1, 2.0, 10.0, 4));
    let streams = |base: u64| {
        vec![
            tx_interval(1, 500_000_000, base, 1 << 20),
            tx_interval(2, 500_000_000, base + 1, 1 << 20),
        ]
    };
    local.intervals = vec![interval(0.0, streams(0)), interval(1.0, streams(1))];
    let rx = vec![
        fin(1, StreamRole::Receiver, 5_000_000_000, 10.0),
        fin(2, StreamRole::Receiver, 5_000_000_000, 10.0),
    ];
    result(
        spec,
        local,
        Some(side(PeerRole::Server, rx, cpu(0.1, 1.0, 10.0, 4))),
    )
}

/// Server receiving UDP from the client: 900 datagrams sent, 20 lost, 2 late, 1 duplicate.
fn udp_receiver() -> TestResult {
    let udp_rx = UdpRxFinal {
        received: 880,
        sender_packets: Some(900),
        lost: 20,
        out_of_order: 2,
        duplicates: 1,
        jitter_ms: 0.05,
        max_gap_ms: None,
        one_way: None,
        frames: None,
    };
    let rx = StreamFinal {
        udp_rx: Some(udp_rx),
        ..fin(1, StreamRole::Receiver, 1448 * 880, 10.0)
    };
    let mut local = side(PeerRole::Server, vec![rx], cpu(0.1, 0.2, 1.0, 2));
    let sample = UdpRxSample {
        packets: 90,
        lost: 5,
        out_of_order: 0,
        duplicates: 0,
        jitter_ms: 0.123,
        max_gap_ms: None,
    };
    let s = StreamInterval {
        id: 1,
        role: StreamRole::Receiver,
        bytes: 1448 * 85,
        packets: None,
        tcp: None,
        udp_rx: Some(sample),
        tfrc: None,
        probes: Vec::new(),
        writes: None,
    };
    local.intervals = vec![interval(0.0, vec![s])];
    let tx = StreamFinal {
        packets: Some(900),
        ..fin(1, StreamRole::Sender, 1448 * 900, 10.0)
    };
    result(
        TestSpec::new(Protocol::Udp),
        local,
        Some(side(PeerRole::Client, vec![tx], cpu(0.2, 0.3, 1.0, 2))),
    )
}

/// Client in bidir TCP: stream 1 client→server, stream 2 server→client.
fn tcp_bidir() -> TestResult {
    let mut spec = TestSpec::new(Protocol::Tcp);
    spec.direction = Direction::Bidir;
    let local_streams = vec![
        tcp_tx(1, 1_250_000_000, 2),
        fin(2, StreamRole::Receiver, 625_000_000, 10.0),
    ];
    let mut local = side(PeerRole::Client, local_streams, cpu(0.5, 5.0, 10.0, 4));
    let rx = StreamInterval {
        id: 2,
        role: StreamRole::Receiver,
        bytes: 62_500_000,
        packets: None,
        tcp: None,
        udp_rx: None,
        tfrc: None,
        probes: Vec::new(),
        writes: None,
    };
    local.intervals = vec![interval(
        0.0,
        vec![tx_interval(1, 125_000_000, 0, 262_144), rx],
    )];
    let remote_streams = vec![
        fin(1, StreamRole::Receiver, 1_250_000_000, 10.0),
        tcp_tx(2, 625_000_000, 1),
    ];
    result(
        spec,
        local,
        Some(side(
            PeerRole::Server,
            remote_streams,
            cpu(0.5, 5.0, 10.0, 4),
        )),
    )
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn tcp_single_stream_text() {
    let r = tcp_single();
    let p = Preamble {
        role: PeerRole::Client,
        server_addr: &r.server_addr,
        spec: &r.spec,
        sockets: &r.local.sockets,
    };
    assert_eq!(
        text_preamble(&p),
        "Connecting to host 10.0.0.2, port 5201\n[  5] local 10.0.0.1 port 40000 connected to 10.0.0.2 port 5201\n"
    );
    assert_eq!(
        text_interval_header(&r.spec, PeerRole::Client),
        "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
    );
    assert_eq!(
        text_interval(&r.spec, PeerRole::Client, &r.local.intervals[0]),
        "[  5]   0.00-1.00   sec  1.16 GBytes  10.0 Gbits/sec    3   1.50 MBytes\n"
    );
    assert_eq!(
        lines(&text_summary(&r)),
        [
            "- - - - - - - - - - - - - - - - - - - - - - - - -",
            "[ ID] Interval           Transfer     Bitrate         Retr",
            "[  5]   0.00-10.00  sec  11.6 GBytes  10.0 Gbits/sec    7             sender",
            "[  5]   0.00-10.04  sec  11.6 GBytes  9.96 Gbits/sec                  receiver",
            "CPU Utilization: local/sender 95.1% (3.2%u/91.9%s), remote/receiver 80.0% (5.0%u/75.0%s)",
            "Service demand: local 0.328 us/KB, remote 0.492 us/KB (host CPU, netperf definition)",
            "",
            "perfpeer Done.",
        ]
    );
}

#[test]
fn tcp_single_stream_json() {
    let j = json(&tcp_single());
    assert_eq!(j["start"]["test_start"]["protocol"], "TCP");
    assert_eq!(j["start"]["test_start"]["duration"], 10);
    assert_eq!(j["start"]["test_start"]["interval"], 1);
    assert_eq!(j["start"]["cookie"], "abc123");
    assert_eq!(j["start"]["tcp_mss_default"], 1448);
    assert_eq!(j["start"]["connecting_to"]["port"], 5201);
    assert_eq!(j["start"]["connected"][0]["local_port"], 40000);
    assert_eq!(
        j["start"]["timestamp"]["time"],
        "Wed, 02 Dec 2026 14:08:17 GMT"
    );
    assert_eq!(j["start"]["timestamp"]["timesecs"], 1_796_220_497u64);
    let s = &j["intervals"][0]["streams"][0];
    assert_eq!(
        (
            s["socket"].clone(),
            s["retransmits"].clone(),
            s["rtt"].clone()
        ),
        (5.into(), 3.into(), 120.into())
    );
    // Whole numbers print as integers, as stock iperf3's JSON library prints them.
    assert_eq!(s["bits_per_second"], 10_000_000_000u64);
    assert_eq!(s["start"], 0);
    assert_eq!(
        (s["omitted"].clone(), s["sender"].clone()),
        (false.into(), true.into())
    );
    assert_eq!(s["snd_wnd"], 3_000_000);
    assert_eq!(j["intervals"][0]["sum"]["retransmits"], 3);
    let end = &j["end"];
    assert_eq!(end["streams"][0]["sender"]["max_rtt"], 400);
    assert_eq!(end["streams"][0]["sender"]["max_snd_wnd"], 4_194_304);
    assert_eq!(end["streams"][0]["receiver"]["seconds"], 10.04);
    assert_eq!(end["sum_sent"]["bytes"], 12_500_000_000u64);
    assert_eq!(end["sum_sent"]["retransmits"], 7);
    assert_eq!(
        end["sum_received"]["bits_per_second"],
        12_499_000_000.0 * 8.0 / 10.04
    );
    assert!(end.get("sum").is_none() && end.get("sum_sent_bidir_reverse").is_none());
    let cpu = &end["cpu_utilization_percent"];
    assert!((cpu["host_total"].as_f64().unwrap() - 95.1).abs() < 1e-9);
    assert!((cpu["remote_system"].as_f64().unwrap() - 75.0).abs() < 1e-9);
    assert_eq!(
        (
            end["sender_tcp_congestion"].clone(),
            end["receiver_tcp_congestion"].clone()
        ),
        ("cubic".into(), "bbr".into())
    );
    let pp = &j["perfpeer"];
    assert_eq!(pp["status"], "complete");
    assert!((pp["host_cpu_percent"]["remote"].as_f64().unwrap() - 30.0).abs() < 1e-9);
    assert!(pp["service_demand_us_per_kb"]["local"].as_f64().is_some());
    assert_eq!(pp["spec"]["protocol"], "tcp");
    assert!(j.get("error").is_none());
}

#[test]
fn tcp_two_streams_have_sum_lines_and_separators() {
    let r = tcp_two_streams();
    assert_eq!(
        lines(&text_interval(
            &r.spec,
            PeerRole::Client,
            &r.local.intervals[0]
        )),
        [
            "[  5]   0.00-1.00   sec   477 MBytes  4.00 Gbits/sec    0   1.00 MBytes",
            "[  7]   0.00-1.00   sec   477 MBytes  4.00 Gbits/sec    1   1.00 MBytes",
            "[SUM]   0.00-1.00   sec   954 MBytes  8.00 Gbits/sec    1",
        ]
    );
    let second = text_interval(&r.spec, PeerRole::Client, &r.local.intervals[1]);
    assert!(
        second.starts_with("- - - - - - - - - - - - - - - - - - - - - - - - -\n[  5]   1.00-2.00"),
        "{second}"
    );
    assert!(
        second.ends_with("[SUM]   1.00-2.00   sec   954 MBytes  8.00 Gbits/sec    3\n"),
        "{second}"
    );
    assert_eq!(
        lines(&text_summary(&r))[2..8],
        [
            "[  5]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec    4             sender",
            "[  5]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec                  receiver",
            "[  7]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec    5             sender",
            "[  7]   0.00-10.00  sec  4.66 GBytes  4.00 Gbits/sec                  receiver",
            "[SUM]   0.00-10.00  sec  9.31 GBytes  8.00 Gbits/sec    9             sender",
            "[SUM]   0.00-10.00  sec  9.31 GBytes  8.00 Gbits/sec                  receiver",
        ]
    );
    let j = json(&r);
    assert_eq!(j["start"]["test_start"]["num_streams"], 2);
    assert_eq!(j["intervals"][1]["sum"]["retransmits"], 3);
    assert_eq!(j["intervals"][1]["sum"]["bits_per_second"], 8e9);
    assert_eq!(j["end"]["streams"].as_array().unwrap().len(), 2);
    assert_eq!(j["end"]["sum_sent"]["bytes"], 10_000_000_000u64);
    assert_eq!(j["end"]["sum_sent"]["retransmits"], 9);
    assert_eq!(j["end"]["sum_received"]["bits_per_second"], 8e9);
}

#[test]
fn udp_receiver_text() {
    let r = udp_receiver();
    let p = Preamble {
        role: PeerRole::Server,
        server_addr: &r.server_addr,
        spec: &r.spec,
        sockets: &r.local.sockets,
    };
    assert_eq!(
        text_preamble(&p),
        "Accepted connection from 10.0.0.1, port 40000\n[  5] local 10.0.0.2 port 5201 connected to 10.0.0.1 port 40000\n"
    );
    assert_eq!(
        text_interval_header(&r.spec, PeerRole::Server),
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
    );
    assert_eq!(
        text_interval_header(&r.spec, PeerRole::Client)
            .trim_end()
            .rsplit("  ")
            .next(),
        Some("Total Datagrams")
    );
    assert_eq!(
        text_interval(&r.spec, PeerRole::Server, &r.local.intervals[0]),
        "[  5]   0.00-1.00   sec   120 KBytes   985 Kbits/sec  0.123 ms  5/90 (5.6%)\n"
    );
    assert_eq!(
        lines(&text_summary(&r))[1..6],
        [
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams",
            "[  5]   0.00-10.00  sec  1.24 MBytes  1.04 Mbits/sec  0.000 ms  0/900 (0%)  sender",
            "[  5]   0.00-10.00  sec  1.22 MBytes  1.02 Mbits/sec  0.050 ms  20/900 (2.2%)  receiver",
            "[  5]   0.00-10.00  sec  2 datagrams received out-of-order",
            "CPU Utilization: local/receiver 3.0% (1.0%u/2.0%s), remote/sender 5.0% (2.0%u/3.0%s)",
        ]
    );
}

#[test]
fn udp_receiver_json() {
    let j = json(&udp_receiver());
    assert_eq!(j["start"]["test_start"]["protocol"], "UDP");
    assert_eq!(j["start"]["test_start"]["target_bitrate"], 1_000_000);
    assert!(
        j["start"].get("tcp_mss_default").is_none() && j["start"].get("connecting_to").is_none()
    );
    assert_eq!(j["start"]["accepted_connection"]["host"], "10.0.0.1");
    let s = &j["intervals"][0]["streams"][0];
    assert_eq!(
        (
            s["lost_packets"].clone(),
            s["packets"].clone(),
            s["jitter_ms"].clone()
        ),
        (5.into(), 90.into(), 0.123.into())
    );
    assert!((s["lost_percent"].as_f64().unwrap() - 100.0 * 5.0 / 90.0).abs() < 1e-9);
    assert_eq!(j["intervals"][0]["sum"]["lost_packets"], 5);
    assert_eq!(j["intervals"][0]["sum"]["sender"], false);
    let end = &j["end"];
    assert_eq!(end["sum"]["jitter_ms"], 0.05);
    assert_eq!(end["sum"]["lost_packets"], 20);
    assert_eq!(end["sum"]["packets"], 900);
    assert!((end["sum"]["lost_percent"].as_f64().unwrap() - 100.0 * 20.0 / 900.0).abs() < 1e-9);
    assert_eq!(end["sum"]["bytes"], 1448 * 880);
    assert_eq!(
        (
            end["sum_sent"]["packets"].clone(),
            end["sum_sent"]["lost_packets"].clone()
        ),
        (900.into(), 0.into())
    );
    assert_eq!(end["sum_received"]["lost_packets"], 20);
    let udp = &end["streams"][0]["udp"];
    assert_eq!(
        (
            udp["out_of_order"].clone(),
            udp["socket"].clone(),
            udp["sender"].clone()
        ),
        (2.into(), 5.into(), false.into())
    );
    assert!(end.get("sender_tcp_congestion").is_none());
    assert_eq!(j["perfpeer"]["udp"]["duplicates"], 1);
}

#[test]
fn bidir_tags_and_reverse_sums() {
    let r = tcp_bidir();
    assert_eq!(
        text_interval_header(&r.spec, PeerRole::Client),
        "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n"
    );
    assert_eq!(
        lines(&text_interval(
            &r.spec,
            PeerRole::Client,
            &r.local.intervals[0]
        )),
        [
            "[  5][TX-C]   0.00-1.00   sec   119 MBytes  1.00 Gbits/sec    0    256 KBytes",
            "[  7][RX-C]   0.00-1.00   sec  59.6 MBytes   500 Mbits/sec",
        ]
    );
    assert_eq!(
        lines(&text_summary(&r))[1..6],
        [
            "[ ID][Role] Interval           Transfer     Bitrate         Retr",
            "[  5][TX-C]   0.00-10.00  sec  1.16 GBytes  1.00 Gbits/sec    2             sender",
            "[  5][TX-C]   0.00-10.00  sec  1.16 GBytes  1.00 Gbits/sec                  receiver",
            "[  7][RX-C]   0.00-10.00  sec   596 MBytes   500 Mbits/sec    1             sender",
            "[  7][RX-C]   0.00-10.00  sec   596 MBytes   500 Mbits/sec                  receiver",
        ]
    );
    let server_view = text_interval(&r.spec, PeerRole::Server, &r.local.intervals[0]);
    assert!(
        server_view.starts_with("[  5][TX-S]") && server_view.contains("\n[  7][RX-S]"),
        "{server_view}"
    );
    let j = json(&r);
    assert_eq!(j["start"]["test_start"]["bidir"], 1);
    assert_eq!(j["intervals"][0]["sum"]["bytes"], 125_000_000);
    assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["bytes"], 62_500_000);
    assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["sender"], false);
    assert_eq!(j["end"]["sum_sent"]["bytes"], 1_250_000_000);
    assert_eq!(j["end"]["sum_sent_bidir_reverse"]["bytes"], 625_000_000);
    assert_eq!(
        j["end"]["sum_received_bidir_reverse"]["bits_per_second"],
        5e8
    );
    assert_eq!(j["end"]["streams"][1]["sender"]["retransmits"], 1);
}

#[test]
fn service_demand_that_is_not_meaningful_is_said_so_in_text_and_json() {
    let mut r = tcp_single();
    // The far end's process was a sliver of its host's busy time.
    let remote = r.remote.as_mut().unwrap();
    remote.cpu.process_user_s = 0.0;
    remote.cpu.process_system_s = 0.001;
    let text = text_summary(&r);
    let summary = lines(&text);
    assert!(
        summary.iter().any(|l| l.starts_with(
            "Service demand: local 0.328 us/KB, remote not meaningful (0.0% of the host's busy CPU)"
        )),
        "{summary:?}"
    );
    let j = json(&r);
    let pp = &j["perfpeer"];
    assert!(pp["service_demand_us_per_kb"]["local"].as_f64().is_some());
    assert!(
        pp["service_demand_us_per_kb"].get("remote").is_none(),
        "{pp}"
    );
    assert!(
        pp["service_demand_not_meaningful"]["remote"]
            .as_f64()
            .unwrap()
            < 5.0
    );
}

#[test]
fn partial_result_says_why() {
    let mut r = tcp_single();
    r.remote = None;
    r.status = TestStatus::Partial {
        reason: "the server vanished".into(),
    };
    r.local.intervals[0].omitted = true;
    assert!(
        text_interval(&r.spec, PeerRole::Client, &r.local.intervals[0])
            .ends_with("1.50 MBytes       (omitted)\n")
    );
    assert_eq!(
        lines(&text_summary(&r))[2..],
        [
            "[  5]   0.00-10.00  sec  11.6 GBytes  10.0 Gbits/sec    7             sender",
            "CPU Utilization: local/sender 95.1% (3.2%u/91.9%s)",
            "Service demand: local 0.328 us/KB (host CPU, netperf definition)",
            "Test ended early: the server vanished",
            "",
            "perfpeer Done.",
        ]
    );
    let j = json(&r);
    assert_eq!(j["error"], "the server vanished");
    assert_eq!(j["perfpeer"]["status"], "partial");
    assert_eq!(j["perfpeer"]["partial_reason"], "the server vanished");
    assert!(j["end"].get("sum_received").is_none());
    assert!(j["end"]["streams"][0].get("receiver").is_none());
    assert!(
        j["end"]["cpu_utilization_percent"]
            .get("remote_total")
            .is_none()
    );
    assert_eq!(j["intervals"][0]["streams"][0]["omitted"], true);
    let stream = json_stream_end(&r);
    let (err, end) = stream.split_once('\n').unwrap();
    assert_eq!(err, r#"{"event":"error","data":"the server vanished"}"#);
    assert!(end.starts_with(r#"{"event":"end","data":{"#) && !end.ends_with('\n'));
}

#[test]
fn json_stream_lines_match_the_json_object() {
    let r = tcp_single();
    let p = Preamble {
        role: PeerRole::Client,
        server_addr: &r.server_addr,
        spec: &r.spec,
        sockets: &r.local.sockets,
    };
    let start = json_stream_start(&p, r.started_unix_ms, &r.local.host);
    assert!(start.starts_with(r#"{"event":"start","data":{"#) && !start.contains('\n'));
    let start: Value = serde_json::from_str(&start).unwrap();
    assert_eq!(start["data"]["version"], "perfpeer 0.1.0");
    assert_eq!(start["data"]["test_start"], json(&r)["start"]["test_start"]);
    let line: Value =
        serde_json::from_str(&json_stream_interval(&r.spec, &r.local.intervals[0])).unwrap();
    assert_eq!(line["event"], "interval");
    assert_eq!(line["data"], json(&r)["intervals"][0]);
    let end: Value = serde_json::from_str(&json_stream_end(&r)).unwrap();
    assert_eq!(end["data"]["sum_sent"], json(&r)["end"]["sum_sent"]);
    assert_eq!(end["data"]["perfpeer"]["status"], "complete");
}

#[test]
fn helpers_match_c() {
    let g: Vec<String> = [0.0, 12.5, 100.0, 99.96, 0.5, 2.2222, 0.00001234, 5.0]
        .map(two_significant)
        .to_vec();
    assert_eq!(
        g,
        ["0", "12", "1e+02", "1e+02", "0.5", "2.2", "1.2e-05", "5"]
    );
    assert_eq!(split_addr("[::1]:5201"), ("::1", Some(5201)));
    assert_eq!(split_addr("::1"), ("::1", None));
    assert_eq!(split_addr("example.org"), ("example.org", None));
}

#[test]
fn numbers_names_and_errors_take_stock_shapes() {
    let v = cjson_numbers(serde_json::json!({"a": 0.0, "b": [2.5, 1e10, -3.0], "c": 7}));
    assert_eq!(v.to_string(), r#"{"a":0,"b":[2.5,10000000000,-3],"c":7}"#);
    assert_eq!([1, 2, 3, 4, 5, 6].map(socket_number), [5, 7, 9, 12, 14, 16]);
    let host = HostInfo {
        hostname: "dut".into(),
        system: "Linux 6.1.0 #1 SMP mips".into(),
        version: "0.1.0".into(),
    };
    assert_eq!(system_info(&host), "Linux dut 6.1.0 #1 SMP mips");
    let e: Value = serde_json::from_str(&json_error("unable to connect", &host)).unwrap();
    assert_eq!(e["start"]["connected"], serde_json::json!([]));
    assert_eq!(e["start"]["system_info"], "Linux dut 6.1.0 #1 SMP mips");
    assert_eq!(
        (e["intervals"].clone(), e["end"].clone()),
        (serde_json::json!([]), serde_json::json!({}))
    );
    assert_eq!(e["error"], "unable to connect");
    // After `-O 2`, a measured interval counts from the end of the omitted start.
    let mut r = interval(3.0, vec![]);
    assert_eq!(r.iperf3_span(secs(2.0)), (1.0, 2.0));
    r.omitted = true;
    assert_eq!(r.iperf3_span(secs(2.0)), (3.0, 4.0));
}
