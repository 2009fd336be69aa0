//! Built-in plugin `fetch` (S6): `fetch_url` makes one HTTP request through the host's `http`
//! capability. The preset decides which hosts (`plugins.fetch.grants.http.allow`).

wit_bindgen::generate!({ world: "tool-plugin-http", path: "../../wit" });

use exports::paddock::plugin::tools::Guest;
use paddock::plugin::http;
use paddock::plugin::types::{Example, Risk, ToolError, ToolOutput, ToolSpec};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "Absolute http or https URL on a host the preset allows."},
    "method": {"type": "string", "enum": ["GET", "HEAD", "POST"], "description": "Default GET."},
    "body": {"type": "string", "description": "Request body, for POST."}
  },
  "required": ["url"],
  "additionalProperties": false
}"#;

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    method: Option<String>,
    body: Option<String>,
}

struct Fetch;

impl Guest for Fetch {
    fn list() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "fetch_url".into(),
            description: "Fetch a URL from a host the preset allows and return the status line \
                and the body as text. A denied host is named in the error with the preset key \
                that would allow it. Large bodies are cut at the preset's cap."
                .into(),
            parameters: SCHEMA.into(),
            examples: vec![Example {
                args: r#"{"url":"https://docs.rs/regex"}"#.into(),
                correct: true,
                note: "an absolute URL".into(),
            }],
            read_only: Some(true),
            concurrency_safe: Some(true),
            idempotent: Some(true),
            cancellable: Some(true),
            risk: Some(Risk::High),
            output_budget: None,
            path_params: vec![],
        }]
    }

    fn call(name: String, args: String) -> Result<ToolOutput, ToolError> {
        if name != "fetch_url" {
            return Err(error(
                "UNKNOWN_TOOL",
                format!("this plugin has only fetch_url, not {name}"),
            ));
        }
        let args: Args = serde_json::from_str(&args).map_err(|e| {
            error(
                "INVALID_ARGS",
                format!("arguments do not fit the schema: {e}"),
            )
        })?;
        let req = http::Request {
            method: args.method.unwrap_or_else(|| "GET".into()),
            url: args.url,
            headers: vec![("user-agent".into(), "paddock-fetch/0.1".into())],
            body: args.body.map(String::into_bytes),
            timeout_ms: None,
        };
        let res = http::fetch(&req).map_err(|e| error("HTTP_DENIED", e))?;
        let mut content = format!(
            "HTTP {}\n\n{}",
            res.status,
            String::from_utf8_lossy(&res.body)
        );
        if res.truncated {
            content.push_str("\n(response cut at the preset's max_response_bytes)");
        }
        Ok(ToolOutput {
            content,
            truncated: res.truncated,
            continuation: None,
        })
    }
}

fn error(code: &str, message: String) -> ToolError {
    ToolError {
        code: code.into(),
        message,
        retryable: false,
    }
}

export!(Fetch);
