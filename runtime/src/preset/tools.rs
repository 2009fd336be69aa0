//! `[tools]` (P1): which tools a session loads, by name or glob, optionally qualified by the
//! plugin that provides them (`"search:grep"`), and aliases for them. A qualified entry picks
//! one of two plugins that provide the same name: `disable = ["fs:grep"]` keeps `search`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// `[tools]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSelection {
    /// Names or globs (`*`, `?`), each optionally `PLUGIN:`-qualified; only matching tools
    /// load. Absent: every tool.
    #[serde(default)]
    pub enable: Option<Vec<ToolGlob>>,
    /// Names or globs removed after `enable`.
    #[serde(default)]
    pub disable: Vec<ToolGlob>,
    /// Another name the model may use => the registered tool it means.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
}

impl ToolSelection {
    /// Does the selection keep tool `name` of `plugin` (`None`: any plugin; then a qualified
    /// entry never matches)?
    pub fn keeps(&self, plugin: Option<&str>, name: &str) -> bool {
        let enabled = match &self.enable {
            Some(globs) => globs.iter().any(|g| g.matches_in(plugin, name)),
            None => true,
        };
        enabled && !self.disable.iter().any(|g| g.matches_in(plugin, name))
    }
}

/// A tool name or a glob over tool names, optionally `PLUGIN:`-qualified, kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ToolGlob(pub String);

impl ToolGlob {
    /// The plugin a qualified entry names.
    pub fn plugin(&self) -> Option<&str> {
        self.0.split_once(':').map(|(plugin, _)| plugin)
    }

    /// The name or glob, without its plugin.
    pub fn pattern(&self) -> &str {
        self.0
            .split_once(':')
            .map_or(self.0.as_str(), |(_, pattern)| pattern)
    }

    /// Has a `*` or `?`.
    pub fn is_glob(&self) -> bool {
        self.pattern().contains(['*', '?'])
    }

    /// An unqualified entry matching `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.matches_in(None, name)
    }

    /// Matches tool `name` of `plugin`: a qualified entry only when the plugin is the one it
    /// names.
    pub fn matches_in(&self, plugin: Option<&str>, name: &str) -> bool {
        let plugin_ok = match self.plugin() {
            Some(wanted) => plugin == Some(wanted),
            None => true,
        };
        plugin_ok && glob_match(self.pattern().as_bytes(), name.as_bytes())
    }
}

impl<'de> Deserialize<'de> for ToolGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let (plugin, pattern) = match text.split_once(':') {
            Some((plugin, pattern)) => (Some(plugin), pattern),
            None => (None, text.as_str()),
        };
        let plugin_ok = plugin.is_none_or(paddock_types::contract::valid_tool_name);
        let pattern_ok = !pattern.is_empty()
            && pattern.len() <= 64
            && pattern
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'*' | b'?'));
        if plugin_ok && pattern_ok {
            Ok(ToolGlob(text))
        } else {
            Err(serde::de::Error::custom(format!(
                "{text:?} is not a tool name or glob; use letters, digits, _, - and the \
                 wildcards * and ?, optionally after the plugin's name and a colon \
                 (\"search:grep\")"
            )))
        }
    }
}

/// `*` matches any run of characters, `?` one character.
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_match(&pattern[1..], name) || (!name.is_empty() && glob_match(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob_match(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob_match(&pattern[1..], &name[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let g = |p: &str| ToolGlob(p.into());
        assert!(g("*").matches("read_file"));
        assert!(g("read_*").matches("read_file"));
        assert!(!g("read_*").matches("write_file"));
        assert!(g("?rep").matches("grep"));
        assert!(!g("grep").matches("grep2"));
    }

    #[test]
    fn a_qualified_entry_matches_only_its_plugins_tool() {
        let g = ToolGlob("fs:grep".into());
        assert!(g.matches_in(Some("fs"), "grep"));
        assert!(!g.matches_in(Some("search"), "grep"));
        assert!(!g.matches("grep"));
        let selection = ToolSelection {
            disable: vec![g],
            ..ToolSelection::default()
        };
        assert!(!selection.keeps(Some("fs"), "grep"));
        assert!(selection.keeps(Some("search"), "grep"));
    }

    #[test]
    fn a_qualified_entry_parses_strictly() {
        let parse = |text: &str| toml::from_str::<ToolSelection>(text);
        assert!(parse("disable = [\"search:grep\", \"my-plugin:read_*\"]").is_ok());
        let err = parse("disable = [\"a:b:c\"]").unwrap_err().to_string();
        assert!(err.contains("search:grep"), "{err}");
        assert!(parse("disable = [\":grep\"]").is_err());
        assert!(parse("disable = [\"fs:\"]").is_err());
    }
}
