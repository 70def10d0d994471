//! The two files a resolver reads, parsed from their text (sans-I/O): `/etc/hosts` (address,
//! then names) and `/etc/resolv.conf` (`nameserver`, `search`/`domain`, `options timeout:
//! attempts: ndots:`), with the defaults and caps glibc and musl use.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Name servers used at most (resolv.conf's MAXNS).
pub(crate) const MAX_SERVERS: usize = 3;
/// Search domains used at most.
pub(crate) const MAX_SEARCH: usize = 6;

/// What `/etc/resolv.conf` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvConf {
    /// Servers to ask, in order (port 53; tests put another).
    pub servers: Vec<SocketAddr>,
    /// Domains tried after (or before, see `ndots`) a name as written.
    pub search: Vec<String>,
    /// How long to wait for one server's reply (`timeout:`, default 5 s, at most 30 s).
    pub timeout: Duration,
    /// Rounds over the servers (`attempts:`, default 2, at most 5).
    pub attempts: u32,
    /// A name with at least this many dots is tried as written first (`ndots:`, default 1).
    pub ndots: usize,
}

impl Default for ResolvConf {
    /// No file: ask a server on this host, as glibc and musl do.
    fn default() -> Self {
        ResolvConf {
            servers: vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53)],
            search: Vec::new(),
            timeout: Duration::from_secs(5),
            attempts: 2,
            ndots: 1,
        }
    }
}

impl ResolvConf {
    /// Parses the text of a resolv.conf; lines it does not know are skipped, as libcs do.
    pub(crate) fn parse(text: &str) -> ResolvConf {
        let mut conf = ResolvConf {
            servers: Vec::new(),
            ..ResolvConf::default()
        };
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    // A scoped IPv6 address (fe80::1%eth0) is skipped: std cannot parse the scope.
                    if let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok())
                        && conf.servers.len() < MAX_SERVERS
                    {
                        conf.servers.push(SocketAddr::new(ip, 53));
                    }
                }
                Some("search" | "domain") => {
                    conf.search = words
                        .filter(|d| *d != ".")
                        .map(|d| d.trim_end_matches('.').to_ascii_lowercase())
                        .take(MAX_SEARCH)
                        .collect();
                }
                Some("options") => {
                    for opt in words {
                        let Some((key, value)) = opt.split_once(':') else {
                            continue;
                        };
                        let Ok(n) = value.parse::<u32>() else {
                            continue;
                        };
                        match key {
                            "timeout" => conf.timeout = Duration::from_secs(n.clamp(1, 30).into()),
                            "attempts" => conf.attempts = n.clamp(1, 5),
                            "ndots" => conf.ndots = usize::try_from(n.min(15)).unwrap_or(1),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if conf.servers.is_empty() {
            conf.servers = ResolvConf::default().servers;
        }
        conf
    }

    /// The names to ask for, in order, for `name` as the user wrote it.
    pub(crate) fn candidates(&self, name: &str) -> Vec<String> {
        if let Some(absolute) = name.strip_suffix('.') {
            return vec![absolute.to_string()];
        }
        let searched = self.search.iter().map(|d| format!("{name}.{d}"));
        if name.matches('.').count() >= self.ndots {
            std::iter::once(name.to_string()).chain(searched).collect()
        } else {
            searched.chain(std::iter::once(name.to_string())).collect()
        }
    }
}

/// The addresses `/etc/hosts` (its text) gives `name`, in file order.
pub(crate) fn hosts_lookup(text: &str, name: &str) -> Vec<IpAddr> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(addr) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        if words.any(|alias| alias.eq_ignore_ascii_case(name)) && !found.contains(&addr) {
            found.push(addr);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_fields_defaults_and_caps() {
        let conf = ResolvConf::parse(
            "# written by netifd\nsearch lan home.arpa\nnameserver 192.168.1.1\n\
             nameserver ::1 # v6\nnameserver fe80::1%br-lan\nnameserver bogus\n\
             nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions ndots:2 timeout:99 attempts:0 rotate\n",
        );
        assert_eq!(
            conf.servers,
            vec![
                "192.168.1.1:53".parse().unwrap(),
                "[::1]:53".parse().unwrap(),
                "10.0.0.1:53".parse().unwrap()
            ]
        );
        assert_eq!(conf.search, vec!["lan", "home.arpa"]);
        assert_eq!(conf.ndots, 2);
        assert_eq!(conf.timeout, Duration::from_secs(30));
        assert_eq!(conf.attempts, 1);
        assert_eq!(ResolvConf::parse(""), ResolvConf::default());
        assert_eq!(ResolvConf::parse("domain Lan.\n").search, vec!["lan"]);
    }

    #[test]
    fn search_order_follows_ndots() {
        let conf = ResolvConf::parse("search lan\n");
        assert_eq!(conf.candidates("pc"), vec!["pc.lan", "pc"]);
        assert_eq!(conf.candidates("pc.lan"), vec!["pc.lan", "pc.lan.lan"]);
        assert_eq!(conf.candidates("pc.lan."), vec!["pc.lan"]);
        assert_eq!(ResolvConf::default().candidates("pc"), vec!["pc"]);
    }

    #[test]
    fn hosts_file_matches_any_alias_case_blind() {
        let hosts = "127.0.0.1 localhost\n10.0.0.2 pc.lan pc # the PC\n\
                     fd00::2 pc\n# 10.9.9.9 pc\nnot-an-ip pc\n10.0.0.2 PC\n";
        assert_eq!(
            hosts_lookup(hosts, "Pc"),
            vec![
                "10.0.0.2".parse::<IpAddr>().unwrap(),
                "fd00::2".parse().unwrap()
            ]
        );
        assert_eq!(
            hosts_lookup(hosts, "pc.lan."),
            vec!["10.0.0.2".parse::<IpAddr>().unwrap()]
        );
        assert!(hosts_lookup(hosts, "router").is_empty());
    }
}
