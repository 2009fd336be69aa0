//! Host capabilities a grant may add (S6): `exec` (a program started confined by `paddock-jail`, checked against the policy first), `http` (an allow-list, checked addresses), and MCP servers started in the same jail.

pub(super) mod canary;
pub(super) mod confined;
pub(super) mod exec;
pub(super) mod exec_policy;
pub(super) mod http;
pub(super) mod http_addr;
pub(super) mod locate;
pub(super) mod server;
pub(super) mod shell;
