//! The call pipeline: a raw call checked once (`prepared`), through the gate (hooks, approval),
//! the sandbox and the output budget (`run`: S5, C3, H1); batches through the scheduler with its
//! bounded pool, barriers, per-path locks and batch cancellation (X1-X4); and the one path that
//! logs a session's calls (`logged`: L1, L2, L8).

mod batch;
mod budget;
mod gate;
mod leftovers;
mod locks;
mod logged;
mod path_errors;
mod prepared;
mod run;
mod scheduler;
mod summary;

pub use batch::{parse_batch, records_json};
#[cfg(any(test, feature = "internals"))]
pub use gate::OpenGate;
pub use gate::{Admission, AfterCall, CallGate, GateCall};

pub use leftovers::remove_call_temps;
pub use locks::PathLocks;
pub use logged::{CallWatch, LoggedCalls, Unwatched};
pub use prepared::{Prepared, RawCall};
pub use run::{CallContext, LiveTap, not_executed};
#[cfg(any(test, feature = "internals"))]
pub use run::{Executed, run_call};
pub use scheduler::CallRecord;
#[cfg(any(test, feature = "internals"))]
pub use scheduler::{CallEvent, CallPhase, Scheduler};
pub use summary::{CallSummary, summarize};
