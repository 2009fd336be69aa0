//! Tools for the benchmarks and the scheduler tests: `echo` returns its text, so a call's cost
//! is the sandbox's cost; `read_raw` reads a whole file through WASI; `nap` (read-only) and
//! `nap_alone` (undeclared, so a barrier) sleep; `write_slowly` is a concurrency-safe writer
//! with a path parameter, for per-path locks.

use paddock_sdk::{Output, Spec, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of echo.
#[derive(Deserialize, JsonSchema)]
pub struct Echo {
    /// Text to return.
    pub text: String,
}

impl Tool for Echo {
    const NAME: &'static str = "echo";
    fn spec() -> Spec {
        Spec::new("Returns its text unchanged.").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        Ok(Output::text(self.text))
    }
}

/// Arguments of read_raw.
#[derive(Deserialize, JsonSchema)]
pub struct ReadRaw {
    /// File to read whole.
    pub path: String,
}

impl Tool for ReadRaw {
    const NAME: &'static str = "read_raw";
    fn spec() -> Spec {
        Spec::new("Reads a file whole and returns its size.").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        let bytes = std::fs::read(paddock_sdk::resolve(&self.path))
            .map_err(|e| ToolError::io(&self.path, &e))?;
        Ok(Output::text(bytes.len().to_string()))
    }
}

/// Arguments of nap.
#[derive(Deserialize, JsonSchema)]
pub struct Nap {
    /// Milliseconds to sleep.
    pub ms: u64,
}

impl Tool for Nap {
    const NAME: &'static str = "nap";
    fn spec() -> Spec {
        Spec::new("Sleeps for `ms` milliseconds and returns `slept`.").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        Ok(Output::text("slept"))
    }
}

/// Arguments of nap_alone.
#[derive(Deserialize, JsonSchema)]
pub struct NapAlone {
    /// Milliseconds to sleep.
    pub ms: u64,
}

impl Tool for NapAlone {
    const NAME: &'static str = "nap_alone";
    fn spec() -> Spec {
        // Nothing declared: the host treats it as not concurrency-safe, so it runs alone.
        Spec::new("Sleeps for `ms` milliseconds; declares no metadata.")
    }
    fn run(self) -> Result<Output, ToolError> {
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        Ok(Output::text("slept alone"))
    }
}

/// Arguments of write_slowly.
#[derive(Deserialize, JsonSchema)]
pub struct WriteSlowly {
    /// File to append to.
    pub path: String,
    /// Text to append.
    pub text: String,
    /// Milliseconds to sleep before appending.
    pub ms: u64,
}

impl Tool for WriteSlowly {
    const NAME: &'static str = "write_slowly";
    fn spec() -> Spec {
        Spec::new("Sleeps `ms` milliseconds, then appends `text` to `path`.")
            .writes(false)
            .concurrency_safe(true)
            .path_params(&["path"])
    }
    fn run(self) -> Result<Output, ToolError> {
        use std::io::Write;
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        let path = paddock_sdk::resolve(&self.path);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| ToolError::io(&self.path, &e))?;
        file.write_all(self.text.as_bytes())
            .map_err(|e| ToolError::io(&self.path, &e))?;
        Ok(Output::text("appended"))
    }
}

paddock_sdk::export_tools!(Echo, ReadRaw, Nap, NapAlone, WriteSlowly);
