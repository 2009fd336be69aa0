//! The `paddock` command line through the real binary, one test binary for the crate: each
//! module is one command or capability (`tool`, `plugin`, `preset`, paging of results), with
//! the shared set-up in `common`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
mod failures;
mod paging;
mod plugin;
mod plugin_hooks;
mod preset;
mod preset_check;
mod preset_extends;
mod tool;
mod tool_print;
