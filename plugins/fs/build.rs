//! The file tools start with 4 MiB of linear memory instead of the linker's 1 MiB stack plus
//! data. A fresh instance per call would otherwise grow its memory a 64 KiB page at a time on
//! every call (read_file of a 100 KiB page grew four times), and each `memory.grow` costs the
//! host an mprotect and a TLB shootdown on the other core (`cargo xtask bench sandbox`;
//! figures in docs/scale.md). Only plugins that allocate that much get it: for small ones (the
//! hooks) a larger memory makes instantiation dearer.
//! A preset's memory_mb below 4 refuses this plugin at instantiation (MEMORY_LIMIT).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=--initial-memory=4194304");
    }
}
