//! `cargo xtask cycles` (and the first step of `cargo xtask test` and `lint`): no two files of a
//! crate import each other, directly or through others, and no two folders either. Each `.rs`
//! file is a node (a `mod.rs` is its directory's module); an edge is any path the file names
//! that starts with `crate::`, `super::` or `self::` (in `use` lines, groups included, and
//! inline), resolved to the deepest file module it reaches. Imports of a file's own ancestors
//! (a `mod.rs` that re-exports) are not edges: they are how a module shows its parts. A cycle
//! is reported with the files in it and, for each, the files of the cycle it imports.
//!
//! Folders (`folder_cycles`): inside every directory, its entries (files and sub-folders, each
//! with everything under it) form a graph of their own, with an edge wherever a file under one
//! names a file under another; that graph must be acyclic too. This is the layering the crates
//! do not enforce by themselves: inside the core, `model` never reaches back to `session`.
//! Unit tests (`tests.rs`, `*_tests.rs`, `*proptests.rs`, anything under a folder so named, a
//! `#[cfg(test)]` module written inline) are left out
//! of the folder graph: a test may drive a lower layer with a higher one's data, and ships in
//! nothing.
//!
//! Limits, on purpose: comments and string literals are skipped, but an inline `mod x { .. }`
//! block's `super::` is read as the file's own (write `crate::` paths there), and macros are
//! not expanded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path: `["sandbox", "call"]` for `sandbox/call.rs`.
type Module = Vec<String>;

/// Each file module's imports of other file modules (not its own ancestors), with the path
/// that makes each; with `product_only`, of the code that ships (no unit tests).
fn edges(
    src: &Path,
    product_only: bool,
) -> Result<BTreeMap<Module, BTreeMap<Module, String>>, String> {
    let files = modules(src)?;
    let known: BTreeSet<Module> = files.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (module, path) in &files {
        if product_only && is_test_file(src, path) {
            continue;
        }
        let mut text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if product_only {
            text.truncate(unit_tests_start(&text));
        }
        let mut deps = BTreeMap::new();
        for named in paths_named(&code_only(&text)) {
            let Some(target) = resolve(module, &named, &known) else {
                continue;
            };
            if target != *module && !module.starts_with(&target) {
                deps.entry(target).or_insert_with(|| named.join("::"));
            }
        }
        edges.insert(module.clone(), deps);
    }
    Ok(edges)
}

/// A file of unit tests: `tests.rs`, `*_tests.rs`, `*proptests.rs`, or anything under a folder
/// so named.
fn is_test_file(src: &Path, path: &Path) -> bool {
    path.strip_prefix(src)
        .unwrap_or(path)
        .with_extension("")
        .components()
        .any(|c| {
            let c = c.as_os_str().to_string_lossy();
            c.ends_with("tests")
        })
}

/// Where the unit tests written inline in `text` begin (a `#[cfg(test)]` line followed by
/// `mod NAME {`), or its length.
fn unit_tests_start(text: &str) -> usize {
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let next = next.trim_start();
                next.starts_with("mod ") && next.contains('{')
            })
        {
            return at;
        }
        at += line.len();
    }
    text.len()
}

/// Every cycle between the files under `src`, each as its files' module paths, sorted.
pub fn cycles(src: &Path) -> Result<Vec<Vec<String>>, String> {
    let edges: BTreeMap<Module, BTreeSet<Module>> = edges(src, false)?
        .into_iter()
        .map(|(m, deps)| (m, deps.into_keys().collect()))
        .collect();
    Ok(strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.iter().map(|m| m.join("/")).collect())
        .collect())
}

/// A cycle's members, and the imports that make it.
pub type Cycle = (Vec<String>, Vec<String>);

/// Every cycle between the entries of one directory under `src` (see the module's head): each
/// as the entries' paths, sorted, with the imports that make it (`a -> b (`path`) in file`).
pub fn folder_cycles(src: &Path) -> Result<Vec<Cycle>, String> {
    let edges = edges(src, true)?;
    // Entry-level edges per directory: dir -> entry -> entry -> the first import seen.
    type Why = (Module, String);
    type Entries = BTreeMap<Module, BTreeMap<Module, Why>>;
    let mut per_dir: BTreeMap<Module, Entries> = BTreeMap::new();
    for (from, deps) in &edges {
        for (to, named) in deps {
            let shared = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            // An entry of the common directory on each side; a file directly in the
            // directory (`mod.rs` is the directory itself) is not an entry of it.
            if shared >= from.len() || shared >= to.len() {
                continue;
            }
            let dir = from[..shared].to_vec();
            let a = from[..=shared].to_vec();
            let b = to[..=shared].to_vec();
            per_dir
                .entry(dir)
                .or_default()
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| (from.clone(), named.clone()));
        }
    }
    let mut found = Vec::new();
    for graph in per_dir.values() {
        let plain: BTreeMap<Module, BTreeSet<Module>> = graph
            .iter()
            .map(|(a, bs)| (a.clone(), bs.keys().cloned().collect()))
            .collect();
        for cycle in strongly_connected(&plain)
            .into_iter()
            .filter(|c| c.len() > 1)
        {
            let members: BTreeSet<&Module> = cycle.iter().collect();
            let mut why = Vec::new();
            for a in &cycle {
                for (b, (file, named)) in &graph[a] {
                    if members.contains(b) {
                        why.push(format!(
                            "{} -> {} (`{named}` in {})",
                            a.join("/"),
                            b.join("/"),
                            file.join("/")
                        ));
                    }
                }
            }
            found.push((cycle.iter().map(|m| m.join("/")).collect(), why));
        }
    }
    Ok(found)
}

/// The edges inside one cycle, for the report: `a -> b` lines.
pub fn explain(src: &Path, cycle: &[String]) -> Vec<String> {
    let Ok(files) = modules(src) else {
        return Vec::new();
    };
    let known: BTreeSet<Module> = files.keys().cloned().collect();
    let members: BTreeSet<&str> = cycle.iter().map(String::as_str).collect();
    let mut lines = Vec::new();
    for (module, path) in &files {
        let name = module.join("/");
        if !members.contains(name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut seen = BTreeSet::new();
        for named in paths_named(&code_only(&text)) {
            if let Some(target) = resolve(module, &named, &known) {
                let target = target.join("/");
                if target != name
                    && members.contains(target.as_str())
                    && seen.insert(target.clone())
                {
                    lines.push(format!("{name} -> {target} (`{}`)", named.join("::")));
                }
            }
        }
    }
    lines
}

fn is_dir_module(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    )
}

/// Every `.rs` file under `src` by its module path.
fn modules(src: &Path) -> Result<BTreeMap<Module, PathBuf>, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap_or(&path).with_extension("");
                let mut module: Module = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if is_dir_module(&path) {
                    module.pop();
                }
                found.insert(module, path);
            }
        }
    }
    Ok(found)
}

/// `text` with comments, string and char literals blanked (their length kept).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_start(&chars, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < chars.len() {
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for _ in i..j.min(chars.len()) {
                out.push(' ');
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && char_literal_len(&chars, i).is_some() {
            let len = char_literal_len(&chars, i).unwrap_or(1);
            for _ in 0..len {
                out.push(' ');
            }
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` starts a raw string (not the end of an identifier such as `for`).
fn raw_start(chars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).and_then(|b| chars.get(b)).copied();
    if before.is_some_and(|b| b.is_alphanumeric() || b == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// The length of a char literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`), or `None` for a
/// lifetime.
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => {
            let end = (i + 2..chars.len().min(i + 14)).find(|&j| chars[j] == '\'')?;
            Some(end - i + 1)
        }
        (Some(_), Some('\'')) => Some(3),
        _ => None,
    }
}

/// Every path starting with `crate`, `super` or `self` in `code`, with `use` groups
/// (`a::{b, c::d}`) expanded.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if starts_word {
            let rest: String = chars[i..chars.len().min(i + 8)].iter().collect();
            if ["crate::", "super::", "self::"]
                .iter()
                .any(|head| rest.starts_with(head))
            {
                let (paths, end) = read_path(&chars, i, Vec::new());
                found.extend(paths);
                i = end.max(i + 1);
                continue;
            }
        }
        i += 1;
    }
    found
}

/// Reads a path at `i` (after `prefix`), expanding a `{..}` group; returns the paths and
/// where reading stopped.
fn read_path(chars: &[char], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut segments = prefix;
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if chars.get(i) == Some(&'{') {
            let mut paths = Vec::new();
            i += 1;
            loop {
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                match chars.get(i) {
                    None => return (paths, i),
                    Some('}') => return (paths, i + 1),
                    _ => {}
                }
                let (inner, end) = read_path(chars, i, segments.clone());
                paths.extend(inner);
                // Skip an `as name` and anything up to the next item of the group.
                i = end;
                while chars
                    .get(i)
                    .is_some_and(|c| *c != ',' && *c != '}' && *c != '{')
                {
                    i += 1;
                }
                if i == end && chars.get(i).is_none() {
                    return (paths, i);
                }
            }
        }
        let start = i;
        while chars
            .get(i)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            i += 1;
        }
        if i == start {
            break;
        }
        segments.push(chars[start..i].iter().collect());
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            break;
        }
    }
    (vec![segments], i)
}

/// The file module `named` (a path as written in `module`) reaches, if any. `super` is the
/// parent of the module (for `a/b.rs` and `a/b/mod.rs` alike: `a`), `self` the module.
fn resolve(module: &Module, named: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let (mut full, mut rest): (Module, &[String]) = match named.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &named[1..]),
        Some("self") => (module.clone(), &named[1..]),
        Some("super") => (module.clone(), named),
        _ => return None,
    };
    while rest.first().map(String::as_str) == Some("super") {
        full.pop()?;
        rest = &rest[1..];
    }
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|candidate| known.contains(candidate))
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
fn strongly_connected(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        next: usize,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let Some((w, _)) = edges.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[w].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.index[w].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.found.push(component);
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.found.sort();
    state.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile_free::Dir {
        let dir = tempfile_free::Dir::new();
        for (path, text) in files {
            let path = dir.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    /// A scratch directory without a dependency (xtask has none).
    mod tempfile_free {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                let dir = std::env::temp_dir()
                    .join(format!("xtask-cycles-{}-{nanos}", std::process::id()));
                std::fs::create_dir_all(&dir).unwrap();
                Dir(dir)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn two_files_that_import_each_other_are_a_cycle_and_a_re_export_is_not() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            ("a/mod.rs", "mod x;\nmod y;\npub use x::X;\n"),
            ("a/x.rs", "use super::y::{Y, z::{Z}};\npub struct X;\n"),
            (
                "a/y.rs",
                "use crate::a::x::X; // crate::b::never\npub struct Y;\n",
            ),
            ("b.rs", "let s = \"crate::a::x\"; use super::a::X;\n"),
        ]);
        let found = cycles(&dir.0).unwrap();
        assert_eq!(found, vec![vec!["a/x".to_string(), "a/y".to_string()]]);
        let why = explain(&dir.0, &found[0]);
        assert!(why.iter().any(|l| l.starts_with("a/x -> a/y")), "{why:?}");
        assert!(why.iter().any(|l| l.starts_with("a/y -> a/x")), "{why:?}");
    }

    #[test]
    fn a_tree_that_flows_one_way_has_no_cycle() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "use crate::b::B;\nfn f<'a>(x: &'a str) -> char { 'x' }\n",
            ),
            ("b.rs", "pub struct B; /* use crate::a::A; */\n"),
        ]);
        assert!(cycles(&dir.0).unwrap().is_empty());
    }

    #[test]
    fn two_folders_that_reach_each_other_are_a_cycle_though_no_two_files_are() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod w;\nmod x;\n"),
            ("a/w.rs", "pub struct W;\n"),
            ("a/x.rs", "use crate::b::y::Y;\n"),
            ("b/mod.rs", "pub mod y;\nmod z;\n"),
            ("b/y.rs", "pub struct Y;\n"),
            ("b/z.rs", "use crate::a::w::W;\n"),
        ]);
        assert!(cycles(&dir.0).unwrap().is_empty());
        let found = folder_cycles(&dir.0).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, vec!["a".to_string(), "b".to_string()]);
        assert!(
            found[0]
                .1
                .iter()
                .any(|l| l.starts_with("a -> b (`crate::b::y::Y` in a/x)")),
            "{found:?}"
        );
        assert!(
            found[0]
                .1
                .iter()
                .any(|l| l.starts_with("b -> a (`crate::a::w::W` in b/z)")),
            "{found:?}"
        );
        // One way only, and imports inside one folder, are no folder cycle.
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod w;\nmod x;\n"),
            ("a/w.rs", "use super::x::X;\n"),
            ("a/x.rs", "use crate::b::Y;\npub struct X;\n"),
            ("b.rs", "pub struct Y;\n"),
        ]);
        assert!(folder_cycles(&dir.0).unwrap().is_empty());
    }
}
