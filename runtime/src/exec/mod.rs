//! Executing calls: the single-call path through validation, the sandbox and the output budget
//! (S5, C3). The scheduler and batch cancellation (X1-X3) will live here too.

mod budget;
mod run;

pub use budget::{SpillDir, apply_budget};
pub use run::{CallContext, Executed, run_call};
