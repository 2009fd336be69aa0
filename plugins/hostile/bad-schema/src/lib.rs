//! list() returns a parameters schema that is JSON but not a valid JSON Schema: paddock must
//! refuse to load it, naming the tool.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../../wit" });

use exports::paddock::plugin::tools::Guest;
use paddock::plugin::types::{ToolError, ToolOutput, ToolSpec};

struct Plugin;

impl Guest for Plugin {
    fn list() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "broken".into(),
            description: "Has a schema that cannot compile.".into(),
            parameters:
                r#"{"type":"object","properties":{"n":{"type":"integer","minimum":"zero"}}}"#.into(),
            examples: vec![],
            read_only: Some(true),
            concurrency_safe: None,
            idempotent: None,
            cancellable: None,
            risk: None,
            output_budget: None,
            path_params: vec![],
        }]
    }

    fn call(_name: String, _args: String) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: "unreachable".into(),
            truncated: false,
            continuation: None,
        })
    }
}

export!(Plugin);
