//! netperf's output for a [`TestResult`]: the "MIGRATED … TEST" banner and the classic tables of
//! netperf 2.7 (verbosity 1) for TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, TCP_CC, UDP_STREAM and
//! UDP_RR, with and without the CPU columns of `-c`/`-C`. Pure layout: every figure comes from the
//! report model.
//!
//! Layouts follow netperf 2.7's `nettest_omni.c` format strings, trailing spaces included. Where
//! netperf has no figure, `-1` is printed as netperf does. Two deliberate differences: socket
//! sizes are read back when the test ends (netperf's classic tables show the sizes at setup), and
//! TCP_MAERTS prints the local receive and remote send sizes in both layouts (netperf's CPU layout
//! prints the remote receive and local send sizes there, a copy of TCP_STREAM's).

use std::net::{IpAddr, SocketAddr};

use crate::report::{
    CpuUsage, DirectionTotals, PeerRole, ServiceDemand, SideReport, TestResult, bits_per_second,
};
use crate::rr::RrFinal;
use crate::spec::{ConnectionTest, Direction, Protocol, TestSpec};

/// The netperf tests perfpeer can run and print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetperfTest {
    /// netperf sends a TCP stream.
    TcpStream,
    /// The far end sends a TCP stream ("MAERTS" is "STREAM" backwards).
    TcpMaerts,
    /// TCP request/response, one transaction at a time.
    TcpRr,
    /// netperf sends UDP datagrams, unpaced.
    UdpStream,
    /// UDP request/response, one transaction at a time.
    UdpRr,
    /// A TCP connection per transaction, each with a request and a response (against a
    /// netserver only).
    TcpCrr,
    /// A TCP connection per transaction, opened and closed with no data (against a netserver
    /// only).
    TcpCc,
}

/// Why a result cannot be printed as netperf output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetperfError {
    /// The spec has no netperf test with the same meaning.
    #[error("this test has no netperf equivalent: {0}")]
    NoEquivalent(&'static str),
}

impl NetperfTest {
    /// The netperf test a spec corresponds to.
    pub fn of_spec(spec: &TestSpec) -> Result<Self, NetperfError> {
        if spec.streams != 1 {
            return Err(NetperfError::NoEquivalent("netperf tests run one stream"));
        }
        let connections = spec.rr.and_then(|rr| rr.connection_per_transaction);
        match (spec.protocol, spec.direction, spec.rr.is_some()) {
            (Protocol::Tcp, Direction::Normal, true) => Ok(match connections {
                None => NetperfTest::TcpRr,
                Some(ConnectionTest::RequestResponse) => NetperfTest::TcpCrr,
                Some(ConnectionTest::ConnectOnly) => NetperfTest::TcpCc,
            }),
            (Protocol::Tcp, Direction::Normal, false) => Ok(NetperfTest::TcpStream),
            (Protocol::Tcp, Direction::Reverse, false) => Ok(NetperfTest::TcpMaerts),
            (Protocol::Udp, Direction::Normal, false) => Ok(NetperfTest::UdpStream),
            (Protocol::Udp, Direction::Normal, true) => Ok(NetperfTest::UdpRr),
            (_, Direction::Bidir, _) => Err(NetperfError::NoEquivalent("both directions at once")),
            (Protocol::Tcp, Direction::Reverse, true) => {
                Err(NetperfError::NoEquivalent("reversed request/response"))
            }
            (Protocol::Udp, ..) => Err(NetperfError::NoEquivalent("UDP received from the far end")),
            (Protocol::Dccp, ..) => Err(NetperfError::NoEquivalent("DCCP")),
        }
    }

    /// The name `-t` takes.
    pub fn name(self) -> &'static str {
        match self {
            NetperfTest::TcpStream => "TCP_STREAM",
            NetperfTest::TcpMaerts => "TCP_MAERTS",
            NetperfTest::TcpRr => "TCP_RR",
            NetperfTest::UdpStream => "UDP_STREAM",
            NetperfTest::UdpRr => "UDP_RR",
            NetperfTest::TcpCrr => "TCP_CRR",
            NetperfTest::TcpCc => "TCP_CC",
        }
    }

    /// The protocol the test runs over.
    pub fn protocol(self) -> Protocol {
        match self {
            NetperfTest::UdpStream | NetperfTest::UdpRr => Protocol::Udp,
            _ => Protocol::Tcp,
        }
    }

    /// Whether the test counts transactions (request/response and connection tests) rather
    /// than bytes.
    pub fn is_transactional(self) -> bool {
        matches!(
            self,
            NetperfTest::TcpRr | NetperfTest::UdpRr | NetperfTest::TcpCrr | NetperfTest::TcpCc
        )
    }

    fn title(self) -> &'static str {
        match self {
            NetperfTest::TcpStream => "MIGRATED TCP STREAM TEST",
            NetperfTest::TcpMaerts => "MIGRATED TCP MAERTS TEST",
            NetperfTest::TcpRr => "MIGRATED TCP REQUEST/RESPONSE TEST",
            NetperfTest::UdpStream => "MIGRATED UDP STREAM TEST",
            NetperfTest::UdpRr => "MIGRATED UDP REQUEST/RESPONSE TEST",
            NetperfTest::TcpCrr => "MIGRATED TCP Connect/Request/Response TEST",
            // netperf 2.7 still runs TCP_CC as a classic test: not "MIGRATED".
            NetperfTest::TcpCc => "TCP Connect/Close TEST",
        }
    }
}

/// What to print besides the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a> {
    /// The peer as the user named it (`-H`), for the banner.
    pub host: &'a str,
    /// `-c`: local CPU utilisation and service demand.
    pub local_cpu: bool,
    /// `-C`: remote CPU utilisation and service demand.
    pub remote_cpu: bool,
    /// Banner and column titles (`-P 1`, the default); without them only the data lines.
    pub headers: bool,
    /// Throughput units (`-f`).
    pub units: Units,
}

/// netperf's `-f`: throughput in 10^3/10^6/10^9 bits (`k`, `m`, `g`) or 2^10/2^20/2^30 bytes
/// (`K`, `M`, `G`) per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Units {
    /// `k`.
    KiloBits,
    /// `m`, netperf's default.
    #[default]
    MegaBits,
    /// `g`.
    GigaBits,
    /// `K`.
    KiloBytes,
    /// `M`.
    MegaBytes,
    /// `G`.
    GigaBytes,
}

impl Units {
    /// The unit `-f` names, if it is one.
    pub fn from_flag(c: char) -> Option<Units> {
        Some(match c {
            'k' => Units::KiloBits,
            'm' => Units::MegaBits,
            'g' => Units::GigaBits,
            'K' => Units::KiloBytes,
            'M' => Units::MegaBytes,
            'G' => Units::GigaBytes,
            _ => return None,
        })
    }

    /// The unit as netperf's titles name it.
    pub fn label(self) -> &'static str {
        match self {
            Units::KiloBits => "10^3bits",
            Units::MegaBits => "10^6bits",
            Units::GigaBits => "10^9bits",
            Units::KiloBytes => "KBytes",
            Units::MegaBytes => "MBytes",
            Units::GigaBytes => "GBytes",
        }
    }

    /// A rate in bit/s (the model's figure) in this unit.
    pub fn of_bits_per_second(self, bps: f64) -> f64 {
        match self {
            Units::KiloBits => bps / 1e3,
            Units::MegaBits => bps / 1e6,
            Units::GigaBits => bps / 1e9,
            Units::KiloBytes => bps / 8.0 / 1024.0,
            Units::MegaBytes => bps / 8.0 / 1024.0 / 1024.0,
            Units::GigaBytes => bps / 8.0 / 1024.0 / 1024.0 / 1024.0,
        }
    }
}

/// The banner line netperf prints before a test, e.g. `MIGRATED TCP STREAM TEST from 0.0.0.0
/// (0.0.0.0) port 0 AF_INET to pc (10.0.0.2) port 0 AF_INET`; `ip` is the peer's address when known.
pub fn banner(test: NetperfTest, host: &str, ip: Option<IpAddr>, no_delay: bool) -> String {
    let (any, family) = match ip {
        Some(IpAddr::V6(_)) => ("::", "AF_INET6"),
        _ => ("0.0.0.0", "AF_INET"),
    };
    let ip = ip.map(|a| a.to_string()).unwrap_or_default();
    let mut line = format!(
        "{} from {any} ({any}) port 0 {family} to {host} ({ip}) port 0 {family}",
        test.title()
    );
    if no_delay {
        line += " : nodelay";
    }
    if matches!(test, NetperfTest::TcpRr | NetperfTest::UdpRr) {
        // Default netperf builds have the initial-burst option; perfpeer never bursts.
        line += " : first burst 0";
    }
    line + "\n"
}

/// Banner (with [`Options::headers`]) and table of a finished test.
pub fn render(result: &TestResult, opts: &Options<'_>) -> Result<String, NetperfError> {
    let test = NetperfTest::of_spec(&result.spec)?;
    let mut out = String::new();
    if opts.headers {
        let ip = result
            .server_addr
            .parse::<SocketAddr>()
            .ok()
            .map(|a| a.ip());
        out += &banner(test, opts.host, ip, result.spec.no_delay);
    }
    out += &table(result, opts)?;
    Ok(out)
}

/// The column titles (with [`Options::headers`]) and data lines of a finished test.
pub fn table(result: &TestResult, opts: &Options<'_>) -> Result<String, NetperfError> {
    let test = NetperfTest::of_spec(&result.spec)?;
    let (client, server) = result.sides();
    let ends = Ends {
        local: client,
        remote: server,
        opts,
    };
    Ok(match test {
        NetperfTest::TcpStream | NetperfTest::TcpMaerts => ends.stream(result, test),
        NetperfTest::TcpRr | NetperfTest::UdpRr | NetperfTest::TcpCrr | NetperfTest::TcpCc => {
            ends.rr(result, test)
        }
        NetperfTest::UdpStream => ends.udp(result),
    })
}

/// CPU columns of one end: utilisation (%), service demand, method letter.
struct Cpu {
    util: f64,
    demand: f64,
    method: char,
}

/// netperf's (client's) end and the far end, and what the user asked for.
struct Ends<'a> {
    local: Option<&'a SideReport>,
    remote: Option<&'a SideReport>,
    opts: &'a Options<'a>,
}

/// The CPU columns of `side`, with its service `demand` as the model computed it (µs per KB,
/// or per transaction).
fn cpu_of(side: Option<&SideReport>, asked: bool, demand: Option<f64>) -> Cpu {
    let measured = side.map(|s| s.cpu).filter(CpuUsage::host_measured);
    let method = if measured.is_some() { 'S' } else { 'U' };
    let Some(cpu) = measured.filter(|_| asked) else {
        return Cpu {
            util: -1.0,
            demand: -1.0,
            method,
        };
    };
    Cpu {
        util: cpu.host_total_percent(),
        demand: demand.unwrap_or(-1.0),
        method,
    }
}

/// A socket size as netperf prints it (`-1` when unknown).
fn size(v: Option<u32>) -> i64 {
    v.map_or(-1, i64::from)
}

impl Ends<'_> {
    /// Both ends' CPU columns of a stream test: each end's service demand over the bytes it
    /// moved (the model's [`TestResult::service_demand`], as every tab shows it: where it is not
    /// meaningful, netperf's "not known", -1).
    fn stream_cpu(&self, result: &TestResult) -> (Cpu, Cpu) {
        let demand = |end| {
            result
                .service_demand(end)
                .and_then(ServiceDemand::us_per_kb)
        };
        (
            cpu_of(self.local, self.opts.local_cpu, demand(PeerRole::Client)),
            cpu_of(self.remote, self.opts.remote_cpu, demand(PeerRole::Server)),
        )
    }

    /// Both ends' CPU columns of a request/response test: per transaction.
    fn rr_cpu(&self, transactions: u64) -> (Cpu, Cpu) {
        let per = |side: Option<&SideReport>| {
            side.and_then(|s| s.cpu.service_demand_us_per_transaction(transactions))
        };
        (
            cpu_of(self.local, self.opts.local_cpu, per(self.local)),
            cpu_of(self.remote, self.opts.remote_cpu, per(self.remote)),
        )
    }

    fn cpu_asked(&self) -> bool {
        self.opts.local_cpu || self.opts.remote_cpu
    }

    fn local_buf(&self, f: fn(&SideReport) -> Option<u32>) -> i64 {
        size(self.local.and_then(f))
    }

    fn remote_buf(&self, f: fn(&SideReport) -> Option<u32>) -> i64 {
        size(self.remote.and_then(f))
    }

    /// TCP_STREAM and TCP_MAERTS: one line; throughput from the receiver's byte count over
    /// netperf's own elapsed time.
    fn stream(&self, result: &TestResult, test: NetperfTest) -> String {
        let maerts = test == NetperfTest::TcpMaerts;
        let (bytes, elapsed) = stream_figures(result, maerts);
        let (recv_size, send_size) = if maerts {
            (self.local_buf(rcvbuf), self.remote_buf(sndbuf))
        } else {
            (self.remote_buf(rcvbuf), self.local_buf(sndbuf))
        };
        let thruput = self
            .opts
            .units
            .of_bits_per_second(bits_per_second(bytes, elapsed));
        let unit = self.opts.units.label();
        let msg = result.spec.len;
        let mut out = String::new();
        if !self.cpu_asked() {
            if self.opts.headers {
                out += &format!(
                    "Recv   Send    Send                          \n\
                     Socket Socket  Message  Elapsed              \n\
                     Size   Size    Size     Time     Throughput  \n\
                     bytes  bytes   bytes    secs.    {unit}/sec  \n\n"
                );
            }
            out += &format!(
                "{recv_size:>6} {send_size:>6} {msg:>6}    {elapsed:<6.2}   {thruput:>7.2}   \n"
            );
            return out;
        }
        let (l, r) = self.stream_cpu(result);
        if self.opts.headers {
            // Which way the data went, for the local and remote columns.
            let ends = if maerts {
                "Recv     Send     Recv    Send"
            } else {
                "Send     Recv     Send    Recv"
            };
            out += &format!(
                "Recv   Send    Send                          Utilization       Service Demand\n\
                 Socket Socket  Message  Elapsed              {ends}\n\
                 Size   Size    Size     Time     Throughput  local    remote   local   remote\n\
                 bytes  bytes   bytes    secs.    {unit}/s  % {}      % {}      us/KB   us/KB\n\n",
                l.method, r.method
            );
        }
        out += &format!(
            "{recv_size:>6} {send_size:>6} {msg:>6}    {elapsed:<6.2}     {thruput:>7.2}   \
             {:<6.2}   {:<6.2}   {:<6.3}  {:<6.3} \n",
            l.util, r.util, l.demand, r.demand
        );
        out
    }

    /// TCP_RR, UDP_RR, TCP_CRR and TCP_CC: transactions per second, CPU per transaction; the
    /// second line holds the remote socket sizes.
    fn rr(&self, result: &TestResult, test: NetperfTest) -> String {
        let (rr, elapsed) = rr_of(result).unwrap_or((
            RrFinal {
                transactions: 0,
                request_len: result.spec.len,
                response_len: result.spec.rr.map_or(0, |r| r.response_len),
                rtt: None,
            },
            0.0,
        ));
        let tps = rr.transactions_per_second(elapsed);
        let (lss, lsr) = (self.local_buf(sndbuf), self.local_buf(rcvbuf));
        let (rss, rsr) = (self.remote_buf(sndbuf), self.remote_buf(rcvbuf));
        let (req, resp) = (rr.request_len, rr.response_len);
        let mut out = String::new();
        if !self.cpu_asked() {
            if self.opts.headers {
                out += "Local /Remote\n\
                        Socket Size   Request  Resp.   Elapsed  Trans.\n\
                        Send   Recv   Size     Size    Time     Rate         \n\
                        bytes  Bytes  bytes    bytes   secs.    per sec   \n\n";
            }
            out += &format!(
                "{lss:<6} {lsr:<6} {req:<6}   {resp:<6}  {elapsed:<6.2}   {tps:>7.2}   \n\
                 {rss:<6} {rsr:<6}\n"
            );
            return out;
        }
        let (mut l, mut r) = self.rr_cpu(rr.transactions);
        if test == NetperfTest::TcpCc {
            // The classic test's titles name no CPU method.
            (l.method, r.method) = (' ', ' ');
        }
        if self.opts.headers {
            out += &format!(
                "Local /Remote\n\
                 Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n\
                 Send   Recv   Size    Size   Time    Rate     local  remote local   remote\n\
                 bytes  bytes  bytes   bytes  secs.   per sec  % {}    % {}    us/Tr   us/Tr\n\n",
                l.method, r.method
            );
        }
        out += &format!(
            "{lss:<6} {lsr:<6} {req:<6}  {resp:<6} {elapsed:<6.2}  {tps:<6.2}  \
             {:<6.2} {:<6.2} {:<6.3}  {:<6.3} \n\
             {rss:<6} {rsr:<6}\n",
            l.util, r.util, l.demand, r.demand
        );
        out
    }

    /// UDP_STREAM: the sender's line (datagrams sent) and the receiver's (datagrams received),
    /// both over netperf's elapsed time. Errors is 0: perfpeer's sender retries a send the kernel
    /// refused (ENOBUFS) instead of dropping the datagram.
    fn udp(&self, result: &TestResult) -> String {
        let (sent, received) = flow_totals(result, true);
        let elapsed = sent.seconds;
        let msg = result.spec.len;
        let (lss, rsr) = (self.local_buf(sndbuf), self.remote_buf(rcvbuf));
        let okay = sent.packets.unwrap_or(0);
        let got = received.udp_rx.map_or(0, |u| u.received);
        let rate = |bytes| {
            self.opts
                .units
                .of_bits_per_second(bits_per_second(bytes, elapsed))
        };
        let (tx, rx) = (rate(sent.bytes), rate(received.bytes));
        let unit = self.opts.units.label();
        let mut out = String::new();
        if !self.cpu_asked() {
            if self.opts.headers {
                out += &format!(
                    "Socket  Message  Elapsed      Messages                \n\
                     Size    Size     Time         Okay Errors   Throughput\n\
                     bytes   bytes    secs            #      #   {unit}/sec\n\n"
                );
            }
            out += &format!(
                "{lss:>6}  {msg:>6}   {elapsed:<7.2}   {okay:>7} {:>6}    {tx:>7.2}\n\
                 {rsr:>6}           {elapsed:<7.2}   {got:>7}           {rx:>7.2}\n\n",
                0
            );
            return out;
        }
        let (l, r) = self.stream_cpu(result);
        if self.opts.headers {
            out += &format!(
                "Socket  Message  Elapsed      Messages                   CPU      Service\n\
                 Size    Size     Time         Okay Errors   Throughput   Util     Demand\n\
                 bytes   bytes    secs            #      #   {unit}/sec % {}{}     us/KB\n\n",
                l.method, r.method
            );
        }
        out += &format!(
            "{lss:>6}  {msg:>6}   {elapsed:<7.2}   {okay:>7} {:>6}    {tx:>7.1}     {:<6.2}   {:<6.3}\n\
             {rsr:>6}           {elapsed:<7.2}   {got:>7}           {rx:>7.1}     {:<6.2}   {:<6.3}\n\n",
            0, l.util, l.demand, r.util, r.demand
        );
        out
    }
}

/// The figure netperf leads with, as `-v 0` prints it alone and the `THROUGHPUT` selector
/// names it: a stream test's throughput in `units` (the receiver's bytes over the elapsed
/// time), or a request/response test's transactions per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The figure.
    pub value: f64,
    /// Its unit as netperf names it (`10^6bits/s`, `Trans/s`).
    pub units: String,
    /// Seconds the test ran, as netperf's elapsed time.
    pub elapsed: f64,
}

/// The headline figure of a finished test.
pub fn headline(result: &TestResult, units: Units) -> Result<Headline, NetperfError> {
    let test = NetperfTest::of_spec(&result.spec)?;
    Ok(match test {
        NetperfTest::TcpRr | NetperfTest::UdpRr | NetperfTest::TcpCrr | NetperfTest::TcpCc => {
            let (rr, elapsed) = rr_of(result).map_or((0.0, 0.0), |(rr, secs)| {
                (rr.transactions_per_second(secs), secs)
            });
            Headline {
                value: rr,
                units: "Trans/s".into(),
                elapsed,
            }
        }
        NetperfTest::TcpStream | NetperfTest::TcpMaerts | NetperfTest::UdpStream => {
            let (bytes, elapsed) = stream_figures(result, test == NetperfTest::TcpMaerts);
            Headline {
                value: units.of_bits_per_second(bits_per_second(bytes, elapsed)),
                units: format!("{}/s", units.label()),
                elapsed,
            }
        }
    })
}

/// `-v 2`'s addition for a request/response test: its round-trip percentiles (empty for other
/// tests, or without round trips).
pub fn rr_detail(result: &TestResult) -> String {
    rr_of(result)
        .and_then(|(rr, _)| rr.rtt)
        .map(|t| {
            format!(
                "\nRound trip (usec): min {:.1}  mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}\n",
                t.min_us, t.mean_us, t.p50_us, t.p90_us, t.p99_us, t.max_us
            )
        })
        .unwrap_or_default()
}

/// A stream test's bytes (the receiver's count, or the sender's if the receiver reported
/// none) and netperf's elapsed time (the sending end's, the receiving end's for MAERTS).
fn stream_figures(result: &TestResult, maerts: bool) -> (u64, f64) {
    let (sent, received) = flow_totals(result, !maerts);
    let elapsed = if maerts {
        received.seconds
    } else {
        sent.seconds
    };
    let bytes = if received.bytes > 0 {
        received.bytes
    } else {
        sent.bytes
    };
    (bytes, elapsed)
}

fn sndbuf(s: &SideReport) -> Option<u32> {
    s.sndbuf_actual
}

fn rcvbuf(s: &SideReport) -> Option<u32> {
    s.rcvbuf_actual
}

/// Sender and receiver totals of the flow in one direction (zeros where an end did not report).
fn flow_totals(result: &TestResult, client_to_server: bool) -> (DirectionTotals, DirectionTotals) {
    result
        .flows()
        .into_iter()
        .find(|f| f.client_to_server == client_to_server)
        .map(|f| (f.sent.unwrap_or_default(), f.received.unwrap_or_default()))
        .unwrap_or_default()
}

/// The request/response figures and the seconds they cover, from the end that sent requests.
fn rr_of(result: &TestResult) -> Option<(RrFinal, f64)> {
    result.rr_final()
}

pub mod select;

#[cfg(test)]
mod tests;
