//! Tools for the sandbox benchmark: `echo` returns its text, so a call's cost is the sandbox's
//! cost; `read_raw` reads a whole file through WASI.

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

paddock_sdk::export_tools!(Echo, ReadRaw);
