//! The Model Context Protocol both ways, with the `rmcp` crate.
//!
//! - Serve (`paddock mcp serve`, in the command line crate: `cli/src/mcp*.rs`,
//!   `cli/src/elicit.rs`): the preset's tools offered to any MCP client, each call through the
//!   whole spine (repair, validation, hooks, approval, sandbox, output budget) and logged in a
//!   session. `annotations` (here) says what a tool's runtime metadata becomes for the client.
//! - Use (`[mcp.NAME]` in a preset): an MCP server started confined
//!   (`paddock_sandbox::ServerProcess`, `sandbox/src/capability/server.rs`) or
//!   reached by `url` with an http grant (`remote`; `http_wire` notes what rmcp's HTTP client
//!   drops, as `wire` does on a started server's streams),
//!   its tools exposed like plugin tools (`client`), their metadata read conservatively from
//!   the server's annotations (`annotations`).
//!
//! What it does not do: decide policy. The preset and the hooks decide; an MCP client and an
//! MCP server are both untrusted parties here, like the model and a plugin.

mod annotations;
mod client;
pub mod content;
mod http_wire;
mod wire;
mod remote;

pub use annotations::{annotations_for, meta_from_annotations};
pub use client::{Listed, McpError, McpServer, McpTool};

/// The protocol versions paddock speaks on either side (with rmcp 3.11.0): 2026-07-28, the
/// stateless revision (`server/discover`, no session, a server asks its client by answering
/// a request with `input_required` and the client retrying), and the ones before it with an
/// `initialize` handshake, in which a server asks its client with a request of its own
/// (elicitation).
pub fn protocol_versions() -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
    use rmcp::model::ProtocolVersion;
    std::borrow::Cow::Borrowed(&[
        ProtocolVersion::V_2024_11_05,
        ProtocolVersion::V_2025_03_26,
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2026_07_28,
    ])
}
