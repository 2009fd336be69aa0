//! The hook chain (H1, H2): pre-tool hooks in preset order, each matched by a regex on the
//! tool name and run in the sandbox under its own grant, limits and timeout; deny wins over
//! ask over allow; a failing hook follows its `on_error`, an interrupted one denies. Approval
//! by risk follows (`admit.rs`). After the call, post-tool hooks in order may replace the
//! result and add context; one that could not inspect it withholds it by default.

use regex::Regex;
use serde_json::Value;

use super::approval::Approval;
use super::question::Pattern;
use crate::pipeline::{AfterCall, GateCall};
use crate::plugin_store::{PluginStore, StoreError};
use crate::preset::{HookPhase, OnError, ResolvedHook, ResolvedPreset};
use paddock_sandbox::{
    HookPlugin, LoadError, Permission, PostToolUse, PreDecision, PreToolUse, Sandbox,
};
use paddock_types::contract::{ErrorCode, ToolError, ToolResult};
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

impl PreVerdict {
    /// Takes one pre-tool hook's answer: its context and rewritten arguments; what it says
    /// when it asks goes into `asks`; when it denies, the reason, which stops the chain.
    fn take(
        &mut self,
        hook: &LoadedHook,
        decision: PreDecision,
        rewritten: Option<Value>,
        asks: &mut Vec<String>,
    ) -> Result<(), String> {
        self.context.extend(decision.additional_context);
        if let Some(args) = rewritten {
            self.args = args;
        }
        match decision.permission {
            Permission::Allow => Ok(()),
            Permission::Ask(reason) => {
                if self.asked_by.is_none() {
                    self.asked_by = Some(format!("hooks[{}]", hook.spec.index));
                }
                asks.push(format!(
                    "hook `{}` (hooks[{}]) asks, saying: {reason}",
                    hook.spec.name, hook.spec.index
                ));
                Ok(())
            }
            Permission::Deny(reason) => Err(format!("hook `{}`: {reason}", hook.spec.name)),
        }
    }
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
    /// rewrites feed the next hook. Deny wins over ask over allow.
    pub async fn pre_tool_use(&self, call: GateCall<'_>) -> PreVerdict {
        let mut verdict = PreVerdict {
            permission: Permission::Allow,
            args: call.args.clone(),
            context: Vec::new(),
            asked_by: None,
        };
        verdict.permission = match self.run_pre_hooks(call, &mut verdict).await {
            Err(deny) => Permission::Deny(deny),
            Ok(asks) if asks.is_empty() => Permission::Allow,
            Ok(asks) => Permission::Ask(asks.join("; ")),
        };
        verdict
    }

    /// Each matching pre-tool hook in order, its rewrites and context taken into `verdict`:
    /// what the hooks that ask say, or the reason of the first that denies (which stops the
    /// chain).
    async fn run_pre_hooks(
        &self,
        call: GateCall<'_>,
        verdict: &mut PreVerdict,
    ) -> Result<Vec<String>, String> {
        let mut asks = Vec::new();
        for hook in self
            .pre
            .iter()
            .filter(|h| h.matcher.is_match(&call.tool.name))
        {
            // A hook that could not load never ran: that is never an allow (S8, H2).
            if let Some(error) = unloadable(&hook.plugin, call).await {
                return Err(format!(
                    "pre-tool hook `{}` (hooks[{}]) could not be loaded, so the call does not \
                     run: {error}",
                    hook.spec.name, hook.spec.index
                ));
            }
            match self.ask_pre_hook(hook, call, &verdict.args).await {
                Ok((decision, rewritten)) => verdict.take(hook, decision, rewritten, &mut asks)?,
                Err(error) => pre_hook_failed(hook, call, &error)?,
            }
        }
        Ok(asks)
    }

    /// Runs one pre-tool hook on the call with its arguments as they are now: its decision
    /// and the arguments it rewrote them to, if it did.
    async fn ask_pre_hook(
        &self,
        hook: &LoadedHook,
        call: GateCall<'_>,
        args: &Value,
    ) -> Result<(PreDecision, Option<Value>), ToolError> {
        let event = PreToolUse {
            tool_name: call.tool.name.clone(),
            tool_input: args.to_string(),
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
        let decision = self
            .sandbox
            .pre_tool_use(&hook.plugin, &event, &hook.spec.grant, call.cancel)
            .await?;
        let rewritten = match &decision.updated_input {
            Some(text) => Some(parse_rewrite(text)?),
            None => None,
        };
        Ok((decision, rewritten))
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
                // its on_error says, and stop (the call was interrupted). A call interrupted
                // while it ran is reported as that, not blamed on the hook after it.
                Err(error) if interrupted(call, &error) => {
                    let message = match &result {
                        Err(e) if e.code == ErrorCode::Cancelled => format!(
                            "interrupted while running: it may have partly happened; what it \
                             returned is withheld, since post-tool hook `{}` (hooks[{}]) could \
                             not inspect it",
                            hook.spec.name, hook.spec.index
                        ),
                        _ => format!(
                            "interrupted while post-tool hook `{}` (hooks[{}]) inspected the \
                             result; the result is withheld",
                            hook.spec.name, hook.spec.index
                        ),
                    };
                    result = Err(ToolError::new(ErrorCode::Cancelled, message));
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

/// What a pre-tool hook's failure means for the call: nothing when its `on_error` allows,
/// else the reason the call is denied.
fn pre_hook_failed(hook: &LoadedHook, call: GateCall<'_>, error: &ToolError) -> Result<(), String> {
    // An interrupted hook did not decide: that is never an allow, whatever its on_error
    // says (H2).
    if interrupted(call, error) {
        return Err(format!(
            "pre-tool hook `{}` (hooks[{}]) was interrupted before it decided; the call does \
             not run",
            hook.spec.name, hook.spec.index
        ));
    }
    let failed = format!(
        "pre-tool hook `{}` (hooks[{}]) failed: {}",
        hook.spec.name, hook.spec.index, error.message
    );
    if hook.spec.on_error == OnError::Allow {
        tracing::warn!("{}; allowing, as its on_error says", sanitize(&failed));
        return Ok(());
    }
    Err(format!(
        "{failed}; a failing pre-hook denies (hooks[{}].on_error = \"deny\")",
        hook.spec.index
    ))
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
