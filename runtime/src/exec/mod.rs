//! Executing calls: one call through validation, the gate (hooks, approval), the sandbox and
//! the output budget (S5, C3, H1); batches through the scheduler with its bounded pool,
//! barriers, per-path locks and batch cancellation (X1-X4).

mod batch;
mod budget;
mod gate;
mod locks;
mod run;
mod scheduler;

pub use batch::{BatchError, parse_batch, records_json};
pub use budget::{SpillDir, apply_budget};
pub use gate::{Admission, CallGate, GateCall, OpenGate, Outcome};
pub use locks::{Access, real_path};
pub use run::{CallContext, Executed, not_executed, run_call};
pub use scheduler::{CallEvent, CallPhase, CallRecord, DEFAULT_MAX_PARALLEL, RawCall, Scheduler};
