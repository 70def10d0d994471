//! CPU accounting: the process's user/system time and the host's busy time (from
//! [`crate::sys`]: getrusage and /proc/stat on Linux), read once at the start and once at the
//! end of a test, never on the hot path.

use std::time::{Duration, Instant};

use perfpeer_shared::report::CpuUsage;

use crate::sys::HostTimes;

/// CPU counters at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuSnapshot {
    at: Instant,
    process_user: Duration,
    process_system: Duration,
    host: Option<HostTimes>,
}

impl CpuSnapshot {
    /// Reads the counters now.
    pub(crate) fn take() -> Self {
        let (process_user, process_system) = crate::sys::process_cpu_times().unwrap_or_default();
        let host = crate::sys::host_cpu_times();
        CpuSnapshot {
            at: Instant::now(),
            process_user,
            process_system,
            host,
        }
    }

    /// Usage between `start` and `self`.
    pub(crate) fn usage_since(&self, start: &CpuSnapshot) -> CpuUsage {
        usage_between(start, self)
    }
}

/// Logical CPUs of this machine: the host's count where its CPU times are read, else what the
/// process may use.
pub(crate) fn logical_cpus() -> u32 {
    crate::sys::host_cpu_times().map_or_else(parallelism, |h| h.cpus)
}

fn parallelism() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1)
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
        _ => (0.0, 0.0, parallelism()),
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
