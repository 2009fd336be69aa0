//! Tool metadata across the protocol (C2, K5).
//!
//! Serving, paddock tells the client what its runtime metadata says, conservatively:
//! `readOnlyHint` only for a declared read-only tool, `destructiveHint` for every other one,
//! `idempotentHint` only when declared.
//!
//! Using a server, its annotations are hints from an untrusted party ("clients should never
//! make tool use decisions based on annotations from untrusted servers"): they may tighten
//! paddock's reading, never loosen it. A tool is read-only only when the kernel makes it so
//! (every mount of its server read-only, no network) *and* the server says so; it is then
//! medium risk (a host process, K5), else high. Idempotent likewise needs both. Unknown is the
//! conservative side: not read-only, not parallel, not idempotent, high risk.

use rmcp::model::ToolAnnotations;

use paddock_types::contract::{Risk, RuntimeMeta};

/// What `tools/list` tells an MCP client about a paddock tool.
pub fn annotations_for(meta: &RuntimeMeta) -> ToolAnnotations {
    let read_only = meta.is_read_only();
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(meta.is_idempotent())
}

/// Runtime metadata of an MCP server's tool. `enforced_read_only`: the server's confinement
/// lets it write nothing and reach no network.
pub fn meta_from_annotations(
    annotations: Option<&ToolAnnotations>,
    enforced_read_only: bool,
) -> RuntimeMeta {
    let says = |hint: fn(&ToolAnnotations) -> Option<bool>| annotations.and_then(hint);
    let read_only = enforced_read_only
        && says(|a| a.read_only_hint) == Some(true)
        && says(|a| a.destructive_hint) != Some(true);
    let idempotent = read_only && says(|a| a.idempotent_hint) == Some(true);
    RuntimeMeta {
        read_only: Some(read_only),
        concurrency_safe: Some(read_only),
        idempotent: Some(idempotent),
        cancellable: None,
        risk: Some(if read_only { Risk::Medium } else { Risk::High }),
        output_budget: None,
        path_params: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_cannot_talk_its_way_below_high_risk_or_into_parallel() {
        let claims = ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true);
        // Writable mounts: the hints change nothing.
        let meta = meta_from_annotations(Some(&claims), false);
        assert!(!meta.is_read_only() && !meta.is_concurrency_safe() && !meta.is_idempotent());
        assert_eq!(meta.effective_risk(), Risk::High);
        // No annotations at all: the conservative side.
        let meta = meta_from_annotations(None, true);
        assert!(!meta.is_read_only());
        assert_eq!(meta.effective_risk(), Risk::High);
        // Read-only by the kernel and by its word: read-only, still a host process.
        let meta = meta_from_annotations(Some(&claims), true);
        assert!(meta.is_read_only() && meta.is_idempotent());
        assert_eq!(meta.effective_risk(), Risk::Medium);
    }

    #[test]
    fn served_annotations_follow_the_runtime_metadata() {
        let writer = annotations_for(&RuntimeMeta::default());
        assert_eq!(writer.read_only_hint, Some(false));
        assert_eq!(writer.destructive_hint, Some(true));
        assert_eq!(writer.idempotent_hint, Some(false));
        let reader = annotations_for(&RuntimeMeta {
            read_only: Some(true),
            idempotent: Some(true),
            ..RuntimeMeta::default()
        });
        assert_eq!(reader.read_only_hint, Some(true));
        assert_eq!(reader.destructive_hint, Some(false));
        assert_eq!(reader.idempotent_hint, Some(true));
    }
}
