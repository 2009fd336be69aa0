//! paddock on a pseudo-terminal, and interrupted: the chat's screen, the trust and approval
//! questions asked at a terminal, and Ctrl-C against a streaming model then `resume`. These read
//! the screen or a clock, so they are a binary of their own: they run beside each other, not
//! beside the suite's builds and crash trials (`suite/`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../suite/agent_common/mod.rs"]
mod agent_common;

mod agent_resume;
mod chat_terminal;
mod trust_approval;
mod trust_config;
mod trust_question;
mod trust_terminal;
