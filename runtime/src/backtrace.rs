//! Backtraces of library errors, off unless asked for.

/// Library errors (wasmtime's, wasmtime-wasi's) capture a host backtrace when
/// `RUST_LIB_BACKTRACE`, or failing that `RUST_BACKTRACE`, asks for one. A developer's
/// `RUST_BACKTRACE=1` then made every WASI error a plugin meets (each missing `.gitignore` a
/// walk probes) unwind the host stack: glob spent a third of its time there, and the
/// backtrace reached the model in a crashed call's message. Unless `RUST_LIB_BACKTRACE` is
/// set, it is set to 0; `RUST_BACKTRACE` still governs panics (docs/scale.md). The command
/// line calls it first thing, and so do the benches that measure the library.
///
/// # Safety
/// Call it before any other thread exists: it sets an environment variable.
pub unsafe fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the caller guarantees no other thread exists, so nothing reads the
        // environment concurrently.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}
