//! The one `Engine` of a process and the epoch ticker that drives deadlines (S3).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
};

use wasmtime::component::Linker;

use crate::wasm::error::LoadError;
use crate::wasm::limits::CallLimiter;
use crate::wasm::store::{CallState, make_linker};

/// How often the epoch advances. A running call checks its deadline and its cancellation at
/// each tick; cancelling also advances the epoch at once, so cancel latency does not wait for
/// the tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Bytes of each pooled linear memory kept resident between calls, reset from the copy-on-write
/// image (only the dirty pages, with PAGEMAP_SCAN) rather than released. 64 MiB saved 2-4% of a
/// JavaScript or Python call but can keep that much per slot after the calls end; 0 cost 30-50%
/// (docs/wasm-speed.md).
const KEEP_RESIDENT: usize = 4 << 20;

/// The sandbox: an engine configured for fuel and epoch interruption, and the directory where
/// compiled plugins are cached. Cheap to clone.
#[derive(Clone)]
pub struct Sandbox {
    pub(crate) engine: Engine,
    linker: Arc<Linker<CallState>>,
    pub(crate) cache_dir: Arc<PathBuf>,
    /// The cache's key, read or created on first use (K4).
    pub(crate) cache_key: Arc<std::sync::OnceLock<Option<crate::wasm::cache_key::CacheKey>>>,
    /// Components `compile_many` compiled in this process.
    pub(crate) compiled: crate::wasm::compiled::CompiledMemo,
    /// Whether a tool component that can be is snapshotted after its warm-up (`list`, then its
    /// correct examples) when it is compiled (`snapshot.rs`); on unless a bench compares
    /// without.
    pub(crate) snapshots: bool,
}

impl Sandbox {
    /// Builds the engine, preferring the pooling allocator (cheaper per call; docs/wasm-speed.md measures it) and
    /// falling back to on-demand allocation where the pool cannot reserve its address space.
    /// `cache_dir` holds compiled code and must never be mounted into a plugin.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Result<Sandbox, LoadError> {
        let engine = match Engine::new(&config(true)) {
            Ok(engine) => engine,
            Err(pooled) => {
                tracing::warn!("pooling allocator unavailable ({pooled:#}); allocating on demand");
                Engine::new(&config(false)).map_err(|e| LoadError::Engine(format!("{e:?}")))?
            }
        };
        let linker = ticking_with_linker(&engine)?;
        Ok(Sandbox {
            engine,
            linker,
            cache_dir: Arc::new(cache_dir.into()),
            cache_key: Arc::default(),
            compiled: Arc::default(),
            snapshots: true,
        })
    }

    /// This sandbox, compiling every component as it is, never its snapshot
    /// (to measure what a snapshot saves). It keeps its own compiled components in memory.
    pub fn without_snapshots(mut self) -> Sandbox {
        self.snapshots = false;
        self.compiled = Arc::default();
        self
    }

    /// A sandbox for a snapshot's warm-up (`snapshot.rs`), which compiles the instrumented
    /// component, runs `list` and the examples in it once, and throws it away: an engine of its
    /// own that compiles without Cranelift's optimisations (a quarter less compile time for a
    /// JavaScript tool, docs/wasm-speed.md), allocates on demand (no second pool's address
    /// space) and has its own linker and epoch ticker. Fuel, epochs and the component model are
    /// set as in the sandbox's engine, so the warm-up's limits hold the same way; fuel is counted
    /// per WebAssembly instruction before any optimisation, so it runs out at the same point.
    pub(crate) fn for_warm_up(&self) -> Result<Sandbox, LoadError> {
        let mut cfg = config(false);
        cfg.cranelift_opt_level(OptLevel::None);
        let engine = Engine::new(&cfg).map_err(|e| LoadError::Engine(format!("{e:?}")))?;
        let linker = ticking_with_linker(&engine)?;
        Ok(Sandbox {
            engine,
            linker,
            ..self.clone()
        })
    }

    pub(crate) fn linker(&self) -> &Linker<CallState> {
        &self.linker
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn cache_dir(&self) -> &std::path::Path {
        &self.cache_dir
    }
}

fn config(pooling: bool) -> Config {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(true);
    if pooling {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(256)
            .total_core_instances(1024)
            .total_memories(256)
            .total_tables(512)
            .max_memories_per_component(CallLimiter::MAX_MEMORIES as u32)
            .max_tables_per_component(CallLimiter::MAX_TABLES as u32)
            .max_memory_size(4 << 30)
            // Reused slots keep their low pages resident and are reset with memset (only the
            // dirty pages, where the kernel has PAGEMAP_SCAN) instead of madvise, so a call
            // that reads a large file does not pay a page fault per page again.
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(64 << 10)
            .pagemap_scan(Enabled::Auto);
        cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    cfg
}

/// Starts `engine`'s epoch ticker and makes its linker: what every engine of a sandbox needs
/// before it runs anything.
fn ticking_with_linker(engine: &Engine) -> Result<Arc<Linker<CallState>>, LoadError> {
    start_ticker(engine)
        .map_err(|e| LoadError::Engine(format!("cannot start the epoch ticker thread: {e}")))?;
    let linker = make_linker(engine).map_err(|e| LoadError::Engine(format!("{e:?}")))?;
    Ok(Arc::new(linker))
}

/// A thread that advances the epoch until the engine is dropped.
fn start_ticker(engine: &Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("paddock-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::{Instance, Module, Store, Trap};

    /// Runs a loop that never ends in a store of `engine` with `fuel` and an epoch deadline of
    /// `ticks`, and returns the trap that stopped it.
    fn spin(engine: &Engine, fuel: u64, ticks: u64) -> Trap {
        let wasm = wat::parse_str(r#"(module (func (export "spin") (loop br 0)))"#).unwrap();
        let module = Module::new(engine, wasm).unwrap();
        let mut store = Store::new(engine, ());
        store.set_fuel(fuel).unwrap();
        store.set_epoch_deadline(ticks);
        let instance = Instance::new(&mut store, &module, &[]).unwrap();
        let spin = instance
            .get_typed_func::<(), ()>(&mut store, "spin")
            .unwrap();
        let stopped = spin.call(&mut store, ()).unwrap_err();
        *stopped.downcast_ref::<Trap>().expect("a trap")
    }

    /// The warm-up runs a stranger's code: its engine must stop it as the sandbox's does, by
    /// fuel and by the deadline its own ticker drives.
    #[test]
    fn the_warm_up_engine_stops_code_by_fuel_and_by_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path().join("cache")).unwrap();
        let warm_up = sandbox.for_warm_up().unwrap();
        assert!(!Engine::same(sandbox.engine(), warm_up.engine()));
        for engine in [sandbox.engine(), warm_up.engine()] {
            assert_eq!(spin(engine, 10_000, u64::MAX / 2), Trap::OutOfFuel);
            assert_eq!(spin(engine, 1 << 62, 20), Trap::Interrupt);
        }
    }
}
