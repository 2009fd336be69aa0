//! A hook's `config` is checked before the session starts (H2): a hook that declares what its
//! `config` accepts (a JSON Schema, through its `hook-config` export, world `configured-hook`
//! in `wit/hook.wit`) has the preset's table checked against it, so a typo is an error at
//! `preset check` and at every start, with the key and the closest valid one, instead of a
//! hook that denies every call at run time. A hook of the plain `hook` world declares nothing
//! (its `config` is read by the hook at its first call).

use std::collections::HashMap;

use serde_json::Value;

use super::findings::{Finding, Severity};
use super::locate::KeyPath;
use crate::plugin_store::{DidYouMean, PluginStore};
use crate::preset::{PresetFile, ResolvedPreset};
use paddock_sandbox::Sandbox;

/// What each hook of a preset declares, by its index in `hooks`: the schema text (`None`
/// when it declares nothing), or why it could not be asked.
pub type Declared = HashMap<usize, Result<Option<String>, String>>;

/// Asks every hook of `preset` what its `config` accepts (a built-in answers from its
/// build-time description; another hook is compiled, cached, and asked in the sandbox).
pub async fn declared(sandbox: &Sandbox, store: &PluginStore, preset: &ResolvedPreset) -> Declared {
    let mut declared = Declared::new();
    for hook in &preset.hooks {
        let answer = match store.bytes(&hook.source) {
            Ok(wasm) => {
                sandbox
                    .hook_config_schema(&hook.name, &wasm, &hook.grant)
                    .await
            }
            Err(e) => Err(e.to_string()),
        };
        declared.insert(hook.index, answer);
    }
    declared
}

/// Every hook `config` of `file` that its hook's declaration refuses, and every hook whose
/// declaration cannot be read or used.
pub fn hook_configs(file: &PresetFile, declared: &Declared) -> Vec<Finding> {
    let mut found = Vec::new();
    for (i, hook) in file.hooks.iter().enumerate() {
        let source_at = KeyPath::of("hooks").index(i).key("source");
        let schema = match declared.get(&i) {
            None | Some(Ok(None)) => continue,
            Some(Err(why)) => {
                found.push(Finding {
                    severity: Severity::Error,
                    at: source_at,
                    file: None,
                    message: format!(
                        "hook `{}` could not be asked what its config accepts: {why}",
                        hook.source
                    ),
                    fix: "fix or rebuild the hook, or remove it from the preset".into(),
                });
                continue;
            }
            Some(Ok(Some(text))) => text,
        };
        let invalid = |why: String| Finding {
            severity: Severity::Error,
            at: source_at.clone(),
            file: None,
            message: format!(
                "hook `{}` declares a config schema that is not a valid JSON Schema: {why}",
                hook.source
            ),
            fix: "the hook's `config-schema` must answer a JSON Schema; rebuild the hook with \
                  one, or remove it from the preset"
                .into(),
        };
        let schema: Value = match serde_json::from_str(schema) {
            Ok(schema) => schema,
            Err(e) => {
                found.push(invalid(e.to_string()));
                continue;
            }
        };
        let validator = match jsonschema::validator_for(&schema) {
            Ok(validator) => validator,
            Err(e) => {
                found.push(invalid(e.to_string()));
                continue;
            }
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

    const PROTECT: &str =
        include_str!("../../../../plugins/hooks/protect-paths/config.schema.json");
    const AUDIT: &str = include_str!("../../../../plugins/hooks/audit/config.schema.json");

    fn answers(schemas: &[Result<Option<&str>, &str>]) -> Declared {
        schemas
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.map(|s| s.map(str::to_string)).map_err(str::to_string)))
            .collect()
    }

    fn hooks(configs: &[&str]) -> PresetFile {
        let text: String = configs
            .iter()
            .map(|c| format!("[[hooks]]\nsource = \"h\"\non = \"pre\"\nconfig = {c}\n\n"))
            .collect();
        crate::preset::parse("p.toml", &text).unwrap()
    }

    #[test]
    fn a_typo_in_a_declared_hook_config_names_the_closest_key() {
        let file = hooks(&[
            "{ glob = [\".env\"] }",
            "{ deny_writes = \"yes\" }",
            "{ verbose = true }",
            "{ globs = [\"a\"], deny_writes = true }",
        ]);
        let declared = answers(&[
            Ok(Some(PROTECT)),
            Ok(Some(PROTECT)),
            Ok(Some(AUDIT)),
            Ok(Some(PROTECT)),
        ]);
        let found = hook_configs(&file, &declared);
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

    #[test]
    fn a_declared_schema_that_points_elsewhere_is_refused_without_fetching_it() {
        // A hook's author writes its schema: a `$ref` to a server or a file must not make
        // `preset check` reach the network or read the user's files.
        let file = hooks(&["{}", "{}"]);
        let declared = answers(&[
            Ok(Some(r#"{"$ref": "http://127.0.0.1:9/schema.json"}"#)),
            Ok(Some(r#"{"$ref": "file:///etc/passwd"}"#)),
        ]);
        let found = hook_configs(&file, &declared);
        let keys: Vec<String> = found.iter().map(|f| f.at.to_string()).collect();
        assert_eq!(keys, ["hooks[0].source", "hooks[1].source"], "{found:?}");
        assert!(
            found
                .iter()
                .all(|f| f.message.contains("not a valid JSON Schema")),
            "{found:?}"
        );
    }

    #[test]
    fn a_declared_pattern_that_would_backtrack_forever_does_not_hang_the_check() {
        let file = hooks(&["{ a = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\" }"]);
        let schema =
            r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}"#;
        // The regex engine matches in linear time: this returns, with the mismatch found.
        let found = hook_configs(&file, &answers(&[Ok(Some(schema))]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.contains("does not take this config"),
            "{found:?}"
        );
    }

    #[test]
    fn a_hook_that_declares_nothing_takes_any_config() {
        let file = hooks(&["{ anything = 1 }"]);
        assert!(hook_configs(&file, &answers(&[Ok(None)])).is_empty());
        assert!(hook_configs(&file, &Declared::new()).is_empty());
    }

    #[test]
    fn a_declaration_that_cannot_be_read_or_used_is_an_error_at_the_hook_source() {
        let file = hooks(&["{}", "{}", "{}"]);
        let declared = answers(&[
            Err("it traps"),
            Ok(Some("{not json")),
            Ok(Some("{\"type\": 12}")),
        ]);
        let found = hook_configs(&file, &declared);
        let keys: Vec<String> = found.iter().map(|f| f.at.to_string()).collect();
        assert_eq!(
            keys,
            ["hooks[0].source", "hooks[1].source", "hooks[2].source"],
            "{found:?}"
        );
        assert!(
            found[0].message.contains("could not be asked")
                && found[0].message.contains("it traps"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .skip(1)
                .all(|f| f.message.contains("not a valid JSON Schema")),
            "{found:?}"
        );
        assert!(
            found.iter().all(|f| f.severity == Severity::Error),
            "{found:?}"
        );
    }
}
