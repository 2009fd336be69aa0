//! paddock's shared vocabulary, below everything else: the tool contract every tool and the
//! sandbox speak (`contract`), how paddock stamps what it records (`stamp`: hashes and times),
//! and text made safe to show (`text`: terminal-safe text, shell words, clipping).
//!
//! This crate depends on nothing of paddock's and runs nothing; the sandbox and the core both
//! build on it (docs/ARCHITECTURE.md).

#![deny(clippy::print_stdout, clippy::print_stderr)]
#![warn(unnameable_types)]

pub mod contract;
pub mod stamp;
pub mod text;
