//! Subagents and skills that ask for more than their parent, through the real binary: every
//! grant dimension made wider in a child's preset (a mount the parent lacks, rw where the
//! parent reads only, an exec pattern the parent does not allow, the network, a looser
//! approval, a dropped hook, a bigger budget, a depth past the limit) is refused at spawn,
//! before any model is asked, naming the dimension; a skill whose declared needs are wider is
//! told so, by the same proof.

use crate::agent_common::{Project, text};
use serde_json::Value;

/// A preset's knobs: each hostile child turns one.
#[derive(Clone)]
struct Knobs {
    mounts: &'static str,
    allow: &'static str,
    network: bool,
    high: &'static str,
    hook: bool,
    max_turns: u64,
    max_depth: u64,
}

const PARENT: Knobs = Knobs {
    mounts: r#"[{ host = ".", guest = "/workspace", mode = "ro" }]"#,
    allow: r#""ls", "git status *", "python3 *""#,
    network: false,
    high: "ask",
    hook: true,
    max_turns: 10,
    max_depth: 1,
};

fn preset(k: &Knobs) -> String {
    let hook = if k.hook {
        "[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nmatch = \"write_file|edit_file\"\nconfig = { globs = [\".env\"] }\n"
    } else {
        ""
    };
    format!(
        "[limits]\nmax_turns = {}\nmax_depth = {}\n\n[plugins.fs]\nsource = \"builtin:fs\"\nmounts = {}\n\n\
         [plugins.shell]\nsource = \"builtin:shell\"\nmounts = {}\n\
         grants.exec = {{ allow = [{}], ask = [\"git push *\"], deny = [\"rm *\"], env = [\"PATH\"], network = {}, optional = true }}\n\n\
         {hook}\n[approval]\nhigh = \"{}\"\n",
        k.max_turns, k.max_depth, k.mounts, k.mounts, k.allow, k.network, k.high
    )
}

fn write(project: &Project, name: &str, knobs: &Knobs) -> String {
    let path = project.dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, preset(knobs)).unwrap();
    path.display().to_string()
}

async fn spawn(project: &Project, parent: &str, child: Option<&str>) -> Value {
    let mut args = serde_json::json!({"description": "sub-task", "prompt": "do it"});
    if let Some(child) = child {
        args["preset"] = child.into();
    }
    let out = project
        .paddock(&[
            "tool",
            "call",
            "task",
            &args.to_string(),
            "--preset",
            parent,
            "--json",
        ])
        .await;
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

fn assert_refused(out: &Value, dimension: &str) {
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"]["code"], "DENIED", "{out}");
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("wider than its parent in {dimension}:"))
            && message.contains("no model was asked"),
        "{dimension}: {message}"
    );
}

/// `child` spawned under `parent` is refused in `dimension`, and the message names `named`.
async fn refused_naming(
    project: &Project,
    parent: &str,
    child: &str,
    dimension: &str,
    named: &str,
) {
    let out = spawn(project, parent, Some(child)).await;
    assert_refused(&out, dimension);
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(named), "{named}: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_wider_in_any_dimension_is_refused_at_spawn_naming_it() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let outside = tempfile::tempdir().unwrap();
    let outside_mount: &'static str = Box::leak(
        format!(
            r#"[{{ host = ".", guest = "/workspace", mode = "ro" }}, {{ host = {:?}, guest = "/x", mode = "ro" }}]"#,
            outside.path().display().to_string()
        )
        .into_boxed_str(),
    );
    let parent = write(&project, "parent", &PARENT);
    let cases: Vec<(&str, Knobs)> = vec![
        (
            "mounts",
            Knobs {
                mounts: outside_mount,
                ..PARENT
            },
        ),
        (
            "mounts",
            Knobs {
                mounts: r#"[{ host = ".", guest = "/workspace", mode = "rw" }]"#,
                ..PARENT
            },
        ),
        (
            "exec",
            Knobs {
                allow: r#""ls", "curl *""#,
                ..PARENT
            },
        ),
        (
            "network",
            Knobs {
                network: true,
                ..PARENT
            },
        ),
        (
            "approval",
            Knobs {
                high: "allow",
                ..PARENT
            },
        ),
        (
            "hooks",
            Knobs {
                hook: false,
                ..PARENT
            },
        ),
        (
            "budgets",
            Knobs {
                max_turns: 11,
                ..PARENT
            },
        ),
        (
            "depth",
            Knobs {
                max_depth: 2,
                ..PARENT
            },
        ),
    ];
    for (i, (dimension, knobs)) in cases.iter().enumerate() {
        let child = write(&project, &format!("child{i}"), knobs);
        let out = spawn(&project, &parent, Some(&child)).await;
        assert_refused(&out, dimension);
    }
    // Depth past the limit: a parent allowed no children refuses even its own preset.
    let leaf = write(
        &project,
        "leaf",
        &Knobs {
            max_depth: 0,
            ..PARENT
        },
    );
    assert_refused(&spawn(&project, &leaf, None).await, "depth");
    // The shipped read-only preset cannot start a writing child.
    let out = spawn(&project, "default", Some("coding")).await;
    assert_refused(&out, "mounts");
    // No session was started for any refused child: only the parents' own sessions exist.
    let sessions = std::fs::read_dir(project.home.path().join("sessions"))
        .unwrap()
        .count();
    assert_eq!(
        sessions,
        cases.len() + 2,
        "one session per `tool call`, none for a child"
    );
}

/// A skill in the user's skills folder (`HOME/.agents/skills/NAME/SKILL.md`) needing `needs`.
fn skill(home: &std::path::Path, name: &str, needs: &str) {
    let dir = home.join(".agents/skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: test skill {name}\nneeds:\n{needs}---\nRun it.\n"),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_whose_declared_needs_are_wider_is_named_by_the_same_proof() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let home = tempfile::tempdir().unwrap();
    let cases = [
        ("fits", "  exec:\n    - python3 scripts/run.py *\n", None),
        ("mount", "  mounts:\n    - /etc\n", Some("mounts")),
        ("rw", "  mounts:\n    - notes.txt:rw\n", Some("mounts")),
        ("exec", "  exec:\n    - curl *\n", Some("exec")),
        ("net", "  network:\n    - pypi.org\n", Some("network")),
    ];
    for (name, needs, _) in &cases {
        skill(home.path(), name, needs);
    }
    let parent = write(&project, "parent", &PARENT);
    for (name, _, wider) in &cases {
        let args = serde_json::json!({"name": name}).to_string();
        let out = project
            .command(&[
                "tool", "call", "skill", &args, "--preset", &parent, "--json",
            ])
            .env("HOME", home.path())
            .output()
            .unwrap();
        let out: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        let content = out["content"].as_str().unwrap_or_default().to_string();
        match wider {
            None => assert!(
                content.contains("within this session's grants") && !content.contains("NOT"),
                "{out}"
            ),
            Some(d) => assert!(
                content.contains(&format!(
                    "NOT within this session's grants (wider than its parent in {d}:"
                )),
                "{name}: {out}"
            ),
        }
    }
}

/// A session cannot plant a skill for a later one: `.agents` is protected like `.paddock`, so
/// neither `write_file` nor a command in the jail's shell creates `.agents/skills/NAME/SKILL.md`,
/// and the real tool that would list it, `paddock skill list` in the trusted project, never
/// shows it. The control, a skill the user wrote there, is listed.
#[test]
fn a_session_cannot_plant_a_skill_that_a_later_session_lists() {
    let project = Project::new(&[("notes.txt", "x\n")]);
    let skill = |name: &str| format!("---\nname: {name}\ndescription: run me\n---\nRun it.\n");
    let control = project.dir.path().join(".agents/skills/mine");
    std::fs::create_dir_all(&control).unwrap();
    std::fs::write(control.join("SKILL.md"), skill("mine")).unwrap();
    let out = project.batch(
        "coding",
        &[
            (
                "write_file",
                serde_json::json!({"path": ".agents/skills/planted/SKILL.md", "content": skill("planted")}),
            ),
            (
                "shell",
                serde_json::json!({"command": "mkdir -p .agents/skills/planted2 && printf -- '---\\nname: planted2\\ndescription: d\\n---\\nx\\n' > .agents/skills/planted2/SKILL.md; mkdir -p sub/.agents/skills/p3"}),
            ),
        ],
    );
    for planted in ["planted/SKILL.md", "planted2/SKILL.md"] {
        assert!(
            !project
                .dir
                .path()
                .join(".agents/skills")
                .join(planted)
                .exists(),
            "{planted} was written: {}",
            text(&out)
        );
    }
    let trusted = project.command(&["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", text(&trusted));
    let listed = project.command(&["skill", "list"]).output().unwrap();
    let said = text(&listed);
    assert!(said.contains("mine"), "the control is listed: {said}");
    assert!(!said.contains("planted"), "{said}");
}

/// A repository's skill folder that is a symlink out of the project (`.agents/skills/x ->`
/// a folder elsewhere that holds a SKILL.md and a file beside it) is not loaded even when the
/// project is trusted: `paddock skill list` names it as an error and never lists it, and the
/// `skill` tool of a session cannot read the file beside it. The control in the project is
/// listed.
#[test]
fn a_project_skill_folder_that_leads_outside_the_project_is_not_loaded() {
    let project = Project::new(&[("notes.txt", "x\n")]);
    let skill = |name: &str| format!("---\nname: {name}\ndescription: run me\n---\nRun it.\n");
    let skills = project.dir.path().join(".agents/skills");
    std::fs::create_dir_all(skills.join("mine")).unwrap();
    std::fs::write(skills.join("mine/SKILL.md"), skill("mine")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("SKILL.md"), skill("linked")).unwrap();
    std::fs::write(elsewhere.path().join("secret.txt"), "SECRET-OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), skills.join("linked")).unwrap();

    let trusted = project.command(&["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", text(&trusted));
    let listed = project.command(&["skill", "list"]).output().unwrap();
    let said = text(&listed);
    assert!(said.contains("mine"), "the control is listed: {said}");
    assert!(
        said.contains("leads outside the project") && said.contains("linked"),
        "the linked folder is named as refused: {said}"
    );
    let out = project.batch(
        "coding",
        &[(
            "skill",
            serde_json::json!({"name": "linked", "file": "secret.txt"}),
        )],
    );
    assert!(!text(&out).contains("SECRET-OUTSIDE"), "{}", text(&out));
}

/// A plugin's own grant, as a child's preset would raise it.
struct PluginKnobs {
    fs: &'static str,
    disable: &'static str,
}

const PLUGIN_PARENT: PluginKnobs = PluginKnobs {
    fs: "fuel = 1_000_000_000\ntimeout_ms = 10_000\nmemory_mb = 128\noutput_bytes = 65_536\n\
         mounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
    disable: r#"["write_file", "edit_file"]"#,
};

/// The parent's plugins: fs reads the project; search reads the project and `outside`.
fn plugin_preset(k: &PluginKnobs, outside: &str) -> String {
    format!(
        "[plugins.fs]\nsource = \"builtin:fs\"\n{}\n\n[plugins.search]\nsource = \"builtin:search\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}, {{ host = {outside:?}, guest = \"/x\", mode = \"ro\" }}]\n\n\
         [tools]\ndisable = {}\n",
        k.fs, k.disable
    )
}

/// Per plugin, not only over the session: a child that raises one plugin's fuel, deadline,
/// memory or output budget, lifts its fuel, gives it a mount only another plugin of the parent
/// has, or keeps a tool the parent's preset leaves out is refused at spawn, naming the
/// dimension (`limits`, `mounts`, `tools`) and the plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_wider_in_one_plugins_own_grant_is_refused_naming_it() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().display().to_string();
    let write_preset = |name: &str, k: &PluginKnobs| {
        let path = project.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, plugin_preset(k, &outside)).unwrap();
        path.display().to_string()
    };
    let parent = write_preset("parent", &PLUGIN_PARENT);
    let fs = |text: &'static str| PluginKnobs {
        fs: text,
        ..PLUGIN_PARENT
    };
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let moved = leak(format!(
        "fuel = 1_000_000_000\ntimeout_ms = 10_000\nmemory_mb = 128\noutput_bytes = 65_536\n\
         mounts = [{{ host = {outside:?}, guest = \"/workspace\", mode = \"ro\" }}]"
    ));
    let cases: Vec<(&str, &str, PluginKnobs)> = vec![
        (
            "limits",
            "plugins.fs.limits.fuel",
            fs(
                "fuel = 2_000_000_000\ntimeout_ms = 10_000\nmemory_mb = 128\noutput_bytes = 65_536\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            ),
        ),
        (
            "limits",
            "plugins.fs.limits.fuel",
            fs(
                "fuel = \"off\"\ntimeout_ms = 10_000\nmemory_mb = 128\noutput_bytes = 65_536\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            ),
        ),
        (
            "limits",
            "plugins.fs.limits.timeout",
            fs(
                "fuel = 1_000_000_000\ntimeout_ms = 20_000\nmemory_mb = 128\noutput_bytes = 65_536\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            ),
        ),
        (
            "limits",
            "plugins.fs.limits.memory_bytes",
            fs(
                "fuel = 1_000_000_000\ntimeout_ms = 10_000\nmemory_mb = 256\noutput_bytes = 65_536\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            ),
        ),
        (
            "limits",
            "plugins.fs.output_bytes",
            fs(
                "fuel = 1_000_000_000\ntimeout_ms = 10_000\nmemory_mb = 128\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            ),
        ),
        ("mounts", "plugins.fs", fs(moved)),
        (
            "tools",
            "write_file",
            PluginKnobs {
                disable: r#"["edit_file"]"#,
                ..PLUGIN_PARENT
            },
        ),
    ];
    for (i, (dimension, named, knobs)) in cases.iter().enumerate() {
        let child = write_preset(&format!("child{i}"), knobs);
        refused_naming(&project, &parent, &child, dimension, named).await;
    }
    // The control: a child that lowers the limits and keeps fewer tools is within (it starts,
    // and fails only for want of a model to ask).
    let narrower = write_preset(
        "narrower",
        &PluginKnobs {
            fs: "fuel = 500_000_000\ntimeout_ms = 5_000\nmemory_mb = 64\noutput_bytes = 4_096\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]",
            disable: r#"["write_file", "edit_file", "list_dir"]"#,
        },
    );
    let out = spawn(&project, &parent, Some(&narrower)).await;
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.contains("wider than its parent"), "{out}");
}

/// A skill's folder swapped for a symlink by the session itself (its shell, in the jail,
/// where the preset's `skills` folder is writable) after the skill was found: the `skill` tool
/// still lists and reads the folder that was found, never the one the link points at.
#[test]
fn a_skill_folder_swapped_for_a_symlink_mid_session_lists_and_reads_nothing_outside() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let demo = project.dir.path().join("skills/demo");
    std::fs::create_dir_all(&demo).unwrap();
    std::fs::write(
        demo.join("SKILL.md"),
        "---\nname: demo\ndescription: a demo\n---\nRead notes.md.\n",
    )
    .unwrap();
    std::fs::write(demo.join("notes.md"), "the real notes\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(outside.path().join("notes.md"), "PRIVATE NOTES\n").unwrap();
    let preset = project.dir.path().join("swap.toml");
    std::fs::write(
        &preset,
        "skills = [\"skills\"]\n\n[plugins.shell]\nsource = \"builtin:shell\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
         grants.exec = { allow = [\"mv *\", \"ln *\"], env = [\"PATH\"] }\n\n\
         [approval]\nmedium = \"allow\"\nhigh = \"allow\"\n",
    )
    .unwrap();
    let swap = format!(
        "mv skills/demo skills/demo-old && ln -s {} skills/demo",
        outside.path().display()
    );
    let out = project.batch(
        preset.to_str().unwrap(),
        &[
            ("shell", serde_json::json!({"command": swap})),
            ("skill", serde_json::json!({"name": "demo"})),
            (
                "skill",
                serde_json::json!({"name": "demo", "file": "notes.md"}),
            ),
            (
                "skill",
                serde_json::json!({"name": "demo", "file": "id_rsa"}),
            ),
        ],
    );
    let shown = text(&out);
    assert!(
        project.dir.path().join("skills/demo").is_symlink(),
        "the swap ran: {shown}"
    );
    let records: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_else(|| panic!("{shown}"));
    let content = |i: usize| records[i].to_string();
    assert!(
        content(1).contains("notes.md") && !content(1).contains("id_rsa"),
        "{shown}"
    );
    assert!(content(2).contains("the real notes"), "{shown}");
    assert!(!shown.contains("PRIVATE"), "{shown}");
}

/// Per MCP server too: a child that keeps a tool of the server the parent's `[tools]` leaves
/// out, raises its call deadline, passes it an environment variable, or gives it a directory
/// the parent gives only to a plugin is refused at spawn, naming the dimension and the server.
/// Before, servers were compared by what runs them alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_wider_in_one_mcp_servers_grant_is_refused_naming_it() {
    let Some(python) = crate::mcp_http::installed("PADDOCK_MCP_PYTHON") else {
        return;
    };
    let project = Project::warm(&[("notes.txt", "notes")]);
    let outside = tempfile::tempdir().unwrap();
    let reads = crate::agent_common::python_server_reads(&python).join(", ");
    let script = crate::agent_common::mcp_scripts().join("confined_server.py");
    let write_preset = |name: &str, server: &str, disable: &str| {
        let text = format!(
            "[plugins.fs]\nsource = \"builtin:fs\"\n\
             mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
             [mcp.py]\ncommand = {:?}\nargs = [{:?}]\nread = [{reads}]\n{server}\n\n\
             [tools]\ndisable = {disable}\n",
            python.display().to_string(),
            script.display().to_string(),
        );
        let path = project.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let mount = |host: &str| {
        format!("mounts = [{{ host = {host:?}, guest = \"/workspace\", mode = \"ro\" }}]")
    };
    let outside_mount = mount(&outside.path().display().to_string());
    let parent_server = format!("{outside_mount}\ntimeout_ms = 10_000");
    let parent = write_preset("parent", &parent_server, r#"["write_text"]"#);
    let cases = [
        ("tools", "write_text", parent_server.clone(), "[]"),
        (
            "limits",
            "mcp.py.timeout_ms",
            format!("{outside_mount}\ntimeout_ms = 20_000"),
            r#"["write_text"]"#,
        ),
        (
            "limits",
            "HOME",
            format!("{parent_server}\nenv = [\"HOME\"]"),
            r#"["write_text"]"#,
        ),
        // The project is the parent's fs plugin's, not its server's.
        (
            "mounts",
            "mcp.py",
            format!("{}\ntimeout_ms = 10_000", mount(".")),
            r#"["write_text"]"#,
        ),
    ];
    for (i, (dimension, named, server, disable)) in cases.iter().enumerate() {
        let child = write_preset(&format!("child{i}"), server, disable);
        refused_naming(&project, &parent, &child, dimension, named).await;
    }
    // The control: the same server with a shorter deadline and fewer tools is within.
    let narrower = write_preset(
        "narrower",
        &format!("{outside_mount}\ntimeout_ms = 5_000"),
        r#"["write_text", "connect"]"#,
    );
    let out = spawn(&project, &parent, Some(&narrower)).await;
    let message = out["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.contains("wider than its parent"), "{out}");
}
