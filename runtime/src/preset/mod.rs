//! Presets (P1, S6, H2, C2): the TOML file that decides, for a session, the model, the
//! loop budgets, which plugins and tools load, what each plugin may touch (mounts, exec and
//! http grants, limits), which hooks guard the calls, and what needs approval. Unknown keys,
//! wrong types and bad values are errors naming the file, line, column and key, with the
//! nearest valid key, so a preset never silently means less than it says.
//!
//! Presets are found by name in the project's `.paddock/presets/NAME.toml` (the project root
//! found from any directory inside it: `root.rs`; only when the user trusts it, T1:
//! `trust.rs`), then `$XDG_CONFIG_HOME/paddock/presets/NAME.toml` (`~/.config`
//! when unset), then among the shipped ones embedded in the binary. Every preset carries its
//! `Origin` and hash, so a project preset never shadows a shipped or user one silently.
//!
//! Relative mount paths (`host = "."`) resolve against the working directory paddock runs
//! in, not the preset's folder: a shipped preset then works in whatever project it is used.

mod context;
mod every_error;
mod extends;
mod file;
mod instructions;
pub mod locate;
mod mcp;
mod policy;
mod resolve;
mod root;
mod sections;
mod system;
mod tools;
mod trust;

use std::path::{Path, PathBuf};

pub use context::{PluginSource, ResolveContext, home_path, make_mount, program_dir};
pub use extends::hook_name;
pub use file::{PresetFile, line_col};
pub use instructions::{InstructionFile, instruction_paths, read_instructions};
pub use mcp::ResolvedMcp;
pub use policy::{ApprovalPolicy, CheckpointPolicy, LoopBudgets, ResolvedHook, exec_host_paths};
pub use resolve::{ResolvedPlugin, ResolvedPreset};
pub use root::{project_root, root_to};
pub use sections::{ApprovalMode, ConfineMode, Grain, GrantsEntry, HookPhase, MountEntry, OnError};
pub use system::{system_prompt, with_instructions};
pub use tools::ToolGlob;
pub use trust::{PROJECT_DIR, PROJECT_LOCK, PROJECT_SKILLS, ProjectConfig, TrustState, TrustStore};

use paddock_sandbox::Mount;

/// Presets shipped inside the binary, by name.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("default", include_str!("../../../presets/default.toml")),
    ("coding", include_str!("../../../presets/coding.toml")),
    ("review", include_str!("../../../presets/review.toml")),
    ("untrusted", include_str!("../../../presets/untrusted.toml")),
];

/// Where a preset was found (T1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Embedded in the binary.
    Shipped,
    /// The user's own configuration directory.
    User,
    /// The working tree's `.paddock/presets`, trusted by the user.
    Project,
    /// A path given on the command line.
    File,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Shipped => "shipped",
            Origin::User => "user",
            Origin::Project => "project",
            Origin::File => "file",
        }
    }
}

/// A preset's text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetSource {
    pub origin: Origin,
    /// The file's path, or `<embedded preset NAME>`.
    pub location: String,
    pub text: String,
}

impl PresetSource {
    /// SHA-256 of the text, in hex.
    pub fn sha256(&self) -> String {
        paddock_types::stamp::sha256_hex(self.text.as_bytes())
    }

    pub fn parse(&self) -> Result<PresetFile, PresetError> {
        file::parse(&self.location, &self.text)
    }
}

/// Where a preset was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PresetInfo {
    pub name: String,
    /// shipped, user, project or file.
    pub from: Origin,
    /// A file path, or `embedded`.
    pub origin: String,
    pub description: Option<String>,
}

/// A preset that could not be read or does not hold. The message names the file, the line and
/// column, the key, and what would be valid.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PresetError(pub String);

#[cfg(any(test, feature = "internals"))]
/// Loads a preset by path (anything with a `/` or ending in `.toml`) or by name, searching
/// the user's preset directory, then the shipped presets; never the working tree's (that
/// needs trust: `find` with `project` true).
pub fn load(name_or_path: &str) -> Result<PresetFile, PresetError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    load_in(name_or_path, &cwd)
}

#[cfg(any(test, feature = "internals"))]
/// `load`, with the working directory given.
pub fn load_in(name_or_path: &str, cwd: &Path) -> Result<PresetFile, PresetError> {
    find_written(name_or_path, cwd, false)?.parse()
}

/// Where a preset is found, and its text (a session records both, so `resume` rebuilds the
/// preset it ran with). `project`: the working tree's `.paddock/presets` is searched first
/// (only when the user trusts it, T1).
pub fn find(name_or_path: &str, cwd: &Path, project: bool) -> Result<PresetSource, PresetError> {
    find_written(name_or_path, cwd, project).map(|found| found.source)
}

/// A preset as found: its effective text (its `extends` chain merged) and every file of the
/// chain as written, the preset's own first (where findings point).
#[derive(Debug, Clone)]
pub struct Found {
    pub source: PresetSource,
    pub written: Vec<PresetSource>,
}

impl Found {
    /// The effective preset read strictly (`PresetSource::parse`), each mistake shown in the
    /// file of the `extends` chain that writes its key, at the line the user wrote it (the
    /// merged text's own lines exist in no file).
    pub fn parse(&self) -> Result<PresetFile, PresetError> {
        if self.written.len() <= 1 {
            return self.source.parse();
        }
        let place = |offset: usize| {
            locate::path_at(&self.source.text, offset)
                .map(|path| locate::locate(&self.written, &path))
        };
        file::parse_placed(&self.source.location, &self.source.text, &place)
    }

    /// A preset known only by its effective text (a session's recorded one): it is its own
    /// chain.
    pub fn recorded(source: PresetSource) -> Found {
        Found {
            written: vec![source.clone()],
            source,
        }
    }
}

/// Whether `text`, a preset, plugin or hook as the user wrote it, is a file's path rather
/// than a name to look up: it has a `/`, or ends in the file's `extension` (`.toml` for a
/// preset, `.wasm` for a plugin or hook). One rule, so the loader, the trust check and the
/// command line agree on what a name is.
pub fn is_path(text: &str, extension: &str) -> bool {
    text.contains('/') || text.ends_with(extension)
}

/// `find`, and every file of its `extends` chain as written, the preset's own first.
pub fn find_written(name_or_path: &str, cwd: &Path, project: bool) -> Result<Found, PresetError> {
    let source = if is_path(name_or_path, ".toml") {
        read_source(Origin::File, &PathBuf::from(name_or_path))?
    } else {
        find_by_name(name_or_path, cwd, project, &[])?
    };
    extends::apply_written(source, cwd, project).map(|(source, written)| Found { source, written })
}

/// A preset by name, as written (its `extends` not applied), skipping the files in `skip`: a
/// user's `coding.toml` that extends "coding" builds on the shipped one.
fn find_by_name(
    name: &str,
    cwd: &Path,
    project: bool,
    skip: &[String],
) -> Result<PresetSource, PresetError> {
    let name_or_path = name;
    for (origin, dir) in search_dirs(cwd, project) {
        let path = dir.join(format!("{name_or_path}.toml"));
        let real = path.canonicalize().map(|p| p.display().to_string());
        if path.is_file() && !real.is_ok_and(|r| skip.contains(&r)) {
            return read_source(origin, &path);
        }
    }
    match EMBEDDED.iter().find(|(name, _)| *name == name_or_path) {
        Some((name, text)) => Ok(PresetSource {
            origin: Origin::Shipped,
            location: format!("<embedded preset {name}>"),
            text: (*text).to_string(),
        }),
        None => Err(PresetError(format!(
            "no preset named `{name_or_path}`; the shipped presets are: {}; or give a path to a .toml file",
            EMBEDDED
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Parses preset text; `origin` names it in messages.
pub fn parse(origin: &str, text: &str) -> Result<PresetFile, PresetError> {
    file::parse(origin, text)
}

fn read_source(origin: Origin, path: &Path) -> Result<PresetSource, PresetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PresetError(format!("cannot read preset {}: {e}", path.display())))?;
    Ok(PresetSource {
        origin,
        location: path.display().to_string(),
        text,
    })
}

/// Where presets are looked for by name, in order, before the shipped ones: the project's
/// (its root found from `cwd`, `root.rs`; when `project`), then the user's.
pub fn search_dirs(cwd: &Path, project: bool) -> Vec<(Origin, PathBuf)> {
    let mut dirs = Vec::new();
    if project {
        dirs.push((Origin::Project, project_root(cwd).join(PROJECT_DIR)));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")));
    if let Some(config) = config {
        dirs.push((Origin::User, config.join("paddock/presets")));
    }
    dirs
}

/// Every preset `find` can find by name, the first found of each name winning, as `find`
/// would. A file that does not parse is listed with its error as description.
pub fn list(cwd: &Path, project: bool) -> Vec<PresetInfo> {
    let mut found: Vec<PresetInfo> = Vec::new();
    for (from, dir) in search_dirs(cwd, project) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        for path in paths {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if found.iter().any(|p| p.name == name) {
                continue;
            }
            let description = match read_source(from, &path)
                .and_then(|s| extends::apply_written(s, cwd, project))
                .and_then(|(source, written)| Found { source, written }.parse())
            {
                Ok(file) => file.description,
                Err(e) => Some(format!("(does not parse: {e})")),
            };
            found.push(PresetInfo {
                name,
                from,
                origin: path.display().to_string(),
                description,
            });
        }
    }
    for (name, text) in EMBEDDED {
        if found.iter().any(|p| p.name == *name) {
            continue;
        }
        found.push(PresetInfo {
            name: name.to_string(),
            from: Origin::Shipped,
            origin: "embedded".into(),
            description: file::parse(name, text).ok().and_then(|f| f.description),
        });
    }
    found
}

/// Mounts that would hand a plugin paddock's own data (the compiled-code cache and its key
/// above all) are refused, whether the mount contains the data directory or lies inside it
/// (K4): loading a cached file runs it as native code. Both sides are compared as real paths
/// (symlinks resolved), the data directory's even before it exists.
pub fn check_mount_is_safe(mount: &Mount, data_dir: &Path) -> Result<(), PresetError> {
    let host = mount
        .host
        .canonicalize()
        .unwrap_or_else(|_| mount.host.clone());
    if let Some(data) = reaches_data_dir(&host, data_dir) {
        return Err(PresetError(format!(
            "mount {} -> {} would expose paddock's data directory {} (its compiled-code cache \
             and the key that authenticates it) to a plugin; mount a directory that neither \
             contains nor lies inside it, or set PADDOCK_HOME to a place outside your mounts",
            mount.host.display(),
            mount.guest,
            data.display()
        )));
    }
    Ok(())
}

/// Any other host path a preset grants (`grants.exec.read|write`, `[mcp.NAME].read`, the
/// directory of a program named by its path) is held to the mounts' rule: a program that
/// could read the cache key could forge a cache entry, one that could write the cache could
/// plant one. `key` names the preset key in the message.
pub fn check_grant_is_safe(key: &str, path: &Path, data_dir: &Path) -> Result<(), PresetError> {
    match reaches_data_dir(path, data_dir) {
        Some(data) => Err(PresetError(format!(
            "{key}: {} {}",
            path.display(),
            data_dir_reach(&data)
        ))),
        None => Ok(()),
    }
}

/// Why a grant that reaches the data directory is refused, and what to do instead.
pub fn data_dir_reach(data: &Path) -> String {
    format!(
        "would give programs paddock's data directory {} (the key that authenticates its \
         compiled-code cache, the cache itself and every session log): a program that reads \
         the key can forge native code paddock then runs; grant a directory that neither \
         contains nor lies inside it, or set PADDOCK_HOME to a place outside your grants",
        data.display()
    )
}

/// The data directory's real path when `path` (relative ones taken from the working
/// directory) contains it or lies inside it, both compared as real paths.
pub fn reaches_data_dir(path: &Path, data_dir: &Path) -> Option<PathBuf> {
    let path = real_path_of(path);
    let data = real_path_of(data_dir);
    (data.starts_with(&path) || path.starts_with(&data)).then_some(data)
}

/// `path` with symlinks resolved as far as it exists, the missing rest appended.
pub fn real_path_of(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}
