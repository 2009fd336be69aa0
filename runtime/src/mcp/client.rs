//! Using an MCP server: `[mcp.NAME]` started confined (`sandbox::ServerProcess`)
//! and spoken to with `rmcp`'s client over its standard streams, or reached by `url` over
//! streamable HTTP (`remote`); its tools exposed like plugin tools. The server is untrusted
//! like a plugin, and the rules are the same for both:
//!
//! - a call past `timeout_ms` errors `TIMEOUT`; a server that dies, closes its output or sends
//!   a message over the cap (`lines`) fails the call with `MCP_SERVER_FAILED`; either way the server
//!   is killed with all it started, and started again once, for the next call. A second
//!   failure leaves it down: its tools answer `MCP_SERVER_DOWN`, and the session goes on (these
//!   codes go back to the model, like a plugin's own);
//! - what it returns is text for the model, bounded by the tool's output budget afterwards;
//! - its stderr is drained (kept: the last few KiB, for the error message), never blocking it;
//! - a cancelled call sends the server `notifications/cancelled` and returns `CANCELLED`.
//!
//! Calls to one server are made one at a time (it is one process; restarts must not race).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, RoleClient, RunningService, serve_client_with_lifecycle,
};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::wire::{self, Notes};
use paddock_types::contract::{ErrorCode, ToolError, ToolOutput, ToolResult};
use crate::preset::ResolvedMcp;
use paddock_sandbox::{ServerProcess, ServerSpec};

/// The largest single message a server may send.
const MESSAGE_CAP: usize = 16 << 20;
/// Bytes of the server's stderr kept for error messages.
const STDERR_TAIL: usize = 4 << 10;
/// How long a server may take to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a server could not be used at all.
#[derive(Debug, thiserror::Error)]
#[error("MCP server `mcp.{server}`: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    /// The started process; none for a `url` server.
    process: Option<ServerProcess>,
    stderr: Arc<std::sync::Mutex<Vec<u8>>>,
    /// What the transport noticed (`wire`, `remote`).
    notes: Notes,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(process) = &self.process {
            process.kill();
        }
    }
}

struct State {
    connection: Option<Connection>,
    restarted: bool,
}

/// One configured MCP server and its connection.
pub struct McpServer {
    pub spec: ResolvedMcp,
    state: tokio::sync::Mutex<State>,
}

/// A tool of an MCP server, as the registry holds it.
#[derive(Clone)]
pub struct McpTool {
    pub server: Arc<McpServer>,
    /// The tool's name on the server (the registry's may be namespaced).
    pub remote: String,
}

/// What a server offered at start.
pub struct Listed {
    /// The tools paddock offers.
    pub tools: Vec<Tool>,
    /// Tools left out: the server runs them only as tasks (`execution.taskSupport:
    /// "required"`), which paddock does not drive; every plain call would fail.
    pub task_only: Vec<Tool>,
}

impl McpServer {
    /// Starts the server confined and lists its tools.
    pub async fn start(spec: ResolvedMcp) -> Result<(Arc<McpServer>, Listed), McpError> {
        let fail = |message: String| McpError {
            server: spec.name.clone(),
            message,
        };
        let connection = connect(&spec).await.map_err(fail)?;
        let tools = tokio::time::timeout(START_TIMEOUT, connection.service.list_all_tools())
            .await
            .map_err(|_| fail("it did not list its tools in time".into()))?
            .map_err(|e| fail(format!("cannot list its tools: {e}{}", tail(&connection))))?;
        let task_only_names = super::wire::lock(&connection.notes).task_only.clone();
        let (task_only, tools) = tools
            .into_iter()
            .partition(|tool| task_only_names.contains(tool.name.as_ref()));
        let server = McpServer {
            spec,
            state: tokio::sync::Mutex::new(State {
                connection: Some(connection),
                restarted: false,
            }),
        };
        Ok((Arc::new(server), Listed { tools, task_only }))
    }

    /// The most text a result may bring: the tool's output budget (cut again by the pipeline).
    fn budget(&self) -> usize {
        let max = self
            .spec
            .output_bytes
            .unwrap_or(paddock_types::contract::OutputBudget::DEFAULT.max_bytes);
        usize::try_from(max).unwrap_or(usize::MAX)
    }

    fn key(&self) -> String {
        format!("mcp.{}", self.spec.name)
    }

    /// Calls `tool` with `args`, under the server's timeout and the call's cancellation.
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let mut state = self.state.lock().await;
        if state.connection.is_none() {
            if state.restarted {
                return Err(ToolError::new(
                    ErrorCode::Plugin("MCP_SERVER_DOWN".into()),
                    format!(
                        "MCP server `{}` is down (it failed again after a restart); the session goes \
                         on without it",
                        self.key()
                    ),
                ));
            }
            state.restarted = true;
            match connect(&self.spec).await {
                Ok(connection) => state.connection = Some(connection),
                Err(e) => {
                    return Err(ToolError::new(
                        ErrorCode::Plugin("MCP_SERVER_DOWN".into()),
                        format!("MCP server `{}` could not be restarted: {e}", self.key()),
                    ));
                }
            }
        }
        let Some(connection) = state.connection.as_ref() else {
            return Err(ToolError::new(ErrorCode::Host, "no connection"));
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match args {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        };
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return Err(ToolError::new(
                    ErrorCode::Cancelled,
                    "interrupted while running: the MCP server was told to cancel it",
                ));
            }
            _ = tokio::time::sleep(self.spec.call_timeout) => Err(format!(
                "took longer than {} ms (`{}.timeout_ms`)",
                self.spec.call_timeout.as_millis(),
                self.key()
            )),
            answer = connection.service.peer().call_tool_once(params) => Ok(answer),
        };
        let broken = match outcome {
            Ok(Ok(CallToolResponse::Complete(result))) => {
                let parts = super::content::parts(&result.content, self.budget());
                return if result.is_error == Some(true) {
                    Err(ToolError::new(
                        ErrorCode::Plugin("MCP_TOOL_ERROR".into()),
                        super::content::text_of(&parts),
                    ))
                } else {
                    Ok(ToolOutput::complete(super::content::output_of(&parts)))
                };
            }
            Ok(Ok(_)) => {
                return Err(ToolError::new(
                    ErrorCode::Plugin("MCP_UNSUPPORTED".into()),
                    "the MCP server asked for input or started a task; paddock does not support either",
                ));
            }
            Ok(Err(e)) => (
                ErrorCode::Plugin("MCP_SERVER_FAILED".into()),
                format!("failed: {e}{}", tail(connection)),
            ),
            Err(timeout) => (ErrorCode::Timeout, timeout),
        };
        // Dead, hung or flooding: kill it (and all it started); the next call restarts it once.
        let restart = if state.restarted {
            "it was restarted once already, so it stays down"
        } else {
            "it was stopped and starts again for the next call"
        };
        state.connection = None;
        Err(ToolError::new(
            broken.0,
            format!("MCP server `{}` {}; {restart}", self.key(), broken.1),
        ))
    }
}

fn client_info() -> ClientConfig {
    let mut info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("paddock", env!("CARGO_PKG_VERSION")),
    );
    info.protocol_version = ProtocolVersion::V_2025_11_25;
    info
}

/// The newest revision first (`server/discover`, no session); a server that answers the probe
/// with an error, or not within `wire::DISCOVER_WAIT` (the transports answer for it), gets the `initialize` handshake at 2025-11-25 and
/// may answer with an older revision it speaks (2025-06-18 and before).
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

async fn handshake<T, E, A>(
    transport: T,
) -> Result<
    Result<RunningService<RoleClient, ClientConfig>, rmcp::service::ClientInitializeError>,
    tokio::time::error::Elapsed,
>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(
        START_TIMEOUT,
        serve_client_with_lifecycle(client_info(), transport, lifecycle()),
    )
    .await
}

/// Starts the process confined (or reaches the `url`) and completes the MCP handshake.
async fn connect(spec: &ResolvedMcp) -> Result<Connection, String> {
    if let Some(url) = &spec.url {
        let (transport, notes) = super::remote::transport(spec, url, MESSAGE_CAP).await?;
        let service = handshake(transport)
            .await
            .map_err(|_| {
                format!(
                    "no MCP handshake with {url} within {} s",
                    START_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?;
        return Ok(Connection {
            service,
            process: None,
            stderr: Arc::default(),
            notes,
        });
    }
    let key = format!("mcp.{}", spec.name);
    let (process, (stdin, stdout, stderr)) = ServerProcess::start(&ServerSpec {
        key: &key,
        command: &spec.command,
        args: &spec.args,
        mounts: &spec.mounts,
        protect: &spec.protect,
        jail: &spec.jail,
    })?;
    let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
    tokio::spawn(drain(stderr, kept.clone()));
    let (sink, stream, notes) = wire::transport(stdout, stdin, MESSAGE_CAP);
    let transport = (sink, stream);
    let mut connection_tail = String::new();
    let service = match handshake(transport).await {
        Ok(Ok(service)) => service,
        Ok(Err(e)) => {
            connection_tail = stderr_tail(&kept);
            return Err(format!("the MCP handshake failed: {e}{connection_tail}"));
        }
        Err(_) => {
            return Err(format!(
                "no MCP handshake within {} s{connection_tail}",
                START_TIMEOUT.as_secs()
            ));
        }
    };
    Ok(Connection {
        service,
        process: Some(process),
        stderr: kept,
        notes,
    })
}

/// Reads the server's stderr to the end, keeping the last `STDERR_TAIL` bytes.
async fn drain(mut from: tokio::net::unix::pipe::Receiver, kept: Arc<std::sync::Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.extend_from_slice(&buf[..n]);
        let excess = kept.len().saturating_sub(STDERR_TAIL);
        kept.drain(..excess);
    }
}

fn stderr_tail(kept: &std::sync::Mutex<Vec<u8>>) -> String {
    let kept = kept
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept.is_empty() {
        return String::new();
    }
    format!(
        "; its stderr ends: {}",
        String::from_utf8_lossy(&kept).trim()
    )
}

fn tail(connection: &Connection) -> String {
    let broken = super::wire::lock(&connection.notes).broken.clone();
    match broken {
        Some(why) => format!(" ({why}){}", stderr_tail(&connection.stderr)),
        None => stderr_tail(&connection.stderr),
    }
}
