//! The netperf codec against the bytes netperf 2.7.1 and its netserver exchanged on loopback
//! (`netperf -H 127.0.0.1 -t TEST -l 1 -c -C`, captured on the control connection).

use super::*;

macro_rules! fixture {
    ($test:literal, $file:literal) => {
        include_bytes!(concat!(
            "../../../tests/fixtures/netperf-2.7.1/",
            $test,
            "/",
            $file,
            ".bin"
        ))
    };
}

fn request(bytes: &[u8]) -> OmniRequest {
    let m = Message::decode(bytes).unwrap();
    assert_eq!(m.kind, kind::DO_OMNI);
    OmniRequest::decode(&m).unwrap()
}

#[test]
fn each_classic_test_reads_as_its_omni_request() {
    let stream = request(fixture!("tcp_stream", "request"));
    assert_eq!(stream.direction, direction::RECV);
    assert!(!stream.server_sends() && stream.server_receives());
    assert_eq!(
        (stream.socket_type, stream.protocol),
        (socket_type::STREAM, socket_type::TCP)
    );
    assert_eq!((stream.send_size, stream.receive_size), (-1, -1));
    assert_eq!((stream.request_size, stream.response_size), (-1, -1));
    assert_eq!(stream.length(), TestLength::Seconds(1));
    assert!(stream.measures_cpu() && !stream.is_connect_test());
    assert_eq!(stream.family, Family::V4);
    assert_eq!(stream.data_port, 0);
    assert_eq!((stream.socket_prio, stream.socket_tos), (-1, -1));
    assert_eq!(stream.cong_control, "");

    let maerts = request(fixture!("tcp_maerts", "request"));
    assert_eq!(maerts.direction, direction::XMIT);
    assert!(!maerts.is_transactional());

    let rr = request(fixture!("tcp_rr", "request"));
    assert!(rr.is_transactional() && !rr.is_connect_test());
    assert_eq!((rr.request_size, rr.response_size), (1, 1));

    let crr = request(fixture!("tcp_crr", "request"));
    assert!(crr.is_transactional() && crr.is_connect_test());

    let udp = request(fixture!("udp_stream", "request"));
    assert_eq!(
        (udp.socket_type, udp.protocol),
        (socket_type::DGRAM, socket_type::UDP)
    );
    assert_eq!(udp.direction, direction::RECV);
    assert_ne!(udp.netperf_port, 0, "a UDP client names its data port");

    let udp_rr = request(fixture!("udp_rr", "request"));
    assert!(udp_rr.is_transactional());
    assert_eq!(udp_rr.protocol, socket_type::UDP);
}

#[test]
fn a_request_reads_back_as_written() {
    for bytes in [
        &fixture!("tcp_stream", "request")[..],
        fixture!("tcp_crr", "request"),
        fixture!("udp_rr", "request"),
    ] {
        let mut r = request(bytes);
        r.cong_control = "cubic".into();
        r.test_length = -5000;
        r.data_port = 40_000;
        r.socket_tos = 0x20;
        let again = OmniRequest::decode(&Message::decode(&r.encode().encode()).unwrap()).unwrap();
        assert_eq!(again, r);
        assert_eq!(again.length(), TestLength::Units(5000));
    }
}

/// netserver's answers, rebuilt from their values, are the captured bytes exactly.
#[test]
fn responses_are_netservers_bytes() {
    let cases: [(&[u8], OmniResponse); 3] = [
        (
            fixture!("tcp_stream", "response"),
            OmniResponse {
                recv_buf_size: 131_072,
                receive_size: 131_072,
                recv_width: 2,
                send_buf_size: 16_384,
                send_size: -1,
                send_width: 2,
                flags: flags::MEASURE_CPU,
                cpu_rate: 100.0,
                data_port: 45_859,
                socket_prio: -1,
                socket_tos: -1,
            },
        ),
        (
            fixture!("tcp_maerts", "response"),
            OmniResponse {
                recv_buf_size: 131_072,
                receive_size: -1,
                recv_width: 2,
                send_buf_size: 16_384,
                send_size: 16_384,
                send_width: 2,
                flags: flags::MEASURE_CPU,
                cpu_rate: 100.0,
                data_port: 35_179,
                socket_prio: -1,
                socket_tos: -1,
            },
        ),
        (
            fixture!("udp_rr", "response"),
            OmniResponse {
                recv_buf_size: 212_992,
                receive_size: 1,
                recv_width: 1,
                send_buf_size: 212_992,
                send_size: 1,
                send_width: 1,
                flags: flags::MEASURE_CPU,
                cpu_rate: 100.0,
                data_port: 47_883,
                socket_prio: -1,
                socket_tos: -1,
            },
        ),
    ];
    for (bytes, response) in cases {
        assert_eq!(&response.encode().encode()[..], bytes);
        let m = Message::decode(bytes).unwrap();
        assert_eq!(OmniResponse::decode(&m), Some(response));
    }
}

#[test]
fn results_read_as_netserver_meant_them() {
    let m = Message::decode(fixture!("tcp_stream", "results")).unwrap();
    let r = OmniResults::decode(&m);
    assert_eq!(r.bytes_received, 3_116_138_496);
    assert_eq!(r.recv_calls, 54_133);
    assert_eq!((r.bytes_sent, r.send_calls, r.transactions), (0, 0, 0));
    assert!((r.elapsed_s - 1.000_635).abs() < 1e-5, "{}", r.elapsed_s);
    let cpu = r.cpu.unwrap();
    assert_eq!(cpu.method, cpu_method::PROC_STAT);
    assert!((cpu.util - 75.896).abs() < 0.01, "{}", cpu.util);
    assert_eq!(r.num_cpus, 2);
    assert_eq!(r.cong_control, "bbr");

    let rr = OmniResults::decode(&Message::decode(fixture!("tcp_rr", "results")).unwrap());
    assert_eq!(rr.transactions, 19_078);
    assert_eq!((rr.bytes_received, rr.bytes_sent), (19_078, 19_078));

    let maerts = OmniResults::decode(&Message::decode(fixture!("tcp_maerts", "results")).unwrap());
    assert_eq!(maerts.bytes_received, 0);
    assert_eq!(maerts.bytes_sent, u64::from(3_174_465_536_u32));
    assert_eq!(maerts.retransmits, 2);

    // Ours, read back; the converted words and the congestion string sit where netserver's do.
    let ours = OmniResults {
        bytes_received: (7 << 32) | 5,
        cong_control: "cubic".into(),
        ..r.clone()
    };
    let bytes = ours.encode().encode();
    assert_eq!(OmniResults::decode(&Message::decode(&bytes).unwrap()), ours);
    assert_eq!(&bytes[8 + 27 * 4 + 160..8 + 27 * 4 + 160 + 6], b"cubic\0");
    let theirs = fixture!("tcp_stream", "results");
    // From recv_calls to elapsed time, ours of netserver's figures are netserver's bytes.
    let same = OmniResults::decode(&Message::decode(theirs).unwrap())
        .encode()
        .encode();
    assert_eq!(&same[8 + 4 * 2..8 + 4 * 14], &theirs[8 + 4 * 2..8 + 4 * 14]);
}

#[test]
fn small_messages() {
    let cal = Message::cpu_calibration(100.0, 4).encode();
    assert_eq!(&cal[..4], &kind::CPU_CALIBRATE.to_be_bytes());
    assert_eq!(&cal[8..12], &100f32.to_bits().to_be_bytes());
    assert_eq!(&cal[12..16], &4u32.to_be_bytes());
    let info = Message::sysinfo().encode();
    assert!(info[8..].starts_with(b",Deprecated,Deprecated,Deprecated,Deprecated\0"));
    let err = Message::error(kind::OMNI_RESPONSE, 16).encode();
    assert_eq!(&err[..8], &[0, 0, 0, 98, 0, 0, 0, 16]);
    assert_eq!(
        Message::decode(&Message::with_passphrase("s3cret").encode())
            .unwrap()
            .passphrase(),
        "s3cret"
    );
}

#[test]
fn what_cannot_be_read_is_said() {
    assert_eq!(Message::decode(&[0; 655]), Err(CodecError::Length(655)));
    assert_eq!(Message::decode(&[0; 657]), Err(CodecError::Length(657)));
    let mut m = Message::decode(fixture!("tcp_stream", "request")).unwrap();
    m.put_u32(request_at::IPFAMILY, 5);
    assert_eq!(OmniRequest::decode(&m), Err(CodecError::Family(5)));
    m.put_u32(request_at::IPFAMILY, 4);
    m.put_u32(request_at::DATA_PORT, 70_000);
    assert_eq!(OmniRequest::decode(&m), Err(CodecError::Port(70_000)));
    // A congestion-control name with no NUL in its 16 bytes stops at the field's end.
    m.put_u32(request_at::DATA_PORT, 0);
    m.data[request_at::CONG_CONTROL..request_at::CONG_CONTROL + 16].fill(b'x');
    assert_eq!(
        OmniRequest::decode(&m).unwrap().cong_control,
        "x".repeat(16)
    );
}

/// netperf 2.7 still runs TCP_CC as a classic test, with its own layouts.
#[test]
fn the_classic_tcp_cc_test() {
    let m = Message::decode(fixture!("tcp_cc", "request")).unwrap();
    assert_eq!(m.kind, kind::DO_TCP_CC);
    let r = OmniRequest::decode_tcp_cc(&m).unwrap();
    assert!(r.is_connect_test() && r.is_transactional());
    assert!(!r.server_sends() && !r.server_receives());
    assert!(r.measures_cpu());
    assert_eq!(r.length(), TestLength::Seconds(1));
    assert_eq!((r.request_size, r.response_size), (1, 1));
    assert_eq!(r.family, Family::V4);

    let response = OmniResponse {
        recv_buf_size: 131_072,
        receive_size: 1,
        recv_width: 0,
        send_buf_size: 16_384,
        send_size: 1,
        send_width: 0,
        flags: flags::MEASURE_CPU,
        cpu_rate: 100.0,
        data_port: 33_111,
        socket_prio: -1,
        socket_tos: -1,
    };
    assert_eq!(
        &response.encode_tcp_cc().encode()[..],
        fixture!("tcp_cc", "response")
    );

    let theirs = fixture!("tcp_cc", "results");
    let word =
        |b: &[u8], i: usize| u32::from_be_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap());
    let ours = OmniResults {
        bytes_received: 23_658,
        recv_calls: 0,
        recv_buf_size: 0,
        bytes_sent: 0,
        send_calls: 0,
        send_buf_size: 0,
        failed_sends: 0,
        transactions: 11_829,
        elapsed_s: f32::from_bits(word(theirs, 3)),
        cpu: Some(ServerCpu {
            util: f32::from_bits(word(theirs, 4)),
            user: 0.0,
            system: 0.0,
            method: cpu_method::PROC_STAT,
        }),
        num_cpus: 2,
        retransmits: 0,
        cong_control: String::new(),
    }
    .encode_tcp_cc()
    .encode();
    // Bytes, calls, transactions, elapsed time and CPU as netserver put them; its service
    // demand and CPU method words are stale memory, ours say "not given" and "/proc/stat".
    assert_eq!(&ours[8..8 + 4 * 5], &theirs[8..8 + 4 * 5]);
    assert_eq!(word(&ours, 7), 2);
}

/// The client's side of TCP_CC: netperf's request rebuilt from its values is its bytes, and
/// netserver's classic answer and results read as it meant them.
#[test]
fn a_client_speaks_the_classic_tcp_cc_test() {
    let theirs = fixture!("tcp_cc", "request");
    let r = OmniRequest::decode_tcp_cc(&Message::decode(theirs).unwrap()).unwrap();
    assert_eq!(&r.encode_tcp_cc().encode()[..], theirs);

    let response =
        OmniResponse::decode_tcp_cc(&Message::decode(fixture!("tcp_cc", "response")).unwrap())
            .unwrap();
    assert_eq!(
        (
            response.recv_buf_size,
            response.send_buf_size,
            response.data_port
        ),
        (131_072, 16_384, 33_111)
    );
    assert_eq!(response.cpu_rate, 100.0);
    assert_eq!(response.flags & flags::MEASURE_CPU, flags::MEASURE_CPU);
    assert_eq!(response.flags & flags::NO_DELAY, 0);

    let results =
        OmniResults::decode_tcp_cc(&Message::decode(fixture!("tcp_cc", "results")).unwrap());
    assert_eq!(results.transactions, 11_829);
    assert_eq!(results.bytes_received, 23_658);
    assert_eq!(results.num_cpus, 2);
    assert!(
        (results.elapsed_s - 1.0).abs() < 0.01,
        "{}",
        results.elapsed_s
    );
    let cpu = results.cpu.expect("netserver measured its CPU");
    assert!((cpu.util - 44.08).abs() < 0.01, "{}", cpu.util);

    // Not measured: netserver's -1.
    let mut m = Message::new(kind::TCP_CC_RESULTS, 0);
    m.put_f32(4, -1.0);
    assert_eq!(OmniResults::decode_tcp_cc(&m).cpu, None);
}
