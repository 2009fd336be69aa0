//! The served side of `paddock mcp serve`: `tools/list` from the preset's tools, `tools/call`
//! through `Session::call` (repair, validation, hooks, approval, sandbox, output budget, and
//! the session log written as a model's calls write it), MCP cancellation mapped to the call's
//! token, progress notifications while a call runs, and a tool's image as an MCP `image` item.
//!
//! Calls run one at a time, so each client's questions go to that client: a second call waits
//! for the first, and a client that cancels a waiting call gets it back unrun and unlogged
//! (it never reached the session). A 2026-07-28 client (stateless, no requests from the
//! server) is asked in rounds instead (`mcp_rounds.rs`); older revisions by elicitation.
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

use super::mcp_rounds::{Rounds, Running, Step};
use crate::elicit::{Asker, ElicitApprover, declares_form};
use paddock::pipeline::{RawCall, summarize};
use paddock::session::Session;

/// What a served session holds while it runs: the session, and the approver whose questions
/// go to the client whose call is running.
pub(super) struct ServedSession {
    pub session: Session,
    pub approver: ElicitApprover,
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
    rounds: Rounds,
}

impl Served {
    pub(super) fn new(session: Arc<ServedSession>) -> Served {
        let tools = session
            .session
            .tool_specs()
            .into_iter()
            .map(|spec| {
                let schema = match &spec.parameters {
                    serde_json::Value::Object(map) => map.clone(),
                    _ => serde_json::Map::new(),
                };
                Tool::new(
                    spec.name.clone(),
                    spec.description.clone(),
                    Arc::new(schema),
                )
                .with_annotations(paddock::mcp::annotations_for(&spec.meta))
            })
            .collect();
        Served {
            session,
            tools: Arc::new(tools),
            one_call: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
            rounds: Rounds::default(),
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
            self.session.session.preset_name()
        ));
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        paddock::mcp::protocol_versions()
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
        // 2026-07-28 and later: no requests of paddock's own, so questions go in rounds.
        if context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize())
        {
            return self.call_in_rounds(request, context).await;
        }
        let request_name = request.name.to_string();
        let call = self.raw_call(request);
        let record = {
            let one = tokio::select! {
                biased;
                _ = context.ct.cancelled() => None,
                one = self.one_call.lock() => Some(one),
            };
            // Cancelled while another client's call ran: it never reached the session.
            let Some(_one) = one else {
                return Ok(not_run());
            };
            // Questions go to the client whose call this is (one call at a time).
            self.session
                .approver
                .connect(Asker::Request(context.peer.clone()));
            let progress = context.meta.get_progress_token().map(|token| {
                tokio::spawn(progress(context.peer.clone(), token, request_name.clone()))
            });
            let record = self.session.session.call(call, context.ct.clone()).await;
            if let Some(task) = progress {
                task.abort();
            }
            record
        };
        answer(record)
    }
}

impl Served {
    fn raw_call(&self, request: CallToolRequestParams) -> RawCall {
        RawCall {
            id: format!("mcp-{}", self.next.fetch_add(1, Ordering::Relaxed)),
            name: request.name.to_string(),
            arguments: serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string(),
        }
    }

    /// A call from a 2026-07-28 client: started (or, with a `requestState`, resumed with the
    /// client's answer) and driven until it ends or asks (`mcp_rounds.rs`).
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let running = match request.request_state.as_deref() {
            Some(state) => match self.rounds.resume(state, request.input_responses.as_ref()) {
                Ok(running) => running,
                Err(why) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "error[NOT_EXECUTED]: {why}"
                    ))])
                    .into());
                }
            },
            None => {
                let one = tokio::select! {
                    biased;
                    _ = context.ct.cancelled() => None,
                    one = self.one_call.clone().lock_owned() => Some(one),
                };
                let Some(one_call) = one else {
                    return Ok(not_run());
                };
                let (ask, questions) = tokio::sync::mpsc::channel(1);
                self.session.approver.connect(Asker::Rounds {
                    questions: ask,
                    form: declares_form(context.client_capabilities().as_ref()),
                });
                let cancel = tokio_util::sync::CancellationToken::new();
                let call = self.raw_call(request);
                let session = self.session.clone();
                let token = cancel.clone();
                let task = tokio::spawn(async move { session.session.call(call, token).await });
                Running {
                    task,
                    questions,
                    cancel,
                    _one_call: one_call,
                }
            }
        };
        match self.rounds.drive(running, &context.ct).await {
            Step::Asked(input) => Ok(input.into()),
            Step::Done(record) => answer(record),
        }
    }
}

/// The call as the client sees it: the summary as text, an error as `isError`, and each image
/// the tool returned (already checked and bounded by `summarize`) as an MCP `image` item after
/// it, which every revision since 2024-11-05 reads the same way.
fn answer(
    record: std::io::Result<paddock::pipeline::CallRecord>,
) -> Result<CallToolResponse, ErrorData> {
    let summary = summarize(&record.map_err(internal)?);
    let mut content = vec![ContentBlock::text(summary.content)];
    content.extend(
        summary
            .images
            .iter()
            .map(|image| ContentBlock::image(image.base64(), image.media_type())),
    );
    Ok(if summary.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
    .into())
}

/// A call cancelled before it reached the session.
fn not_run() -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "error[NOT_EXECUTED]: {}",
        paddock::pipeline::not_executed().message
    ))])
    .into()
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
