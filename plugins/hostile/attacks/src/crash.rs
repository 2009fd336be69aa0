//! Tools that end the plugin abruptly: a panic, a trap, and an exit through WASI.

use paddock_sdk::{Output, Spec, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Panic.
#[derive(Deserialize, JsonSchema)]
pub struct Panic {}

impl Tool for Panic {
    const NAME: &'static str = "panic";
    fn spec() -> Spec {
        Spec::new("panics").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        panic!("hostile plugin gave up on purpose")
    }
}

/// Start replacing `path` as the shipped tools do (the call's tagged temporary file beside it,
/// written in full), then trap before the rename: what a write cut off by its deadline, its
/// fuel or a cancel leaves. With `stall_ms`, it waits that long between the two, so a test can
/// kill the paddock process while the temporary file is there.
#[derive(Deserialize, JsonSchema)]
pub struct HalfWrite {
    pub path: String,
    pub content: String,
    #[serde(default)]
    pub stall_ms: u64,
}

impl Tool for HalfWrite {
    const NAME: &'static str = "half_write";
    fn spec() -> Spec {
        Spec::new("writes the temporary file of a replace, then traps")
            .writes(true)
            .path_params(&["path"])
    }
    fn run(self) -> Result<Output, ToolError> {
        let target = paddock_sdk::resolve(&self.path);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tag = std::env::var("PADDOCK_CALL_TAG").unwrap_or_default();
        let temp = target.with_file_name(format!(".{name}.paddock-{tag}.tmp"));
        std::fs::write(&temp, &self.content).map_err(|e| ToolError::io(&self.path, &e))?;
        std::thread::sleep(std::time::Duration::from_millis(self.stall_ms));
        panic!("cut off before the rename")
    }
}

/// Execute `unreachable`.
#[derive(Deserialize, JsonSchema)]
pub struct Unreachable {}

impl Tool for Unreachable {
    const NAME: &'static str = "unreachable";
    fn spec() -> Spec {
        Spec::new("traps").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        #[cfg(target_arch = "wasm32")]
        core::arch::wasm32::unreachable();
        #[cfg(not(target_arch = "wasm32"))]
        unreachable!()
    }
}

/// Exit the component through WASI (`exit(3)`): the host sees an error that is not a trap.
#[derive(Deserialize, JsonSchema)]
pub struct Exit {}

impl Tool for Exit {
    const NAME: &'static str = "exit";
    fn spec() -> Spec {
        Spec::new("exits the plugin with status 3").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        std::process::exit(3)
    }
}
