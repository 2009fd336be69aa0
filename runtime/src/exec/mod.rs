//! Executing calls: the single-call path through validation, the gate (hooks, approval), the
//! sandbox and the output budget (S5, C3, H1). The scheduler and batch cancellation (X1-X3) will live here too.

mod budget;
mod gate;
mod run;

pub use budget::{SpillDir, apply_budget};
pub use gate::{Admission, CallGate, GateCall, OpenGate, Outcome};
pub use run::{CallContext, Executed, run_call};
