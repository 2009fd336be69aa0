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
