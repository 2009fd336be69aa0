//! What one call's store holds and how its code is linked: the per-call state (WASI context,
//! memory limiter, deadline, cancellation, logs, the grant's mounts and capabilities, the
//! filesystem guard), the one linker every plugin and hook is prepared against, and a
//! plugin's code awaited for a call. Nothing here knows the sandbox that makes them.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::fs::guard::FsGuard;
use crate::fs::guard_host::GuardedFs;
use crate::fs::guard_pin::GuardedView;
use crate::fs::protect::Protect;
use crate::grant::{ExecGrant, HttpGrant, LiveOutput, Mount, SessionState, SpillDir};
use crate::wasm::bindings::{ToolPlugin, hook, log, types};
use crate::wasm::limits::CallLimiter;
use crate::wasm::stdio::CappedPipe;
use paddock_types::contract::{ErrorCode, ToolError};
use paddock_types::text::prefix_bytes;

/// Most bytes of `log` lines kept per call.
const LOG_CAP: usize = 64 << 10;

/// Why the host stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Cancelled,
    Deadline,
}

/// One line a plugin logged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogLine {
    pub level: &'static str,
    pub message: String,
}

/// The store's data for one call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: CallLimiter,
    pub(crate) deadline: Instant,
    pub(crate) cancel: CancellationToken,
    pub(crate) stop: Option<Stop>,
    pub(crate) logs: Vec<LogLine>,
    pub(crate) log_bytes: usize,
    /// For the capabilities: who is calling, what it may do, and where.
    pub(crate) plugin: String,
    /// The call's mounts with their effective modes (all read-only for a read-only tool):
    /// programs started through `exec` get exactly these.
    pub(crate) mounts: Vec<Mount>,
    pub(crate) protect: Protect,
    pub(crate) exec: Option<ExecGrant>,
    pub(crate) http: Option<HttpGrant>,
    /// The call's output budget, for a capability that cuts its own output (the shell).
    pub(crate) output_bytes: Option<u64>,
    pub(crate) spill: Option<SpillDir>,
    pub(crate) admitted_command: Option<String>,
    pub(crate) follow_up: bool,
    pub(crate) session: SessionState,
    pub(crate) live_output: Option<LiveOutput>,
    /// Protected paths in the mounts, checked on every filesystem change (K2).
    pub(crate) fs_guard: Arc<FsGuard>,
}

impl CallState {
    /// The filesystem as the guest sees it: wasmtime-wasi's, behind the guard.
    fn guarded_fs(&mut self) -> GuardedView<'_> {
        let guard = self.fs_guard.clone();
        GuardedView {
            inner: self.filesystem(),
            guard,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String) {
        if self.log_bytes >= LOG_CAP {
            return;
        }
        self.log_bytes += message.len();
        let level = match level {
            log::Level::Trace => "trace",
            log::Level::Debug => "debug",
            log::Level::Info => "info",
            log::Level::Warn => "warn",
            log::Level::Error => "error",
        };
        self.logs.push(LogLine {
            level,
            message: truncate_for_message(&message),
        });
    }
}

impl types::Host for CallState {}

impl hook::hook_types::Host for CallState {}

/// The linker every plugin and hook is prepared against: WASI 0.2, `log`, the hook types and
/// the capabilities. Which capability a plugin may import is checked against its grant
/// before linking (see `plugin::check_imports`); the allow-lists are checked per request.
pub(crate) fn make_linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // `wasi:filesystem/types` again, through the guard (K2): same resource type, every
    // function replaced.
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::filesystem::types::add_to_linker::<CallState, GuardedFs>(
        &mut linker,
        CallState::guarded_fs,
    )?;
    linker.allow_shadowing(false);
    ToolPlugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
    hook::hook_types::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
    Ok(linker)
}

pub(crate) struct Prepared {
    pub(crate) store: Store<CallState>,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
    pub(crate) fuel: Option<u64>,
    /// The call's deadline, counted from when the store was made.
    pub(crate) timeout: std::time::Duration,
}

/// A plugin's or hook's linked code, waiting for its compile if it was deferred (S8). The
/// wait is outside the call's deadline (the call has not started) but not outside its
/// cancellation; a load that failed fails the call and nothing runs.
pub(crate) async fn code_for_call<T: Clone + Send + Sync + 'static>(
    name: &str,
    code: &crate::wasm::deferred::Deferred<T>,
    cancel: &CancellationToken,
) -> Result<T, ToolError> {
    tokio::select! {
        biased;
        ready = code.get() => ready.map_err(|e| {
            ToolError::new(
                ErrorCode::BadPlugin,
                format!("`{name}` could not be loaded, so nothing ran: {e}"),
            )
        }),
        () = cancel.cancelled() => Err(ToolError::new(
            ErrorCode::Cancelled,
            format!("cancelled while `{name}` was still compiling; nothing ran"),
        )),
    }
}

/// Plugin-supplied text quoted in a message is cut, so a hostile name cannot flood the log.
pub(crate) fn truncate_for_message(text: &str) -> String {
    let head = prefix_bytes(text, 200);
    if head.len() == text.len() {
        return text.to_string();
    }
    format!("{head}… ({} bytes)", text.len())
}
