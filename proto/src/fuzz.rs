//! Codec-level fuzzing of every decoder that reads an anonymous peer's bytes (perfpeer's data
//! hellos and datagrams, iperf3's cookie, states, frame lengths, parameter and result JSON,
//! iperf 2's headers and server reports, netperf's control messages, the `/ws` control
//! messages, and the nl80211 and rtnetlink neighbour answers of the Wi-Fi link): a fixed
//! number of cases from a fixed seed, random bytes and mutations of valid messages. The
//! properties: no panic, length fields bounded before use, and valid messages read back as
//! written.

#![allow(
    clippy::cast_possible_truncation,
    reason = "random bytes and indices: keeping the low bits of a random u64 is the intent"
)]

use perfpeer_shared::control::{ClientMsg, GroupKind, TestGroup};
use perfpeer_shared::report::{PeerRole, SideReport};
use perfpeer_shared::spec::{Protocol, TestSpec};

use crate::wire::{DataHeader, DatagramFormat, StreamHello, UdpControl};
use crate::{iperf2, iperf3, netperf, probe};

/// Cases per decoder.
const CASES: usize = 20_000;

/// xorshift64*, seeded: every run sees the same cases.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Random bytes, or `seed` with a few edits (flips, extreme words, cuts, random tails).
    fn input(&mut self, seed: &[u8]) -> Vec<u8> {
        if self.below(4) == 0 {
            let n = self.below(128);
            return (0..n).map(|_| self.next_u64() as u8).collect();
        }
        let mut out = seed.to_vec();
        for _ in 0..1 + self.below(3) {
            match self.below(4) {
                0 if !out.is_empty() => {
                    let i = self.below(out.len());
                    out[i] ^= 1 << self.below(8);
                }
                1 if out.len() >= 4 => {
                    let i = self.below(out.len() - 3);
                    let w = [0u32, 0x7fff_ffff, 0x8000_0000, u32::MAX][self.below(4)];
                    out[i..i + 4].copy_from_slice(&w.to_be_bytes());
                }
                2 if !out.is_empty() => out.truncate(self.below(out.len())),
                _ => out.extend((0..self.below(16)).map(|_| self.next_u64() as u8)),
            }
        }
        out
    }
}

fn each_case(seeds: &[Vec<u8>], mut check: impl FnMut(&[u8])) {
    let mut rng = Rng(0x0005_eed0_ffee);
    for case in 0..CASES {
        let input = rng.input(&seeds[case % seeds.len()]);
        check(&input);
    }
}

#[test]
fn perfpeer_data_plane_decoders() {
    let cookie = [7u8; 16];
    let hello = StreamHello {
        stream_id: 3,
        cookie,
    }
    .encode();
    let controls: Vec<Vec<u8>> = [
        UdpControl::Hello {
            stream_id: 1,
            cookie,
        },
        UdpControl::Confirm {
            stream_id: 1,
            cookie,
            nonce: [9; 16],
        },
        UdpControl::Fin {
            stream_id: 1,
            packets: 10,
        },
    ]
    .iter()
    .map(UdpControl::encode)
    .collect();
    each_case(&[hello.to_vec()], |b| {
        if let Ok(h) = StreamHello::decode(b) {
            assert_eq!(StreamHello::decode(&h.encode()), Ok(h));
        }
    });
    each_case(&controls, |b| {
        if let Ok(c) = UdpControl::decode(b) {
            assert_eq!(UdpControl::decode(&c.encode()), Ok(c));
        }
        let _ = DataHeader::read(b);
        for format in [
            DatagramFormat::Perfpeer,
            DatagramFormat::Iperf3 { counter64: true },
            DatagramFormat::Iperf2 { seq64: false },
            DatagramFormat::Ttcp,
        ] {
            let _ = format.classify(b);
        }
    });
    // The latency probe's request and answer: both ends read what the other sent.
    let mut answer = vec![0u8; probe::ANSWER_LEN + 8];
    probe::ProbeAnswer {
        request: probe::ProbeRequest { seq: 3, sent_ns: 9 },
        far_received_ns: 10,
        far_sent_ns: 11,
        far_count: 3,
    }
    .write(&mut answer);
    each_case(&[answer], |b| {
        if let Ok(a) = probe::ProbeAnswer::read(b) {
            let mut again = vec![0u8; probe::ANSWER_LEN];
            a.write(&mut again);
            assert_eq!(probe::ProbeAnswer::read(&again), Ok(a));
        }
        if let Ok(r) = probe::ProbeRequest::read(b) {
            let mut again = vec![0u8; probe::REQUEST_LEN];
            r.write(&mut again);
            assert_eq!(probe::ProbeRequest::read(&again), Ok(r));
        }
    });
}

#[test]
fn iperf3_decoders() {
    let spec = TestSpec::new(Protocol::Tcp);
    let params = serde_json::to_vec(&iperf3::params_json(&spec, iperf3::Asks::default())).unwrap();
    let results = serde_json::to_vec(&serde_json::json!({
        "cpu_util_total": 1.0, "cpu_util_user": 0.5, "cpu_util_system": 0.5,
        "sender_has_retransmits": 1,
        "streams": [{"id": 1, "bytes": 1000, "retransmits": 0, "jitter": 0.0,
                     "errors": 0, "packets": 0, "start_time": 0.0, "end_time": 1.0}]
    }))
    .unwrap();
    let local = SideReport::empty(PeerRole::Server, Default::default());
    each_case(&[params.clone(), results.clone()], |b| {
        if let Ok(p) = iperf3::Params::parse(b)
            && let Ok(r) = p.into_requested()
        {
            assert!(
                r.spec.validate().is_ok(),
                "accepted an invalid spec: {:?}",
                r.spec
            );
        }
        if let Ok(r) = iperf3::Results::parse(b) {
            let _ = r.into_report(&local, PeerRole::Client, Protocol::Tcp);
        }
        if b.len() >= 4 {
            let prefix: [u8; 4] = b[..4].try_into().unwrap();
            if let Ok(n) = iperf3::frame_len(prefix, iperf3::MAX_PARAMS_LEN) {
                assert!(n <= iperf3::MAX_PARAMS_LEN);
            }
        }
        if b.len() >= iperf3::COOKIE_LEN {
            let c: [u8; iperf3::COOKIE_LEN] = b[..iperf3::COOKIE_LEN].try_into().unwrap();
            let _ = iperf3::Cookie::from_bytes(&c);
        }
        if let Some(&first) = b.first() {
            let _ = iperf3::State::from_byte(first);
        }
    });
}

#[test]
fn iperf2_decoders() {
    let header = iperf2::Header::new(
        iperf2::Amount::Time(std::time::Duration::from_secs(10)),
        1,
        5001,
        false,
    )
    .encode();
    each_case(&[header.to_vec()], |b| {
        if b.len() >= 4 {
            let word = u32::from_be_bytes(b[..4].try_into().unwrap());
            if let Ok(Some(len)) = iperf2::Header::length_from_flags(word) {
                assert!(len <= 256, "a header length of {len} bytes");
            }
        }
        let _ = iperf2::Header::decode(b);
        if let Ok(report) = iperf2::ServerReport::decode(b) {
            // A report we would send back for it encodes without a panic.
            let _ = report.encode();
        }
        if let Ok(bb) = iperf2::BounceBack::decode(b) {
            let mut reply = b.to_vec();
            iperf2::BounceBack::stamp_read(&mut reply, std::time::Duration::from_secs(1));
            iperf2::BounceBack::stamp_write(&mut reply, std::time::Duration::from_secs(2));
            let _ = iperf2::BounceBack::times(&reply);
            assert_eq!(reply.len(), b.len(), "stamps never grow a reply ({bb:?})");
        }
    });
}

/// A stock client's video datagrams and stamped TCP writes, mangled: a frame's mark reads as
/// a place inside its frame or as nothing, a stamp as a write of a believable size or as
/// nothing, and a stream of mangled writes never makes the receiver's position run away.
#[test]
fn iperf2_frames_and_write_stamps() {
    use crate::write_stamps::WriteStamps;
    let mut isoch = vec![0u8; iperf2::UDP_TRIP_TIMES_LEN];
    isoch[iperf2::UDP_HEADER_AT..iperf2::UDP_HEADER_AT + iperf2::TCP_HEADER_LEN].copy_from_slice(
        &iperf2::Header::new(
            iperf2::Amount::Time(std::time::Duration::from_secs(10)),
            1,
            5001,
            true,
        )
        .isochronous()
        .encode(),
    );
    iperf2::IsochMark {
        period_us: 16_666,
        start: std::time::Duration::from_secs(1),
        prev_frame: 4,
        frame: 5,
        frame_bytes: 5000,
        remaining: 3000,
    }
    .write(&mut isoch);
    let mut write = vec![0u8; 200];
    iperf2::TcpStamp {
        sent: std::time::Duration::from_secs(1),
        id: 1,
        size: 200,
    }
    .write(std::time::Duration::ZERO, &mut write);
    let format = crate::wire::DatagramFormat::Iperf2 { seq64: true };
    let mut stamps = WriteStamps::new(1, format);
    each_case(&[isoch, write], |b| {
        if let Some(m) = format.frame_of(b, None) {
            let tag = m.tag;
            assert!(
                tag.frame > 0 && tag.index < tag.count && m.period_s > 0.0,
                "{m:?}"
            );
        }
        if let Some(stamp) = iperf2::TcpStamp::read(b) {
            assert!(stamp.size as usize >= iperf2::TCP_STAMP_LEN, "{stamp:?}");
        }
        stamps.on_read(b, |_, _| {});
    });
}

#[test]
fn netperf_decoders() {
    let seed = netperf::OmniRequest {
        send_buf_size: -1,
        send_size: -1,
        request_size: 1,
        recv_buf_size: -1,
        receive_size: -1,
        response_size: 1,
        flags: netperf::flags::MEASURE_CPU,
        cpu_rate: 0.0,
        test_length: 10,
        data_port: 0,
        family: netperf::Family::V4,
        socket_type: netperf::socket_type::STREAM,
        protocol: netperf::socket_type::TCP,
        direction: netperf::direction::XMIT | netperf::direction::RECV,
        netperf_port: 0,
        socket_prio: -1,
        socket_tos: -1,
        cong_control: "cubic".into(),
    };
    each_case(&[seed.encode().encode().to_vec()], |b| {
        let Ok(m) = netperf::Message::decode(b) else {
            assert_ne!(b.len(), netperf::MESSAGE_LEN);
            return;
        };
        assert_eq!(&m.encode()[..], b);
        if let Ok(r) = netperf::OmniRequest::decode(&m) {
            assert!(r.cong_control.chars().count() <= 16);
            let again = netperf::OmniRequest::decode(&r.encode()).unwrap();
            assert!(again == r || r.cpu_rate.is_nan());
        }
        let _ = netperf::OmniResponse::decode(&m);
        let _ = netperf::OmniResults::decode(&m);
        let _ = netperf::OmniResponse::decode_tcp_cc(&m);
        let _ = netperf::OmniResults::decode_tcp_cc(&m);
        let _ = m.passphrase();
    });
}

#[test]
fn control_messages_from_a_websocket() {
    let spec = TestSpec::new(Protocol::Udp);
    let seeds: Vec<Vec<u8>> = [
        ClientMsg::Open {
            spec: spec.clone(),
            group: None,
        },
        // A sweep's test, as the far end groups it.
        ClientMsg::Open {
            spec: spec.clone(),
            group: Some(TestGroup {
                id: "0123456789abcdef0123456789abcdef".into(),
                kind: GroupKind::Sweep,
                tests: 8,
            }),
        },
        ClientMsg::Run {
            target: "pc".into(),
            spec,
        },
        ClientMsg::Hello {
            protocol_version: 2,
            token: Some("t".into()),
        },
    ]
    .iter()
    .map(|m| m.to_json().into_bytes())
    .collect();
    each_case(&seeds, |b| {
        if let Ok(msg) = ClientMsg::parse(&String::from_utf8_lossy(b)) {
            if let ClientMsg::Open { spec, .. } | ClientMsg::Run { spec, .. } = &msg {
                let _ = spec.validate();
                let _ = spec.stream_plan();
            }
            assert_eq!(ClientMsg::parse(&msg.to_json()).ok(), Some(msg));
        }
    });
}

/// An attribute's bytes (for the nl80211 seeds).
fn nl_attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&u16::try_from(4 + value.len()).unwrap_or(0).to_ne_bytes());
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(value);
    b.resize((b.len() + 3) & !3, 0);
    b
}

/// The nl80211 answers a peer reads (station, interface and survey dumps): the kernel is not
/// an anonymous peer, but a decoder that trusts lengths is one bug away from reading past a
/// buffer, so they get the same treatment. Seeds: answers laid out here, and the kernel's own
/// answers captured in the Wi-Fi guest (proto/fixtures/nl80211/*.hex) where present.
#[test]
fn nl80211_decoders() {
    use crate::netlink::{GenlMessage, Reply, replies};
    use crate::nl80211::{interface_of, station_of, survey_of};
    let rate = [
        nl_attr(1, &1444u16.to_ne_bytes()),
        nl_attr(2, &[15]),
        nl_attr(4, &[]),
        nl_attr(15, &[1]),
    ]
    .concat();
    let info = [
        nl_attr(7, &[0xe2]),
        nl_attr(8 | 0x8000, &rate),
        nl_attr(
            25 | 0x8000,
            &[nl_attr(0, &[0xe0]), nl_attr(1, &[0xe1])].concat(),
        ),
        nl_attr(10, &5u32.to_ne_bytes()),
        nl_attr(39, &7u64.to_ne_bytes()),
    ]
    .concat();
    let mut station = GenlMessage::new(0x22, 2, 1, 19, 1);
    station
        .attr(6, &[2, 0, 0, 0, 1, 0])
        .attr(21 | 0x8000, &info);
    let mut survey = GenlMessage::new(0x22, 2, 1, 51, 1);
    survey.attr(
        84 | 0x8000,
        &[nl_attr(1, &2437u32.to_ne_bytes()), nl_attr(2, &[0xa4])].concat(),
    );
    let mut iface = GenlMessage::new(0x22, 2, 1, 7, 1);
    iface
        .attr_u32(3, 4)
        .attr_str(4, "wlan0")
        .attr_u32(5, 3)
        .attr(52, b"net");
    let mut seeds = vec![
        station.into_bytes(),
        survey.into_bytes(),
        iface.into_bytes(),
    ];
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nl80211");
    for entry in std::fs::read_dir(fixtures).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        seeds.extend(text.lines().filter_map(|l| {
            let hex = l.trim();
            (hex.len() % 2 == 0 && !hex.is_empty())
                .then(|| {
                    (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                        .collect::<Option<Vec<u8>>>()
                })
                .flatten()
        }));
    }
    each_case(&seeds, |b| {
        for reply in replies(b) {
            let Ok(Reply::Genl { attrs, .. }) = reply else {
                continue;
            };
            for cmd in [7, 19, 51] {
                let _ = station_of(cmd, attrs);
                let _ = interface_of(cmd, attrs);
                let _ = survey_of(cmd, attrs);
            }
        }
    });
}

/// The IPv6 neighbour table's answers (rtnetlink): seeds laid out here and the kernel's own
/// dump captured over a veth pair (proto/fixtures/rtnetlink/neigh_v6.hex).
#[test]
fn rtnetlink_neighbour_decoder() {
    use crate::netlink::{Reply, replies};
    use crate::rtnetlink::{RTM_NEWNEIGH, neighbour_of};
    let attrs = [
        nl_attr(1, &[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        nl_attr(2, &[2, 0, 0, 0, 1, 0]),
    ]
    .concat();
    let mut laid_out = Vec::new();
    laid_out.extend_from_slice(&u32::try_from(28 + attrs.len()).unwrap_or(0).to_ne_bytes());
    laid_out.extend_from_slice(&RTM_NEWNEIGH.to_ne_bytes());
    laid_out.extend_from_slice(&[2, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    laid_out.extend_from_slice(&[10, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 1]);
    laid_out.extend_from_slice(&attrs);
    let text = include_str!("../fixtures/rtnetlink/neigh_v6.hex").trim();
    let kernel = (0..text.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect();
    each_case(&[laid_out, kernel], |b| {
        for reply in replies(b) {
            if let Ok(Reply::Genl { kind, body, .. }) = reply {
                let _ = neighbour_of(kind, body);
                let _ = neighbour_of(RTM_NEWNEIGH, body);
            }
        }
    });
}
