//! Linux DCCP: SOCK_DCCP sockets with a service code (DCCP_SOCKOPT_SERVICE, network byte order)
//! and CCID (DCCP_SOCKOPT_CCID) set before connect/listen, and the kernel's view of a connection
//! (TX/RX CCID, current MPS, CCID 3's TFRC state). Capability detection lives here too.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use perfpeer_shared::dccp::{DccpStreamInfo, DccpSupport, TfrcRx, TfrcTx};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::{KernelFacts, diagnose};

/// `SOL_DCCP`.
const SOL_DCCP: libc::c_int = 269;
const DCCP_SOCKOPT_SERVICE: libc::c_int = 2;
const DCCP_SOCKOPT_GET_CUR_MPS: libc::c_int = 5;
const DCCP_SOCKOPT_AVAILABLE_CCIDS: libc::c_int = 12;
const DCCP_SOCKOPT_CCID: libc::c_int = 13;
const DCCP_SOCKOPT_TX_CCID: libc::c_int = 14;
const DCCP_SOCKOPT_RX_CCID: libc::c_int = 15;
const DCCP_SOCKOPT_CCID_RX_INFO: libc::c_int = 128;
const DCCP_SOCKOPT_CCID_TX_INFO: libc::c_int = 192;

/// `struct tfrc_rx_info` (include/uapi/linux/dccp.h).
#[repr(C)]
#[derive(Default)]
struct RawTfrcRx {
    x_recv: u32,
    rtt: u32,
    p: u32,
}

/// `struct tfrc_tx_info`.
#[repr(C)]
#[derive(Default)]
struct RawTfrcTx {
    x: u64,
    x_recv: u64,
    x_calc: u32,
    rtt: u32,
    p: u32,
    rto: u32,
    ipi: u32,
}

fn set_raw(s: &Socket, opt: libc::c_int, bytes: &[u8]) -> io::Result<()> {
    crate::sys::setsockopt_bytes(s, SOL_DCCP, opt, bytes)
}

/// getsockopt into `out` (plain-old-data); returns the length the kernel wrote.
fn get_raw<T>(s: &Socket, opt: libc::c_int, out: &mut T) -> io::Result<usize> {
    // SAFETY: T is only ever a POD struct, integer or byte array here.
    unsafe { crate::sys::getsockopt_into(s, SOL_DCCP, opt, out) }
}

fn new_socket(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(Domain::for_address(*addr), Type::DCCP, Some(Protocol::DCCP))
}

fn set_services(s: &Socket, services: &[u32]) -> io::Result<()> {
    let bytes: Vec<u8> = services.iter().flat_map(|c| c.to_be_bytes()).collect();
    set_raw(s, DCCP_SOCKOPT_SERVICE, &bytes)
}

pub(super) fn connect(
    server: SocketAddr,
    bind: Option<IpAddr>,
    service: u32,
    ccid: Option<u8>,
    timeout: Duration,
) -> io::Result<Socket> {
    let s = new_socket(&server)?;
    set_services(&s, &[service])?;
    if let Some(c) = ccid {
        set_raw(&s, DCCP_SOCKOPT_CCID, &[c]).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot select CCID {c} ({e}); {}", offered(&s)),
            )
        })?;
    }
    if let Some(ip) = bind {
        s.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind to {ip}: {e}")))?;
    }
    s.connect_timeout(&SockAddr::from(server), timeout)
        .map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::ConnectionRefused {
                " (no DCCP listener there, or it does not accept this service code)"
            } else {
                ""
            };
            io::Error::new(e.kind(), format!("DCCP connection to {server}: {e}{hint}"))
        })?;
    Ok(s)
}

fn offered(s: &Socket) -> String {
    format!(
        "the kernel offers {}",
        perfpeer_shared::dccp::ccid_list(&available_ccids(s))
    )
}

pub(super) fn listen(addr: SocketAddr, services: &[u32]) -> io::Result<Socket> {
    let s = new_socket(&addr)?;
    if addr.is_ipv6() {
        s.set_only_v6(false)?;
    }
    s.set_reuse_address(true)?;
    set_services(&s, services)?;
    s.bind(&SockAddr::from(addr))?;
    s.listen(128)?;
    Ok(s)
}

fn available_ccids(s: &Socket) -> Vec<u8> {
    let mut buf = [0u8; 16];
    match get_raw(s, DCCP_SOCKOPT_AVAILABLE_CCIDS, &mut buf) {
        Ok(n) => buf[..n.min(buf.len())].to_vec(),
        Err(_) => Vec::new(),
    }
}

fn int_opt(s: &Socket, opt: libc::c_int) -> Option<u32> {
    let mut v: libc::c_int = 0;
    get_raw(s, opt, &mut v)
        .ok()
        .and_then(|_| u32::try_from(v).ok())
}

pub(super) fn stream_info(s: &Socket) -> DccpStreamInfo {
    let ccid = |opt| int_opt(s, opt).and_then(|v| u8::try_from(v).ok());
    let (tx_ccid, rx_ccid) = (ccid(DCCP_SOCKOPT_TX_CCID), ccid(DCCP_SOCKOPT_RX_CCID));
    let mut tx = RawTfrcTx::default();
    let tfrc_tx = (tx_ccid == Some(3)
        && get_raw(s, DCCP_SOCKOPT_CCID_TX_INFO, &mut tx).is_ok_and(|n| n > 0))
    .then(|| TfrcTx {
        // The kernel keeps X and X_recv scaled by 64 (2^6).
        x_bytes_per_sec: tx.x as f64 / 64.0,
        x_recv_bytes_per_sec: tx.x_recv as f64 / 64.0,
        x_calc_bytes_per_sec: f64::from(tx.x_calc),
        rtt_us: tx.rtt,
        p: f64::from(tx.p) / 1e6,
        rto_us: tx.rto,
        ipi_us: tx.ipi,
    });
    let mut rx = RawTfrcRx::default();
    let tfrc_rx = (rx_ccid == Some(3)
        && get_raw(s, DCCP_SOCKOPT_CCID_RX_INFO, &mut rx).is_ok_and(|n| n > 0))
    .then(|| TfrcRx {
        x_recv_bytes_per_sec: f64::from(rx.x_recv),
        rtt_us: rx.rtt,
        // ~0 means "no loss event yet".
        p: if rx.p == u32::MAX {
            0.0
        } else {
            f64::from(rx.p) / 1e6
        },
    });
    DccpStreamInfo {
        tx_ccid,
        rx_ccid,
        cur_mps: int_opt(s, DCCP_SOCKOPT_GET_CUR_MPS),
        available_ccids: available_ccids(s),
        tfrc_tx,
        tfrc_rx,
    }
}

/// Whether this kernel can make DCCP sockets (IPv4, IPv6), with which CCIDs, or why not.
pub(crate) fn support() -> DccpSupport {
    let v4 = Socket::new(Domain::IPV4, Type::DCCP, Some(Protocol::DCCP));
    let v6 = Socket::new(Domain::IPV6, Type::DCCP, Some(Protocol::DCCP));
    match (&v4, &v6) {
        (Err(e), Err(_)) => DccpSupport {
            reason: Some(diagnose(&kernel_facts(), false, &e.to_string())),
            ..Default::default()
        },
        _ => {
            let any = v4.as_ref().or(v6.as_ref()).expect("one of them is Ok");
            let reason = match (&v4, &v6) {
                (Ok(_), Err(e)) => Some(diagnose(&kernel_facts(), true, &e.to_string())),
                (Err(e), Ok(_)) => Some(diagnose(&kernel_facts(), false, &e.to_string())),
                _ => None,
            };
            DccpSupport {
                available: true,
                ccids: available_ccids(any),
                ipv6: v6.is_ok(),
                reason,
            }
        }
    }
}

fn kernel_facts() -> KernelFacts {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let config = std::fs::read_to_string(format!("/boot/config-{release}"))
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                if l.trim() == "# CONFIG_IP_DCCP is not set" {
                    Some(String::new())
                } else {
                    l.strip_prefix("CONFIG_IP_DCCP=").map(String::from)
                }
            })
        });
    let proc_modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let loaded = ["dccp", "dccp_ipv4", "dccp_ipv6"]
        .iter()
        .filter(|m| {
            std::path::Path::new(&format!("/sys/module/{m}")).exists()
                || proc_modules
                    .lines()
                    .any(|l| l.split(' ').next() == Some(**m))
        })
        .map(|m| m.to_string())
        .collect();
    let modules_installed =
        std::path::Path::new(&format!("/lib/modules/{release}/kernel/net/dccp")).is_dir();
    KernelFacts {
        release,
        config,
        loaded,
        modules_installed,
    }
}
