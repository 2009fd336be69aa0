//! An empty string where one means nothing (`api_key_env = ""`, `source = ""`, a mount's
//! `host = ""`) is an error, not a quiet default: the preset would pass and the session fail
//! later, or mean something the author did not write. Clearing a value a base sets is written
//! `KEY = false` (`preset/extends.rs`). Where an empty string says something (`system_prompt`,
//! `description`, an MCP server's `args`, a hook's own `config`) it stays allowed.

use super::findings::{Finding, Severity};
use super::locate::KeyPath;

/// Every meaningless empty string of the effective preset `text`.
pub fn empty_strings(text: &str) -> Vec<Finding> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    walk(&KeyPath::default(), &toml::Value::Table(table), &mut found);
    found
}

/// Keys whose empty string is a value of its own.
fn meaningful(at: &KeyPath) -> bool {
    let text = at.to_string();
    let top = text.split(['.', '[']).next().unwrap_or_default();
    matches!(top, "system_prompt" | "description")
        || (top == "mcp" && text.contains(".args["))
        || (top == "hooks" && text.contains(".config"))
}

fn walk(at: &KeyPath, value: &toml::Value, found: &mut Vec<Finding>) {
    match value {
        toml::Value::String(s) if s.trim().is_empty() && !meaningful(at) => found.push(Finding {
            severity: Severity::Error,
            at: at.clone(),
            file: None,
            message: format!(
                "`{at}` is an empty string, which names nothing here (written: {s:?})"
            ),
            fix: format!(
                "give it a value, leave `{at}` out for the default, or write `{at} = false` \
                     to clear a value an extended preset sets"
            ),
        }),
        toml::Value::Table(table) => {
            for (key, value) in table {
                walk(&at.clone().key(key), value, found);
            }
        }
        toml::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&at.clone().index(i), item, found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_strings_are_found_where_they_mean_nothing() {
        let found = empty_strings(
            "description = \"\"\nsystem_prompt = \"\"\n[model]\nmodel = \"m\"\napi_key_env = \"\"\n\
             [mcp.a]\ncommand = \"x\"\nargs = [\"\"]\nenv = [\" \"]\n",
        );
        let mut keys: Vec<String> = found.iter().map(|f| f.at.to_string()).collect();
        keys.sort();
        assert_eq!(keys, ["mcp.a.env[0]", "model.api_key_env"]);
    }
}
