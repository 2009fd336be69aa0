//! Text that looks like a command but is not run: quoted strings, arguments, comments,
//! quoted heredoc bodies.

use super::*;

#[test]
fn text_is_never_taken_for_a_command() {
    let cases: &[(&str, &[&str])] = &[
        ("echo 'rm -rf /'", &["echo"]),
        ("echo \"rm -rf /\"", &["echo"]),
        ("echo hi # rm -rf /", &["echo"]),
        ("grep 'git push' log", &["grep"]),
        ("grep -r \"git push\" .", &["grep"]),
        ("echo '$(rm x)'", &["echo"]),
        ("echo \\$HOME '(rm x)'", &["echo"]),
        ("echo \"\\$(rm x)\"", &["echo"]),
        ("echo '`rm x`'", &["echo"]),
        ("cat <<'EOF'\n$(rm x)\nEOF", &["cat"]),
        ("cat <<\"EOF\"\n`rm x`\nEOF", &["cat"]),
        ("cat <<\\EOF\n$(rm x)\nEOF", &["cat"]),
        ("ls rm", &["ls"]),
        ("echo rm x; # rm y", &["echo"]),
        ("printf '%s\\n' \"rm x\"", &["printf"]),
        ("x='rm x'", &[]),
        ("echo ${x:-'$(rm x)'}", &["echo"]),
        ("# rm x", &[]),
    ];
    for (source, expected) in cases {
        let analysis = run(source);
        assert_eq!(&programs(source), expected, "{source:?}");
        assert!(analysis.unresolved.is_empty(), "{source:?}: {analysis:#?}");
    }
}
