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
//! - A server that never answers `server/discover` (a legacy one that ignores methods it does
//!   not know, instead of answering "method not found"): rmcp waits 10 s before it falls back
//!   to `initialize`. Here the wait is `DISCOVER_WAIT`: past it the wire answers the probe
//!   itself with "method not found", rmcp falls back at once, and the server's own late answer,
//!   if one comes, is dropped. A server that answers the probe with an error falls back
//!   without waiting (rmcp).
//!
//! What it does not do: speak the protocol (rmcp does), or reach a `url` server (`remote`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};

/// How long a server has to answer `server/discover` before it is taken for a legacy server
/// and given the `initialize` handshake (a `url` server too, `remote`). A modern server
/// answers at once once it reads the request; one slower to start than this gets the
/// handshake, which the SDKs' servers still answer.
pub(super) const DISCOVER_WAIT: Duration = Duration::from_secs(3);

/// What the wire noticed, shared with the connection.
#[derive(Default)]
pub struct Noted {
    /// Tools listed with `execution.taskSupport: "required"`.
    pub task_only: BTreeSet<String>,
    /// Why the stream ended, when the wire ended it.
    pub broken: Option<String>,
    /// The id of the `server/discover` request awaiting its answer, and until when.
    discover: Option<(serde_json::Value, Instant)>,
    /// The id of a probe the wire answered itself: the server's late answer is dropped.
    given_up: Option<serde_json::Value>,
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
                let deadline = lock(&notes).discover.as_ref().map(|(_, at)| *at);
                let next = match deadline {
                    None => lines.next().await,
                    Some(at) => tokio::select! {
                        line = lines.next() => line,
                        _ = tokio::time::sleep_until(at) => {
                            let answer = give_up_discover(&notes);
                            return Some((answer, (lines, notes)));
                        }
                    },
                };
                match next? {
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
    let sent = notes.clone();
    let outgoing =
        FramedWrite::new(write, LinesCodec::new()).with(move |message: ClientJsonRpcMessage| {
            let value = serde_json::to_value(&message);
            if let Ok(value) = &value
                && value["method"] == "server/discover"
            {
                lock(&sent).discover = Some((value["id"].clone(), Instant::now() + DISCOVER_WAIT));
            }
            std::future::ready(
                value
                    .map(|value| value.to_string())
                    .map_err(|e| LinesCodecError::Io(std::io::Error::other(e))),
            )
        });
    (Box::pin(outgoing), Box::pin(incoming), notes)
}

pub(super) fn lock(notes: &Notes) -> std::sync::MutexGuard<'_, Noted> {
    notes.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The answer given for a server to the probe `id` it left unanswered past `DISCOVER_WAIT`:
/// "method not found", as a legacy server should have said.
pub(super) fn discover_unanswered(id: serde_json::Value) -> ServerJsonRpcMessage {
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32601,
        "message": format!(
            "no answer to server/discover within {} s: taken for a server before 2026-07-28",
            DISCOVER_WAIT.as_secs()
        ),
    }});
    serde_json::from_value(answer).expect("a JSON-RPC error is a server message")
}

/// The names of the tools a raw `tools/list` answer lists with `execution.taskSupport:
/// "required"` (none for any other message).
pub(super) fn task_only_in(message: &serde_json::Value) -> Vec<String> {
    let Some(tools) = message["result"]["tools"].as_array() else {
        return Vec::new();
    };
    tools
        .iter()
        .filter(|tool| tool["execution"]["taskSupport"] == "required")
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect()
}

/// The probe's answer when the server gave none in time; its own answer is dropped later.
fn give_up_discover(notes: &Notes) -> ServerJsonRpcMessage {
    let mut noted = lock(notes);
    let id = noted.discover.take().map(|(id, _)| id).unwrap_or_default();
    noted.given_up = Some(id.clone());
    discover_unanswered(id)
}

/// One line as a message, its task-only tools noted; `None` for a line that is not one, or
/// the late answer to a probe the wire already answered.
fn parse(line: &str, notes: &Notes) -> Option<ServerJsonRpcMessage> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("method").is_none() && value.get("id").is_some() {
        let mut noted = lock(notes);
        if noted.given_up.as_ref() == Some(&value["id"]) {
            return None;
        }
        if noted
            .discover
            .as_ref()
            .is_some_and(|(id, _)| *id == value["id"])
        {
            noted.discover = None;
        }
    }
    lock(notes).task_only.extend(task_only_in(&value));
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

    /// A server that reads the probe and says nothing: past `DISCOVER_WAIT` the wire answers
    /// "method not found" for it, and drops the server's own answer when it comes later.
    #[tokio::test]
    async fn a_probe_left_unanswered_is_answered_method_not_found_and_a_late_answer_dropped() {
        let (server_side, client_side) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let (mut sink, mut incoming, _notes) = transport(read, write, 1 << 20);
        let probe: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}
        }))
        .expect("a request");
        sink.send(probe).await.expect("sent");
        let answer = incoming.next().await.expect("an answer");
        let answer = serde_json::to_value(&answer).unwrap();
        assert_eq!(answer["id"], 0, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        // The server's late answer to the probe is dropped; what follows passes.
        let (_, mut server_write) = tokio::io::split(server_side);
        use tokio::io::AsyncWriteExt;
        server_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await
            .unwrap();
        let next = serde_json::to_value(incoming.next().await.expect("a message")).unwrap();
        assert_eq!(next["id"], 1, "{next}");
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
        let (_, incoming, notes) =
            transport(std::io::Cursor::new(line), tokio::io::sink(), 1 << 20);
        assert_eq!(incoming.collect::<Vec<_>>().await.len(), 1);
        assert_eq!(
            lock(&notes).task_only.iter().collect::<Vec<_>>(),
            ["research"]
        );
    }
}
