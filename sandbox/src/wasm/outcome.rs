//! How a call ends (S3, S7): racing it against cancellation and its deadline, and turning
//! whatever happened (a value, a trap, fuel or memory exhaustion, a timeout) into a
//! `ToolResult` with its own code, with what the call printed and logged.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::{Store, Trap};

use crate::wasm::stdio::Captured;
use crate::wasm::store::{CallState, LogLine, Prepared, Stop};
use paddock_types::contract::{ErrorCode, ToolError, ToolOutput, ToolResult};
use paddock_types::text::prefix_bytes;

/// How long past its deadline a call blocked in a host call (a guest `sleep`, say) may take
/// before the host stops waiting for it.
const DEADLINE_GRACE: Duration = Duration::from_millis(50);
/// Most bytes of why a plugin crashed (a panic's last lines, say) quoted in its error.
const CAUSE_BYTES: usize = 2000;

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

impl CallReport {
    /// The report of a call run outside the WASM sandbox (an MCP server's tool): its result
    /// and time, nothing captured.
    pub fn of_host(result: ToolResult, elapsed: Duration) -> CallReport {
        CallReport {
            result,
            stdout: Captured::default(),
            stderr: Captured::default(),
            logs: Vec::new(),
            fuel_used: None,
            elapsed,
        }
    }

    pub(crate) fn failed(error: ToolError, started: Instant) -> CallReport {
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

/// Runs `call` (instantiate the code, call one export) in `prepared`'s store until it ends,
/// the store's token is cancelled or its deadline passes, then turns what happened into a
/// result with `convert` for a returned value. Every plugin and hook call ends here, so each
/// is held to the same fuel, deadline, memory cap and output caps.
pub(crate) async fn run_to_end<T, R>(
    mut prepared: Prepared,
    call: impl AsyncFnOnce(&mut Store<CallState>) -> wasmtime::Result<T>,
    convert: impl FnOnce(T) -> Result<R, ToolError>,
) -> (Result<R, ToolError>, CallReport) {
    let cancel = prepared.store.data().cancel.clone();
    let timeout = prepared.timeout;
    let outcome = race(call(&mut prepared.store), &cancel, timeout).await;
    finish(prepared, outcome, convert)
}

/// Runs `call` until it ends, the token is cancelled, or the deadline (plus grace) passes.
/// A call running wasm is stopped by the epoch callback; one blocked in a host call is
/// dropped here.
async fn race<T>(
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
fn finish<T, R>(
    prepared: Prepared,
    outcome: CallOutcome<T>,
    convert: impl FnOnce(T) -> Result<R, ToolError>,
) -> (Result<R, ToolError>, CallReport) {
    let Prepared {
        mut store,
        stdout,
        stderr,
        fuel,
        timeout,
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
    let quoted = prefix_bytes(&cause, CAUSE_BYTES);
    let cut = if quoted.len() < cause.len() {
        "…"
    } else {
        ""
    };
    ToolError::new(
        ErrorCode::Trap,
        format!("the plugin crashed: {quoted}{cut}"),
    )
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
