//! `paddock doctor`: which of paddock's layers are in force on this machine, each with what it
//! stops; a missing one with why and what it means (inside a container that forbids user
//! namespaces, programs the `exec` capability starts, and MCP servers, fail closed unless a
//! preset accepts `confine = "off"`); then the jail's canaries, run for real (a write and a
//! read outside the grants and a socket, each of which must be stopped, and a granted write
//! that must work). Exit 0 when every layer is in force and every canary held, 1 otherwise.

use clap::Args;
use serde_json::json;

use super::Exit;
use super::report::CommandResult;
use super::style::{self, GREEN, RED, json_for_terminal, paint, sanitize};
use paddock_sandbox::{Canary, Layer, layers, probe_in_child, run_canaries};

#[derive(Args)]
pub struct DoctorArgs {
    /// Print one JSON object: `{"layers": [{"name", "in_force", "detail", "purpose"}], "all_in_force"}`.
    #[arg(long)]
    json: bool,
    /// The canaries' side inside the jail (paddock runs itself with it): the granted
    /// directory, the outside directory, the outside file, the port.
    #[arg(long, hide = true, num_args = 4)]
    canary_child: Option<Vec<String>>,
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
    if let Some(child) = &args.canary_child {
        print!("{}", probe_in_child(child));
        return Ok(Exit::Ok);
    }
    let layers = layers();
    let canaries = canaries().await;
    let held = canaries
        .as_ref()
        .is_ok_and(|all| all.iter().all(|c| c.outcome.is_ok()));
    let all = layers.iter().all(|l| l.state.is_ok()) && held;
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
        let canaries =
            match &canaries {
                Ok(all) => json!(all.iter().map(|c| {
                let (held, detail) = match &c.outcome {
                    Ok(detail) => (true, detail),
                    Err(what) => (false, what),
                };
                json!({"name": c.name, "tries": c.tries, "held": held, "detail": detail})
            }).collect::<Vec<_>>()),
                Err(why) => json!({"not_run": why}),
            };
        let object = json!({"layers": listed, "canaries": canaries, "all_in_force": all});
        println!("{}", json_for_terminal(&object.to_string()));
    } else {
        let color = style::color_enabled_stdout();
        println!("{}", verdict(&layers, &canaries, color));
        println!();
        for layer in &layers {
            let (mark, detail) = match &layer.state {
                Ok(detail) => (paint(color, GREEN, "in force"), detail),
                Err(why) => (paint(color, RED, "MISSING "), why),
            };
            println!("{mark}  {:<11} {}", layer.name, sanitize(detail));
            println!("{:23}{}", "", layer.purpose);
        }
        println!();
        match &canaries {
            Ok(all) => {
                for canary in all {
                    let (mark, detail) = match &canary.outcome {
                        Ok(detail) => (paint(color, GREEN, "held    "), detail),
                        Err(what) => (paint(color, RED, "BROKEN  "), what),
                    };
                    println!("{mark}  canary {:<14} {}", canary.name, sanitize(detail));
                    println!("{:23}tries to {}", "", canary.tries);
                }
            }
            Err(why) => println!(
                "{}  the jail's canaries: {}",
                paint(color, RED, "not run "),
                sanitize(why)
            ),
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

/// The one line first: whether everything holds, else what is missing and what that means.
fn verdict(layers: &[Layer], canaries: &Result<Vec<Canary>, String>, color: bool) -> String {
    let missing: Vec<&str> = layers
        .iter()
        .filter(|l| l.state.is_err())
        .map(|l| l.name)
        .collect();
    let broken: Vec<&str> = match canaries {
        Ok(all) => all
            .iter()
            .filter(|c| c.outcome.is_err())
            .map(|c| c.name)
            .collect(),
        Err(_) => vec!["(not run)"],
    };
    if missing.is_empty() && broken.is_empty() {
        return paint(
            color,
            GREEN,
            &format!(
                "all {} layers are in force and every canary held: tools, programs and MCP \
                 servers run as confined as this build can make them",
                layers.len()
            ),
        );
    }
    let mut what = Vec::new();
    if !missing.is_empty() {
        what.push(format!("missing: {}", missing.join(", ")));
    }
    if !broken.is_empty() {
        what.push(format!("canaries not held: {}", broken.join(", ")));
    }
    paint(
        color,
        RED,
        &format!(
            "not every layer holds here ({}): what each stops, and the fix, is below",
            what.join("; ")
        ),
    )
}

/// The jail's canaries, run with this very binary as the program.
async fn canaries() -> Result<Vec<Canary>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find paddock's binary: {e}"))?;
    let args = ["doctor".to_string(), "--canary-child".to_string()];
    run_canaries(&exe, &args).await
}
