//! What executes from a working tree (K2): the files and directories that make a developer's
//! own tools run a program when they are merely present, read from the tools' own discovery
//! code. `docs/security.md` ("Ambient execution") is the same inventory in prose, each entry
//! with its source and what paddock does about it; this module is the part that code decides
//! by. Every place a session can write (the WASI guard, confined programs, MCP servers, a
//! grant's `write` directories) asks the same two questions through `Protect`:
//!
//! - [`NAMES`]: does a path pass through a name (or a pair of names) one of these tools reads
//!   and runs what it says, wherever it stands (the tools look in every ancestor of their
//!   working directory)?
//! - [`is_git_dir`]: would git take a directory for a git directory, whatever its name? git's
//!   `setup.c::is_git_directory` asks for a valid `HEAD` and `access(X_OK)` on `objects` and
//!   `refs` (under the directory `commondir` names, when there is one). `access` follows
//!   symbolic links and is true for an executable file as much as for a directory, so the rule
//!   here is the names alone, whatever their type: `HEAD` and either `commondir` or both
//!   `objects` and `refs`. It errs wide (a directory with an empty `HEAD` counts) and never
//!   narrow.
//!
//! Paths that configuration names (`core.hooksPath`, `include.path`, a script a filter runs)
//! are the other half of the inventory: `git_config` reads them.

use std::ffi::OsStr;

/// An entry of the inventory: a name, or a directory and a name in it, that a tool reads from
/// any directory of a working tree and runs what it says.
pub(crate) struct Named {
    /// One component (`.npmrc`) or two (`.cargo/config.toml`).
    pub path: &'static str,
    /// The tool and what it runs, for messages and the docs.
    pub why: &'static str,
    /// Where it is missing at a writable root, a placeholder stands while a program runs (see
    /// `placeholder`). False for `.yarn/*`: yarn runs them only as `.yarnrc.yml` (itself held)
    /// names them, and a read-only `.yarn` would stop `yarn install` writing its state.
    pub hold_missing: bool,
}

const fn named(path: &'static str, why: &'static str) -> Named {
    Named {
        path,
        why,
        hold_missing: true,
    }
}

const fn named_existing(path: &'static str, why: &'static str) -> Named {
    Named {
        path,
        why,
        hold_missing: false,
    }
}

/// The names, in the order `docs/security.md` lists them.
pub(crate) const NAMES: &[Named] = &[
    named(
        ".git",
        "git: a gitfile or git directory; its config (core.fsmonitor, aliases, filters) and hooks run on `git status`",
    ),
    named(
        ".paddock",
        "paddock: presets, hooks and instructions a later session reads",
    ),
    named(
        ".agents",
        "Agent Skills: SKILL.md and its scripts, which a later session (paddock, codex, Claude Code, opencode, goose) lists to its model and runs",
    ),
    named(
        ".cargo/config.toml",
        "cargo: read in every ancestor; build.rustc, rustc-wrapper, runner and aliases run on any cargo command",
    ),
    named(
        ".cargo/config",
        "cargo: the legacy name of .cargo/config.toml",
    ),
    named(
        "rust-toolchain.toml",
        "rustup: read in every ancestor; `[toolchain] path` makes every cargo and rustc a program of the file's choosing",
    ),
    named(
        "rust-toolchain",
        "rustup: the legacy name of rust-toolchain.toml (TOML or a toolchain name)",
    ),
    named(
        ".npmrc",
        "npm: project configuration; node-options, script-shell and git run with every npm command that runs scripts",
    ),
    named(
        ".yarnrc",
        "yarn 1: yarn-path runs another yarn for every command",
    ),
    named(
        ".yarnrc.yml",
        "yarn 2+: yarnPath and plugins are JavaScript run by every yarn command",
    ),
    named_existing(
        ".yarn/releases",
        "yarn 2+: the release yarnPath usually names, run by every yarn command",
    ),
    named_existing(
        ".yarn/plugins",
        "yarn 2+: plugins .yarnrc.yml loads, run by every yarn command",
    ),
    named_existing(
        ".hg",
        "Mercurial: a repository in any ancestor; its hgrc's hooks (pre-status, ...) and extensions run on every hg command",
    ),
    named_existing(
        ".jj",
        "Jujutsu: a repository in any ancestor; before 0.34 its repo config set ui.pager and aliases run by every jj command",
    ),
    named_existing(
        ".tool-versions",
        "asdf and mise: a `path:` version makes the tool's shim run a program from that directory",
    ),
    named_existing(
        ".mvn",
        "Maven: the mvn script passes .mvn/jvm.config (a -javaagent) and maven.config to every mvn command, `mvn -v` included",
    ),
    named_existing(
        ".jvmopts",
        "sbt: the launcher passes it to the JVM of every sbt command",
    ),
    named_existing(
        ".sbtopts",
        "sbt: the launcher reads it on every sbt command",
    ),
    named_existing(
        ".bazelrc",
        "Bazel: startup options (host_jvm_args) and run_under apply to every bazel command",
    ),
    named_existing(
        ".pdbrc",
        "Python's pdb: read from the working directory and run as debugger commands (`!` runs Python)",
    ),
    named_existing(".irbrc", "Ruby's irb: loads it from the working directory"),
    named_existing(".pryrc", "Ruby's pry: loads it from the working directory"),
    named(".pnpmfile.cjs", "pnpm: hooks run by every install"),
    named(
        ".pre-commit-config.yaml",
        "pre-commit: the commands the git hook it installs runs on every commit",
    ),
    named("lefthook.yml", "lefthook: the commands its git hooks run"),
    named(".lefthook.yml", "lefthook: the commands its git hooks run"),
    named(
        ".vscode",
        "VS Code: settings name programs the editor and its extensions run; tasks can run when the folder opens",
    ),
    named(
        ".zed",
        "Zed: settings name language servers and tasks it runs",
    ),
    named(
        ".helix",
        "Helix: languages.toml names the language servers it starts on opening a file",
    ),
    named(
        ".idea",
        "JetBrains IDEs: run configurations and tool paths the IDE runs",
    ),
    named_existing(
        ".claude",
        "Claude Code: settings.json hooks (shell commands) and MCP servers its next session in the project runs",
    ),
    named_existing(
        ".mcp.json",
        "Claude Code: the project's MCP servers, commands it starts",
    ),
    named_existing(
        ".codex",
        "codex: a trusted project's config.toml names MCP servers and a notify program it runs",
    ),
    named_existing(
        ".gemini",
        "Gemini CLI: settings.json names MCP servers and hooks it runs",
    ),
    named_existing(
        ".cursor",
        "Cursor: mcp.json servers and hooks.json commands it runs",
    ),
    named_existing(
        ".opencode",
        "opencode: plugins and MCP servers it loads on start",
    ),
    named_existing(
        "opencode.json",
        "opencode: MCP servers (commands) and plugins it starts",
    ),
    named_existing(
        "opencode.jsonc",
        "opencode: MCP servers (commands) and plugins it starts",
    ),
];

/// The entries of a git directory that `is_git_dir` looks at.
pub(crate) const GIT_DIR_MARKERS: [&str; 4] = ["HEAD", "commondir", "objects", "refs"];

/// The entries of a git directory that git reads and that could make it run a program, or
/// make the directory one: what a clean-up removes from a directory the run made a git
/// directory, when the run created them.
pub(crate) const GIT_DIR_ENTRIES: [&str; 10] = [
    "HEAD",
    "commondir",
    "config",
    "config.worktree",
    "hooks",
    "info",
    "objects",
    "refs",
    "packed-refs",
    "worktrees",
];

/// Would git take a directory holding these names for a git directory? `has` says whether the
/// directory has an entry of that name, of any type (see the module comment).
pub fn is_git_dir(has: impl Fn(&str) -> bool) -> bool {
    has("HEAD") && (has("commondir") || (has("objects") && has("refs")))
}

/// Does the path made of `names` (relative to a mount's root, already resolved) pass through
/// an entry of [`NAMES`]?
pub(crate) fn names_a_tool_config(names: &[&OsStr]) -> bool {
    NAMES
        .iter()
        .any(|entry| names_a_tool_config_one(entry, names))
}

/// Is `name` the last component of an entry of [`NAMES`] (`.git`, `config.toml`, ...)? Asked
/// of every name a walk lists, so it compares bytes against a table built once.
pub(crate) fn is_last_of_a_name(name: &OsStr) -> bool {
    static LAST: std::sync::OnceLock<Vec<&'static [u8]>> = std::sync::OnceLock::new();
    let last = LAST.get_or_init(|| {
        NAMES
            .iter()
            .map(|entry| {
                entry
                    .path
                    .rsplit('/')
                    .next()
                    .unwrap_or(entry.path)
                    .as_bytes()
            })
            .collect()
    });
    let name = name.as_encoded_bytes();
    last.contains(&name)
}

/// What the inventory says of the entry `names` (a path relative to a mount's root) passes
/// through: the tool and what it would run.
pub(crate) fn why(names: &[&OsStr]) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|entry| names_a_tool_config_one(entry, names))
        .map(|entry| entry.why)
}

fn names_a_tool_config_one(entry: &Named, names: &[&OsStr]) -> bool {
    names
        .iter()
        .enumerate()
        .any(|(i, name)| match entry.path.split_once('/') {
            None => *name == entry.path,
            Some((dir, file)) => *name == dir && names.get(i + 1).is_some_and(|n| *n == file),
        })
}

/// Is `name` the first component of an entry that has two (`.cargo`, `.yarn`)? Moving such a
/// directory brings what is in it along.
pub(crate) fn holds_tool_config(name: &OsStr, below: &OsStr) -> bool {
    NAMES.iter().any(|entry| {
        entry
            .path
            .split_once('/')
            .is_some_and(|(dir, file)| name == dir && below == file)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &str) -> bool {
        let parts: Vec<&OsStr> = path.split('/').map(OsStr::new).collect();
        names_a_tool_config(&parts)
    }

    #[test]
    fn a_git_dir_is_its_names_whatever_their_type() {
        let with = |list: &[&str]| is_git_dir(|n| list.contains(&n));
        assert!(with(&["HEAD", "objects", "refs"]));
        assert!(with(&["HEAD", "commondir"]));
        assert!(!with(&["HEAD", "objects"]));
        assert!(!with(&["objects", "refs", "commondir"]));
        assert!(!with(&[]));
    }

    #[test]
    fn names_match_at_any_depth_and_pairs_only_together() {
        for p in [
            ".git",
            "a/b/.git/config",
            "rust-toolchain.toml",
            "crates/x/rust-toolchain",
            ".cargo/config.toml",
            "sub/.cargo/config",
            "web/.npmrc",
            ".yarn/releases/yarn-4.cjs",
            ".vscode/settings.json",
            "x/.helix/languages.toml",
            "sub/.hg/hgrc",
            ".jj/repo/config.toml",
            "web/.tool-versions",
            ".mvn/jvm.config",
            "app/.bazelrc",
            ".pdbrc",
            ".claude/settings.json",
            "sub/opencode.json",
        ] {
            assert!(names(p), "{p}");
        }
        for p in [
            "src/main.rs",
            ".cargo/registry",
            ".yarn/cache/x.zip",
            "config.toml",
            "git",
            ".gitignore",
            "npmrc",
        ] {
            assert!(!names(p), "{p}");
        }
    }

    #[test]
    fn a_pair_is_held_by_its_directory() {
        assert!(holds_tool_config(
            OsStr::new(".yarn"),
            OsStr::new("releases")
        ));
        assert!(!holds_tool_config(OsStr::new(".yarn"), OsStr::new("cache")));
    }
}
