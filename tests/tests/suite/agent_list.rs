//! `paddock log --list` through the real binary: date, directory, first
//! message, turns, stop reason and cost, newest first, `--json`; read from each session's
//! index, which is rebuilt from the log when it is missing or does not match the log.

use crate::agent_common::{Project, text};
use serde_json::Value;

fn index_path(project: &Project, id: &str) -> std::path::PathBuf {
    project
        .home
        .path()
        .join("sessions")
        .join(id)
        .join("index.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_each_session_newest_first_and_never_believes_a_stale_index() {
    let project = Project::warm(&[("README.md", "# demo\n")]);
    for task in ["first task", "second task\nwith a second line"] {
        let run = project.paddock(&["run", "--demo", task]).await;
        assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    }
    let ids = project.sessions();
    assert_eq!(ids.len(), 2);
    let listed = project.paddock(&["log", "--list"]).await;
    let listing = String::from_utf8_lossy(&listed.stdout).into_owned();
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 3, "{listing}");
    assert!(lines[0].contains("started (UTC)") && lines[0].contains("first message"));
    assert!(lines[1].contains("second task…"), "newest first: {listing}");
    assert!(lines[2].contains("first task"), "{listing}");
    for line in &lines[1..] {
        assert!(
            line.contains("completed") && line.contains("$0.0000"),
            "{line}"
        );
    }

    let json = project.paddock(&["log", "--list", "--json"]).await;
    let rows: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one object per line"))
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["first_message"], "first task");
    assert_eq!(rows[1]["turns"], 1);
    assert_eq!(rows[1]["stop"], "completed");
    let cwd = project.dir.path().canonicalize().unwrap();
    assert_eq!(
        std::path::Path::new(rows[1]["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        cwd
    );
    assert!(rows[0]["started_ms"].as_u64() >= rows[1]["started_ms"].as_u64());

    // A missing index is rebuilt from the log, and written again.
    let first = rows[1]["session"].as_str().unwrap().to_string();
    std::fs::remove_file(index_path(&project, &first)).unwrap();
    let again = project.paddock(&["log", "--list", "--json"]).await;
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&json.stdout)
    );
    assert!(index_path(&project, &first).is_file());

    // An index that does not describe the log as it is (a planted or stale one) is not believed.
    let mut lie = rows[1].clone();
    lie["first_message"] = "rm -rf / said the index".into();
    lie["log_len"] = 7.into();
    std::fs::write(index_path(&project, &first), lie.to_string()).unwrap();
    let checked = text(&project.paddock(&["log", "--list"]).await);
    assert!(
        !checked.contains("said the index") && checked.contains("first task"),
        "{checked}"
    );
}
