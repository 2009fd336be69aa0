//! The ACP connection's lines: JSON-RPC messages, one per line, on standard input and output.
//! A line that is not JSON is answered here (a parse error that quotes what arrived and says
//! what is expected) and dropped, so the editor's mistake never ends the agent; every other
//! line goes to the protocol crate. A line is capped at `MAX_LINE` bytes: past it the line
//! is answered with an error and skipped up to its newline, so an editor (or what pretends to
//! be one) that never ends a line cannot grow paddock's memory without bound. Standard output
//! carries protocol lines only: diagnostics go to standard error.

use std::sync::Arc;

use agent_client_protocol::Lines;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt};

use super::connection;
use super::sessions::Sessions;

/// The longest line read: a prompt of 8 images at their bound (3.75 MB each, base64) and its
/// text fits several times over.
const MAX_LINE: usize = 64 << 20;

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
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let incoming = futures::stream::unfold(stdin, |mut stdin| async move {
        let line = next_line(&mut stdin, MAX_LINE).await.transpose()?;
        Some((line, stdin))
    })
    .filter_map(move |line| {
        let errors = errors.clone();
        async move {
            match line {
                Ok(Line::Text(line)) if line.trim().is_empty() => None,
                Ok(Line::Text(line)) => match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(_) => Some(Ok(line)),
                    Err(e) => {
                        let _ = errors.unbounded_send(not_json(&line, &e));
                        None
                    }
                },
                Ok(Line::TooLong) => {
                    let _ = errors.unbounded_send(too_long());
                    None
                }
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

/// One line read from the editor.
enum Line {
    Text(String),
    /// Longer than the cap: its bytes were dropped as they came, up to its newline.
    TooLong,
}

/// The next line, without its newline; `None` at the end of the stream. Never holds more than
/// `max` bytes of a line.
async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if line.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long && line.len() + chunk.len() > max {
            too_long = true;
            line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = newline.map_or(available.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            break;
        }
    }
    Ok(Some(if too_long {
        Line::TooLong
    } else {
        Line::Text(String::from_utf8_lossy(&line).into_owned())
    }))
}

/// The answer to a line that is not JSON: JSON-RPC's parse error, with the line's start and
/// the fix.
fn not_json(line: &str, error: &serde_json::Error) -> String {
    let (shown, _) = paddock_types::text::prefix_chars(line, 200);
    parse_error(
        format!(
            "that line is not JSON ({error}); paddock acp reads one JSON-RPC 2.0 message per line, e.g. {{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":1}}}}"
        ),
        json!({ "received": shown }),
    )
}

/// The answer to a line longer than `MAX_LINE`: what was wrong and the bound.
fn too_long() -> String {
    parse_error(
        format!(
            "a line longer than {} MiB was skipped: paddock acp reads one JSON-RPC message per line, at most that long; send smaller images or fewer per prompt",
            MAX_LINE >> 20
        ),
        serde_json::Value::Null,
    )
}

/// JSON-RPC's parse error (-32700), which answers no request (`id` null).
fn parse_error(message: String, data: serde_json::Value) -> String {
    let mut error = json!({ "code": -32700, "message": message });
    if !data.is_null() {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": null, "error": error }).to_string()
}
