//! Built-in plugin `shell` (S6): `shell` runs bash source in the session's persistent shell,
//! `write_stdin` polls, interrupts or types into a command still running (and lists what the
//! session still runs), and `run_command` runs one allow-listed program without
//! a shell, all through the host's `exec` capability, which confines them and judges what
//! they run against the preset's rules (`plugins.shell.grants.exec`). This plugin only
//! forwards the requests and words the answers for the model.

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

/// Arguments of shell.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shell {
    /// Bash source: pipes, `&&`, redirections, heredocs, loops, `cd` and `export` all work,
    /// and last into the next call.
    pub command: String,
    /// Directory for this command only (the shell's own directory is unchanged after it).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Interrupt the command after this many milliseconds (the preset's limit is the most).
    #[serde(default)]
    pub timeout_ms: Option<u32>,
    /// Answer after this many milliseconds with what the command printed so far, leaving it
    /// running under a session_id (the preset sets the default).
    #[serde(default)]
    pub yield_ms: Option<u32>,
    /// Run on a terminal, for interactive programs (REPLs, prompts, curses), in a copy of the
    /// shell; type into it with write_stdin.
    #[serde(default)]
    pub tty: bool,
    /// Start it in a copy of the shell and answer at once with its session_id (a server, a
    /// watcher).
    #[serde(default)]
    pub background: bool,
    /// A few words on what the command is for (shown to the user).
    #[serde(default)]
    pub description: Option<String>,
}

impl Tool for Shell {
    const NAME: &'static str = "shell";

    fn spec() -> Spec {
        Spec::new(
            "Run bash source in this session's shell, e.g. {\"command\":\"cd src && cargo test \
             2>&1 | tail -n 20\"}. One shell lasts the whole session: cd, exported variables, \
             functions, aliases and jobs started with & carry over to the next call. Standard \
             output and error come back together with the exit status, the head and tail kept \
             when long. A command still running after yield_ms keeps running: the answer gives \
             its session_id for write_stdin (wait for more, or \"\\u0003\" to interrupt). \
             Use tty for interactive programs, background for servers. The shell sees the \
             workspace at its real path (see pwd); the preset decides what runs without asking.",
        )
        .writes(false)
        .concurrency_safe(false)
        .cancellable(true)
.risk(Risk::High)
        .example(
            r#"{"command":"cd /tmp && printf 'a\nb\n' > f && wc -l < f"}"#,
            "pipes, chains, redirections and cd all work",
        )
        .example(
            r#"{"command":"python3 -m http.server 8000","background":true}"#,
            "a server keeps running; its session_id comes back at once",
        )
    }

    fn run(self) -> Result<Output, ToolError> {
        let cmd = exec::ShellCommand {
            command: self.command,
            workdir: self.workdir,
            timeout_ms: self.timeout_ms,
            yield_ms: self.yield_ms,
            tty: self.tty,
            background: self.background,
        };
        let report = exec::shell(&cmd).map_err(|e| ToolError::new("EXEC_DENIED", e))?;
        Ok(worded(report))
    }
}

/// Arguments of write_stdin.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStdin {
    /// The session_id a shell call answered with.
    pub session_id: u32,
    /// Text to type (a terminal command only), e.g. "y\n"; "\u0003" interrupts (Ctrl-C);
    /// empty to wait for more output.
    #[serde(default)]
    pub chars: String,
    /// How long to wait for output, in milliseconds.
    #[serde(default)]
    pub yield_ms: Option<u32>,
}

impl Tool for WriteStdin {
    const NAME: &'static str = "write_stdin";

    fn spec() -> Spec {
        Spec::new(
            "Wait for more output of a shell command still running, interrupt it \
             (\"chars\":\"\\u0003\"), or type into it when it runs on a terminal (tty), e.g. \
             {\"session_id\":3,\"chars\":\"print(1+1)\\n\"}. Answers with what it printed since \
             the last answer, its exit status once it ended, and every command and process the \
             session's shell still runs (jobs started with &, servers).",
        )
        .writes(false)
        .concurrency_safe(false)
        .cancellable(true)
        .risk(Risk::High)
        .example(r#"{"session_id":1,"chars":"","yield_ms":5000}"#, "wait for more output")
        .example(r#"{"session_id":1,"chars":"\u0003"}"#, "interrupt it")
    }

    fn run(self) -> Result<Output, ToolError> {
        let report = exec::write_stdin(self.session_id, &self.chars, self.yield_ms)
            .map_err(|e| ToolError::new("EXEC_DENIED", e))?;
        let mut output = worded(report);
        output.content.push_str(&jobs(self.session_id));
        Ok(output)
    }
}

/// The session's other commands still running and every process its shell runs (jobs started
/// with &), as the kernel lists them; empty when there are none.
fn jobs(polled: u32) -> String {
    let lines: Vec<String> = exec::shell_jobs()
        .iter()
        .filter(|job| job.running)
        .filter(|job| job.kind == "process" || job.session_id != polled)
        .map(|job| match job.kind.as_str() {
            "process" => format!("pid {}: {}", job.session_id, job.command),
            kind => format!("session_id {} ({kind}): {}", job.session_id, job.command),
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("\n[paddock: still running in this session:\n{}]", lines.join("\n"))
}

/// A shell report as the model reads it: where the command stands first, then its output,
/// then paddock's notes.
fn worded(report: exec::ShellReport) -> Output {
    let state = match (report.running, report.status) {
        (true, _) => format!(
            "still running (session_id {id}): call write_stdin {{\"session_id\":{id}}} to wait \
             for more output, or with \"chars\":\"\\u0003\" to interrupt it",
            id = report.session_id
        ),
        (false, Some(code)) => format!("exit status {code}"),
        (false, None) => "ended without an exit status (killed by a signal)".to_string(),
    };
    let mut content = state;
    if !report.output.is_empty() {
        content.push('\n');
        content.push_str(&report.output);
    }
    for note in &report.notes {
        content.push_str(&format!("\n[paddock: {}]", note.trim()));
    }
    let cut = report.notes.iter().any(|n| n.contains("bytes in the middle were cut"));
    let mut output = Output::text(content);
    output.truncated = cut;
    output
}

paddock_sdk::export_tools!(RunCommand, Shell, WriteStdin);
