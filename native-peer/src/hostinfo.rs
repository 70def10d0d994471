//! Facts about this host that reports and the peer's self-description carry: name, kernel,
//! perfpeer version, reachable addresses.

use std::net::IpAddr;

use perfpeer_shared::report::HostInfo;

/// perfpeer's version.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Name, `uname -srvm`-style system line and version.
pub(crate) fn host_info() -> HostInfo {
    HostInfo {
        hostname: hostname(),
        system: system_line(),
        version: VERSION.to_string(),
    }
}

/// The host name, or `"unknown"`.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| crate::sys::uname().map(|u| u.nodename))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// `Linux 6.1.0-18-amd64 #1 SMP … x86_64`.
pub(crate) fn system_line() -> String {
    let Some(u) = crate::sys::uname() else {
        return "unknown".into();
    };
    [u.sysname, u.release, u.version, u.machine]
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Non-loopback addresses of this host's interfaces, IPv4 first.
pub(crate) fn lan_addresses() -> Vec<IpAddr> {
    let mut addrs: Vec<IpAddr> = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.ip())
        .filter(|ip| !ip.is_loopback() && !is_link_local_v6(ip))
        .collect();
    addrs.sort_by_key(|ip| (ip.is_ipv6(), *ip));
    addrs.dedup();
    addrs
}

fn is_link_local_v6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_facts_are_present() {
        let h = host_info();
        assert!(!h.hostname.is_empty());
        assert!(h.system.starts_with("Linux "), "{}", h.system);
        assert_eq!(h.version, VERSION);
    }
}
