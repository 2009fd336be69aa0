//! The sections of a preset beyond plugins (P1, H2, C2): loop budgets, capability grants, tool
//! selection, hooks and approval, as written. Each value that can be wrong is checked while it
//! is parsed, so its error carries the file, line and column of the value itself.

use serde::{Deserialize, Deserializer, Serialize};

use paddock_sandbox::MountMode;

/// Loop budgets (B3, X1): `[limits]`. Absent budgets take the defaults `preset show` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopLimits {
    #[serde(default)]
    pub max_turns: Option<Positive>,
    #[serde(default)]
    pub max_tokens: Option<Positive>,
    #[serde(default)]
    pub max_wall_secs: Option<Positive>,
    #[serde(default)]
    pub max_cost_usd: Option<Dollars>,
    #[serde(default)]
    pub max_parallel_tool_calls: Option<Positive>,
    /// Subagents (`task` calls) that may run at once.
    #[serde(default)]
    pub max_subagents: Option<Positive>,
    /// How deep subagents may nest: 1 lets this session's children run and none of theirs;
    /// 0 lets none run.
    #[serde(default)]
    pub max_depth: Option<u64>,
    /// Before a budget runs out, ask the model to finish up (default true).
    #[serde(default)]
    pub wrap_up: Option<bool>,
}

/// `[checkpoints]`: how the session's writable mounts are recorded for `rewind` and `diff`
/// (docs/rewind.md). Absent keys take the defaults `preset show` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsEntry {
    /// `false`: no checkpoints (no rewind of the files, no diff).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// A session whose writable mounts hold more entries than this runs without checkpoints.
    #[serde(default)]
    pub max_files: Option<Positive>,
    /// ... or more megabytes of files than this.
    #[serde(default)]
    pub max_total_mb: Option<Positive>,
    /// Files larger than this many megabytes are left out of checkpoints.
    #[serde(default)]
    pub max_file_mb: Option<Positive>,
    /// Leave out what the project's git ignores (`.gitignore` files, `.git/info/exclude`).
    #[serde(default)]
    pub exclude_vcs_ignored: Option<bool>,
    /// When checkpoints are taken: `"turn"` (as each turn begins and ends), or `"call"` (also
    /// before every call that is not idempotent).
    #[serde(default)]
    pub grain: Option<Grain>,
    /// Record the directories exec grants let programs write outside the mounts
    /// (`grants.exec.write`) too (default true).
    #[serde(default)]
    pub grants: Option<bool>,
}

/// When checkpoints are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grain {
    Turn,
    Call,
}

impl<'de> Deserialize<'de> for Grain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "turn" => Ok(Grain::Turn),
            "call" => Ok(Grain::Call),
            other => Err(serde::de::Error::custom(format!(
                "{other:?} is not a grain: use \"turn\" (as each turn begins and ends) or \
                 \"call\" (also before every call that is not idempotent)"
            ))),
        }
    }
}

/// A whole number above zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Positive(pub u64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u64::deserialize(d)? {
            0 => Err(serde::de::Error::custom(
                "must be above 0 (leave the key out for the default)",
            )),
            n => Ok(Positive(n)),
        }
    }
}

/// An amount of US dollars, above zero.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Dollars(pub f64);

impl<'de> Deserialize<'de> for Dollars {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(d)?;
        if value.is_finite() && value > 0.0 {
            Ok(Dollars(value))
        } else {
            Err(serde::de::Error::custom(
                "must be a positive amount of dollars, e.g. 2.0",
            ))
        }
    }
}

/// `grants = { exec = {...}, http = {...}, protect = [...], writable_protected = [...] }`:
/// host capabilities (S6), none by default, and protected paths (K2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsEntry {
    #[serde(default)]
    pub exec: Option<ExecEntry>,
    #[serde(default)]
    pub http: Option<HttpEntry>,
    /// More protected paths, relative to each mount's root, beyond `.git`, `.paddock` and
    /// `.cargo/config*` (K2).
    #[serde(default)]
    pub protect: Vec<RelPath>,
    /// Protected paths this plugin may write after all, e.g. `.git` for a tool that commits.
    #[serde(default)]
    pub writable_protected: Vec<RelPath>,
}

/// A path relative to a mount's root, without `..`: checked while parsing so the error
/// carries its file, line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RelPath(pub std::path::PathBuf);

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use std::path::{Component, Path};
        let text = String::deserialize(d)?;
        let plain = Path::new(&text)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        let named = Path::new(&text)
            .components()
            .any(|c| matches!(c, Component::Normal(_)));
        if plain && named {
            Ok(RelPath(text.into()))
        } else {
            Err(serde::de::Error::custom(format!(
                "{text:?} is not a path relative to the mount's root; write e.g. \".envrc\" or \
                 \"config/secrets\" (no leading `/`, no `..`)"
            )))
        }
    }
}

/// `grants.exec`: programs the plugin may run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecEntry {
    /// Program names (found on PATH) or absolute paths, or patterns with their arguments
    /// (`"cargo test *"`); `"*"` allows every command.
    pub allow: Vec<String>,
    /// Patterns the shell asks about before running, even when `allow` lists them.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Patterns never run, by the shell or `run_command`.
    #[serde(default)]
    pub deny: Vec<String>,
    /// How long a shell call waits for its command before answering with what it printed,
    /// leaving it running (`write_stdin` waits for more).
    #[serde(default)]
    pub yield_ms: Option<Positive>,
    /// Where the jail cannot be set up, leave this plugin's tools out (the start says so)
    /// instead of refusing to start the session.
    #[serde(default)]
    pub optional: bool,
    /// Host environment variables passed through; all others are cleared.
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub timeout_ms: Option<Positive>,
    /// Bytes of stdout and of stderr kept per run.
    #[serde(default)]
    pub output_bytes: Option<Positive>,
    /// `"on"` (the default): programs run confined by the kernel (K1). `"off"` runs them with
    /// the user's full rights; paddock warns about it at every start.
    #[serde(default)]
    pub confine: Option<ConfineMode>,
    /// Whether programs may use the network.
    #[serde(default)]
    pub network: bool,
    /// More host paths programs may read and run (`~/` is the home directory).
    #[serde(default)]
    pub read: Vec<String>,
    /// More host paths programs may write.
    #[serde(default)]
    pub write: Vec<String>,
    /// Largest address space of a program, in MiB.
    #[serde(default)]
    pub memory_mb: Option<Positive>,
    /// Most processes a program may run at once.
    #[serde(default)]
    pub processes: Option<Positive>,
    /// Largest file a program may write, in MiB.
    #[serde(default)]
    pub file_mb: Option<Positive>,
}

/// `grants.exec.confine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfineMode {
    On,
    Off,
}

/// `grants.http`: hosts the plugin may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpEntry {
    /// `host`, `*.host`, optionally `scheme://` and `:port`; https and 443 by default.
    pub allow: Vec<HostPattern>,
    #[serde(default)]
    pub timeout_ms: Option<Positive>,
    #[serde(default)]
    pub max_response_bytes: Option<Positive>,
}

/// One entry of `grants.http.allow`, checked for shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HostPattern(pub String);

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let rest = match text.split_once("://") {
            Some(("http" | "https", rest)) => rest,
            Some((scheme, _)) => {
                return Err(serde::de::Error::custom(format!(
                    "scheme `{scheme}` is not supported; use http:// or https://"
                )));
            }
            None => text.as_str(),
        };
        let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
        let bare = host.strip_prefix("*.").unwrap_or(host);
        let ok = !bare.is_empty()
            && !bare.contains(['*', '/', '@', ' '])
            && rest
                .rsplit_once(':')
                .is_none_or(|(_, p)| p.parse::<u16>().is_ok());
        if ok {
            Ok(HostPattern(text))
        } else {
            Err(serde::de::Error::custom(format!(
                "{text:?} is not a host pattern; write e.g. \"docs.rs\", \"*.github.com\" or \
                 \"http://127.0.0.1:8080\""
            )))
        }
    }
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookPhase {
    Pre,
    Post,
}

/// What a failing hook (trap, timeout, bad answer) means. Pre-hooks: `deny` (the default) or
/// `allow`. Post-hooks: `deny` (the default: withhold a result the hook could not inspect) or
/// `keep` it. An interrupted hook never allows and never keeps, whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    Deny,
    Allow,
    Keep,
}

/// A regular expression on tool names, compiled once to check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Matcher(pub String);

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match regex::Regex::new(&text) {
            Ok(_) => Ok(Matcher(text)),
            Err(e) => Err(serde::de::Error::custom(format!(
                "{text:?} is not a regular expression: {}",
                e.to_string().lines().last().unwrap_or("invalid")
            ))),
        }
    }
}

/// `[[hooks]]`: one hook, run in preset order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// Shown in messages; defaults to the source's name.
    #[serde(default)]
    pub name: Option<String>,
    /// `builtin:NAME`, an installed name (`paddock plugin install`), or a path to a `.wasm`
    /// file relative to the directory of the preset file that names it.
    pub source: String,
    #[serde(default)]
    pub sha256: Option<String>,
    /// `pre` (before the call) or `post` (after it).
    pub on: HookPhase,
    /// Regular expression on tool names; absent: every tool. Anchored at both ends.
    #[serde(default, rename = "match")]
    pub matcher: Option<Matcher>,
    #[serde(default)]
    pub on_error: Option<OnError>,
    #[serde(default)]
    pub timeout_ms: Option<Positive>,
    #[serde(default)]
    pub fuel: Option<FuelSetting>,
    #[serde(default)]
    pub memory_mb: Option<Positive>,
    #[serde(default)]
    pub mounts: Vec<MountEntry>,
    #[serde(default)]
    pub grants: Option<GrantsEntry>,
    /// Handed to the hook as JSON in every event.
    #[serde(default)]
    pub config: Option<toml::Table>,
}

/// What happens to a call of a given risk tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    Allow,
    Ask,
    Deny,
}

/// `[approval]`: risk tier => allow, ask or deny (C2). A tool with no declared risk is high.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalEntry {
    #[serde(default)]
    pub low: Option<ApprovalMode>,
    #[serde(default)]
    pub medium: Option<ApprovalMode>,
    #[serde(default)]
    pub high: Option<ApprovalMode>,
}

/// A mount as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountEntry {
    /// Host directory; relative paths are relative to the working directory.
    pub host: String,
    /// Absolute guest path, e.g. "/workspace".
    pub guest: String,
    /// "ro" (the default) or "rw".
    #[serde(default = "read_only")]
    pub mode: MountMode,
}

/// `fuel = 2_000_000_000` or `fuel = "off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FuelSetting {
    Budget(u64),
    #[serde(serialize_with = "off")]
    Off,
}

impl FuelSetting {
    /// The budget a store gets: `None` is fuel off; an absent setting takes `default`.
    pub fn resolve(setting: Option<FuelSetting>, default: Option<u64>) -> Option<u64> {
        match setting {
            Some(FuelSetting::Off) => None,
            Some(FuelSetting::Budget(n)) => Some(n),
            None => default,
        }
    }
}

impl<'de> Deserialize<'de> for FuelSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Number(0)) => Err(serde::de::Error::custom(
                "fuel = 0 would stop every call at once; use a budget such as 2_000_000_000, or \"off\"",
            )),
            Ok(Raw::Number(n)) => Ok(FuelSetting::Budget(n)),
            Ok(Raw::Text(t)) if t == "off" => Ok(FuelSetting::Off),
            _ => Err(serde::de::Error::custom(
                "fuel must be a positive whole number of instructions, or \"off\"",
            )),
        }
    }
}

fn read_only() -> MountMode {
    MountMode::Ro
}

fn off<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("off")
}

#[cfg(test)]
mod tests {
    #[test]
    fn protect_keys_and_risk_parse_strictly() {
        let ok = crate::preset::parse(
            "t.toml",
            "[plugins.a]\nsource = \"builtin:fs\"\nrisk = \"high\"\n\
             grants = { protect = [\".envrc\", \"conf/secrets\"], writable_protected = [\".git\"] }\n",
        )
        .expect("parses");
        let a = &ok.plugins["a"];
        assert_eq!(a.risk, Some(paddock_types::contract::Risk::High));
        assert_eq!(a.grants.protect.len(), 2);
        let bad = crate::preset::parse(
            "t.toml",
            "[plugins.a]\nsource = \"builtin:fs\"\ngrants = { protect = [\"../up\"] }\n",
        )
        .expect_err("refused");
        assert!(bad.0.contains("t.toml:3"), "{}", bad.0);
        assert!(bad.0.contains("relative to the mount"), "{}", bad.0);
        let bad = crate::preset::parse(
            "t.toml",
            "[plugins.a]\nsource = \"builtin:fs\"\nrisk = \"extreme\"\n",
        )
        .expect_err("refused");
        assert!(bad.0.contains("t.toml:3"), "{}", bad.0);
    }
}
