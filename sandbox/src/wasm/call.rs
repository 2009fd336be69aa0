//! One call in a fresh store (S2-S7, K2, K3): mounts opened from the handles held since the
//! preset was resolved (all read-only for read-only tools), the filesystem behind the
//! protected-path guard, fuel, an epoch
//! deadline, cancellation, summed memory caps, capped stdio, and every way a plugin can fail
//! turned into a `ToolError` with its own code.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::fs::guard::FsGuard;
use crate::fs::mount::MountHandle;
use crate::grant::{Grant, Mount, MountMode};
use crate::wasm::bindings::{ToolPluginPre, types};
use crate::wasm::engine::Sandbox;
use crate::wasm::limits::CallLimiter;
use crate::wasm::outcome::{CallReport, run_to_end};
use crate::wasm::plugin::Plugin;
use crate::wasm::stdio::CappedPipe;
use crate::wasm::store::{CallState, Prepared, Stop, code_for_call, truncate_for_message};
use paddock_types::contract::{ErrorCode, ToolError, ToolOutput, ToolResult};

/// The environment variable that carries a call's output budget (the SDK's `output_budget`).
pub const OUTPUT_BYTES_VAR: &str = "PADDOCK_OUTPUT_BYTES";
/// The environment variable that carries a call's fuel (the SDK's `fuel_budget`).
pub const FUEL_VAR: &str = "PADDOCK_FUEL";

/// The mount's held directory, refused when its name now refers to something else (K3).
fn held_mount(mount: &Mount) -> Result<std::sync::Arc<MountHandle>, ToolError> {
    let refuse = |why: String| {
        ToolError::new(
            ErrorCode::Host,
            format!(
                "mount {} -> {} no longer refers to the directory opened when the session \
                 started: {why}; the call is refused so that it cannot reach what now stands \
                 there. Put the directory back, or start a new session to mount what is there now",
                mount.host.display(),
                mount.guest
            ),
        )
    };
    let handle = mount
        .held()
        .map_err(|e| refuse(format!("it cannot be opened ({e})")))?;
    handle.verify().map_err(refuse)?;
    Ok(handle)
}

/// What the plugin sees of the host: capped stdio, the few variables below, and the mounts
/// (all read-only for a read-only tool); with the host directories behind them, the guard's
/// roots.
fn wasi_context(
    grant: &Grant,
    read_only: bool,
    stdout: &CappedPipe,
    stderr: &CappedPipe,
) -> Result<(WasiCtx, Vec<PathBuf>), ToolError> {
    let limits = &grant.limits;
    let mut roots = Vec::with_capacity(grant.mounts.len());
    let mut wasi = WasiCtxBuilder::new();
    // No arguments, sockets or name lookup (S6): the builder starts empty and
    // wasmtime 48 denies TCP and UDP by default.
    wasi.stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_blocking_current_thread(true);
    // The only variables a tool sees: the output budget the host will hold its result to,
    // so a tool that pages itself stops on a line within it, the call's fuel, so a tool
    // sizes its share of the work to it (docs/output-paging.md), and the call's tag, which
    // names the temporary files a write makes so `resume` can remove those a crash left
    // (`leftovers.rs`).
    if let Some(bytes) = limits.output_bytes {
        wasi.env(OUTPUT_BYTES_VAR, bytes.to_string());
    }
    if let Some(fuel) = limits.fuel {
        wasi.env(FUEL_VAR, fuel.to_string());
    }
    if let Some(tag) = &grant.call_tag {
        wasi.env(crate::leftovers::CALL_TAG_VAR, tag);
    }
    for mount in &grant.mounts {
        let perms = if read_only || mount.mode == MountMode::Ro {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        let handle = held_mount(mount)?;
        roots.push(handle.path().to_path_buf());
        // The held directory itself, through the kernel's link to it (K3).
        wasi.preopened_dir(handle.proc_path(), &mount.guest, perms)
            .map_err(|e| {
                // The held directory is reached through /proc/self/fd: without /proc (a bare
                // chroot, an image that does not mount it) every mount fails here.
                let fix = if std::path::Path::new("/proc/self/fd").is_dir() {
                    "check the preset's mounts"
                } else {
                    "/proc is not mounted in this root, and paddock reaches the directories it                      holds through /proc/self/fd: mount proc (`mount -t proc proc /proc`, or run                      in a container that has it)"
                };
                ToolError::new(
                    ErrorCode::Host,
                    format!(
                        "cannot mount {} at {}: {e:#}; {fix}",
                        mount.host.display(),
                        mount.guest
                    ),
                )
            })?;
    }
    Ok((wasi.build(), roots))
}

/// What the host keeps for the call: its limits, deadline and cancellation, the plugin's
/// grants (its mounts read-only for a read-only tool), and the guard over `roots`.
fn call_state(
    plugin: &str,
    grant: &Grant,
    read_only: bool,
    wasi: WasiCtx,
    roots: Vec<PathBuf>,
    cancel: &CancellationToken,
) -> CallState {
    let limits = &grant.limits;
    CallState {
        wasi,
        table: ResourceTable::new(),
        limiter: CallLimiter::new(limits.memory_bytes),
        deadline: Instant::now() + limits.timeout,
        cancel: cancel.clone(),
        stop: None,
        logs: Vec::new(),
        log_bytes: 0,
        plugin: plugin.to_string(),
        mounts: grant
            .mounts
            .iter()
            .map(|mount| Mount {
                mode: if read_only { MountMode::Ro } else { mount.mode },
                ..mount.clone()
            })
            .collect(),
        protect: grant.protect.clone(),
        exec: grant.exec.clone(),
        http: grant.http.clone(),
        output_bytes: limits.output_bytes,
        spill: grant.spill.clone(),
        admitted_command: grant.admitted_command.clone(),
        follow_up: grant.follow_up,
        session: grant.session.clone(),
        live_output: grant.live_output.clone(),
        fs_guard: Arc::new(FsGuard::new(roots, grant.protect.clone())),
    }
}

impl Sandbox {
    /// A fresh store for one call of `plugin` under `grant`: its WASI context, its state, and
    /// the fuel and epoch deadline that stop it.
    pub(crate) fn prepare_store(
        &self,
        plugin: &str,
        grant: &Grant,
        read_only: bool,
        cancel: &CancellationToken,
    ) -> Result<Prepared, ToolError> {
        let limits = &grant.limits;
        let stdout = CappedPipe::new(limits.stdio_bytes);
        let stderr = CappedPipe::new(limits.stdio_bytes);
        let (wasi, roots) = wasi_context(grant, read_only, &stdout, &stderr)?;
        let state = call_state(plugin, grant, read_only, wasi, roots, cancel);
        let store = self.new_store(state, limits.fuel)?;
        Ok(Prepared {
            store,
            stdout,
            stderr,
            fuel: limits.fuel,
            timeout: limits.timeout,
        })
    }

    /// A store for `state` with its memory limiter, `fuel` (all there is when none), and an
    /// epoch deadline that stops it when the call is cancelled or past its deadline.
    fn new_store(
        &self,
        state: CallState,
        fuel: Option<u64>,
    ) -> Result<Store<CallState>, ToolError> {
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        // A store starts with no fuel; "fuel off" is the largest budget there is.
        store
            .set_fuel(fuel.unwrap_or(u64::MAX))
            .map_err(|e| ToolError::new(ErrorCode::Host, format!("cannot set fuel: {e:#}")))?;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut cx| {
            let state = cx.data_mut();
            if state.cancel.is_cancelled() {
                state.stop = Some(Stop::Cancelled);
                return Ok(UpdateDeadline::Interrupt);
            }
            if Instant::now() >= state.deadline {
                state.stop = Some(Stop::Deadline);
                return Ok(UpdateDeadline::Interrupt);
            }
            // Yield so that other calls on this thread, and the host's own select, make progress.
            Ok(UpdateDeadline::Yield(1))
        });
        Ok(store)
    }

    pub(crate) async fn run_list(
        &self,
        pre: &ToolPluginPre<CallState>,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> Result<Vec<types::ToolSpec>, ToolError> {
        let prepared = self.prepare_store("", grant, true, cancel)?;
        let list = async |store: &mut Store<CallState>| {
            let plugin = pre.instantiate_async(&mut *store).await?;
            plugin.paddock_plugin_tools().call_list(store).await
        };
        run_to_end(prepared, list, Ok).await.0
    }

    /// Runs tool `tool` of `plugin` with `args` under `grant`. Never fails: every outcome,
    /// including the plugin misbehaving, is a `ToolResult` in the report.
    pub async fn call(
        &self,
        plugin: &Plugin,
        tool: &str,
        args: &str,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> CallReport {
        let started = Instant::now();
        let pre = match code_for_call(&plugin.name, &plugin.pre, cancel).await {
            Ok(pre) => pre,
            Err(error) => return CallReport::failed(error, started),
        };
        let read_only = plugin
            .tool(tool)
            .is_some_and(|spec| spec.meta.is_read_only());
        let prepared = match self.prepare_store(&plugin.name, grant, read_only, cancel) {
            Ok(prepared) => prepared,
            Err(error) => return CallReport::failed(error, started),
        };
        let run = async |store: &mut Store<CallState>| {
            let instance = pre.instantiate_async(&mut *store).await?;
            instance
                .paddock_plugin_tools()
                .call_call(store, tool, args)
                .await
        };
        // Only INVALID_ARGS keeps its meaning; any other code a plugin sends stays the
        // plugin's own, so it cannot pose as a runtime condition such as CANCELLED.
        let code = |code: &str| match code {
            "INVALID_ARGS" => ErrorCode::InvalidArgs,
            other => ErrorCode::Plugin(truncate_for_message(other)),
        };
        let (result, mut report) =
            run_to_end(prepared, run, |returned| result_from_wit(returned, code)).await;
        report.result = result;
        report.elapsed = started.elapsed();
        report
    }
}

/// A result a plugin or hook returned, with its error code read by `code`.
pub(crate) fn result_from_wit(
    returned: Result<types::ToolOutput, types::ToolError>,
    code: impl FnOnce(&str) -> ErrorCode,
) -> ToolResult {
    match returned {
        Ok(out) => Ok(ToolOutput {
            content: out.content,
            truncated: out.truncated,
            continuation: out.continuation,
        }),
        Err(err) => Err(ToolError {
            code: code(&err.code),
            message: err.message,
            retryable: err.retryable,
        }),
    }
}
