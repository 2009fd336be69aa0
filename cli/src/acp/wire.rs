//! The ACP connection's lines: JSON-RPC messages, one per line, on standard input and output.
//! A line that is not JSON is answered here (a parse error that quotes what arrived and says
//! what is expected) and dropped, so the editor's mistake never ends the agent; every other
//! line goes to the protocol crate. Standard output carries protocol lines only: diagnostics
//! go to standard error.

use std::sync::Arc;

use agent_client_protocol::Lines;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::connection;
use super::sessions::Sessions;

/// Serves `sessions` on standard input and output until the editor closes its end.
pub async fn serve(sessions: Arc<Sessions>) -> Result<(), agent_client_protocol::Error> {
    let (out, mut lines_out) = futures::channel::mpsc::unbounded::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = lines_out.next().await {
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    let errors = out.clone();
    let stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let incoming = futures::stream::unfold(stdin, |mut stdin| async move {
        let line = stdin.next_line().await.transpose()?;
        Some((line, stdin))
    })
    .filter_map(move |line| {
        let errors = errors.clone();
        async move {
            match line {
                Ok(line) if line.trim().is_empty() => None,
                Ok(line) => match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(_) => Some(Ok(line)),
                    Err(e) => {
                        let _ = errors.unbounded_send(not_json(&line, &e));
                        None
                    }
                },
                Err(e) => Some(Err(e)),
            }
        }
    });
    let outgoing = out.sink_map_err(std::io::Error::other);
    let served = connection::agent(sessions)
        .connect_to(Lines::new(outgoing, incoming))
        .await;
    let _ = writer.await;
    served
}

/// The answer to a line that is not JSON: JSON-RPC's parse error, with the line's start and
/// the fix.
fn not_json(line: &str, error: &serde_json::Error) -> String {
    let (shown, _) = paddock_types::text::prefix_chars(line, 200);
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32700,
            "message": format!(
                "that line is not JSON ({error}); paddock acp reads one JSON-RPC 2.0 message per line, e.g. {{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":1}}}}"
            ),
            "data": { "received": shown },
        },
    })
    .to_string()
}
