//! When one command pattern of an exec grant's `allow` provably allows no more than another
//! (`paddock_shell_judge::rules` reads them: a program, then argument words, a trailing `*`
//! for any rest; `*` inside a word for any text; a bare program for any arguments; `*` alone
//! for any command).
//!
//! The proof is sound, not complete: `within` answers true only when every command the child
//! pattern allows, the parent pattern allows too. Two globs whose containment this cannot see
//! (`a*b` within `a*`, say) are answered false, and the spawn is refused; a preset can always
//! spell the child's pattern as the parent's.

/// A pattern as the allow-list matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    program: String,
    fixed: Vec<String>,
    /// Any further arguments (a trailing `*`, or a bare program).
    rest: bool,
}

fn shape(pattern: &str) -> Option<Shape> {
    let mut words = pattern.split_whitespace();
    let program = words.next()?;
    let program = if program == "*" {
        program
    } else {
        program.rsplit('/').next().unwrap_or(program)
    };
    let mut fixed: Vec<String> = words.map(str::to_owned).collect();
    let rest = match fixed.last().map(String::as_str) {
        None => true,
        Some("*") => {
            fixed.pop();
            true
        }
        Some(_) => false,
    };
    Some(Shape {
        program: program.to_owned(),
        fixed,
        rest,
    })
}

/// The pattern as the proof compares it: program by basename, words single-spaced.
pub(super) fn normal(pattern: &str) -> String {
    match shape(pattern) {
        Some(s) => {
            let mut words = vec![s.program];
            words.extend(s.fixed);
            if s.rest && !words.is_empty() && pattern.split_whitespace().count() > 1 {
                words.push("*".into());
            }
            words.join(" ")
        }
        None => String::new(),
    }
}

/// Whether every word `child` matches, `parent` matches too.
fn word_within(child: &str, parent: &str) -> bool {
    if parent == "*" || child == parent {
        return true;
    }
    if !child.contains('*') {
        return paddock_shell_judge::glob(parent, child);
    }
    // Both are globs: only a parent that is a literal prefix and one trailing `*` is
    // compared, against the child's literal prefix.
    match parent.strip_suffix('*') {
        Some(prefix) if !prefix.contains('*') => {
            let literal = child.split('*').next().unwrap_or_default();
            literal.starts_with(prefix)
        }
        _ => false,
    }
}

/// Whether every command `child` allows, `parent` allows too.
pub(super) fn within(child: &str, parent: &str) -> bool {
    let (Some(c), Some(p)) = (shape(child), shape(parent)) else {
        return false;
    };
    if p.program == "*" && p.fixed.is_empty() && p.rest {
        return true;
    }
    if !word_within(&c.program, &p.program) {
        return false;
    }
    let words_within = |n: usize| {
        c.fixed
            .iter()
            .zip(&p.fixed)
            .take(n)
            .all(|(c, p)| word_within(c, p))
    };
    if p.rest {
        c.fixed.len() >= p.fixed.len() && words_within(p.fixed.len())
    } else {
        !c.rest && c.fixed.len() == p.fixed.len() && words_within(p.fixed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::{normal, within};

    #[test]
    fn a_star_alone_covers_every_command() {
        assert!(within("rm -rf *", "*"));
        assert!(within("*", "*"));
    }

    #[test]
    fn a_bare_program_covers_that_program_with_any_arguments_only() {
        assert!(within("cargo test *", "cargo"));
        assert!(within("cargo", "cargo"));
        assert!(!within("cargo", "cargo test *"));
        assert!(!within("rustc", "cargo"));
        assert!(!within("*", "cargo"));
    }

    #[test]
    fn a_trailing_star_covers_longer_argument_lists_with_the_same_start() {
        assert!(within("git diff --stat", "git diff *"));
        assert!(within("git diff --stat *", "git diff *"));
        assert!(within("git diff", "git diff *"));
        assert!(!within("git push *", "git diff *"));
        assert!(!within("git *", "git diff *"));
    }

    #[test]
    fn an_exact_pattern_covers_only_the_same_exact_pattern() {
        assert!(within("git status", "git status"));
        assert!(!within("git status *", "git status"));
        assert!(!within("git status -s", "git status"));
    }

    #[test]
    fn globs_inside_words_are_compared_soundly() {
        assert!(within("git log --format=%H", "git log --format=*"));
        assert!(within("git log --format=%H*", "git log --format=*"));
        // True, but not provable by this rule: refused rather than guessed.
        assert!(!within("a*b", "a*b*"));
        assert!(!within("git log --form*", "git log --format=*"));
        assert!(!within("c*", "cargo"));
    }

    #[test]
    fn programs_compare_by_basename() {
        assert!(within("/usr/bin/ls", "ls"));
        assert!(within("ls -l", "/bin/ls *"));
    }

    #[test]
    fn patterns_normalise_to_single_spaced_basenames() {
        assert_eq!(normal("  /usr/bin/git   push  * "), "git push *");
        assert_eq!(normal("rm"), "rm");
    }
}
