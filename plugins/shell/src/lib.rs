//! Built-in plugin `shell` (S6): `run_command` runs one allow-listed program through the host's
//! `exec` capability. The preset decides which programs (`plugins.shell.grants.exec.allow`);
//! this plugin only forwards the request and formats the answer for the model.

use paddock_sdk::{Output, Risk, Spec, Tool, ToolError, exec};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of run_command.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommand {
    /// Program to run, by name (e.g. "git"); must be on the preset's allow-list.
    pub program: String,
    /// Arguments, passed as they are (no shell: no pipes, globs or quotes).
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory, relative to /workspace or absolute inside a mount. Default: /workspace.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Text for the program's standard input.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Time limit in milliseconds; the preset's limit applies when this is larger.
    #[serde(default)]
    pub timeout_ms: Option<u32>,
}

impl Tool for RunCommand {
    const NAME: &'static str = "run_command";

    fn spec() -> Spec {
        Spec::new(
            "Run one program with arguments in the workspace, e.g. \
             {\"program\":\"cargo\",\"args\":[\"test\"]}. Only programs the preset allows can \
             run; there is no shell, so pipes, redirections and globs do not work. Returns the \
             exit status, then stdout and stderr, each cut at the preset's cap.",
        )
        .writes(false)
        .cancellable(true)
        .risk(Risk::High)
        .example(
            r#"{"program":"git","args":["status","--short"]}"#,
            "program and arguments apart",
        )
        .counter_example(
            r#"{"program":"git status | head"}"#,
            "no shell: the program is one name, arguments go in args",
        )
    }

    fn run(self) -> Result<Output, ToolError> {
        let cwd = self.cwd.map(|c| {
            if c.starts_with('/') {
                c
            } else {
                format!("/workspace/{c}")
            }
        });
        let cmd = exec::Command {
            program: self.program,
            args: self.args,
            cwd,
            stdin: self.stdin.map(String::into_bytes),
            timeout_ms: self.timeout_ms,
        };
        let out = exec::run(&cmd).map_err(|e| ToolError::new("EXEC_DENIED", e))?;
        let mut content = match (out.status, out.timed_out) {
            (_, true) => "timed out and was killed".to_string(),
            (Some(code), _) => format!("exit status {code}"),
            (None, _) => "killed by a signal".to_string(),
        };
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
        let mut output = Output::text(content);
        output.truncated = out.truncated;
        Ok(output)
    }
}

paddock_sdk::export_tools!(RunCommand);
