//! The crate's behaviour, grouped by what it must find: commands in every construct, never
//! text taken for a command, wrappers, what stays unresolved, writes, and the verdicts.

use crate::*;

mod finds_commands;
mod never_text;
mod no_panics;
mod unresolved;
mod verdicts;
mod wrappers;
mod writes;

fn run(source: &str) -> Analysis {
    analyse(source, &Session::default())
}

/// The programs `source` runs, in order.
fn programs(source: &str) -> Vec<String> {
    run(source)
        .commands
        .into_iter()
        .map(|c| c.program)
        .collect()
}

/// Asserts that `source` runs `program` and nothing is unresolved.
#[track_caller]
fn assert_runs(source: &str, program: &str) {
    let analysis = run(source);
    assert!(
        analysis.commands.iter().any(|c| c.program == program),
        "{source:?} should run {program}: {analysis:#?}"
    );
}

#[track_caller]
fn assert_unresolved(source: &str) {
    let analysis = run(source);
    assert!(
        !analysis.unresolved.is_empty(),
        "{source:?} should have something unresolved: {analysis:#?}"
    );
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The rules of the brief: harmless programs allowed, `git push` and `rm` asked.
fn preset() -> Rules {
    let allow = strings(&[
        "ls *",
        "cat *",
        "grep *",
        "echo *",
        "cargo test *",
        "git status *",
        "git log *",
        "wc *",
        "head *",
        "cd *",
        "export *",
        "pwd",
        "true",
        "false",
        "test *",
        "[ *",
        "printf *",
        "sort *",
    ]);
    let ask = strings(&["git push *", "rm *"]);
    match Rules::new(&allow, &ask, &[]) {
        Ok(rules) => rules,
        Err(e) => panic!("{e}"),
    }
}

fn verdict(source: &str) -> Verdict {
    judge(&run(source), &preset())
}
