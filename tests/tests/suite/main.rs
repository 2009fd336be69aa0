//! paddock's end-to-end tests, one test binary: each module is one capability (the agent loop
//! and sessions, authoring, the hostile suites, MCP both ways, model providers, the pipeline,
//! presets, trust, trajectory export, paddock as a Harbor agent, plugins from OCI registries),
//! with the shared set-up in the `*_common` modules. The agent tests drive the library's
//! `Session` in process against the scripted model server wherever their subject is the loop
//! (calls, repair, compaction, budgets, steering, reopening, the log), and the real `paddock`
//! binary where it is the binary (exit codes, `run --json`, the chat terminal, signals,
//! `--home`, `log --list`); most other modules drive the binary.
//! Two kinds of test live in binaries of their own: `terminal/` (what runs on a
//! pseudo-terminal, and Ctrl-C against a streaming model: they read the screen or a clock, so
//! they run beside each other only, not beside a build or the crash trials), and
//! `model_api_key.rs` (it sets a process environment variable, which is only sound while no
//! other thread runs).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod agent_common;
mod authoring_common;
mod common;
mod hooks_common;
mod pipeline_common;

mod acp;
mod acp_editor;
mod acp_modes;
mod agent_chat;
mod agent_compaction;
mod agent_compat;
mod agent_headless;
mod agent_home;
mod agent_list;
mod agent_loop;
mod agent_repair;
mod agent_scripts;
mod agent_sessions;
mod agents_e2e;
mod agents_family;
mod agents_hostile;
mod atif;
mod authoring;
mod authoring_hooks;
mod builtin_described;
mod capabilities;
mod client_kill;
mod crash;
mod doctor;
mod gate;
mod harbor;
mod hooks;
mod hooks_post;
mod hostile;
mod hostile_ambient;
mod hostile_exec;
mod hostile_host;
mod hostile_host_fs;
mod json_events_doc;
mod mcp_http;
mod mcp_serve;
mod mcp_use;
mod model_anomalies;
mod model_anthropic;
mod model_cancel;
mod model_compat;
mod model_faults;
mod model_images;
mod model_openai;
mod model_script;
mod pipeline_inputs;
mod pipeline_scheduler;
mod plugin_lock;
mod plugin_oci;
mod plugin_oci_hostile;
mod plugin_oci_signing;
mod plugin_oci_trust;
mod plugin_upgrade;
mod preset;
mod preset_inherit;
mod preset_root;
mod preset_verdict;
mod rewind;
mod rewind_fork;
mod rewind_grants;
mod rewind_hostile;
mod rewind_random;
mod session_api;
mod session_dirs;
mod shell;
mod trust_hooks;
mod trust_sandbox;
