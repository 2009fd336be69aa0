//! Simple commands in every construct and inside every kind of word that holds code.

use super::*;

#[test]
fn commands_in_lists_pipelines_and_compound_commands_are_found() {
    let cases: &[(&str, &[&str])] = &[
        ("ls | grep a | wc -l", &["ls", "grep", "wc"]),
        (
            "ls && rm x || echo no; pwd & true",
            &["ls", "rm", "echo", "pwd", "true"],
        ),
        ("(rm x)", &["rm"]),
        ("{ rm x; }", &["rm"]),
        (
            "if true; then rm x; elif false; then ls; else pwd; fi",
            &["true", "rm", "false", "ls", "pwd"],
        ),
        ("while false; do rm x; done", &["false", "rm"]),
        ("until true; do rm x; done", &["true", "rm"]),
        ("for f in a b; do rm \"$f\"; done", &["rm"]),
        ("for ((i=0; i<3; i++)); do rm x; done", &["rm"]),
        ("case a in a) rm x;; b) ls;; esac", &["rm", "ls"]),
        ("f() { rm x; }", &["rm"]),
        ("function g { rm x; }", &["rm"]),
        ("! rm x", &["rm"]),
        ("time rm x", &["rm"]),
        ("coproc rm x", &["rm"]),
        ("coproc name { rm x; }", &["rm"]),
        ("[[ -f x ]] && rm x", &["rm"]),
        ("(( 1 )) && rm x", &["rm"]),
        ("((rm x) )", &["rm"]),
        ("(( i++ )); (( $n + 1 )); (( a[1] > 2 ))", &[]),
    ];
    for (source, expected) in cases {
        assert_eq!(&programs(source), expected, "{source:?}");
    }
}

#[test]
fn commands_inside_substitutions_anywhere_are_found() {
    for source in [
        "echo $(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "cat <(rm x)",
        "tee >(rm x)",
        "x=$(rm x)",
        "FOO=$(rm x) ls",
        "cat <<EOF\n$(rm x)\nEOF",
        "cat <<EOF\n`rm x`\nEOF",
        "echo ${x:-$(rm x)}",
        "echo \"${x:=$(rm x)}\"",
        "echo $(( $(rm x) + 1 ))",
        "echo > $(rm x)",
        "cat < \"$(rm x)\"",
        "cat <<< $(rm x)",
        "case $(rm x) in *) ;; esac",
        "case a in $(rm x)) ;; esac",
        "for f in $(rm x); do :; done",
        "[[ -f $(rm x) ]]",
        "(( $(rm x) ))",
        "export A=$(rm x)",
        "local a=\"$(rm x)\"",
        "a[$(rm x)]=1",
        "arr=(a $(rm x))",
        "echo $(echo $(rm x))",
        "echo \"$(echo \"$(rm x)\")\"",
        "echo ${#a[$(rm x)]}",
        "echo ${x:$(rm x)}",
        "echo ${x/$(rm x)/y}",
        "exec 3> >(rm x)",
        "ls | while read l; do rm \"$l\"; done",
    ] {
        assert_runs(source, "rm");
    }
}

#[test]
fn quoting_resolves_to_the_real_name() {
    for source in [
        "rm x",
        "r\\m x",
        "'r'm x",
        "\"rm\" x",
        "\\rm x",
        "$'rm' x",
        "$'\\x72m' x",
        "$'\\162m' x",
        "$'\\u0072m' x",
        "r\"\"m x",
        "r''m x",
        "FOO=1 rm x",
        "FOO=1 BAR=\"a b\" rm x",
        "/bin/rm x",
        "./rm x",
        "~/bin/rm x",
        "> out rm x",
    ] {
        let analysis = run(source);
        let rm = analysis.commands.iter().find(|c| c.program == "rm");
        assert!(rm.is_some(), "{source:?}: {analysis:#?}");
        assert!(analysis.unresolved.is_empty(), "{source:?}: {analysis:#?}");
    }
}

#[test]
fn argv_is_after_quote_removal() {
    let analysis = run("git commit -m \"push it\" 'a b' c\\ d");
    assert_eq!(
        analysis.commands[0].argv,
        strings(&["git", "commit", "-m", "push it", "a b", "c d"])
    );
    assert_eq!(
        analysis.commands[0].text,
        "git commit -m \"push it\" 'a b' c\\ d"
    );
}

#[test]
fn builtins_are_commands_and_keywords_are_not() {
    assert_eq!(
        programs("cd src && export A=1; read x; set -e; [ -f x ]"),
        ["cd", "export", "read", "set", "["]
    );
    assert_eq!(
        programs("if [[ -f x ]]; then (( 1 )); fi"),
        Vec::<String>::new()
    );
}
