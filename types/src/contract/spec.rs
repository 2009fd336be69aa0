//! Tool specs (C1 model-facing, C2 runtime-facing).

use serde::{Deserialize, Serialize};

/// Risk tier of a tool's effects (C2). The preset maps each tier to allow, ask or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    /// The tier as presets write it.
    pub fn name(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// What happens to a result larger than its budget (S5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    Truncate,
    Spill,
}

/// The most one result may put in front of the model (S5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputBudget {
    pub max_bytes: u64,
    pub on_overflow: Overflow,
}

impl OutputBudget {
    /// Used when neither the tool nor the preset names a budget: 64 KiB, truncated.
    pub const DEFAULT: OutputBudget = OutputBudget {
        max_bytes: 64 * 1024,
        on_overflow: Overflow::Truncate,
    };
}

/// An example call for the model (C1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    /// The arguments as JSON text, exactly as the plugin wrote them.
    pub args: String,
    pub correct: bool,
    pub note: String,
}

/// Runtime-facing metadata (C2). `None` means the tool did not say; every reading below takes
/// the conservative side for `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeMeta {
    pub read_only: Option<bool>,
    pub concurrency_safe: Option<bool>,
    pub idempotent: Option<bool>,
    pub cancellable: Option<bool>,
    pub risk: Option<Risk>,
    pub output_budget: Option<OutputBudget>,
    pub path_params: Vec<String>,
}

impl RuntimeMeta {
    /// Only a declared read-only tool is treated as one; it then gets read-only mounts (S2).
    pub fn is_read_only(&self) -> bool {
        self.read_only == Some(true)
    }
    /// Unknown means not parallel (X1).
    pub fn is_concurrency_safe(&self) -> bool {
        self.concurrency_safe == Some(true)
    }
    /// Unknown means never retried automatically (L4).
    pub fn is_idempotent(&self) -> bool {
        self.idempotent == Some(true)
    }
    /// Unknown means the call may leave partial effects when interrupted.
    pub fn is_cancellable(&self) -> bool {
        self.cancellable == Some(true)
    }
    /// Unknown risk counts as high (C2).
    pub fn effective_risk(&self) -> Risk {
        self.risk.unwrap_or(Risk::High)
    }

    /// What a tool says about itself may tighten policy, never loosen it (K5). A tool whose
    /// component imports a host capability reaches beyond its mounts, so it is never
    /// read-only (its mounts are not made read-only on its word, and it never skips the hooks
    /// and approval a writer gets), whatever it declares; its risk is at least medium with
    /// `http`, and high with `exec`: a program run through any tool is judged like one run by
    /// `run_command`, so a preset's approval tiers treat the two alike.
    pub fn floor_for_capabilities(&mut self, reach: Reach) {
        let floor = match reach {
            Reach::Mounts => return,
            Reach::Network => Risk::Medium,
            Reach::Programs => Risk::High,
        };
        if self.read_only == Some(true) {
            self.read_only = Some(false);
        }
        if let Some(risk) = self.risk {
            self.risk = Some(risk.max(floor));
        }
    }

    /// The preset's `risk` for a plugin raises its tools' risk, never lowers it (K5).
    pub fn raise_risk(&mut self, floor: Option<Risk>) {
        if let Some(floor) = floor {
            self.risk = Some(self.effective_risk().max(floor));
        }
    }
}

/// What a tool's component can reach beyond its mounts, read from what it imports (K5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Only its mounts (no host capability).
    Mounts,
    /// A capability other than `exec` (`http`).
    Network,
    /// `exec`: programs on the host.
    Programs,
}

/// One tool, as a plugin describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    pub examples: Vec<Example>,
    #[serde(flatten)]
    pub meta: RuntimeMeta,
}

/// Tool names the runtime accepts: `^[A-Za-z0-9_-]{1,64}$`, which every provider's API allows.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_metadata_reads_conservatively() {
        let meta = RuntimeMeta::default();
        assert!(!meta.is_read_only());
        assert!(!meta.is_concurrency_safe());
        assert!(!meta.is_idempotent());
        assert!(!meta.is_cancellable());
        assert_eq!(meta.effective_risk(), Risk::High);
    }

    #[test]
    fn capabilities_and_presets_only_tighten_self_declared_metadata() {
        // K5: an exec/http tool claiming read-only and low risk is a medium-risk writer.
        let claims = RuntimeMeta {
            read_only: Some(true),
            risk: Some(Risk::Low),
            ..RuntimeMeta::default()
        };
        let mut meta = claims.clone();
        meta.floor_for_capabilities(Reach::Network);
        assert!(!meta.is_read_only());
        assert_eq!(meta.effective_risk(), Risk::Medium);
        // An exec tool is judged like run_command: high.
        let mut exec = claims.clone();
        exec.floor_for_capabilities(Reach::Programs);
        assert!(!exec.is_read_only());
        assert_eq!(exec.effective_risk(), Risk::High);
        let mut plain = claims.clone();
        plain.floor_for_capabilities(Reach::Mounts);
        assert_eq!(plain, claims);
        let mut high = RuntimeMeta {
            risk: Some(Risk::High),
            ..RuntimeMeta::default()
        };
        high.floor_for_capabilities(Reach::Network);
        assert_eq!(high.effective_risk(), Risk::High);
        // A preset raises, never lowers; undeclared stays high.
        let mut raised = claims.clone();
        raised.raise_risk(Some(Risk::High));
        assert_eq!(raised.effective_risk(), Risk::High);
        let mut kept = RuntimeMeta::default();
        kept.raise_risk(Some(Risk::Low));
        assert_eq!(kept.effective_risk(), Risk::High);
    }

    #[test]
    fn tool_names_follow_the_provider_rules() {
        assert!(valid_tool_name("read_file"));
        assert!(valid_tool_name("a-B_9"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("read file"));
        assert!(!valid_tool_name("läs"));
        assert!(!valid_tool_name(&"x".repeat(65)));
    }
}
