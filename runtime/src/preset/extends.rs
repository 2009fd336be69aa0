//! `extends = "NAME"` or `extends = "PATH.toml"` (P1): a preset built on another. The base is
//! found as `--preset` would find it (a path is relative to the extending file), merged under
//! the preset, and the result is the preset's text: what a session records, what `resume`
//! rebuilds and what `preset show --toml` prints.
//!
//! Merge rules (the table in docs/presets.md, "Building on a preset"): tables merge key by
//! key, recursively (`[plugins.fs]` in the preset changes only the keys it sets). A guard is never removed
//! unasked: the base's `[[hooks]]` are kept and the preset's run after them, less those the
//! preset names in `hooks_drop`; a `protect` list adds to the base's. Every other value, lists
//! included (`tools.enable`, `mounts`, `exec.allow`), is replaced whole by the preset's. An
//! optional value the preset sets to `false` where the base has something else (a string, a
//! number, a table) is cleared: `api_key_env = false`. A base's relative `source` paths are
//! made absolute against the base's directory first, so they keep meaning the same file. A
//! cycle is refused with its chain; so is a chain deeper than `MAX_DEPTH`. `name` is never
//! inherited: without its own, a preset is called as it was asked for.
//!
//! Trust (T1): a project preset (from `.paddock/presets`, used only when trusted) may extend
//! a preset by name, or by a path that stays inside `.paddock/presets`, whose every file the
//! trust covers; and its relative `source` paths must stay there too.

use std::path::{Path, PathBuf};

use super::{Origin, PluginSource, PresetError, PresetSource};

const MAX_DEPTH: usize = 8;

/// `source` with its `extends` chain merged in (a source without `extends` is returned as
/// is), and every file of the chain as written, the preset first and its bases after (what
/// `preset check` and errors point into).
pub fn apply_written(
    source: PresetSource,
    cwd: &Path,
    project: bool,
) -> Result<(PresetSource, Vec<PresetSource>), PresetError> {
    let mut chain = vec![identity(&source)];
    let mut written = Vec::new();
    let merged = merged(source, cwd, project, &mut chain, &mut written)?;
    Ok((merged, written))
}

/// How a preset is told apart in a chain: its real path, or its embedded name.
fn identity(source: &PresetSource) -> String {
    std::fs::canonicalize(&source.location)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| source.location.clone())
}

fn merged(
    source: PresetSource,
    cwd: &Path,
    project: bool,
    chain: &mut Vec<String>,
    written: &mut Vec<PresetSource>,
) -> Result<PresetSource, PresetError> {
    written.push(source.clone());
    let mut table = parse_table(&source)?;
    if source.origin == Origin::Project {
        check_sources_stay_inside(&source, &table)?;
    }
    let Some(extends) = table.remove("extends") else {
        return Ok(source);
    };
    let Some(base_name) = extends.as_str() else {
        return Err(PresetError(format!(
            "{}: extends must be a preset name or a path to a .toml file, e.g. extends = \"coding\"",
            source.location
        )));
    };
    let base = find_base(&source, base_name, cwd, project, chain)?;
    let id = identity(&base);
    if chain.contains(&id) || chain.len() >= MAX_DEPTH {
        chain.push(id);
        return Err(PresetError(format!(
            "{}: extends makes a cycle (or a chain deeper than {MAX_DEPTH}): {}; remove one `extends`",
            source.location,
            chain.join(" -> ")
        )));
    }
    chain.push(id);
    let base = merged(base, cwd, project, chain, written)?;
    let mut base_table = parse_table(&base)?;
    if let Some(dir) = file_dir(&base) {
        absolutise_sources(&mut base_table, &dir);
    }
    // A preset is not the base: its name is its own (or how it was asked for), never the
    // base's, so a session, a warning and `tool call` name the preset the user gave.
    if !table.contains_key("name") {
        base_table.remove("name");
    }
    let drops = table.remove("hooks_drop");
    let hooks = keep_base_hooks(&mut base_table, table.remove("hooks"), drops.as_ref());
    merge(&mut base_table, table);
    if let Some(hooks) = hooks {
        base_table.insert("hooks".into(), hooks);
    }
    let header = format!(
        "# The effective preset: {} extends {} (merged by paddock; errors name the line of the file that wrote the key)\n",
        source.location, base.location
    );
    let body = toml::to_string_pretty(&base_table).map_err(|e| {
        PresetError(format!(
            "{}: the merged preset cannot be written: {e}",
            source.location
        ))
    })?;
    Ok(PresetSource {
        origin: source.origin,
        location: source.location,
        text: header + &body,
    })
}

fn parse_table(source: &PresetSource) -> Result<toml::Table, PresetError> {
    // Syntax errors get file:line:column from the strict parser.
    toml::from_str(&source.text).map_err(|_| match super::parse(&source.location, &source.text) {
        Err(e) => e,
        Ok(_) => PresetError(format!("{}: not a TOML table", source.location)),
    })
}

fn find_base(
    source: &PresetSource,
    base: &str,
    cwd: &Path,
    project: bool,
    chain: &[String],
) -> Result<PresetSource, PresetError> {
    if !super::is_path(base, ".toml") {
        return super::find_by_name(base, cwd, project, chain);
    }
    let dir = file_dir(source).unwrap_or_else(|| cwd.to_path_buf());
    let path = dir.join(base);
    if source.origin == Origin::Project {
        let root = project_root(source)?;
        if !real_path(&path).starts_with(&root) {
            return Err(PresetError(format!(
                "{}: extends = {base:?} leaves {}, which is all that trusting this project covers; \
                 extend a preset by name, or move it into {}",
                source.location,
                root.display(),
                root.display()
            )));
        }
    }
    super::read_source(source.origin, &path)
}

/// The directory of a preset read from a file.
fn file_dir(source: &PresetSource) -> Option<PathBuf> {
    if source.location.starts_with('<') {
        return None;
    }
    Path::new(&source.location).parent().map(Path::to_path_buf)
}

/// The project's `.paddock/presets`, canonical, for a project preset.
fn project_root(source: &PresetSource) -> Result<PathBuf, PresetError> {
    let dir = file_dir(source).unwrap_or_default();
    let mut root = dir.canonicalize().unwrap_or(dir);
    // A project preset may live in a subdirectory of .paddock/presets.
    while !root.ends_with(super::PROJECT_DIR) {
        if !root.pop() {
            return Err(PresetError(format!(
                "{}: a project preset outside {}",
                source.location,
                super::PROJECT_DIR
            )));
        }
    }
    Ok(root)
}

/// Every relative `source` path (plugins and hooks) of a project preset must stay inside
/// `.paddock/presets`, where the trust's hash covers it.
fn check_sources_stay_inside(
    source: &PresetSource,
    table: &toml::Table,
) -> Result<(), PresetError> {
    let root = project_root(source)?;
    let dir = file_dir(source).unwrap_or_default();
    for (key, value) in sources(table) {
        if key != "system_prompt_file" && !is_file_source(&value) {
            continue;
        }
        if !real_path(&dir.join(&value)).starts_with(&root) {
            let fix = if key == "system_prompt_file" {
                "move the file"
            } else {
                "install the plugin (`paddock plugin install`) and name it, or move it"
            };
            return Err(PresetError(format!(
                "{}: {key} = {value:?} leaves {}, which is all that trusting this project covers; \
                 {fix} into {}",
                source.location,
                root.display(),
                root.display()
            )));
        }
    }
    Ok(())
}

/// The real path; for a path that does not exist (yet), its `..` resolved by name, so that
/// `presets/../../x` never counts as inside `presets`.
fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether a plugin's or hook's `source` names a file (`PluginSource::parse`).
fn is_file_source(source: &str) -> bool {
    matches!(
        PluginSource::parse(source, Path::new("")),
        PluginSource::Path(_)
    )
}

/// (key, value) of every file the table names: `plugins.NAME.source`, `hooks[i].source`, and
/// `system_prompt_file` (a prompt read from outside the trusted files could change unasked).
fn sources(table: &toml::Table) -> Vec<(String, String)> {
    let mut found = Vec::new();
    if let Some(s) = table.get("system_prompt_file").and_then(|s| s.as_str()) {
        found.push(("system_prompt_file".to_string(), s.to_string()));
    }
    if let Some(plugins) = table.get("plugins").and_then(|p| p.as_table()) {
        for (name, entry) in plugins {
            if let Some(s) = entry.get("source").and_then(|s| s.as_str()) {
                found.push((format!("plugins.{name}.source"), s.to_string()));
            }
        }
    }
    if let Some(hooks) = table.get("hooks").and_then(|h| h.as_array()) {
        for (i, hook) in hooks.iter().enumerate() {
            if let Some(s) = hook.get("source").and_then(|s| s.as_str()) {
                found.push((format!("hooks[{i}].source"), s.to_string()));
            }
        }
    }
    found
}

fn absolutise_sources(table: &mut toml::Table, dir: &Path) {
    let fix = |value: &mut toml::Value| {
        if let Some(s) = value.as_str()
            && is_file_source(s)
            && !Path::new(s).is_absolute()
        {
            *value = toml::Value::String(dir.join(s).display().to_string());
        }
    };
    // A base's prompt file is relative to the base's folder, like its sources.
    if let Some(toml::Value::String(s)) = table.get_mut("system_prompt_file")
        && !Path::new(s.as_str()).is_absolute()
    {
        *s = dir.join(s.as_str()).display().to_string();
    }
    if let Some(plugins) = table.get_mut("plugins").and_then(|p| p.as_table_mut()) {
        for (_, entry) in plugins.iter_mut() {
            if let Some(source) = entry.get_mut("source") {
                fix(source);
            }
        }
    }
    if let Some(hooks) = table.get_mut("hooks").and_then(|h| h.as_array_mut()) {
        for hook in hooks {
            if let Some(source) = hook.get_mut("source") {
                fix(source);
            }
        }
    }
}

/// The base's hooks less those `drops` names, then the preset's own (`None`: no hooks at all).
fn keep_base_hooks(
    base: &mut toml::Table,
    own: Option<toml::Value>,
    drops: Option<&toml::Value>,
) -> Option<toml::Value> {
    let dropped: Vec<&str> = drops
        .and_then(toml::Value::as_array)
        .map(|names| names.iter().filter_map(toml::Value::as_str).collect())
        .unwrap_or_default();
    let mut hooks: Vec<toml::Value> = match base.remove("hooks") {
        Some(toml::Value::Array(hooks)) => hooks
            .into_iter()
            .filter(|hook| !hook_name(hook).is_some_and(|name| dropped.contains(&name.as_str())))
            .collect(),
        Some(other) => vec![other],
        None => Vec::new(),
    };
    match own {
        Some(toml::Value::Array(own)) => hooks.extend(own),
        // Not a list: the strict parse of the merged text says so, with its line.
        Some(other) => return Some(other),
        None => {}
    }
    (!hooks.is_empty()).then_some(toml::Value::Array(hooks))
}

/// The name a `[[hooks]]` entry goes by (`hooks_drop` names it): its `name`, else its
/// source's (`builtin:NAME`, an installed name, a file's stem), as a session names it.
pub fn hook_name(hook: &toml::Value) -> Option<String> {
    if let Some(name) = hook.get("name").and_then(toml::Value::as_str) {
        return Some(name.to_string());
    }
    let source = hook.get("source").and_then(toml::Value::as_str)?;
    Some(match source.strip_prefix("builtin:") {
        Some(name) => name.to_string(),
        None if is_file_source(source) => Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        None => source.to_string(),
    })
}

/// Tables merge key by key; a `protect` list adds to the base's; `false` over a value that is
/// not a boolean clears it; anything else in `over` replaces what `base` has.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (Some(b), toml::Value::Boolean(false)) if !b.is_bool() => {
                base.remove(&key);
            }
            (Some(toml::Value::Array(b)), toml::Value::Array(o)) if key == "protect" => {
                for path in o {
                    if !b.contains(&path) {
                        b.push(path);
                    }
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn tables_merge_and_lists_replace() {
        let mut base = table(
            "[plugins.fs]\nsource = \"builtin:fs\"\ntimeout_ms = 1\n[tools]\nenable = [\"a\", \"b\"]\n",
        );
        merge(
            &mut base,
            table("[plugins.fs]\ntimeout_ms = 2\n[tools]\nenable = [\"c\"]\n"),
        );
        assert_eq!(base["plugins"]["fs"]["source"].as_str(), Some("builtin:fs"));
        assert_eq!(base["plugins"]["fs"]["timeout_ms"].as_integer(), Some(2));
        assert_eq!(base["tools"]["enable"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn false_clears_an_inherited_value_and_protect_lists_add_up() {
        let mut base = table(
            "[model]\nmodel = \"m\"\napi_key_env = \"KEY\"\n[plugins.fs]\nsource = \"x\"\n\
             grants = { protect = [\".env\"] }\n[mcp.a]\nnetwork = true\n",
        );
        merge(
            &mut base,
            table(
                "[model]\napi_key_env = false\n[plugins.fs]\ngrants = { protect = [\"a\", \".env\"] }\n\
                 [mcp.a]\nnetwork = false\n",
            ),
        );
        assert!(base["model"].get("api_key_env").is_none(), "{base:?}");
        assert_eq!(base["model"]["model"].as_str(), Some("m"));
        let protect = base["plugins"]["fs"]["grants"]["protect"]
            .as_array()
            .unwrap();
        assert_eq!(protect.len(), 2, "{protect:?}");
        // A boolean over a boolean is an ordinary replacement.
        assert_eq!(base["mcp"]["a"]["network"].as_bool(), Some(false));
    }

    #[test]
    fn base_hooks_are_kept_unless_dropped_by_name() {
        let mut base = table(
            "[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\n\
             [[hooks]]\nsource = \"builtin:redact-secrets\"\non = \"post\"\n",
        );
        let own = table("[[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\n");
        let drops = toml::Value::Array(vec!["redact-secrets".into()]);
        let hooks = keep_base_hooks(&mut base, own.get("hooks").cloned(), Some(&drops)).unwrap();
        let names: Vec<String> = hooks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(hook_name)
            .collect();
        assert_eq!(names, ["protect-paths", "audit"]);
    }
}
