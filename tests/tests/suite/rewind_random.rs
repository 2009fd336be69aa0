//! The randomized rewind harness through the real binary: one session per seed runs turns of
//! random edits made by the model's tools (`write_file`, `edit_file`), a confined program
//! (`run_command`: `mv`, `cp`, `chmod`, `ln`) and the shell (binary files,
//! nested directories, deletes, renames, modes, symlinks, a file turned into a directory),
//! one `paddock run` or `paddock resume` process per turn, some of them killed (SIGKILL) once
//! the turn's edits are done and before it ends. Some of the shell's edits are made in a
//! directory outside the project its preset lets programs write (`grants.exec.write`). A copy
//! of the workspace and of that directory is taken as each turn begins; then `paddock rewind
//! --to N --code` goes to every turn in random order and each result is compared byte for byte
//! with those copies. The `.git` directory, changed by the
//! user between turns, must never be touched.
//!
//! By default a few short sessions run (CI); `PADDOCK_REWINDS=N` runs at least N rewinds
//! (`cargo xtask rewinds N`), and `REWIND_SEED=S` replays the session of seed S alone. The
//! failing seed is in every assertion message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use paddock_test_tree::{Entry, Rng, copy, differences};
use paddock_tests::scripted::{Fault, Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

use crate::agent_common::{Project, text};

/// Turns per session; every turn is rewound to once.
const TURNS: usize = 8;

const DIRS: &[&str] = &["", "d0", "d1", "d0/e0", "d1/e1/f"];

fn some_path(rng: &mut Rng) -> String {
    let dir = DIRS[rng.below(DIRS.len())];
    let name = format!("n{}", rng.below(6));
    if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// Any path the edits make: a file's, a directory's or a link's.
fn any_path(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => DIRS[1 + rng.below(DIRS.len() - 1)].to_string(),
        1 => format!("l{}", rng.below(3)),
        _ => some_path(rng),
    }
}

fn text_content(rng: &mut Rng) -> String {
    let words = ["alpha", "beta", "ünïcode", "\t", "\n", "x", "line\n", "{}"];
    (0..rng.below(30))
        .map(|_| words[rng.below(words.len())])
        .collect()
}

fn call(id: &str, tool: &str, args: Value) -> ScriptCall {
    ScriptCall::new(id, tool, &args.to_string(), &[])
}

fn shell(id: &str, command: String) -> ScriptCall {
    call(id, "shell", json!({ "command": command }))
}

fn program(id: &str, program: &str, args: &[&str]) -> ScriptCall {
    call(
        id,
        "run_command",
        json!({ "program": program, "args": args }),
    )
}

/// One model response's calls: a random edit (sometimes two steps, as a write then an edit);
/// `grant` is the directory outside the project the shell may also write.
fn edit_steps(rng: &mut Rng, id: &str, grant: &str) -> Vec<Vec<ScriptCall>> {
    let path = some_path(rng);
    let other = any_path(rng);
    let one = |c| vec![vec![c]];
    match rng.below(14) {
        0 | 1 => one(call(
            id,
            "write_file",
            json!({"path": path, "content": text_content(rng)}),
        )),
        2 => {
            let new = text_content(rng);
            vec![
                vec![call(
                    &format!("{id}w"),
                    "write_file",
                    json!({"path": path, "content": "head\nthe middle\ntail\n"}),
                )],
                vec![call(
                    id,
                    "edit_file",
                    json!({"path": path, "old_string": "the middle", "new_string": new}),
                )],
            ]
        }
        3 => {
            // Binary bytes, through the shell's printf, in a nested directory.
            let bytes: String = (0..1 + rng.below(40))
                .map(|_| format!("\\{:03o}", rng.next_u64() as u8))
                .collect();
            let dir = Path::new(&path).parent().unwrap_or(Path::new(""));
            let dir = if dir.as_os_str().is_empty() {
                ".".to_string()
            } else {
                dir.display().to_string()
            };
            one(shell(
                id,
                format!("mkdir -p {dir} && printf '{bytes}' > {path}; true"),
            ))
        }
        // `find -delete`, not `rm`: the preset leaves `rm` to ask, and no one answers here.
        4 => one(shell(id, format!("find {other} -delete; true"))),
        5 => one(program(id, "mv", &[&other, &path])),
        6 => {
            let mode = ["644", "755", "600", "700", "444"][rng.below(5)];
            one(program(id, "chmod", &[mode, &path]))
        }
        7 => {
            let mode = ["755", "700", "750"][rng.below(3)];
            let dir = DIRS[1 + rng.below(DIRS.len() - 1)];
            one(shell(id, format!("chmod {mode} {dir}; true")))
        }
        8 => {
            let target = ["n0", "../n1", "/etc/passwd", "missing/x", "d0"][rng.below(5)];
            one(program(id, "ln", &["-s", target, &other]))
        }
        9 => one(shell(
            id,
            format!(
                "mkdir -p {path}.d/x/y && printf 'deep %s' {} > {path}.d/x/y/z; true",
                rng.below(1000)
            ),
        )),
        10 => one(program(id, "cp", &["-r", &other, &path])),
        12 | 13 => {
            // In the grant, in a subshell (the session's shell keeps its directory).
            let edit = match rng.below(5) {
                0 => format!("find {other} -delete"),
                1 => format!("mv {other} {path}"),
                2 => format!("chmod {} {path}", ["644", "755", "600"][rng.below(3)]),
                3 => format!("ln -s {} {other}", ["n0", "../n1", "d0"][rng.below(3)]),
                _ => format!(
                    "mkdir -p {path}.d/x && printf 'g\\000%s' {} > {path}.d/x/z && printf '%s' {} > {path}",
                    rng.below(1000),
                    rng.below(1000)
                ),
            };
            one(shell(id, format!("(cd {grant} && {edit}); true")))
        }
        _ => one(shell(
            id,
            format!(
                "find {path} -maxdepth 0 ! -type d -delete; mkdir -p {path} && printf 'was a file' > {path}/in; true"
            ),
        )),
    }
}

/// What each turn does: its responses, and whether its process is killed once they ran.
struct Plan {
    steps: Vec<Step>,
    /// Per turn: the steps it takes, and whether it is killed.
    turns: Vec<(usize, bool)>,
}

fn plan(rng: &mut Rng, turns: usize, grant: &str) -> Plan {
    let mut steps = Vec::new();
    let mut per_turn = Vec::new();
    // Every session has at least one turn killed, so every one resumes.
    let forced = rng.below(turns);
    for turn in 0..turns {
        let before = steps.len();
        for k in 0..1 + rng.below(4) {
            for calls in edit_steps(rng, &format!("t{turn}c{k}"), grant) {
                steps.push(Step::Reply(Turn::calls(calls)));
            }
        }
        let killed = turn == forced || rng.below(4) == 0;
        let end = Turn::text(&["Turn ", "done."]);
        steps.push(Step::Reply(if killed {
            end.with_fault(Fault::StallAfter {
                frames: 1,
                ms: 120_000,
            })
        } else {
            end
        }));
        per_turn.push((steps.len() - before, killed));
    }
    Plan {
        steps,
        turns: per_turn,
    }
}

/// The workspace without the jail's placeholders: a protected path a confined program could
/// create (`.vscode`, `lefthook.yml`, ...) is held by an empty entry of paddock's while the
/// program runs (a directory mode 0500, a file mode 0400), and a paddock killed meanwhile
/// leaves them for the next run to remove. No edit here makes such a name.
fn workspace(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let all = copy(root);
    let empty_dir = |p: &Path| !all.keys().any(|k| k.parent() == Some(p));
    let placeholder = |p: &Path, e: &Entry| {
        let ours = p.to_str().is_some_and(|n| {
            n.starts_with(['n', 'd', 'l']) && n[1..].starts_with(|c: char| c.is_ascii_digit())
        });
        let held = match e {
            Entry::Dir(0o500) => empty_dir(p),
            Entry::File(0o400, bytes) => bytes.is_empty(),
            _ => false,
        };
        p.parent() == Some(Path::new("")) && held && !ours
    };
    all.iter()
        .filter(|(p, e)| !placeholder(p, e))
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(seed: u64, turn: usize, child: Child) {
    let out = child.wait_with_output().expect("wait for paddock");
    assert_eq!(
        out.status.code(),
        Some(0),
        "seed {seed}: turn {} failed: {}",
        turn + 1,
        text(&out)
    );
}

/// One session of `turns` turns, then a rewind to each. Returns the rewinds done, the turns
/// killed and how many states the grant directory went through.
async fn session(seed: u64, turns: usize) -> (usize, usize, usize) {
    let mut rng = Rng::new(seed);
    let cache = tempfile::tempdir().unwrap();
    let grant = cache.path().canonicalize().unwrap();
    std::fs::write(grant.join("n0"), "in the grant\n").unwrap();
    let plan = plan(&mut rng, turns, &grant.display().to_string());
    let total = plan.steps.len();
    let server = ScriptedServer::start(Script { steps: plan.steps })
        .await
        .expect("scripted server");
    let url = server.openai_base_url();
    let project = Project::warm(&[("n0", "first\n")]);
    // The coding preset, `git push` the only word asked (`rm` is not allowed unasked, so deletes
    // are `find -delete`); high-risk tools run as the model says.
    let preset = project.home.path().join("rewind-random.toml");
    std::fs::write(
        &preset,
        format!(
            "extends = \"coding\"\n\
             [plugins.shell.grants.exec]\nask = [\"git push *\"]\nwrite = [{:?}]\n\
             [approval]\nhigh = \"allow\"\n",
            grant.display().to_string()
        ),
    )
    .unwrap();
    let preset = preset.display().to_string();
    let root = project.dir.path().to_path_buf();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();

    let mut taken = Vec::new();
    let mut id = String::new();
    let mut consumed = 0;
    for (turn, &(steps, killed)) in plan.turns.iter().enumerate() {
        taken.push((workspace(&root), workspace(&grant)));
        let message = format!("turn {}", turn + 1);
        let args: Vec<&str> = if turn == 0 {
            vec![
                "run",
                &message,
                "--preset",
                &preset,
                "--base-url",
                &url,
                "--model",
                "scripted",
            ]
        } else {
            vec!["resume", &id, &message]
        };
        let mut cmd = project.command(&args);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("start paddock");
        consumed += steps;
        if killed {
            wait_for("the turn's last model request", || {
                server.remaining_steps() == total - consumed
            });
            child.kill().expect("SIGKILL paddock");
            child.wait().expect("reap paddock");
        } else {
            tokio::task::spawn_blocking(move || finish(seed, turn, child))
                .await
                .expect("join");
        }
        if turn == 0 {
            id = project.only_session();
        }
        // The user changes the protected git directory between turns.
        std::fs::write(
            root.join(".git/hooks/post-checkout"),
            format!("turn {turn}"),
        )
        .unwrap();
    }
    assert_eq!(
        server.remaining_steps(),
        0,
        "seed {seed}: the script was not played out"
    );
    // Every edit ran: one the preset refused would leave turns that differ by nothing.
    let denied: Vec<String> = project
        .events(&id)
        .iter()
        .filter(|e| e["type"] == "tool/result" && e["data"]["code"] == "DENIED")
        .map(|e| e["data"]["content"].to_string())
        .collect();
    assert!(denied.is_empty(), "seed {seed}: edits refused: {denied:?}");

    let states: std::collections::BTreeSet<String> =
        taken.iter().map(|t| format!("{t:?}")).collect();
    // Some turns' edits all miss (a `mv` of nothing, an edit of a directory); not all.
    assert!(
        states.len() > 2,
        "seed {seed}: the edits changed almost nothing ({} states in {turns} turns)",
        states.len()
    );

    let mut order: Vec<usize> = (0..turns).collect();
    rng.shuffle(&mut order);
    for (n, &turn) in order.iter().enumerate() {
        let to = (turn + 1).to_string();
        let out = project
            .paddock(&["rewind", &id, "--to", &to, "--code"])
            .await;
        let said = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}: rewind {n} to turn {to}: {said}"
        );
        assert!(
            !said.contains("kept"),
            "seed {seed}: rewind {n} to turn {to} kept something: {said}"
        );
        for (what, got, want) in [
            ("workspace", workspace(&root), &taken[turn].0),
            ("grant", workspace(&grant), &taken[turn].1),
        ] {
            let differ = differences(&got, want);
            assert!(
                differ.is_empty(),
                "seed {seed}: rewind {n} to turn {to}: the {what} differs at {differ:?}: {said}"
            );
        }
        let hook = std::fs::read_to_string(root.join(".git/hooks/post-checkout")).unwrap();
        assert_eq!(
            hook,
            format!("turn {}", turns - 1),
            "seed {seed}: a rewind touched .git"
        );
    }
    let killed = plan.turns.iter().filter(|(_, k)| *k).count();
    let grant_states: std::collections::BTreeSet<String> =
        taken.iter().map(|t| format!("{:?}", t.1)).collect();
    (turns, killed, grant_states.len())
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("REWIND_SEED") {
        return vec![seed.parse().expect("REWIND_SEED is a number")];
    }
    let rewinds: usize = std::env::var("PADDOCK_REWINDS")
        .map(|n| n.parse().expect("PADDOCK_REWINDS is a number of rewinds"))
        .unwrap_or(2 * TURNS);
    (1..=rewinds.div_ceil(TURNS) as u64).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_edits_by_tools_programs_and_the_shell_rewind_exactly_across_kills() {
    let seeds = seeds();
    let (mut rewinds, mut killed, mut grant_states) = (0, 0, 0);
    for &seed in &seeds {
        let (r, k, g) = session(seed, TURNS).await;
        rewinds += r;
        killed += k;
        grant_states += g;
    }
    eprintln!(
        "REWINDS sessions={} rewinds={rewinds} killed_turns={killed} grant_states={grant_states} \
         differences=0",
        seeds.len()
    );
    assert_eq!(rewinds, seeds.len() * TURNS);
    // A seed replayed alone may leave the grant as it was; the runs of many may not.
    assert!(
        std::env::var("REWIND_SEED").is_ok() || grant_states > seeds.len(),
        "the shell's edits never changed the grant directory"
    );
}
