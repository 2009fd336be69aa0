//! The gate around each call for real sessions (H1, H2, C2, T2): the preset's pre- and
//! post-tool hooks, run in the sandbox in preset order, and approval by risk tier with questions
//! that show the whole call. `HookChain` implements `crate::pipeline::CallGate`, so every call
//! the pipeline runs (`pipeline::LoggedCalls`, the scheduler, `run_call`) passes it; its `pre_tool_use`, `post_tool_use` and
//! `Approval::confirm` are usable on their own.
//!
//! What it does not do: validate arguments. A rewrite is handed back to the pipeline, which
//! validates it against the tool's schema again (C3), so a hook cannot smuggle in bad input.

mod admit;
mod approval;
mod chain;
mod question;

pub use approval::Approval;
#[cfg(any(test, feature = "internals"))]
pub use approval::Refused;
pub use chain::HookChain;
#[cfg(any(test, feature = "internals"))]
pub use chain::HookError;

