//! ttcp's summary lines for a result, as the classic BRL ttcp prints them (bytes processed; CPU
//! and real seconds with KB/s and Kbit/s, where K is 1024), preceded by the SGI 1.12 set-up line.

use crate::report::{PeerRole, StreamRole, TestResult};
use crate::spec::Protocol;

use super::cfmt::g_width;

/// Which end of a ttcp transfer a result is printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtcpRole {
    /// `-t`, the sender (prefix `ttcp-t:`).
    Transmit,
    /// `-r`, the receiver (prefix `ttcp-r:`).
    Receive,
}

impl TtcpRole {
    fn prefix(self) -> &'static str {
        match self {
            TtcpRole::Transmit => "ttcp-t",
            TtcpRole::Receive => "ttcp-r",
        }
    }
}

/// The figures ttcp prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TtcpFigures {
    /// Bytes moved.
    pub bytes: u64,
    /// Wall-clock seconds of the transfer.
    pub real_s: f64,
    /// CPU seconds (user + system) of the process.
    pub cpu_s: f64,
}

/// What the set-up line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Which end.
    pub role: TtcpRole,
    /// `-l` (UDP: at least 5).
    pub buflen: u32,
    /// `-n` (printed by both ends, as classic ttcp prints it).
    pub nbuf: u64,
    /// `-A` and `-O`.
    pub align: (u32, u32),
    /// `-p`.
    pub port: u16,
    /// `-u` or not.
    pub protocol: Protocol,
}

/// The set-up line: `ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp  -> host`.
pub fn setup_line(setup: &Setup, host: Option<&str>) -> String {
    let Setup {
        role,
        buflen,
        nbuf,
        align: (align, offset),
        port,
        protocol,
    } = *setup;
    let proto = match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        Protocol::Dccp => "dccp",
    };
    let to = host.map(|h| format!("  -> {h}")).unwrap_or_default();
    format!(
        "{}: buflen={buflen}, nbuf={nbuf}, align={align}/{offset}, port={port}  {proto}{to}\n",
        role.prefix()
    )
}

/// SGI ttcp's `-v` line, `ttcp-t: 16777216 bytes in 0.24 real seconds = 68104.55 KB/sec +++`,
/// the rate in `unit` (`-f`: K, M, G bytes or k, m, g bits, 1024-based; anything else is K).
pub fn sgi_line(role: TtcpRole, f: &TtcpFigures, unit: char) -> String {
    let real = if f.real_s <= 0.0 { 0.001 } else { f.real_s };
    let per_sec = f.bytes as f64 / real;
    let rate = match unit {
        'M' => format!("{:.2} MB", per_sec / 1024.0 / 1024.0),
        'G' => format!("{:.2} GB", per_sec / 1024.0 / 1024.0 / 1024.0),
        'k' => format!("{:.2} Kbit", per_sec * 8.0 / 1024.0),
        'm' => format!("{:.2} Mbit", per_sec * 8.0 / 1024.0 / 1024.0),
        'g' => format!("{:.2} Gbit", per_sec * 8.0 / 1024.0 / 1024.0 / 1024.0),
        _ => format!("{:.2} KB", per_sec / 1024.0),
    };
    format!(
        "{}: {} bytes in {real:.2} real seconds = {rate}/sec +++\n",
        role.prefix(),
        f.bytes
    )
}

/// The three BRL summary lines. ttcp prints non-positive times as 0.001 and CPU time as at
/// least 0.00001 s, so nothing divides by zero.
pub fn summary_lines(role: TtcpRole, f: &TtcpFigures) -> String {
    let p = role.prefix();
    let real = if f.real_s <= 0.0 { 0.001 } else { f.real_s };
    let cpu = if f.cpu_s <= 0.0 {
        0.001
    } else {
        f.cpu_s.max(0.000_01)
    };
    let kb = f.bytes as f64 / 1024.0;
    let kbits = f.bytes as f64 * 8.0 / 1024.0;
    format!(
        "{p}: {} bytes processed\n{p}: {} CPU sec  = {} KB/cpu sec,  {} Kbits/cpu sec\n{p}: {} real sec = {} KB/real sec, {} Kbits/sec\n",
        f.bytes,
        g_width(cpu, 9),
        g_width(kb / cpu, 9),
        g_width(kbits / cpu, 9),
        g_width(real, 9),
        g_width(kb / real, 9),
        g_width(kbits / real, 9),
    )
}

/// The figures of the end a result was measured at: what it sent (or received) on all its
/// streams, over the longest stream's time, with the process's CPU time.
pub fn figures(result: &TestResult) -> (TtcpRole, TtcpFigures) {
    let local = &result.local;
    let sends = local.streams.iter().any(|s| s.role == StreamRole::Sender);
    let role = if sends {
        TtcpRole::Transmit
    } else {
        TtcpRole::Receive
    };
    let want = if sends {
        StreamRole::Sender
    } else {
        StreamRole::Receiver
    };
    let streams = local.streams.iter().filter(|s| s.role == want);
    let (bytes, real_s) = streams.fold((0u64, 0f64), |(b, t), s| {
        (b + s.bytes, t.max(s.duration.as_secs_f64()))
    });
    (
        role,
        TtcpFigures {
            bytes,
            real_s,
            cpu_s: local.cpu.process_user_s + local.cpu.process_system_s,
        },
    )
}

/// A whole result as ttcp text: set-up line and summary of the end it was measured at.
pub fn text(result: &TestResult) -> String {
    let (role, f) = figures(result);
    let port = result
        .server_addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let nbuf = f.bytes / u64::from(result.spec.len.max(1));
    let host = (result.local.role == PeerRole::Client)
        .then(|| result.server_addr.rsplit_once(':').map_or("", |(h, _)| h));
    let setup = Setup {
        role,
        buflen: result.spec.len,
        nbuf,
        align: (16_384, 0),
        port,
        protocol: result.spec.protocol,
    };
    let mut out = setup_line(&setup, host);
    out.push_str(&summary_lines(role, &f));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brl_layout_with_hand_computed_figures() {
        // 131 072 000 bytes (128 000 × 1 KiB) in 10 s real, 0.5 s CPU:
        // 128 000 KB / 10 s = 12 800 KB/s = 102 400 Kbit/s; per CPU second 256 000 KB, 2 048 000 Kbit.
        let f = TtcpFigures {
            bytes: 131_072_000,
            real_s: 10.0,
            cpu_s: 0.5,
        };
        assert_eq!(
            summary_lines(TtcpRole::Transmit, &f),
            "ttcp-t: 131072000 bytes processed\n\
             ttcp-t:       0.5 CPU sec  =    256000 KB/cpu sec,  2.048e+06 Kbits/cpu sec\n\
             ttcp-t:        10 real sec =     12800 KB/real sec,    102400 Kbits/sec\n"
        );
    }

    #[test]
    fn zero_times_do_not_divide_by_zero() {
        let f = TtcpFigures {
            bytes: 1024,
            real_s: 0.0,
            cpu_s: 0.0,
        };
        let text = summary_lines(TtcpRole::Receive, &f);
        assert!(
            text.contains(
                "ttcp-r:     0.001 real sec =      1000 KB/real sec,      8000 Kbits/sec"
            ),
            "{text}"
        );
    }

    #[test]
    fn setup_line_as_sgi_prints_it() {
        let mut setup = Setup {
            role: TtcpRole::Transmit,
            buflen: 1024,
            nbuf: 128_000,
            align: (16_384, 0),
            port: 5001,
            protocol: Protocol::Tcp,
        };
        assert_eq!(
            setup_line(&setup, Some("pc")),
            "ttcp-t: buflen=1024, nbuf=128000, align=16384/0, port=5001  tcp  -> pc\n"
        );
        setup.role = TtcpRole::Receive;
        setup.buflen = 8192;
        setup.nbuf = 2048;
        setup.align = (4096, 16);
        setup.protocol = Protocol::Udp;
        assert_eq!(
            setup_line(&setup, None),
            "ttcp-r: buflen=8192, nbuf=2048, align=4096/16, port=5001  udp\n"
        );
    }

    #[test]
    fn sgi_line_in_each_unit() {
        let f = TtcpFigures {
            bytes: 16_777_216,
            real_s: 0.25,
            cpu_s: 0.1,
        };
        let line = |u| sgi_line(TtcpRole::Transmit, &f, u);
        assert_eq!(
            line('K'),
            "ttcp-t: 16777216 bytes in 0.25 real seconds = 65536.00 KB/sec +++\n"
        );
        assert!(line('M').ends_with("= 64.00 MB/sec +++\n"));
        assert!(line('m').ends_with("= 512.00 Mbit/sec +++\n"));
        assert!(line('g').ends_with("= 0.50 Gbit/sec +++\n"));
    }
}
