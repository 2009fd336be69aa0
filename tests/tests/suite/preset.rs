//! Presets (P1): every kind of mistake is an error naming the file, line and key; the search
//! order; the tool selection; defaults filled in by resolution.

use paddock::preset::{self, ApprovalMode, ResolveContext};

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `text` as `p.toml` and returns the error from loading and resolving it.
    fn error(&self, text: &str) -> String {
        let path = self.dir.path().join("p.toml");
        std::fs::write(&path, text).unwrap();
        let file = match preset::load_in(path.to_str().unwrap(), self.dir.path()) {
            Ok(file) => file,
            Err(e) => return e.to_string().replace(path.to_str().unwrap(), "p.toml"),
        };
        match file.resolve("p", &self.cx()) {
            Ok(_) => panic!("{text:?} should not resolve"),
            Err(e) => e.to_string().replace(path.to_str().unwrap(), "p.toml"),
        }
    }

    fn cx(&self) -> ResolveContext<'_> {
        ResolveContext {
            cwd: self.dir.path(),
            data_dir: std::path::Path::new("/nonexistent/paddock-data"),
            spill: None,
            mount_override: None,
        }
    }
}

fn assert_starts(err: &str, prefix: &str, also: &str) {
    assert!(
        err.starts_with(prefix) && err.contains(also),
        "expected {prefix:?} … {also:?}, got: {err}"
    );
}

#[test]
fn an_unknown_key_in_any_section_names_its_line_and_the_nearest_key() {
    let d = Dir::new();
    assert_starts(
        &d.error("[limits]\nmax_turns = 5\nmax_turn = 3\n"),
        "p.toml:3:1: unknown field `max_turn`",
        "did you mean `max_turns`?",
    );
    assert_starts(
        &d.error("[plugins.sh]\nsource = \"builtin:shell\"\ngrants.exec = { alow = [\"git\"] }\n"),
        "p.toml:3:",
        "did you mean `allow`?",
    );
    assert_starts(
        &d.error("[[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\nmatcher = \"x\"\n"),
        "p.toml:4:1: unknown field `matcher`",
        "did you mean `match`?",
    );
    assert_starts(
        &d.error("[approval]\nhihg = \"deny\"\n"),
        "p.toml:2:1: unknown field `hihg`",
        "did you mean `high`?",
    );
}

#[test]
fn a_wrong_type_names_its_line_and_column() {
    let d = Dir::new();
    assert_starts(
        &d.error("[limits]\nmax_turns = \"many\"\n"),
        "p.toml:2:13:",
        "invalid type",
    );
    assert_starts(
        &d.error("[tools]\nenable = \"read_file\"\n"),
        "p.toml:2:10:",
        "invalid type",
    );
}

#[test]
fn a_bad_value_names_its_line_and_says_what_is_valid() {
    let d = Dir::new();
    assert_starts(
        &d.error("[limits]\nmax_parallel_tool_calls = 0\n"),
        "p.toml:2:27:",
        "must be above 0",
    );
    assert_starts(
        &d.error("[limits]\nmax_cost_usd = -1.0\n"),
        "p.toml:2:16:",
        "positive amount of dollars",
    );
    assert_starts(
        &d.error("[approval]\nhigh = \"maybe\"\n"),
        "p.toml:2:8:",
        "expected one of `allow`, `ask`, `deny`",
    );
    assert_starts(
        &d.error("[[hooks]]\nsource = \"builtin:audit\"\non = \"pre\"\nmatch = \"(write\"\n"),
        "p.toml:4:9:",
        "is not a regular expression",
    );
    assert_starts(
        &d.error("[tools]\ndisable = [\"rm -rf\"]\n"),
        "p.toml:2:11:",
        "is not a tool name or glob",
    );
    assert_starts(
        &d.error("[plugins.f]\nsource = \"builtin:fetch\"\ngrants.http = { allow = [\"ftp://x.org\"] }\n"),
        "p.toml:3:",
        "scheme `ftp` is not supported",
    );
    assert_starts(
        &d.error("[model]\nprovider = \"openia\"\nmodel = \"m\"\n"),
        "p.toml:2:12:",
        "`openai`",
    );
}

#[test]
fn values_checked_after_parsing_name_their_key() {
    let d = Dir::new();
    assert_starts(
        &d.error("[[hooks]]\nsource = \"builtin:audit\"\non = \"pre\"\non_error = \"keep\"\n"),
        "p.toml: hooks[0].on_error:",
        "\"keep\" is for post-hooks",
    );
    assert_starts(
        &d.error("[plugins.fs]\nsource = \"builtin:fs\"\nsha256 = \"ABC\"\n"),
        "p.toml: plugins.fs.sha256:",
        "64 lower-case hex digits",
    );
    assert_starts(
        &d.error("[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \"missing\", guest = \"/w\" }]\n"),
        "p.toml: plugins.fs.mounts[0]:",
        "cannot be mounted",
    );
}

#[test]
fn relative_mounts_resolve_against_the_working_directory() {
    let d = Dir::new();
    std::fs::create_dir(d.dir.path().join("src")).unwrap();
    let file = preset::load_in("default", d.dir.path()).unwrap();
    let resolved = file.resolve("default", &d.cx()).unwrap();
    let canonical = d.dir.path().canonicalize().unwrap();
    assert_eq!(resolved.plugins[0].grant.mounts[0].host, canonical);
}

#[test]
fn a_trusted_project_preset_wins_over_a_shipped_one_of_the_same_name() {
    let d = Dir::new();
    let dir = d.dir.path().join(".paddock/presets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("default.toml"),
        "name = \"mine\"\n[approval]\nhigh = \"allow\"\n",
    )
    .unwrap();
    // T1: without trust the working tree's presets are not even looked at.
    let file = preset::load_in("default", d.dir.path()).unwrap();
    assert_eq!(file.name.as_deref(), Some("default"));
    let source = preset::find("default", d.dir.path(), true).unwrap();
    assert_eq!(source.origin, preset::Origin::Project);
    let file = source.parse().unwrap();
    assert_eq!(file.name.as_deref(), Some("mine"));
    let resolved = file.resolve("default", &d.cx()).unwrap();
    assert_eq!(resolved.approval.high, ApprovalMode::Allow);
    // Absent tiers take the defaults: low and medium allow.
    assert_eq!(resolved.approval.medium, ApprovalMode::Allow);
}

#[test]
fn every_shipped_preset_parses_and_resolves() {
    let d = Dir::new();
    for (name, _) in preset::EMBEDDED {
        let file = preset::load_in(name, d.dir.path()).unwrap();
        let resolved = file.resolve(name, &d.cx()).unwrap();
        assert_eq!(resolved.name, *name);
    }
}

#[test]
fn tool_selection_enables_and_disables_by_name_and_glob_and_keeps_aliases() {
    let d = Dir::new();
    let path = d.dir.path().join("t.toml");
    std::fs::write(
        &path,
        "[tools]\nenable = [\"read_*\", \"grep\", \"glob\"]\ndisable = [\"gl?b\"]\naliases = { Read = \"read_file\" }\n",
    )
    .unwrap();
    let file = preset::load_in(path.to_str().unwrap(), d.dir.path()).unwrap();
    let resolved = file.resolve("t", &d.cx()).unwrap();
    assert!(resolved.keeps_tool("read_file"));
    assert!(resolved.keeps_tool("grep"));
    assert!(!resolved.keeps_tool("glob"));
    assert!(!resolved.keeps_tool("write_file"));
    assert_eq!(resolved.tools.aliases["Read"], "read_file");
}
