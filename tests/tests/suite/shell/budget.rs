//! The output budget: a command that prints megabytes answers within the budget, its head and
//! tail kept, with a note naming the file that holds every byte it printed.

use super::{ALLOW_ALL, Answer, Scene};

/// Lines `seq` prints here: about 15 MB.
const LINES: u32 = 2_000_000;

fn seq(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

/// The file the answer's note names.
fn named_file(answer: &Answer) -> String {
    let notes = answer.notes();
    let after = notes
        .split(" are in ")
        .nth(1)
        .unwrap_or_else(|| panic!("the note names a file: {:?}", notes));
    after
        .split(':')
        .next()
        .expect("the file's name ends at the colon")
        .to_string()
}

/// The head, the tail, and the budget, whatever file holds the whole.
fn assert_cut_within_budget(answer: &Answer) {
    assert_eq!(answer.status(), Some(0), "{}", answer.state());
    assert!(
        answer.content.len() < 256 << 10,
        "the answer stays within the budget: {} bytes",
        answer.content.len()
    );
    assert!(
        answer.output().starts_with("1\n2\n3\n"),
        "the head is kept: {:?}",
        &answer.output()[..answer.output().len().min(200)]
    );
    assert!(
        answer
            .output()
            .ends_with(&format!("\n{}\n{LINES}\n", LINES - 1)),
        "the tail is kept: {:?}",
        &answer.output()[answer.output().len().saturating_sub(200)..]
    );
    assert!(
        answer.notes().contains("bytes in the middle were cut"),
        "{}",
        answer.notes()
    );
}

#[test]
fn a_long_output_keeps_head_and_tail_and_the_spill_file_holds_all_of_it() {
    let scene = Scene::with(
        &[],
        "rw",
        ALLOW_ALL,
        "[plugins.fs]\nsource = \"builtin:fs\"\nread_spill = true\n\
         mounts = [{ host = {root}, guest = \"/workspace\", mode = \"ro\" }]\n",
    );
    let answers = scene.shell(&[&format!("seq 1 {LINES}")]);
    assert_cut_within_budget(&answers[0]);
    let named = named_file(&answers[0]);
    let name = named
        .strip_prefix("/spill/")
        .unwrap_or_else(|| panic!("the file is in the session's /spill: {named}"));
    let host = scene
        .project
        .home
        .path()
        .join("sessions")
        .join(scene.project.only_session())
        .join("spill")
        .join(name);
    let whole =
        std::fs::read(&host).unwrap_or_else(|e| panic!("{} (named {named}): {e}", host.display()));
    assert_eq!(whole.len(), seq(LINES).len(), "the file holds every byte");
    assert!(
        whole == seq(LINES).as_bytes(),
        "the file holds exactly what seq printed"
    );
}

#[test]
fn without_a_spill_directory_the_shells_tmpdir_holds_all_of_it() {
    let scene = Scene::new(&[]);
    let answers = scene.shell(&[
        &format!("seq 1 {LINES}"),
        "for f in \"$TMPDIR\"/*.log; do printf '%s %s\\n' \"$(wc -c < \"$f\")\" \"$f\"; done",
    ]);
    assert_cut_within_budget(&answers[0]);
    let named = named_file(&answers[0]);
    let expected = format!("{} {named}", seq(LINES).len());
    assert!(
        answers[1].output().lines().any(|l| l == expected),
        "the named file, read back with the shell, holds every byte ({expected}): {:?}",
        answers[1].content
    );
}
