//! Protected paths (K2): files inside a mount that other programs execute or that configure
//! paddock itself. No tool and no program a tool starts may create, change, rename or remove
//! them unless the grant names them, whatever spelling the request used.
//!
//! This module only *decides*: given a path relative to a mount's root, as the kernel resolved
//! it (never the string a plugin or model sent), is it protected? The default rules are the
//! inventory of what executes from a working tree (`ambient`); a grant adds `extra` paths
//! (the preset's `protect`, and paths the repositories' own git configuration names, see
//! `git_config`) and opens some up (`writable_protected`). The enforcement lives where the
//! access happens: the WASI filesystem guard for plugins, read-only bind mounts and
//! placeholders for programs started through `exec` and MCP servers.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fs::ambient;

/// What a grant protects beyond the defaults, and which protected paths it opens up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protect {
    /// More paths, relative to each mount's root (the preset's `protect = [...]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<PathBuf>,
    /// Protected paths this grant may write after all, relative to each mount's root (the
    /// preset's `writable_protected = [...]`), e.g. `.git` for a tool that commits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<PathBuf>,
}

impl Protect {
    /// Is `rel` (relative to a mount's root, already resolved by the kernel) protected?
    /// Paths that are not plainly relative (`..`, absolute) are treated as protected: the
    /// callers resolve first, so such a path means something went wrong.
    pub fn covers(&self, rel: &Path) -> bool {
        let Some(rel) = normal(rel) else {
            return true;
        };
        if self
            .writable
            .iter()
            .filter_map(|w| normal(w))
            .any(|w| rel.starts_with(&w))
        {
            return false;
        }
        is_default_protected(&rel)
            || self
                .extra
                .iter()
                .filter_map(|p| normal(p))
                .any(|p| rel.starts_with(&p))
    }

    /// Could `covers` be true of a path ending in `name` whose parent it is not true of? Only
    /// when `name` is the last component of a rule: an inventory name, the second name of a
    /// pair (`config.toml`), the last component of an `extra` entry. A walk that stops at
    /// protected entries asks this first, so most names cost one comparison per rule.
    pub fn could_cover_last(&self, name: &std::ffi::OsStr) -> bool {
        ambient::is_last_of_a_name(name)
            || self
                .extra
                .iter()
                .any(|p| p.file_name().is_some_and(|last| last == name))
    }

    /// Does the grant's `writable_protected` open `rel` up? (A directory git would take for a
    /// git directory is protected by what it holds, whatever its name, unless opened here.)
    pub fn opens(&self, rel: &Path) -> bool {
        let Some(rel) = normal(rel) else {
            return false;
        };
        self.writable
            .iter()
            .filter_map(|w| normal(w))
            .any(|w| rel.starts_with(&w))
    }

    /// The protected paths a mount's root can hold directly, relative to it (the inventory's
    /// names that are held where missing, the `extra` entries), less those the grant opens
    /// up: where one is missing, the exec side makes sure it cannot be created.
    pub fn at_root(&self) -> Vec<PathBuf> {
        let defaults = ambient::NAMES
            .iter()
            .filter(|entry| entry.hold_missing)
            .map(|entry| PathBuf::from(entry.path));
        defaults
            .chain(self.extra.iter().filter_map(|p| normal(p)))
            .filter(|p| !p.as_os_str().is_empty() && !self.opens(p))
            .collect()
    }

    /// Could a protected path lie *below* `rel`? Moving a directory to `rel` (or away from
    /// it) would then create or remove protected paths wholesale: a directory renamed to
    /// `.cargo` brings its `config.toml` along, one renamed over an `extra` entry's parent
    /// replaces that entry.
    pub fn holds(&self, rel: &Path) -> bool {
        let Some(rel) = normal(rel) else {
            return true;
        };
        let below = |p: PathBuf| p.starts_with(&rel) && p != rel && self.covers(&p);
        let pair = rel.file_name().is_some_and(|name| {
            ambient::NAMES.iter().any(|entry| {
                entry.path.split_once('/').is_some_and(|(dir, file)| {
                    name == dir
                        && ambient::holds_tool_config(name, file.as_ref())
                        && below(rel.join(file))
                })
            })
        });
        pair || self.extra.iter().filter_map(|p| normal(p)).any(below)
    }
}

/// A default rule matches `rel`: it passes through a name of the inventory (`ambient`).
fn is_default_protected(rel: &Path) -> bool {
    let names: Vec<&std::ffi::OsStr> = rel.iter().collect();
    ambient::names_a_tool_config(&names)
}

/// `rel` without `.` components, or `None` when it is absolute or climbs with `..`.
fn normal(rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in rel.components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(protect: &Protect, rel: &str) -> bool {
        protect.covers(Path::new(rel))
    }

    #[test]
    fn defaults_cover_git_paddock_and_cargo_config_at_any_depth() {
        let p = Protect::default();
        for rel in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "./.git/config",
            "sub/.git",
            "sub/.git/config",
            ".paddock/presets/default.toml",
            ".cargo/config.toml",
            ".cargo/config",
            "crates/a/.cargo/config.toml",
        ] {
            assert!(covers(&p, rel), "{rel} should be protected");
        }
        for rel in [
            "src/main.rs",
            ".gitignore",
            ".github/workflows/ci.yml",
            ".cargo/registry",
            "git/config",
            "",
        ] {
            assert!(!covers(&p, rel), "{rel} should not be protected");
        }
    }

    #[test]
    fn climbing_or_absolute_paths_count_as_protected() {
        let p = Protect::default();
        assert!(covers(&p, "../x"));
        assert!(covers(&p, "/etc/passwd"));
    }

    #[test]
    fn extra_entries_extend_and_writable_entries_open_up() {
        let p = Protect {
            extra: vec![".envrc".into(), ".vscode".into()],
            writable: vec![".git".into()],
        };
        assert!(covers(&p, ".envrc"));
        assert!(covers(&p, ".vscode/settings.json"));
        assert!(!covers(&p, ".git/config"));
        assert!(covers(&p, ".paddock/x"));
        assert!(p.holds(Path::new(".cargo")));
        assert!(p.holds(Path::new("crates/a/.cargo")));
        assert!(!p.holds(Path::new("src")));
        let nested = Protect {
            extra: vec!["conf/secrets".into()],
            writable: Vec::new(),
        };
        assert!(nested.holds(Path::new("conf")));
        assert!(!nested.holds(Path::new("other")));
    }
}
