//! The WebAssembly side: one wasmtime engine, plugins compiled into an authenticated cache, and a fresh store per call or hook with the grant's fuel, deadline, memory and output caps (S2-S4, S7, H2).

pub(super) mod bindings;
pub(super) mod cache;
pub(super) mod cache_key;
pub(super) mod call;
pub(super) mod compiled;
pub(super) mod deferred;
pub(super) mod described;
pub(super) mod engine;
pub(super) mod error;
pub(super) mod hook;
pub(super) mod limits;
pub(super) mod outcome;
pub(super) mod plugin;
pub(super) mod precompile;
pub(super) mod segments;
pub(super) mod snapshot;
pub(super) mod stdio;
pub(super) mod store;
pub(super) mod world;
