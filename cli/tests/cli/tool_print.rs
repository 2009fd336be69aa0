//! How `paddock tool call` prints a result that hooks added context to (T3): the content on
//! stdout, ending in a newline even when the tool's does not, and the context on stderr on
//! lines of its own, so merged streams (`2>&1`, a terminal) never glue the two together.

use std::path::Path;
use std::process::Command;

use super::common::*;

#[test]
fn hook_context_and_content_without_a_final_newline_never_share_a_line() {
    let s = Sandbox::new();
    let echo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/bench_tools.wasm");
    std::fs::write(
        s.file("p.toml"),
        format!(
            "[plugins.bench]\nsource = {:?}\n\n[tools]\nenable = [\"echo\"]\n\n[[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\n\n\
             [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
            echo.display().to_string()
        ),
    )
    .unwrap();
    let args = r#"{"text":"no newline at the end"}"#;

    let out = s.paddock(&["tool", "call", "echo", args, "--preset", "p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "no newline at the end\n");
    assert!(
        stderr.starts_with("audit: echo call") && stderr.ends_with('\n'),
        "{stderr:?}"
    );

    // Both streams into one pipe, as a terminal shows them.
    let merged = Command::new("sh")
        .args([
            "-c",
            "\"$0\" tool call echo \"$1\" --preset p.toml 2>&1",
            env!("CARGO_BIN_EXE_paddock"),
            args,
        ])
        .current_dir(s.work.path())
        .env("PADDOCK_HOME", s.home.path())
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", s.home.path().join("config"))
        .output()
        .unwrap();
    let merged = String::from_utf8_lossy(&merged.stdout);
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(lines.len(), 2, "{merged:?}");
    assert!(
        lines.contains(&"no newline at the end"),
        "the content shares a line: {merged:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("audit: echo call")),
        "{merged:?}"
    );
}

/// A result cut short on the terminal says where the whole of it is: `paddock log` of this
/// very session (the command works as printed), not a `paddock log --json` that needs an id.
#[test]
fn a_cut_result_points_at_a_log_command_that_works() {
    let s = Sandbox::new();
    for i in 0..40 {
        std::fs::write(s.file(&format!("file{i:02}.txt")), "x\n").unwrap();
    }
    let out = s.paddock(&["run", "--demo"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let hint = stdout
        .lines()
        .find_map(|l| l.split("all of it: ").nth(1))
        .unwrap_or_else(|| panic!("a cut result with its hint: {stdout}"));
    let words: Vec<&str> = hint.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"paddock"), "{hint}");
    let shown = s.paddock(&words[1..]);
    assert!(
        shown.status.success() && String::from_utf8_lossy(&shown.stdout).contains("file39.txt"),
        "`{hint}` shows the whole result: {shown:?}"
    );
}
