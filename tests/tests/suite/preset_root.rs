//! The project from any directory inside it (T1, P1), through the real binary: run from a
//! subdirectory of a repository, paddock finds the root (the nearest `.git` or `.paddock/`
//! above), uses its `.paddock/presets` once trusted, and reads the instruction files of the
//! root and of every directory down to the working one, nearest last, each named in the
//! banner and hashed in `session/start`; the banner says which directory is mounted.

use std::process::{Output, Stdio};

use crate::agent_common::{Project, text};

fn run_in(project: &Project, dir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = project.command(args);
    cmd.current_dir(dir)
        .env("XDG_CONFIG_HOME", project.home.path().join("config"))
        .stdin(Stdio::null());
    cmd.output().expect("paddock runs")
}

#[test]
fn a_subdirectory_finds_the_project_presets_and_instructions_of_its_root() {
    let project = Project::new(&[("AGENTS.md", "Root rules.\n")]);
    let root = project.dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".paddock/presets")).unwrap();
    std::fs::write(
        root.join(".paddock/presets/mine.toml"),
        "name = \"mine\"\n[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\" }]\n",
    )
    .unwrap();
    let deep = root.join("crates/deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(root.join("crates/AGENTS.md"), "Crate rules.\n").unwrap();
    std::fs::write(deep.join("notes.txt"), "deep notes\n").unwrap();

    // Untrusted: said in one line, and the project preset is not used.
    let out = run_in(&project, &deep, &["tool", "list", "--preset", "mine"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("ignoring project configuration")
            && text(&out).contains("paddock trust"),
        "{}",
        text(&out)
    );
    let trusted = run_in(&project, &deep, &["trust"]);
    assert_eq!(trusted.status.code(), Some(0), "{}", text(&trusted));
    assert!(
        text(&trusted).contains("crates/AGENTS.md"),
        "{}",
        text(&trusted)
    );

    let out = run_in(
        &project,
        &deep,
        &["run", "--demo", "--preset", "mine", "look"],
    );
    let said = text(&out);
    assert!(said.contains("preset mine (project "), "{said}");
    assert!(
        said.contains(&format!("mounted: {} ", deep.display()))
            && said.contains(&format!("project root {}", root.display())),
        "{said}"
    );
    assert!(
        said.contains("project instructions: AGENTS.md (12 bytes, sha256 ")
            && said.contains(", crates/AGENTS.md (13 bytes, sha256 "),
        "{said}"
    );
    let events = project.events(&project.only_session());
    let start = &events[0]["data"];
    let files: Vec<&str> = start["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["AGENTS.md", "crates/AGENTS.md"]);
    let system = start["system"].as_str().unwrap();
    let (root_at, crate_at) = (
        system.find("Root rules.").expect("root instructions"),
        system.find("Crate rules.").expect("nearer instructions"),
    );
    assert!(root_at < crate_at, "nearest last: {system}");
    assert_eq!(start["cwd"], deep.display().to_string());
}
