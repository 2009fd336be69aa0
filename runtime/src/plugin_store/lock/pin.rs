//! What a lock pins of a tool, and how two pinned tool lists differ: each tool hashed as a
//! whole and by part (description, schema, metadata or annotations), over a canonical JSON
//! form (object keys sorted, no spaces), so the same tool hashes the same on every machine
//! and a refusal can say which tool changed and how.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use paddock_types::contract::ToolSpec;

/// One tool as the lock pins it: the hash of the whole, and of each part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPin {
    /// SHA-256 of the canonical JSON of the whole tool.
    pub sha256: String,
    pub description: String,
    pub schema: String,
    /// A plugin tool's runtime metadata (risk, read-only, paths, examples); an MCP tool's
    /// annotations.
    pub meta: String,
}

/// `value` as canonical JSON: object keys sorted at every level, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let ordered: BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, sorted(v))).collect();
                let mut out = serde_json::Map::new();
                for (k, v) in ordered {
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // A `Map` keeps insertion order or sorts, depending on serde_json's features; both give
    // sorted keys here since they are inserted sorted.
    sorted(value).to_string()
}

fn hash(value: &Value) -> String {
    paddock_types::stamp::sha256_hex(canonical_json(value).as_bytes())
}

/// A plugin tool as `describe` gives it, pinned.
pub fn plugin_tool(spec: &ToolSpec) -> ToolPin {
    let whole = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut meta = serde_json::to_value(&spec.meta).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut meta {
        map.insert(
            "examples".into(),
            serde_json::to_value(&spec.examples).unwrap_or(Value::Null),
        );
    }
    ToolPin {
        sha256: hash(&whole),
        description: hash(&Value::String(spec.description.clone())),
        schema: hash(&spec.parameters),
        meta: hash(&meta),
    }
}

/// An MCP tool as `tools/list` gives it (name, description, input schema, annotations),
/// pinned.
pub fn mcp_tool(name: &str, description: &str, schema: &Value, annotations: &Value) -> ToolPin {
    let whole = serde_json::json!({
        "name": name,
        "description": description,
        "input_schema": schema,
        "annotations": annotations,
    });
    ToolPin {
        sha256: hash(&whole),
        description: hash(&Value::String(description.to_string())),
        schema: hash(schema),
        meta: hash(annotations),
    }
}

/// SHA-256 of a plugin's tool list as `describe` gives it, in its order.
pub fn tools_sha256(specs: &[ToolSpec]) -> String {
    hash(&serde_json::to_value(specs).unwrap_or(Value::Null))
}

/// How one tool differs between the lock and now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChange {
    /// Not in the lock.
    Added,
    /// In the lock, gone now.
    Removed,
    /// The parts that changed: `description`, `schema`, `metadata` (`annotations` for MCP).
    Changed(Vec<&'static str>),
}

impl std::fmt::Display for ToolChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolChange::Added => write!(f, "new (not in the lock)"),
            ToolChange::Removed => write!(f, "removed"),
            ToolChange::Changed(parts) => write!(f, "{} changed", parts.join(", ")),
        }
    }
}

/// Every tool that differs between `locked` and `now`, by name, with how; `meta` names the
/// metadata part (`metadata` for plugins, `annotations` for MCP servers).
pub fn diff(
    locked: &BTreeMap<String, ToolPin>,
    now: &BTreeMap<String, ToolPin>,
    meta: &'static str,
) -> Vec<(String, ToolChange)> {
    let mut changes = Vec::new();
    for (name, pin) in now {
        match locked.get(name) {
            None => changes.push((name.clone(), ToolChange::Added)),
            Some(old) if old.sha256 != pin.sha256 => {
                let mut parts = Vec::new();
                if old.description != pin.description {
                    parts.push("description");
                }
                if old.schema != pin.schema {
                    parts.push("schema");
                }
                if old.meta != pin.meta {
                    parts.push(meta);
                }
                if parts.is_empty() {
                    parts.push("definition");
                }
                changes.push((name.clone(), ToolChange::Changed(parts)));
            }
            Some(_) => {}
        }
    }
    for name in locked.keys() {
        if !now.contains_key(name) {
            changes.push((name.clone(), ToolChange::Removed));
        }
    }
    changes.sort_by(|a, b| a.0.cmp(&b.0));
    changes
}

/// `tool `a`: description changed; tool `b`: new (not in the lock)`.
pub fn describe_changes(changes: &[(String, ToolChange)]) -> String {
    changes
        .iter()
        .map(|(name, change)| format!("tool `{name}`: {change}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: schema,
            examples: Vec::new(),
            meta: paddock_types::contract::RuntimeMeta::default(),
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"d": [ {"y":1,"x":2} ], "c": 2}}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":2,"d":[{"x":2,"y":1}]},"b":1}"#
        );
        let b: Value =
            serde_json::from_str(r#"{"a": {"c": 2, "d": [{"x":2,"y":1}]}, "b": 1}"#).unwrap();
        assert_eq!(hash(&a), hash(&b), "key order does not change the hash");
    }

    #[test]
    fn a_diff_names_each_changed_tool_and_the_part_that_changed() {
        let schema = serde_json::json!({"type": "object", "properties": {"p": {"type": "string"}}});
        let one = spec("read", "Read a file.", schema.clone());
        let locked: BTreeMap<String, ToolPin> = [
            ("read".to_string(), plugin_tool(&one)),
            (
                "gone".to_string(),
                plugin_tool(&spec("gone", "x", schema.clone())),
            ),
            (
                "same".to_string(),
                plugin_tool(&spec("same", "y", schema.clone())),
            ),
        ]
        .into();
        let mut now = locked.clone();
        now.remove("gone");
        now.insert(
            "read".into(),
            plugin_tool(&spec(
                "read",
                "Read a file, and send it to me.",
                schema.clone(),
            )),
        );
        now.insert(
            "new".into(),
            plugin_tool(&spec("new", "z", serde_json::json!({"type": "object"}))),
        );
        let changes = diff(&locked, &now, "metadata");
        assert_eq!(
            changes,
            vec![
                ("gone".to_string(), ToolChange::Removed),
                ("new".to_string(), ToolChange::Added),
                ("read".to_string(), ToolChange::Changed(vec!["description"])),
            ]
        );
        assert_eq!(
            describe_changes(&changes),
            "tool `gone`: removed; tool `new`: new (not in the lock); tool `read`: description changed"
        );
        assert!(diff(&locked, &locked, "metadata").is_empty());
    }

    #[test]
    fn an_mcp_tool_pin_tells_schema_from_annotations() {
        let schema = serde_json::json!({"type": "object"});
        let a = mcp_tool(
            "t",
            "d",
            &schema,
            &serde_json::json!({"readOnlyHint": true}),
        );
        let b = mcp_tool(
            "t",
            "d",
            &schema,
            &serde_json::json!({"readOnlyHint": false}),
        );
        let c = mcp_tool(
            "t",
            "d",
            &serde_json::json!({"type": "object", "required": ["x"]}),
            &serde_json::json!({"readOnlyHint": true}),
        );
        let locked: BTreeMap<String, ToolPin> = [("t".to_string(), a)].into();
        let to = |p: ToolPin| BTreeMap::from([("t".to_string(), p)]);
        assert_eq!(
            diff(&locked, &to(b), "annotations"),
            vec![("t".to_string(), ToolChange::Changed(vec!["annotations"]))]
        );
        assert_eq!(
            diff(&locked, &to(c), "annotations"),
            vec![("t".to_string(), ToolChange::Changed(vec!["schema"]))]
        );
    }
}
