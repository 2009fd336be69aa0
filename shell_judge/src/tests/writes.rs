//! Redirections that write, with their targets.

use super::*;

fn writes(source: &str) -> Vec<(Option<String>, bool)> {
    run(source)
        .writes
        .into_iter()
        .map(|w| (w.target, w.append))
        .collect()
}

fn target(t: &str, append: bool) -> (Option<String>, bool) {
    (Some(t.to_owned()), append)
}

#[test]
fn output_redirections_are_writes_with_their_targets() {
    assert_eq!(writes("echo hi > out.txt"), [target("out.txt", false)]);
    assert_eq!(writes("echo hi >> 'my log'"), [target("my log", true)]);
    assert_eq!(writes("make 2>>log"), [target("log", true)]);
    assert_eq!(writes("make &> f"), [target("f", false)]);
    assert_eq!(writes("make &>> f"), [target("f", true)]);
    assert_eq!(writes("echo >| f"), [target("f", false)]);
    assert_eq!(writes("cat <> f"), [target("f", false)]);
    assert_eq!(writes("echo >&f"), [target("f", false)]);
    assert_eq!(writes("echo x > /dev/null"), [target("/dev/null", false)]);
    assert_eq!(writes("{ echo a; } > f"), [target("f", false)]);
    assert_eq!(writes("echo $(echo a > inner)"), [target("inner", false)]);
    assert_eq!(writes("bash -c 'echo a > inner'"), [target("inner", false)]);
}

#[test]
fn dynamic_targets_have_no_target() {
    assert_eq!(writes("echo > \"$f\""), [(None, false)]);
    assert_eq!(writes("echo >> $(date)"), [(None, true)]);
    assert_eq!(writes("echo > *.txt"), [(None, false)]);
}

#[test]
fn descriptor_duplications_and_reads_are_not_writes() {
    for source in [
        "echo >&2",
        "make 2>&1",
        "exec 3>&-",
        "cat < f",
        "cat <<< x",
        "echo 1>&2-",
    ] {
        assert_eq!(writes(source), [], "{source:?}");
    }
}
