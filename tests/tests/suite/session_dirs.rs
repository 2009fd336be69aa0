//! Session directories a harness can trust, through the real binary: `log --list` shows every
//! directory under `sessions/`, a start killed at any point included (never skipped silently):
//! one without a readable log is listed as `no log`, with who last took its lock.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::agent_common::Project;

fn listed(project: &Project) -> Vec<Value> {
    let out = project
        .command(&["log", "--list", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one object per line"))
        .collect()
}

#[test]
fn a_start_killed_before_its_log_is_listed_never_skipped() {
    let project = Project::new(&[("README.md", "# demo\n")]);
    // What a start killed between taking its lock and writing session/start leaves.
    let half = project.home.path().join("sessions/secs-deadbeef");
    std::fs::create_dir_all(&half).unwrap();
    std::fs::write(
        half.join("lock"),
        "4242\npaddock run fix the tests\n1796116404000\n",
    )
    .unwrap();
    // And real starts, each killed at a random moment (some before, some after the log).
    let mut seed = std::process::id() as u64;
    for _ in 0..12 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((seed >> 33) % 40_000);
        let mut child = project
            .command(&["run", "--demo"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
    }
    let rows = listed(&project);
    let mut listed_ids: Vec<String> = rows
        .iter()
        .map(|r| r["session"].as_str().unwrap().to_string())
        .collect();
    listed_ids.sort();
    assert_eq!(listed_ids, project.sessions(), "every directory is listed");
    let half_row = rows
        .iter()
        .find(|r| r["session"] == "secs-deadbeef")
        .unwrap();
    let why = half_row["no_log"].as_str().unwrap();
    assert!(
        why.contains("no log") && why.contains("pid 4242: `paddock run fix the tests`"),
        "{why}"
    );
    for row in &rows {
        assert!(
            row["no_log"].is_string() || row["turns"].is_u64(),
            "a row is a session or says why it has no log: {row}"
        );
    }
    // The text list shows it too.
    let text = project.command(&["log", "--list"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().find(|l| l.contains("secs-deadbeef")).unwrap();
    assert!(line.contains("no log"), "{line}");
}

#[test]
fn commands_that_start_no_session_leave_no_session_directory() {
    let project = Project::new(&[("README.md", "# demo\n")]);
    // `coding` grants its file tools the spill directory, which a session's start makes.
    let out = project
        .command(&["tool", "list", "--preset", "coding"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(project.sessions().is_empty(), "{:?}", project.sessions());

    // A start refused for a key that is not set.
    std::fs::write(
        project.dir.path().join("keyed.toml"),
        "extends = \"coding\"\n\n[model]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         api_key_env = \"PADDOCK_TEST_SURELY_UNSET_KEY\"\n",
    )
    .unwrap();
    let out = project
        .command(&["run", "--preset", "keyed.toml", "hi"])
        .env_remove("PADDOCK_TEST_SURELY_UNSET_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PADDOCK_TEST_SURELY_UNSET_KEY"),
        "{out:?}"
    );
    assert!(project.sessions().is_empty(), "{:?}", project.sessions());
    assert!(listed(&project).is_empty(), "no `no log` rows");

    // A real start still has its directory, listed with its log.
    let out = project
        .command(&["run", "--demo", "--preset", "coding", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(project.sessions().len(), 1);
    let rows = listed(&project);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(!rows[0].to_string().contains("no log"), "{rows:?}");
}
