//! The shell's judge reads bash source a model wrote: whatever it is sent, `analyse` returns
//! (never panics, never overflows its stack), and a string it cannot read is asked about,
//! never allowed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paddock_shell_judge::{Rules, Session, Verdict, analyse, judge};

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let analysis = analyse(source, &Session::default());
    let rules = Rules::new(&["ls *".to_string()], &["rm *".to_string()], &[]).expect("rules");
    if !analysis.unresolved.is_empty() {
        assert!(
            !matches!(judge(&analysis, &rules), Verdict::Allow),
            "something unresolved was allowed: {source:?}"
        );
    }
});
