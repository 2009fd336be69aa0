//! End-to-end test support for paddock. `scripted` is the scripted model server every
//! end-to-end test talks to (M1: providers are tested through real HTTP on loopback);
//! `plugins` finds the built plugins and runs them in a shared sandbox; `pty` runs the binary
//! on a pseudo-terminal; `crash` is the crash harness (`cargo xtask crash N`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod crash;
pub mod plugins;
pub mod pty;
pub use paddock_scripted as scripted;

pub use plugins::{grant, load, plugin_bytes, plugin_dir, resolve_preset, sandbox};
