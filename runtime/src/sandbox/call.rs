//! One call in a fresh store (S2-S7): mounts (all read-only for read-only tools), fuel, an epoch
//! deadline, cancellation, summed memory caps, capped stdio, and every way a plugin can fail
//! turned into a `ToolError` with its own code.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::{ToolPlugin, ToolPluginPre, hook, log, types};
use super::engine::Sandbox;
use super::grant::{ExecGrant, Grant, HttpGrant, Mount, MountMode};
use super::limits::CallLimiter;
use super::plugin::{Plugin, truncate_for_message};
use super::stdio::{CappedPipe, Captured};
use crate::contract::{ErrorCode, ToolError, ToolOutput, ToolResult};

/// How long past its deadline a call blocked in a host call (a guest `sleep`, say) may take
/// before the host stops waiting for it.
const DEADLINE_GRACE: Duration = Duration::from_millis(50);
/// Most bytes of `log` lines kept per call.
const LOG_CAP: usize = 64 << 10;

/// Why the host stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
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
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: CallLimiter,
    pub(super) deadline: Instant,
    pub(super) cancel: CancellationToken,
    stop: Option<Stop>,
    logs: Vec<LogLine>,
    log_bytes: usize,
    /// For the capabilities: who is calling, what it may do, and where.
    pub(super) plugin: String,
    pub(super) mounts: Vec<Mount>,
    pub(super) exec: Option<ExecGrant>,
    pub(super) http: Option<HttpGrant>,
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
pub(super) fn make_linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    ToolPlugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
    hook::hook_types::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// What a call produced, with what it printed and logged.
#[derive(Debug)]
pub struct CallReport {
    pub result: ToolResult,
    pub stdout: Captured,
    pub stderr: Captured,
    pub logs: Vec<LogLine>,
    pub fuel_used: Option<u64>,
    pub elapsed: Duration,
}

/// The raw end of a call, before it becomes a `ToolResult`.
pub enum CallOutcome<T> {
    Returned(T),
    Failed(wasmtime::Error),
    Cancelled,
    TimedOut,
}

pub(super) struct Prepared {
    pub(super) store: Store<CallState>,
    stdout: CappedPipe,
    stderr: CappedPipe,
    fuel: Option<u64>,
}

impl Sandbox {
    pub(super) fn prepare_store(
        &self,
        plugin: &str,
        grant: &Grant,
        read_only: bool,
        cancel: &CancellationToken,
    ) -> Result<Prepared, ToolError> {
        let limits = &grant.limits;
        let stdout = CappedPipe::new(limits.stdio_bytes);
        let stderr = CappedPipe::new(limits.stdio_bytes);
        let mut wasi = WasiCtxBuilder::new();
        // No environment, arguments, sockets or name lookup (S6): the builder starts empty and
        // wasmtime 48 denies TCP and UDP by default.
        wasi.stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_blocking_current_thread(true);
        for mount in &grant.mounts {
            let perms = if read_only || mount.mode == MountMode::Ro {
                FsPerms::ReadOnly
            } else {
                FsPerms::ReadWrite
            };
            wasi.preopened_dir(&mount.host, &mount.guest, perms)
                .map_err(|e| {
                    ToolError::new(
                        ErrorCode::Host,
                        format!(
                            "cannot mount {} at {}: {e:#}; check the preset's mounts",
                            mount.host.display(),
                            mount.guest
                        ),
                    )
                })?;
        }
        let state = CallState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: CallLimiter::new(limits.memory_bytes),
            deadline: Instant::now() + limits.timeout,
            cancel: cancel.clone(),
            stop: None,
            logs: Vec::new(),
            log_bytes: 0,
            plugin: plugin.to_string(),
            mounts: grant.mounts.clone(),
            exec: grant.exec.clone(),
            http: grant.http.clone(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        // A store starts with no fuel; "fuel off" is the largest budget there is.
        store
            .set_fuel(limits.fuel.unwrap_or(u64::MAX))
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
        Ok(Prepared {
            store,
            stdout,
            stderr,
            fuel: limits.fuel,
        })
    }

    pub(super) async fn run_list(
        &self,
        pre: &ToolPluginPre<CallState>,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> Result<Vec<types::ToolSpec>, ToolError> {
        let mut prepared = self.prepare_store("", grant, true, cancel)?;
        let timeout = grant.limits.timeout;
        let outcome = {
            let store = &mut prepared.store;
            let run = async {
                let plugin = pre.instantiate_async(&mut *store).await?;
                plugin.paddock_plugin_tools().call_list(&mut *store).await
            };
            race(run, cancel, timeout).await
        };
        finish(prepared, outcome, timeout, Ok).0
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
        let read_only = plugin
            .tool(tool)
            .is_some_and(|spec| spec.meta.is_read_only());
        let mut prepared = match self.prepare_store(&plugin.name, grant, read_only, cancel) {
            Ok(prepared) => prepared,
            Err(error) => return CallReport::failed(error, started),
        };
        let timeout = grant.limits.timeout;
        let outcome = {
            let store = &mut prepared.store;
            let run = async {
                let instance = plugin.pre.instantiate_async(&mut *store).await?;
                instance
                    .paddock_plugin_tools()
                    .call_call(&mut *store, tool, args)
                    .await
            };
            race(run, cancel, timeout).await
        };
        let (result, mut report) = finish(prepared, outcome, timeout, |returned| match returned {
            Ok(out) => Ok(ToolOutput {
                content: out.content,
                truncated: out.truncated,
                continuation: out.continuation,
            }),
            Err(err) => Err(ToolError {
                // Only INVALID_ARGS keeps its meaning; any other code a plugin sends stays the
                // plugin's own, so it cannot pose as a runtime condition such as CANCELLED.
                code: match err.code.as_str() {
                    "INVALID_ARGS" => ErrorCode::InvalidArgs,
                    other => ErrorCode::Plugin(truncate_for_message(other)),
                },
                message: err.message,
                retryable: err.retryable,
            }),
        });
        report.result = result;
        report.elapsed = started.elapsed();
        report
    }
}

impl CallReport {
    fn failed(error: ToolError, started: Instant) -> CallReport {
        CallReport {
            result: Err(error),
            stdout: Captured::default(),
            stderr: Captured::default(),
            logs: Vec::new(),
            fuel_used: None,
            elapsed: started.elapsed(),
        }
    }
}

/// Runs `call` until it ends, the token is cancelled, or the deadline (plus grace) passes.
/// A call running wasm is stopped by the epoch callback; one blocked in a host call is
/// dropped here.
pub(super) async fn race<T>(
    call: impl Future<Output = wasmtime::Result<T>>,
    cancel: &CancellationToken,
    timeout: Duration,
) -> CallOutcome<T> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => CallOutcome::Cancelled,
        result = call => match result {
            Ok(value) => CallOutcome::Returned(value),
            Err(error) => CallOutcome::Failed(error),
        },
        _ = tokio::time::sleep(timeout + DEADLINE_GRACE) => CallOutcome::TimedOut,
    }
}

/// Turns the raw outcome into a result, reading the store for why a trap happened, and
/// gathers what the call printed and logged.
pub(super) fn finish<T, R>(
    prepared: Prepared,
    outcome: CallOutcome<T>,
    timeout: Duration,
    convert: impl FnOnce(T) -> Result<R, ToolError>,
) -> (Result<R, ToolError>, CallReport) {
    let Prepared {
        mut store,
        stdout,
        stderr,
        fuel,
    } = prepared;
    let fuel_used = fuel.and_then(|budget| {
        store
            .get_fuel()
            .ok()
            .map(|left| budget.saturating_sub(left))
    });
    let stderr = stderr.captured();
    let state = store.data_mut();
    let result = match outcome {
        CallOutcome::Returned(value) => convert(value),
        CallOutcome::Cancelled => Err(cancelled()),
        CallOutcome::TimedOut => Err(timed_out(timeout)),
        CallOutcome::Failed(error) => Err(classify_trap(
            &error,
            state.stop,
            state.limiter.hit.take(),
            &stderr,
            timeout,
        )),
    };
    let report = CallReport {
        // Filled in by the caller, which knows what a successful value means.
        result: Ok(ToolOutput::complete("")),
        stdout: stdout.captured(),
        stderr,
        logs: std::mem::take(&mut state.logs),
        fuel_used,
        elapsed: Duration::ZERO,
    };
    (result, report)
}

fn cancelled() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "interrupted while running: it may have partly happened",
    )
}

fn timed_out(timeout: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::Timeout,
        format!(
            "the call ran past its deadline of {} ms and was stopped; narrow the request, or raise \
             timeout_ms for this plugin in the preset",
            timeout.as_millis()
        ),
    )
    .retryable(true)
}

fn classify_trap(
    error: &wasmtime::Error,
    stop: Option<Stop>,
    memory_hit: Option<String>,
    stderr: &Captured,
    timeout: Duration,
) -> ToolError {
    match stop {
        Some(Stop::Cancelled) => return cancelled(),
        Some(Stop::Deadline) => return timed_out(timeout),
        None => {}
    }
    let trap = error.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::OutOfFuel) {
        return ToolError::new(
            ErrorCode::OutOfFuel,
            "the call used up its fuel (instruction budget) and was stopped; narrow the request, \
             or raise fuel for this plugin in the preset",
        );
    }
    if let Some(hit) = memory_hit {
        return ToolError::new(
            ErrorCode::MemoryLimit,
            format!(
                "the plugin exceeded its {hit}; raise memory_mb for this plugin in the preset if the work needs it"
            ),
        );
    }
    let panic = String::from_utf8_lossy(&stderr.bytes);
    let cause = match trap {
        Some(Trap::StackOverflow) => "stack overflow (recursion too deep)".to_string(),
        Some(Trap::MemoryOutOfBounds) => {
            "out-of-bounds memory access (a wild pointer, or the plugin's \
             in-memory stack overflowing from recursion too deep)"
                .to_string()
        }
        _ if panic.contains("panicked at") => {
            format!("the plugin panicked: {}", last_lines(&panic, 6))
        }
        Some(trap) => format!("{trap}"),
        None => format!("{error:?}"),
    };
    ToolError::new(
        ErrorCode::Trap,
        format!("the plugin crashed: {}", truncate_for_message_long(&cause)),
    )
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn truncate_for_message_long(text: &str) -> String {
    const MAX: usize = 2000;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
