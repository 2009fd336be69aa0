//! A minimal OpenAI-compatible model server on 127.0.0.1 for the scale bench (and, speaking
//! Anthropic Messages too, the cost bench): plain blocking HTTP/1.1 with keep-alive, one
//! thread per connection, each reply a short SSE stream chosen by a function of the request's
//! number and body. It does not parse requests. For each request it
//! records when its first byte came (paddock has built the body and starts sending), when its
//! last byte came, and when the reply was about to be written, so a round trip splits into
//! paddock's own time (reply written to the next request's first byte), the transfer, and the
//! server's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the model answers.
pub enum Reply {
    Text(String),
    /// One call: id, tool name, arguments.
    Call(String, &'static str, String),
}

type Decide = dyn Fn(usize, &[u8]) -> Reply + Send + Sync;

/// When one request came and was answered.
#[derive(Clone, Copy)]
pub struct Timing {
    pub first_byte: Instant,
    pub arrived: Instant,
    /// Just before the reply was written: a stamp taken after the write can come after the
    /// next request's first byte when this thread loses its core right after writing.
    pub replied: Instant,
    /// The request's body, in bytes.
    pub size: usize,
}

#[derive(Default)]
struct Seen {
    arrivals: Vec<Instant>,
    timings: Vec<Timing>,
    last_size: usize,
}

pub struct Loopback {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

/// The wire format the server answers in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    /// Spoken by the cost bench only (this file is part of both).
    #[allow(dead_code)]
    Anthropic,
}

impl Loopback {
    /// Serves until the process ends; `decide(n, body)` answers request `n` (from 0).
    pub fn start(decide: impl Fn(usize, &[u8]) -> Reply + Send + Sync + 'static) -> Loopback {
        Loopback::start_speaking(Wire::OpenAi, decide)
    }

    /// The same, answering in `wire`'s format.
    pub fn start_speaking(
        wire: Wire,
        decide: impl Fn(usize, &[u8]) -> Reply + Send + Sync + 'static,
    ) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let decide: Arc<Decide> = Arc::new(decide);
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, decide) = (Arc::clone(&shared), Arc::clone(&decide));
                std::thread::spawn(move || {
                    let _ = serve(stream, &seen, decide.as_ref(), wire);
                });
            }
        });
        Loopback { url, seen }
    }

    pub fn base_url(&self) -> String {
        self.url.clone()
    }

    pub fn arrivals(&self) -> Vec<Instant> {
        self.seen.lock().expect("seen").arrivals.clone()
    }

    /// Every answered request's timing, in order.
    pub fn timings(&self) -> Vec<Timing> {
        self.seen.lock().expect("seen").timings.clone()
    }

    pub fn last_size(&self) -> usize {
        self.seen.lock().expect("seen").last_size
    }

    /// The median round trip of a bare client (one kept-alive connection, a body of `size`
    /// bytes written at once, the reply read whole) to this server: what sending a request of
    /// that size costs on this machine, whoever sends it.
    pub fn bare_round_trip(&self, size: usize) -> std::time::Duration {
        let address = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/v1");
        let stream = std::net::TcpStream::connect(address).expect("connect to the loopback");
        stream.set_nodelay(true).expect("nodelay");
        let mut writer = stream.try_clone().expect("clone the stream");
        let mut reader = BufReader::new(stream);
        let mut request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {size}\r\n\r\n"
        )
        .into_bytes();
        request.resize(request.len() + size, b' ');
        let mut samples = Vec::new();
        for _ in 0..40 {
            let started = Instant::now();
            writer.write_all(&request).expect("send");
            let mut length = 0usize;
            let mut line = String::new();
            loop {
                line.clear();
                reader.read_line(&mut line).expect("reply");
                if let Some((name, value)) = line.trim_end().split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
                if line.trim_end().is_empty() {
                    break;
                }
            }
            let mut reply = vec![0; length];
            reader.read_exact(&mut reply).expect("reply body");
            samples.push(started.elapsed());
        }
        samples.sort();
        samples[samples.len() / 2]
    }

    /// The same through reqwest, the HTTP client paddock uses (a multi-threaded runtime, the
    /// body as one `Bytes`, the reply's stream read to its end), without paddock.
    pub fn client_round_trip(&self, size: usize) -> std::time::Duration {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let url = format!("{}/chat/completions", self.url);
        let body = bytes::Bytes::from(vec![b' '; size]);
        runtime.block_on(async {
            let client = reqwest::Client::new();
            let mut samples = Vec::new();
            for _ in 0..40 {
                let started = Instant::now();
                let reply = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("send");
                reply.bytes().await.expect("reply");
                samples.push(started.elapsed());
            }
            samples.sort();
            samples[samples.len() / 2]
        })
    }
}

fn serve(
    stream: std::net::TcpStream,
    seen: &Mutex<Seen>,
    decide: &Decide,
    wire: Wire,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut body = Vec::new();
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        let mut first_byte = None;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            first_byte.get_or_insert_with(Instant::now);
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
        let arrived = Instant::now();
        let n = {
            let mut seen = seen.lock().expect("seen");
            seen.arrivals.push(arrived);
            seen.last_size = length;
            seen.arrivals.len() - 1
        };
        let sse = match wire {
            Wire::OpenAi => frames(decide(n, &body), length / 4),
            Wire::Anthropic => anthropic_frames(decide(n, &body), length / 4),
        };
        // One write: split writes meet Nagle and delayed ACKs (40 ms each) on loopback.
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}",
            sse.len()
        );
        let replied = Instant::now();
        writer.write_all(response.as_bytes())?;
        let timing = Timing {
            first_byte: first_byte.unwrap_or(arrived),
            arrived,
            replied,
            size: length,
        };
        seen.lock().expect("seen").timings.push(timing);
    }
}

fn frames(reply: Reply, prompt_tokens: usize) -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let frame = serde_json::json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {frame}\n\n")
    };
    let (first, finish) = match reply {
        Reply::Text(text) => (
            chunk(
                serde_json::json!({"role": "assistant", "content": text}),
                None,
            ),
            "stop",
        ),
        Reply::Call(id, name, arguments) => (
            chunk(
                serde_json::json!({"role": "assistant", "tool_calls": [{
                    "index": 0, "id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }]}),
                None,
            ),
            "tool_calls",
        ),
    };
    let usage = serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10,
                  "total_tokens": prompt_tokens + 10},
    });
    format!(
        "{first}{}data: {usage}\n\ndata: [DONE]\n\n",
        chunk(serde_json::json!({}), Some(finish))
    )
}

fn anthropic_frames(reply: Reply, prompt_tokens: usize) -> String {
    let event = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    let mut sse = event(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {
            "id": "msg_bench", "type": "message", "role": "assistant", "content": [],
            "model": "bench", "usage": {"input_tokens": prompt_tokens, "output_tokens": 1}}}),
    );
    let stop = match reply {
        Reply::Text(text) => {
            sse += &event(
                "content_block_start",
                serde_json::json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            );
            sse += &event(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
            );
            "end_turn"
        }
        Reply::Call(id, name, arguments) => {
            sse += &event(
                "content_block_start",
                serde_json::json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            );
            sse += &event(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": arguments}}),
            );
            "tool_use"
        }
    };
    sse += &event(
        "content_block_stop",
        serde_json::json!({"type": "content_block_stop", "index": 0}),
    );
    sse += &event(
        "message_delta",
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop},
            "usage": {"output_tokens": 10}}),
    );
    sse + &event("message_stop", serde_json::json!({"type": "message_stop"}))
}
