//! Which of paddock's layers are in force on this machine (`paddock doctor`): the WebAssembly
//! sandbox and its limits (always), the filesystem guard's resolution beneath a mount (kernel
//! 5.6's `openat2`), and the process jail's layers (`paddock_jail::layers`), each with what it
//! stops and, when missing, why.

pub use paddock_jail::Layer;

/// Every layer, probed here and now.
pub fn layers() -> Vec<Layer> {
    let mut all = vec![
        Layer {
            name: "wasm",
            purpose: "a plugin reaches only its mounts and the capabilities its grant names, \
                      with fuel, a deadline, memory and output caps per call",
            state: Ok("wasmtime, always".into()),
        },
        Layer {
            name: "fs-guard",
            purpose: "every guest path resolved beneath its mount by descriptor: no `..`, \
                      absolute path or symlink leads out; protected paths cannot be created",
            state: beneath(),
        },
    ];
    all.extend(paddock_jail::layers());
    all
}

/// Whether `openat2(RESOLVE_BENEATH)` works; without it (kernels before 5.6, some sandboxes)
/// the guard refuses every guest path: file tools fail closed.
fn beneath() -> Result<String, String> {
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    match super::fs::mount::openat2(
        libc::AT_FDCWD,
        std::path::Path::new("."),
        flags,
        libc::RESOLVE_BENEATH,
    ) {
        Ok(_) => Ok("openat2 RESOLVE_BENEATH".into()),
        Err(e) => Err(format!("openat2 is refused here ({e})")),
    }
}
