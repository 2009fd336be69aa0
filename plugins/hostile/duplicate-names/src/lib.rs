//! Two tools share one name: paddock must refuse to load the plugin.

use paddock_sdk::{Output, Spec, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// First twin.
#[derive(Deserialize, JsonSchema)]
pub struct First {}

/// Second twin.
#[derive(Deserialize, JsonSchema)]
pub struct Second {}

impl Tool for First {
    const NAME: &'static str = "twin";
    fn spec() -> Spec {
        Spec::new("one of two").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        Ok(Output::text("first"))
    }
}

impl Tool for Second {
    const NAME: &'static str = "twin";
    fn spec() -> Spec {
        Spec::new("the other").read_only()
    }
    fn run(self) -> Result<Output, ToolError> {
        Ok(Output::text("second"))
    }
}

paddock_sdk::export_tools!(First, Second);
