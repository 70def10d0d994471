//! Facts about this host that reports and the peer's self-description carry: name, kernel,
//! perfpeer version, reachable addresses.

use std::ffi::CStr;
use std::net::IpAddr;

use perfpeer_shared::report::HostInfo;

/// perfpeer's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Name, `uname -srvm`-style system line and version.
pub fn host_info() -> HostInfo {
    HostInfo {
        hostname: hostname(),
        system: system_line(),
        version: VERSION.to_string(),
    }
}

/// The host name, or `"unknown"`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| uname_field(|u| &u.nodename))
}

fn uname_field(pick: impl Fn(&libc::utsname) -> &[libc::c_char; 65]) -> String {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "unknown".into();
        }
        CStr::from_ptr(pick(&u).as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

/// `Linux 6.1.0-18-amd64 #1 SMP … x86_64`.
pub fn system_line() -> String {
    [
        uname_field(|u| &u.sysname),
        uname_field(|u| &u.release),
        uname_field(|u| &u.version),
        uname_field(|u| &u.machine),
    ]
    .join(" ")
}

/// Non-loopback addresses of this host's interfaces, IPv4 first.
pub fn lan_addresses() -> Vec<IpAddr> {
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
