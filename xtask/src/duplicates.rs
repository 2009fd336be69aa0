//! `cargo xtask duplicates` (part of `lint`): no new copy of six or more lines in the code of
//! paddock's crates.
//!
//! The code is each crate's `src/` without its unit tests (a file named `tests.rs`,
//! `*_tests.rs` or `*proptests.rs`, anything under a folder so named, and everything from a
//! `#[cfg(test)]` that opens a module to the file's end).
//! Lines are compared trimmed, and lines that say nothing on their own are left out: blank
//! lines, comments, and lines with no letter or digit (`}`, `});`). Every run of six such
//! lines is fingerprinted; a fingerprint found in two places (two files, or two places of one
//! file) is a copy. Copies that overlap are reported as one block per pair of places.
//!
//! `.ci/duplicates.txt` lists the fingerprints of copies that were there when the check began
//! and are left on purpose (each with where it was); a copy whose fingerprint is not listed
//! fails the check. `--bless` rewrites the list with what is found now, so removing a copy
//! shrinks it and adding one shows in the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

/// Lines in a run that counts as a copy.
const RUN: usize = 6;

/// The crates whose code is checked.
const CHECKED: &[&str] = &[
    "types/src",
    "sandbox/src",
    "runtime/src",
    "cli/src",
    "jail/src",
    "shell_judge/src",
];

const ALLOWED: &str = ".ci/duplicates.txt";

/// One significant line: where it is, and its text trimmed.
struct Line {
    number: usize,
    text: String,
}

/// A run's place: the file and the line numbers of its first and last line.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    file: String,
    first: usize,
    last: usize,
}

/// Checks the crates under `root`; with `bless`, records what is found as allowed instead.
pub fn check(root: &Path, bless: bool) -> Result<(), String> {
    let mut runs: BTreeMap<u64, Vec<Place>> = BTreeMap::new();
    for dir in CHECKED {
        for file in rust_files(&root.join(dir))? {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let name = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let lines = significant(&text);
            for window in lines.windows(RUN) {
                runs.entry(fingerprint(window)).or_default().push(Place {
                    file: name.clone(),
                    first: window[0].number,
                    last: window[RUN - 1].number,
                });
            }
        }
    }
    let copies: BTreeMap<u64, Vec<Place>> = runs
        .into_iter()
        .filter(|(_, places)| distinct(places) > 1)
        .collect();
    let allowed_path = root.join(ALLOWED);
    if bless {
        let mut text = String::from(
            "# Copies of six or more lines left on purpose: `cargo xtask duplicates` fails on any\n\
             # other (xtask/src/duplicates.rs). Written by `cargo xtask duplicates --bless`.\n",
        );
        for (print, places) in &copies {
            let at: Vec<String> = places.iter().map(show).collect();
            text.push_str(&format!("{print:016x} {}\n", at.join(" ")));
        }
        std::fs::write(&allowed_path, text)
            .map_err(|e| format!("cannot write {}: {e}", allowed_path.display()))?;
        println!("xtask: {} copied runs recorded in {ALLOWED}", copies.len());
        return Ok(());
    }
    let allowed = read_allowed(&allowed_path)?;
    let new: Vec<(&u64, &Vec<Place>)> = copies
        .iter()
        .filter(|(print, _)| !allowed.contains(print))
        .collect();
    if new.is_empty() {
        println!(
            "xtask: no new copy of {RUN} or more lines ({} recorded in {ALLOWED})",
            copies.len()
        );
        return Ok(());
    }
    let mut blocks = blocks(&new);
    blocks.sort();
    let mut message = format!("{} new cop(ies) of {RUN} or more lines:", blocks.len());
    for (a, b) in &blocks {
        message.push_str(&format!("\n  {} is also {}", show(a), show(b)));
    }
    message.push_str(
        "\nfix: give the code one home (a function, a type) and call it from both places; a \
         copy that must stay is recorded with `cargo xtask duplicates --bless`",
    );
    Err(message)
}

fn show(place: &Place) -> String {
    format!("{}:{}-{}", place.file, place.first, place.last)
}

/// How many different places hold the run (the same lines twice in one place count once).
fn distinct(places: &[Place]) -> usize {
    places.iter().collect::<BTreeSet<_>>().len()
}

/// Overlapping runs of the same two files merged into one block per pair of places.
fn blocks(copies: &[(&u64, &Vec<Place>)]) -> Vec<(Place, Place)> {
    let mut pairs: Vec<(Place, Place)> = Vec::new();
    for (_, places) in copies {
        for (i, a) in places.iter().enumerate() {
            for b in &places[i + 1..] {
                pairs.push((a.clone(), b.clone()));
            }
        }
    }
    pairs.sort();
    let mut merged: Vec<(Place, Place)> = Vec::new();
    for (a, b) in pairs {
        if let Some((ma, mb)) = merged.last_mut()
            && ma.file == a.file
            && mb.file == b.file
            && a.first <= ma.last
            && b.first <= mb.last + (a.first - ma.first).max(1)
        {
            ma.last = ma.last.max(a.last);
            mb.last = mb.last.max(b.last);
            continue;
        }
        merged.push((a, b));
    }
    merged
}

fn read_allowed(path: &Path) -> Result<BTreeSet<u64>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let print = l.split_whitespace().next().unwrap_or_default();
            u64::from_str_radix(print, 16).map_err(|_| {
                format!(
                    "{}: `{print}` is not a fingerprint (16 hex digits); rewrite the file with \
                     `cargo xtask duplicates --bless`",
                    path.display()
                )
            })
        })
        .collect()
}

fn fingerprint(window: &[Line]) -> u64 {
    let mut h = DefaultHasher::new();
    for line in window {
        line.text.hash(&mut h);
    }
    h.finish()
}

/// The lines that say something, numbered from 1, up to the file's unit tests.
fn significant(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut in_block_comment = false;
    let mut all = text.lines().enumerate().peekable();
    while let Some((i, raw)) = all.next() {
        let line = raw.trim();
        if in_block_comment {
            in_block_comment = !line.contains("*/");
            continue;
        }
        if line.starts_with("/*") {
            in_block_comment = !line.contains("*/");
            continue;
        }
        if line == "#[cfg(test)]"
            && all.peek().is_some_and(|(_, next)| {
                next.trim_start().starts_with("mod ") && next.contains('{')
            })
        {
            break;
        }
        if line.starts_with("//") || !line.chars().any(char::is_alphanumeric) {
            continue;
        }
        lines.push(Line {
            number: i + 1,
            text: line.to_string(),
        });
    }
    lines
}

/// Every `.rs` file under `dir` that is not a unit-test file (nor under a folder of them),
/// sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.ends_with("tests") {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") && !name.trim_end_matches(".rs").ends_with("tests") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_lines_twice_are_a_copy_and_blank_lines_comments_and_braces_do_not_count() {
        let body = "let a = 1;\nlet b = 2;\n\n// note\nlet c = 3;\n}\nlet d = 4;\nlet e = 5;\nlet f = 6;\n";
        let one = significant(&format!("fn x() {{\n{body}"));
        let two = significant(&format!("fn y() {{\n    {}", body.replace('\n', "\n    ")));
        assert_eq!(one.len(), 7);
        assert_eq!(fingerprint(&one[1..7]), fingerprint(&two[1..7]));
        assert_ne!(fingerprint(&one[0..6]), fingerprint(&two[0..6]));
        // Five lines in common are not enough.
        let five =
            significant("let b = 2;\nlet c = 3;\nlet d = 4;\nlet e = 5;\nlet f = 6;\nlet g = 7;\n");
        assert_ne!(fingerprint(&one[1..7]), fingerprint(&five[0..6]));
    }

    #[test]
    fn unit_tests_at_a_files_end_are_not_read() {
        let lines = significant("let a = 1;\n#[cfg(test)]\nmod tests {\nlet b = 2;\n}\n");
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text, "let a = 1;");
        // A test module in a file of its own is only declared: what follows is read.
        let lines = significant("#[cfg(test)]\nmod tests;\nlet a = 1;\n");
        assert_eq!(lines.last().map(|l| l.text.as_str()), Some("let a = 1;"));
    }
}
