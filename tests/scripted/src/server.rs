//! The HTTP side of the scripted server: hyper on 127.0.0.1 with an ephemeral port. Each request
//! is recorded, then answered with the script's next step; the stream is written frame by frame
//! so faults (drop, stall) happen mid-stream, as they do on a real network.

use super::quirks::Quirks;
use super::script::{Fault, Script, Step, Turn};
use super::wire::{anthropic_frames, openai_frames};
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
    pub received: Instant,
}

#[derive(Default)]
struct State {
    quirks: Quirks,
    steps: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Answer by history (see `start_by_history`) instead of in order.
    by_history: bool,
    /// Answer with what this decides from each request (see `start_responder`).
    responder: Option<Responder>,
}

/// Decides the step for a request from its JSON body and its size in bytes.
pub type Responder = Arc<dyn Fn(&serde_json::Value, usize) -> Step + Send + Sync>;

/// A running scripted server; it stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on an ephemeral port and serves `script` from the current Tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<ScriptedServer> {
        ScriptedServer::serve(script, Quirks::default(), false).await
    }

    /// Like `start`, imitating a real server's `quirks`.
    pub async fn start_with(script: Script, quirks: Quirks) -> std::io::Result<ScriptedServer> {
        ScriptedServer::serve(script, quirks, false).await
    }

    /// Like `start`, but a request is answered with the step whose index is the number of
    /// assistant messages in its history, and steps are never used up: a client that crashed
    /// and resumed gets the reply that follows the history it sends (the crash harness).
    pub async fn start_by_history(script: Script) -> std::io::Result<ScriptedServer> {
        ScriptedServer::serve(script, Quirks::default(), true).await
    }

    /// A server that answers each request with the step `responder` computes from it: a
    /// model whose replies depend on what it is sent (a window it enforces, a summary request
    /// it recognises).
    pub async fn start_responder(responder: Responder) -> std::io::Result<ScriptedServer> {
        ScriptedServer::serve_with(Script::default(), Quirks::default(), false, Some(responder))
            .await
    }

    async fn serve(
        script: Script,
        quirks: Quirks,
        by_history: bool,
    ) -> std::io::Result<ScriptedServer> {
        ScriptedServer::serve_with(script, quirks, by_history, None).await
    }

    async fn serve_with(
        script: Script,
        quirks: Quirks,
        by_history: bool,
        responder: Option<Responder>,
    ) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            quirks,
            steps: Mutex::new(script.steps.into()),
            requests: Mutex::default(),
            by_history,
            responder,
        });
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(answer(&state, request).await) }
                    });
                    // A connection the client dropped, or that a fault cut, just ends.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(ScriptedServer {
            addr,
            state,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for an OpenAI-compatible client (`.../v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL for an Anthropic client (it appends `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// Every request received so far, in order, forgetting them (long runs stay small).
    pub fn take_requests(&self) -> Vec<RecordedRequest> {
        std::mem::take(&mut *lock(&self.state.requests))
    }

    /// Steps not yet used.
    pub fn remaining_steps(&self) -> usize {
        lock(&self.state.steps).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn answer(state: &State, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return plain(400, &format!("scripted server: unreadable body: {e}")),
    };
    let size = body.len();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let replied = body["messages"].as_array().map_or(0, |messages| {
        messages.iter().filter(|m| m["role"] == "assistant").count()
    });
    let model = body["model"]
        .as_str()
        .unwrap_or("scripted-model")
        .to_owned();
    let refusal = state.quirks.refusal(&body);
    lock(&state.requests).push(RecordedRequest {
        path: path.clone(),
        headers,
        body: body.clone(),
        received: Instant::now(),
    });
    if let Some((status, text)) = refusal {
        return plain(status, &text);
    }
    let render: fn(&Turn, &str) -> Vec<String> = if path.ends_with("/chat/completions") {
        openai_frames
    } else if path.ends_with("/v1/messages") {
        anthropic_frames
    } else {
        return plain(404, &format!("scripted server: no endpoint {path}"));
    };
    let next = if let Some(responder) = &state.responder {
        Some(responder(&body, size))
    } else if state.by_history {
        lock(&state.steps).get(replied).cloned()
    } else {
        lock(&state.steps).pop_front()
    };
    let Some(step) = next else {
        return plain(
            400,
            "scripted server: the script has no step left for this request",
        );
    };
    match step {
        Step::Status {
            status,
            body,
            retry_after_secs,
            retry_after_ms,
        } => {
            let mut response = plain(status, &body);
            let headers = response.headers_mut();
            if let Some(secs) = retry_after_secs {
                headers.insert("retry-after", secs.into());
            }
            if let Some(ms) = retry_after_ms {
                headers.insert("retry-after-ms", ms.into());
            }
            response
        }
        Step::Reply(turn) => {
            let turn = state.quirks.adapt(&body, turn);
            stream(&turn, state.quirks.mirror(render(&turn, &model)))
        }
    }
}

fn plain(status: u16, text: &str) -> Response<Body> {
    let body = Full::new(Bytes::from(text.to_owned()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response
}

/// Streams `frames` one chunk each, applying the turn's delay and fault.
fn stream(turn: &Turn, frames: Vec<String>) -> Response<Body> {
    let (sender, receiver) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
    let delay = Duration::from_millis(turn.frame_delay_ms);
    let fault = turn.fault;
    tokio::spawn(async move {
        for (sent, frame) in frames.into_iter().enumerate() {
            match fault {
                Some(Fault::DropAfter { frames }) if sent == frames => {
                    // Let hyper write what was sent first, as a network would have, then cut.
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "fault");
                    let _ = sender.send(Err(cut)).await;
                    return;
                }
                Some(Fault::StallAfter { frames, ms }) if sent == frames => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Some(Fault::Endless { frames, every_ms }) if sent == frames => {
                    let line = r#"data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"and so on, "},"finish_reason":null}]}"#;
                    loop {
                        tokio::time::sleep(Duration::from_millis(every_ms)).await;
                        let frame = Frame::data(Bytes::from(format!("{line}\n\n")));
                        if sender.send(Ok(frame)).await.is_err() {
                            return;
                        }
                    }
                }
                _ => {}
            }
            if sent > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if sender
                .send(Ok(Frame::data(Bytes::from(frame))))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    let chunks = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(chunks)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}
