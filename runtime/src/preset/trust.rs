//! Workspace trust (T1): configuration found in the working tree (`.paddock/presets/`, and the
//! instruction files `AGENTS.md` and `CLAUDE.md` that go into the system prompt) can grant
//! tools, allow every call, and choose the model server and the key sent to it, so it is used
//! only once the user has trusted that directory with exactly that content.
//!
//! Trust is recorded outside the repository, in the data directory (`trust.json`, mode 0600),
//! keyed by the directory's canonical path and holding the SHA-256 of its project
//! configuration: a changed, added or removed file makes the directory untrusted again.
//!
//! A repository's `paddock.lock` (`.paddock/paddock.lock`) is read only when its directory is
//! trusted too, so a project with only a `.paddock` directory (for its lock) still has a
//! `ProjectConfig` to trust. The lock is
//! not in the hash: paddock itself writes it (first uses, `lock accept`), and what it can do
//! once trusted is bounded (it refuses sessions whose plugins differ from it; `plugin install
//! --locked` checks every signature against the user's keys and shows the capability diff).
//!
//! What it does not do: ask. The CLI asks on a terminal (`cli/src/trust.rs`); this module only
//! finds the project configuration, hashes it, and reads and writes the record.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The directory, under a project, whose files are project configuration.
pub const PROJECT_DIR: &str = ".paddock/presets";
/// A project's lock (`plugin_store::lock`), relative to its root: used only once trusted.
pub const PROJECT_LOCK: &str = ".paddock/paddock.lock";
/// A project's Agent Skills folder: used only once trusted, and in the trust hash.
pub const PROJECT_SKILLS: &str = ".agents/skills";

/// A project's configuration, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectConfig {
    /// The project root, canonical (`root.rs`): what a trust is recorded for.
    pub dir: PathBuf,
    /// Every file under `.paddock/presets`, and `AGENTS.md`/`CLAUDE.md`, relative to `dir`,
    /// sorted.
    pub files: Vec<String>,
    /// SHA-256 over every file's relative name and bytes.
    pub sha256: String,
    /// Whether the project has a `.paddock` directory, where its lock is (`PROJECT_LOCK`) or
    /// will be: read and recorded into only once the directory is trusted; not in the hash
    /// (paddock writes it).
    pub lock: bool,
    /// Why the hash cannot cover the whole configuration (a tree deeper than `MAX_DEPTH` or
    /// larger than `MAX_FILES`); such a configuration is never trusted, since a file outside
    /// the hash could change without asking again.
    pub unhashable: Option<String>,
}

impl ProjectConfig {
    /// The project configuration a command run in `cwd` would use, or `None` when there is
    /// none: the project root's (`root.rs`) presets and the instruction files from the root
    /// down to `cwd`, keyed by the root. A file that cannot be read still counts (its name and
    /// error are hashed), so it cannot hide from the hash.
    pub fn find(cwd: &Path) -> Option<ProjectConfig> {
        let dir = super::project_root(cwd);
        let root = dir.join(PROJECT_DIR);
        let mut presets = Vec::new();
        let unhashable = collect(&root, &root, 0, &mut presets).err();
        let mut files: Vec<String> = presets
            .into_iter()
            .map(|f| format!("{PROJECT_DIR}/{f}"))
            .collect();
        // The project's skills are configuration too: their text enters the system prompt
        // and their scripts run on the model's word.
        let skills_root = dir.join(PROJECT_SKILLS);
        let mut skills = Vec::new();
        let skills_unhashable = collect(&skills_root, &skills_root, 0, &mut skills).err();
        let unhashable = unhashable.or(skills_unhashable);
        files.extend(skills.into_iter().map(|f| format!("{PROJECT_SKILLS}/{f}")));
        // The instruction files are project configuration too (a link counts: it is refused
        // when read, but its presence still changes the hash).
        files.extend(
            super::instruction_paths(cwd)
                .into_iter()
                .map(|(name, _)| name),
        );
        let lock = dir
            .join(".paddock")
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir());
        if files.is_empty() && !lock {
            return None;
        }
        files.sort();
        let mut hasher = Sha256::new();
        for name in &files {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            // Followed like the loader follows it; only regular files are read (a FIFO
            // would block).
            let path = dir.join(name);
            let read = match std::fs::metadata(&path) {
                Ok(meta) if !meta.is_file() => Err(std::io::Error::other("not a regular file")),
                _ => std::fs::read(&path),
            };
            match read {
                Ok(bytes) => {
                    hasher.update((bytes.len() as u64).to_le_bytes());
                    hasher.update(&bytes);
                }
                Err(e) => hasher.update(format!("unreadable: {e}").as_bytes()),
            }
        }
        let sha256 = hex(&hasher.finalize());
        Some(ProjectConfig {
            dir,
            files,
            sha256,
            lock,
            unhashable,
        })
    }

    /// `abcdef012345`: the first 12 hex digits, for one-line messages.
    pub fn short_hash(&self) -> &str {
        &self.sha256[..12.min(self.sha256.len())]
    }
}

/// The deepest directory level and the most files `.paddock/presets` may hold to be trusted.
const MAX_DEPTH: usize = 4;
const MAX_FILES: usize = 1000;

/// Files under `dir` (relative to `root`): every one, or `Err` naming why not (deeper than
/// `MAX_DEPTH`, more than `MAX_FILES`), bounded against a hostile tree. Fail closed: a file
/// the hash does not cover could change without asking again.
fn collect(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_FILES {
            return Err(format!(
                "{PROJECT_DIR} holds more than {MAX_FILES} files; trust covers at most {MAX_FILES}"
            ));
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if depth >= MAX_DEPTH {
                return Err(format!(
                    "{} is nested deeper than {MAX_DEPTH} levels under {PROJECT_DIR}; trust \
                     covers {MAX_DEPTH} levels",
                    path.strip_prefix(root).unwrap_or(&path).display()
                ));
            }
            collect(root, &path, depth + 1, out)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.push(relative.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Whether the working directory's project configuration may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// There is none: nothing to decide.
    NoProjectConfig,
    /// Trusted with exactly this content.
    Trusted(ProjectConfig),
    /// Never trusted.
    Untrusted(ProjectConfig),
    /// Trusted once, but the files changed since.
    Changed(ProjectConfig),
    /// Too large or too deep to hash whole (`ProjectConfig::unhashable`): never trusted.
    Unhashable(ProjectConfig),
}

/// The record of trusted directories, in the data directory.
#[derive(Debug, Clone)]
pub struct TrustStore {
    file: PathBuf,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    /// Canonical directory => SHA-256 of its project configuration when trusted.
    projects: BTreeMap<String, String>,
}

impl TrustStore {
    pub fn open(data_dir: &Path) -> TrustStore {
        TrustStore {
            file: data_dir.join("trust.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The trust state of `cwd`.
    pub fn state(&self, cwd: &Path) -> TrustState {
        let Some(config) = ProjectConfig::find(cwd) else {
            return TrustState::NoProjectConfig;
        };
        if config.unhashable.is_some() {
            return TrustState::Unhashable(config);
        }
        match self.read().projects.get(&key(&config.dir)) {
            Some(hash) if *hash == config.sha256 => TrustState::Trusted(config),
            Some(_) => TrustState::Changed(config),
            None => TrustState::Untrusted(config),
        }
    }

    /// Records `config` as trusted (replacing an older record of its directory); refused when
    /// the hash cannot cover all of it.
    pub fn trust(&self, config: &ProjectConfig) -> std::io::Result<()> {
        if let Some(why) = &config.unhashable {
            return Err(std::io::Error::other(why.clone()));
        }
        let mut record = self.read();
        record
            .projects
            .insert(key(&config.dir), config.sha256.clone());
        self.write(&record)
    }

    /// Forgets the project `dir` is in; true when it was trusted.
    pub fn revoke(&self, dir: &Path) -> std::io::Result<bool> {
        let dir = super::project_root(dir);
        let mut record = self.read();
        let was = record.projects.remove(&key(&dir)).is_some();
        self.write(&record)?;
        Ok(was)
    }

    /// An unreadable or damaged record trusts nothing.
    fn read(&self) -> Record {
        std::fs::read(&self.file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Written to a private temporary file and renamed over the record.
    fn write(&self, record: &Record) -> std::io::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&text)?;
        tmp.as_file().sync_all()?;
        // NamedTempFile creates files 0600 on Unix.
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

fn key(dir: &Path) -> String {
    dir.to_string_lossy().into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_keyed_by_directory_and_content() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let store = TrustStore::open(home.path());
        assert_eq!(store.state(project.path()), TrustState::NoProjectConfig);
        let presets = project.path().join(PROJECT_DIR);
        std::fs::create_dir_all(&presets).unwrap();
        std::fs::write(presets.join("default.toml"), "name = \"x\"\n").unwrap();
        let TrustState::Untrusted(config) = store.state(project.path()) else {
            panic!("a new project config is untrusted");
        };
        assert_eq!(config.files, [".paddock/presets/default.toml"]);
        store.trust(&config).unwrap();
        assert!(matches!(
            store.state(project.path()),
            TrustState::Trusted(_)
        ));
        std::fs::write(presets.join("default.toml"), "name = \"y\"\n").unwrap();
        assert!(matches!(
            store.state(project.path()),
            TrustState::Changed(_)
        ));
        std::fs::write(presets.join("default.toml"), "name = \"x\"\n").unwrap();
        std::fs::write(presets.join("extra.toml"), "").unwrap();
        assert!(
            matches!(store.state(project.path()), TrustState::Changed(_)),
            "an added file changes the hash"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(store.revoke(project.path()).unwrap());
        // A file deeper than the hash reaches makes the whole configuration untrustable.
        let deep = presets.join("a/b/c/d/e");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("plugin.wasm"), "x").unwrap();
        let TrustState::Unhashable(config) = store.state(project.path()) else {
            panic!("a tree deeper than the hash reaches is never trusted");
        };
        assert!(store.trust(&config).is_err());
        std::fs::remove_dir_all(presets.join("a")).unwrap();
        assert!(matches!(
            store.state(project.path()),
            TrustState::Untrusted(_)
        ));
    }

    #[test]
    fn a_project_with_only_a_lock_directory_can_be_trusted_and_the_lock_is_not_hashed() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let store = TrustStore::open(home.path());
        std::os::unix::fs::symlink(home.path(), project.path().join(".paddock")).unwrap();
        assert_eq!(
            store.state(project.path()),
            TrustState::NoProjectConfig,
            "a link is not the project's .paddock"
        );
        std::fs::remove_file(project.path().join(".paddock")).unwrap();
        std::fs::create_dir(project.path().join(".paddock")).unwrap();
        let TrustState::Untrusted(config) = store.state(project.path()) else {
            panic!("a .paddock for a lock is project configuration to trust");
        };
        assert!(config.lock && config.files.is_empty(), "{config:?}");
        store.trust(&config).unwrap();
        // paddock records first uses in it: that does not undo the trust.
        std::fs::write(project.path().join(PROJECT_LOCK), "version = 1\n").unwrap();
        assert!(matches!(
            store.state(project.path()),
            TrustState::Trusted(_)
        ));
        std::fs::write(project.path().join(PROJECT_LOCK), "version = 1\n# more\n").unwrap();
        assert!(matches!(
            store.state(project.path()),
            TrustState::Trusted(_)
        ));
    }
}
