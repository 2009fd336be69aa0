//! The model-facing tool list (C1) in the two wire formats: OpenAI `tools` (function calling)
//! and Anthropic `tools`. Names, descriptions and schemas go out exactly as the plugins
//! declared them; nothing runtime-facing (C2) is shown to the model.

use serde_json::{Value, json};

use super::registry::Registry;
use crate::contract::ToolSpec;

/// Wire format of a tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolListFormat {
    OpenAi,
    Anthropic,
}

impl Registry {
    /// Every tool, in preset order, as `format` wants it.
    pub fn tool_list(&self, format: ToolListFormat) -> Value {
        Value::Array(self.tools().map(|t| tool_entry(&t.spec, format)).collect())
    }
}

/// One tool in `format`.
pub fn tool_entry(spec: &ToolSpec, format: ToolListFormat) -> Value {
    match format {
        ToolListFormat::OpenAi => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            }
        }),
        ToolListFormat::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.parameters,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RuntimeMeta;

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.\nPaths are relative to /workspace.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            examples: Vec::new(),
            meta: RuntimeMeta::default(),
        }
    }

    #[test]
    fn openai_entries_wrap_the_declared_schema_in_a_function() {
        let s = spec();
        let entry = tool_entry(&s, ToolListFormat::OpenAi);
        assert_eq!(entry["type"], "function");
        assert_eq!(entry["function"]["name"], "read_file");
        assert_eq!(entry["function"]["description"], s.description.as_str());
        assert_eq!(entry["function"]["parameters"], s.parameters);
    }

    #[test]
    fn anthropic_entries_carry_the_schema_as_input_schema() {
        let s = spec();
        let entry = tool_entry(&s, ToolListFormat::Anthropic);
        assert_eq!(entry["name"], "read_file");
        assert_eq!(entry["input_schema"], s.parameters);
        assert!(entry.get("read_only").is_none());
    }
}
