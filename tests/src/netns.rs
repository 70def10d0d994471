//! Test hosts in network namespaces: two joined by a veth pair with the link shaped by `tc tbf`
//! ([`TwoHosts`]), three with a shaping router between them ([`Routed`]), or any number on one
//! switch ([`Bridged`], for multicast).
//! Addresses come from 198.18.0.0/15, the range set aside for benchmarking (RFC 2544). The
//! namespaces are deleted when the handle drops, also when a test fails.

use std::process::Command;

/// Address of host A (the client side).
pub const ADDR_A: &str = "198.18.0.1";
/// Address of host B (the server side).
pub const ADDR_B: &str = "198.18.0.2";

/// Two namespaces, A and B, on one shaped link.
pub struct TwoHosts {
    /// Namespace of host A.
    pub ns_a: String,
    /// Namespace of host B.
    pub ns_b: String,
    /// Host A's end of the link.
    pub dev_a: String,
    /// Host B's end of the link.
    pub dev_b: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn in_ns(ns: &str, args: &[&str]) -> Result<(), String> {
    let mut full = vec!["netns", "exec", ns];
    full.extend_from_slice(args);
    ip(&full)
}

fn enter(ns: &str) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .map_err(|e| format!("namespace {ns}: {e}"))?;
    // SAFETY: setns with an open namespace file descriptor; it changes only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(format!("setns {ns}: {}", std::io::Error::last_os_error()))
    }
}

/// Replaces `dev`'s qdisc in namespace `ns` with a `tbf` of `args` (its rate, then the rest of
/// its arguments); panics with tc's words if tc refuses.
pub fn shape(ns: &str, dev: &str, args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev])
        .args(["root", "tbf", "rate"])
        .args(args)
        .output()
        .expect("tc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two hosts on a link of `rate`, or none (said as a skip) where namespaces cannot be made;
/// CI runs as root, so there a missing capability is a failure.
pub fn two_hosts_or_skip(tag: &str, rate: &str) -> Option<TwoHosts> {
    if !available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root with iproute2 for the namespace tests"
        );
        crate::skip("needs root and iproute2");
        return None;
    }
    Some(TwoHosts::new(tag, rate).expect("create namespaces"))
}

/// Whether this process may create namespaces (root with iproute2).
pub fn available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl TwoHosts {
    /// Creates both hosts and shapes each direction of the link to `rate` (tc syntax, e.g. `20mbit`).
    pub fn new(tag: &str, rate: &str) -> Result<TwoHosts, String> {
        let id = format!("{}{}", tag, std::process::id() % 100_000);
        let hosts = TwoHosts {
            ns_a: format!("ppA-{id}"),
            ns_b: format!("ppB-{id}"),
            dev_a: format!("ppa{id}"),
            dev_b: format!("ppb{id}"),
        };
        let (va, vb) = (hosts.dev_a.clone(), hosts.dev_b.clone());
        ip(&["netns", "add", &hosts.ns_a])?;
        ip(&["netns", "add", &hosts.ns_b])?;
        ip(&[
            "link",
            "add",
            &va,
            "netns",
            &hosts.ns_a,
            "type",
            "veth",
            "peer",
            "name",
            &vb,
            "netns",
            &hosts.ns_b,
        ])?;
        for (ns, dev, addr) in [(&hosts.ns_a, &va, ADDR_A), (&hosts.ns_b, &vb, ADDR_B)] {
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
            in_ns(
                ns,
                &["ip", "addr", "add", &format!("{addr}/24"), "dev", dev],
            )?;
            in_ns(ns, &["ip", "link", "set", dev, "up"])?;
            in_ns(
                ns,
                // A queue of 300 ms at the link rate, like a Wi-Fi access point's, so a sender that
                // catches up after the host stalled it is queued, not dropped.
                &[
                    "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "32kb",
                    "latency", "300ms",
                ],
            )?;
        }
        // Permanent neighbour entries: no ARP resolution (and no packets queued or dropped
        // behind one) in the middle of a test.
        let mac = |ns: &str, dev: &str| -> Result<String, String> {
            let out = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "cat",
                    &format!("/sys/class/net/{dev}/address"),
                ])
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let (mac_a, mac_b) = (mac(&hosts.ns_a, &va)?, mac(&hosts.ns_b, &vb)?);
        in_ns(
            &hosts.ns_a,
            &[
                "ip",
                "neigh",
                "replace",
                ADDR_B,
                "lladdr",
                &mac_b,
                "dev",
                &va,
                "nud",
                "permanent",
            ],
        )?;
        in_ns(
            &hosts.ns_b,
            &[
                "ip",
                "neigh",
                "replace",
                ADDR_A,
                "lladdr",
                &mac_a,
                "dev",
                &vb,
                "nud",
                "permanent",
            ],
        )?;
        Ok(hosts)
    }

    /// Gives host A a second address (`addr`, in the link's /24), for a third party on the
    /// link: another host's address as far as host B can tell.
    pub fn add_address_a(&self, addr: &str) -> Result<(), String> {
        in_ns(
            &self.ns_a,
            &[
                "ip",
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                &self.dev_a,
            ],
        )
    }

    /// Moves the calling thread into host A's network namespace: sockets it opens from now on
    /// are host A's. Use a thread of its own (and a runtime of its own on it).
    pub fn enter_a(&self) -> Result<(), String> {
        enter(&self.ns_a)
    }

    /// Command prefix that runs a program in host A.
    pub fn prefix_a(&self) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.ns_a.clone(),
        ]
    }

    /// Command prefix that runs a program in host B.
    pub fn prefix_b(&self) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.ns_b.clone(),
        ]
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        // Deleting a namespace removes its end of the veth, and with it the pair.
        let _ = ip(&["netns", "del", &self.ns_a]);
        let _ = ip(&["netns", "del", &self.ns_b]);
    }
}

/// Host A's address on its link to the router.
pub const ROUTED_A: &str = "198.18.1.1";
/// Host B's address on its link to the router.
pub const ROUTED_B: &str = "198.18.2.2";

/// Three namespaces as a home network has them: host A – router R – host B, two veth links, R
/// forwarding between them and shaping its egress towards B with `tc tbf` (the bottleneck on a
/// middle box, where a sender's TCP Small Queues cannot keep the queue short). Deleted on drop.
pub struct Routed {
    /// Host A (the client side).
    pub ns_a: String,
    /// The router.
    pub ns_r: String,
    /// Host B (the server side).
    pub ns_b: String,
    /// R's interface towards B, where the queue is.
    pub dev_rb: String,
}

impl Routed {
    /// Creates the three hosts; R's egress towards B is `rate` with a queue of `queue` (tbf's
    /// `latency`, e.g. `500ms`).
    pub fn new(tag: &str, rate: &str, queue: &str) -> Result<Routed, String> {
        let id = format!("{}{}", tag, std::process::id() % 100_000);
        let hosts = Routed {
            ns_a: format!("ppA-{id}"),
            ns_r: format!("ppR-{id}"),
            ns_b: format!("ppB-{id}"),
            dev_rb: format!("prb{id}"),
        };
        let (dev_a, dev_ra, dev_b) = (format!("pa{id}"), format!("pra{id}"), format!("pb{id}"));
        for ns in [&hosts.ns_a, &hosts.ns_r, &hosts.ns_b] {
            ip(&["netns", "add", ns])?;
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
        }
        ip(&[
            "link",
            "add",
            &dev_a,
            "netns",
            &hosts.ns_a,
            "type",
            "veth",
            "peer",
            "name",
            &dev_ra,
            "netns",
            &hosts.ns_r,
        ])?;
        ip(&[
            "link",
            "add",
            &hosts.dev_rb,
            "netns",
            &hosts.ns_r,
            "type",
            "veth",
            "peer",
            "name",
            &dev_b,
            "netns",
            &hosts.ns_b,
        ])?;
        for (ns, dev, addr) in [
            (&hosts.ns_a, &dev_a, "198.18.1.1/24"),
            (&hosts.ns_r, &dev_ra, "198.18.1.254/24"),
            (&hosts.ns_r, &hosts.dev_rb, "198.18.2.254/24"),
            (&hosts.ns_b, &dev_b, "198.18.2.2/24"),
        ] {
            in_ns(ns, &["ip", "addr", "add", addr, "dev", dev])?;
            in_ns(ns, &["ip", "link", "set", dev, "up"])?;
        }
        in_ns(
            &hosts.ns_a,
            &["ip", "route", "add", "default", "via", "198.18.1.254"],
        )?;
        in_ns(
            &hosts.ns_b,
            &["ip", "route", "add", "default", "via", "198.18.2.254"],
        )?;
        in_ns(&hosts.ns_r, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        hosts.set_queue(rate, queue)?;
        Ok(hosts)
    }

    /// Sets R's egress towards B to `rate` with a queue of `queue`.
    pub fn set_queue(&self, rate: &str, queue: &str) -> Result<(), String> {
        in_ns(
            &self.ns_r,
            &[
                "tc",
                "qdisc",
                "replace",
                "dev",
                &self.dev_rb,
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                "32kb",
                "latency",
                queue,
            ],
        )
    }

    /// Command prefix that runs a program in host A.
    pub fn prefix_a(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.ns_a]
            .map(String::from)
            .to_vec()
    }

    /// Command prefix that runs a program in host B.
    pub fn prefix_b(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.ns_b]
            .map(String::from)
            .to_vec()
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.ns_a]);
        let _ = ip(&["netns", "del", &self.ns_r]);
        let _ = ip(&["netns", "del", &self.ns_b]);
    }
}

/// Hosts on one switched LAN: a namespace per host, each with a veth to a bridge in a switch
/// namespace of its own (with IGMP snooping off, as a plain switch floods multicast), and a
/// route for multicast (224.0.0.0/4) on each host's LAN interface; the hosts have no IPv6 and
/// send their IGMP reports at once when they join. Host `k` (from 0) has
/// address `198.18.3.(k+1)` on its interface `lan0`. Deleted on drop.
pub struct Bridged {
    /// The switch.
    pub ns_switch: String,
    /// The hosts.
    pub hosts: Vec<String>,
}

/// The LAN interface of each [`Bridged`] host.
pub const LAN_DEV: &str = "lan0";

impl Bridged {
    /// Creates `count` hosts on one bridge.
    pub fn new(tag: &str, count: usize) -> Result<Bridged, String> {
        Bridged::build(tag, count, false)
    }

    /// [`Bridged::new`] with IPv6 too: host `k` also has `fd18:3::(k+1)/64` (no duplicate
    /// address detection, so it is usable at once). These hosts send their own IPv6 chatter
    /// (router solicitations, MLD reports).
    pub fn with_ipv6(tag: &str, count: usize) -> Result<Bridged, String> {
        Bridged::build(tag, count, true)
    }

    /// Host `k`'s IPv6 address (a [`Bridged::with_ipv6`] LAN's).
    pub fn addr6(k: usize) -> String {
        format!("fd18:3::{}", k + 1)
    }

    fn build(tag: &str, count: usize, ipv6: bool) -> Result<Bridged, String> {
        let id = format!("{}{}", tag, std::process::id() % 100_000);
        let lan = Bridged {
            ns_switch: format!("ppS-{id}"),
            hosts: (0..count).map(|k| format!("ppH{k}-{id}")).collect(),
        };
        ip(&["netns", "add", &lan.ns_switch])?;
        in_ns(&lan.ns_switch, &["ip", "link", "set", "lo", "up"])?;
        in_ns(
            &lan.ns_switch,
            &[
                "ip",
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "mcast_snooping",
                "0",
            ],
        )?;
        in_ns(&lan.ns_switch, &["ip", "link", "set", "br0", "up"])?;
        for (k, ns) in lan.hosts.iter().enumerate() {
            let port = format!("port{k}");
            ip(&["netns", "add", ns])?;
            ip(&[
                "link",
                "add",
                LAN_DEV,
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                &port,
                "netns",
                &lan.ns_switch,
            ])?;
            in_ns(
                &lan.ns_switch,
                &["ip", "link", "set", &port, "master", "br0"],
            )?;
            in_ns(&lan.ns_switch, &["ip", "link", "set", &port, "up"])?;
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
            // Quiet hosts: no IPv6 (router solicitations, MLD) and IGMP's unsolicited reports
            // sent at once on a join, so what a host sends during a test is its own doing.
            let v6 = if ipv6 {
                "net.ipv6.conf.all.disable_ipv6=0"
            } else {
                "net.ipv6.conf.all.disable_ipv6=1"
            };
            for setting in [
                v6,
                "net.ipv4.conf.all.igmpv3_unsolicited_report_interval=10",
                "net.ipv4.conf.default.igmpv3_unsolicited_report_interval=10",
            ] {
                in_ns(ns, &["sysctl", "-q", "-w", setting])?;
            }
            let addr = format!("198.18.3.{}/24", k + 1);
            in_ns(ns, &["ip", "addr", "add", &addr, "dev", LAN_DEV])?;
            if ipv6 {
                let addr = format!("{}/64", Bridged::addr6(k));
                in_ns(ns, &["ip", "addr", "add", &addr, "dev", LAN_DEV, "nodad"])?;
            }
            in_ns(ns, &["ip", "link", "set", LAN_DEV, "up"])?;
            in_ns(ns, &["ip", "route", "add", "224.0.0.0/4", "dev", LAN_DEV])?;
        }
        Ok(lan)
    }

    /// Host `k`'s address.
    pub fn addr(k: usize) -> String {
        format!("198.18.3.{}", k + 1)
    }

    /// Moves the calling thread into host `k`'s network namespace: sockets it opens and
    /// programs it starts from now on are host `k`'s. Use a thread of its own (and a runtime
    /// of its own on it).
    pub fn enter(&self, k: usize) -> Result<(), String> {
        enter(&self.hosts[k])
    }

    /// Command prefix that runs a program in host `k`.
    pub fn prefix(&self, k: usize) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.hosts[k].clone(),
        ]
    }
}

impl Drop for Bridged {
    fn drop(&mut self) {
        for ns in &self.hosts {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["netns", "del", &self.ns_switch]);
    }
}
