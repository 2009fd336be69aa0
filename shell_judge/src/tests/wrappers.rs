//! Commands run through other programs, found recursively and recorded in `via`.

use super::*;

/// The first command with `program`, or a panic naming the source.
fn found(source: &str, program: &str) -> Command {
    let analysis = run(source);
    match analysis.commands.iter().find(|c| c.program == program) {
        Some(c) => c.clone(),
        None => panic!("{source:?} should run {program}: {analysis:#?}"),
    }
}

#[test]
fn wrapped_commands_are_found_through_their_wrappers() {
    let cases: &[(&str, &[&str])] = &[
        ("sudo rm x", &["sudo"]),
        ("sudo -u root rm x", &["sudo"]),
        ("sudo -E -u root -- rm x", &["sudo"]),
        ("sudo --user=root rm x", &["sudo"]),
        ("doas -u root rm x", &["doas"]),
        ("env rm x", &["env"]),
        ("env -i FOO=1 rm x", &["env"]),
        ("env -u HOME -C /tmp rm x", &["env"]),
        ("env -S 'rm x'", &["env"]),
        ("env --split-string='rm -f' x", &["env"]),
        ("timeout 5 rm x", &["timeout"]),
        ("timeout -s KILL -k 1 5 rm x", &["timeout"]),
        ("timeout --signal=KILL 5s rm x", &["timeout"]),
        ("nice -n 5 rm x", &["nice"]),
        ("nice -5 rm x", &["nice"]),
        ("nohup rm x &", &["nohup"]),
        ("setsid -f rm x", &["setsid"]),
        ("stdbuf -oL -e 0 rm x", &["stdbuf"]),
        ("ionice -c 3 rm x", &["ionice"]),
        ("taskset -c 0 rm x", &["taskset"]),
        ("taskset 0x1 rm x", &["taskset"]),
        ("chrt -f 10 rm x", &["chrt"]),
        ("command rm x", &["command"]),
        ("builtin eval 'rm x'", &["builtin", "eval"]),
        ("exec rm x", &["exec"]),
        ("exec -a name -cl rm x", &["exec"]),
        ("/usr/bin/time -f %e rm x", &["time"]),
        ("ls | xargs rm", &["xargs"]),
        ("xargs -0 -n 1 -P 4 rm < list", &["xargs"]),
        ("xargs -I{} rm {} < list", &["xargs"]),
        ("xargs -I {} rm {} < list", &["xargs"]),
        ("find . -name '*.o' -exec rm {} \\;", &["find -exec"]),
        ("find . -delete -exec rm {} +", &["find -exec"]),
        ("find . -execdir ls {} \\; -ok rm {} \\;", &["find -exec"]),
        ("flock /tmp/l rm x", &["flock"]),
        ("flock -w 5 /tmp/l rm x", &["flock"]),
        ("flock /tmp/l -c 'rm x'", &["flock"]),
        ("watch rm x", &["watch"]),
        ("watch -n 1 'ls; rm x'", &["watch"]),
        ("watch -x rm x", &["watch"]),
        ("bash -c 'rm x'", &["bash -c"]),
        ("sh -c \"ls; rm x\"", &["sh -c"]),
        ("bash -lc 'rm x'", &["bash -c"]),
        ("bash -ec 'rm x'", &["bash -c"]),
        ("bash -x -c 'rm x' name arg", &["bash -c"]),
        ("dash -c 'rm x'", &["dash -c"]),
        ("zsh -c 'rm x'", &["zsh -c"]),
        ("/bin/ksh -c 'rm x'", &["ksh -c"]),
        ("busybox sh -c 'rm x'", &["busybox", "sh -c"]),
        ("busybox rm x", &["busybox"]),
        ("bash -c \"bash -c 'rm x'\"", &["bash -c", "bash -c"]),
        ("su -c 'rm x' root", &["su -c"]),
        ("su root -c 'rm x'", &["su -c"]),
        ("script -qc 'rm x' /dev/null", &["script -c"]),
        ("script -q -c 'rm x' /dev/null", &["script -c"]),
        ("parallel rm ::: a b", &["parallel"]),
        ("parallel -j 4 'rm {}' ::: a b", &["parallel"]),
        ("trap 'rm x' EXIT", &["trap"]),
        ("trap -- 'rm x' EXIT INT", &["trap"]),
        (
            "timeout -s KILL 5 sudo env rm x",
            &["timeout", "sudo", "env"],
        ),
        ("sudo sh -c 'xargs rm < list'", &["sudo", "sh -c", "xargs"]),
    ];
    for (source, via) in cases {
        let rm = found(source, "rm");
        assert_eq!(rm.via, strings(via), "{source:?}: {rm:#?}");
    }
}

#[test]
fn a_wrapper_with_nothing_to_run_is_a_command_itself() {
    assert_eq!(programs("command -v git"), ["command"]);
    assert_eq!(programs("command -V rm"), ["command"]);
    assert_eq!(programs("sudo -v"), ["sudo"]);
    assert_eq!(programs("trap - EXIT"), ["trap"]);
    assert_eq!(programs("trap -p"), ["trap"]);
    assert_eq!(programs("exec 3>&-"), ["exec"]);
}

#[test]
fn find_is_a_command_as_well_as_a_wrapper() {
    assert_eq!(programs("find . -delete -exec rm {} +"), ["find", "rm"]);
    assert_eq!(programs("find . -name x"), ["find"]);
}

#[test]
fn xargs_and_find_mark_the_arguments_they_add() {
    let rm = found("xargs rm -f", "rm");
    assert!(rm.more_args);
    let rm = found("xargs -I% rm %", "rm");
    assert!(!rm.more_args);
    assert_eq!(rm.dynamic, [1]);
    let rm = found("find . -exec rm -f {} \\;", "rm");
    assert_eq!(rm.argv, strings(&["rm", "-f", "{}"]));
    assert_eq!(rm.dynamic, [2]);
    assert!(!rm.more_args);
    assert!(found("find . -exec rm {} +", "rm").more_args);
    assert_eq!(programs("xargs < list"), ["echo"]);
}

#[test]
fn wrappers_keep_the_inner_command_line() {
    let rm = found("sudo -u root rm -rf /tmp/x", "rm");
    assert_eq!(rm.argv, strings(&["rm", "-rf", "/tmp/x"]));
    assert_eq!(rm.text, "sudo -u root rm -rf /tmp/x");
    let rm = found("bash -c 'ls; rm -f x'", "rm");
    assert_eq!(rm.argv, strings(&["rm", "-f", "x"]));
    assert_eq!(rm.text, "rm -f x");
}
