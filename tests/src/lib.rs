//! End-to-end test support for paddock. `scripted` is the scripted model server every
//! end-to-end test talks to (SPEC M1: providers are tested through real HTTP on loopback);
//! `plugins` finds the built plugins and runs them in a shared sandbox; `pty` runs the binary
//! on a pseudo-terminal; `crash` is the crash harness (`cargo xtask crash N`).

pub mod crash;
pub mod plugins;
pub mod pty;
pub mod scripted;

pub use plugins::{grant, load, plugin_bytes, plugin_dir, resolve_preset, sandbox};
