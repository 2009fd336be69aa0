//! `paddock doctor`: which of paddock's layers are in force on this machine, each with what it
//! stops; a missing one with why and what it means (inside a container that forbids user
//! namespaces, programs the `exec` capability starts, and MCP servers, fail closed unless a
//! preset accepts `confine = "off"`). Exit 0 when every layer is in force, 1 otherwise.

use clap::Args;
use serde_json::json;

use super::Exit;
use super::report::CommandResult;
use super::style::{self, GREEN, RED, json_for_terminal, paint, sanitize};
use crate::sandbox::layers;

#[derive(Args)]
pub struct DoctorArgs {
    /// Print one JSON object: `{"layers": [{"name", "in_force", "detail", "purpose"}], "all_in_force"}`.
    #[arg(long)]
    json: bool,
}

/// What a missing jail layer means for a session.
const JAIL_MISSING: &str = "programs started through the `exec` capability (run_command) and \
MCP servers will not start: paddock refuses to run them less confined; a preset can accept the \
risk with `confine = \"off\"` on that grant (docs/security.md), e.g. where a container is the \
outer boundary. WebAssembly tools are unaffected.";

/// What a missing filesystem guard means.
const FS_MISSING: &str = "file tools refuse every path: paddock does not resolve guest paths \
without the kernel's `openat2(RESOLVE_BENEATH)` (Linux 5.6 or newer; some container sandboxes \
refuse it).";

pub async fn doctor(args: DoctorArgs) -> CommandResult {
    let layers = layers();
    let all = layers.iter().all(|l| l.state.is_ok());
    if args.json {
        let listed: Vec<_> = layers
            .iter()
            .map(|l| {
                let (in_force, detail) = match &l.state {
                    Ok(detail) => (true, detail),
                    Err(why) => (false, why),
                };
                json!({"name": l.name, "in_force": in_force, "detail": detail, "purpose": l.purpose})
            })
            .collect();
        let object = json!({"layers": listed, "all_in_force": all});
        println!("{}", json_for_terminal(&object.to_string()));
    } else {
        let color = style::color_enabled_stdout();
        for layer in &layers {
            let (mark, detail) = match &layer.state {
                Ok(detail) => (paint(color, GREEN, "in force"), detail),
                Err(why) => (paint(color, RED, "MISSING "), why),
            };
            println!("{mark}  {:<11} {}", layer.name, sanitize(detail));
            println!("{:23}{}", "", layer.purpose);
        }
        let jail = ["namespaces", "landlock", "seccomp"];
        if layers
            .iter()
            .any(|l| l.state.is_err() && jail.contains(&l.name))
        {
            println!("\n{JAIL_MISSING}");
        }
        if layers
            .iter()
            .any(|l| l.state.is_err() && l.name == "fs-guard")
        {
            println!("\n{FS_MISSING}");
        }
    }
    Ok(if all { Exit::Ok } else { Exit::Failed })
}
