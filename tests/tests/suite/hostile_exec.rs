//! Attacks that go around the WASM sandbox through the programs `exec` starts (K1, K2, S6),
//! through the real binary: `paddock tool call run_command` with a preset that allows shells,
//! as a model's call would. Each test asserts from the outside: the decoy outside the mounts is
//! neither read nor written, a planted config creates no marker, a loopback listener sees no
//! connection, paddock is not signalled, and nothing the program started survives the call.

mod exec_attack;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::agent_common::text;
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

/// K2 at the root: a protected path that does not exist cannot be created at all (a
/// read-only placeholder stands there while the program runs, and is gone after it).
#[test]
fn protected_paths_missing_at_the_root_cannot_be_created() {
    let a = Attack::new("rw", "");
    let w = a.workspace();
    let out = a.sh(
        "mkdir -p .cargo 2>&1; printf '[target.x86_64-unknown-linux-gnu]\\nrunner = \"sh\"\\n' > .cargo/config.toml; \
         printf 'gitdir: /tmp/evil\\n' > .git; mkdir -p .paddock/presets; rmdir .git; mv .paddock p; \
         echo ok > keep.txt; echo done",
    );
    assert!(out.contains("done"), "{out}");
    assert!(
        out.contains("Read-only file system") || out.contains("Is a directory"),
        "the writes failed in the program, not after it: {out}"
    );
    for p in [".cargo", ".git", ".paddock", "p"] {
        assert!(!w.join(p).exists(), "{p} is left: {out}");
    }
    assert!(w.join("keep.txt").exists(), "ordinary files stay: {out}");
    assert!(!out.contains("removed `"), "nothing needed removing: {out}");
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
fn abbreviations_of_options_that_run_commands_are_refused_as_git_would_read_them() {
    let a = Attack::new("rw", "");
    let marker = a.decoy().join("ran");
    let touch = format!("touch {}", marker.display());
    for (args, rule) in [
        (
            vec!["push".to_string(), format!("--exec={touch}"), ".".into()],
            "`git --exec`",
        ),
        (
            vec![
                "push".to_string(),
                format!("--receive-pa={touch}"),
                ".".into(),
            ],
            "`git --receive-pack`",
        ),
        (
            vec![
                "clone".to_string(),
                format!("--upload-pa={touch}"),
                ".".into(),
                "c".into(),
            ],
            "`git --upload-pack`",
        ),
        (
            vec![
                "-qc".to_string(),
                format!("core.fsmonitor={touch}"),
                "status".into(),
            ],
            "`git -c`",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = text(&a.run("git", &args));
        assert!(
            out.contains(&format!("{rule} is refused")),
            "{args:?}: {out}"
        );
    }
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
        .arg(crate::agent_common::paddock_bin())
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
    // The session does not even start: the preset relies on the jail (no silent fallback).
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("relies on paddock's namespaces layer"),
        "{shown}"
    );
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

/// A program running beside the clean-up keeps swapping a directory of its mount for a
/// symlink to a repository outside every mount, while runs that create protected paths end:
/// the clean-up works by descriptor from the held root, so it never lists (or removes) what
/// the symlink leads to.
#[test]
fn a_swapped_symlink_never_leads_the_clean_up_outside_the_mount() {
    let a = Attack::new("rw", "");
    let w = a.workspace().to_path_buf();
    let decoy_repo = a.decoy().join("repo");
    std::fs::create_dir_all(decoy_repo.join(".git/objects")).unwrap();
    std::fs::create_dir_all(decoy_repo.join(".git/refs")).unwrap();
    std::fs::write(decoy_repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(decoy_repo.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(w.join("d/src")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (w, decoy_repo, stop) = (w.clone(), decoy_repo.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if std::fs::rename(w.join("d"), w.join("d.real")).is_ok() {
                    let _ = std::os::unix::fs::symlink(&decoy_repo, w.join("d"));
                    std::thread::sleep(Duration::from_micros(300));
                    let _ = std::fs::remove_file(w.join("d"));
                    let _ = std::fs::rename(w.join("d.real"), w.join("d"));
                    swaps += 1;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            swaps
        })
    };
    let started = Instant::now();
    let mut runs = 0;
    while started.elapsed() < Duration::from_secs(4) || runs < 3 {
        let out = a.sh("mkdir -p made/.git && echo x > made/.git/config; echo done");
        assert!(out.contains("done"), "{out}");
        runs += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the race ran ({swaps} swaps in {runs} runs)");
    assert_eq!(
        std::fs::read_to_string(decoy_repo.join(".git/config")).unwrap(),
        "[core]\n",
        "the repository outside every mount lost its history ({runs} runs)"
    );
    assert!(
        !w.join("made/.git").exists(),
        "created ones are still removed"
    );
}

/// A git directory whatever its name (a separate git dir, a bare repository) is held like
/// `.git`: a program cannot plant `core.fsmonitor` or a hook in it.
#[test]
fn a_git_directory_not_named_dot_git_is_held_too() {
    let a = Attack::new("rw", "");
    let w = a.workspace();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(w)
            .output()
            .expect("git");
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q", "--separate-git-dir", "meta", "proj"]);
    git(&["init", "-q", "--bare", "bare.git"]);
    let marker = a.decoy().join("fsmonitor-ran");
    let payload = format!("[core]\\n\\tfsmonitor = touch {}\\n", marker.display());
    let out = a.sh(&format!(
        "printf '{payload}' >> meta/config; printf '{payload}' >> bare.git/config; \
         mkdir -p meta/hooks; printf '#!/bin/sh\\ntouch {m}\\n' > meta/hooks/post-checkout; \
         echo done",
        m = marker.display()
    ));
    assert!(out.contains("done"), "{out}");
    for config in ["meta/config", "bare.git/config"] {
        let text = std::fs::read_to_string(w.join(config)).unwrap();
        assert!(!text.contains("fsmonitor"), "{config} was written: {out}");
    }
    assert!(!w.join("meta/hooks/post-checkout").exists(), "{out}");
    let status = std::process::Command::new("git")
        .args(["status"])
        .current_dir(w.join("proj"))
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    assert!(!marker.exists(), "the planted command ran");
}

/// A program gets no descriptor paddock inherited (an IDE's, a CI runner's): not a file
/// outside its mounts, not a socket.
#[test]
fn an_inherited_descriptor_does_not_reach_the_program() {
    use std::os::unix::process::CommandExt;
    let a = Attack::new("rw", "");
    let secret = std::fs::File::open(a.decoy().join("secret.txt")).unwrap();
    let call = serde_json::json!({
        "program": "sh",
        "args": ["-c", "cat <&9; cat /proc/self/fd/9; ls /proc/self/fd; echo done"],
    })
    .to_string();
    let preset = a.preset_path();
    let mut cmd = a
        .project
        .command(&["tool", "call", "run_command", &call, "--preset", &preset]);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&secret);
    // SAFETY: dup2 between fork and exec, on descriptors this process holds.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 9) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = text(&cmd.output().unwrap());
    assert!(out.contains("done"), "{out}");
    assert!(
        !out.contains(SECRET),
        "the inherited descriptor was read: {out}"
    );
}

/// git needs no weakening of the jail: with a `~/.gitconfig` the jail cannot read, `git
/// status` works (its global configuration is `/dev/null` inside).
#[test]
fn git_works_in_the_jail_with_a_users_gitconfig() {
    let a = Attack::new("rw", "");
    let preset = std::fs::read_to_string(a.preset_path())
        .unwrap()
        .replace(r#"env = ["PATH"]"#, r#"env = ["PATH", "HOME"]"#);
    std::fs::write(a.preset_path(), preset).unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".gitconfig"), "[user]\n\tname = someone\n").unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(a.workspace())
        .output()
        .unwrap();
    assert!(init.status.success());
    let call = serde_json::json!({ "program": "git", "args": ["status"] }).to_string();
    let preset = a.preset_path();
    let out = a
        .project
        .command(&["tool", "call", "run_command", &call, "--preset", &preset])
        .env("HOME", home.path())
        .output()
        .unwrap();
    let shown = text(&out);
    assert!(shown.contains("On branch"), "{shown}");
    assert!(!shown.contains("unable to access"), "{shown}");
}

/// Nothing outlives paddock: a program still running when paddock is killed with SIGKILL dies
/// within a second, and nothing writes the workspace after.
#[test]
fn a_program_dies_with_paddock_even_when_it_is_killed() {
    let a = Attack::new("rw", "");
    let call = serde_json::json!({
        "program": "sh",
        "args": ["-c", "while :; do echo x >> beat; sleep 0.05; done"],
    })
    .to_string();
    let preset = a.preset_path();
    let mut child = a
        .project
        .command(&["tool", "call", "run_command", &call, "--preset", &preset])
        .spawn()
        .unwrap();
    let beat = a.workspace().join("beat");
    let started = Instant::now();
    while !beat.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let size = std::fs::metadata(&beat).unwrap().len();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::metadata(&beat).unwrap().len(),
        size,
        "something still writes the workspace after paddock was killed"
    );
}

/// Ctrl-C while a program that planted protected paths still runs: the clean-up runs on the
/// way out as it does after a normal end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_planting_call_leaves_nothing_planted() {
    use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
    let a = Attack::new("rw", "");
    let w = a.workspace().to_path_buf();
    std::fs::create_dir_all(w.join("sub")).unwrap();
    let plant = serde_json::json!({
        "program": "sh",
        "args": ["-c", "mkdir -p sub/.cargo && echo '[alias]' > sub/.cargo/config.toml && \
                 mkdir -p sub/x/.git && echo started > started && sleep 30"],
    })
    .to_string();
    let server = ScriptedServer::start(Script {
        steps: vec![
            crate::agent_common::call_step("c1", "run_command", &plant),
            Step::Reply(Turn::text(&["done"])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let preset = a.preset_path();
    let child = a
        .project
        .command(&[
            "run",
            "plant",
            "--preset",
            &preset,
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !w.join("started").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the call never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        w.join("sub/.cargo/config.toml").exists(),
        "planted while running"
    );
    paddock_tests::send_signal(child.id(), libc::SIGINT);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(!w.join("sub/.cargo/config.toml").exists(), "{}", text(&out));
    assert!(!w.join("sub/x/.git").exists(), "{}", text(&out));
}

/// A directory paddock cannot list inside a writable mount fails the run loudly, before it
/// starts (what is below it could not be held) and after it (what the program made below it
/// could not be checked). Root lists every directory, so as root paddock runs as `nobody`.
#[test]
fn a_directory_paddock_cannot_list_fails_the_run_loudly() {
    use std::os::unix::fs::PermissionsExt;
    let a = Attack::new("rw", "");
    let w = a.workspace();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let preset = a.preset_path();
    // `nobody` may not reach the build's binary (a checkout under /root): then a copy.
    let bin_dir = tempfile::tempdir().unwrap();
    let mut bin = crate::agent_common::paddock_bin();
    let as_nobody = |cmd: &mut std::process::Command| {
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    };
    if root {
        let mut probe = std::process::Command::new("setpriv");
        as_nobody(&mut probe);
        let reachable = probe
            .args(["test", "-x"])
            .arg(&bin)
            .status()
            .unwrap()
            .success();
        if !reachable {
            let copy = bin_dir.path().join("paddock");
            std::fs::copy(&bin, &copy).unwrap();
            std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            bin = copy;
        }
    }
    let as_user = |args: &[&str]| {
        let mut cmd = if root {
            let mut cmd = std::process::Command::new("setpriv");
            as_nobody(&mut cmd);
            cmd.arg(&bin);
            cmd
        } else {
            std::process::Command::new(&bin)
        };
        cmd.args(args)
            .current_dir(w)
            .env("PADDOCK_HOME", a.project.home.path())
            .env("HOME", a.project.home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("NO_COLOR", "1");
        text(&cmd.output().unwrap())
    };
    if root {
        let preset_dir = Path::new(&preset).parent().unwrap().to_path_buf();
        for dir in [
            w.to_path_buf(),
            a.project.home.path().to_path_buf(),
            preset_dir,
        ] {
            let status = std::process::Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    let call = |script: &str| {
        let call = serde_json::json!({ "program": "sh", "args": ["-c", script] }).to_string();
        as_user(&["tool", "call", "run_command", &call, "--preset", &preset])
    };
    // Made unlistable by the program itself: the clean-up cannot look below it.
    let out = call("mkdir -p hide/x/.git && chmod 0311 hide && echo ran");
    assert!(out.contains("could not check the mount"), "{out}");
    assert!(out.contains("cannot list `hide`"), "{out}");
    // Unlistable before the run: the run does not start.
    let out = call("echo ran > ran.txt");
    assert!(out.contains("cannot list `hide`"), "{out}");
    assert!(!w.join("ran.txt").exists(), "{out}");
    std::fs::set_permissions(w.join("hide"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
