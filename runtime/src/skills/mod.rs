//! Agent Skills: folders with a `SKILL.md` (front matter with a `name` and a `description`,
//! then instructions) and whatever files beside it. Found in the user's `~/.agents/skills/`,
//! the project's `.agents/skills/` (only when the project is trusted, like its presets: its
//! files are in the trust hash) and the folders a preset's `skills = [...]` names; the first
//! of a name wins, in that order reversed: a preset's, then the project's, then the user's.
//!
//! Progressive disclosure: the system prompt lists names and descriptions only (`listing`);
//! the `skill` tool (in `session/skill_tool.rs`) returns a body or a file beside it on demand.
//! A tool rather than a read-only mount of the skills folders: a mount would have to be
//! granted to a plugin (widening every session's grants by a path the preset never named),
//! would show every folder, listed or not, and would leave declared needs unchecked; the tool
//! reads only listed skills, only inside their folder, and is where a skill's scripts get
//! their grants proved (`grants::within`) before they run.
//!
//! - `parse.rs`: one `SKILL.md`, strictly, errors at `file:line`;
//! - `needs.rs`: its declared needs as grants, proved within a session's;
//! - `folder.rs`: its folder held by descriptor, its files listed and opened beneath it;
//! - this file: discovery and the listing.

mod folder;
mod needs;
mod parse;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use paddock_sandbox::MountHandle;

pub use needs::{needs_effective, needs_within};
pub use parse::{Needs, SkillError, SkillFile, parse};

pub use crate::preset::PROJECT_SKILLS;
/// The user's, relative to the home directory.
pub const USER_SKILLS: &str = ".agents/skills";
/// The largest `SKILL.md` or resource read.
pub const MAX_FILE_BYTES: u64 = 256 << 10;
/// The most skill folders read from one root.
const MAX_SKILLS: usize = 1000;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillOrigin {
    User,
    Project,
    Preset,
}

/// One skill found and parsed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skill {
    #[serde(flatten)]
    pub file: SkillFile,
    /// Its folder, as a real path.
    pub dir: PathBuf,
    pub origin: SkillOrigin,
    /// The folder itself, opened when the skill was found: its files are listed and read
    /// beneath this descriptor, never through `dir` again.
    #[serde(skip)]
    pub held: Arc<MountHandle>,
}

impl Skill {
    pub fn name(&self) -> &str {
        &self.file.name
    }

    /// A file of the skill, `relative` to its folder: no absolute path, no `..`, no symlink on
    /// the way (opened beneath the held folder, each step with `O_NOFOLLOW`, so a swap of the
    /// folder or of anything in it cannot lead out); a regular file of at most
    /// `MAX_FILE_BYTES`.
    pub fn read(&self, relative: &str) -> Result<String, SkillError> {
        let bad = |why: String| SkillError(format!("skill {}: {relative:?}: {why}", self.name()));
        let rel = Path::new(relative);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(
                "name a file inside the skill's folder, e.g. `scripts/run.sh` (no `/` first, no `..`)"
                    .into(),
            ));
        }
        // Opened beneath the folder held since it was found, no symlink on the way: what is
        // read is inside that folder, whatever a session swapped in since.
        let file = folder::open_beneath(self.held.fd(), rel).map_err(|e| {
            bad(format!(
                "cannot open it as a regular file inside the skill's folder without following a \
                 symlink: {e}"
            ))
        })?;
        let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        if size > MAX_FILE_BYTES {
            return Err(bad(format!(
                "not a regular file of at most {MAX_FILE_BYTES} bytes"
            )));
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut text)
            .map_err(|e| bad(format!("cannot read it as text: {e}")))?;
        Ok(text)
    }

    /// The files beside `SKILL.md`, relative to the folder, sorted (at most 200): listed
    /// beneath the held folder, symlinks left out.
    pub fn resources(&self) -> Vec<String> {
        let mut out = folder::list(self.held.fd());
        out.retain(|f| f != "SKILL.md");
        out.sort();
        out
    }
}

/// Skills found, and what was wrong on the way.
#[derive(Debug, Default)]
pub struct Found {
    pub skills: Vec<Skill>,
    /// `SKILL.md` files that do not hold (each at `file:line`).
    pub errors: Vec<SkillError>,
    /// Skills hidden by one of the same name found earlier: (name, the hidden folder).
    pub shadowed: Vec<(String, PathBuf)>,
}

/// The folders skills are looked for in, first winning: the preset's `skills` (each a
/// skill's folder or a folder of them), the project's when `project` (trusted), the user's.
pub fn roots(cwd: &Path, project: bool, preset: &[PathBuf]) -> Vec<(SkillOrigin, PathBuf)> {
    let mut roots: Vec<(SkillOrigin, PathBuf)> = preset
        .iter()
        .map(|p| (SkillOrigin::Preset, p.clone()))
        .collect();
    if project {
        roots.push((
            SkillOrigin::Project,
            crate::preset::project_root(cwd).join(PROJECT_SKILLS),
        ));
    }
    if let Some(home) = dirs::home_dir() {
        roots.push((SkillOrigin::User, home.join(USER_SKILLS)));
    }
    roots
}

/// Every skill under `roots`, parsed; the first of a name wins.
pub fn discover(roots: &[(SkillOrigin, PathBuf)]) -> Found {
    let mut found = Found::default();
    for (origin, root) in roots {
        let folders = if root.join("SKILL.md").exists() {
            vec![root.clone()]
        } else {
            let Ok(entries) = std::fs::read_dir(root) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("SKILL.md").is_file())
                .take(MAX_SKILLS)
                .collect();
            dirs.sort();
            dirs
        };
        for dir in folders {
            let project = *origin == SkillOrigin::Project;
            let loaded = if project {
                // Refused before it is read (its errors would name a folder elsewhere), and
                // checked again on the folder held open, which a swap cannot change.
                within_project(root, &dir, dir.canonicalize().ok())
                    .and_then(|()| load(&dir, *origin))
                    .and_then(|skill| {
                        within_project(root, &skill.dir, held_path(&skill))?;
                        Ok(skill)
                    })
            } else {
                load(&dir, *origin)
            };
            match loaded {
                Ok(skill) if found.skills.iter().any(|s| s.name() == skill.name()) => {
                    found.shadowed.push((skill.file.name, skill.dir));
                }
                Ok(skill) => found.skills.push(skill),
                Err(e) => found.errors.push(e),
            }
        }
    }
    found
}

/// A project's skill must lie in the project (`root` is its `.agents/skills`): trusting a
/// project covers what is in it, so a folder that leads elsewhere through a symlink (the
/// repository's `.agents/skills/x -> /anywhere`) would bring in what no one trusted, and could
/// change without the project changing.
fn within_project(root: &Path, dir: &Path, real: Option<PathBuf>) -> Result<(), SkillError> {
    let location = dir.join("SKILL.md").display().to_string();
    let project = root
        .parent()
        .and_then(Path::parent)
        .and_then(|p| p.canonicalize().ok());
    match (project, real) {
        (Some(project), Some(real)) if real.starts_with(&project) => Ok(()),
        (_, real) => Err(SkillError(format!(
            "{location}: this project skill's folder leads outside the project (to {}) through a \
             symlink, so it is not loaded: trusting a project covers what is in it; copy the \
             skill into the project, or put it in ~/{USER_SKILLS}",
            real.map_or_else(|| "a place that cannot be resolved".into(), |r| r.display().to_string())
        ))),
    }
}

/// Where the held folder, which every later read goes through, really is: not the path that
/// was resolved to open it, which a swap could have changed since.
fn held_path(skill: &Skill) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", skill.held.fd().as_raw_fd())).ok()
}

/// The skill in folder `dir`.
pub fn load(dir: &Path, origin: SkillOrigin) -> Result<Skill, SkillError> {
    let file = dir.join("SKILL.md");
    let location = file.display().to_string();
    let dir = dir
        .canonicalize()
        .map_err(|e| SkillError(format!("{location}: cannot open the folder: {e}")))?;
    let held = MountHandle::open(&dir)
        .map(Arc::new)
        .map_err(|e| SkillError(format!("{location}: cannot open the folder: {e}")))?;
    let mut opened = folder::open_beneath(held.fd(), Path::new("SKILL.md"))
        .map_err(|e| SkillError(format!("{location}: cannot open it as a regular file: {e}")))?;
    let meta = opened
        .metadata()
        .map_err(|e| SkillError(format!("{location}: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(SkillError(format!(
            "{location}:1: {} bytes; a SKILL.md holds at most {MAX_FILE_BYTES} (move detail into files beside it)",
            meta.len()
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut opened, &mut text)
        .map_err(|e| SkillError(format!("{location}: cannot read it as text: {e}")))?;
    let folder_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Skill {
        file: parse(&location, &folder_name, &text)?,
        dir,
        origin,
        held,
    })
}

/// What the system prompt says about `skills`: names and descriptions only. Empty when
/// there are none.
pub fn listing(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n\n# Skills\nThese skills hold instructions for particular tasks. When a task matches \
         one, call the `skill` tool with its name to read its instructions first, then follow \
         them; `skill` with `file` reads a file beside them, `skill_run` runs one of its \
         scripts.\n",
    );
    for skill in skills {
        text.push_str(&format!(
            "- {}: {}\n",
            skill.name(),
            paddock_types::text::one_line(&skill.file.description, 1024)
        ));
    }
    text
}

/// The estimated tokens `listing` adds to every request.
pub fn listing_tokens(listing: &str) -> u64 {
    if listing.is_empty() {
        0
    } else {
        crate::log::estimate_tokens(listing.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skill's files are read inside its folder and never through a symlink, so a link a
    /// session planted (or swapped in after a check) cannot lead the `skill` tool out of it.
    #[test]
    fn a_skill_file_is_read_inside_its_folder_and_never_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("secret.txt");
        std::fs::write(&outside, "do not read").unwrap();
        let dir = tmp.path().join("demo");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: demo\ndescription: a demo skill\n---\nRun scripts/run.sh.\n",
        )
        .unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "echo hi\n").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), dir.join("up")).unwrap();
        let skill = load(&dir, SkillOrigin::User).expect("the skill loads");
        assert_eq!(skill.read("scripts/run.sh").unwrap(), "echo hi\n");
        for planted in ["link.txt", "up/secret.txt", "../secret.txt", "/etc/passwd"] {
            let error = skill.read(planted).expect_err(planted);
            assert!(!error.0.contains("do not read"), "{planted}: {}", error.0);
        }
        assert_eq!(skill.resources(), ["scripts/run.sh"]);
    }

    /// The folder swapped for a symlink after the skill was found (and a folder inside it):
    /// the listing and the reads stay in the folder that was found.
    #[test]
    fn a_swapped_skill_folder_lists_and_reads_only_the_folder_that_was_found() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("scripts")).unwrap();
        std::fs::write(outside.join("id_rsa"), "do not read").unwrap();
        std::fs::write(outside.join("scripts/run.sh"), "do not read").unwrap();
        let dir = tmp.path().join("demo");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---
name: demo
description: a demo skill
---
Run scripts/run.sh.
",
        )
        .unwrap();
        std::fs::write(
            dir.join("scripts/run.sh"),
            "echo hi
",
        )
        .unwrap();
        let skill = load(&dir, SkillOrigin::User).expect("the skill loads");
        std::fs::rename(&dir, tmp.path().join("demo-old")).unwrap();
        std::os::unix::fs::symlink(&outside, &dir).unwrap();
        assert_eq!(skill.resources(), ["scripts/run.sh"]);
        assert_eq!(
            skill.read("scripts/run.sh").unwrap(),
            "echo hi
"
        );
        assert!(skill.read("id_rsa").is_err());
        // A folder inside it swapped too.
        let old = tmp.path().join("demo-old");
        std::fs::rename(old.join("scripts"), old.join("scripts-old")).unwrap();
        std::os::unix::fs::symlink(outside.join("scripts"), old.join("scripts")).unwrap();
        assert_eq!(skill.resources(), ["scripts-old/run.sh"]);
        let error = skill.read("scripts/run.sh").expect_err("through a symlink");
        assert!(!error.0.contains("do not read"), "{}", error.0);
    }
}
