//! perfpeer's end-to-end tests: one binary, real `perfpeer` processes, real sockets.

/// The web UI in headless Chromium at phone size: TCP and UDP tests, errors, screenshots.
mod browser;
/// The `/ws` control endpoint driven like a browser: token, `run`, live reports.
mod control_ws;
/// Packet-size sweeps and constant-bitrate streams over UDP: consistent rows, rate, gaps.
mod datagram_modes;
/// DCCP on a kernel without it: the one-line cause at the CLI, in the peer info and a refusal.
mod dccp_host;
/// Real kernel DCCP in a Debian 12 guest under qemu (TCG): CCIDs, IPv4/IPv6, sweep, CBR.
mod dccp_vm;
/// The static DUT builds under qemu-user and in an empty chroot.
mod dut;
/// Bad input and failures: unreachable peers, garbage, oversized frames, dying peers, caps.
mod faults;
/// flent rrul and tcp_upload with stock netperf 2.7.0 against `perfpeer netserver` in namespaces.
mod flent;
/// A fuzz target per listener, a fixed number of cases from a fixed seed, corpus first.
mod fuzz_listeners;
/// The far end as an attacker would try it: reflection, deadlines, floods, memory.
mod hardening;
/// The history's budgets against anonymous far ends: the owner's results are never evicted.
mod hardening_history;
/// `perfpeer iperf -s` as an attacker would try it: forged flows, floods of streams and lines.
mod hardening_iperf2;
/// `perfpeer iperf3 -s` and `perfpeer netserver` as an attacker would try them: amplification,
/// floods of requests and of log lines, many addresses.
mod hardening_personas;
/// The result history: pages, JSON, the token holder's API, restarts, the results CLI.
mod history;
/// Stock iperf 2.1.8 clients' Wi-Fi-era features against our server: bounce-back, trip-times,
/// and every client flag of `iperf --help` with a time limit.
mod interop_iperf2_features;
/// Stock iperf 2 and ttcp peers, the stock-tool targets of `perfpeer test`, argv[0] roles.
mod interop_iperf2_ttcp;
/// Stock iperf3 against our iperf3 server and our client against stock iperf3.
mod interop_iperf3;
/// The flags iperf3 users type and the output scripts read, through an `iperf3` symlink.
mod iperf3_flags;
/// `-J` against JSON captured from stock iperf3 3.12: the same keys and yes/no figures.
mod iperf3_json;
/// A lab's nightly run: the systemd units verified, `plan check`, `--baseline last`.
mod lab;
/// A lab's shared PostgreSQL store: two peers at once, a database lost mid-test, 10 000 results.
mod lab_store;
/// Latency under load: a router's queue in namespaces beside ping and irtt; flags over loopback.
mod latency_load;
/// The binary's modules import only downward, as docs/architecture.md draws them.
mod layers;
/// Tests over loopback: every direction and protocol, agreement of both ends, JSON keys.
mod loopback;
/// Prometheus's `/metrics`: the token, counts after known tests, promtool, a real Prometheus
/// scraping two peers, the far-peer series cap, the Grafana dashboard's queries.
mod metrics;
/// Multicast UDP between namespaces on a bridge: group receivers count, others get nothing.
mod multicast;
/// `perfpeer netperf` against a perfpeer peer: netperf's tables, figures that agree with `-J`.
mod netperf_cli;
/// `perfpeer netserver` for stock netperf clients: captured requests, hostile clients, the name.
mod netserver;
/// Expectations and regression plans judged on a shaped link: exit codes, tables, baselines.
mod plans;
/// Two hosts in network namespaces on a shaped 20 Mbit/s link.
mod shaped_link;
/// The history's disk and the CLI's stdout broken as users break them.
mod store_and_pipes;
/// The control port against other sites' pages, rebinding, token guessing and floods.
mod web_security;
/// Wi-Fi link statistics in a Debian 12 guest under qemu: mac80211_hwsim radios, hostapd, a
/// station in a second namespace, a lossy medium; perfpeer's figures against iw.
mod wifi_vm;
/// The Windows .exe under wine, as the far end of the Linux peer and as its client.
mod windows;
