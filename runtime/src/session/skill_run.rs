//! The `skill_run` tool: one of a listed skill's scripts, run confined in the jail through the
//! shell plugin's `run_command` (the same exec capability, kernel jail and output budget as
//! any program), with grants made from the skill's declared needs, and only once those are
//! proved within the session's (`skills::needs_within`, the proof a subagent passes). A skill
//! that declares more than the session has is refused, naming the dimension, and nothing runs.
//!
//! What the program gets: the skill's folder read-only as its working directory
//! (`/workspace`); each declared mount, at its real path, in the declared mode; the declared
//! exec patterns as its allow-list, with the session's ask and deny patterns; the network only
//! when the skill declares hosts (and the session's programs have it); the session's
//! environment list, limits and protected paths. Nothing of the session's own mounts beyond
//! what the skill declares.

use std::sync::Arc;

use serde_json::json;

use crate::calls::{HostCall, HostTool};
use crate::grants::Effective;
use crate::skills::{Skill, needs_effective};
use paddock_sandbox::{Grant, Mount, MountMode, Plugin, Sandbox, SessionState};
use paddock_types::contract::{
    ErrorCode, OutputBudget, Risk, RuntimeMeta, ToolError, ToolResult, ToolSpec,
};

/// The `skill_run` tool of one session.
pub(crate) struct SkillRun {
    pub skills: Arc<Vec<Skill>>,
    pub grants: Effective,
    pub cwd: std::path::PathBuf,
    pub sandbox: Sandbox,
    /// The plugin with `run_command`, and its grant in this session.
    pub shell: Plugin,
    pub shell_grant: Grant,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "skill_run".into(),
        description: "Run a script of a skill listed in the system prompt, as its instructions \
                      say: `argv` is the program and its arguments, run in the skill's folder \
                      (e.g. [\"python3\", \"scripts/fill.py\", \"form.pdf\"]). It runs confined, \
                      with only what the skill declares it needs."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "stdin": {"type": "string"}
            },
            "required": ["name", "argv"],
            "additionalProperties": false
        }),
        examples: Vec::new(),
        meta: RuntimeMeta {
            read_only: Some(false),
            concurrency_safe: Some(false),
            idempotent: Some(false),
            cancellable: Some(true),
            // A program, judged like one run by `run_command`.
            risk: Some(Risk::High),
            output_budget: Some(OutputBudget::DEFAULT),
            path_params: Vec::new(),
        },
    }
}

fn host(why: String) -> ToolError {
    ToolError::new(ErrorCode::Host, why)
}

impl SkillRun {
    /// The grant the skill's script runs with: its declared needs, proved within the session.
    fn grant(&self, skill: &Skill) -> Result<Grant, ToolError> {
        crate::skills::needs_within(&self.grants, &skill.file.needs, &self.cwd).map_err(|w| {
            ToolError::new(
                ErrorCode::Denied,
                format!(
                    "skill `{}` declares needs {}; they are {w} (this session's grants), so its \
                     scripts do not run here; nothing was run",
                    skill.name(),
                    serde_json::to_string(&skill.file.needs).unwrap_or_default()
                ),
            )
        })?;
        let needs = needs_effective(&self.grants, &skill.file.needs, &self.cwd);
        let mut mounts = vec![
            Mount::open(&skill.dir, "/workspace", MountMode::Ro)
                .map_err(|e| host(format!("cannot open the skill's folder: {e}")))?,
        ];
        for path in &needs.paths {
            let mode = if path.write { MountMode::Rw } else { MountMode::Ro };
            let guest = path.path.display().to_string();
            mounts.push(Mount::open(&path.path, guest, mode).map_err(|e| {
                host(format!("{}: cannot open {}: {e}", path.key, path.path.display()))
            })?);
        }
        let mut exec = self
            .shell_grant
            .exec
            .clone()
            .ok_or_else(|| host("this session runs no programs".into()))?;
        let rules = needs.exec.first();
        exec.allow = rules.map(|r| r.allow.clone()).unwrap_or_default();
        exec.ask = rules.map(|r| r.ask.clone()).unwrap_or_default();
        exec.deny = rules.map(|r| r.deny.clone()).unwrap_or_default();
        exec.network = needs.network.programs;
        exec.read = Vec::new();
        exec.write = Vec::new();
        Ok(Grant {
            mounts,
            exec: Some(exec),
            http: None,
            session: SessionState::fresh(),
            ..self.shell_grant.clone()
        })
    }

    async fn run(&self, call: &HostCall<'_>) -> ToolResult {
        let name = call.args.get("name").and_then(|v| v.as_str()).unwrap_or_default();
        let skill = self.skills.iter().find(|s| s.name() == name).ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidArgs,
                format!("no skill named {name:?} is listed for this session"),
            )
        })?;
        let argv: Vec<String> = call
            .args
            .get("argv")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|w| w.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let Some((program, args)) = argv.split_first() else {
            return Err(ToolError::new(ErrorCode::InvalidArgs, "argv is empty"));
        };
        let grant = self.grant(skill)?;
        let mut run = json!({"program": program, "args": args});
        if let Some(stdin) = call.args.get("stdin") {
            run["stdin"] = stdin.clone();
        }
        self.sandbox
            .call(&self.shell, "run_command", &run.to_string(), &grant, call.cancel)
            .await
            .result
    }
}

#[async_trait::async_trait]
impl HostTool for SkillRun {
    async fn call(&self, call: HostCall<'_>) -> ToolResult {
        self.run(&call).await
    }
}
