//! Two test hosts in network namespaces joined by a veth pair, with the link shaped by `tc tbf`.
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
