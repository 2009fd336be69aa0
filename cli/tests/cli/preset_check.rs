//! `paddock preset check` finds what breaks a session (P1, S2, S6): each finding
//! with file:line:column of the file that writes the key (the base's, for a key a preset gets
//! through `extends`) and a fix; `tools.disable = ["PLUGIN:tool"]` picks one of two plugins
//! that provide the same tool, and the session then uses the other one's.

use super::common::*;

fn check(s: &Sandbox, preset: &str) -> (Option<i32>, String) {
    let out = s.paddock(&["preset", "check", preset]);
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), shown)
}

fn write(s: &Sandbox, name: &str, text: &str) -> String {
    std::fs::write(s.file(name), text).unwrap();
    name.to_string()
}

const FS: &str =
    "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n";

#[test]
fn the_shipped_presets_check_clean() {
    let s = Sandbox::new();
    for name in ["default", "coding", "review", "untrusted"] {
        let (code, shown) = check(&s, name);
        assert_eq!(code, Some(0), "{name}: {shown}");
        assert!(shown.contains("is valid"), "{name}: {shown}");
        assert!(
            !shown.contains("warning") && !shown.contains("error"),
            "{name}: {shown}"
        );
    }
}

#[test]
fn tool_names_no_plugin_provides_are_found_with_the_closest() {
    let s = Sandbox::new();
    let preset = write(
        &s,
        "names.toml",
        &format!(
            "{FS}\n[tools]\nenable = [\"read_file\", \"red_file\", \"fs:lst_dir\", \"fss:list_dir\", \"list_*\"]\n\
             disable = [\"wirte_file\"]\naliases = {{ Read = \"read_fiel\", Write = \"write_file\" }}\n"
        ),
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    for expected in [
        "names.toml:6:24: tools.enable[1]: no loaded plugin provides a tool `red_file` (did you mean `read_file`?)",
        "names.toml:6:36: tools.enable[2]: plugin `fs` has no tool matching `lst_dir` (did you mean `list_dir`?)",
        "names.toml:6:50: tools.enable[3]: `fss:list_dir` names plugin `fss`, which this preset does not load (did you mean `fs`?)",
        "names.toml:7:12: tools.disable[0]: no loaded plugin provides a tool `wirte_file` (did you mean `write_file`?)",
        "names.toml:8:13: tools.aliases.Read: alias `Read` points at `read_fiel`, which no loaded plugin provides (did you mean `read_file`?)",
        "tools.aliases.Write: alias `Write` points at `write_file`, which the preset's [tools] enable/disable leaves out",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    assert!(
        shown.contains("fix: name one of the tools the plugins provide: read_file, write_file"),
        "{shown}"
    );
    // A dead alias is a warning; a glob that matches is no finding.
    assert!(
        shown.contains("warning: names.toml:8:33: tools.aliases.Write"),
        "{shown}"
    );
    assert!(!shown.contains("tools.enable[4]"), "{shown}");
    assert!(shown.contains("5 error(s), 1 warning(s)"), "{shown}");
}

#[test]
fn two_mounts_on_one_guest_path_and_tools_without_a_workspace() {
    let s = Sandbox::new();
    std::fs::create_dir(s.file("docs")).unwrap();
    let preset = write(
        &s,
        "mounts.toml",
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [\n  { host = \".\", guest = \"/workspace\" },\n  \
         { host = \"docs\", guest = \"/workspace/\" },\n]\n\n[plugins.search]\nsource = \"builtin:search\"\n\
         mounts = [{ host = \"docs\", guest = \"/docs\" }]\n",
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("mounts.toml:5:20: plugins.fs.mounts[1].guest: plugins.fs.mounts[1] and plugins.fs.mounts[0] are both mounted at /workspace/"),
        "{shown}"
    );
    assert!(
        shown.contains("mounts.toml:10:1: plugins.search.mounts: `grep`, `glob` take paths relative to /workspace, but plugin `search` mounts only /docs"),
        "{shown}"
    );
    assert!(
        shown.contains("fix: add a mount there: mounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]"),
        "{shown}"
    );
}

#[test]
fn grants_a_plugin_does_not_import_are_warned_and_a_preset_with_no_tools_is_an_error() {
    let s = Sandbox::new();
    let preset = write(
        &s,
        "grants.toml",
        &format!(
            "{FS}grants.exec = {{ allow = [\"ls\"], network = true }}\ngrants.http = {{ allow = [\"docs.rs\"] }}\n\
             grants.protect = [\".envrc\"]\n"
        ),
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(0), "{shown}");
    for expected in [
        "warning: grants.toml:4:8: plugins.fs.grants.exec: plugin `fs` does not import paddock:plugin/exec",
        "warning: grants.toml:5:8: plugins.fs.grants.http: plugin `fs` does not import paddock:plugin/http",
        "warning: grants.toml:6:8: plugins.fs.grants.protect: plugin `fs` has no writable mount",
        "fix: remove `grants.exec` from plugins.fs",
        "is valid (1 plugins, 0 hooks, 3 warning(s))",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    // The shell plugin imports exec: its grant is used, no warning.
    let (code, shown) = check(&s, "coding");
    assert_eq!(code, Some(0), "{shown}");
    assert!(!shown.contains("warning"), "{shown}");

    let preset = write(
        &s,
        "none.toml",
        &format!("{FS}\n[tools]\ndisable = [\"*\"]\n"),
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("none.toml:6:1: tools.disable: the preset gives the model no tools"),
        "{shown}"
    );
    let preset = write(&s, "empty.toml", "name = \"empty\"\n");
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("empty.toml:1:1: plugins: the preset gives the model no tools")
            && shown.contains("fix: add a plugin"),
        "{shown}"
    );
}

#[test]
fn a_tool_from_two_plugins_is_found_and_the_advice_picks_one_for_the_session() {
    let s = Sandbox::new();
    std::fs::create_dir(s.file("other")).unwrap();
    std::fs::write(s.file("other/notes.txt"), "from the other mount\n").unwrap();
    let both = "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n\n\
                [plugins.mine]\nsource = \"builtin:fs\"\nmounts = [{ host = \"other\", guest = \"/workspace\" }]\n\n\
                [tools]\nenable = [\"read_file\"]\n";
    let preset = write(&s, "both.toml", both);
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("both.toml:5:10: plugins.mine: tool `read_file` is provided by plugin `fs` and by plugin `mine`"),
        "{shown}"
    );
    assert!(
        shown.contains("fix: add `tools.disable = [\"mine:read_file\"]` to keep `fs`'s, or add `tools.disable = [\"fs:read_file\"]` to keep `mine`'s"),
        "{shown}"
    );
    // A session refuses to start, and says the same.
    let out = s.paddock(&[
        "tool",
        "call",
        "read_file",
        "{\"path\":\"notes.txt\"}",
        "--preset",
        &preset,
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("tools.disable = [\"mine:read_file\"]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Following the advice: the check passes and the session reads through `mine`.
    let preset = write(
        &s,
        "picked.toml",
        &format!("{both}disable = [\"fs:read_file\"]\n"),
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(0), "{shown}");
    let out = s.paddock(&[
        "tool",
        "call",
        "read_file",
        "{\"path\":\"notes.txt\"}",
        "--preset",
        &preset,
    ]);
    let content = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && content.contains("from the other mount"),
        "{content}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = s.paddock(&["tool", "list", "--preset", &preset]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("[mine: "), "{listed}");
}

#[test]
fn a_finding_in_a_base_preset_names_the_base_file() {
    let s = Sandbox::new();
    write(
        &s,
        "base.toml",
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/w\" }, { host = \".\", guest = \"/w\" }]\n",
    );
    let preset = write(
        &s,
        "top.toml",
        "extends = \"base.toml\"\n\n[tools]\nenable = [\"read_flie\", \"read_file\"]\n",
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains(
            "top.toml:4:11: tools.enable[0]: no loaded plugin provides a tool `read_flie`"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("base.toml:3:55: plugins.fs.mounts[1].guest"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "base.toml:3:1: plugins.fs.mounts: `read_file` takes paths relative to /workspace"
        ),
        "{shown}"
    );
}

#[test]
fn tool_call_says_did_you_mean_and_when_the_preset_leaves_a_tool_out() {
    let s = Sandbox::new();
    let out = s.paddock(&["tool", "call", "red_file", "{\"path\":\"notes.txt\"}"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did you mean `read_file`?"), "{err}");
    let out = s.paddock(&[
        "tool",
        "call",
        "write_file",
        "{\"path\":\"x\",\"content\":\"\"}",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "`write_file` is a tool of plugin `fs`, which preset `default` loads but leaves out"
        ) && err.contains("--preset coding"),
        "{err}"
    );
}

#[test]
fn every_unknown_key_and_wrong_type_of_a_file_is_reported_in_one_run() {
    let s = Sandbox::new();
    let preset = write(
        &s,
        "five.toml",
        "[plugins.fs]\nsource = \"builtin:fs\"\ntimeout_sm = 10\nmemory_mb = \"lots\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rx\" }]\n\n\
         [limits]\nmax_turn = 3\n\n[tools]\nenabel = [\"read_file\"]\n",
    );
    let (code, shown) = check(&s, &preset);
    assert_eq!(code, Some(2), "{shown}");
    let errors: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("error: five.toml:"))
        .collect();
    assert_eq!(errors.len(), 5, "{shown}");
    for expected in [
        "error: five.toml:3:1: unknown field `timeout_sm`",
        "did you mean `timeout_ms`?",
        "error: five.toml:4:13: invalid type: string \"lots\", expected u64",
        "error: five.toml:5:",
        "error: five.toml:8:1: unknown field `max_turn`",
        "did you mean `max_turns`?",
        "error: five.toml:11:1: unknown field `enabel`",
        "did you mean `enable`?",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    // A start reports the same five at once.
    let out = s.paddock(&["tool", "list", "--preset", &preset]);
    let started = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{started}");
    let at_start: Vec<&str> = started
        .lines()
        .filter(|l| l.starts_with("error: five.toml:"))
        .collect();
    assert_eq!(at_start, errors);
}
