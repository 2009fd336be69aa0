//! A tool component's snapshot after its warm-up (S8, issue 43; docs/wasm-speed.md): one
//! `list` call, then one call of each example its tools declare correct. What a JavaScript
//! tool's call spends most of its time on is its language runtime setting up, in every fresh
//! store, what the component's build-time snapshot did not hold yet (the bindings' classes,
//! the functions a call parses, the paths a call through the component's export takes).
//! Running the warm-up once and keeping the memory it leaves (Wizer, as wasmtime ships it)
//! makes that set-up part of the component's image, so each call starts from it: a fresh
//! store per call stays, and nothing a call does reaches the next.
//!
//! Only a component whose every import is `paddock:plugin/log` or `paddock:plugin/types` is
//! snapshotted (what `plugin new`'s JavaScript build makes). With no WASI import and no
//! capability, the install-time store has nothing a snapshot could keep and a later call
//! could find: no environment variable, clock reading, random seed, resource handle or mount.
//! The examples are the author's own text, read from the author's own `list`: no model, no
//! user and no repository has a say in them. What the snapshot holds is then what the
//! author's own bytes compute from nothing, which they could have shipped as their image in
//! the first place. The warm-up runs under the limits of the load's own `list` call, in a
//! store of its own.
//!
//! The snapshot is derived from the author's exact bytes by this engine: it is compiled and
//! kept in the authenticated cache under those bytes' hash (`cache.rs`), like compiled code,
//! so the store and the lock go on hashing and pinning what the author published. When an
//! example traps (runs out of fuel or time, or fails in the runtime itself), the snapshot is
//! taken after `list` alone, in a fresh store; a component whose `list` traps, or that Wizer
//! refuses, is compiled as it is.

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Component, Instance, Lift, WasmList};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use crate::grant::Grant;
use crate::wasm::bindings::ToolPlugin;
use crate::wasm::engine::Sandbox;
use crate::wasm::limits::list_limits;
use crate::wasm::outcome::run_to_end;
use crate::wasm::segments::merge_data_segments;
use crate::wasm::store::CallState;
use paddock_types::text::sanitize;

/// Named in the cache entry of a snapshot; changed whenever what a snapshot holds changes, so
/// that entries made the old way are not used.
pub(crate) const SNAPSHOT_REVISION: &str = "after-examples-1";

/// The imports a snapshotted component may have (each with any version).
const SNAPSHOT_IMPORTS: [&str; 2] = ["paddock:plugin/log@", "paddock:plugin/types@"];

/// The export every tool component has.
const TOOLS_EXPORT: &str = "paddock:plugin/tools@";

/// Whether `wasm` is a tool component that is snapshotted after `list`: it exports the tools
/// interface and imports nothing but `log` and `types`. Read from the component's own
/// top-level sections, before anything is compiled; bytes that do not parse are not.
pub(crate) fn takes_snapshot(wasm: &[u8]) -> bool {
    use wasmparser::{Chunk, Payload};
    let mut parser = wasmparser::Parser::new(0);
    let mut data = wasm;
    let mut exports_tools = false;
    loop {
        let Ok(Chunk::Parsed { payload, consumed }) = parser.parse(data, true) else {
            return false;
        };
        data = &data[consumed..];
        match payload {
            // A nested module or component is stepped over unread: only the component's own
            // imports and exports count.
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => match data.get(unchecked_range.len()..) {
                Some(rest) => data = rest,
                None => return false,
            },
            Payload::ComponentImportSection(imports) => {
                for import in imports {
                    let Ok(import) = import else {
                        return false;
                    };
                    let name = import.name.name;
                    if !SNAPSHOT_IMPORTS.iter().any(|ok| name.starts_with(ok)) {
                        return false;
                    }
                }
            }
            Payload::ComponentExportSection(exports) => {
                for export in exports {
                    let Ok(export) = export else {
                        return false;
                    };
                    exports_tools |= export.name.name.starts_with(TOOLS_EXPORT);
                }
            }
            Payload::End(_) => return exports_tools,
            _ => {}
        }
    }
}

impl Sandbox {
    /// The component `wasm` as it stands after one `list` call and one call of each example
    /// its tools declare correct, or why there is none. Blocks the calling thread (as a
    /// compile does): the calls run on a thread of their own.
    pub(crate) fn snapshot_after_warm_up(
        &self,
        origin: &str,
        wasm: &[u8],
    ) -> Result<Vec<u8>, String> {
        let wizer = Wizer::new();
        // Wizer parses bytes a stranger wrote: a panic in it is a refusal, not the host's end
        // (the snapshot itself is taken on a thread of its own, below, for the same reason).
        let instrumented = std::panic::catch_unwind(|| wizer.instrument_component(wasm))
            .map_err(|_| "Wizer panicked instrumenting it".to_string())?;
        let (cx, instrumented) =
            instrumented.map_err(|e| format!("Wizer cannot instrument it: {e:#}"))?;
        let component = Component::new(&self.engine, &instrumented)
            .map_err(|e| format!("its instrumented form does not compile: {e:#}"))?;
        // The imports again, as the engine reads them from what will run.
        let foreign = component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_string())
            .find(|name| !SNAPSHOT_IMPORTS.iter().any(|ok| name.starts_with(ok)));
        if let Some(name) = foreign {
            return Err(format!(
                "it imports `{name}`, whose state a snapshot could keep"
            ));
        }
        let pre = self
            .linker()
            .instantiate_pre(&component)
            .map_err(|e| format!("its instrumented form does not link: {e:#}"))?;
        let snapshot = |examples: Examples| {
            let grant = Grant {
                limits: list_limits(),
                ..Grant::default()
            };
            let prepared = self
                .prepare_store(origin, &grant, true, &CancellationToken::new())
                .map_err(|e| e.message)?;
            let take = async |store: &mut Store<CallState>| {
                let instance = pre.instantiate_async(&mut *store).await?;
                let plugin = ToolPlugin::new(&mut *store, &instance)?;
                let tools = plugin.paddock_plugin_tools();
                let specs = tools.call_list(&mut *store).await?;
                if examples == Examples::Run {
                    for spec in &specs {
                        for example in spec.examples.iter().filter(|e| e.correct) {
                            // What the example returns, `ok` or `err`, is the tool's own
                            // business; only a trap (the instance is then unusable) matters.
                            if let Err(trap) = tools
                                .call_call(&mut *store, &spec.name, &example.args)
                                .await
                            {
                                tracing::info!(
                                    "plugin {origin}: the example `{}` of `{}` stopped \
                                     ({trap:#}); snapshotting after `list` alone",
                                    sanitize(&example.args),
                                    sanitize(&spec.name)
                                );
                                return Ok(None);
                            }
                        }
                    }
                }
                let mut state = SnapshotState {
                    store,
                    instance,
                    failed: None,
                };
                let bytes = wizer.snapshot_component(&cx, &mut state).await?;
                match state.failed {
                    Some(e) => Err(e),
                    None => Ok(Some(bytes)),
                }
            };
            on_a_thread_of_its_own(async {
                let (result, _report) = run_to_end(prepared, take, Ok).await;
                result.map_err(|e| e.message)
            })
        };
        match snapshot(Examples::Run)? {
            Some(bytes) => Ok(bytes),
            // An example trapped: the state it left is not the author's to keep, so `list`
            // runs again in a fresh store and the snapshot is taken after it alone.
            None => snapshot(Examples::Skip)?
                .ok_or_else(|| "no snapshot after `list` alone".to_string()),
        }
    }
}

/// Whether a snapshot's warm-up calls the tools' correct examples after `list`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Examples {
    Run,
    Skip,
}

/// Runs `work` to its end on a thread and a runtime of its own: a compile may be asked for
/// from a runtime's worker, which cannot block on a future itself. A panic is a refusal.
fn on_a_thread_of_its_own<T: Send>(
    work: impl Future<Output = Result<T, String>> + Send,
) -> Result<T, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .map_err(|e| format!("cannot start a runtime for it: {e}"))?
                    .block_on(work)
            })
            .join()
            .unwrap_or_else(|_| Err("Wizer panicked on it".to_string()))
    })
}

impl Sandbox {
    /// Compiles a snapshot with its data segments merged (`segments.rs`), or as Wizer wrote
    /// it when the merged one does not compile.
    pub(crate) fn compile_snapshot(
        &self,
        origin: &str,
        snapshot: &[u8],
    ) -> Result<Vec<u8>, String> {
        if let Some(merged) = merge_data_segments(snapshot) {
            match self.engine.precompile_component(&merged) {
                Ok(compiled) => return Ok(compiled),
                Err(e) => tracing::info!(
                    "plugin {origin}: its snapshot with merged data segments does not compile \
                     ({e:#}); compiling it as Wizer wrote it"
                ),
            }
        }
        self.engine
            .precompile_component(snapshot)
            .map_err(|e| format!("its snapshot does not compile: {e:#}"))
    }
}

/// What Wizer reads of the instrumented instance: each global and memory, through the
/// accessors instrumentation exported. A failed read is kept, and the snapshot discarded.
struct SnapshotState<'a> {
    store: &'a mut Store<CallState>,
    instance: Instance,
    failed: Option<wasmtime::Error>,
}

impl SnapshotState<'_> {
    async fn read<R: Lift + Send + Sync + 'static, V: Default + Send>(
        &mut self,
        instance: &str,
        func: &str,
        use_value: impl FnOnce(&Store<CallState>, R) -> V + Send,
    ) -> V {
        if self.failed.is_some() {
            return V::default();
        }
        let export = self
            .instance
            .get_export(&mut *self.store, None, instance)
            .and_then(|(_, parent)| {
                self.instance
                    .get_export(&mut *self.store, Some(&parent), func)
            })
            .map(|(_, export)| export);
        let Some(export) = export else {
            self.failed = Some(wasmtime::format_err!(
                "the instrumented component has no accessor {instance}#{func}"
            ));
            return V::default();
        };
        let typed = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *self.store, export);
        let returned = match typed {
            Ok(func) => func.call_async(&mut *self.store, ()).await,
            Err(e) => Err(e),
        };
        match returned {
            Ok((value,)) => use_value(self.store, value),
            Err(e) => {
                self.failed = Some(e);
                V::default()
            }
        }
    }
}

impl ComponentInstanceState for SnapshotState<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        // `contents` is called exactly once, with no bytes when the read failed.
        let mut contents = Some(contents);
        self.read(instance, func, |store, list: WasmList<u8>| {
            if let Some(contents) = contents.take() {
                contents(list.as_le_slice(store));
            }
        })
        .await;
        if let Some(contents) = contents.take() {
            contents(&[]);
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.read(instance, func, |_, value| value).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.read(instance, func, |_, value| value).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.read(instance, func, |_, value: f32| value.to_bits())
            .await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.read(instance, func, |_, value: f64| value.to_bits())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::takes_snapshot;
    use crate::wasm::compiled::CacheUse;
    use crate::wasm::engine::Sandbox;

    fn component(imports: &[&str], export: &str, nested: &str) -> Vec<u8> {
        let imports: String = imports
            .iter()
            .map(|name| format!("(import \"{name}\" (instance))"))
            .collect();
        wat::parse_str(format!(
            "(component {imports} {nested} (instance $tools) (export \"{export}\" (instance $tools)))"
        ))
        .expect("valid WAT")
    }

    const LOG: &str = "paddock:plugin/log@0.1.0";
    const TYPES: &str = "paddock:plugin/types@0.1.0";
    const TOOLS: &str = "paddock:plugin/tools@0.1.0";

    #[test]
    fn a_tool_that_imports_only_log_and_types_is_snapshotted() {
        assert!(takes_snapshot(&component(&[LOG, TYPES], TOOLS, "")));
        assert!(takes_snapshot(&component(&[], TOOLS, "")));
    }

    #[test]
    fn any_other_import_or_no_tools_export_is_not() {
        for other in [
            "wasi:cli/environment@0.2.0",
            "wasi:clocks/wall-clock@0.2.0",
            "wasi:random/random@0.2.0",
            "paddock:plugin/exec@0.1.0",
            "paddock:plugin/http@0.1.0",
            "paddock:plugin/logger@0.1.0",
        ] {
            assert!(
                !takes_snapshot(&component(&[LOG, other], TOOLS, "")),
                "{other}"
            );
        }
        assert!(!takes_snapshot(&component(
            &[LOG],
            "paddock:plugin/hooks@0.1.0",
            ""
        )));
    }

    #[test]
    fn only_the_components_own_imports_count_and_bad_bytes_are_not_snapshotted() {
        // A nested module's imports are satisfied inside the component, not by the host.
        let nested = "(core module (import \"wasi_snapshot_preview1\" \"fd_write\" (func)))";
        assert!(takes_snapshot(&component(&[LOG], TOOLS, nested)));
        let nested = "(component (import \"wasi:random/random@0.2.0\" (instance)))";
        assert!(takes_snapshot(&component(&[LOG], TOOLS, nested)));

        let whole = component(&[LOG], TOOLS, "");
        assert!(!takes_snapshot(&whole[..whole.len() - 3]));
        assert!(!takes_snapshot(b"\0asm\x0d\0\x01\0garbage"));
    }

    /// Wizer refuses a component that instantiates one module twice: such a tool is compiled
    /// as it is, kept under the snapshot's name, and not tried again at the next load.
    #[test]
    fn a_component_wizer_refuses_is_compiled_as_it_is_once() {
        let nested = "(core module $m) (core instance (instantiate $m)) \
                      (core instance (instantiate $m))";
        let wasm = component(&[LOG], TOOLS, nested);
        assert!(takes_snapshot(&wasm));
        let cache = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(cache.path()).unwrap();
        let why = sandbox.snapshot_after_warm_up("twice", &wasm).unwrap_err();
        assert!(why.contains("at most once"), "{why}");

        let sha256 = paddock_types::stamp::sha256_hex(&wasm);
        let (_, used) = sandbox
            .compile_disk_cached("twice", &wasm, &sha256)
            .unwrap();
        assert_eq!(used, CacheUse::Compiled);
        assert!(sandbox.snapshot_entry_path(&sha256).is_file());
        assert!(!sandbox.cache_entry_path(&sha256).exists());
        let again = Sandbox::new(cache.path()).unwrap();
        let (_, used) = again.compile_disk_cached("twice", &wasm, &sha256).unwrap();
        assert_eq!(used, CacheUse::Hit);
    }
}
