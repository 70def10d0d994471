//! Who writes a running test: this process, named by the machine's boot id, its pid and its
//! start time (so a reused pid after a reboot or a restart is not taken for the writer). A
//! `running` row is marked aborted only when its writer is gone, so `perfpeer results list` or
//! a second peer on the same data directory never marks a live test as aborted.

use std::sync::OnceLock;

/// This process, as an owner string: `<boot id>:<pid>:<start time in clock ticks>`.
pub(super) fn this_process() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| {
        let pid = std::process::id();
        format!(
            "{}:{pid}:{}",
            crate::sys::boot_id().unwrap_or_default(),
            crate::sys::process_start_time(pid).unwrap_or_default()
        )
    })
}

/// Whether the process that wrote `owner` is still running on this machine. Rows written
/// before owners were kept (`None`) have no writer left to ask.
pub(super) fn is_alive(owner: Option<&str>) -> bool {
    let Some(owner) = owner else { return false };
    let mut parts = owner.split(':');
    let (Some(boot), Some(pid), Some(started)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    crate::sys::boot_id().unwrap_or_default() == boot
        && crate::sys::process_start_time(pid).is_some_and(|t| t == started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_others_are_not() {
        assert!(is_alive(Some(this_process())));
        assert!(!is_alive(None));
        assert!(!is_alive(Some("garbage")));
        let (boot, rest) = this_process().split_once(':').unwrap();
        let (pid, _) = rest.split_once(':').unwrap();
        // Same pid, another start time: a reused pid is not the writer.
        assert!(!is_alive(Some(&format!("{boot}:{pid}:1"))));
        // Another boot.
        assert!(!is_alive(Some(&format!("0000:{rest}"))));
    }
}
