//! The shell (`shell`, `write_stdin`) end to end, through the real binary's
//! `tool batch` (one process, one session, one persistent shell):
//! - `same_as_bash`: a list of commands answers as one real interactive bash session on the
//!   host answers them, call by call (output and exit status);
//! - `long_running`: commands past their yield, Ctrl-C, background servers, terminals, jobs;
//! - `budget`: a long output keeps its head and tail and names the file holding all of it;
//! - `approvals`: what the grant's `ask` and `deny` rules stop, however it is spelled, and
//!   what they let run unasked;
//! - `hostile`: what the shell's processes cannot do outside their mounts or to the user's git,
//!   even after their call returned, and that they die with paddock.
//!
//! The judge's own cases are unit tests in `shell_judge/`; the jail's in `hostile_exec`.

mod approvals;
mod budget;
mod hostile;
mod long_running;
mod same_as_bash;

use std::path::PathBuf;

use serde_json::Value;

use crate::agent_common::{Project, text};

/// The grant of a shell that runs anything unasked.
const ALLOW_ALL: &str = r#"allow = ["*"], env = ["PATH", "HOME", "LANG"], timeout_ms = 60_000"#;

/// A project with a preset of the shell over it.
struct Scene {
    project: Project,
    preset: PathBuf,
}

impl Scene {
    /// The shell over `files`, mounted read-write, running anything unasked.
    fn new(files: &[(&str, &str)]) -> Scene {
        Scene::with(files, "rw", ALLOW_ALL, "")
    }

    /// The shell over `files` mounted with `mode`, `grants.exec = { grant }`, and `extra`
    /// TOML after the preset (another plugin; `{root}` in it is the project's directory,
    /// quoted). Every approval tier allows: what is asked is
    /// decided by the grant alone.
    fn with(files: &[(&str, &str)], mode: &str, grant: &str, extra: &str) -> Scene {
        let project = Project::warm(files);
        let root = project.dir.path().canonicalize().expect("project dir");
        let preset = project.home.path().join("shell.toml");
        let text = format!(
            "name = \"shell-e2e\"\n\
             [plugins.shell]\nsource = \"builtin:shell\"\n\
             mounts = [{{ host = {root:?}, guest = \"/workspace\", mode = {mode:?} }}]\n\
             grants.exec = {{ {grant} }}\n\
             [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n{extra}",
            root = root.display().to_string(),
            extra = extra.replace("{root}", &format!("{:?}", root.display().to_string())),
        );
        std::fs::write(&preset, text).expect("write preset");
        Scene { project, preset }
    }

    /// The project's directory as the shell prints it (its real path).
    fn root(&self) -> PathBuf {
        self.project.dir.path().canonicalize().expect("project dir")
    }

    fn preset(&self) -> String {
        self.preset.display().to_string()
    }

    /// Runs `calls` in one `tool batch`: one answer per call, in order.
    fn run(&self, calls: &[(&str, Value)]) -> Vec<Answer> {
        let out = self.project.batch(&self.preset(), calls);
        let said = text(&out);
        let records: Vec<Value> = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("tool batch printed no records ({e}): {said}"));
        assert_eq!(records.len(), calls.len(), "one record per call: {said}");
        records.iter().map(Answer::from_record).collect()
    }

    /// `commands`, each one `shell` call, in one batch.
    fn shell(&self, commands: &[&str]) -> Vec<Answer> {
        let calls: Vec<(&str, Value)> = commands
            .iter()
            .map(|c| ("shell", serde_json::json!({ "command": c })))
            .collect();
        self.run(&calls)
    }
}

/// One call's record: its content when it ran, its error when it did not.
#[derive(Debug, Clone)]
struct Answer {
    ok: bool,
    content: String,
    error: String,
}

impl Answer {
    fn from_record(record: &Value) -> Answer {
        Answer {
            ok: record["ok"] == true,
            content: record["content"].as_str().unwrap_or_default().to_string(),
            error: format!(
                "{}: {}",
                record["error"]["code"].as_str().unwrap_or_default(),
                record["error"]["message"].as_str().unwrap_or_default()
            ),
        }
    }

    /// The first line: `exit status N` or `still running (session_id N): ...`.
    fn state(&self) -> &str {
        self.content.split('\n').next().unwrap_or_default()
    }

    /// The exit status the answer starts with, if it ended with one.
    fn status(&self) -> Option<i32> {
        self.state().strip_prefix("exit status ")?.parse().ok()
    }

    /// The session_id of a command still running.
    fn running_id(&self) -> Option<u32> {
        let rest = self.state().strip_prefix("still running (session_id ")?;
        rest.split(')').next()?.parse().ok()
    }

    /// What the command printed: between the first line and paddock's notes.
    fn output(&self) -> &str {
        let rest = self.content.split_once('\n').map_or("", |(_, rest)| rest);
        if rest.starts_with("[paddock: ") {
            return "";
        }
        rest.find("\n[paddock: ").map_or(rest, |at| &rest[..at])
    }

    /// paddock's notes after the output.
    fn notes(&self) -> &str {
        self.content
            .find("[paddock: ")
            .map_or("", |at| &self.content[at..])
    }
}
