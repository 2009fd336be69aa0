//! The `skill` tool: a listed skill's instructions, or a file beside them, on demand
//! (progressive disclosure: the system prompt carries names and descriptions only). Only the
//! skills listed for this session are reachable, and only files inside a skill's folder
//! (`Skill::read`). The answer with the instructions also states the skill's declared needs,
//! each proved within the session's grants (`grants::within`) or named as wider, so the model
//! knows before it tries whether the skill's scripts can run here.

use std::sync::Arc;

use serde_json::json;

use crate::calls::{HostCall, HostTool};
use crate::grants::Effective;
use crate::skills::Skill;
use paddock_types::contract::{
    ErrorCode, OutputBudget, Risk, RuntimeMeta, ToolError, ToolOutput, ToolResult, ToolSpec,
};

/// The `skill` tool of one session.
pub(crate) struct SkillTool {
    pub skills: Arc<Vec<Skill>>,
    /// The session's grants, which a skill's declared needs must be within.
    pub grants: Effective,
    pub cwd: std::path::PathBuf,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "skill".into(),
        description: "Read a skill listed in the system prompt: its instructions (`name`), or a \
                      file beside them (`name` and `file`, e.g. `scripts/fill.py`). Follow the \
                      instructions; run its scripts with `skill_run`."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "file": {"type": "string", "description": "a file inside the skill's folder"}
            },
            "required": ["name"],
            "additionalProperties": false
        }),
        examples: Vec::new(),
        meta: RuntimeMeta {
            read_only: Some(true),
            concurrency_safe: Some(true),
            idempotent: Some(true),
            cancellable: Some(true),
            risk: Some(Risk::Low),
            output_budget: Some(OutputBudget::DEFAULT),
            path_params: Vec::new(),
        },
    }
}

impl SkillTool {
    fn answer(&self, args: &serde_json::Value) -> ToolResult {
        let name = args.get("name").and_then(|v| v.as_str()).unwrap_or_default();
        let skill = self.skills.iter().find(|s| s.name() == name).ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidArgs,
                format!(
                    "no skill named {name:?} is listed for this session; the skills are: {}",
                    self.skills
                        .iter()
                        .map(|s| s.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if let Some(file) = args.get("file").and_then(|v| v.as_str()) {
            return skill
                .read(file)
                .map(ToolOutput::complete)
                .map_err(|e| ToolError::new(ErrorCode::InvalidArgs, e.0));
        }
        let mut text = skill.file.body.clone();
        let resources = skill.resources();
        if !resources.is_empty() {
            text.push_str(&format!(
                "\n\n[files beside it, readable with `file`: {}]",
                resources.join(", ")
            ));
        }
        if !skill.file.needs.is_empty() {
            let verdict = match crate::skills::needs_within(&self.grants, &skill.file.needs, &self.cwd) {
                Ok(()) => "within this session's grants".to_string(),
                Err(wider) => format!("NOT within this session's grants ({wider}): its scripts will be refused here"),
            };
            text.push_str(&format!(
                "\n[its scripts declare they need: {}; {verdict}]",
                serde_json::to_string(&skill.file.needs).unwrap_or_default()
            ));
        }
        Ok(ToolOutput::complete(text))
    }
}

#[async_trait::async_trait]
impl HostTool for SkillTool {
    async fn call(&self, call: HostCall<'_>) -> ToolResult {
        self.answer(call.args)
    }
}
