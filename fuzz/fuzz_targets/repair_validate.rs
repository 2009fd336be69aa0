//! Fuzz target for repair and validation (V3, V4): any name and any argument bytes go through
//! `check_call` against a few real-shaped schemas. It must never panic, and whatever it accepts
//! must pass the tool's schema.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use paddock::calls::{AliasTable, ToolIndex, check_call};
use paddock_types::contract::{RuntimeMeta, ToolSpec};
use serde_json::json;

struct Tools(Vec<(ToolSpec, jsonschema::Validator)>);

impl ToolIndex for Tools {
    fn lookup(&self, name: &str) -> Option<(&ToolSpec, &jsonschema::Validator)> {
        self.0
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(s, v)| (s, v))
    }
    fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(s, _)| s.name.as_str()).collect()
    }
}

fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let schemas = [
            (
                "read_file",
                json!({"type": "object", "properties": {"path": {"type": "string"},
                "offset": {"type": "integer"}, "limit": {"type": "integer"}},
                "required": ["path"], "additionalProperties": false}),
            ),
            (
                "edit_file",
                json!({"type": "object", "properties": {"path": {"type": "string"},
                "old_string": {"type": "string"}, "new_string": {"type": "string"},
                "edits": {"type": "array", "items": {"type": "object"}}},
                "required": ["path"]}),
            ),
            (
                "list_dir",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
        ];
        Tools(
            schemas
                .into_iter()
                .map(|(name, parameters)| {
                    let validator = jsonschema::validator_for(&parameters).expect("schema");
                    let spec = ToolSpec {
                        name: name.into(),
                        description: String::new(),
                        parameters,
                        examples: Vec::new(),
                        meta: RuntimeMeta::default(),
                    };
                    (spec, validator)
                })
                .collect(),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    // First byte picks how much of the rest is the name.
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let split = (split as usize % 16).min(rest.len());
    let name = String::from_utf8_lossy(&rest[..split]);
    let raw = String::from_utf8_lossy(&rest[split..]);
    let names = ["read_file", "edit_file", "list_dir", "Read"];
    let name = if split == 0 {
        names[rest.len() % names.len()].into()
    } else {
        name
    };
    let checked = check_call(tools(), &AliasTable::default(), &name, &raw);
    if let (Some(tool), Ok(args)) = (&checked.tool, &checked.args) {
        let (_, validator) = tools().lookup(tool).expect("resolved tools exist");
        assert!(validator.is_valid(args));
    }
});
