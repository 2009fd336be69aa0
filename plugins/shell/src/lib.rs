//! Built-in plugin `shell` (S6): `run_command` runs one allow-listed program through the host's
//! `exec` capability. The preset decides which programs (`plugins.shell.grants.exec.allow`);
//! this plugin only forwards the request and formats the answer for the model.

wit_bindgen::generate!({ world: "tool-plugin-exec", path: "../../wit" });

use exports::paddock::plugin::tools::Guest;
use paddock::plugin::exec;
use paddock::plugin::types::{Example, Risk, ToolError, ToolOutput, ToolSpec};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "program": {"type": "string", "description": "Program to run, by name (e.g. \"git\"); must be on the preset's allow-list."},
    "args": {"type": "array", "items": {"type": "string"}, "description": "Arguments, passed as they are (no shell: no pipes, globs or quotes)."},
    "cwd": {"type": "string", "description": "Working directory, relative to /workspace or absolute inside a mount. Default: /workspace."},
    "stdin": {"type": "string", "description": "Text for the program's standard input."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Time limit; the preset's limit applies when this is larger."}
  },
  "required": ["program"],
  "additionalProperties": false
}"#;

#[derive(serde::Deserialize)]
struct Args {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<String>,
    stdin: Option<String>,
    timeout_ms: Option<u32>,
}

struct Shell;

impl Guest for Shell {
    fn list() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "run_command".into(),
            description: "Run one program with arguments in the workspace, e.g. \
                {\"program\":\"cargo\",\"args\":[\"test\"]}. Only programs the preset allows can \
                run; there is no shell, so pipes, redirections and globs do not work. Returns the \
                exit status, then stdout and stderr, each cut at the preset's cap."
                .into(),
            parameters: SCHEMA.into(),
            examples: vec![
                Example {
                    args: r#"{"program":"git","args":["status","--short"]}"#.into(),
                    correct: true,
                    note: "program and arguments apart".into(),
                },
                Example {
                    args: r#"{"program":"git status | head"}"#.into(),
                    correct: false,
                    note: "no shell: the program is one name, arguments go in args".into(),
                },
            ],
            read_only: Some(false),
            concurrency_safe: Some(false),
            idempotent: Some(false),
            cancellable: Some(true),
            risk: Some(Risk::High),
            output_budget: None,
            path_params: vec![],
        }]
    }

    fn call(name: String, args: String) -> Result<ToolOutput, ToolError> {
        if name != "run_command" {
            return Err(error(
                "UNKNOWN_TOOL",
                format!("this plugin has only run_command, not {name}"),
            ));
        }
        let args: Args = serde_json::from_str(&args).map_err(|e| {
            error(
                "INVALID_ARGS",
                format!("arguments do not fit the schema: {e}"),
            )
        })?;
        let cwd = args.cwd.map(|c| {
            if c.starts_with('/') {
                c
            } else {
                format!("/workspace/{c}")
            }
        });
        let cmd = exec::Command {
            program: args.program,
            args: args.args,
            cwd,
            stdin: args.stdin.map(String::into_bytes),
            timeout_ms: args.timeout_ms,
        };
        let out = exec::run(&cmd).map_err(|e| error("EXEC_DENIED", e))?;
        let status = match (out.status, out.timed_out) {
            (_, true) => "timed out and was killed".to_string(),
            (Some(code), _) => format!("exit status {code}"),
            (None, _) => "killed by a signal".to_string(),
        };
        let mut content = status;
        for (label, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if !bytes.is_empty() {
                content.push_str(&format!(
                    "\n--- {label} ---\n{}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
        if out.truncated {
            content.push_str("\n(output cut at the preset's cap; narrow the command)");
        }
        Ok(ToolOutput {
            content,
            truncated: out.truncated,
            continuation: None,
        })
    }
}

fn error(code: &str, message: String) -> ToolError {
    ToolError {
        code: code.into(),
        message,
        retryable: false,
    }
}

export!(Shell);
