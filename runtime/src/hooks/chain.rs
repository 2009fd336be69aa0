//! The hook chain (H1, H2): pre-tool hooks in preset order, each matched by a regex on the
//! tool name and run in the sandbox under its own grant, limits and timeout; deny wins over
//! ask over allow; a failing hook follows its `on_error`, an interrupted one denies. Approval
//! by risk follows (`admit.rs`). After the call, post-tool hooks in order may replace the
//! result and add context; one that could not inspect it withholds it by default.

use regex::Regex;
use serde_json::Value;

use super::approval::Approval;
use super::question::Pattern;
use paddock_types::contract::{ErrorCode, ToolError, ToolResult};
use crate::pipeline::{AfterCall, GateCall};
use crate::plugin_store::{PluginStore, StoreError};
use crate::preset::{HookPhase, OnError, ResolvedHook, ResolvedPreset};
use paddock_sandbox::{HookPlugin, LoadError, Permission, PostToolUse, PreToolUse, Sandbox};
use paddock_types::text::sanitize;

/// Why a preset's hooks could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hooks[{index}] (`{hook}`): {source}")]
    Store {
        index: usize,
        hook: String,
        source: StoreError,
    },
    #[error("hooks[{index}] (`{hook}`): {source}")]
    Load {
        index: usize,
        hook: String,
        source: LoadError,
    },
    #[error(
        "hooks[{index}] (`{hook}`): its SHA-256 is {actual}, but the preset pins {expected} \
         (hooks[{index}].sha256); refusing to load it"
    )]
    PinMismatch {
        index: usize,
        hook: String,
        expected: String,
        actual: String,
    },
    #[error("hooks[{index}] (`{hook}`).match: {detail}")]
    Matcher {
        index: usize,
        hook: String,
        detail: String,
    },
}

/// One hook, loaded and ready.
pub struct LoadedHook {
    pub spec: ResolvedHook,
    pub matcher: Regex,
    pub plugin: HookPlugin,
}

/// What the pre-tool chain decided, before approval.
#[derive(Debug, Clone, PartialEq)]
pub struct PreVerdict {
    /// Allow, ask (with every hook's reason) or deny (with the first denying hook's reason).
    pub permission: Permission,
    /// The arguments after every rewrite, not yet validated.
    pub args: Value,
    pub context: Vec<String>,
    /// `hooks[i]` of the hook that asked, for the no-terminal message.
    pub asked_by: Option<String>,
}

/// The preset's hooks and approval policy: the `CallGate` of a real session.
pub struct HookChain {
    sandbox: Sandbox,
    pre: Vec<LoadedHook>,
    post: Vec<LoadedHook>,
    pub(super) approval: Approval,
    /// What the user answered `a` (always) to, for the rest of this session (T2).
    pub(super) always: std::sync::Mutex<Vec<Pattern>>,
    /// Held while a question is open (`admit.rs`).
    pub(super) asking: tokio::sync::Mutex<()>,
    /// How the user approved each admitted call, by call id, until the pipeline takes it.
    pub(super) approved: std::sync::Mutex<std::collections::HashMap<String, crate::log::Asked>>,
}

impl HookChain {
    /// Every loaded hook as (`hook:` + name, SHA-256 of its bytes), pre-hooks first; a session
    /// records these with its tool plugins so resume runs the same code.
    pub fn hashes(&self) -> Vec<(String, String)> {
        self.pre
            .iter()
            .chain(&self.post)
            .map(|h| (format!("hook:{}", h.plugin.name), h.plugin.sha256.clone()))
            .collect()
    }

    /// Starts compiling, in the background, every hook registered from its build-time
    /// description (a session does this at start; `sandbox::described`).
    pub fn start_compiling(&self) {
        for hook in self.pre.iter().chain(&self.post) {
            hook.plugin.start_compiling();
        }
    }

    /// Loads every hook of `preset`. Hooks run under each call's own abort signal
    /// (`GateCall::cancel`): an interrupt stops the hooks of the calls it interrupts, never
    /// those of later turns.
    pub async fn load(
        sandbox: &Sandbox,
        store: &PluginStore,
        preset: &ResolvedPreset,
        approval: Approval,
    ) -> Result<HookChain, HookError> {
        let mut chain = HookChain {
            sandbox: sandbox.clone(),
            pre: Vec::new(),
            post: Vec::new(),
            approval,
            always: std::sync::Mutex::new(Vec::new()),
            asking: tokio::sync::Mutex::new(()),
            approved: std::sync::Mutex::new(std::collections::HashMap::new()),
        };
        for spec in &preset.hooks {
            let (index, hook) = (spec.index, spec.name.clone());
            let bytes = store
                .bytes(&spec.source)
                .map_err(|source| HookError::Store {
                    index,
                    hook: hook.clone(),
                    source,
                })?;
            let plugin = sandbox
                .load_hook(&hook, &bytes, &spec.grant.capabilities)
                .await
                .map_err(|source| HookError::Load {
                    index,
                    hook: hook.clone(),
                    source,
                })?;
            if let Some(expected) = &spec.sha256
                && *expected != plugin.sha256
            {
                return Err(HookError::PinMismatch {
                    index,
                    hook,
                    expected: expected.clone(),
                    actual: plugin.sha256.clone(),
                });
            }
            let matcher = Regex::new(&spec.matcher).map_err(|e| HookError::Matcher {
                index,
                hook: hook.clone(),
                detail: e.to_string(),
            })?;
            let loaded = LoadedHook {
                spec: spec.clone(),
                matcher,
                plugin,
            };
            match spec.on {
                HookPhase::Pre => chain.pre.push(loaded),
                HookPhase::Post => chain.post.push(loaded),
            }
        }
        Ok(chain)
    }

    /// Runs the matching pre-tool hooks in order. Deny stops the chain; ask is remembered;
    /// rewrites feed the next hook.
    pub async fn pre_tool_use(&self, call: GateCall<'_>) -> PreVerdict {
        let mut verdict = PreVerdict {
            permission: Permission::Allow,
            args: call.args.clone(),
            context: Vec::new(),
            asked_by: None,
        };
        let mut asks: Vec<String> = Vec::new();
        for hook in self
            .pre
            .iter()
            .filter(|h| h.matcher.is_match(&call.tool.name))
        {
            let event = PreToolUse {
                tool_name: call.tool.name.clone(),
                tool_input: verdict.args.to_string(),
                // A tool whose plugin can write nothing (every mount read-only, no exec
                // `write`) is read-only in effect: the host enforces it below the tool.
                read_only: call.tool.meta.is_read_only()
                    || call.plugin.is_some_and(|(_, grant)| grant.writes_nothing()),
                path_params: call.tool.meta.path_params.clone(),
                call_id: call.call_id.to_string(),
                session_id: call.session_id.to_string(),
                preset: call.preset.to_string(),
                config: hook.spec.config.clone(),
            };
            // A hook that could not load never ran: that is never an allow (S8, H2).
            if let Some(error) = unloadable(&hook.plugin, call).await {
                verdict.permission = Permission::Deny(format!(
                    "pre-tool hook `{}` (hooks[{}]) could not be loaded, so the call does not \
                     run: {error}",
                    hook.spec.name, hook.spec.index
                ));
                return verdict;
            }
            let answer = self
                .sandbox
                .pre_tool_use(&hook.plugin, &event, &hook.spec.grant, call.cancel)
                .await
                .and_then(|decision| {
                    let args = match &decision.updated_input {
                        Some(text) => Some(parse_rewrite(text)?),
                        None => None,
                    };
                    Ok((decision, args))
                });
            let (decision, rewritten) = match answer {
                Ok(answer) => answer,
                Err(error) => {
                    let failed = format!(
                        "pre-tool hook `{}` (hooks[{}]) failed: {}",
                        hook.spec.name, hook.spec.index, error.message
                    );
                    // An interrupted hook did not decide: that is never an allow, whatever
                    // its on_error says (H2).
                    if interrupted(call, &error) {
                        verdict.permission = Permission::Deny(format!(
                            "pre-tool hook `{}` (hooks[{}]) was interrupted before it decided; \
                             the call does not run",
                            hook.spec.name, hook.spec.index
                        ));
                        return verdict;
                    }
                    if hook.spec.on_error == OnError::Allow {
                        tracing::warn!("{}; allowing, as its on_error says", sanitize(&failed));
                        continue;
                    }
                    verdict.permission = Permission::Deny(format!(
                        "{failed}; a failing pre-hook denies (hooks[{}].on_error = \"deny\")",
                        hook.spec.index
                    ));
                    return verdict;
                }
            };
            verdict.context.extend(decision.additional_context);
            if let Some(args) = rewritten {
                verdict.args = args;
            }
            match decision.permission {
                Permission::Allow => {}
                Permission::Ask(reason) => {
                    if verdict.asked_by.is_none() {
                        verdict.asked_by = Some(format!("hooks[{}]", hook.spec.index));
                    }
                    asks.push(format!(
                        "hook `{}` (hooks[{}]) asks, saying: {reason}",
                        hook.spec.name, hook.spec.index
                    ));
                }
                Permission::Deny(reason) => {
                    verdict.permission =
                        Permission::Deny(format!("hook `{}`: {reason}", hook.spec.name));
                    return verdict;
                }
            }
        }
        if !asks.is_empty() {
            verdict.permission = Permission::Ask(asks.join("; "));
        }
        verdict
    }

    /// Runs the matching post-tool hooks in order over `result`.
    pub async fn post_tool_use(&self, call: GateCall<'_>, mut result: ToolResult) -> AfterCall {
        let mut context = Vec::new();
        for hook in self
            .post
            .iter()
            .filter(|h| h.matcher.is_match(&call.tool.name))
        {
            let event = PostToolUse {
                tool_name: call.tool.name.clone(),
                tool_input: call.args.to_string(),
                call_id: call.call_id.to_string(),
                session_id: call.session_id.to_string(),
                preset: call.preset.to_string(),
                config: hook.spec.config.clone(),
                tool_response: result.clone(),
            };
            if let Some(error) = unloadable(&hook.plugin, call).await {
                result = Err(ToolError::new(
                    ErrorCode::Denied,
                    format!(
                        "post-tool hook `{}` (hooks[{}]) could not be loaded, so the result is \
                         withheld: {error}",
                        hook.spec.name, hook.spec.index
                    ),
                ));
                continue;
            }
            match self
                .sandbox
                .post_tool_use(&hook.plugin, &event, &hook.spec.grant, call.cancel)
                .await
            {
                Ok(decision) => {
                    if let Some(replaced) = decision.replace {
                        result = keep_runtime_code(&result, replaced);
                    }
                    context.extend(decision.additional_context);
                }
                // An interrupted post-hook did not inspect the result: withhold it, whatever
                // its on_error says, and stop (the call was interrupted).
                Err(error) if interrupted(call, &error) => {
                    result = Err(ToolError::new(
                        ErrorCode::Cancelled,
                        format!(
                            "interrupted while post-tool hook `{}` (hooks[{}]) inspected the \
                             result; the result is withheld",
                            hook.spec.name, hook.spec.index
                        ),
                    ));
                    break;
                }
                Err(error) if hook.spec.on_error == OnError::Deny => {
                    result = Err(ToolError::new(
                        ErrorCode::Denied,
                        format!(
                            "post-tool hook `{}` (hooks[{}]) failed ({}), and its on_error is \
                             \"deny\", so the result is withheld",
                            hook.spec.name, hook.spec.index, error.message
                        ),
                    ));
                }
                Err(error) => tracing::warn!(
                    "post-tool hook `{}` failed ({}); keeping the result",
                    hook.spec.name,
                    sanitize(&error.message)
                ),
            }
        }
        AfterCall { result, context }
    }
}

/// A hook that rewrites an error's message (redacting it, say) and keeps its code keeps the
/// runtime's meaning of that code; any other code stays the hook's own (`sandbox::hook`).
fn keep_runtime_code(before: &ToolResult, replaced: ToolResult) -> ToolResult {
    match (before, replaced) {
        (Err(old), Err(mut new)) if new.code.as_str() == old.code.as_str() => {
            new.code = old.code.clone();
            Err(new)
        }
        (_, replaced) => replaced,
    }
}

/// Why `hook` cannot run, if its deferred compile failed (a built-in registered from its
/// description, `sandbox::described`). An interrupt while it compiles is left to the sandbox,
/// which reports the call as cancelled.
async fn unloadable(hook: &paddock_sandbox::HookPlugin, call: GateCall<'_>) -> Option<String> {
    tokio::select! {
        ready = hook.ready() => ready.err().map(|e| e.to_string()),
        () = call.cancel.cancelled() => None,
    }
}

/// The hook failed because this call was interrupted (not because of the hook itself).
fn interrupted(call: GateCall<'_>, error: &ToolError) -> bool {
    call.cancel.is_cancelled() || error.code == ErrorCode::Cancelled
}

/// A rewrite must at least be a JSON object; the schema check happens in the pipeline.
fn parse_rewrite(text: &str) -> Result<Value, ToolError> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        _ => Err(ToolError::new(
            ErrorCode::InvalidArgs,
            format!(
                "its updated input is not a JSON object: {:?}",
                text.chars().take(120).collect::<String>()
            ),
        )),
    }
}
