//! `paddock doctor` through the real binary: on this machine every layer is in force; under a
//! seccomp profile that forbids new namespaces (what docker's default profile and Kubernetes
//! "restricted" pods do), it says the jail is missing and why, exits 1; a session whose preset
//! relies on the jail then refuses to start, naming the layer and the key that accepts running
//! without it (no silent fallback), and runs once that key says so.

use std::process::{Command, Output};

use serde_json::Value;

use crate::agent_common::{Project, paddock_bin};

/// Runs paddock under a seccomp filter like a container's default profile: `unshare`, and
/// `clone` with a user, mount or PID namespace flag, fail with EPERM; `clone3` with ENOSYS (so
/// threads fall back to `clone`). Set up by Python with ctypes (no_new_privs, the filter,
/// then exec).
fn without_namespaces(project: &Project, args: &[&str]) -> Output {
    const FILTER: &str = r#"
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
def stmt(code, k): return struct.pack("HBBI", code, 0, 0, k)
def jump(code, k, jt, jf): return struct.pack("HBBI", code, jt, jf, k)
LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, EPERM, ENOSYS = 0x7fff0000, 0x00050001, 0x00050026
NEWNS = 0x10000000 | 0x00020000 | 0x20000000
prog = b"".join([
    stmt(LD_W_ABS, 0),
    jump(JEQ, 435, 5, 0),
    jump(JEQ, 272, 3, 0),
    jump(JEQ, 56, 0, 3),
    stmt(LD_W_ABS, 16),
    jump(JSET, NEWNS, 0, 1),
    stmt(RET, EPERM),
    stmt(RET, ALLOW),
    stmt(RET, ENOSYS),
])
assert libc.prctl(38, 1, 0, 0, 0) == 0
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
fbuf = ctypes.create_string_buffer(fprog)
assert libc.prctl(22, 2, ctypes.addressof(fbuf), 0, 0) == 0, ctypes.get_errno()
os.execv(sys.argv[1], sys.argv[1:])
"#;
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(FILTER)
        .arg(paddock_bin())
        .args(args)
        .current_dir(project.dir.path())
        .env("PADDOCK_HOME", project.home.path())
        .env("NO_COLOR", "1");
    cmd.output().expect("run python3")
}

/// `ls` granted and approved, so only the jail can stop it.
const EXEC_PRESET: &str = r#"name = "exec"
[plugins.fs]
source = "builtin:fs"
mounts = [{ host = ".", guest = "/workspace", mode = "ro" }]
[plugins.shell]
source = "builtin:shell"
mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]
grants.exec = { allow = ["ls *", "ls"] }
[approval]
low = "allow"
medium = "allow"
high = "allow"
"#;

/// The first line `paddock doctor` printed: its verdict.
fn first_line(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().next().unwrap_or_default().to_string()
}

fn layers(output: &Output) -> Vec<Value> {
    let value: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    value["layers"].as_array().unwrap().clone()
}

fn layer<'a>(layers: &'a [Value], name: &str) -> &'a Value {
    layers.iter().find(|l| l["name"] == name).unwrap()
}

#[test]
fn on_this_machine_every_layer_is_in_force() {
    let project = Project::new(&[]);
    // The text starts with its one-line verdict.
    let text = project.command(&["doctor"]).output().unwrap();
    let first = first_line(&text);
    assert!(
        first.starts_with("all 6 layers are in force and every canary held"),
        "{first}"
    );
    let output = project.command(&["doctor", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let layers = layers(&output);
    let names: Vec<&str> = layers.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "wasm",
            "fs-guard",
            "namespaces",
            "landlock",
            "seccomp",
            "rlimits"
        ]
    );
    assert!(layers.iter().all(|l| l["in_force"] == true), "{layers:?}");
    // The canaries ran in the jail for real: each route out stopped, the granted write done.
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let canaries = report["canaries"].as_array().expect("canaries ran");
    let canary_names: Vec<&str> = canaries
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        canary_names,
        ["write-granted", "write-outside", "read-outside", "socket"]
    );
    assert!(canaries.iter().all(|c| c["held"] == true), "{canaries:?}");
    for (name, how) in [
        ("write-outside", "Permission denied"),
        ("read-outside", "Permission denied"),
        ("socket", "Operation not permitted"),
    ] {
        let canary = canaries.iter().find(|c| c["name"] == name).unwrap();
        assert!(
            canary["detail"].as_str().unwrap().contains(how),
            "{name}: {canary}"
        );
    }
    assert_eq!(report["all_in_force"], true);

    // A session records the same facts in its session/start, and its banner shows them.
    let (banner, recorded) = demo_run(&project, project.command(&["run", "--demo"]).output());
    assert!(
        banner.contains("sandbox: wasm, fs-guard, namespaces, landlock, seccomp, rlimits in force"),
        "{banner}"
    );
    let recorded: Vec<(&str, bool)> = recorded
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), l["in_force"] == true))
        .collect();
    let all: Vec<(&str, bool)> = names.iter().map(|n| (*n, true)).collect();
    assert_eq!(recorded, all);
}

/// A finished `run --demo`'s banner (standard output) and the layers its `session/start`
/// records.
fn demo_run(project: &Project, run: std::io::Result<Output>) -> (String, Vec<Value>) {
    let run = run.unwrap();
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let start = &project.events(&project.only_session())[0];
    (
        String::from_utf8_lossy(&run.stdout).into_owned(),
        start["data"]["layers"].as_array().unwrap().clone(),
    )
}

#[test]
fn where_namespaces_are_forbidden_doctor_says_so_and_exec_fails_closed() {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    let text = without_namespaces(&project, &["doctor"]);
    let first = first_line(&text);
    assert!(
        first.starts_with("not every layer holds here (missing: namespaces"),
        "the verdict names what is missing: {first}"
    );
    let output = without_namespaces(&project, &["doctor", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let layers = layers(&output);
    let namespaces = layer(&layers, "namespaces");
    assert_eq!(namespaces["in_force"], false);
    assert!(
        namespaces["detail"]
            .as_str()
            .unwrap()
            .contains("refused user namespaces"),
        "{namespaces}"
    );
    // The other layers are still there, and say so.
    assert_eq!(layer(&layers, "wasm")["in_force"], true);
    assert_eq!(layer(&layers, "landlock")["in_force"], true);
    // The canaries cannot run without the jail, and that is said, not skipped.
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["canaries"]["not_run"]
            .as_str()
            .unwrap()
            .contains("cannot confine"),
        "{report}"
    );

    // A session that does not rely on the jail starts, and its banner and session/start say
    // what is missing.
    let (banner, recorded) = demo_run(
        &project,
        Ok(without_namespaces(&project, &["run", "--demo"])),
    );
    assert!(
        banner.contains("MISSING namespaces (the kernel refused user namespaces"),
        "{banner}"
    );
    let namespaces = recorded.iter().find(|l| l["name"] == "namespaces").unwrap();
    assert_eq!(namespaces["in_force"], false, "{recorded:?}");
    std::fs::remove_dir_all(project.home.path().join("sessions")).unwrap();

    let text = without_namespaces(&project, &["doctor"]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("MISSING") && shown.contains("confine = \"off\""),
        "{shown}"
    );

    // A preset that relies on the jail does not start: the error names the missing layer, the
    // key that relies on it and the one that accepts running without it.
    std::fs::write(project.dir.path().join("exec.toml"), EXEC_PRESET).unwrap();
    let call = without_namespaces(
        &project,
        &[
            "tool",
            "call",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--preset",
            "./exec.toml",
            "--json",
        ],
    );
    assert_eq!(call.status.code(), Some(2), "{call:?}");
    let out: Value = serde_json::from_slice(&call.stdout).expect("one JSON object");
    assert_eq!(out["error"]["code"], "SANDBOX_UNAVAILABLE", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    for part in [
        "namespaces layer",
        "`plugins.shell.grants.exec`",
        "confine = \"off\"",
        "WebAssembly sandbox is unaffected",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(
        project.sessions().is_empty(),
        "a session that cannot start leaves nothing"
    );
    // Accepting it explicitly is the way through, and the program then runs unconfined.
    std::fs::write(
        project.dir.path().join("exec.toml"),
        EXEC_PRESET.replace(
            "grants.exec = { allow = [\"ls *\", \"ls\"] }",
            "grants.exec = { allow = [\"ls *\", \"ls\"], confine = \"off\" }",
        ),
    )
    .unwrap();
    let ls = without_namespaces(
        &project,
        &[
            "tool",
            "call",
            "run_command",
            r#"{"program":"ls"}"#,
            "--preset",
            "./exec.toml",
            "--json",
        ],
    );
    let out: Value = serde_json::from_slice(&ls.stdout).expect("one JSON object");
    assert_eq!(out["ok"], true, "{out}");
    assert!(
        out["content"].as_str().unwrap().contains("notes.txt"),
        "{out}"
    );
}
