//! Turning a host name into addresses, for `perfpeer test <host>`, the personas' `-c host` and a
//! browser's run towards a named peer. A build linked dynamically asks the system
//! (getaddrinfo: NSS, mDNS, systemd-resolved all keep working on a PC). A static build (the
//! DUT builds of scripts/build-dut.sh, `+crt-static`, musl) does not use the C library's
//! resolver (a static glibc's cannot load NSS modules; a router has none), so it resolves by
//! itself, as musl does: `/etc/hosts` first, then the DNS
//! servers of `/etc/resolv.conf` over UDP (A, then AAAA), with resolv.conf's search domains,
//! timeout and attempts. Every lookup ends within [`LOOKUP_DEADLINE`].
//!
//! Why not a resolver crate: hickory-resolver does all this and much more (DNSSEC, DoT, caches),
//! at a size a 4 MB router build cannot carry; the subset needed here is two small codecs
//! (`dns`, `conf`) tested with bytes.

// The builtin resolver (conf, dns, lookup_with and what it asks) runs only in a static build;
// a dynamic one compiles it for its tests, which feed it bytes.
#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
pub(crate) mod conf;
#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
pub(crate) mod dns;

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::net::UdpSocket;

use conf::ResolvConf;
use dns::{DnsError, RecordType, Reply};

/// A lookup gives up after this long, whatever resolv.conf says.
pub(crate) const LOOKUP_DEADLINE: Duration = Duration::from_secs(15);
/// The files read, each at most this many bytes.
const MAX_FILE: u64 = 1 << 20;

/// Address family restriction (`-4`, `-6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

/// Why a name has no address.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    /// Not a host name at all.
    #[error(transparent)]
    BadName(#[from] DnsError),
    /// Neither the hosts file nor DNS knows it (of the wanted family).
    #[error("no address found for '{0}'")]
    NotFound(String),
    /// No DNS server gave an answer.
    #[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
    #[error("no DNS server answered ({0})")]
    NoServer(String),
    /// The lookup took longer than [`LOOKUP_DEADLINE`].
    #[error("name lookup took longer than {} s", LOOKUP_DEADLINE.as_secs())]
    TimedOut,
    /// The system's resolver failed (a dynamic build's; a static one has none).
    #[cfg_attr(target_feature = "crt-static", allow(dead_code))]
    #[error("{0}")]
    System(io::Error),
}

/// The addresses of `host` (a name or a literal address) of the wanted family, best first.
pub(crate) async fn lookup(
    host: &str,
    family: Option<Family>,
) -> Result<Vec<IpAddr>, ResolveError> {
    // A literal address is its own answer, of its family only (`-4 ::1` has none).
    if let Ok(ip) = host.parse::<IpAddr>() {
        return only_wanted(vec![ip], host, family);
    }
    // Compiled out of a static build, so glibc's getaddrinfo (and the NSS loader it brings) is
    // not linked into it.
    #[cfg(target_feature = "crt-static")]
    let work = async {
        let hosts = read_small("/etc/hosts").unwrap_or_default();
        let conf = read_small("/etc/resolv.conf")
            .map(|t| ResolvConf::parse(&t))
            .unwrap_or_default();
        lookup_with(host, family, &hosts, &conf).await
    };
    #[cfg(not(target_feature = "crt-static"))]
    let work = async {
        let addrs = tokio::net::lookup_host((host, 0))
            .await
            .map_err(ResolveError::System)?;
        Ok::<_, ResolveError>(addrs.map(|a| a.ip()).collect())
    };
    let addrs: Vec<IpAddr> = tokio::time::timeout(LOOKUP_DEADLINE, work)
        .await
        .map_err(|_| ResolveError::TimedOut)??;
    only_wanted(addrs, host, family)
}

/// `addrs` of the wanted family, or `NotFound` when none is.
fn only_wanted(
    addrs: Vec<IpAddr>,
    host: &str,
    family: Option<Family>,
) -> Result<Vec<IpAddr>, ResolveError> {
    let addrs: Vec<IpAddr> = addrs.into_iter().filter(|a| wanted(*a, family)).collect();
    if addrs.is_empty() {
        return Err(ResolveError::NotFound(host.to_string()));
    }
    Ok(addrs)
}

fn wanted(addr: IpAddr, family: Option<Family>) -> bool {
    match family {
        Some(Family::V4) => addr.is_ipv4(),
        Some(Family::V6) => addr.is_ipv6(),
        None => true,
    }
}

#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
fn read_small(path: &str) -> io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_FILE)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The builtin lookup with the hosts file's text and a resolv.conf given: the hosts file, then
/// `localhost` (RFC 6761), then DNS for each search candidate until one has addresses.
#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
pub(crate) async fn lookup_with(
    host: &str,
    family: Option<Family>,
    hosts: &str,
    conf: &ResolvConf,
) -> Result<Vec<IpAddr>, ResolveError> {
    let name = dns::check_name(host)?;
    let listed: Vec<IpAddr> = conf::hosts_lookup(hosts, name)
        .into_iter()
        .filter(|a| wanted(*a, family))
        .collect();
    if !listed.is_empty() {
        return Ok(listed);
    }
    if name.eq_ignore_ascii_case("localhost") {
        let loopback = [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ];
        return Ok(loopback
            .into_iter()
            .filter(|a| wanted(*a, family))
            .collect());
    }
    let types: &[RecordType] = match family {
        Some(Family::V4) => &[RecordType::A],
        Some(Family::V6) => &[RecordType::Aaaa],
        None => &[RecordType::A, RecordType::Aaaa],
    };
    for candidate in conf.candidates(name) {
        // A name too long once a search domain is added is skipped, not an error.
        if dns::check_name(&candidate).is_err() {
            continue;
        }
        let mut found = Vec::new();
        for &rtype in types {
            if let Reply::Addresses(addrs) = ask(conf, &candidate, rtype).await? {
                found.extend(addrs);
            }
        }
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Err(ResolveError::NotFound(host.to_string()))
}

/// Asks the servers in turn, `attempts` rounds, for `name`'s `rtype` records; the first usable
/// reply wins. A server that refuses the datagram (nothing listens) is not asked again.
#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
async fn ask(conf: &ResolvConf, name: &str, rtype: RecordType) -> Result<Reply, ResolveError> {
    let mut down = vec![false; conf.servers.len()];
    let mut last = String::from("none configured");
    for _ in 0..conf.attempts {
        for (i, &server) in conf.servers.iter().enumerate() {
            if down[i] {
                continue;
            }
            match ask_one(server, name, rtype, conf.timeout).await {
                Ok(reply) => return Ok(reply),
                Err(e) => {
                    if e.kind() == io::ErrorKind::ConnectionRefused {
                        down[i] = true;
                    }
                    last = format!("{server}: {e}");
                }
            }
        }
        if down.iter().all(|d| *d) {
            break;
        }
    }
    Err(ResolveError::NoServer(last))
}

/// One question to one server, waiting up to `timeout` for its answer (other datagrams on the
/// socket are ignored; the socket is connected, so only the server's reach it).
#[cfg_attr(not(target_feature = "crt-static"), allow(dead_code))]
async fn ask_one(
    server: SocketAddr,
    name: &str,
    rtype: RecordType,
    timeout: Duration,
) -> io::Result<Reply> {
    let mut id = [0u8; 2];
    getrandom::fill(&mut id).map_err(|e| io::Error::other(e.to_string()))?;
    let id = u16::from_be_bytes(id);
    let query = dns::query(id, name, rtype).map_err(io::Error::other)?;
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local).await?;
    sock.connect(server).await?;
    sock.send(&query).await?;
    let mut buf = [0u8; 1500];
    let wait = async {
        loop {
            let n = sock.recv(&mut buf).await?;
            match dns::parse_reply(&buf[..n], id, name, rtype) {
                Ok(reply) => return Ok(reply),
                Err(DnsError::NotOurs) => continue,
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    };
    tokio::time::timeout(timeout, wait)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no reply"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DNS server on loopback answering `pc.lan` A 10.0.0.2 (and NXDOMAIN for anything else)
    /// after first sending a stray datagram with a wrong id; counts the questions it got.
    async fn server() -> (SocketAddr, tokio::task::JoinHandle<u32>) {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let task = crate::util::spawn(async move {
            let mut questions = 0;
            let mut buf = [0u8; 512];
            while let Ok(Ok((n, from))) =
                tokio::time::timeout(Duration::from_millis(500), sock.recv_from(&mut buf)).await
            {
                questions += 1;
                let q = &buf[..n];
                let mut stray = q.to_vec();
                stray[0] ^= 0xFF;
                stray[2] |= 0x80;
                sock.send_to(&stray, from).await.unwrap();
                let mut r = q.to_vec();
                r[2] = 0x81;
                let is_pc_a = q[12..].starts_with(&[2, b'p', b'c', 3, b'l', b'a', b'n', 0, 0, 1]);
                if is_pc_a {
                    r[3] = 0x80;
                    r[7] = 1;
                    r.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 9, 0, 4, 10, 0, 0, 2]);
                } else {
                    r[3] = 0x83;
                }
                sock.send_to(&r, from).await.unwrap();
            }
            questions
        });
        (addr, task)
    }

    fn conf_for(server: SocketAddr, search: &str) -> ResolvConf {
        ResolvConf {
            servers: vec![server],
            search: vec![search.to_string()],
            timeout: Duration::from_secs(2),
            ..ResolvConf::default()
        }
    }

    #[tokio::test]
    async fn dns_answer_through_a_search_domain() {
        let (addr, task) = server().await;
        let got = lookup_with("pc", None, "", &conf_for(addr, "lan"))
            .await
            .unwrap();
        assert_eq!(got, vec!["10.0.0.2".parse::<IpAddr>().unwrap()]);
        let missing = lookup_with("nas", Some(Family::V4), "", &conf_for(addr, "lan")).await;
        assert!(
            matches!(missing, Err(ResolveError::NotFound(_))),
            "{missing:?}"
        );
        // pc.lan: A and AAAA; nas.lan and nas: A each.
        assert_eq!(task.await.unwrap(), 4);
    }

    #[tokio::test]
    async fn hosts_file_first_and_localhost_without_one() {
        let conf = conf_for("127.0.0.1:9".parse().unwrap(), "lan");
        let hosts = "10.9.9.9 pc\n";
        assert_eq!(
            lookup_with("PC", None, hosts, &conf).await.unwrap(),
            vec!["10.9.9.9".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            lookup_with("localhost", Some(Family::V6), "", &conf)
                .await
                .unwrap(),
            vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]
        );
        assert!(matches!(
            lookup_with("a b", None, hosts, &conf).await,
            Err(ResolveError::BadName(_))
        ));
    }

    #[tokio::test]
    async fn a_literal_address_answers_only_for_its_family() {
        assert_eq!(
            lookup("::1", None).await.unwrap(),
            vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]
        );
        assert!(matches!(
            lookup("::1", Some(Family::V4)).await,
            Err(ResolveError::NotFound(_))
        ));
        assert!(lookup("127.0.0.1", Some(Family::V4)).await.is_ok());
        assert!(lookup("127.0.0.1", Some(Family::V6)).await.is_err());
    }

    #[tokio::test]
    async fn no_server_is_a_quick_clear_error() {
        // Nothing listens on this port: the refusal ends the lookup at once, not after the
        // timeouts.
        let unused = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = unused.local_addr().unwrap();
        drop(unused);
        let started = std::time::Instant::now();
        let err = lookup_with("pc", None, "", &conf_for(addr, "lan"))
            .await
            .unwrap_err();
        assert!(matches!(err, ResolveError::NoServer(_)), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(err.to_string().contains("no DNS server answered"), "{err}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out_per_resolv_conf() {
        let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let mut conf = conf_for(silent.local_addr().unwrap(), "lan");
        conf.timeout = Duration::from_millis(200);
        conf.attempts = 2;
        let started = std::time::Instant::now();
        let err = lookup_with("pc.lan.", Some(Family::V4), "", &conf)
            .await
            .unwrap_err();
        assert!(matches!(err, ResolveError::NoServer(_)), "{err:?}");
        assert!(started.elapsed() >= Duration::from_millis(400));
    }
}
