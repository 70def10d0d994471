//! The peer's memory budget (`--max-memory`): every test an anonymous client asks for is charged
//! the buffers its streams will allocate before any is allocated, and refused with a clear error
//! when the budget cannot take it. The charge is given back when the test ends.

use portable_atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Smallest default budget: a default test (one stream, 128 KiB writes) fits many times over.
const MIN_DEFAULT: u64 = 16 << 20;
/// Largest default budget, on a big machine.
const MAX_DEFAULT: u64 = 1 << 30;

/// A test's buffers would not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "this test needs about {} of buffers and this peer has {} of its {} left (its --max-memory); use fewer streams (-P) or a smaller -l, or try again when other tests end",
    mib(*.needed), mib(*.left), mib(*.limit)
)]
pub(crate) struct OverBudget {
    /// Bytes the test asked for.
    pub needed: u64,
    /// Bytes left in the budget.
    pub left: u64,
    /// The whole budget.
    pub limit: u64,
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Bytes of memory tests may hold at once.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: u64,
    used: AtomicU64,
}

/// Bytes charged to a budget, given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// The default for this machine: an eighth of its memory, between 16 MiB and 1 GiB.
    pub(crate) fn default_limit() -> u64 {
        default_for(crate::sys::total_memory())
    }

    /// Charges `bytes`, or says why not.
    pub(crate) fn charge(self: &Arc<Self>, bytes: u64) -> Result<Charge, OverBudget> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .map(|_| Charge {
                budget: self.clone(),
                bytes,
            })
            .map_err(|used| OverBudget {
                needed: bytes,
                left: self.limit.saturating_sub(used),
                limit: self.limit,
            })
    }

    /// Bytes charged now.
    #[cfg(test)]
    fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }
}

fn default_for(total: Option<u64>) -> u64 {
    total
        .map_or(MIN_DEFAULT * 4, |t| t / 8)
        .clamp(MIN_DEFAULT, MAX_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_refused_beyond_the_limit_and_given_back() {
        let budget = MemoryBudget::new(100);
        let a = budget.charge(60).unwrap();
        let err = budget.charge(50).unwrap_err();
        assert_eq!(
            err,
            OverBudget {
                needed: 50,
                left: 40,
                limit: 100
            }
        );
        assert!(err.to_string().contains("--max-memory"), "{err}");
        let b = budget.charge(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
        assert!(budget.charge(u64::MAX).is_err(), "no overflow");
    }

    #[test]
    fn the_default_is_an_eighth_of_memory_within_bounds() {
        assert_eq!(default_for(Some(24_576_000 * 1024)), MAX_DEFAULT);
        // A 256 MB router: 32 MiB.
        assert_eq!(default_for(Some(256 << 20)), 32 << 20);
        // A 64 MB board: the floor.
        assert_eq!(default_for(Some(64 << 20)), MIN_DEFAULT);
        assert_eq!(default_for(None), 64 << 20);
    }
}
