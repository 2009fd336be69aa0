//! paddock: a coding-agent runtime whose tools are sandboxed WebAssembly components.
//!
//! The public library is what a program that embeds paddock needs, and no more: start a
//! [`Session`] (or reopen a recorded one), send it messages, steer it through its inbox,
//! interrupt it, run a client's calls through it, and read what it reports. Everything else
//! is private to the crate; `examples/embed.rs` uses only what is exported here.
//!
//! ```text
//! let session = Session::builder(Env::at(data_dir, workspace)?)
//!     .preset("coding").model(choice).approver(Box::new(NoOneToAsk)).start().await?;
//! let end: TurnEnd = session.send("fix the test", &Quiet).await;
//! ```
//!
//! The spine of one call, and the module that carries each stage, is drawn in
//! `docs/ARCHITECTURE.md`.
//!
//! The library prints nothing: what it has to say goes through `Observer`, `Trust`, `Approver`
//! and returned errors; only the command line (`cli`, private) prints.
//!
//! The feature `internals` makes the modules themselves public, for paddock's own test crate,
//! benchmarks and fuzz targets; nothing outside this repository should enable it, and nothing
//! under it is a stable interface.

#![deny(clippy::print_stdout, clippy::print_stderr)]
// A type an embedder can hold but cannot name (a field's type, a return type) is a hole in the
// interface: export it or do not expose it. Checked on the interface embedders get (without
// `internals`, where the modules are private), by `cargo xtask lint`.
#![cfg_attr(not(feature = "internals"), warn(unnameable_types))]
// Without `internals`, what only the command line (`paddock-cli`) uses of the modules is unused.
#![cfg_attr(not(feature = "internals"), allow(unused_imports, dead_code))]

/// The library's modules: public only with the feature `internals`.
macro_rules! modules {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(feature = "internals")]
            #[doc(hidden)]
            pub mod $name;
            #[cfg(not(feature = "internals"))]
            mod $name;
        )*
    };
}

modules!(
    agent,
    ask,
    calls,
    grants,
    hooks,
    log,
    mcp,
    model,
    pipeline,
    plugin_store,
    preset,
    rewind,
    session,
    skills,
    tls
);

mod backtrace;
pub mod event;

pub use agent::model_script::ModelScript;
pub use agent::{Compaction, ContextFill, Entry, Observer, Quiet, Spent, TurnEnd};
pub use ask::{Answer, Approver, NoOneToAsk, OnAsk, Question};
pub use backtrace::quiet_library_backtraces;
pub use log::{Event, Lane, SessionStart, Source, StopReason, Tap};
pub use model::ToolDef;
pub use paddock_types::contract::ToolResult;
pub use pipeline::{CallRecord, CallSummary, RawCall};
pub use rewind::{ConversationRewound, Diff, Kept, Restored, Rewound, Scope as RewindScope};
pub use session::verdict::Shown as Warning;
pub use session::{
    CallPoint, Env, ForkAt, ForkOptions, Forked, Interrupter, ModelChoice, ModelMove,
    RecordedTrust, ReopenOptions, Reopened, Session, SessionBuilder, SetupCode, SetupError, Trust,
    TurnSummary,
};
