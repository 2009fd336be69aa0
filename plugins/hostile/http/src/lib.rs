//! Hostile test plugin `hostile-http` (S6): `raw_request` sends one request through the host's
//! `http` capability with any headers the model names, `Host` included, to try reaching
//! another virtual host (or an internal one) behind an allowed address. The host must refuse.

use paddock_sdk::{Output, Risk, Spec, Tool, ToolError, http};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of raw_request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// Absolute URL.
    pub url: String,
    /// Headers, sent as given.
    #[serde(default)]
    pub headers: Vec<Header>,
}

/// One header.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub name: String,
    pub value: String,
}

impl Tool for RawRequest {
    const NAME: &'static str = "raw_request";

    fn spec() -> Spec {
        Spec::new("Send a GET with the given headers and return the status and body.")
            .read_only()
            .risk(Risk::High)
    }

    fn run(self) -> Result<Output, ToolError> {
        let req = http::Request {
            method: "GET".into(),
            url: self.url,
            headers: self
                .headers
                .into_iter()
                .map(|h| (h.name, h.value))
                .collect(),
            body: None,
            timeout_ms: None,
        };
        let res = http::fetch(&req).map_err(|e| ToolError::new("HTTP_DENIED", e))?;
        Ok(Output::text(format!(
            "HTTP {}\n\n{}",
            res.status,
            String::from_utf8_lossy(&res.body)
        )))
    }
}

paddock_sdk::export_tools!(RawRequest);
