//! How a command that cannot do its work says so (errors printed once, at the top, in the
//! form the command line asked for): `error:` lines on standard error; one JSON object for
//! `tool call --json` and `tool batch`; and for `run --json` the `result` line every run ends
//! with, even when the session never started.

use super::common::*;

/// A preset whose `[tools]` names a tool no plugin provides: refused before anything starts.
fn refused_preset(s: &Sandbox) -> String {
    let path = s.file("refused.toml");
    std::fs::write(
        &path,
        "name = \"refused\"\n[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\" }]\n[tools]\nenable = [\"read_fiel\"]\n",
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn run_json_that_cannot_start_still_ends_with_a_result_line() {
    let s = Sandbox::new();
    let preset = refused_preset(&s);
    let out = s.paddock(&[
        "run",
        "--json",
        "--demo",
        "--preset",
        &preset,
        "look around",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a result line");
    let result: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["data"]["stop_reason"], "setup_error");
    assert_eq!(result["data"]["exit_code"], 2);
    assert_eq!(result["data"]["session"], serde_json::Value::Null);
    assert!(
        result["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{result}"
    );
    // The findings, with where and the fix, go to standard error once.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("read_fiel").count(), 1, "{stderr}");
    assert!(stderr.contains("refused.toml:6:"), "{stderr}");
}

#[test]
fn the_same_failure_is_text_without_json_and_one_object_for_tool_call_json() {
    let s = Sandbox::new();
    let preset = refused_preset(&s);
    let text = s.paddock(&["run", "--demo", "--preset", &preset, "look around"]);
    assert_eq!(text.status.code(), Some(2));
    assert!(text.stdout.is_empty(), "nothing on stdout: {text:?}");
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(stderr.contains("error: "), "{stderr}");

    let (code, object) = s.json(&[
        "tool",
        "call",
        "read_file",
        "{}",
        "--preset",
        &preset,
        "--json",
    ]);
    assert_eq!(code, 2);
    assert_eq!(object["ok"], false);
    assert_eq!(object["error"]["retryable"], false);
    assert!(object["error"]["code"].as_str().is_some(), "{object}");
}

#[test]
fn a_plugin_failure_exits_1_and_a_usage_error_exits_2() {
    let s = Sandbox::new();
    let missing = s.paddock(&["plugin", "inspect", "./no-such.wasm"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).starts_with("error: "));
    let no_id = s.paddock(&["log"]);
    assert_eq!(no_id.status.code(), Some(2), "{no_id:?}");
    assert!(
        String::from_utf8_lossy(&no_id.stderr)
            .contains("error: give a session id, or --list to see them")
    );
}
