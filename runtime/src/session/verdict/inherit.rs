//! What `extends` does to hooks, told from the files as written: the base's hooks are kept and
//! a preset's own run after them, less those it names in `hooks_drop` (`preset/extends.rs`
//! merges them so). Here: which file set each effective hook (for `preset show`), and the
//! findings on `hooks_drop` (a name no base hook has is an error; each base hook it drops is a
//! warning, since every hook is part of the policy the base preset meant).

use toml::de::{DeTable, DeValue};

use super::findings::{Finding, Severity};
use super::locate::{KeyPath, entry};
use crate::plugin_store::DidYouMean;
use crate::preset::{PresetSource, hook_name, line_col};

/// One effective hook: its name, what it is, and where it is written (`file:line:column`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOrigin {
    pub name: String,
    /// `source` and `on`, e.g. `builtin:protect-paths (pre)`.
    pub what: String,
    pub at: String,
    /// The file of the chain that writes it, and its index in that file's `hooks`.
    pub file: usize,
    pub index: usize,
}

/// The effective hooks in the order they run, each with the file that set it, and the
/// findings on every `hooks_drop` of the chain (`chain`: the preset first, its bases after).
pub fn hooks(chain: &[PresetSource]) -> (Vec<HookOrigin>, Vec<Finding>) {
    let mut effective: Vec<HookOrigin> = Vec::new();
    let mut found = Vec::new();
    // The deepest base first: each file's hooks come after those it inherits.
    for (file, source) in chain.iter().enumerate().rev() {
        let Ok(doc) = DeTable::parse(&source.text) else {
            continue;
        };
        let table = doc.get_ref();
        let extends = entry(table, "extends").is_some();
        if let Some((_, DeValue::Array(drops))) = entry(table, "hooks_drop") {
            for (i, drop) in drops.iter().enumerate() {
                let DeValue::String(name) = drop.get_ref() else {
                    continue;
                };
                let at = KeyPath::of("hooks_drop").index(i);
                let known: Vec<&str> = effective.iter().map(|h| h.name.as_str()).collect();
                match effective.iter().position(|h| h.name == **name) {
                    // Every base hook of that name goes, as `extends` drops them all.
                    Some(_) => {
                        let (gone, kept): (Vec<HookOrigin>, Vec<HookOrigin>) =
                            std::mem::take(&mut effective)
                                .into_iter()
                                .partition(|h| h.name == **name);
                        effective = kept;
                        found.extend(gone.into_iter().map(|hook| Finding {
                            severity: Severity::Warning,
                            at: at.clone(),
                            file: Some(file),
                            message: format!(
                                "drops the base's hook `{}` ({}, set at {}): the calls it guards \
                                 run without it",
                                hook.name, hook.what, hook.at
                            ),
                            fix: format!(
                                "keep it (remove \"{}\" from hooks_drop) unless this preset \
                                 means to run without that guard",
                                hook.name
                            ),
                        }));
                    }
                    None if !extends => found.push(Finding {
                        severity: Severity::Error,
                        at,
                        file: Some(file),
                        message: "hooks_drop names hooks of the base preset, but this preset \
                                  extends none"
                            .into(),
                        fix: "remove hooks_drop, or add `extends = \"NAME\"`".into(),
                    }),
                    None => found.push(Finding {
                        severity: Severity::Error,
                        at,
                        file: Some(file),
                        message: format!(
                            "hooks_drop names `{name}`, but the base preset has no hook of \
                             that name{}",
                            DidYouMean::among(name, known.iter().copied())
                        ),
                        fix: format!(
                            "name one of the base's hooks: {}",
                            if known.is_empty() {
                                "(it has none)".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    }),
                }
            }
        }
        let own: Vec<HookOrigin> = match entry(table, "hooks") {
            Some((_, DeValue::Array(hooks))) => hooks
                .iter()
                .enumerate()
                .map(|(index, hook)| {
                    let mut hook = origin(source, hook.span().start, hook.get_ref());
                    (hook.file, hook.index) = (file, index);
                    hook
                })
                .collect(),
            _ => Vec::new(),
        };
        effective.extend(own);
    }
    (effective, found)
}

fn origin(source: &PresetSource, offset: usize, hook: &DeValue<'_>) -> HookOrigin {
    let text = |key: &str| match hook {
        DeValue::Table(t) => match entry(t, key) {
            Some((_, DeValue::String(s))) => Some(s.to_string()),
            _ => None,
        },
        _ => None,
    };
    let mut plain = toml::Table::new();
    for key in ["name", "source"] {
        if let Some(v) = text(key) {
            plain.insert(key.into(), toml::Value::String(v));
        }
    }
    let (line, col) = line_col(&source.text, offset);
    HookOrigin {
        name: hook_name(&toml::Value::Table(plain)).unwrap_or_else(|| "?".into()),
        what: format!(
            "{} ({})",
            text("source").unwrap_or_default(),
            text("on").unwrap_or_default()
        ),
        at: format!("{}:{line}:{col}", source.location),
        file: 0,
        index: 0,
    }
}

#[cfg(test)]
mod tests {
    use crate::preset::locate::tests::source;
    use super::*;

    #[test]
    fn each_hook_names_the_file_that_set_it_and_drops_are_found() {
        let base = source(
            "base.toml",
            "[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\n\n\
             [[hooks]]\nsource = \"builtin:redact-secrets\"\non = \"post\"\n",
        );
        let top = source(
            "top.toml",
            "extends = \"base.toml\"\nhooks_drop = [\"redact-secrets\", \"protect-path\"]\n\n\
             [[hooks]]\nname = \"mine\"\nsource = \"x.wasm\"\non = \"pre\"\n",
        );
        let (hooks, found) = hooks(&[top, base]);
        let names: Vec<(&str, &str)> = hooks
            .iter()
            .map(|h| (h.name.as_str(), h.at.as_str()))
            .collect();
        assert_eq!(
            names,
            [("protect-paths", "base.toml:1:1"), ("mine", "top.toml:4:1")]
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(found[0].message.contains("`redact-secrets`"), "{found:?}");
        assert_eq!(found[1].severity, Severity::Error);
        assert!(
            found[1].message.contains("did you mean `protect-paths`"),
            "{found:?}"
        );
        assert_eq!(found[1].file, Some(0));
    }
}
