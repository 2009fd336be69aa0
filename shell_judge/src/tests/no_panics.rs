//! The parser takes model input: analysing any string returns, never panics.

use super::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_strings_never_panic(source in ".{0,80}") {
        let analysis = run(&source);
        let _ = judge(&analysis, &preset());
    }

    #[test]
    fn shell_flavoured_strings_never_panic(
        source in proptest::collection::vec(
            prop_oneof![
                Just("$("), Just(")"), Just("`"), Just("'"), Just("\""), Just("${"), Just("}"),
                Just("<<EOF\n"), Just("\nEOF\n"), Just("(("), Just("))"), Just("[["), Just("]]"),
                Just(" "), Just(";"), Just("|"), Just("&"), Just("rm"), Just("x"), Just("\\"),
                Just("$'\\x"), Just("a["), Just("]"), Just("{a,b}"), Just("bash -c "), Just("<("),
                Just("case "), Just(" in "), Just("esac"), Just("if "), Just("then "), Just("fi"),
            ],
            0..24,
        )
    ) {
        let source: String = source.concat();
        let analysis = run(&source);
        let _ = judge(&analysis, &preset());
    }
}

#[test]
fn deep_nesting_stops_with_an_unresolved_item() {
    let mut source = "rm x".to_owned();
    for _ in 0..60 {
        source = format!("echo $({source})");
    }
    let analysis = run(&source);
    assert!(!analysis.unresolved.is_empty());
    let mut source = "rm x".to_owned();
    for _ in 0..60 {
        source = format!("sudo {source}");
    }
    assert!(!run(&source).unresolved.is_empty());
}

#[test]
fn nesting_deeper_than_the_parser_takes_is_unresolved_not_a_crash() {
    for (open, close) in [("(", ")"), ("$(", ")"), ("{ ", "; }"), ("${x:-", "}")] {
        let source = format!("{}rm x{}", open.repeat(5000), close.repeat(5000));
        assert!(!run(&source).unresolved.is_empty(), "{open:?}");
    }
    let source = format!(
        "{}rm x{}",
        "if true; then ".repeat(3000),
        "; fi".repeat(3000)
    );
    assert!(run(&source).commands.iter().any(|c| c.program == "rm"));
}
