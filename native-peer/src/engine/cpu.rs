//! CPU accounting: the process's user/system time (getrusage) and the host's busy time
//! (/proc/stat), read once at the start and once at the end of a test, never on the hot path.

use std::time::{Duration, Instant};

use perfpeer_shared::report::CpuUsage;

/// Host-wide CPU time counters from the first line of /proc/stat, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostTimes {
    /// user + nice.
    pub user: u64,
    /// system + irq + softirq.
    pub system: u64,
    /// Everything, idle and iowait included (guest time is already inside user).
    pub total: u64,
    /// Number of `cpuN` lines.
    pub cpus: u32,
}

/// Parses /proc/stat's text; `None` if the aggregate `cpu` line is missing or malformed.
pub fn parse_proc_stat(text: &str) -> Option<HostTimes> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let mut fields = first.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields
        .map(|f| f.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if v.len() < 7 {
        return None;
    }
    let steal = v.get(7).copied().unwrap_or(0);
    let cpus = text
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    let cpus = u32::try_from(cpus).unwrap_or(u32::MAX);
    Some(HostTimes {
        user: v[0] + v[1],
        system: v[2] + v[5] + v[6],
        total: v[..7].iter().sum::<u64>() + steal,
        cpus,
    })
}

/// CPU counters at one instant.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    process_user: Duration,
    process_system: Duration,
    host: Option<HostTimes>,
}

impl CpuSnapshot {
    /// Reads the counters now.
    pub fn take() -> Self {
        let (process_user, process_system) = crate::sys::process_cpu_times().unwrap_or_default();
        let host = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_proc_stat(&t));
        CpuSnapshot {
            at: Instant::now(),
            process_user,
            process_system,
            host,
        }
    }

    /// Usage between `start` and `self`.
    pub fn usage_since(&self, start: &CpuSnapshot) -> CpuUsage {
        usage_between(start, self)
    }
}

fn usage_between(a: &CpuSnapshot, b: &CpuSnapshot) -> CpuUsage {
    let (host_user_percent, host_system_percent, cpus) = match (a.host, b.host) {
        (Some(h0), Some(h1)) if h1.total > h0.total => {
            let total = (h1.total - h0.total) as f64;
            (
                h1.user.saturating_sub(h0.user) as f64 * 100.0 / total,
                h1.system.saturating_sub(h0.system) as f64 * 100.0 / total,
                h1.cpus,
            )
        }
        _ => (
            0.0,
            0.0,
            std::thread::available_parallelism()
                .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
                .unwrap_or(1),
        ),
    };
    CpuUsage {
        elapsed: b.at.saturating_duration_since(a.at),
        process_user_s: b.process_user.saturating_sub(a.process_user).as_secs_f64(),
        process_system_s: b
            .process_system
            .saturating_sub(a.process_system)
            .as_secs_f64(),
        host_user_percent,
        host_system_percent,
        cpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 10 3 2 0 0 0\ncpu0 50 2 25 400 5 1 1 0 0 0\ncpu1 50 3 25 400 5 2 1 0 0 0\nintr 1\n";

    #[test]
    fn proc_stat_is_parsed() {
        let h = parse_proc_stat(STAT).unwrap();
        assert_eq!(
            h,
            HostTimes {
                user: 105,
                system: 55,
                total: 970,
                cpus: 2
            }
        );
        assert_eq!(parse_proc_stat("intr 5\n"), None);
        assert_eq!(parse_proc_stat("cpu 1 2 x\n"), None);
    }

    #[test]
    fn usage_and_service_demand_by_hand() {
        let t0 = Instant::now();
        let a = CpuSnapshot {
            at: t0,
            process_user: Duration::ZERO,
            process_system: Duration::ZERO,
            host: Some(HostTimes {
                user: 0,
                system: 0,
                total: 0,
                cpus: 2,
            }),
        };
        let b = CpuSnapshot {
            at: t0 + Duration::from_secs(2),
            process_user: Duration::from_millis(500),
            process_system: Duration::from_millis(1500),
            host: Some(HostTimes {
                user: 100,
                system: 200,
                total: 400,
                cpus: 2,
            }),
        };
        let u = b.usage_since(&a);
        assert_eq!(u.process_total_percent(), 100.0); // 2 CPU-seconds in 2 s = one CPU
        assert_eq!(u.host_total_percent(), 75.0);
        // 75 % of 2 CPUs for 2 s = 3 CPU-seconds = 3e6 µs over 1e6 KB moved = 3 µs/KB.
        let sd = u.service_demand_us_per_kb(1_000_000 * 1024).unwrap();
        assert!((sd - 3.0).abs() < 1e-9, "{sd}");
    }
}
