//! Paths a repository's git configuration names (K2): the half of the ambient-execution
//! inventory (`ambient`) that no list of names can hold, because the user chose the names.
//!
//! git runs what lies at these paths when the user runs it for an unrelated reason, so a
//! session must not write them, wherever they are:
//! - `core.hooksPath`: the hooks git runs (`.githooks`, husky's `.husky/_`, whose scripts run
//!   `.husky/<hook>` beside it, so its parent counts too). Relative to the working tree's top
//!   (the git directory for a bare repository).
//! - `include.path` and `includeIf.<condition>.path`: more configuration, which can set
//!   `core.fsmonitor`; relative to the file that includes it. Every condition counts (they
//!   depend on where git runs). Included files are read in turn, ten deep as git does.
//! - Commands git runs (`core.fsmonitor`, filters, diff drivers, aliases, ...): a word of one
//!   that names a path (has a `/`) names a script git runs; relative to the working tree's
//!   top, where git runs them.
//!
//! The configuration read is the repository's own (`config`, and `config.worktree`, in the git
//! directory and in the common directory `commondir` names) and the user's (`$HOME/.gitconfig`,
//! `$XDG_CONFIG_HOME/git/config`, `/etc/gitconfig`), whose relative `core.hooksPath` applies to
//! every repository. The session cannot change any of them: each lies in a git directory,
//! which is protected, or outside the mounts.
//!
//! The parser is narrow and errs wide: it knows git's syntax (sections, quoted subsections,
//! quotes, escapes, continued lines, comments) and keeps only the keys above; a line it cannot
//! read is skipped, never an error (the file is the user's, and git reads it the same way).

use std::path::{Component, Path, PathBuf};

/// How deep `include.path` is followed (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;

/// Keys whose value is a command git runs, as `section.key` with `*` for any subsection.
const COMMAND_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.askpass",
    "sequence.editor",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "alias.*",
    "uploadpack.packobjectshook",
    "pager.*",
];

/// One repository: its git directory and, unless bare, its working tree's top.
pub(crate) struct Repo {
    pub git_dir: PathBuf,
    pub worktree: Option<PathBuf>,
}

/// Every path the configuration of `repo` (and the user's) names as something git runs or
/// reads as configuration, absolute and lexically normal. Missing files name nothing.
pub(crate) fn named_paths(repo: &Repo) -> Vec<PathBuf> {
    let mut found = Found::default();
    let top = repo
        .worktree
        .clone()
        .unwrap_or_else(|| repo.git_dir.clone());
    for file in user_configs() {
        found.read(&file, &top, 0);
    }
    let mut dirs = vec![repo.git_dir.clone()];
    if let Ok(common) = std::fs::read_to_string(repo.git_dir.join("commondir")) {
        dirs.push(normal(&repo.git_dir.join(common.trim_end_matches('\n'))));
    }
    for dir in dirs {
        for name in ["config", "config.worktree"] {
            found.read(&dir.join(name), &top, 0);
        }
    }
    found.paths.sort();
    found.paths.dedup();
    found.paths
}

/// The repository git finds when it starts in `dir`: the first of `dir` and its ancestors
/// that holds a `.git` (a directory, or a file naming one) or is a git directory itself.
pub(crate) fn repo_above(dir: &Path) -> Option<Repo> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Some(repo) = repo_at(d) {
            return Some(repo);
        }
        at = d.parent();
    }
    None
}

/// The repository whose working tree's top (or bare git directory) is `dir`, if any.
pub(crate) fn repo_at(dir: &Path) -> Option<Repo> {
    let dot_git = dir.join(".git");
    let meta = dot_git.symlink_metadata().ok();
    if meta.as_ref().is_some_and(|m| m.is_file()) {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        return Some(Repo {
            git_dir: normal(&dir.join(target)),
            worktree: Some(dir.to_path_buf()),
        });
    }
    if meta.is_some() && is_git_dir(&dot_git) {
        return Some(Repo {
            git_dir: dot_git,
            worktree: Some(dir.to_path_buf()),
        });
    }
    is_git_dir(dir).then(|| Repo {
        git_dir: dir.to_path_buf(),
        worktree: None,
    })
}

fn is_git_dir(dir: &Path) -> bool {
    crate::fs::ambient::is_git_dir(|n| dir.join(n).symlink_metadata().is_ok())
}

#[derive(Default)]
struct Found {
    paths: Vec<PathBuf>,
}

impl Found {
    /// Reads the configuration file `file` (absent: nothing), keeping what it names.
    fn read(&mut self, file: &Path, top: &Path, depth: usize) {
        if depth > MAX_INCLUDE_DEPTH {
            return;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        let here = file.parent().unwrap_or(Path::new("/"));
        for (key, value) in entries(&text) {
            if key == "core.hookspath" {
                let hooks = resolve(&value, top);
                // husky: `.husky/_/h` runs `.husky/<hook>`, beside the hooks directory.
                if hooks.file_name().is_some_and(|n| n == "_") {
                    self.paths.extend(hooks.parent().map(Path::to_path_buf));
                }
                self.paths.push(hooks);
            } else if key == "include.path"
                || (key.starts_with("includeif.") && key.ends_with(".path"))
            {
                let included = resolve(&value, here);
                self.read(&included, top, depth + 1);
                self.paths.push(included);
            } else if COMMAND_KEYS.iter().any(|k| key_matches(k, &key)) {
                self.paths
                    .extend(programs(&value).into_iter().map(|w| resolve(w, top)));
            }
        }
    }
}

/// Interpreters whose first operand is the script they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "python", "python3", "node", "perl", "ruby",
];

/// The words of a command git runs that name a program or script by path (with a `/`): the
/// first word of each command in it (`!` for a shell alias, and `;`, `&&`, `||`, `|`
/// separating commands), and an interpreter's script. Arguments are not taken for programs
/// (`alias.st = status -- src/` names no script).
fn programs(command: &str) -> Vec<&str> {
    let command = command.strip_prefix('!').unwrap_or(command);
    let mut found = Vec::new();
    for part in command.split([';', '&', '|']) {
        let mut words = part
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''));
        let Some(first) = words.next() else {
            continue;
        };
        if first.contains('/') {
            found.push(first);
        }
        let name = first.rsplit('/').next().unwrap_or(first);
        if INTERPRETERS.contains(&name) {
            found.extend(
                words
                    .find(|w| !w.starts_with('-'))
                    .filter(|w| w.contains('/')),
            );
        }
    }
    found
}

/// `pattern` (`section.key`, `section.*.key` or `section.*`) matches the full key
/// `section[.subsection].key` (section and key lower-cased, the subsection as written).
fn key_matches(pattern: &str, key: &str) -> bool {
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    let parts: Vec<&str> = pattern.split('.').collect();
    match parts.as_slice() {
        [s, "*"] => *s == section,
        [s, k] => *s == section && sub.is_none() && *k == name,
        [s, "*", k] => *s == section && sub.is_some() && *k == name,
        _ => false,
    }
}

/// `value` as a path: `~/` from the home directory, relative ones from `base`.
fn resolve(value: &str, base: &Path) -> PathBuf {
    let path = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        None => base.join(value),
    };
    normal(&path)
}

/// `path` with `.` and `..` taken lexically (git does the same with these values).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The user's own configuration files, where git looks for them.
fn user_configs() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    files.extend(xdg.map(|x| x.join("git/config")));
    files.extend(home.map(|h| h.join(".gitconfig")));
    files
}

/// The `(section[.subsection].key, value)` pairs of a configuration file, in order: section
/// and key lower-cased as git compares them, the value unquoted and unescaped.
fn entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim_start().to_string();
        if line.starts_with('[') {
            let Some(end) = line.find(']') else {
                continue;
            };
            section = header(&line[1..end]);
            line = line[end + 1..].trim_start().to_string();
            if line.is_empty() {
                continue;
            }
        }
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() || section.is_empty() {
            continue;
        }
        let (name, raw) = match line.split_once('=') {
            Some((name, raw)) => (name.trim().to_ascii_lowercase(), raw.to_string()),
            None => (line.trim().to_ascii_lowercase(), String::new()),
        };
        let mut raw = raw;
        // A value continues on the next line after a backslash at its end.
        while raw.ends_with('\\') && !raw.ends_with("\\\\") {
            raw.pop();
            match lines.next() {
                Some(next) => raw.push_str(next),
                None => break,
            }
        }
        out.push((format!("{section}.{name}"), value(&raw)));
    }
    out
}

/// A section header's text (`core`, `includeIf "gitdir:~/w/"`, `branch.main`) as the key's
/// prefix: the section lower-cased, a quoted subsection as written.
fn header(inner: &str) -> String {
    let inner = inner.trim();
    match inner.split_once(char::is_whitespace) {
        Some((name, sub)) => {
            let sub = sub.trim().trim_matches('"').replace("\\\"", "\"");
            format!("{}.{sub}", name.to_ascii_lowercase())
        }
        None => match inner.split_once('.') {
            // The old `[section.subsection]` form: the subsection is lower-cased too.
            Some((name, sub)) => {
                format!("{}.{}", name.to_ascii_lowercase(), sub.to_ascii_lowercase())
            }
            None => inner.to_ascii_lowercase(),
        },
    }
}

/// A raw value: surrounding space trimmed, quotes removed, escapes taken, a comment outside
/// quotes cut.
fn value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_syntax_git_reads_is_read_the_same_way() {
        let text = "[core]\n\tbare = false\n\tHooksPath = \".githooks\" ; mine\n\
                    [include]\n\tpath = ../shared.gitconfig\n\
                    [includeIf \"gitdir:~/work/\"]\n\tpath = \"w\\\"x.cfg\"\n\
                    [filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\
                    [Alias]\n\tt = !./scripts/test.sh \\\n  --all\n\
                    [diff.TXT]\n\ttextconv = tools/conv\n";
        let got = entries(text);
        let find = |k: &str| {
            got.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(find("core.hookspath"), Some(".githooks"));
        assert_eq!(find("include.path"), Some("../shared.gitconfig"));
        assert_eq!(find("includeif.gitdir:~/work/.path"), Some("w\"x.cfg"));
        assert_eq!(find("alias.t"), Some("!./scripts/test.sh   --all"));
        assert_eq!(find("diff.txt.textconv"), Some("tools/conv"));
        assert_eq!(
            programs("!./scripts/test.sh --all src/"),
            ["./scripts/test.sh"]
        );
        assert_eq!(programs("status --short -- src/"), Vec::<&str>::new());
        assert_eq!(
            programs("python3 -u tools/clean.py %f | /usr/bin/tee x && sh ci/run"),
            ["tools/clean.py", "/usr/bin/tee", "ci/run"]
        );
        assert!(key_matches("filter.*.clean", "filter.lfs.clean"));
        assert!(key_matches("alias.*", "alias.t"));
        assert!(!key_matches("core.pager", "core.x.pager"));
    }

    #[test]
    fn hooks_includes_and_scripts_named_by_a_repository_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join(".git/objects")).unwrap();
        std::fs::create_dir_all(top.join(".git/refs")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            top.join(".git/config"),
            "[core]\n\thooksPath = .husky/_\n\tfsmonitor = ./tools/fsmon.sh\n\
             [include]\n\tpath = ../project.gitconfig\n",
        )
        .unwrap();
        std::fs::write(
            top.join("project.gitconfig"),
            "[include]\n\tpath = conf/more.gitconfig\n",
        )
        .unwrap();
        std::fs::create_dir(top.join("sub")).unwrap();
        let repo = repo_above(&top.join("sub")).unwrap();
        assert_eq!(repo.worktree.as_deref(), Some(top.as_path()));
        let paths = named_paths(&repo);
        for want in [
            ".husky",
            ".husky/_",
            "tools/fsmon.sh",
            "project.gitconfig",
            "conf/more.gitconfig",
        ] {
            assert!(paths.contains(&top.join(want)), "{want}: {paths:?}");
        }
    }
}
