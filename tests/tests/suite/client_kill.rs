//! L7 for sessions no one resumes: a `tool call` killed (SIGKILL) while its write's temporary
//! file is in the project. The next session in the same data directory removes that file and
//! records the call, while a `tool call` that is still running keeps its own file.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, text};
use paddock_tests::plugin_dir;

/// A preset (a file outside the project) that loads the hostile plugin with the project
/// mounted read-write, asking nothing.
fn preset(project: &Project) -> String {
    let path = project.home.path().join("half.toml");
    std::fs::write(
        &path,
        format!(
            "[plugins.attacks]\nsource = {:?}\nmounts = [{{ host = \"{}\", guest = \
             \"/workspace\", mode = \"rw\" }}]\n[approval]\nlow = \"allow\"\nmedium = \
             \"allow\"\nhigh = \"allow\"\n",
            plugin_dir().join("hostile_attacks.wasm").display(),
            project.dir.path().display()
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// The temporary files of paddock's writes in `dir`.
fn temps(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".paddock-") && n.ends_with(".tmp"))
        .collect();
    found.sort();
    found
}

/// Starts `tool call half_write` on `file`, stalled for a minute after its temporary file is
/// written, and waits until that file is there.
fn stalled_write(project: &Project, preset: &str, file: &str) -> Child {
    let args =
        format!(r#"{{"path": "/workspace/{file}", "content": "half of it", "stall_ms": 60000}}"#);
    let before = temps(project.dir.path()).len();
    let said = project.home.path().join(format!("{file}.stderr"));
    let mut child = project
        .command(&["tool", "call", "half_write", &args, "--preset", preset])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap())
        .spawn()
        .expect("start paddock");
    let until = Instant::now() + Duration::from_secs(60);
    while temps(project.dir.path()).len() == before {
        assert!(
            Instant::now() < until,
            "no temporary file appeared for {file} in a minute"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "tool call ended before it wrote its temporary file: {status}: {}",
                std::fs::read_to_string(&said).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Another session in the same data directory: a `tool call` that only reads.
fn read_notes(project: &Project, preset: &str) -> std::process::Output {
    let args = r#"{"path": "/workspace/notes.txt"}"#;
    project
        .command(&["tool", "call", "read_path", args, "--preset", preset])
        .output()
        .unwrap()
}

fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_killed_tool_calls_temporary_file_is_removed_by_the_next_session_and_a_live_ones_is_kept() {
    let project = Project::new(&[("notes.txt", "notes")]);
    let preset = preset(&project);
    let killed = stalled_write(&project, &preset, "a.txt");
    let live = stalled_write(&project, &preset, "b.txt");
    let [killed_temp, live_temp]: [String; 2] = temps(project.dir.path()).try_into().unwrap();
    assert!(killed_temp.starts_with(".a.txt."), "{killed_temp}");
    assert!(live_temp.starts_with(".b.txt."), "{live_temp}");
    kill(killed);

    // Another session in the same data directory, while `live` still writes.
    let next = read_notes(&project, &preset);
    assert!(next.status.success(), "{}", text(&next));
    assert_eq!(
        temps(project.dir.path()),
        vec![live_temp.clone()],
        "the killed call's file goes, the running one's stays: {}",
        text(&next)
    );
    let said = String::from_utf8_lossy(&next.stderr);
    assert!(
        said.contains(
            "removed the temporary file its interrupted write left beside /workspace/a.txt"
        ),
        "the person is told: {said}"
    );

    // The killed session's log answers its call; the live one's does not yet.
    let logs: Vec<String> = project
        .sessions()
        .iter()
        .map(|id| std::fs::read_to_string(project.log_path(id)).unwrap())
        .collect();
    let answered: Vec<&String> = logs
        .iter()
        .filter(|log| log.contains("OUTCOME_UNKNOWN"))
        .collect();
    assert_eq!(answered.len(), 1, "one log answered: {logs:#?}");
    assert!(answered[0].contains("a.txt"), "{}", answered[0]);

    // Once the live one is killed too, the next session removes its file as well.
    kill(live);
    let last = read_notes(&project, &preset);
    assert!(last.status.success(), "{}", text(&last));
    assert_eq!(
        temps(project.dir.path()),
        Vec::<String>::new(),
        "{}",
        text(&last)
    );
    assert!(!project.dir.path().join("a.txt").exists());
    assert!(!project.dir.path().join("b.txt").exists());
    assert_eq!(
        std::fs::read_dir(project.home.path().join("clients-open"))
            .unwrap()
            .count(),
        1,
        "only the last session's own mark is left"
    );
}
