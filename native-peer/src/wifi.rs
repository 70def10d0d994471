//! The Wi-Fi link beside a test, read on the peer that has the radio: nl80211 over generic
//! netlink (the codec is `perfpeer_proto::nl80211`; the socket `sys::generic_netlink_socket`).
//! [`LinkWatch`] follows the station that carries a test — on a client interface its access
//! point, on an access point the client that is the far end's (or its next hop's) neighbour
//! entry, ARP's or, for IPv6, NDP's read over rtnetlink (`perfpeer_proto::rtnetlink`) — and turns two readings into one interval's `LinkSample`; [`interfaces`] lists the
//! host's radios for `perfpeer wifi`, `/api/info` and the Peer screen. Where there is no
//! radio on the path (or no nl80211: another system, a kernel without cfg80211) nothing is
//! read and nothing is said.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use perfpeer_proto::netlink::{self, Attrs, NetlinkError, Reply};
use perfpeer_proto::nl80211::{
    self, InterfaceReading, StationReading, SurveyReading, interface_of, station_of, survey_of,
};
use perfpeer_proto::rtnetlink;
use perfpeer_shared::wifi::{
    ChannelSample, LinkSample, Mode, StationLine, WifiInterface, channel_of, mac_words,
};

/// Whether this build can read a radio at all: only Linux has nl80211 (elsewhere the link is
/// "not measured", said once: `/api/info`, `perfpeer test --wifi-iface`, `perfpeer wifi`).
pub(crate) const MEASURED: bool = cfg!(target_os = "linux");

/// A netlink answer that takes longer than this is given up on (the interval goes without).
const ANSWER_LIMIT: Duration = Duration::from_millis(300);
/// Entries of one dump at most (an access point's stations, a survey's channels).
const MAX_ENTRIES: usize = 1024;

/// What a person chose for this process's radios: `--no-wifi`, `--wifi-iface`,
/// `--wifi-station`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WifiChoice {
    /// Read nothing.
    pub off: bool,
    /// The interface to read, whatever carries the test.
    pub iface: Option<String>,
    /// The station to follow on it.
    pub station: Option<[u8; 6]>,
}

static CHOICE: OnceLock<WifiChoice> = OnceLock::new();

/// Sets this process's choice (once, before the first test; later calls change nothing).
pub(crate) fn choose(choice: WifiChoice) {
    let _ = CHOICE.set(choice);
}

fn choice() -> &'static WifiChoice {
    CHOICE.get_or_init(WifiChoice::default)
}

/// A MAC address from `aa:bb:cc:dd:ee:ff` (for `--wifi-station`).
pub(crate) fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

fn bad_answer(e: NetlinkError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Sends `request` (sequence `seq`) on a netlink socket and hands each answer of that
/// sequence to `each` until the dump ends, the kernel acknowledges or refuses, or
/// [`ANSWER_LIMIT`] passes; more than [`MAX_ENTRIES`] answers is an error. (`each` is a trait
/// object: one copy of this loop for every kind of answer, in a router build.)
fn exchange(
    sock: &socket2::Socket,
    buf: &mut [u8],
    seq: u32,
    request: &[u8],
    each: &mut dyn FnMut(Reply<'_>) -> Result<(), NetlinkError>,
) -> io::Result<()> {
    let mut sock = sock;
    sock.write_all(request)?;
    let deadline = Instant::now() + ANSWER_LIMIT;
    let mut entries = 0usize;
    loop {
        if Instant::now() > deadline {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let n = sock.read(buf)?;
        let mut single = false;
        for reply in netlink::replies(&buf[..n]) {
            match reply.map_err(bad_answer)? {
                reply @ Reply::Genl { seq: s, flags, .. } if s == seq => {
                    entries += 1;
                    if entries > MAX_ENTRIES {
                        return Err(io::Error::other("too many netlink entries"));
                    }
                    each(reply).map_err(bad_answer)?;
                    single = flags & netlink::NLM_F_MULTI == 0;
                }
                Reply::Done { seq: s } if s == seq => return Ok(()),
                Reply::Error { seq: s, errno } if s == seq => {
                    return if errno == 0 {
                        Ok(())
                    } else {
                        Err(io::Error::from_raw_os_error(errno))
                    };
                }
                _ => {}
            }
        }
        if single {
            return Ok(());
        }
    }
}

/// A connection to nl80211.
struct Nl80211 {
    sock: socket2::Socket,
    family: u16,
    seq: u32,
    buf: Vec<u8>,
}

impl Nl80211 {
    /// Opens a socket and resolves the family (fails where the kernel has no cfg80211).
    fn open() -> io::Result<Nl80211> {
        let sock = crate::sys::generic_netlink_socket(ANSWER_LIMIT)?;
        let mut nl = Nl80211 {
            sock,
            family: 0,
            seq: 1,
            buf: vec![0; 32 * 1024],
        };
        let mut family = None;
        let request = netlink::get_family(nl80211::FAMILY, 1);
        exchange(&nl.sock, &mut nl.buf, 1, &request, &mut |reply| {
            if let Reply::Genl { attrs, .. } = reply {
                family = family.or(netlink::family_id(attrs));
            }
            Ok(())
        })?;
        nl.family = family.ok_or_else(|| io::Error::other("no nl80211 family id"))?;
        Ok(nl)
    }

    /// Sends a request built for the next sequence number and collects what `decode` makes
    /// of each answer.
    fn dump<T>(
        &mut self,
        request: impl FnOnce(u16, u32) -> Vec<u8>,
        decode: fn(u8, Attrs<'_>) -> Result<Option<T>, NetlinkError>,
    ) -> io::Result<Vec<T>> {
        self.seq = self.seq.wrapping_add(1).max(2);
        let bytes = request(self.family, self.seq);
        let mut out = Vec::new();
        exchange(&self.sock, &mut self.buf, self.seq, &bytes, &mut |reply| {
            if let Reply::Genl { cmd, attrs, .. } = reply {
                out.extend(decode(cmd, attrs)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn interfaces(&mut self) -> io::Result<Vec<InterfaceReading>> {
        self.dump(nl80211::interfaces_request, interface_of)
    }

    fn stations(&mut self, ifindex: u32) -> io::Result<Vec<StationReading>> {
        self.dump(|f, s| nl80211::stations_request(f, s, ifindex), station_of)
    }

    fn survey(&mut self, ifindex: u32) -> io::Result<Vec<SurveyReading>> {
        self.dump(|f, s| nl80211::survey_request(f, s, ifindex), survey_of)
    }
}

/// This host's wireless interfaces with their stations; empty where there are none, an error
/// where the system has no nl80211 (not Linux, or no cfg80211).
pub(crate) fn interfaces() -> io::Result<Vec<WifiInterface>> {
    let mut nl = Nl80211::open()?;
    let mut out = Vec::new();
    for i in nl.interfaces()? {
        let stations = nl.stations(i.ifindex).unwrap_or_default();
        out.push(WifiInterface {
            mode: i.mode(),
            mac: mac_words(&i.mac),
            channel: i.freq_mhz.and_then(channel_of),
            freq_mhz: i.freq_mhz,
            width_mhz: i.width_mhz,
            ssid: i.ssid,
            iface: i.name,
            stations: stations
                .into_iter()
                .map(|s| StationLine {
                    mac: Some(mac_words(&s.mac)),
                    signal_dbm: s.signal_dbm,
                    tx_rate: s.tx_rate,
                    rx_rate: s.rx_rate,
                    connected_s: s.connected_s,
                })
                .collect(),
        });
    }
    Ok(out)
}

/// [`interfaces`] as anyone may see them (`/api/info`): without station addresses, read at
/// most once a second whoever asks, empty where there is no nl80211.
pub(crate) fn interfaces_for_anyone() -> Vec<WifiInterface> {
    static LAST: std::sync::Mutex<Option<(Instant, Vec<WifiInterface>)>> =
        std::sync::Mutex::new(None);
    let mut last = crate::util::lock(&LAST);
    if let Some((at, list)) = last.as_ref()
        && at.elapsed() < Duration::from_secs(1)
    {
        return list.clone();
    }
    let mut list = if choice().off {
        Vec::new()
    } else {
        interfaces().unwrap_or_default()
    };
    for station in list.iter_mut().flat_map(|i| i.stations.iter_mut()) {
        station.mac = None;
    }
    *last = Some((Instant::now(), list.clone()));
    list
}

/// The interface holding local address `ip`.
fn iface_of(ip: IpAddr) -> Option<String> {
    if_addrs::get_if_addrs()
        .ok()?
        .into_iter()
        .find(|i| i.ip() == ip)
        .map(|i| i.name)
}

/// The neighbour entry of `ip` on `iface` (index `ifindex`), or of `iface`'s default gateway
/// when `ip` has none (a far end beyond a router): the station the test's frames go to. IPv4
/// entries are ARP's (/proc/net/arp), IPv6 ones NDP's (rtnetlink; a link-local far end too,
/// the interface being known).
fn neighbour_mac(ip: IpAddr, iface: &str, ifindex: u32) -> Option<[u8; 6]> {
    let v4 = match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(v6) => {
            let table = ipv6_neighbours(ifindex).ok()?;
            let entry = |want: Ipv6Addr| {
                let want = want.octets();
                table.iter().find(|n| n.ip == want).map(|n| n.mac)
            };
            return entry(v6).or_else(|| {
                // The calling thread's namespace, the one the netlink socket read.
                let routes = std::fs::read_to_string("/proc/thread-self/net/ipv6_route").ok()?;
                default_gateways_v6(&routes, iface).find_map(entry)
            });
        }
    };
    let arp = std::fs::read_to_string("/proc/net/arp").ok()?;
    let entry = |want: Ipv4Addr| {
        arp.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[5] == iface && f[0].parse() == Ok(want))
                .then(|| parse_mac(f[3]))
                .flatten()
        })
    };
    entry(v4).or_else(|| default_gateway(iface).and_then(entry))
}

/// The IPv6 neighbours on interface `ifindex` that have a MAC (an rtnetlink dump, bounded
/// like nl80211's: [`ANSWER_LIMIT`], [`MAX_ENTRIES`]).
fn ipv6_neighbours(ifindex: u32) -> io::Result<Vec<rtnetlink::Neighbour>> {
    let sock = crate::sys::route_netlink_socket(ANSWER_LIMIT)?;
    let mut buf = vec![0; 32 * 1024];
    let mut out = Vec::new();
    let request = rtnetlink::neighbours_request(1);
    exchange(&sock, &mut buf, 1, &request, &mut |reply| {
        if let Reply::Genl { kind, body, .. } = reply {
            out.extend(rtnetlink::neighbour_of(kind, body)?.filter(|n| n.ifindex == ifindex));
        }
        Ok(())
    })?;
    Ok(out)
}

/// The next hops of `iface`'s IPv6 default routes in /proc/net/ipv6_route's text `routes`
/// (each line: destination, its prefix length, source, its prefix length, next hop, metric,
/// references, use, flags, interface; addresses as 32 hex digits).
fn default_gateways_v6<'a>(routes: &'a str, iface: &'a str) -> impl Iterator<Item = Ipv6Addr> + 'a {
    routes.lines().filter_map(move |l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let zero = |t: &str| t.bytes().all(|c| c == b'0');
        (f.len() >= 10 && f[9] == iface && f[1] == "00" && zero(f[0]) && !zero(f[4]))
            .then(|| u128::from_str_radix(f[4], 16).ok())
            .flatten()
            .map(Ipv6Addr::from)
    })
}

/// `iface`'s default gateway from /proc/net/route (addresses in the kernel's byte order).
fn default_gateway(iface: &str) -> Option<Ipv4Addr> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    routes.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[0] == iface && f[1] == "00000000")
            .then(|| u32::from_str_radix(f[2], 16).ok())
            .flatten()
            .map(|g| Ipv4Addr::from(g.to_ne_bytes()))
    })
}

/// A change of a 32-bit counter that may have wrapped once; a counter that went back by more
/// than half its range was reset (the station associated again): not given.
fn change32(now: Option<u32>, before: Option<u32>) -> Option<u64> {
    let d = now?.wrapping_sub(before?);
    (d < 1 << 31).then_some(u64::from(d))
}

fn change64(now: Option<u64>, before: Option<u64>) -> Option<u64> {
    now?.checked_sub(before?)
}

/// A share of `of` in %, when `of` moved.
fn share(part: Option<u64>, of: Option<u64>) -> Option<f64> {
    match (part, of) {
        (Some(p), Some(o)) if o > 0 => Some(p as f64 * 100.0 / o as f64),
        _ => None,
    }
}

/// The station and the channel now and at the reading before (the station's only if it is
/// the same station).
struct Readings {
    now: StationReading,
    before: Option<StationReading>,
    survey: Option<SurveyReading>,
    survey_before: Option<SurveyReading>,
}

/// Follows the station that carries one test, a reading each interval.
pub(crate) struct LinkWatch {
    nl: Nl80211,
    iface: InterfaceReading,
    far: IpAddr,
    /// The station followed (chosen at the start; again if it goes away).
    station: Option<[u8; 6]>,
    last_station: Option<StationReading>,
    last_survey: Option<SurveyReading>,
}

impl LinkWatch {
    /// A watch for a test whose data socket runs from `local` to `far`, or `None` when no
    /// wireless interface carries it (or nl80211 is missing, or `--no-wifi`).
    pub(crate) fn start(local: &str, far: &str) -> Option<LinkWatch> {
        let choice = choice();
        if choice.off {
            return None;
        }
        let parse = |a: &str| a.parse::<SocketAddr>().ok().map(|s| s.ip().to_canonical());
        let (local, far) = (parse(local)?, parse(far)?);
        let name = match &choice.iface {
            Some(name) => name.clone(),
            None if local.is_loopback() => return None,
            None => iface_of(local)?,
        };
        let mut nl = Nl80211::open().ok()?;
        let iface = nl.interfaces().ok()?.into_iter().find(|i| i.name == name)?;
        let mut watch = LinkWatch {
            nl,
            iface,
            far,
            station: None,
            last_station: None,
            last_survey: None,
        };
        // The baseline the first interval's changes are counted from.
        watch.read();
        Some(watch)
    }

    /// The station to follow among `stations`.
    fn pick(&mut self, stations: &[StationReading]) -> Option<StationReading> {
        let find = |mac: [u8; 6]| stations.iter().find(|s| s.mac == mac).cloned();
        if let Some(mac) = choice().station {
            return find(mac);
        }
        if let Some(found) = self.station.and_then(find) {
            return Some(found);
        }
        let chosen = match (self.iface.mode(), stations) {
            (_, [only]) => Some(only.clone()),
            (Mode::Station, [first, ..]) => Some(first.clone()),
            _ => neighbour_mac(self.far, &self.iface.name, self.iface.ifindex).and_then(find),
        };
        self.station = chosen.as_ref().map(|s| s.mac);
        chosen
    }

    /// Reads the station and the channel now, with the readings before.
    fn read(&mut self) -> Option<Readings> {
        let stations = self.nl.stations(self.iface.ifindex).ok()?;
        let now = self.pick(&stations)?;
        let survey = self
            .nl
            .survey(self.iface.ifindex)
            .unwrap_or_default()
            .into_iter()
            .find(|s| s.in_use || Some(s.freq_mhz) == self.iface.freq_mhz);
        let before = self
            .last_station
            .replace(now.clone())
            .filter(|b| b.mac == now.mac);
        let survey_before = std::mem::replace(&mut self.last_survey, survey);
        Some(Readings {
            now,
            before,
            survey,
            survey_before,
        })
    }

    /// The interval that ends now, `None` when the station cannot be read.
    pub(crate) fn sample(&mut self) -> Option<LinkSample> {
        let Readings {
            now,
            before,
            survey,
            survey_before,
        } = self.read()?;
        let b = before.unwrap_or_default();
        let tx_packets = change32(now.tx_packets, b.tx_packets);
        let tx_retries = change32(now.tx_retries, b.tx_retries);
        Some(LinkSample {
            iface: self.iface.name.clone(),
            mode: self.iface.mode(),
            station: mac_words(&now.mac),
            signal_dbm: now.signal_dbm,
            signal_avg_dbm: now.signal_avg_dbm,
            chain_signal_dbm: now.chain_signal_dbm,
            tx_rate: now.tx_rate,
            rx_rate: now.rx_rate,
            tx_packets,
            tx_retries,
            tx_failed: change32(now.tx_failed, b.tx_failed),
            retries_percent: LinkSample::retries_share(tx_retries, tx_packets),
            beacon_loss: change32(now.beacon_loss, b.beacon_loss),
            expected_mbps: now.expected_kbps.map(|k| f64::from(k) / 1000.0),
            tx_airtime_us: change64(now.tx_duration_us, b.tx_duration_us),
            rx_airtime_us: change64(now.rx_duration_us, b.rx_duration_us),
            connected_s: now.connected_s,
            channel: survey.map(|s| channel_sample(&s, survey_before.as_ref())),
        })
    }
}

/// One interval of the channel: busy, tx and rx time as shares of the time the radio was on
/// it (a survey that did not move gives no shares).
fn channel_sample(now: &SurveyReading, before: Option<&SurveyReading>) -> ChannelSample {
    let before = before.filter(|b| b.freq_mhz == now.freq_mhz);
    let moved = |f: fn(&SurveyReading) -> Option<u64>| change64(f(now), before.and_then(f));
    let active = moved(|s| s.active_ms);
    ChannelSample {
        freq_mhz: now.freq_mhz,
        noise_dbm: now.noise_dbm,
        busy_percent: share(moved(|s| s.busy_ms), active),
        tx_percent: share(moved(|s| s.tx_ms), active),
        rx_percent: share(moved(|s| s.rx_ms), active),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_only_in_their_one_shape() {
        assert_eq!(parse_mac("02:00:00:00:01:0a"), Some([2, 0, 0, 0, 1, 10]));
        for bad in [
            "02:00:00:00:01",
            "02:00:00:00:01:00:00",
            "2:0:0:0:1:0",
            "zz:00:00:00:01:00",
            "",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn counters_wrap_once_and_a_reset_is_not_given() {
        assert_eq!(change32(Some(5), Some(u32::MAX - 4)), Some(10));
        assert_eq!(change32(Some(100), Some(40)), Some(60));
        assert_eq!(change32(Some(3), Some(4_000_000)), None, "reset");
        assert_eq!(change32(Some(3), None), None);
        assert_eq!(change64(Some(3), Some(4)), None);
    }

    #[test]
    fn a_frozen_survey_gives_no_shares_and_a_moving_one_does() {
        let before = SurveyReading {
            freq_mhz: 2437,
            noise_dbm: Some(-92),
            in_use: true,
            active_ms: Some(1000),
            busy_ms: Some(100),
            rx_ms: None,
            tx_ms: Some(50),
        };
        let frozen = channel_sample(&before, Some(&before));
        assert_eq!((frozen.busy_percent, frozen.noise_dbm), (None, Some(-92)));
        let now = SurveyReading {
            active_ms: Some(2000),
            busy_ms: Some(350),
            tx_ms: Some(150),
            ..before
        };
        let c = channel_sample(&now, Some(&before));
        assert_eq!(
            (c.busy_percent, c.tx_percent, c.rx_percent),
            (Some(25.0), Some(10.0), None)
        );
    }

    #[test]
    fn ipv6_default_routes_give_their_next_hops_on_the_interface() {
        // /proc/net/ipv6_route of a network namespace with `default via fe80::36:ff:fe00:b
        // dev ppv36a` (loopback's unreachable default has no next hop).
        let routes = "\
fd360000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001   ppv36a
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000003600fffe00000b 00000400 00000001 00000000 00000003   ppv36a
fd36000000000000000000000000000a 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 80200001   ppv36a
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
";
        let hops: Vec<Ipv6Addr> = default_gateways_v6(routes, "ppv36a").collect();
        assert_eq!(hops, ["fe80::36:ff:fe00:b".parse::<Ipv6Addr>().unwrap()]);
        assert_eq!(default_gateways_v6(routes, "lo").count(), 0);
        assert_eq!(default_gateways_v6(routes, "wlan0").count(), 0);
        assert_eq!(default_gateways_v6("garbage\n00 00", "ppv36a").count(), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernels_ipv6_neighbour_table_is_read_in_one_bounded_exchange() {
        // Loopback has no neighbours with a MAC; the dump is still asked and read to its end.
        let started = Instant::now();
        assert_eq!(ipv6_neighbours(1).expect("an rtnetlink dump"), []);
        assert!(started.elapsed() < ANSWER_LIMIT * 2);
        // No entry, no gateway: nothing (and no panic) for a far end on loopback.
        assert_eq!(neighbour_mac("fe80::1".parse().unwrap(), "lo", 1), None);
    }

    /// A far end's NDP entry, a link-local one's, and the IPv6 default gateway's for a far end
    /// beyond it, read from the kernel in a network namespace of the test's own (root and `ip`
    /// needed: without them the test says so and passes).
    #[cfg(target_os = "linux")]
    #[test]
    fn ipv6_far_ends_find_their_neighbour_or_their_gateways_in_a_namespace() {
        std::thread::spawn(|| {
            if !crate::sys::enter_own_net_namespace() {
                eprintln!("skipped: no network namespace of its own (not root?)");
                return;
            }
            let ip = |args: &str| {
                std::process::Command::new("ip")
                    .args(args.split(' '))
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let laid_out = [
                "link add ppn0 type veth peer name ppn1",
                "link set ppn1 up",
                "link set ppn0 up",
                "-6 addr add fd36::a/64 dev ppn0 nodad",
                "-6 neigh add fd36::b lladdr 02:36:00:00:00:0b dev ppn0 nud permanent",
                "-6 neigh add fe80::c lladdr 02:36:00:00:00:0c dev ppn0 nud permanent",
                "-6 route add default via fe80::c dev ppn0",
            ]
            .iter()
            .all(|a| ip(a));
            if !laid_out {
                eprintln!("skipped: ip could not lay out the namespace");
                return;
            }
            let ifindex = crate::sys::interface_index(c"ppn0");
            assert_ne!(ifindex, 0);
            let mac = |far: &str| neighbour_mac(far.parse().unwrap(), "ppn0", ifindex);
            let (b, c) = ([2, 0x36, 0, 0, 0, 0x0b], [2, 0x36, 0, 0, 0, 0x0c]);
            assert_eq!(mac("fd36::b"), Some(b), "the far end's own entry");
            assert_eq!(mac("fe80::c"), Some(c), "a link-local far end");
            assert_eq!(mac("2001:db8::1"), Some(c), "beyond the default gateway");
            assert_eq!(
                neighbour_mac("fd36::b".parse().unwrap(), "ppn1", ifindex + 1),
                None
            );
        })
        .join()
        .expect("the namespace's checks");
    }

    #[test]
    fn a_host_without_a_radio_on_the_path_reads_nothing() {
        assert!(LinkWatch::start("127.0.0.1:5201", "127.0.0.1:40000").is_none());
        assert!(LinkWatch::start("not an address", "127.0.0.1:1").is_none());
    }
}
