//! The Agent Trajectory Interchange Format, version 1.8 (ATIF-v1.8), as the types paddock writes:
//! the subset of the schema a session log can fill. Field names and shapes follow the schema
//! exactly; its validators reject any key they do not know, at every level, so an absent value
//! is left out (never written as `null`) and anything paddock-specific goes under an `extra`
//! object, the one place the schema allows it. Reading (`Deserialize`) refuses unknown keys too,
//! as the schema's own validators do. What maps the log to these types is `atif.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version every trajectory paddock writes declares.
pub const SCHEMA_VERSION: &str = "ATIF-v1.8";

/// One session as a trajectory: who ran it, its steps in order, and its totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    pub schema_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// This document's own id: set on a subagent's trajectory embedded in its parent's
    /// (`subagent_trajectories`), which the parent's `subagent_trajectory_ref` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_id: Option<String>,
    pub agent: Agent,
    /// Numbered from 1 without gaps; never empty.
    pub steps: Vec<Step>,
    /// Free text for a reader: how the session stopped, and what the trajectory lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
    /// The trajectories of the subagents this session started, each complete, with its
    /// `trajectory_id` (ATIF-v1.7 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_trajectories: Option<Vec<Trajectory>>,
}

/// A result's pointer to the subagent that produced it: `trajectory_id` names an entry of
/// the root's `subagent_trajectories`; `session_id` is for a reader only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentTrajectoryRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The tools the agent was offered, each in OpenAI's function-calling shape
    /// (`{"type": "function", "function": {name, description, parameters}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Who a step comes from. The schema has no `tool` source: tool output is an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    System,
    User,
    Agent,
}

/// One step. `model_name`, `tool_calls`, `metrics` and `llm_call_count` belong to agent steps
/// only: the validators reject them on a system or user step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub step_id: u64,
    /// RFC 3339, UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub source: StepSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Required by the schema; may be empty. Text, or parts when images came with it.
    pub message: Content,
    /// The reasoning the model streamed (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Results of this step's own calls, paired by `source_call_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub function_name: String,
    /// Always a JSON object (the schema refuses a string or any other value).
    pub arguments: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub results: Vec<ObservationResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationResult {
    /// One of the same step's `tool_call_id`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// The subagent a `task` call started, when the call's result is its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_trajectory_ref: Option<Vec<SubagentTrajectoryRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// A message or a result: text, or (ATIF v1.6 on) parts, text and images, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text: the whole of it, or the text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// `text`, and an image part for each of `images` (plain text when there are none).
    pub fn with_images(text: String, images: Vec<ImageSource>) -> Content {
        if images.is_empty() {
            return Content::Text(text);
        }
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(ContentPart {
                kind: "text".into(),
                text: Some(text),
                source: None,
            });
        }
        parts.extend(images.into_iter().map(|source| ContentPart {
            kind: "image".into(),
            text: None,
            source: Some(source),
        }));
        Content::Parts(parts)
    }
}

impl Content {
    /// The text of a text-only message; the first text part of one with images.
    pub fn as_str(&self) -> &str {
        match self {
            Content::Text(text) => text,
            Content::Parts(parts) => parts.iter().find_map(|p| p.text.as_deref()).unwrap_or(""),
        }
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.text().contains(needle)
    }
}

impl PartialEq<&str> for Content {
    fn eq(&self, other: &&str) -> bool {
        matches!(self, Content::Text(text) if text == other)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::Text(text)
    }
}

/// One part: `text` with its text, or `image` with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ImageSource>,
}

/// An image stored beside the trajectory: paddock's blob of it in the session's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSource {
    pub media_type: String,
    pub path: String,
}

/// One step's model usage. `prompt_tokens` counts all input, cached included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Of `prompt_tokens`, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}
