//! A started server's standard streams as rmcp's transport: one JSON message per line, each
//! line capped (S5), and what rmcp's types leave out noted on the way in.
//!
//! - The cap: a server that writes an endless line would otherwise grow paddock's memory
//!   without bound. Past `cap` bytes without a newline the stream ends (the reason kept for
//!   the error message), which closes the connection; the call errors and the server is
//!   restarted. A line that is not a JSON-RPC message is skipped.
//! - What rmcp 3.11.0 drops: a tool's `execution.taskSupport` (2025-11-25). A tool the server
//!   lists as `"required"` answers every plain call with an error, so `client.rs` leaves it out;
//!   the names are noted here, from the raw `tools/list` result, before rmcp parses it.
//!
//! What it does not do: speak the protocol (rmcp does), or reach a `url` server (`remote`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};

/// What the wire noticed, shared with the connection.
#[derive(Default)]
pub struct Noted {
    /// Tools listed with `execution.taskSupport: "required"`.
    pub task_only: BTreeSet<String>,
    /// Why the stream ended, when the wire ended it.
    pub broken: Option<String>,
}

pub type Notes = Arc<Mutex<Noted>>;

/// The transport over `read` and `write`, and what it notes.
pub fn transport<R, W>(
    read: R,
    write: W,
    cap: usize,
) -> (
    impl futures::Sink<ClientJsonRpcMessage, Error = LinesCodecError> + Send + Unpin + 'static,
    impl futures::Stream<Item = ServerJsonRpcMessage> + Send + Unpin + 'static,
    Notes,
)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let notes = Notes::default();
    let lines = FramedRead::new(read, LinesCodec::new_with_max_length(cap));
    let incoming = futures::stream::unfold(
        (lines, notes.clone()),
        move |(mut lines, notes)| async move {
            loop {
                match lines.next().await? {
                    Ok(line) => {
                        if let Some(message) = parse(&line, &notes) {
                            return Some((message, (lines, notes)));
                        }
                    }
                    Err(e) => {
                        lock(&notes).broken = Some(match e {
                            LinesCodecError::MaxLineLengthExceeded => {
                                format!("the server sent a message over {cap} bytes")
                            }
                            LinesCodecError::Io(e) => format!("reading its output failed: {e}"),
                        });
                        return None;
                    }
                }
            }
        },
    );
    let outgoing = FramedWrite::new(write, LinesCodec::new()).with(
        |message: ClientJsonRpcMessage| {
            std::future::ready(
                serde_json::to_string(&message)
                    .map_err(|e| LinesCodecError::Io(std::io::Error::other(e))),
            )
        },
    );
    (Box::pin(outgoing), Box::pin(incoming), notes)
}

fn lock(notes: &Notes) -> std::sync::MutexGuard<'_, Noted> {
    notes.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One line as a message, its task-only tools noted; `None` for a line that is not one.
fn parse(line: &str, notes: &Notes) -> Option<ServerJsonRpcMessage> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if let Some(tools) = value["result"]["tools"].as_array() {
        let task_only = tools.iter().filter_map(|tool| {
            (tool["execution"]["taskSupport"] == "required")
                .then(|| tool["name"].as_str().map(str::to_string))
                .flatten()
        });
        lock(notes).task_only.extend(task_only);
    }
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_within_the_cap_pass_and_an_endless_one_ends_the_stream() {
        let ok = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nnot json\n".to_vec();
        let (_, incoming, notes) = transport(std::io::Cursor::new(ok), tokio::io::sink(), 64);
        let got: Vec<_> = incoming.collect().await;
        assert_eq!(got.len(), 1, "the message passes, the junk line is skipped");
        assert!(lock(&notes).broken.is_none());
        let flood = vec![b'x'; 100];
        let (_, incoming, notes) = transport(std::io::Cursor::new(flood), tokio::io::sink(), 64);
        assert_eq!(incoming.collect::<Vec<_>>().await.len(), 0);
        let broken = lock(&notes).broken.clone().unwrap_or_default();
        assert!(broken.contains("over 64 bytes"), "{broken}");
    }

    #[tokio::test]
    async fn task_only_tools_are_noted_from_the_raw_listing() {
        let listing = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "plain", "inputSchema": {"type": "object"}},
            {"name": "optional", "inputSchema": {"type": "object"},
             "execution": {"taskSupport": "optional"}},
            {"name": "research", "inputSchema": {"type": "object"},
             "execution": {"taskSupport": "required"}},
        ]}});
        let line = format!("{listing}\n").into_bytes();
        let (_, incoming, notes) = transport(std::io::Cursor::new(line), tokio::io::sink(), 1 << 20);
        assert_eq!(incoming.collect::<Vec<_>>().await.len(), 1);
        assert_eq!(
            lock(&notes).task_only.iter().collect::<Vec<_>>(),
            ["research"]
        );
    }
}
