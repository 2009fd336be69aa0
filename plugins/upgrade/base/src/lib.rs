//! The first version of the upgrade test plugin: `greet` and `echo`, no capability.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../../wit" });

#[path = "../../common.rs"]
mod common;

use exports::paddock::plugin::tools::Guest;
use paddock::plugin::types::{ToolError, ToolOutput, ToolSpec};

struct Plugin;

impl Guest for Plugin {
    fn list() -> Vec<ToolSpec> {
        vec![common::greet(), common::echo()]
    }

    fn call(name: String, args: String) -> Result<ToolOutput, ToolError> {
        common::answer("base", &name, &args)
    }
}

export!(Plugin);
