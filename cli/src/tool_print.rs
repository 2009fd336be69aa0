//! How `paddock tool call` prints one result: content on stdout (sanitized, T3), errors and
//! hook context on stderr, or exactly one JSON object with `--json`.

use serde_json::json;

use super::Exit;
use super::style::{self, DIM, RED, YELLOW, json_for_terminal, paint, sanitize};
use paddock_types::contract::ToolResult;

pub(super) fn print_result(result: &ToolResult, context: &[String], json: bool) -> Exit {
    if !json {
        // What hooks added for the model; the result itself goes to stdout below.
        for line in context {
            eprintln!(
                "{}",
                paint(style::color_enabled_stderr(), DIM, &sanitize(line))
            );
        }
    }
    match (result, json) {
        (Ok(out), true) => {
            let mut object = json!({"ok": true, "content": out.content, "truncated": out.truncated, "continuation": out.continuation});
            with_context(&mut object, context);
            println!("{}", json_for_terminal(&object.to_string()));
            Exit::Ok
        }
        (Err(err), true) => {
            let mut object = json!({"ok": false, "error": err});
            with_context(&mut object, context);
            println!("{}", json_for_terminal(&object.to_string()));
            Exit::Failed
        }
        (Ok(out), false) => {
            // An image is described, not printed as base64 on the terminal.
            let shown = match paddock::model::ImagePart::from_tool_output(&out.content) {
                Some(Ok((image, caption))) => format!("{caption}\n[image: {}]\n", image.describe()),
                Some(Err(why)) => format!("[an image that would not be sent: {why}]\n"),
                None => out.content.clone(),
            };
            print!("{}", sanitize(&shown));
            if !shown.ends_with('\n') {
                println!();
            }
            if let (true, Some(next)) = (out.truncated, &out.continuation) {
                eprintln!(
                    "{}",
                    paint(
                        style::color_enabled_stderr(),
                        YELLOW,
                        &format!("(truncated; to continue: {})", sanitize(next))
                    )
                );
            }
            Exit::Ok
        }
        (Err(err), false) => {
            let retry = if err.retryable { " (retryable)" } else { "" };
            eprintln!(
                "{} {}{retry}",
                paint(
                    style::color_enabled_stderr(),
                    RED,
                    &format!("error[{}]:", sanitize(err.code.as_str()))
                ),
                sanitize(&err.message)
            );
            Exit::Failed
        }
    }
}

/// Hook context joins the JSON object only when there is some, so the common shape stays
/// `{"ok", "content", "truncated", "continuation"}` or `{"ok", "error"}`.
fn with_context(object: &mut serde_json::Value, context: &[String]) {
    if !context.is_empty() {
        object["context"] = json!(context);
    }
}
