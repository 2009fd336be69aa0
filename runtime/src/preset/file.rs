//! The preset file as written, parsed strictly: unknown keys, wrong types and bad values are
//! errors with file:line:column and the nearest valid key.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::PresetError;
use super::sections::{ApprovalEntry, FuelSetting, GrantsEntry, HookEntry, LoopLimits, MountEntry};
use super::tools::ToolSelection;
use crate::model::ProviderConfig;
use paddock_types::contract::Risk;

/// A whole preset file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetFile {
    /// Where the text came from, for messages: a path or `<embedded preset NAME>`.
    #[serde(skip)]
    pub origin: String,
    /// The directory of the file the preset was read from (`None` for an embedded preset):
    /// relative plugin and hook `source` paths are relative to it.
    #[serde(skip)]
    pub base_dir: Option<std::path::PathBuf>,
    /// The preset this one builds on (a name or a path), merged in by `preset::find`.
    #[serde(default, skip_serializing)]
    pub extends: Option<String>,
    /// Shown by `preset list`; defaults to the file name.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The model and how to reach it (used by the loop).
    #[serde(default, skip_serializing)]
    pub model: Option<ProviderConfig>,
    /// Loop budgets.
    #[serde(default)]
    pub limits: LoopLimits,
    /// Plugins by the name the session uses for them.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginEntry>,
    /// Which tools load, and aliases.
    #[serde(default)]
    pub tools: ToolSelection,
    /// Pre- and post-tool hooks, in the order they run; under `extends`, after the base's.
    #[serde(default)]
    pub hooks: Vec<HookEntry>,
    /// The base's hooks (by name) this preset does not keep; consumed by `extends`.
    #[serde(default, skip_serializing)]
    pub hooks_drop: Vec<String>,
    /// Risk tier => allow, ask or deny.
    #[serde(default)]
    pub approval: ApprovalEntry,
    /// How the writable mounts are recorded for rewind.
    #[serde(default)]
    pub checkpoints: super::sections::CheckpointsEntry,
    /// MCP servers started confined, their tools used like plugin tools (`mcp.rs`).
    #[serde(default)]
    pub mcp: BTreeMap<String, super::mcp::McpEntry>,
    /// The system prompt, instead of paddock's default (`system.rs`).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Folders of Agent Skills (a skill's folder, or a folder of them), relative to the
    /// preset file's folder; listed before the project's and the user's.
    #[serde(default)]
    pub skills: Vec<String>,
    /// A file holding the system prompt, relative to the preset file's folder.
    #[serde(default)]
    pub system_prompt_file: Option<toml::Spanned<String>>,
}

/// One plugin and what it is granted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    /// `builtin:NAME`, the name of an installed plugin, or a path to a `.wasm` file (relative
    /// to the directory of the preset file that names it).
    pub source: String,
    /// Refuse the plugin unless its SHA-256 is this (lower-case hex).
    #[serde(default)]
    pub sha256: Option<String>,
    /// Host directories the plugin sees.
    #[serde(default)]
    pub mounts: Vec<MountEntry>,
    /// Host capabilities (exec, http); none by default.
    #[serde(default)]
    pub grants: GrantsEntry,
    /// Instruction budget per call, or "off".
    #[serde(default)]
    pub fuel: Option<FuelSetting>,
    /// Wall-clock limit per call.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Memory cap per call, summed over all linear memories.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Largest result before the output budget cuts or spills it.
    #[serde(default)]
    pub output_bytes: Option<u64>,
    /// Bytes of stdout and of stderr kept per call.
    #[serde(default)]
    pub stdio_bytes: Option<usize>,
    /// Mount the session's spill directory read-only at /spill, so the plugin can read back
    /// results that were too large (S5).
    #[serde(default)]
    pub read_spill: bool,
    /// Raises the risk of every tool of this plugin to at least this tier (K5); a plugin's
    /// own declaration can never go below it, and this can never lower what it declares.
    #[serde(default)]
    pub risk: Option<Risk>,
    /// Sets the risk of the tools named here, replacing what each declares, the floor from
    /// its imports (a tool importing `exec` is high, like `run_command`) and `risk` above: the
    /// one way a preset lowers a tool's approval tier, so it names each tool, and every start
    /// shows it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_risk: BTreeMap<String, Risk>,
}

/// Parses `text` (read from `origin`) strictly; an error names every mistake of the file, one
/// a line (`every_error.rs`).
pub fn parse(origin: &str, text: &str) -> Result<PresetFile, PresetError> {
    parse_placed(origin, text, &|_| None)
}

/// `parse`, each error shown at `place(offset)` of its place in `text` when that says
/// (`file:line:column` in another file: the one of an `extends` chain that wrote the key),
/// else at `origin` and its line in `text`.
pub fn parse_placed(
    origin: &str,
    text: &str,
    place: &dyn Fn(usize) -> Option<String>,
) -> Result<PresetFile, PresetError> {
    let mut file: PresetFile = super::every_error::parse_all(text).map_err(|errors| {
        PresetError(
            errors
                .iter()
                .map(|e| describe(origin, text, e, place))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    file.origin = origin.to_string();
    file.base_dir = (!origin.starts_with('<'))
        .then(|| {
            std::path::Path::new(origin)
                .parent()
                .map(std::path::Path::to_path_buf)
        })
        .flatten();
    Ok(file)
}

fn describe(
    origin: &str,
    text: &str,
    error: &toml::de::Error,
    place: &dyn Fn(usize) -> Option<String>,
) -> String {
    let offset = error.span().map(|span| span.start);
    let at = offset.and_then(place).unwrap_or_else(|| {
        let (line, col) = offset.map_or((1, 1), |offset| line_col(text, offset));
        format!("{origin}:{line}:{col}")
    });
    let message = error.message().trim_end();
    let hint = suggestion(message)
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    format!("{at}: {message}{hint}")
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// For "unknown field `x`, expected one of `a`, `b`", the valid key nearest to `x`.
fn suggestion(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once('`')?;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|candidate| (strsim::damerau_levenshtein(unknown, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= 3.max(candidate.len() / 3))
        .min()
        .map(|(_, candidate)| candidate.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_names_file_line_column_and_the_nearest_key() {
        let text = "[plugins.fs]\nsource = \"builtin:fs\"\ntimeout_sm = 10\n";
        let err = parse("p.toml", text).unwrap_err().0;
        assert!(
            err.starts_with("p.toml:3:1: unknown field `timeout_sm`"),
            "{err}"
        );
        assert!(err.ends_with("did you mean `timeout_ms`?"), "{err}");
    }

    #[test]
    fn a_wrong_type_names_its_line() {
        let text = "[plugins.fs]\nsource = \"builtin:fs\"\nmemory_mb = \"lots\"\n";
        let err = parse("p.toml", text).unwrap_err().0;
        assert!(err.starts_with("p.toml:3:13:"), "{err}");
    }

    #[test]
    fn fuel_takes_a_budget_or_off_and_nothing_else() {
        let ok = parse("p", "[plugins.a]\nsource = \"x\"\nfuel = \"off\"\n").unwrap();
        assert_eq!(ok.plugins["a"].fuel, Some(FuelSetting::Off));
        let err = parse("p", "[plugins.a]\nsource = \"x\"\nfuel = \"lots\"\n")
            .unwrap_err()
            .0;
        assert!(err.contains("p:3:8") && err.contains("\"off\""), "{err}");
        let err = parse("p", "[plugins.a]\nsource = \"x\"\nmounts = [{ host = \".\", guest = \"/w\", mode = \"rx\" }]\n").unwrap_err().0;
        assert!(err.contains("p:3:"), "{err}");
    }

    #[test]
    fn the_checkpoints_table_is_checked_where_it_is_written() {
        let ok = parse(
            "p",
            "[checkpoints]\nenabled = false\nmax_files = 10\nmax_total_mb = 5\nmax_file_mb = 1\nexclude_vcs_ignored = true\ngrain = \"turn\"\n",
        )
        .unwrap();
        let policy = ok.checkpoint_policy();
        assert!(!policy.enabled && policy.exclude_vcs_ignored);
        assert_eq!(
            (policy.max_files, policy.max_total_bytes, policy.max_file_bytes),
            (10, 5 << 20, 1 << 20)
        );
        let defaults = parse("p", "").unwrap().checkpoint_policy();
        assert!(defaults.enabled && !defaults.exclude_vcs_ignored);
        assert_eq!(defaults.max_files, 50_000);
        let call = parse("p", "[checkpoints]\ngrain = \"call\"\n").unwrap();
        assert_eq!(call.checkpoint_policy().grain, crate::preset::Grain::Call);
        let err = parse("p", "[checkpoints]\ngrain = \"hour\"\n").unwrap_err().0;
        assert!(err.contains("p:2:9") && err.contains("\"hour\" is not a grain"), "{err}");
        let err = parse("p", "[checkpoints]\nmax_files = 0\n").unwrap_err().0;
        assert!(err.contains("p:2:") && err.contains("above 0"), "{err}");
        let err = parse("p", "[checkpoints]\nexclude_ignored = true\n").unwrap_err().0;
        assert!(err.contains("did you mean `exclude_vcs_ignored`?"), "{err}");
    }
}
