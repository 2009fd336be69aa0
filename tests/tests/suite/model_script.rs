//! The user's model script (`paddock run --model-script FILE`, docs/model-script.md): the
//! real binary plays a TOML file of turns as its model, fills placeholders from each request,
//! sends sloppy argument text as is (so repair runs), records the script's text in the start,
//! and `resume` goes on with that recorded text. A bad script is refused at its line before
//! anything starts.

use crate::agent_common::{Project, text};
use serde_json::Value;

const SCRIPT: &str = r#"
[[turn]]
text = "Reading {{task}}."
[[turn.call]]
tool = "read_file"
raw = '"{\"file_path\": \"notes.txt\"}"'

[[turn]]
text = "It says: {{result}}"
[[turn.call]]
tool = "list_dir"
args = { path = "." }

[[turn]]
text = "Done after {{message}}."
"#;

fn data_of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| &e["data"])
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_script_drives_the_loop_and_resume_replays_the_recorded_script() {
    let project = Project::warm(&[("notes.txt", "alpha\nbeta\n")]);
    let script = project.home.path().join("script.toml");
    std::fs::write(&script, SCRIPT).unwrap();
    let script_arg = script.display().to_string();

    // Two model requests, then the budget stops the session.
    let out = project
        .paddock(&[
            "run",
            "notes.txt",
            "--model-script",
            &script_arg,
            "--max-turns",
            "2",
        ])
        .await;
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{shown}");
    let session = project.only_session();
    let events = project.events(&session);
    assert_eq!(
        events[0]["data"]["model_script"].as_str(),
        Some(SCRIPT),
        "the start records the script's text"
    );
    let said: Vec<&str> = data_of(&events, "assistant/message")
        .iter()
        .filter_map(|d| d["text"].as_str())
        .collect();
    assert_eq!(said[0], "Reading notes.txt.", "{said:?}");
    let results = data_of(&events, "tool/result");
    let read = results[0];
    assert!(
        read["content"].as_str().unwrap().contains("alpha"),
        "the double-encoded call with another agent's key was repaired and ran: {read}"
    );
    assert!(
        read["repairs"].as_array().is_some_and(|r| !r.is_empty()),
        "the repair is logged: {read}"
    );
    assert_eq!(
        said[1],
        format!("It says: {}", read["content"].as_str().unwrap()),
        "{{{{result}}}} is the last result the request carried"
    );

    // The file is gone and another text is in its place: resume plays the recorded script's
    // third turn, not the new file.
    std::fs::write(&script, "[[turn]]\ntext = \"not this\"\n").unwrap();
    let out = project
        .paddock(&["resume", &session, "go on", "--max-turns", "5"])
        .await;
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let events = project.events(&session);
    let last = data_of(&events, "assistant/message")
        .last()
        .and_then(|d| d["text"].as_str())
        .map(str::to_string);
    assert_eq!(last.as_deref(), Some("Done after go on."), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_model_script_is_refused_at_its_line_and_nothing_starts() {
    let project = Project::new(&[]);
    let script = project.home.path().join("bad.toml");
    std::fs::write(
        &script,
        "[[turn]]\ntext = \"hi\"\n[[turn.call]]\ntool = \"read_file\"\narg = { path = \"x\" }\n",
    )
    .unwrap();
    let script_arg = script.display().to_string();
    let out = project
        .paddock(&["run", "x", "--model-script", &script_arg, "--json"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let last: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("a result line: {}", text(&out)));
    let said = last.to_string();
    assert_eq!(last["type"], "result", "{said}");
    assert!(said.contains(&format!("{script_arg}:5:")), "{said}");
    assert!(said.contains("arg"), "{said}");
    assert!(project.sessions().is_empty(), "{:?}", project.sessions());

    std::fs::write(&script, "[[turn]]\ntext = \"{{results}}\"\n").unwrap();
    let out = project
        .paddock(&["run", "x", "--model-script", &script_arg])
        .await;
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("unknown placeholder {{results}}") && shown.contains("{{result}}"),
        "{shown}"
    );
}
