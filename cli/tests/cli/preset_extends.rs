//! `extends` and `preset show --toml` (P1, T1): a preset builds on another by name
//! or path with the documented merge rules, cycles are refused with the chain, the effective
//! preset prints as TOML that `preset check` accepts, and a trusted project preset cannot
//! reach outside `.paddock/presets` through `extends` or a `source` path.

use super::common::*;

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_preset_extends_a_shipped_one_and_its_effective_toml_checks() {
    let s = Sandbox::new();
    std::fs::write(
        s.file("mine.toml"),
        "extends = \"coding\"\nname = \"mine\"\n[plugins.fs]\ntimeout_ms = 5000\n[tools]\nenable = [\"read_file\"]\n",
    )
    .unwrap();
    let shown = s.paddock(&["preset", "show", "mine.toml", "--toml"]);
    assert!(shown.status.success(), "{}", out(&shown));
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    let table: toml::Table = toml::from_str(&text).expect("valid TOML");
    // Tables merge: fs keeps coding's source and mounts, takes the new timeout.
    assert_eq!(
        table["plugins"]["fs"]["source"].as_str(),
        Some("builtin:fs")
    );
    assert_eq!(
        table["plugins"]["fs"]["timeout_ms"].as_integer(),
        Some(5000)
    );
    assert!(table["plugins"]["fs"].get("mounts").is_some());
    assert!(
        table["plugins"].get("search").is_some(),
        "coding's other plugins stay"
    );
    // Lists replace.
    assert_eq!(table["tools"]["enable"].as_array().unwrap().len(), 1);
    assert!(table.get("hooks").is_some(), "coding's hooks stay");
    assert!(table.get("extends").is_none());

    std::fs::write(s.file("effective.toml"), &text).unwrap();
    let check = s.paddock(&["preset", "check", "effective.toml"]);
    assert!(check.status.success(), "{}", out(&check));
    let check = s.paddock(&["preset", "check", "mine.toml"]);
    assert!(
        check.status.success() && out(&check).contains("preset `mine` is valid"),
        "{}",
        out(&check)
    );
    // The tool selection of the merged preset is what runs; the start shows the same
    // warnings `check` does (coding's aliases now point at tools left out).
    let listed = s.paddock(&["tool", "list", "--preset", "mine.toml"]);
    let tools = String::from_utf8_lossy(&listed.stdout);
    assert!(
        tools.contains("read_file") && !tools.contains("write_file"),
        "{}",
        out(&listed)
    );
    let warned = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(
        warned
            .matches("warning: <embedded preset coding>:89:33: tools.aliases.Write:")
            .count(),
        1,
        "{warned}"
    );
}

#[test]
fn an_extends_cycle_is_refused_with_its_chain() {
    let s = Sandbox::new();
    std::fs::write(s.file("a.toml"), "extends = \"b.toml\"\n").unwrap();
    std::fs::write(s.file("b.toml"), "extends = \"./a.toml\"\n").unwrap();
    let check = s.paddock(&["preset", "check", "a.toml"]);
    assert_eq!(check.status.code(), Some(2));
    let shown = out(&check);
    assert!(shown.contains("extends makes a cycle"), "{shown}");
    assert!(
        shown.contains("a.toml -> ") && shown.contains("b.toml -> "),
        "{shown}"
    );
}

#[test]
fn a_trusted_project_preset_cannot_extend_or_load_from_outside_its_directory() {
    let s = Sandbox::new();
    let presets = s.work.path().join(".paddock/presets");
    std::fs::create_dir_all(&presets).unwrap();
    std::fs::write(s.file("outside.toml"), "[approval]\nhigh = \"allow\"\n").unwrap();
    std::fs::write(
        presets.join("esc.toml"),
        "extends = \"../../outside.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        presets.join("wasm.toml"),
        "[plugins.x]\nsource = \"../../x.wasm\"\n",
    )
    .unwrap();
    std::fs::write(
        presets.join("ok.toml"),
        "extends = \"default\"\nname = \"ok\"\n",
    )
    .unwrap();
    assert!(s.paddock(&["trust"]).status.success());

    let check = s.paddock(&["preset", "check", "esc"]);
    assert_eq!(check.status.code(), Some(2), "{}", out(&check));
    assert!(
        out(&check).contains("which is all that trusting this project covers"),
        "{}",
        out(&check)
    );
    let check = s.paddock(&["preset", "check", "wasm"]);
    assert_eq!(check.status.code(), Some(2), "{}", out(&check));
    assert!(out(&check).contains("plugins.x.source"), "{}", out(&check));
    // By name is fine: the base is found as --preset would find it.
    let check = s.paddock(&["preset", "check", "ok"]);
    assert!(check.status.success(), "{}", out(&check));
}

#[test]
fn an_untrusted_project_preset_pulls_nothing_in() {
    let s = Sandbox::new();
    let presets = s.work.path().join(".paddock/presets");
    std::fs::create_dir_all(&presets).unwrap();
    // A project preset named like a shipped one, extending a path: never read untrusted.
    std::fs::write(presets.join("coding.toml"), "extends = \"/etc/passwd\"\n").unwrap();
    let shown = s.paddock(&["preset", "show", "coding", "--toml"]);
    assert!(shown.status.success(), "{}", out(&shown));
    assert!(
        out(&shown).contains("builtin:protect-paths"),
        "the shipped coding preset"
    );
    assert!(!out(&shown).contains("/etc/passwd"));
}
