//! A wider version of the upgrade test plugin: the same tools, and the `exec` capability
//! (`greet` with the name `--id` runs `id` on the host).

wit_bindgen::generate!({ world: "tool-plugin-exec", path: "../../../wit" });

#[path = "../../common.rs"]
mod common;

use exports::paddock::plugin::tools::Guest;
use paddock::plugin::exec;
use paddock::plugin::types::{ToolError, ToolOutput, ToolSpec};

struct Plugin;

impl Guest for Plugin {
    fn list() -> Vec<ToolSpec> {
        vec![common::greet(), common::echo()]
    }

    fn call(name: String, args: String) -> Result<ToolOutput, ToolError> {
        if name == "greet" && args.contains("\"--id\"") {
            let cmd = exec::Command {
                program: "id".into(),
                args: vec![],
                cwd: None,
                stdin: None,
                timeout_ms: None,
            };
            return match exec::run(&cmd) {
                Ok(out) => Ok(ToolOutput {
                    content: String::from_utf8_lossy(&out.stdout).into(),
                    truncated: false,
                    continuation: None,
                }),
                Err(message) => Err(ToolError {
                    code: "EXEC".into(),
                    message,
                    retryable: false,
                }),
            };
        }
        common::answer("exec", &name, &args)
    }
}

export!(Plugin);
