//! The attacker's setup for `hostile_exec.rs`: a project, a decoy outside it, and a preset
//! that grants shells through `exec`.

#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use crate::agent_common::{Project, text};

/// A project, a decoy directory outside it, and a preset that mounts the project at
/// /workspace and allows `programs` with `extra` exec grant keys.
pub struct Attack {
    pub project: Project,
    decoy: tempfile::TempDir,
    preset: tempfile::TempDir,
}

pub const SECRET: &str = "DECOY-SECRET-7f3a";

impl Attack {
    pub fn new(mode: &str, extra: &str) -> Attack {
        let project = Project::new(&[("README.md", "hello\n")]);
        let decoy = tempfile::tempdir().unwrap();
        std::fs::write(decoy.path().join("secret.txt"), SECRET).unwrap();
        let preset = tempfile::tempdir().unwrap();
        let text = format!(
            "[plugins.shell]\nsource = \"builtin:shell\"\n\
             mounts = [{{ host = \"{}\", guest = \"/workspace\", mode = \"{mode}\" }}]\n\
             grants.exec = {{ allow = [\"sh\", \"bash\", \"cat\", \"git\", \"ls\"], env = [\"PATH\"], timeout_ms = 10_000{extra} }}\n\
             [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
            project.dir.path().display()
        );
        std::fs::write(preset.path().join("attack.toml"), text).unwrap();
        Attack {
            project,
            decoy,
            preset,
        }
    }

    pub fn preset_path(&self) -> String {
        self.preset.path().join("attack.toml").display().to_string()
    }

    pub fn decoy(&self) -> &Path {
        self.decoy.path()
    }

    pub fn workspace(&self) -> &Path {
        self.project.dir.path()
    }

    /// `run_command` with `program args`, as the model would call it.
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        let call = serde_json::json!({ "program": program, "args": args }).to_string();
        let preset = self.preset_path();
        self.project
            .command(&["tool", "call", "run_command", &call, "--preset", &preset])
            .output()
            .expect("run paddock")
    }

    /// `sh -c script`.
    pub fn sh(&self, script: &str) -> String {
        text(&self.run("sh", &["-c", script]))
    }
}
