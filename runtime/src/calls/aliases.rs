//! Tool-name aliases (V3, step 7): the names models trained on other agents reach for (`Read`,
//! `Write`, `Edit`, `Bash`, `readfile`, `read-file`) mapped to the tools this session has.
//!
//! A table, not an if/else chain, and presets can extend it. A name resolves, in order: to a
//! registered tool of exactly that name; to the table's target, if that target is registered;
//! to the one registered tool whose name is the same up to case and separators. Anything
//! ambiguous stays unresolved and becomes UNKNOWN_TOOL.

use std::collections::HashMap;

use super::repair::squash;

/// Aliases every session knows, as (alias, tool); an alias listed twice means the first of
/// its tools the session has (`Bash` is the shell where there is one, else `run_command`).
const BUILT_IN: &[(&str, &str)] = &[
    ("Read", "read_file"),
    ("ReadFile", "read_file"),
    ("cat", "read_file"),
    ("view", "read_file"),
    ("Write", "write_file"),
    ("WriteFile", "write_file"),
    ("create_file", "write_file"),
    ("Edit", "edit_file"),
    ("str_replace", "edit_file"),
    ("str_replace_editor", "edit_file"),
    ("LS", "list_dir"),
    ("list_directory", "list_dir"),
    ("list_files", "list_dir"),
    ("Grep", "grep"),
    ("search", "grep"),
    ("Glob", "glob"),
    ("find_files", "glob"),
    ("Bash", "shell"),
    ("Bash", "run_command"),
    ("exec_command", "shell"),
    ("exec_command", "run_command"),
    ("shell", "run_command"),
    ("bash", "shell"),
    ("terminal", "shell"),
    ("exec", "shell"),
    ("exec", "run_command"),
    ("run", "run_command"),
    ("BashOutput", "write_stdin"),
    ("KillBash", "write_stdin"),
    ("KillShell", "write_stdin"),
    ("write_stdin", "write_stdin"),
    ("WebFetch", "fetch_url"),
    ("fetch", "fetch_url"),
];

/// Alias → tool, keyed by the alias's squashed form (lower case, no separators).
#[derive(Debug, Clone)]
pub struct AliasTable {
    /// Targets in order of preference; a preset's own alias comes first.
    map: HashMap<String, Vec<String>>,
}

impl Default for AliasTable {
    fn default() -> AliasTable {
        let mut table = AliasTable {
            map: HashMap::new(),
        };
        for (alias, tool) in BUILT_IN {
            table
                .map
                .entry(squash(alias))
                .or_default()
                .push(tool.to_string());
        }
        table
    }
}

impl AliasTable {
    /// Adds or replaces aliases (a preset's own, say).
    pub fn extend(&mut self, pairs: impl IntoIterator<Item = (String, String)>) {
        for (alias, tool) in pairs {
            self.map.insert(squash(&alias), vec![tool]);
        }
    }

    /// The registered tool `name` means, if exactly one; `known` lists the registered names.
    pub fn resolve<'k>(&self, name: &str, known: &[&'k str]) -> Option<&'k str> {
        if let Some(exact) = known.iter().find(|k| **k == name) {
            return Some(exact);
        }
        let wanted = squash(name);
        if let Some(found) = self
            .map
            .get(&wanted)
            .into_iter()
            .flatten()
            .find_map(|target| known.iter().find(|k| *k == target))
        {
            return Some(found);
        }
        let mut variants = known.iter().filter(|k| squash(k) == wanted);
        let only = variants.next()?;
        variants.next().is_none().then_some(*only)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["read_file", "write_file", "edit_file", "list_dir", "grep"];

    #[test]
    fn aliases_and_variants_resolve_to_registered_tools() {
        let table = AliasTable::default();
        let cases = [
            ("read_file", Some("read_file")),
            ("Read", Some("read_file")),
            ("readfile", Some("read_file")),
            ("read-file", Some("read_file")),
            ("READ_FILE", Some("read_file")),
            ("Write", Some("write_file")),
            ("Edit", Some("edit_file")),
            ("LS", Some("list_dir")),
            ("Grep", Some("grep")),
            // `run` is not registered here, so Bash stays unknown instead of guessing.
            ("Bash", None),
            ("delete_file", None),
            ("", None),
        ];
        for (name, expected) in cases {
            assert_eq!(table.resolve(name, KNOWN), expected, "{name}");
        }
    }

    #[test]
    fn a_preset_can_add_its_own_aliases() {
        let mut table = AliasTable::default();
        table.extend([("open".to_string(), "read_file".to_string())]);
        assert_eq!(table.resolve("Open", KNOWN), Some("read_file"));
    }

    #[test]
    fn names_that_match_two_tools_up_to_case_stay_unresolved() {
        let table = AliasTable::default();
        assert_eq!(table.resolve("ab", &["a_b", "A-B"]), None);
    }
}
