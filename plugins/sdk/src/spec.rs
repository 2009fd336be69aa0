//! What a tool says about itself (C1, C2) and what it returns (C4), in plain Rust types that
//! the SDK converts to the WIT records.

use crate::bindings::paddock::plugin::types as wit;

/// Risk tier (C2). Undeclared risk is treated as `High` by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    Low,
    Medium,
    High,
}

/// What the host does with a result over budget (S5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    Truncate,
    Spill,
}

/// An example call shown to the model.
#[derive(Debug, Clone)]
pub struct Example {
    pub args: String,
    pub correct: bool,
    pub note: String,
}

/// A tool's description and runtime metadata. Everything not set stays "undeclared", which the
/// host reads conservatively.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    description: String,
    examples: Vec<Example>,
    read_only: Option<bool>,
    concurrency_safe: Option<bool>,
    idempotent: Option<bool>,
    cancellable: Option<bool>,
    risk: Option<Risk>,
    budget: Option<(u64, Overflow)>,
    path_params: Vec<String>,
}

impl Spec {
    /// `description` tells the model when to use the tool, when not, what paths are relative
    /// to, the output format, and how a truncated result continues.
    pub fn new(description: impl Into<String>) -> Spec {
        Spec {
            description: description.into(),
            ..Spec::default()
        }
    }

    /// Never writes: read-only, concurrency-safe, idempotent, cancellable, low risk. The host
    /// mounts everything read-only for its calls.
    pub fn read_only(mut self) -> Spec {
        self.read_only = Some(true);
        self.concurrency_safe = Some(true);
        self.idempotent = Some(true);
        self.cancellable = Some(true);
        self.risk = Some(Risk::Low);
        self
    }

    /// Writes: not read-only, not concurrency-safe, medium risk; idempotency as given.
    pub fn writes(mut self, idempotent: bool) -> Spec {
        self.read_only = Some(false);
        self.concurrency_safe = Some(false);
        self.idempotent = Some(idempotent);
        self.cancellable = Some(false);
        self.risk = Some(Risk::Medium);
        self
    }

    pub fn risk(mut self, risk: Risk) -> Spec {
        self.risk = Some(risk);
        self
    }

    pub fn concurrency_safe(mut self, safe: bool) -> Spec {
        self.concurrency_safe = Some(safe);
        self
    }

    pub fn idempotent(mut self, idempotent: bool) -> Spec {
        self.idempotent = Some(idempotent);
        self
    }

    pub fn cancellable(mut self, cancellable: bool) -> Spec {
        self.cancellable = Some(cancellable);
        self
    }

    /// The tool's own output budget.
    pub fn output_budget(mut self, max_bytes: u64, on_overflow: Overflow) -> Spec {
        self.budget = Some((max_bytes, on_overflow));
        self
    }

    /// Argument fields that hold paths (for per-path locks).
    pub fn path_params(mut self, params: &[&str]) -> Spec {
        self.path_params = params.iter().map(|p| p.to_string()).collect();
        self
    }

    /// A correct example call; `args` is JSON text.
    pub fn example(mut self, args: &str, note: &str) -> Spec {
        self.examples.push(Example {
            args: args.into(),
            correct: true,
            note: note.into(),
        });
        self
    }

    /// A mistake worth showing the model; `args` is JSON text.
    pub fn counter_example(mut self, args: &str, note: &str) -> Spec {
        self.examples.push(Example {
            args: args.into(),
            correct: false,
            note: note.into(),
        });
        self
    }

    pub(crate) fn into_wit(self, name: &str, parameters: String) -> wit::ToolSpec {
        wit::ToolSpec {
            name: name.to_string(),
            description: self.description,
            parameters,
            examples: self
                .examples
                .into_iter()
                .map(|e| wit::Example {
                    args: e.args,
                    correct: e.correct,
                    note: e.note,
                })
                .collect(),
            read_only: self.read_only,
            concurrency_safe: self.concurrency_safe,
            idempotent: self.idempotent,
            cancellable: self.cancellable,
            risk: self.risk.map(|r| match r {
                Risk::Low => wit::Risk::Low,
                Risk::Medium => wit::Risk::Medium,
                Risk::High => wit::Risk::High,
            }),
            output_budget: self.budget.map(|(max_bytes, overflow)| wit::OutputBudget {
                max_bytes,
                on_overflow: match overflow {
                    Overflow::Truncate => wit::Overflow::Truncate,
                    Overflow::Spill => wit::Overflow::Spill,
                },
            }),
            path_params: self.path_params,
        }
    }
}

/// A successful result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub content: String,
    pub truncated: bool,
    pub continuation: Option<String>,
}

impl Output {
    /// The whole result.
    pub fn text(content: impl Into<String>) -> Output {
        Output {
            content: content.into(),
            truncated: false,
            continuation: None,
        }
    }

    /// Part of the result; `continuation` says how to get the rest (e.g. the next call's
    /// arguments as JSON).
    pub fn partial(content: impl Into<String>, continuation: impl Into<String>) -> Output {
        Output {
            content: content.into(),
            truncated: true,
            continuation: Some(continuation.into()),
        }
    }

    /// An image (PNG, JPEG, GIF or WebP bytes) with a one-line `caption`. The host checks
    /// it and shows it to the model as an image; see `image_format` and `MAX_IMAGE_BYTES`.
    pub fn image(bytes: &[u8], caption: &str) -> Output {
        Output::text(crate::image::image_content(bytes, caption))
    }

    pub(crate) fn into_wit(self) -> wit::ToolOutput {
        wit::ToolOutput {
            content: self.content,
            truncated: self.truncated,
            continuation: self.continuation,
        }
    }
}

/// A failed call: a code, a message that says what is wrong and how to fix it, and whether
/// trying again could help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl ToolError {
    pub fn new(code: &str, message: impl Into<String>) -> ToolError {
        ToolError {
            code: code.to_string(),
            message: message.into(),
            retryable: false,
        }
    }

    /// The arguments are valid JSON for the schema but make no sense (the host keeps this
    /// code's meaning).
    pub fn invalid_args(message: impl Into<String>) -> ToolError {
        ToolError::new("INVALID_ARGS", message)
    }

    /// Wraps an I/O error on `path` with a code derived from its kind.
    pub fn io(path: &str, error: &std::io::Error) -> ToolError {
        use std::io::ErrorKind;
        let (code, hint) = match error.kind() {
            ErrorKind::NotFound => (
                "NOT_FOUND",
                "check the path; list_dir or glob shows what exists",
            ),
            ErrorKind::PermissionDenied => (
                "PERMISSION_DENIED",
                "the path is outside the mounts this tool was granted, or the mount is read-only",
            ),
            ErrorKind::AlreadyExists => ("ALREADY_EXISTS", "choose another path"),
            ErrorKind::IsADirectory => ("IS_A_DIRECTORY", "use list_dir for directories"),
            ErrorKind::NotADirectory => ("NOT_A_DIRECTORY", "use read_file for files"),
            _ => ("IO_ERROR", "the host refused or failed the operation"),
        };
        ToolError::new(code, format!("{path}: {error}; {hint}"))
    }

    pub fn retryable(mut self) -> ToolError {
        self.retryable = true;
        self
    }

    pub(crate) fn into_wit(self) -> wit::ToolError {
        wit::ToolError {
            code: self.code,
            message: self.message,
            retryable: self.retryable,
        }
    }
}
