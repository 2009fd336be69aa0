//! What replacing an installed plugin with other bytes changes in what it may do: the
//! capability diff an upgrade (and an install under a name in use) shows before it records
//! anything, and who vouches for it: a version signed by another key than the installed one
//! (or by none) is a signer change, which widens like an import added (the plugin is now
//! whatever that other key's holder publishes). Each change says whether it widens: lets the plugin reach more (an import
//! added), puts new words or arguments in front of the model (a tool added, a description,
//! schema or example changed), or asks the user less (risk lowered, read-only, idempotent,
//! parallel-safe or cancellable gained, a larger output budget, a path parameter no longer
//! checked as a path). Removals and the opposite changes narrow; they are shown but need no
//! yes. The text of the changes is the plugins' own: the command line sanitizes it.

use super::Installed;
use super::remote::Origin;
use super::signature::SignatureRecord;
use paddock_sandbox::{Capability, World};
use paddock_types::contract::{OutputBudget, Overflow, Risk, RuntimeMeta, ToolSpec};

/// What an import lets a component reach, for the diff's reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportKind {
    /// `paddock:plugin/exec`: programs on the host.
    Exec,
    /// `paddock:plugin/http`: the allowed hosts over HTTP.
    Http,
    /// `wasi:sockets/*` or `wasi:http/*`: the network.
    Network,
    /// `wasi:filesystem/*`: its mounts.
    Filesystem,
    /// Anything else (logging, clocks, random, the plugin types).
    Other,
}

impl ImportKind {
    pub fn of(import: &str) -> ImportKind {
        if import == Capability::Exec.interface() {
            ImportKind::Exec
        } else if import == Capability::Http.interface() {
            ImportKind::Http
        } else if import.starts_with("wasi:sockets/") || import.starts_with("wasi:http/") {
            ImportKind::Network
        } else if import.starts_with("wasi:filesystem/") {
            ImportKind::Filesystem
        } else {
            ImportKind::Other
        }
    }

    /// A few words on what it reaches.
    pub fn reach(self) -> &'static str {
        match self {
            ImportKind::Exec => "exec: runs programs on the host",
            ImportKind::Http => "http: makes HTTP requests",
            ImportKind::Network => "network sockets",
            ImportKind::Filesystem => "filesystem: its mounts",
            ImportKind::Other => "",
        }
    }
}

/// One runtime metadata field of a tool (`RuntimeMeta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaField {
    Risk,
    ReadOnly,
    Idempotent,
    ConcurrencySafe,
    Cancellable,
    OutputBudget,
    PathParams,
}

impl MetaField {
    pub fn name(self) -> &'static str {
        match self {
            MetaField::Risk => "risk",
            MetaField::ReadOnly => "read-only",
            MetaField::Idempotent => "idempotent",
            MetaField::ConcurrencySafe => "concurrency-safe",
            MetaField::Cancellable => "cancellable",
            MetaField::OutputBudget => "output budget",
            MetaField::PathParams => "path params",
        }
    }
}

/// One difference between the installed version and the new one.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The component is now a hook where it was a tool plugin, or the reverse.
    Kind {
        old: String,
        new: String,
    },
    ImportAdded {
        import: String,
        kind: ImportKind,
    },
    ImportRemoved {
        import: String,
        kind: ImportKind,
    },
    ToolAdded {
        tool: String,
    },
    ToolRemoved {
        tool: String,
    },
    Description {
        tool: String,
        old: String,
        new: String,
    },
    Parameters {
        tool: String,
        old: serde_json::Value,
        new: serde_json::Value,
    },
    Examples {
        tool: String,
    },
    /// The trusted key that vouched for the installed version did not sign this one: `new`
    /// is the key that did, or that none did.
    Signer {
        old: String,
        new: String,
    },
    /// A metadata field, as the host reads it (after the floors its imports set), old and new
    /// shown as words.
    Meta {
        tool: String,
        field: MetaField,
        old: String,
        new: String,
        widens: bool,
    },
}

impl Change {
    /// Whether this change lets the plugin do more, or ask less, than before.
    pub fn widens(&self) -> bool {
        match self {
            Change::Kind { .. }
            | Change::Signer { .. }
            | Change::ImportAdded { .. }
            | Change::ToolAdded { .. }
            | Change::Description { .. }
            | Change::Parameters { .. }
            | Change::Examples { .. } => true,
            Change::ImportRemoved { .. } | Change::ToolRemoved { .. } => false,
            Change::Meta { widens, .. } => *widens,
        }
    }

    /// The tool it is about, if any.
    pub fn tool(&self) -> Option<&str> {
        match self {
            Change::Kind { .. }
            | Change::Signer { .. }
            | Change::ImportAdded { .. }
            | Change::ImportRemoved { .. } => None,
            Change::ToolAdded { tool }
            | Change::ToolRemoved { tool }
            | Change::Description { tool, .. }
            | Change::Parameters { tool, .. }
            | Change::Examples { tool }
            | Change::Meta { tool, .. } => Some(tool),
        }
    }

    /// One line, without the plugin's long texts (descriptions and schemas are named, not
    /// quoted); not sanitized.
    pub fn summary(&self) -> String {
        match self {
            Change::Kind { old, new } => format!("it is now a {new} (was a {old})"),
            Change::Signer { old, new } => format!("signer changed: {old} -> {new}"),
            Change::ImportAdded { import, kind } => match kind.reach() {
                "" => format!("import added: {import}"),
                reach => format!("import added: {import} ({reach})"),
            },
            Change::ImportRemoved { import, .. } => format!("import removed: {import}"),
            Change::ToolAdded { tool } => format!("tool added: {tool}"),
            Change::ToolRemoved { tool } => format!("tool removed: {tool}"),
            Change::Description { tool, .. } => format!("tool {tool}: description changed"),
            Change::Parameters { tool, .. } => format!("tool {tool}: parameter schema changed"),
            Change::Examples { tool } => format!("tool {tool}: examples changed"),
            Change::Meta {
                tool,
                field,
                old,
                new,
                ..
            } => format!("tool {tool}: {} {old} -> {new}", field.name()),
        }
    }
}

/// The changes from the installed version of a plugin to a candidate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CapabilityDiff {
    pub changes: Vec<Change>,
    /// False when only the imports are known (from the registry's config, before the layer
    /// is downloaded): the tools are compared once the component itself is checked.
    pub complete: bool,
}

impl CapabilityDiff {
    pub fn widens(&self) -> bool {
        self.changes.iter().any(Change::widens)
    }

    pub fn widening(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.widens())
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The widening changes, one clause each, for an error message (not sanitized).
    pub fn widening_summary(&self) -> String {
        self.widening()
            .map(Change::summary)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Whether a replacement that widens what a plugin may do goes ahead.
#[derive(Clone, Copy)]
pub enum Widening<'a> {
    /// Refused.
    Refuse,
    /// Accepted without asking.
    Accept,
    /// Asked: true means yes (the command line asks on a terminal).
    Ask(&'a (dyn Fn(&CapabilityDiff) -> bool + Sync)),
}

impl Widening<'_> {
    pub(super) fn allows(&self, diff: &CapabilityDiff) -> bool {
        match self {
            Widening::Refuse => false,
            Widening::Accept => true,
            Widening::Ask(ask) => ask(diff),
        }
    }
}

/// What one version of a plugin is, as far as the diff compares it.
#[derive(Debug, Clone, Copy)]
pub struct Surface<'a> {
    pub kind: World,
    pub imports: &'a [String],
    pub tools: &'a [ToolSpec],
    /// The trusted key that vouched for it, if one did.
    pub signer: Option<Signer<'a>>,
}

impl<'a> Surface<'a> {
    /// An installed (or about to be installed) version: its record and its tools as the host
    /// reads them.
    pub fn of(record: &'a Installed, tools: &'a [ToolSpec]) -> Surface<'a> {
        Surface {
            kind: record.kind,
            imports: &record.imports,
            tools,
            signer: Signer::of_origin(record.origin.as_ref()),
        }
    }
}

/// The trusted key whose signature a version was installed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signer<'a> {
    pub key: &'a str,
    /// `sha256:…` of the key: what counts as the same signer.
    pub fingerprint: &'a str,
}

impl<'a> Signer<'a> {
    /// The signer a signature record names (none when unsigned was allowed).
    pub fn of_record(record: &'a SignatureRecord) -> Option<Signer<'a>> {
        if record.unsigned_allowed {
            return None;
        }
        Some(Signer {
            key: record.key.as_deref().unwrap_or("?"),
            fingerprint: record.fingerprint.as_deref()?,
        })
    }

    /// The signer an install's origin records (none for a file, a URL, or unsigned).
    pub fn of_origin(origin: Option<&'a Origin>) -> Option<Signer<'a>> {
        match origin {
            Some(Origin::Oci {
                signature: Some(record),
                ..
            }) => Signer::of_record(record),
            _ => None,
        }
    }

    fn words(self) -> String {
        format!("key `{}` ({})", self.key, self.fingerprint)
    }
}

/// The change when a key vouched for the installed version and the new one is not signed by
/// that same key (by fingerprint); nothing when the installed version had no signer.
pub fn signer_change(old: Option<Signer<'_>>, new: Option<Signer<'_>>) -> Option<Change> {
    let old = old?;
    if new.is_some_and(|n| n.fingerprint == old.fingerprint) {
        return None;
    }
    Some(Change::Signer {
        old: old.words(),
        new: new.map_or_else(
            || "no key you trust (installed unsigned, or not from a registry)".to_string(),
            Signer::words,
        ),
    })
}

/// Imports only: what the registry's config says the new component imports, against what
/// the installed one imports.
pub fn imports_diff(old: &[String], new: &[String]) -> CapabilityDiff {
    let mut diff = CapabilityDiff::default();
    push_imports(&mut diff.changes, old, new);
    diff
}

fn push_imports(changes: &mut Vec<Change>, old: &[String], new: &[String]) {
    for import in new.iter().filter(|i| !old.contains(i)) {
        changes.push(Change::ImportAdded {
            import: import.clone(),
            kind: ImportKind::of(import),
        });
    }
    for import in old.iter().filter(|i| !new.contains(i)) {
        changes.push(Change::ImportRemoved {
            import: import.clone(),
            kind: ImportKind::of(import),
        });
    }
}

/// The whole diff: kind, imports, tools, and per tool of the same name its description,
/// schema, examples and runtime metadata.
pub fn diff(old: Surface<'_>, new: Surface<'_>) -> CapabilityDiff {
    let mut changes = Vec::new();
    changes.extend(signer_change(old.signer, new.signer));
    if old.kind != new.kind {
        changes.push(Change::Kind {
            old: old.kind.noun().into(),
            new: new.kind.noun().into(),
        });
    }
    push_imports(&mut changes, old.imports, new.imports);
    for tool in new.tools {
        let Some(before) = old.tools.iter().find(|t| t.name == tool.name) else {
            changes.push(Change::ToolAdded {
                tool: tool.name.clone(),
            });
            continue;
        };
        push_tool(&mut changes, before, tool);
    }
    for tool in old.tools {
        if !new.tools.iter().any(|t| t.name == tool.name) {
            changes.push(Change::ToolRemoved {
                tool: tool.name.clone(),
            });
        }
    }
    CapabilityDiff {
        changes,
        complete: true,
    }
}

fn push_tool(changes: &mut Vec<Change>, old: &ToolSpec, new: &ToolSpec) {
    let tool = new.name.clone();
    if old.description != new.description {
        changes.push(Change::Description {
            tool: tool.clone(),
            old: old.description.clone(),
            new: new.description.clone(),
        });
    }
    if old.parameters != new.parameters {
        changes.push(Change::Parameters {
            tool: tool.clone(),
            old: old.parameters.clone(),
            new: new.parameters.clone(),
        });
    }
    if old.examples != new.examples {
        changes.push(Change::Examples { tool: tool.clone() });
    }
    push_meta(changes, &tool, &old.meta, &new.meta);
}

fn push_meta(changes: &mut Vec<Change>, tool: &str, old: &RuntimeMeta, new: &RuntimeMeta) {
    let mut meta = |field: MetaField, old: String, new: String, widens: bool| {
        if old != new {
            changes.push(Change::Meta {
                tool: tool.to_string(),
                field,
                old,
                new,
                widens,
            });
        }
    };
    let risk = |r: Option<Risk>| match r {
        Some(r) => r.name().to_string(),
        None => "undeclared (high)".to_string(),
    };
    meta(
        MetaField::Risk,
        risk(old.risk),
        risk(new.risk),
        new.effective_risk() < old.effective_risk(),
    );
    let flag = |v: Option<bool>| match v {
        Some(b) => b.to_string(),
        None => "undeclared".to_string(),
    };
    // Each flag, once true, lets the host do more on the tool's word (fewer approvals,
    // read-only mounts skipped for hooks, retries, parallel runs, interruption).
    for (field, o, n, o_true, n_true) in [
        (
            MetaField::ReadOnly,
            old.read_only,
            new.read_only,
            old.is_read_only(),
            new.is_read_only(),
        ),
        (
            MetaField::Idempotent,
            old.idempotent,
            new.idempotent,
            old.is_idempotent(),
            new.is_idempotent(),
        ),
        (
            MetaField::ConcurrencySafe,
            old.concurrency_safe,
            new.concurrency_safe,
            old.is_concurrency_safe(),
            new.is_concurrency_safe(),
        ),
        (
            MetaField::Cancellable,
            old.cancellable,
            new.cancellable,
            old.is_cancellable(),
            new.is_cancellable(),
        ),
    ] {
        meta(field, flag(o), flag(n), n_true && !o_true);
    }
    let budget = |b: Option<OutputBudget>| match b {
        Some(b) => format!("{} bytes, then {}", b.max_bytes, overflow(b.on_overflow)),
        None => "undeclared (the preset's or the default)".to_string(),
    };
    let effective = |b: Option<OutputBudget>| b.unwrap_or(OutputBudget::DEFAULT);
    let (ob, nb) = (effective(old.output_budget), effective(new.output_budget));
    meta(
        MetaField::OutputBudget,
        budget(old.output_budget),
        budget(new.output_budget),
        nb.max_bytes > ob.max_bytes
            || (nb.on_overflow == Overflow::Spill && ob.on_overflow != Overflow::Spill),
    );
    // A parameter no longer declared a path is no longer checked as one (protected paths,
    // per-path locks).
    let unchecked = old.path_params.iter().any(|p| !new.path_params.contains(p));
    meta(
        MetaField::PathParams,
        format!("[{}]", old.path_params.join(", ")),
        format!("[{}]", new.path_params.join(", ")),
        unchecked,
    );
}

fn overflow(o: Overflow) -> &'static str {
    match o {
        Overflow::Truncate => "truncate",
        Overflow::Spill => "spill",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str, risk: Option<Risk>, read_only: bool) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object"}),
            examples: Vec::new(),
            meta: RuntimeMeta {
                read_only: Some(read_only),
                risk,
                ..RuntimeMeta::default()
            },
        }
    }

    fn surface<'a>(imports: &'a [String], tools: &'a [ToolSpec]) -> Surface<'a> {
        Surface {
            kind: World::Tools,
            imports,
            tools,
            signer: None,
        }
    }

    #[test]
    fn another_signer_than_the_installed_versions_widens_the_same_one_does_not() {
        let none: Vec<String> = Vec::new();
        let tools = [spec("t", "d", Some(Risk::Low), true)];
        let a = Signer {
            key: "acme",
            fingerprint: "sha256:aaaa",
        };
        let b = Signer {
            key: "other",
            fingerprint: "sha256:bbbb",
        };
        let with = |signer| Surface {
            signer,
            ..surface(&none, &tools)
        };
        let d = diff(with(Some(a)), with(Some(b)));
        let widening: Vec<_> = d.widening().map(Change::summary).collect();
        assert_eq!(
            widening,
            ["signer changed: key `acme` (sha256:aaaa) -> key `other` (sha256:bbbb)"]
        );
        let renamed = Signer {
            key: "acme-2026",
            ..a
        };
        assert!(diff(with(Some(a)), with(Some(renamed))).is_empty());
        assert!(diff(with(Some(a)), with(None)).widens());
        assert!(diff(with(None), with(Some(b))).is_empty());
    }

    #[test]
    fn added_imports_tools_and_changed_words_widen_removals_do_not() {
        let exec = Capability::Exec.interface().to_string();
        let old_imports = vec!["wasi:filesystem/types@0.2.0".to_string()];
        let new_imports = vec![exec.clone()];
        let old = vec![
            spec("greet", "Greets.", Some(Risk::Low), true),
            spec("gone", "Goes.", Some(Risk::Low), true),
        ];
        let new = vec![
            spec("greet", "Greets!", Some(Risk::Low), true),
            spec("fresh", "New.", Some(Risk::Low), true),
        ];
        let d = diff(surface(&old_imports, &old), surface(&new_imports, &new));
        assert!(d.complete && d.widens());
        let widening: Vec<_> = d.widening().map(Change::summary).collect();
        assert_eq!(
            widening,
            [
                format!("import added: {exec} (exec: runs programs on the host)"),
                "tool greet: description changed".to_string(),
                "tool added: fresh".to_string(),
            ]
        );
        let narrowing: Vec<_> = d
            .changes
            .iter()
            .filter(|c| !c.widens())
            .map(Change::summary)
            .collect();
        assert_eq!(
            narrowing,
            [
                "import removed: wasi:filesystem/types@0.2.0",
                "tool removed: gone"
            ]
        );
        assert_eq!(
            ImportKind::of("wasi:sockets/tcp@0.2.0"),
            ImportKind::Network
        );
    }

    #[test]
    fn lower_risk_and_gained_flags_widen_the_opposite_narrows() {
        let none: Vec<String> = Vec::new();
        let high = [spec("t", "d", Some(Risk::High), false)];
        let low = [spec("t", "d", Some(Risk::Low), true)];
        let d = diff(surface(&none, &high), surface(&none, &low));
        assert_eq!(d.widening().count(), 2, "{d:?}");
        let back = diff(surface(&none, &low), surface(&none, &high));
        assert!(!back.widens() && back.changes.len() == 2, "{back:?}");
        let undeclared = [spec("t", "d", None, false)];
        let d = diff(surface(&none, &high), surface(&none, &undeclared));
        assert!(!d.widens(), "undeclared counts as high: {d:?}");

        let mut budget = low[0].clone();
        budget.meta.output_budget = Some(OutputBudget {
            max_bytes: 1 << 20,
            on_overflow: Overflow::Truncate,
        });
        budget.meta.path_params = vec!["path".into()];
        let d = diff(
            surface(&none, &low),
            surface(&none, std::slice::from_ref(&budget)),
        );
        assert!(d.widens(), "a larger budget widens: {d:?}");
        let d = diff(
            surface(&none, std::slice::from_ref(&budget)),
            surface(&none, &low),
        );
        let widening: Vec<_> = d.widening().map(Change::summary).collect();
        assert_eq!(widening, ["tool t: path params [path] -> []"], "{d:?}");
        let same = diff(surface(&none, &low), surface(&none, &low));
        assert!(same.is_empty());
    }
}
