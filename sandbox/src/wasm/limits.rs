//! Memory, table and instance caps for one call (S4), summed over every memory of every
//! instance in the store: a composed component has one memory per inner module, so a
//! per-memory cap alone would let it take several times its grant.

use wasmtime::ResourceLimiter;

use crate::grant::Limits;

/// A `ResourceLimiter` that caps the total of all linear memories and remembers whether a cap
/// was hit, so a trap that follows (Rust aborts when an allocation fails) is reported as
/// MEMORY_LIMIT rather than a bare trap.
pub struct CallLimiter {
    memory_cap: usize,
    memory_in_use: usize,
    table_elements_cap: usize,
    pub hit: Option<String>,
}

impl CallLimiter {
    pub const MAX_INSTANCES: usize = 64;
    pub const MAX_TABLES: usize = 64;
    pub const MAX_MEMORIES: usize = 16;

    pub fn new(memory_cap: u64) -> CallLimiter {
        CallLimiter {
            memory_cap: usize::try_from(memory_cap).unwrap_or(usize::MAX),
            memory_in_use: 0,
            table_elements_cap: 1 << 20,
            hit: None,
        }
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.memory_in_use - current.min(self.memory_in_use) + desired;
        if total > self.memory_cap {
            self.hit = Some(format!(
                "memory: asked to grow to {} MiB in total, the cap is {} MiB",
                total >> 20,
                self.memory_cap >> 20
            ));
            return Ok(false);
        }
        self.memory_in_use = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements_cap {
            self.hit = Some(format!(
                "table: asked for {desired} elements, the cap is {}",
                self.table_elements_cap
            ));
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        Self::MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        Self::MAX_TABLES
    }

    fn memories(&self) -> usize {
        Self::MAX_MEMORIES
    }
}

/// Limits for the one `list()` call made at load, and the one a snapshot runs
/// (`snapshot.rs`): generous enough for any honest plugin, small enough that a hostile one
/// cannot stall the host.
pub(crate) fn list_limits() -> Limits {
    Limits {
        fuel: Some(500_000_000),
        timeout: std::time::Duration::from_secs(5),
        memory_bytes: 128 << 20,
        output_bytes: None,
        stdio_bytes: 16 << 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_are_capped_in_sum_not_each() {
        let mut limiter = CallLimiter::new(10 << 20);
        assert!(limiter.memory_growing(0, 6 << 20, None).unwrap());
        // A second memory of 6 MiB fits a per-memory cap of 10 MiB but not the sum.
        assert!(!limiter.memory_growing(0, 6 << 20, None).unwrap());
        assert!(limiter.hit.as_deref().unwrap().contains("cap is 10 MiB"));
        // Growing the first memory within the remaining room still works.
        assert!(limiter.memory_growing(6 << 20, 9 << 20, None).unwrap());
    }
}
