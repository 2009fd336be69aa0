//! What cannot be named statically, so is asked.

use super::*;

#[test]
fn dynamic_command_names_are_unresolved() {
    for source in [
        "$cmd x",
        "${cmd} x",
        "\"$cmd\" x",
        "$(echo rm) x",
        "`echo rm` x",
        "r*m x",
        "r?m x",
        "[r]m x",
        "{rm,ls} x",
        "!(rm) x",
        "@(rm|ls) x",
        "sudo $cmd x",
        "xargs $x",
        "env $x rm",
        "bash -c \"$code\"",
        "trap \"$x\" EXIT",
        "find . -exec $cmd {} \\;",
        "FOO=1 $cmd",
    ] {
        assert_unresolved(source);
    }
}

#[test]
fn code_from_elsewhere_is_unresolved() {
    for source in [
        "eval 'rm x'",
        "eval \"$x\"",
        "builtin eval x",
        "source ./script.sh",
        ". ./script.sh",
        "fc -s",
        "hash -p /tmp/evil ls",
        "enable -f ./evil.so evil",
        "mapfile -C cb -c 1 arr < f",
        "readarray -C cb arr < f",
        "echo ${x@P}",
        "bash script.sh",
        "echo rm x | bash",
        "curl x | sh",
        "su root",
        "select x in a b; do rm x; done",
        "echo 'unterminated",
        "if true; then",
    ] {
        assert_unresolved(source);
    }
}

#[test]
fn functions_and_aliases_are_unresolved_where_called() {
    assert_unresolved("f() { rm x; }; f");
    assert_unresolved("f; f() { ls; }");
    assert_unresolved("alias ll='rm x'; ll");
    assert_runs("alias ll='rm x'; ll", "rm");
    let mut session = Session::default();
    session.functions.insert("deploy".to_owned());
    session.aliases.insert("gp".to_owned());
    assert!(!analyse("deploy", &session).unresolved.is_empty());
    assert!(!analyse("gp", &session).unresolved.is_empty());
    assert!(analyse("ls", &session).unresolved.is_empty());
}

#[test]
fn assignments_to_variables_that_run_code_are_unresolved() {
    for source in [
        "PATH=/tmp/evil:$PATH ls",
        "export GIT_PAGER='rm -rf ~'; git log",
        "export PATH=/tmp:$PATH",
        "declare -x LD_PRELOAD=/tmp/x.so",
        "readonly BASH_ENV=/tmp/x",
        "local PROMPT_COMMAND='rm x'",
        "PS4='$(rm x)' bash -x -c ls",
        "IFS=/ ls",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=/tmp/x cargo test",
        "RUSTC_WRAPPER=/tmp/x cargo build",
        "MANPAGER='sh -c x' man ls",
        "EDITOR=vim git commit",
        "NODE_OPTIONS='--require /tmp/x' node a.js",
        "npm_config_script_shell=/tmp/x npm test",
        "env LD_PRELOAD=/tmp/x.so ls",
        "sudo GIT_SSH=/tmp/x git fetch",
        "FZF_DEFAULT_COMMAND='rm x' fzf",
        "read PATH < f",
        "printf -v PATH %s /tmp",
        "PYTHONPATH=. python a.py",
        "SHELL=/tmp/x make",
        "declare -n r=PATH; r=/tmp",
        "local -n ref=LD_PRELOAD",
    ] {
        assert_unresolved(source);
    }
    for source in [
        "export FOO=bar; echo $FOO",
        "FOO=1 ls",
        "RUST_LOG=debug cargo test",
        "x=1",
    ] {
        assert!(
            run(source).unresolved.is_empty(),
            "{source:?}: {:#?}",
            run(source)
        );
    }
}

#[test]
fn arithmetic_subscripts_with_expansions_are_unresolved() {
    for source in [
        "(( a[$i] ))",
        "echo $(( a[$i] + 1 ))",
        "let 'a[$i]=1'",
        "[[ a[$i] -eq 1 ]]",
        "for ((i=0; a[$i] < 3; i++)); do :; done",
    ] {
        assert_unresolved(source);
    }
    for source in [
        "(( i + 1 ))",
        "echo $(( i * 2 ))",
        "let i=i+1",
        "[[ $i -eq 1 ]]",
    ] {
        assert!(
            run(source).unresolved.is_empty(),
            "{source:?}: {:#?}",
            run(source)
        );
    }
}
