use perfpeer_tests::netns::{self, ADDR_B, TwoHosts};
use perfpeer_tests::{Peer, f64_at, json_of, perfpeer_test_with, u64_at};

/// Root and iproute2 are needed; CI runs as root, so there a missing capability is a failure.
fn hosts(tag: &str) -> Option<TwoHosts> {
    if !netns::available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root with iproute2 for the namespace tests"
        );
        perfpeer_tests::skip("needs root and iproute2");
        return None;
    }
    Some(TwoHosts::new(tag, "20mbit").expect("create namespaces"))
}

#[test]
fn shaped_20mbit_link_tcp_and_udp_land_where_the_link_allows() {
    let Some(hosts) = hosts("s") else { return };
    let _peer = Peer::start_with(
        hosts.prefix_b(),
        &format!("{ADDR_B}:5210"),
        "5211",
        &["--open"],
    );

    // TCP: goodput is the link rate less Ethernet/IP/TCP headers (1448 of every 1514 bytes ≈ 19.1 Mbit/s).
    let out = perfpeer_test_with(hosts.prefix_a(), &[ADDR_B, "-t", "4", "-O", "1", "-J"]);
    let v = json_of(&out, &["tcp over the shaped link"]);
    let goodput = f64_at(&v, "/end/sum_received/bits_per_second");
    assert!(
        (18e6..=20e6).contains(&goodput),
        "TCP goodput {goodput} not within 10% of 20 Mbit/s"
    );
    // With -O the two ends start counting at their own omit boundary, so only an order holds.
    assert!(u64_at(&v, "/end/sum_received/bytes") <= u64_at(&v, "/end/sum_sent/bytes") + 2_000_000);

    // UDP at 15 Mbit/s, below the link rate: it all arrives.
    let out = perfpeer_test_with(
        hosts.prefix_a(),
        &[ADDR_B, "-u", "-b", "15M", "-t", "4", "-J"],
    );
    let v = json_of(&out, &["udp over the shaped link"]);
    let received = f64_at(&v, "/end/sum_received/bits_per_second");
    assert!(
        (13.5e6..=16.5e6).contains(&received),
        "UDP received {received} not within 10% of 15 Mbit/s"
    );
    assert_eq!(
        u64_at(&v, "/end/sum_received/lost_packets"),
        0,
        "loss below the link rate: {v}"
    );
}
