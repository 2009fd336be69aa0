//! Built-in plugin `fetch` (S6): `fetch_url` makes one HTTP request through the host's `http`
//! capability. The preset decides which hosts (`plugins.fetch.grants.http.allow`).

use paddock_sdk::{Output, Risk, Spec, Tool, ToolError, http};
use schemars::JsonSchema;
use serde::Deserialize;

/// HTTP methods fetch_url sends.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    #[default]
    Get,
    Head,
    Post,
}

/// Arguments of fetch_url.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchUrl {
    /// Absolute http or https URL on a host the preset allows.
    pub url: String,
    /// Default GET.
    #[serde(default)]
    pub method: Option<Method>,
    /// Request body, for POST.
    #[serde(default)]
    pub body: Option<String>,
}

impl Tool for FetchUrl {
    const NAME: &'static str = "fetch_url";

    fn spec() -> Spec {
        Spec::new(
            "Fetch a URL from a host the preset allows and return the status line and the body \
             as text. A denied host is named in the error with the preset key that would allow \
             it. Large bodies are cut at the preset's cap.",
        )
        .read_only()
        .risk(Risk::High)
        .example(r#"{"url":"https://docs.rs/regex"}"#, "an absolute URL")
    }

    fn run(self) -> Result<Output, ToolError> {
        let method = match self.method.unwrap_or_default() {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
        };
        let req = http::Request {
            method: method.into(),
            url: self.url,
            headers: vec![("user-agent".into(), "paddock-fetch/0.1".into())],
            body: self.body.map(String::into_bytes),
            timeout_ms: None,
        };
        let res = http::fetch(&req).map_err(|e| ToolError::new("HTTP_DENIED", e))?;
        let mut content = format!(
            "HTTP {}\n\n{}",
            res.status,
            String::from_utf8_lossy(&res.body)
        );
        if res.truncated {
            content.push_str("\n(response cut at the preset's max_response_bytes)");
        }
        let mut output = Output::text(content);
        output.truncated = res.truncated;
        Ok(output)
    }
}

paddock_sdk::export_tools!(FetchUrl);
