//! The served side of `paddock mcp serve`: `tools/list` from the preset's tools, `tools/call`
//! through the scheduler (repair, validation, hooks, approval, sandbox, output budget) with
//! the session log written as a run writes it, MCP cancellation mapped to the call's token,
//! and progress notifications while a call runs.
//!
//! Each call is logged as the client's message with one call, then `tool/call`, `tool/start`,
//! `tool/result`, so the log reads (and checks, L8) like any session's. Calls therefore run
//! one at a time: a second call waits for the first, and a client that cancels a waiting call
//! gets it back unrun.
//!
//! The client is untrusted: it names a tool and sends arguments, exactly what a model does,
//! and reaches nothing the preset does not expose.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::agent::summarize;
use crate::calls::check_call;
use crate::exec::{CallContext, CallRecord, RawCall, Scheduler};
use crate::log::{Body, SessionLock, SessionLog};
use crate::mcp::ElicitApprover;
use crate::model::{Finish, Outcome, ToolCall};
use crate::session::Loaded;

/// What a served session holds while it runs.
pub(super) struct ServedSession {
    pub loaded: Loaded,
    pub log: SessionLog,
    pub approver: ElicitApprover,
    pub _lock: SessionLock,
}

/// How often a running call tells the client it is still running.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The handler for one client connection. Clones share the session: its log, its one-call
/// lock and its call ids, so several HTTP clients write one valid log.
#[derive(Clone)]
pub(super) struct Served {
    session: Arc<ServedSession>,
    tools: Arc<Vec<Tool>>,
    one_call: Arc<tokio::sync::Mutex<()>>,
    next: Arc<AtomicU64>,
}

impl Served {
    pub(super) fn new(session: Arc<ServedSession>) -> Served {
        let tools = session
            .loaded
            .registry
            .tools()
            .map(|t| {
                let schema = match &t.spec.parameters {
                    serde_json::Value::Object(map) => map.clone(),
                    _ => serde_json::Map::new(),
                };
                Tool::new(
                    t.spec.name.clone(),
                    t.spec.description.clone(),
                    Arc::new(schema),
                )
                .with_annotations(crate::mcp::annotations_for(&t.spec.meta))
            })
            .collect();
        Served {
            session,
            tools: Arc::new(tools),
            one_call: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
        }
    }
}

/// Serves one client on standard input and output until it closes the connection.
pub(super) async fn serve_stdio(served: Served) -> Result<(), String> {
    let running = served
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| format!("the MCP client did not complete the handshake: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP connection ended abnormally: {e}"))
}

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.server_info = Implementation::new("paddock", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "paddock's sandboxed tools from preset `{}`; paths are inside its mounts (e.g. /workspace).",
            self.session.loaded.preset
        ));
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        crate::mcp::protocol_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = format!("mcp-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let call = RawCall {
            id,
            name: request.name.to_string(),
            arguments: serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string(),
        };
        let record = {
            let _one = tokio::select! {
                biased;
                _ = context.ct.cancelled() => None,
                one = self.one_call.lock() => Some(one),
            };
            // Questions go to the client whose call this is (one call at a time).
            self.session.approver.connect(context.peer.clone());
            let progress = context.meta.get_progress_token().map(|token| {
                tokio::spawn(progress(context.peer.clone(), token, call.name.clone()))
            });
            let record = self.run_logged(&call, context.ct.clone()).await;
            if let Some(task) = progress {
                task.abort();
            }
            record
        };
        let summary = summarize(&record.map_err(internal)?);
        let content = vec![ContentBlock::text(summary.content)];
        Ok(if summary.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

fn internal(e: std::io::Error) -> ErrorData {
    ErrorData::internal_error(format!("paddock cannot write the session log: {e}"), None)
}

/// Every `PROGRESS_EVERY`, how long the call has run (the total is unknown).
async fn progress(peer: Peer<RoleServer>, token: ProgressToken, tool: String) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    tick.tick().await;
    loop {
        tick.tick().await;
        let secs = started.elapsed().as_secs_f64();
        let mut note = ProgressNotificationParam::new(token.clone(), secs);
        note.message = Some(format!("{tool} running for {secs:.1} s"));
        if peer.notify_progress(note).await.is_err() {
            return;
        }
    }
}

impl Served {
    /// Logs the client's call as a message with one call, runs it through the scheduler, and
    /// logs its start and result as a run does (L1, L8).
    async fn run_logged(
        &self,
        call: &RawCall,
        cancel: CancellationToken,
    ) -> std::io::Result<CallRecord> {
        let loaded = &self.session.loaded;
        let log = &self.session.log;
        let checked = check_call(
            &loaded.registry,
            &loaded.aliases,
            &call.name,
            &call.arguments,
        );
        let idempotent = checked
            .tool
            .as_deref()
            .and_then(|t| loaded.registry.get(t))
            .is_none_or(|entry| entry.spec.meta.is_idempotent());
        log.append(Body::AssistantMessage {
            attempt: call.id.clone(),
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }],
            finish: Finish::ToolCalls,
            outcome: Outcome::ToolCalls,
            usage: None,
            cost_usd: None,
        })?;
        log.append(Body::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            tool: checked.tool,
            idempotent,
            touches: None,
        })?;
        let failed = std::sync::Mutex::new(None);
        let on_start = |id: &str| {
            let start = Body::ToolStart { id: id.to_string() };
            let written = if idempotent {
                log.append(start)
            } else {
                log.append_synced(start)
            };
            written.map_err(|e| {
                format!(
                    "the session log cannot record that this call started ({e}); it was not run"
                )
            })
        };
        let on_end = |record: &CallRecord| {
            let summary = summarize(record);
            let written = log.append(Body::ToolResult {
                id: record.id.clone(),
                content: summary.content,
                is_error: summary.is_error,
                code: summary.code,
                args: record.args.clone(),
                repairs: record
                    .repairs
                    .iter()
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect(),
                approval: record.approval.clone(),
            });
            let written = written.and_then(|()| if idempotent { Ok(()) } else { log.sync() });
            if let Err(e) = written {
                *failed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
            }
        };
        let scheduler = Scheduler {
            cx: CallContext {
                cancel,
                ..loaded.context()
            },
            max_parallel: 1,
            events: None,
            on_start: Some(&on_start),
            on_end: Some(&on_end),
        };
        let mut records = scheduler.run(std::slice::from_ref(call)).await;
        if let Some(e) = failed
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            return Err(e);
        }
        records
            .pop()
            .ok_or_else(|| std::io::Error::other("the scheduler returned no record"))
    }
}
