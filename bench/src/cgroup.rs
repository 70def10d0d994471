//! CPU budgets for the runner's DUT-sized cases: each end in a cgroup (v1 `cpu` controller) of
//! its own whose CFS quota holds it to a share of one core, so every tool is compared on the
//! CPU a router would give it. Created per run, removed when dropped; root only.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the v1 `cpu` controller is mounted.
const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";
/// The CFS period; the quota is a share of it.
const PERIOD_US: u32 = 100_000;

/// Whether budgets can be set here: root, with the v1 `cpu` controller mounted and writable (a
/// container may show it read-only) — tried with a probe group that is removed at once.
pub fn available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && Path::new(CPU_ROOT).join("cgroup.procs").exists()
        && CpuGroup::create(&format!("perfpeer-bench-probe-{}", std::process::id()), 100).is_ok()
}

/// One process's CPU budget.
pub struct CpuGroup {
    dir: PathBuf,
}

impl CpuGroup {
    /// A new group `name` that lets its processes use `percent` of one core.
    pub fn create(name: &str, percent: u32) -> io::Result<CpuGroup> {
        let dir = Path::new(CPU_ROOT).join(name);
        std::fs::create_dir(&dir)?;
        let group = CpuGroup { dir };
        group.write("cpu.cfs_period_us", &PERIOD_US.to_string())?;
        group.write("cpu.cfs_quota_us", &(PERIOD_US / 100 * percent).to_string())?;
        Ok(group)
    }

    /// Moves process `pid` (all its threads, and the ones it starts later) into the group.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        self.write("cgroup.procs", &pid.to_string())
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}/{file}: {e}", self.dir.display())))
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        // The group can be removed once its processes are gone (they were reaped just before).
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
