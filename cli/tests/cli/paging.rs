//! Paging through the real binary (S5, docs/output-paging.md): a paged grep and a paged
//! read_file of a large file return every line exactly once, and a tool whose output the host
//! budget would cut pages itself within it, so each continuation resumes at the first line
//! not shown.

use std::collections::BTreeSet;

use super::common::*;

/// Follows `tool`'s continuations from `args` until the result is whole; the pages' contents.
fn pages(s: &Sandbox, extra: &[&str], tool: &str, args: &str) -> Vec<String> {
    let mut args = args.to_string();
    let mut pages = Vec::new();
    loop {
        let mut argv = vec!["tool", "call", tool, &args, "--json"];
        argv.extend_from_slice(extra);
        let (code, out) = s.json(&argv);
        assert_eq!(code, 0, "{out}");
        pages.push(out["content"].as_str().unwrap().to_string());
        assert!(pages.len() < 60, "too many pages: {:?}", &pages[..2]);
        match out["continuation"].as_str() {
            Some(next) => {
                assert_eq!(out["truncated"], true);
                args = next.to_string();
            }
            None => return pages,
        }
    }
}

/// Lines of a page that are results, not its closing marker.
fn results(page: &str) -> impl Iterator<Item = &str> {
    page.lines().filter(|l| !l.starts_with('['))
}

/// `n` files under `dir/`, each with `lines` matching lines and a non-matching one between.
fn matching_tree(s: &Sandbox, files: usize, lines: usize) -> BTreeSet<String> {
    let mut want = BTreeSet::new();
    for f in 0..files {
        let name = format!("tree/d{}/f{f:02}.txt", f % 3);
        std::fs::create_dir_all(s.file(&name).parent().unwrap()).unwrap();
        let mut text = String::new();
        for l in 0..lines {
            text.push_str(&format!("hit {f} {l} {}\nmiss\n", "x".repeat(l % 50)));
            want.insert(format!(
                "{name}:{}:hit {f} {l} {}",
                2 * l + 1,
                "x".repeat(l % 50)
            ));
        }
        std::fs::write(s.file(&name), text).unwrap();
    }
    want
}

#[test]
fn a_paged_grep_returns_every_matching_line_exactly_once() {
    let s = Sandbox::new();
    let want = matching_tree(&s, 12, 300);
    let pages = pages(
        &s,
        &[],
        "grep",
        r#"{"pattern": "^hit", "max_results": 1000}"#,
    );
    assert!(pages.len() >= 4, "{} pages", pages.len());
    let got: Vec<&str> = pages.iter().flat_map(|p| results(p)).collect();
    assert_eq!(got.len(), want.len(), "each line once");
    assert_eq!(
        got.iter().map(|l| l.to_string()).collect::<BTreeSet<_>>(),
        want
    );
}

#[test]
fn a_paged_read_of_a_large_file_returns_every_line_exactly_once() {
    let s = Sandbox::new();
    let lines: Vec<String> = (1..=40_000)
        .map(|i| format!("line {i} {}", "y".repeat(i % 70)))
        .collect();
    std::fs::write(s.file("big.txt"), lines.join("\n") + "\n").unwrap();
    let pages = pages(&s, &[], "read_file", r#"{"path": "big.txt"}"#);
    assert!(pages.len() >= 10, "{} pages", pages.len());
    let got: Vec<&str> = pages
        .iter()
        .flat_map(|p| results(p))
        .map(|l| l.split_once('\t').unwrap().1)
        .collect();
    assert_eq!(got, lines);
}

/// A preset whose search plugin has `key = value` (`output_bytes`, `fuel`).
fn search_preset(s: &Sandbox, key: &str, value: u64) -> String {
    let preset = s.home.path().join("small.toml");
    std::fs::write(
        &preset,
        format!(
            "name = \"small\"\n\
             [plugins.search]\n\
             source = \"builtin:search\"\n\
             mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\
             {key} = {value}\n\
             [tools]\n\
             enable = [\"grep\", \"glob\"]\n\
             [approval]\n\
             low = \"allow\"\n"
        ),
    )
    .unwrap();
    preset.display().to_string()
}

#[test]
fn a_result_over_the_host_budget_pages_on_a_line_and_continues_at_the_next() {
    let s = Sandbox::new();
    let want = matching_tree(&s, 4, 60);
    // The host holds results to 3000 bytes: far less than 1000 grep results or 2000 paths.
    let preset = search_preset(&s, "output_bytes", 3000);
    let extra = ["--preset", preset.as_str()];
    let pages_seen = pages(
        &s,
        &extra,
        "grep",
        r#"{"pattern": "^hit", "max_results": 1000}"#,
    );
    assert!(pages_seen.len() >= 5, "{} pages", pages_seen.len());
    for page in &pages_seen {
        assert!(page.len() <= 3000, "over the budget: {}", page.len());
        assert!(!page.contains("[output cut"), "the host had to cut: {page}");
    }
    let got: Vec<&str> = pages_seen.iter().flat_map(|p| results(p)).collect();
    assert_eq!(got.len(), want.len(), "each line once");
    assert_eq!(
        got.iter().map(|l| l.to_string()).collect::<BTreeSet<_>>(),
        want
    );

    // glob: the count of what is not shown survives, and resuming lists each path once.
    let files: Vec<String> = (0..150)
        .map(|i| format!("names/n{i:03}-{}.md", "z".repeat(40)))
        .collect();
    std::fs::create_dir_all(s.file("names")).unwrap();
    for f in &files {
        std::fs::write(s.file(f), "").unwrap();
    }
    let globbed = pages(
        &s,
        &extra,
        "glob",
        r#"{"pattern": "*.md", "max_results": 2000}"#,
    );
    assert!(globbed.len() >= 2, "{} pages", globbed.len());
    let first_shown = results(&globbed[0]).count();
    assert!(
        globbed[0].contains(&format!(
            "[{} more paths matched",
            files.len() - first_shown
        )),
        "{}",
        globbed[0]
    );
    let got: Vec<&str> = globbed.iter().flat_map(|p| results(p)).collect();
    assert_eq!(got, files);
}

#[test]
fn a_grep_larger_than_its_fuel_pages_the_search_and_misses_nothing() {
    let s = Sandbox::new();
    let want = matching_tree(&s, 12, 300);
    // 8M fuel: grep searches about 125 KB per call (fuel / 64), a third of the tree.
    let preset = search_preset(&s, "fuel", 8_000_000);
    let extra = ["--preset", preset.as_str()];
    let pages_seen = pages(
        &s,
        &extra,
        "grep",
        r#"{"pattern": "^hit", "max_results": 1000}"#,
    );
    assert!(
        pages_seen.iter().any(|p| p.contains("its fuel")),
        "no page paused: {pages_seen:?}"
    );
    let got: Vec<&str> = pages_seen.iter().flat_map(|p| results(p)).collect();
    assert_eq!(got.len(), want.len(), "each line once");
    assert_eq!(
        got.iter().map(|l| l.to_string()).collect::<BTreeSet<_>>(),
        want
    );
}
