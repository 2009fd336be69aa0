//! Hooks in the sandbox (H2): a hook is a component of the `hook` world, loaded like a plugin
//! (header check, compile cache, import check against its own grants) and called like a tool:
//! a fresh store per call with its own fuel, deadline, memory cap and cancellation.
//!
//! What it does not do: decide what a hook's answer means for the call (that is
//! `crate::hooks`). It only turns one hook invocation into a decision or a `ToolError`.

use tokio_util::sync::CancellationToken;
use wasmtime::Store;

use crate::grant::{Capability, Grant};
use crate::wasm::bindings::configured_hook::ConfiguredHookPre;
use crate::wasm::bindings::hook::exports::paddock::plugin::hooks::Guest as Hooks;
use crate::wasm::bindings::hook::{HookPre, hook_types as wit};
use crate::wasm::bindings::types;
use crate::wasm::call::result_from_wit;
use crate::wasm::deferred::Deferred;
use crate::wasm::engine::Sandbox;
use crate::wasm::error::LoadError;
use crate::wasm::outcome::run_to_end;
use crate::wasm::store::{CallState, code_for_call};
use paddock_types::contract::{ErrorCode, ToolError, ToolResult};

/// The interface a hook that declares its `config` exports (world `configured-hook`).
const HOOK_CONFIG_EXPORT: &str = "paddock:plugin/hook-config@0.1.0";

/// A loaded hook: compiled and linked. Cheap to clone.
#[derive(Clone)]
pub struct HookPlugin {
    pub name: String,
    pub sha256: String,
    /// Every interface the component imports, as the component names them.
    pub imports: Vec<String>,
    pub(crate) pre: Deferred<HookPre<CallState>>,
}

impl HookPlugin {
    /// Starts compiling a hook registered from its description, in the background.
    pub fn start_compiling(&self) {
        self.pre.start();
    }

    /// Waits until the hook's code is compiled, linked and checked against its description;
    /// the load error if it could not be. A hook that cannot load must fail closed whatever
    /// its `on_error` says: it never ran at all.
    pub async fn ready(&self) -> Result<(), std::sync::Arc<LoadError>> {
        self.pre.get().await.map(drop)
    }
}

impl std::fmt::Debug for HookPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookPlugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// The event a pre-tool hook sees.
#[derive(Debug, Clone, PartialEq)]
pub struct PreToolUse {
    pub tool_name: String,
    pub tool_input: String,
    pub read_only: bool,
    pub path_params: Vec<String>,
    pub call_id: String,
    pub session_id: String,
    pub preset: String,
    pub config: String,
}

/// A hook's permission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    Allow,
    Deny(String),
    Ask(String),
}

/// A pre-tool hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PreDecision {
    pub permission: Permission,
    pub updated_input: Option<String>,
    pub additional_context: Option<String>,
}

/// The event a post-tool hook sees.
#[derive(Debug, Clone, PartialEq)]
pub struct PostToolUse {
    pub tool_name: String,
    pub tool_input: String,
    pub call_id: String,
    pub session_id: String,
    pub preset: String,
    pub config: String,
    pub tool_response: ToolResult,
}

/// A post-tool hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PostDecision {
    /// `Some` replaces the result the model gets.
    pub replace: Option<ToolResult>,
    pub additional_context: Option<String>,
}

impl Sandbox {
    /// Loads `wasm` as hook `name` from its code, compiled and linked before this returns.
    pub async fn load_hook_now(
        &self,
        name: &str,
        wasm: &[u8],
        granted: &[Capability],
    ) -> Result<HookPlugin, LoadError> {
        let checked = self.compile_checked(name, wasm, granted)?;
        let (component, sha256, imports) = (checked.component, checked.sha256, checked.imports);
        let not_a_hook = |e: wasmtime::Error| LoadError::NotAHook {
            hook: name.to_string(),
            detail: format!("{e:#}"),
        };
        let pre = self
            .linker()
            .instantiate_pre(&component)
            .map_err(not_a_hook)?;
        let pre = HookPre::new(pre).map_err(not_a_hook)?;
        Ok(HookPlugin {
            name: name.to_string(),
            sha256,
            imports,
            pre: Deferred::ready(pre),
        })
    }

    /// Asks hook `name`'s code what its `config` accepts (see `hook_config_schema`).
    pub(crate) async fn ask_config_schema(
        &self,
        name: &str,
        wasm: &[u8],
        grant: &Grant,
    ) -> Result<Option<String>, String> {
        let checked = self
            .compile_checked(name, wasm, &grant.capabilities)
            .map_err(|e| e.to_string())?;
        let declares = checked
            .component
            .component_type()
            .exports(self.engine())
            .any(|(export, _)| export == HOOK_CONFIG_EXPORT);
        if !declares {
            return Ok(None);
        }
        let pre = self
            .linker()
            .instantiate_pre(&checked.component)
            .and_then(ConfiguredHookPre::new)
            .map_err(|e| {
                format!("its `hook-config` export is not the one wit/hook.wit defines: {e:#}")
            })?;
        let cancel = CancellationToken::new();
        let prepared = self
            .prepare_store(name, grant, false, &cancel)
            .map_err(|e| e.message)?;
        let schema = async |store: &mut Store<CallState>| {
            let instance = pre.instantiate_async(&mut *store).await?;
            instance
                .paddock_plugin_hook_config()
                .call_config_schema(store)
                .await
        };
        run_to_end(prepared, schema, Ok)
            .await
            .0
            .map_err(|e| format!("its `config-schema` failed: {}", e.message))
    }

    /// Runs `hook`'s pre-tool-use under `grant`. A trap, timeout or cancellation is an error.
    pub async fn pre_tool_use(
        &self,
        hook: &HookPlugin,
        event: &PreToolUse,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> Result<PreDecision, ToolError> {
        let wit_event = wit::PreToolUseEvent {
            tool_name: event.tool_name.clone(),
            tool_input: event.tool_input.clone(),
            read_only: event.read_only,
            path_params: event.path_params.clone(),
            call_id: event.call_id.clone(),
            session_id: event.session_id.clone(),
            preset: event.preset.clone(),
            config: event.config.clone(),
        };
        let call = async |hooks: &Hooks, store: &mut Store<CallState>| {
            hooks.call_pre_tool_use(store, &wit_event).await
        };
        self.run_hook(hook, grant, cancel, call, |d| PreDecision {
            permission: match d.permission_decision {
                wit::PermissionDecision::Allow => Permission::Allow,
                wit::PermissionDecision::Deny(reason) => Permission::Deny(reason),
                wit::PermissionDecision::Ask(reason) => Permission::Ask(reason),
            },
            updated_input: d.updated_input,
            additional_context: d.additional_context,
        })
        .await
    }

    /// Runs `hook`'s post-tool-use under `grant`. A trap, timeout or cancellation is an error.
    pub async fn post_tool_use(
        &self,
        hook: &HookPlugin,
        event: &PostToolUse,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> Result<PostDecision, ToolError> {
        let wit_event = wit::PostToolUseEvent {
            tool_name: event.tool_name.clone(),
            tool_input: event.tool_input.clone(),
            call_id: event.call_id.clone(),
            session_id: event.session_id.clone(),
            preset: event.preset.clone(),
            config: event.config.clone(),
            tool_response: to_wit(&event.tool_response),
        };
        let call = async |hooks: &Hooks, store: &mut Store<CallState>| {
            hooks.call_post_tool_use(store, &wit_event).await
        };
        self.run_hook(hook, grant, cancel, call, |d| PostDecision {
            replace: d.replace.map(from_wit),
            additional_context: d.additional_context,
        })
        .await
    }

    /// Runs one of `hook`'s exports under `grant` in a fresh store (its fuel, deadline, memory
    /// cap, output caps and `cancel`): `call` on a new instance, its answer read by `answer`.
    /// Both events go through here, so a pre- and a post-tool hook are held to the same limits.
    async fn run_hook<T, R>(
        &self,
        hook: &HookPlugin,
        grant: &Grant,
        cancel: &CancellationToken,
        call: impl AsyncFnOnce(&Hooks, &mut Store<CallState>) -> wasmtime::Result<T>,
        answer: impl FnOnce(T) -> R,
    ) -> Result<R, ToolError> {
        let pre = code_for_call(&hook.name, &hook.pre, cancel).await?;
        let prepared = self.prepare_store(&hook.name, grant, false, cancel)?;
        let run = async |store: &mut Store<CallState>| {
            let instance = pre.instantiate_async(&mut *store).await?;
            call(instance.paddock_plugin_hooks(), store).await
        };
        run_to_end(prepared, run, |value| Ok(answer(value))).await.0
    }
}

fn to_wit(result: &ToolResult) -> Result<types::ToolOutput, types::ToolError> {
    match result {
        Ok(out) => Ok(types::ToolOutput {
            content: out.content.clone(),
            truncated: out.truncated,
            continuation: out.continuation.clone(),
        }),
        Err(err) => Err(types::ToolError {
            code: err.code.to_string(),
            message: err.message.clone(),
            retryable: err.retryable,
        }),
    }
}

/// A replacement result from a hook. Its error codes stay the hook's own, except DENIED, so a
/// hook cannot pose as a runtime condition such as CANCELLED.
fn from_wit(result: Result<types::ToolOutput, types::ToolError>) -> ToolResult {
    result_from_wit(result, |code| match code {
        "DENIED" => ErrorCode::Denied,
        other => ErrorCode::Plugin(other.chars().take(64).collect()),
    })
}
