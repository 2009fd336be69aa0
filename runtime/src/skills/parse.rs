//! One `SKILL.md`, read strictly: YAML-style front matter between two `---` lines, then the
//! body. The front matter is the Agent Skills convention's (`name`, `description`, and the
//! optional `license`, `compatibility`, `metadata`, `allowed-tools`) plus paddock's `needs`:
//! what the skill's scripts need (`mounts`, `exec`, `network`), each a list.
//!
//! Only the plain subset of YAML those keys need is read: `key: value` (plain, `"double"` or
//! `'single'` quoted), `key: >` or `key: |` blocks, and one level of indented `key: value`
//! (`metadata`) or `- item` lists (under `needs`). Anything else (flow maps, anchors, tabs, an
//! unknown key, a duplicate) is an error at `file:line` saying what to write instead, as a
//! preset's are: a skill never silently means less than it says.

use std::collections::BTreeMap;

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<String>,
    pub needs: Needs,
    /// The instructions after the front matter.
    #[serde(skip)]
    pub body: String,
}

/// What a skill's scripts need beyond reading the skill's own folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Needs {
    /// Host paths, relative to the working directory or `~/`, read-only unless `PATH:rw`.
    pub mounts: Vec<String>,
    /// Command patterns, as an exec grant's `allow` reads them.
    pub exec: Vec<String>,
    /// Hosts, as an `http` grant's `allow` reads them; any entry lets programs use the network.
    pub network: Vec<String>,
}

impl Needs {
    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.exec.is_empty() && self.network.is_empty()
    }
}

/// A `SKILL.md` that does not hold: `file:line: what is wrong; what to write`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SkillError(pub String);

const KEYS: [&str; 7] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "needs",
];
const NEEDS: [&str; 3] = ["mounts", "exec", "network"];

/// Parses `text`, the `SKILL.md` at `location` in a folder named `folder`.
pub fn parse(location: &str, folder: &str, text: &str) -> Result<SkillFile, SkillError> {
    let at = |line: usize, message: String| SkillError(format!("{location}:{line}: {message}"));
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err(at(
            1,
            "a SKILL.md starts with front matter: a line `---`, `name:` and `description:`, \
             then `---`"
                .into(),
        ));
    }
    let Some(end) = lines.iter().skip(1).position(|l| l.trim_end() == "---") else {
        return Err(at(
            lines.len(),
            "the front matter has no closing `---` line".into(),
        ));
    };
    let end = end + 1;
    let front = Front::read(&lines[1..end], 2, &at)?;
    let body = lines[end + 1..].join("\n");
    let name_line = front.line("name");
    let name = front
        .scalar("name")
        .ok_or_else(|| at(2, "missing `name:` (the skill's folder name)".into()))?;
    check_name(&name).map_err(|m| at(name_line, m))?;
    if name != folder {
        return Err(at(
            name_line,
            format!("name {name:?} differs from the skill's folder {folder:?}; rename one"),
        ));
    }
    let description = front.scalar("description").ok_or_else(|| {
        at(
            2,
            "missing `description:` (what the skill does and when to use it)".into(),
        )
    })?;
    let description = description.trim().to_string();
    if description.is_empty() || description.chars().count() > 1024 {
        return Err(at(
            front.line("description"),
            format!(
                "description must be 1 to 1024 characters; it has {}",
                description.chars().count()
            ),
        ));
    }
    Ok(SkillFile {
        name,
        description,
        license: front.scalar("license"),
        compatibility: front.scalar("compatibility"),
        metadata: front.map("metadata"),
        allowed_tools: front.scalar("allowed-tools"),
        needs: Needs {
            mounts: front.list("mounts"),
            exec: front.list("exec"),
            network: front.list("network"),
        },
        body,
    })
}

/// The convention's rule: 1 to 64 lower-case letters, digits and hyphens, no hyphen first,
/// last or doubled.
fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "name {name:?} must be 1 to 64 lower-case letters, digits and single hyphens, \
             not starting or ending with one"
        ))
    }
}

/// What the front matter said, by key, with the line each key was on.
#[derive(Default)]
struct Front {
    scalars: BTreeMap<String, (usize, String)>,
    maps: BTreeMap<String, BTreeMap<String, String>>,
    lists: BTreeMap<String, Vec<String>>,
}

impl Front {
    fn line(&self, key: &str) -> usize {
        self.scalars.get(key).map_or(2, |(l, _)| *l)
    }

    fn scalar(&self, key: &str) -> Option<String> {
        self.scalars.get(key).map(|(_, v)| v.clone())
    }

    fn map(&self, key: &str) -> BTreeMap<String, String> {
        self.maps.get(key).cloned().unwrap_or_default()
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.lists.get(key).cloned().unwrap_or_default()
    }

    fn read(
        lines: &[&str],
        first: usize,
        at: &dyn Fn(usize, String) -> SkillError,
    ) -> Result<Front, SkillError> {
        let mut front = Front::default();
        let mut seen: Vec<String> = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let (n, line) = (first + i, lines[i]);
            i += 1;
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            if line.contains('\t') {
                return Err(at(n, "a tab in the front matter; indent with spaces".into()));
            }
            if line.starts_with(' ') {
                return Err(at(
                    n,
                    "an indented line outside `metadata:` or `needs:`; start keys at the \
                     beginning of the line"
                        .into(),
                ));
            }
            let (key, value) = split_key(line).ok_or_else(|| {
                at(n, format!("expected `key: value`, got {:?}", line.trim()))
            })?;
            if !KEYS.contains(&key) {
                return Err(at(n, unknown(key, &KEYS)));
            }
            if seen.iter().any(|k| k == key) {
                return Err(at(n, format!("`{key}` appears twice; keep one")));
            }
            seen.push(key.to_string());
            let block = indented(&lines[i..]);
            match key {
                "metadata" | "needs" if !value.is_empty() => {
                    return Err(at(
                        n,
                        format!("`{key}:` takes indented lines below it, not a value on its line"),
                    ));
                }
                "metadata" => {
                    for (j, l) in block.iter().enumerate() {
                        let (k, v) = split_key(l.trim()).ok_or_else(|| {
                            at(n + 1 + j, format!("expected `  key: value` under metadata, got {:?}", l.trim()))
                        })?;
                        front
                            .maps
                            .entry(key.into())
                            .or_default()
                            .insert(k.into(), scalar(v).map_err(|m| at(n + 1 + j, m))?);
                    }
                }
                "needs" => read_needs(&mut front, block, n + 1, at)?,
                _ if value == ">" || value == "|" || value == ">-" || value == "|-" => {
                    let parts: Vec<&str> = block.iter().map(|l| l.trim()).collect();
                    let joined = if value.starts_with('>') {
                        parts.join(" ")
                    } else {
                        parts.join("\n")
                    };
                    front.scalars.insert(key.into(), (n, joined));
                }
                _ => {
                    if !block.is_empty() {
                        return Err(at(
                            n + 1,
                            format!("`{key}` is one value; write it on its line, or use `{key}: >` for several lines"),
                        ));
                    }
                    let v = scalar(value).map_err(|m| at(n, m))?;
                    front.scalars.insert(key.into(), (n, v));
                }
            }
            i += block.len();
        }
        Ok(front)
    }
}

fn read_needs(
    front: &mut Front,
    block: &[&str],
    first: usize,
    at: &dyn Fn(usize, String) -> SkillError,
) -> Result<(), SkillError> {
    let mut current: Option<String> = None;
    for (j, l) in block.iter().enumerate() {
        let n = first + j;
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(item) = t.strip_prefix("- ") {
            let Some(key) = &current else {
                return Err(at(n, "a list item before `mounts:`, `exec:` or `network:`".into()));
            };
            let item = scalar(item.trim()).map_err(|m| at(n, m))?;
            if item.trim().is_empty() {
                return Err(at(n, format!("an empty entry under needs.{key}")));
            }
            front.lists.entry(key.clone()).or_default().push(item);
            continue;
        }
        let (key, value) = split_key(t)
            .ok_or_else(|| at(n, format!("expected `mounts:`, `exec:` or `network:`, got {t:?}")))?;
        if !NEEDS.contains(&key) {
            return Err(at(n, unknown(key, &NEEDS).replace("key", "needs key")));
        }
        if front.lists.contains_key(key) {
            return Err(at(n, format!("needs.{key} appears twice; keep one")));
        }
        match value {
            "" => {}
            "[]" => {}
            _ => {
                return Err(at(
                    n,
                    format!("needs.{key} is a list: write `- ENTRY` lines below it"),
                ));
            }
        }
        front.lists.insert(key.into(), Vec::new());
        current = Some(key.into());
    }
    Ok(())
}

/// The lines after a key that are indented under it (blank lines inside included).
fn indented<'a>(lines: &'a [&'a str]) -> &'a [&'a str] {
    let mut end = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with(' ') {
            end = i + 1;
        } else if !l.trim().is_empty() {
            break;
        }
    }
    &lines[..end]
}

fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let key = key.trim();
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    valid.then(|| (key, value.trim()))
}

/// A plain or quoted scalar; flow collections, anchors, tags and aliases are refused.
fn scalar(value: &str) -> Result<String, String> {
    if let Some(inner) = value.strip_prefix('"') {
        let inner = inner
            .strip_suffix('"')
            .ok_or_else(|| format!("{value:?} opens a double quote it does not close"))?;
        return Ok(inner.replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    if let Some(inner) = value.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or_else(|| format!("{value:?} opens a single quote it does not close"))?;
        return Ok(inner.replace("''", "'"));
    }
    if value.starts_with(['{', '[', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(format!(
            "{value:?} is YAML this reader does not take; quote the value (\"...\")"
        ));
    }
    Ok(value.to_string())
}

fn unknown(key: &str, known: &[&str]) -> String {
    let nearest = known
        .iter()
        .min_by_key(|k| strsim::levenshtein(k, key))
        .copied()
        .unwrap_or_default();
    format!(
        "unknown key `{key}` (did you mean `{nearest}`?); the keys are: {}",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::parse;

    const GOOD: &str = "---\nname: pdf-tools\ndescription: >\n  Fill PDF forms.\n  Use for any .pdf.\nlicense: MIT\nmetadata:\n  author: someone\nneeds:\n  exec:\n    - python3 scripts/*\n  network:\n    - \"*.pypi.org\"\n---\n# PDF tools\nRun `scripts/fill.py`.\n";

    #[test]
    fn a_full_skill_reads_every_key_and_the_body() {
        let skill = parse("s/SKILL.md", "pdf-tools", GOOD).unwrap();
        assert_eq!(skill.name, "pdf-tools");
        assert_eq!(skill.description, "Fill PDF forms. Use for any .pdf.");
        assert_eq!(skill.license.as_deref(), Some("MIT"));
        assert_eq!(skill.metadata["author"], "someone");
        assert_eq!(skill.needs.exec, ["python3 scripts/*"]);
        assert_eq!(skill.needs.network, ["*.pypi.org"]);
        assert!(skill.needs.mounts.is_empty());
        assert_eq!(skill.body, "# PDF tools\nRun `scripts/fill.py`.");
    }

    fn error(text: &str) -> String {
        parse("s/SKILL.md", "x", text).unwrap_err().0
    }

    #[test]
    fn errors_name_the_file_and_line() {
        assert!(error("# no front matter").starts_with("s/SKILL.md:1: "));
        assert_eq!(
            error("---\nname: x\ndescripton: d\n---\n"),
            "s/SKILL.md:3: unknown key `descripton` (did you mean `description`?); the keys are: \
             name, description, license, compatibility, metadata, allowed-tools, needs"
        );
        assert!(error("---\nname: x\ndescription: d\n").contains(":3: the front matter has no closing"));
        assert!(error("---\nname: x\n---\n").contains("missing `description:`"));
        assert!(error("---\nname: y\ndescription: d\n---\n").starts_with("s/SKILL.md:2: name \"y\" differs"));
        assert!(error("---\nname: x\ndescription: d\nname: x\n---\n").starts_with("s/SKILL.md:4: `name` appears twice"));
    }

    #[test]
    fn yaml_beyond_the_subset_is_refused_not_misread() {
        assert!(error("---\nname: x\ndescription: {a: b}\n---\n").contains(":3: "));
        assert!(error("---\nname: x\ndescription: d\nneeds:\n  exec: [ls]\n---\n").contains(":5: needs.exec is a list"));
        assert!(error("---\nname: x\ndescription: d\nneeds:\n  disk:\n---\n").contains(":5: unknown needs key `disk`"));
        assert!(error("---\nname: x\n\tdescription: d\n---\n").contains(":3: a tab"));
    }

    #[test]
    fn names_follow_the_convention() {
        for bad in ["Bad", "-x", "x-", "a--b", ""] {
            let text = format!("---\nname: {bad}\ndescription: d\n---\n");
            assert!(parse("f", bad, &text).is_err(), "{bad}");
        }
    }
}
