//! A hook's `config` is checked before the session starts (H2): a hook that declares what its
//! `config` accepts (a JSON Schema) has the preset's table checked against it, so a typo is an
//! error at `preset check` and at every start, with the key and the closest valid one, instead
//! of a hook that denies every call at run time. The shipped hooks declare theirs beside their
//! source (`plugins/hooks/NAME/config.schema.json`, embedded here); a hook from elsewhere
//! declares nothing yet (its `config` is read by the hook at its first call).

use serde_json::Value;

use super::findings::{Finding, Severity};
use super::locate::KeyPath;
use crate::plugin_store::DidYouMean;
use crate::preset::PresetFile;

/// The config schemas the shipped hooks declare, by built-in name.
const DECLARED: &[(&str, &str)] = &[
    (
        "protect-paths",
        include_str!("../../../../plugins/hooks/protect-paths/config.schema.json"),
    ),
    (
        "redact-secrets",
        include_str!("../../../../plugins/hooks/redact-secrets/config.schema.json"),
    ),
    (
        "audit",
        include_str!("../../../../plugins/hooks/audit/config.schema.json"),
    ),
];

/// The schema hook `source` declares for its `config`, if it declares one.
fn declared(source: &str) -> Option<Value> {
    let name = source.strip_prefix("builtin:")?;
    let (_, text) = DECLARED.iter().find(|(n, _)| *n == name)?;
    serde_json::from_str(text).ok()
}

/// Every hook `config` of `file` that its hook's declaration refuses.
pub fn hook_configs(file: &PresetFile) -> Vec<Finding> {
    let mut found = Vec::new();
    for (i, hook) in file.hooks.iter().enumerate() {
        let Some(schema) = declared(&hook.source) else {
            continue;
        };
        let config = match &hook.config {
            Some(table) => serde_json::to_value(table).unwrap_or(Value::Null),
            None => Value::Object(Default::default()),
        };
        let at = KeyPath::of("hooks").index(i).key("config");
        let before = found.len();
        unknown_keys(&at, &hook.source, &schema, &config, &mut found);
        if found.len() > before {
            continue;
        }
        let Ok(validator) = jsonschema::validator_for(&schema) else {
            continue;
        };
        for error in validator.iter_errors(&config) {
            let mut key = at.clone();
            for step in error.instance_path().to_string().split('/').skip(1) {
                key = match step.parse::<usize>() {
                    Ok(index) => key.index(index),
                    Err(_) => key.key(step),
                };
            }
            found.push(Finding {
                severity: Severity::Error,
                at: key,
                file: None,
                message: format!("hook `{}` does not take this config: {error}", hook.source),
                fix: format!(
                    "write what the hook declares: {}",
                    accepted(&schema).unwrap_or_else(|| "see its documentation".into())
                ),
            });
        }
    }
    found
}

/// Keys of `config` the schema's `properties` do not name (with `additionalProperties`
/// false), each with the closest valid key.
fn unknown_keys(
    at: &KeyPath,
    source: &str,
    schema: &Value,
    config: &Value,
    found: &mut Vec<Finding>,
) {
    let (Some(properties), Some(given)) = (schema["properties"].as_object(), config.as_object())
    else {
        return;
    };
    if schema["additionalProperties"] != Value::Bool(false) {
        return;
    }
    for key in given.keys().filter(|k| !properties.contains_key(*k)) {
        found.push(Finding {
            severity: Severity::Error,
            at: at.clone().key(key),
            file: None,
            message: format!(
                "hook `{source}` has no config key `{key}`{}",
                DidYouMean::among(key, properties.keys().map(String::as_str))
            ),
            fix: match accepted(schema) {
                Some(keys) => format!("use one of its keys: {keys}"),
                None => format!("remove `{key}`: hook `{source}` takes no configuration"),
            },
        });
    }
}

/// The keys a schema accepts, with their types: `globs (array), deny_writes (boolean)`.
fn accepted(schema: &Value) -> Option<String> {
    let properties = schema["properties"].as_object()?;
    if properties.is_empty() {
        return None;
    }
    Some(
        properties
            .iter()
            .map(|(key, value)| match value["type"].as_str() {
                Some(kind) => format!("{key} ({kind})"),
                None => key.clone(),
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_in_a_shipped_hook_config_names_the_closest_key() {
        let file = crate::preset::parse(
            "p.toml",
            "[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nconfig = { glob = [\".env\"] }\n\n\
             [[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nconfig = { deny_writes = \"yes\" }\n\n\
             [[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\nconfig = { verbose = true }\n\n\
             [[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nconfig = { globs = [\"a\"], deny_writes = true }\n",
        )
        .unwrap();
        let found = hook_configs(&file);
        let keys: Vec<String> = found.iter().map(|f| f.at.to_string()).collect();
        assert_eq!(
            keys,
            [
                "hooks[0].config.glob",
                "hooks[1].config.deny_writes",
                "hooks[2].config.verbose"
            ],
            "{found:?}"
        );
        assert!(
            found[0].message.contains("(did you mean `globs`?)"),
            "{found:?}"
        );
        assert!(
            found[0].fix.contains("globs (array)")
                && found[0].fix.contains("deny_writes (boolean)"),
            "{found:?}"
        );
        assert!(found[2].fix.contains("takes no configuration"), "{found:?}");
    }
}
