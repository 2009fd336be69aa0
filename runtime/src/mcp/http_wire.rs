//! rmcp's streamable HTTP client, with what `wire` does for a started server's standard
//! streams (`remote` builds the client, pinned and capped; this wraps it):
//!
//! - the tools a `tools/list` answer lists with `execution.taskSupport: "required"`, which
//!   rmcp's types drop, are noted. From an event stream answer, each event's raw data; a JSON
//!   answer reaches paddock already parsed, so the list is asked again (the same request, with
//!   the same session and headers) and that raw body read within the JSON cap, for the notes
//!   only: the protocol goes on with rmcp's parse of the first. A second answer that cannot be
//!   read fails the listing rather than offer tools that may be task-only.
//! - a `server/discover` left unanswered past `wire::DISCOVER_WAIT` (its request still open, or
//!   an event stream with no answer in it) is answered "method not found" for the server and
//!   the request closed, so rmcp falls back to `initialize` then, not after its fixed 10 s.
//!
//! What it does not do: speak the protocol or decide where requests go (rmcp and `remote`);
//! every other request passes to rmcp's client untouched.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest_mcp::Client;
use reqwest_mcp::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::time::Instant;

use super::wire::{self, Notes};

type Failed = StreamableHttpError<reqwest_mcp::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client, noting what its types drop and bounding the wait on the probe.
///
/// It enforces the limits it is built with (the transport's own), on every request: it
/// implements only the trait's required methods, which the per-request limit variants call
/// by default.
#[derive(Clone)]
pub(super) struct Noting {
    client: Client,
    notes: Notes,
    limits: StreamableHttpResponseLimits,
}

impl Noting {
    pub(super) fn new(client: Client, notes: Notes, limits: StreamableHttpResponseLimits) -> Noting {
        Noting {
            client,
            notes,
            limits,
        }
    }
}

/// One POST, as far as `Noting` is concerned.
enum Posted {
    /// The `server/discover` probe, with its id.
    Discover(serde_json::Value),
    ListTools,
    Other,
}

impl Posted {
    fn of(message: &ClientJsonRpcMessage) -> Posted {
        let ClientJsonRpcMessage::Request(request) = message else {
            return Posted::Other;
        };
        match &request.request {
            ClientRequest::DiscoverRequest(_) => {
                Posted::Discover(serde_json::to_value(&request.id).unwrap_or_default())
            }
            ClientRequest::ListToolsRequest(_) => Posted::ListTools,
            _ => Posted::Other,
        }
    }
}

/// Everything one POST needs, so it can be sent again.
#[derive(Clone)]
struct Post {
    uri: Arc<str>,
    message: ClientJsonRpcMessage,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
}

impl Noting {
    async fn send(&self, post: Post) -> Result<StreamableHttpPostResponse, Failed> {
        self.client
            .post_message_with_response_limits(
                post.uri,
                post.message,
                post.session_id,
                post.auth_header,
                post.custom_headers,
                self.limits,
            )
            .await
    }

    /// The probe, answered "method not found" for a server silent past `DISCOVER_WAIT`.
    async fn discover(
        &self,
        post: Post,
        id: serde_json::Value,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let deadline = Instant::now() + wire::DISCOVER_WAIT;
        match tokio::time::timeout_at(deadline, self.send(post)).await {
            Err(_) => Ok(StreamableHttpPostResponse::Json(
                wire::discover_unanswered(id),
                None,
            )),
            Ok(Ok(StreamableHttpPostResponse::Sse(events, session))) => Ok(
                StreamableHttpPostResponse::Sse(answered_by(deadline, events, id), session),
            ),
            Ok(answer) => answer,
        }
    }

    /// The tool list, its task-only tools noted.
    async fn list_tools(&self, post: Post) -> Result<StreamableHttpPostResponse, Failed> {
        match self.send(post.clone()).await? {
            StreamableHttpPostResponse::Sse(events, session) => {
                let notes = self.notes.clone();
                let noted = events.inspect(move |event| {
                    if let Ok(Sse {
                        data: Some(data), ..
                    }) = event
                        && let Ok(value) = serde_json::from_str(data)
                    {
                        wire::lock(&notes).task_only.extend(wire::task_only_in(&value));
                    }
                });
                Ok(StreamableHttpPostResponse::Sse(Box::pin(noted), session))
            }
            StreamableHttpPostResponse::Json(parsed, session) => {
                if matches!(parsed, ServerJsonRpcMessage::Response(_)) {
                    let raw = self.read_again(post).await.map_err(|why| {
                        StreamableHttpError::UnexpectedServerResponse(
                            format!(
                                "the tool list, asked again to read each tool's                                  `execution.taskSupport`: {why}"
                            )
                            .into(),
                        )
                    })?;
                    wire::lock(&self.notes)
                        .task_only
                        .extend(wire::task_only_in(&raw));
                }
                Ok(StreamableHttpPostResponse::Json(parsed, session))
            }
            other => Ok(other),
        }
    }

    /// `post` sent again as rmcp sends it (same body, session and headers), its JSON answer
    /// read raw within the JSON cap.
    async fn read_again(&self, post: Post) -> Result<serde_json::Value, String> {
        let body = serde_json::to_vec(&post.message).map_err(|e| e.to_string())?;
        let mut request = self
            .client
            .post(post.uri.as_ref())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(session) = &post.session_id {
            request = request.header(HEADER_SESSION_ID, session.as_ref());
        }
        if let Some(token) = &post.auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in post.custom_headers {
            request = request.header(name, value);
        }
        let mut response = request.send().await.map_err(|e| e.to_string())?;
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
            .unwrap_or_default();
        if !response.status().is_success() || !kind.starts_with("application/json") {
            return Err(format!(
                "the answer was HTTP {} ({kind:?}), not the JSON it was the first time",
                response.status()
            ));
        }
        let cap = self.limits.max_json_response_size;
        let mut raw = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if raw.len() + chunk.len() > cap {
                return Err(format!("the answer is over {cap} bytes"));
            }
            raw.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&raw).map_err(|e| format!("the answer is not JSON: {e}"))
    }
}

/// `events` as they come until one answers the probe `id`; past `deadline` without one, the
/// "method not found" answer given for the server, and the stream closed.
fn answered_by(deadline: Instant, events: Events, id: serde_json::Value) -> Events {
    let answers = |event: &Result<Sse, SseError>, id: &serde_json::Value| {
        let Ok(Sse {
            data: Some(data), ..
        }) = event
        else {
            return false;
        };
        serde_json::from_str::<serde_json::Value>(data)
            .is_ok_and(|value| value.get("method").is_none() && value["id"] == *id)
    };
    let state = Some((events, false));
    Box::pin(futures::stream::unfold(state, move |state| {
        let id = id.clone();
        async move {
            let (mut events, answered) = state?;
            if answered {
                let event = events.next().await?;
                return Some((event, Some((events, true))));
            }
            tokio::select! {
                event = events.next() => {
                    let event = event?;
                    let answered = answers(&event, &id);
                    Some((event, Some((events, answered))))
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let given = serde_json::to_string(&wire::discover_unanswered(id)).ok()?;
                    Some((Ok(Sse::default().data(given)), None))
                }
            }
        }
    }))
}

impl StreamableHttpClient for Noting {
    type Error = reqwest_mcp::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let posted = Posted::of(&message);
        let post = Post {
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
        };
        match posted {
            Posted::Discover(id) => self.discover(post, id).await,
            Posted::ListTools => self.list_tools(post).await,
            Posted::Other => self.send(post).await,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Failed> {
        self.client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                self.limits.max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(value: serde_json::Value) -> Result<Sse, SseError> {
        Ok(Sse::default().data(value.to_string()))
    }

    /// A probe's event stream with no answer in it: past the wait, "method not found" for the
    /// server, and the stream ends.
    #[tokio::test]
    async fn a_probe_stream_left_unanswered_is_answered_method_not_found() {
        let progress = event(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1}}));
        let silent: Events = Box::pin(futures::stream::iter([progress]).chain(futures::stream::pending()));
        let deadline = Instant::now() + wire::DISCOVER_WAIT;
        let got: Vec<_> = answered_by(deadline, silent, serde_json::json!(7)).collect().await;
        assert_eq!(got.len(), 2, "the notification, then the answer given");
        let Ok(Sse { data: Some(data), .. }) = &got[1] else {
            panic!("{got:?}");
        };
        let answer: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (7.into(), (-32601).into()));
    }

    /// A probe answered in its stream passes as it came, and nothing is added after it.
    #[tokio::test]
    async fn a_probe_answered_in_its_stream_passes_untouched() {
        let answer = event(serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        let answered: Events = Box::pin(futures::stream::iter([answer]));
        let deadline = Instant::now() + wire::DISCOVER_WAIT;
        let got: Vec<_> = answered_by(deadline, answered, serde_json::json!(7)).collect().await;
        assert_eq!(got.len(), 1, "{got:?}");
        let Ok(Sse { data: Some(data), .. }) = &got[0] else {
            panic!("{got:?}");
        };
        assert!(data.contains("\"result\""), "{data}");
    }
}
