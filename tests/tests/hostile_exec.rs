//! Attacks that go around the WASM sandbox through the programs `exec` starts (K1, K2, S6),
//! through the real binary: `paddock tool call run_command` with a preset that allows shells,
//! as a model's call would. Each test asserts from the outside: the decoy outside the mounts is
//! neither read nor written, a planted config creates no marker, a loopback listener sees no
//! connection, paddock is not signalled, and nothing the program started survives the call.

mod agent_common;
mod exec_attack;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_common::text;
use exec_attack::{Attack, SECRET};

#[test]
fn a_program_cannot_read_or_write_outside_its_mounts() {
    let a = Attack::new("rw", "");
    let decoy = a.decoy().display().to_string();
    let out = a.sh(&format!(
        "cat {decoy}/secret.txt; echo pwned > {decoy}/planted; cat $HOME/.bashrc /root/.bashrc; \
         ls {decoy}; echo inside > inside.txt; echo done"
    ));
    assert!(!out.contains(SECRET), "the decoy was read: {out}");
    assert!(
        !a.decoy().join("planted").exists(),
        "the decoy dir was written: {out}"
    );
    assert!(out.contains("done"), "the program ran: {out}");
    assert_eq!(
        std::fs::read_to_string(a.workspace().join("inside.txt")).unwrap(),
        "inside\n",
        "the rw mount stays writable: {out}"
    );
}

#[test]
fn a_read_only_mount_stays_read_only_for_programs() {
    let a = Attack::new("ro", "");
    let out = a.sh("echo x > new.txt; echo x >> README.md; rm README.md; echo done");
    assert!(out.contains("done"), "{out}");
    assert!(!a.workspace().join("new.txt").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(a.workspace().join("README.md")).unwrap(),
        "hello\n",
        "{out}"
    );
}

#[test]
fn git_config_and_hooks_cannot_be_planted_whatever_the_spelling() {
    let a = Attack::new("rw", "");
    let w = a.workspace();
    std::fs::create_dir_all(w.join(".git/hooks")).unwrap();
    std::fs::write(w.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::create_dir(w.join("sub")).unwrap();
    let marker = a.decoy().join("fsmonitor-ran");
    let payload = format!("[core]\\n\\tfsmonitor = touch {}\\n", marker.display());
    let out = a.sh(&format!(
        "printf '{payload}' >> .git/config; printf '{payload}' >> ./.git//config; \
         printf '{payload}' >> sub/../.git/config; ln -s .git g && printf '{payload}' >> g/config; \
         ln .git/config hard; printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit; \
         mv .git moved; rm -rf .git; echo done",
        m = marker.display()
    ));
    assert!(out.contains("done"), "{out}");
    assert_eq!(
        std::fs::read_to_string(w.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n",
        "{out}"
    );
    assert!(!w.join(".git/hooks/pre-commit").exists(), "{out}");
    assert!(!w.join("moved").exists(), "{out}");
    assert!(
        !w.join("hard").exists(),
        "a hard link across the protection: {out}"
    );
}

#[test]
fn protected_paths_a_program_creates_are_removed_after_the_call() {
    let a = Attack::new("rw", "");
    let w = a.workspace();
    let out = a.sh(
        "mkdir -p .cargo && printf '[target.x86_64-unknown-linux-gnu]\\nrunner = \"sh\"\\n' > .cargo/config.toml; \
         printf 'gitdir: /tmp/evil\\n' > .git; mkdir -p .paddock/presets; echo ok > keep.txt; echo done",
    );
    assert!(out.contains("done"), "{out}");
    assert!(!w.join(".cargo/config.toml").exists(), "{out}");
    assert!(!w.join(".git").exists(), "{out}");
    assert!(!w.join(".paddock").exists(), "{out}");
    assert!(w.join("keep.txt").exists(), "ordinary files stay: {out}");
    assert!(out.contains("protected path"), "the model is told: {out}");
}

/// K2 at any depth: a nested repository's `.git` and a crate's `.cargo/config.toml` are held
/// like the root's, and ones a program creates in subdirectories are removed after the call;
/// moving a directory that holds the user's own nested repository does not cost it.
#[test]
fn protected_paths_below_the_root_are_held_and_created_ones_removed() {
    let a = Attack::new("rw", "");
    let w = a.workspace();
    std::fs::create_dir_all(w.join("vendor/x/.git")).unwrap();
    std::fs::write(w.join("vendor/x/.git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(w.join("crates/a/.cargo")).unwrap();
    std::fs::write(w.join("crates/a/.cargo/config.toml"), "# mine\n").unwrap();
    let out = a.sh("printf '\\tfsmonitor = x\\n' >> vendor/x/.git/config; \
         printf 'runner = \"sh\"\\n' >> crates/a/.cargo/config.toml; \
         mkdir -p new/deep/.git && echo '[core]' > new/deep/.git/config; \
         mkdir -p crates/b/.cargo && echo x > crates/b/.cargo/config.toml; \
         mkdir s && printf 'gitdir: /tmp/x\\n' > s/.git; echo ok > s/kept.txt; \
         mv vendor moved; echo done");
    assert!(out.contains("done"), "{out}");
    let nested = ["moved/x/.git/config", "vendor/x/.git/config"]
        .iter()
        .map(|p| w.join(p))
        .find(|p| p.exists())
        .expect("the nested repository is still there");
    assert_eq!(
        std::fs::read_to_string(nested).unwrap(),
        "[core]\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(w.join("crates/a/.cargo/config.toml")).unwrap(),
        "# mine\n",
        "{out}"
    );
    assert!(!w.join("new/deep/.git").exists(), "{out}");
    assert!(!w.join("crates/b/.cargo/config.toml").exists(), "{out}");
    assert!(!w.join("s/.git").exists(), "{out}");
    assert!(w.join("s/kept.txt").exists(), "ordinary files stay: {out}");
    assert!(
        out.contains("new/deep/.git"),
        "the model is told what was removed: {out}"
    );
}

#[test]
fn the_network_is_closed_unless_granted() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let a = Attack::new("rw", "");
    let out = a.sh(&format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>&1; echo done"
    ));
    assert!(out.contains("done"), "{out}");
    assert!(
        listener.accept().is_err(),
        "a connection got through: {out}"
    );

    let granted = Attack::new("rw", ", network = true");
    let out = granted.sh(&format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'; echo done"
    ));
    let deadline = Instant::now() + Duration::from_secs(5);
    while listener.accept().is_err() {
        assert!(
            Instant::now() < deadline,
            "granted network did not connect: {out}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The network grant opens hosts, not the user's local services: a UNIX socket found by path
/// (an ssh-agent, the Docker socket) stays out of reach even with `network = true`.
#[test]
fn granted_network_does_not_reach_local_sockets_by_path() {
    if !Path::new("/usr/bin/perl").exists() {
        eprintln!("skipped: no /usr/bin/perl to connect to a UNIX socket from inside the jail");
        return;
    }
    let a = Attack::new("rw", ", network = true");
    let socket = a.decoy().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let out = a.sh(&format!(
        "perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => \"{}\") or die \"refused: $!\\n\"' 2>&1; echo done",
        socket.display()
    ));
    assert!(out.contains("done"), "{out}");
    assert!(out.contains("refused"), "perl said why: {out}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        listener.accept().is_err(),
        "a connection got through: {out}"
    );
}

/// Run as root (as CI is), a confined program still has uid 0 inside its namespace and would
/// pass the owner check on `/etc/shadow` and private keys under `/etc`: those are covered.
#[test]
fn files_only_root_may_read_stay_hidden_when_paddock_runs_as_root() {
    let Ok(shadow) = std::fs::read_to_string("/etc/shadow") else {
        eprintln!("skipped: this test runs as a user who cannot read /etc/shadow either");
        return;
    };
    let first = shadow.lines().next().unwrap_or_default().to_string();
    let a = Attack::new("rw", "");
    let out = a.sh("cat /etc/shadow /etc/gshadow 2>&1; ls /etc/ssl/private 2>&1; cat /etc/hostname /etc/passwd >/dev/null && echo readable; echo done");
    assert!(out.contains("done"), "{out}");
    assert!(
        !first.is_empty() && !out.contains(&first),
        "/etc/shadow was read: {out}"
    );
    assert!(
        !out.contains("snakeoil"),
        "a private key directory was listed: {out}"
    );
    assert!(
        out.contains("readable"),
        "ordinary /etc files stay readable: {out}"
    );
}

#[test]
fn a_program_cannot_signal_paddock_or_outlive_the_call() {
    let a = Attack::new("rw", "");
    let tag = format!("77.{}", std::process::id());
    let out = a.sh(&format!(
        "setsid sleep {tag} & (sleep {tag} &) ; kill -9 $PPID; kill -9 -1; echo done"
    ));
    assert!(
        out.contains("exit status"),
        "paddock finished the call and printed its result: {out}"
    );
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&tag))
        .collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

#[test]
fn git_options_that_run_commands_are_refused_naming_the_rule() {
    let a = Attack::new("rw", "");
    let marker = a.decoy().join("ran");
    let fsmonitor = format!("core.fsmonitor=touch {}", marker.display());
    let out = text(&a.run("git", &["-c", &fsmonitor, "status"]));
    assert!(out.contains("`git -c` is refused"), "{out}");
    assert!(out.contains("plugins.shell.grants.exec.allow"), "{out}");
    assert!(!marker.exists());
}

#[test]
fn argument_patterns_allow_only_what_they_name() {
    let a = Attack::new("rw", "");
    let preset = std::fs::read_to_string(a.preset_path()).unwrap().replace(
        r#"allow = ["sh", "bash", "cat", "git", "ls"]"#,
        r#"allow = ["git status", "ls *"]"#,
    );
    std::fs::write(a.preset_path(), preset).unwrap();
    let ok = text(&a.run("ls", &["-a"]));
    assert!(ok.contains("README.md"), "{ok}");
    let refused = text(&a.run("git", &["push"]));
    assert!(refused.contains("matches no allowed pattern"), "{refused}");
}

#[test]
fn a_planted_repository_config_runs_only_inside_the_sandbox() {
    // The repository itself is hostile: its .git/config names a command that git runs on
    // `git status`. The allowed `git status` runs it, but confined.
    let a = Attack::new("rw", "");
    let w = a.workspace();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(w)
            .output()
            .expect("git");
        assert!(status.status.success(), "{status:?}");
    };
    git(&["init", "-q"]);
    let decoy = a.decoy().display().to_string();
    let hook = format!(
        "sh -c 'cat {decoy}/secret.txt; echo pwned > {decoy}/planted; echo pwned > $HOME/paddock-planted' #"
    );
    git(&["config", "core.fsmonitor", &hook]);
    let out = a.sh("git status; echo done");
    assert!(out.contains("done"), "{out}");
    assert!(!out.contains(SECRET), "the decoy was read: {out}");
    assert!(!a.decoy().join("planted").exists(), "{out}");
}

#[test]
fn a_program_cannot_see_other_processes() {
    let a = Attack::new("rw", "");
    let out = a.sh("for d in /proc/[0-9]*; do cat $d/cmdline; echo; done; echo done");
    assert!(out.contains("done"), "{out}");
    assert!(
        !out.contains("paddock"),
        "paddock's command line is visible: {out}"
    );
}

#[test]
fn confinement_that_cannot_be_set_up_fails_closed_naming_the_key() {
    // A user namespace in which no further namespaces may be created: the kernel refuses
    // what paddock's jail needs, and the call must fail rather than run unconfined.
    let Ok(probe) = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "true"])
        .output()
    else {
        eprintln!("skipped: no unshare(1) on this machine");
        return;
    };
    if !probe.status.success() {
        eprintln!("skipped: this kernel refuses unprivileged user namespaces to the test itself");
        return;
    }
    let a = Attack::new("rw", "");
    let call = serde_json::json!({ "program": "sh", "args": ["-c", "echo ran > ran.txt"] });
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" tool call run_command '{call}' --preset {}",
        a.preset_path()
    );
    let out = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .arg(agent_common::paddock_bin())
        .current_dir(a.workspace())
        .env("PADDOCK_HOME", a.project.home.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("unshare");
    let shown = text(&out);
    assert!(
        !a.workspace().join("ran.txt").exists(),
        "ran unconfined: {shown}"
    );
    assert!(shown.contains("cannot confine the program"), "{shown}");
    assert!(shown.contains(r#"confine = "off""#), "{shown}");
}

#[test]
fn running_unconfined_is_the_presets_explicit_choice_and_said_at_every_start() {
    let a = Attack::new("rw", r#", confine = "off""#);
    let out = a.sh("echo ran");
    assert!(out.contains("ran"), "{out}");
    assert!(
        out.contains("warning:")
            && out.contains("confine = \"off\"")
            && out.contains("outside any sandbox"),
        "{out}"
    );
}
