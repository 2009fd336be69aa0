//! `cargo xtask dist` and `cargo xtask bench dist`: the binaries that ship, built with
//! `profile.dist` (no debug info, stripped, fat LTO): the static one for
//! `x86_64-unknown-linux-musl`, which runs dropped into any Linux image (Alpine, distroless, a
//! Harbor task's container), and the host's (glibc) one as before. The static one is checked
//! to run in an empty root (a user namespace and `chroot`, nothing beside the binary): its
//! `--version`, then the scripted demo session with only `/proc` bound in (paddock reaches the
//! directories it holds through `/proc/self/fd`, as every container has it).
//!
//! The bench measures, in one run: the static binary's size, and its start-up in an empty root
//! (`--version`, and `tool list` with a fresh data directory there), beside `/bin/true` started
//! the plain way for the machine's own cost of a process. It ends with one `BENCH` line.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::{cargo, root, run};

/// The target of the binary that ships: static, so it runs in any Linux image.
const DIST_TARGET: &str = "x86_64-unknown-linux-musl";

/// The built binaries: static (musl), and the host's (glibc) when it was built.
struct Built {
    musl: PathBuf,
    gnu: Option<PathBuf>,
}

fn build(with_gnu: bool) -> Result<Built, String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("cannot run rustup: {e}"))?;
    if !String::from_utf8_lossy(&installed.stdout).contains(DIST_TARGET) {
        let mut add = Command::new("rustup");
        add.args(["target", "add", DIST_TARGET]);
        run(add)?;
    }
    // ring's C code needs a musl C compiler; installed like the test tools are.
    let musl_gcc = Path::new("/usr/bin/musl-gcc");
    if Command::new("musl-gcc").arg("--version").output().is_err() {
        super::tools::apt_install(&["musl-tools"], &[musl_gcc])?;
    }
    let mut musl = cargo();
    musl.args([
        "build",
        "--profile",
        "dist",
        "--target",
        DIST_TARGET,
        "-p",
        "paddock-cli",
    ]);
    run(musl)?;
    if with_gnu {
        let mut gnu = cargo();
        gnu.args(["build", "--profile", "dist", "-p", "paddock-cli"]);
        run(gnu)?;
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    Ok(Built {
        musl: target.join(DIST_TARGET).join("dist/paddock"),
        gnu: with_gnu.then(|| target.join("dist/paddock")),
    })
}

fn size(binary: &Path) -> Result<u64, String> {
    Ok(std::fs::metadata(binary)
        .map_err(|e| format!("{}: {e}", binary.display()))?
        .len())
}

/// An empty root holding only the static binary (`/paddock`), a project directory
/// (`/work`) and a data directory (`/home`); removed when dropped.
struct EmptyRoot(PathBuf);

impl EmptyRoot {
    fn with(binary: &Path) -> Result<EmptyRoot, String> {
        let dir = std::env::temp_dir().join(format!("paddock-dist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["work", "home", "proc"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        std::fs::write(dir.join("work/README.md"), "# empty image\n").map_err(|e| e.to_string())?;
        std::fs::copy(binary, dir.join("paddock")).map_err(|e| e.to_string())?;
        Ok(EmptyRoot(dir))
    }

    /// `/paddock ARGS` inside the root, in `/work`: a new user namespace (no privilege
    /// needed), `chroot`, then exec. A dynamically linked binary would find no loader here.
    fn command(&self, args: &[&str]) -> Command {
        self.command_in(args, false)
    }

    /// `command`, with the host's `/proc` bound at the root's `/proc` (a new mount namespace
    /// too): what a session needs of an image.
    fn with_proc(&self, args: &[&str]) -> Command {
        self.command_in(args, true)
    }

    fn command_in(&self, args: &[&str], proc: bool) -> Command {
        let mut cmd = Command::new("/paddock");
        cmd.args(args)
            .env_clear()
            .env("PADDOCK_HOME", "/home")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        let root = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes())
            .expect("a temporary path has no NUL");
        let proc_dir = std::ffi::CString::new(self.0.join("proc").as_os_str().as_encoded_bytes())
            .expect("a temporary path has no NUL");
        let namespaces = if proc {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS
        } else {
            libc::CLONE_NEWUSER
        };
        // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
        // (unshare, mount, chroot, chdir) on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // The bind needs the new namespaces, so it comes after `unshare`.
                let bind = || {
                    libc::mount(
                        c"/proc".as_ptr(),
                        proc_dir.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    ) == 0
                };
                if libc::unshare(namespaces) != 0
                    || (proc && !bind())
                    || libc::chroot(root.as_ptr()) != 0
                    || libc::chdir(c"/work".as_ptr()) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd
    }
}

impl Drop for EmptyRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `cmd` to its end; its output, or why it failed.
fn output(mut cmd: Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `cargo xtask dist`.
pub fn dist() -> Result<(), String> {
    let built = build(true)?;
    let root = EmptyRoot::with(&built.musl)?;
    let version = output(
        root.command(&["--version"]),
        "the static binary in an empty root",
    )?;
    println!(
        "xtask: {} ({:.1} MB, static; runs in an empty root: {})",
        built.musl.display(),
        size(&built.musl)? as f64 / 1e6,
        version.trim()
    );
    let demo = output(
        root.with_proc(&["run", "--demo"]),
        "the demo session of the static binary in an empty root",
    )?;
    if !demo.contains("stopped: completed") {
        return Err(format!(
            "the demo session in an empty root did not complete:\n{demo}"
        ));
    }
    println!("xtask: the scripted demo session completes in an empty root (with /proc)");
    if let Some(gnu) = &built.gnu {
        println!(
            "xtask: {} ({:.1} MB, glibc)",
            gnu.display(),
            size(gnu)? as f64 / 1e6
        );
    }
    Ok(())
}

/// Milliseconds of the median of `runs` runs of `make()`, each checked by `check`.
fn median_ms(
    runs: usize,
    make: impl Fn() -> Command,
    check: impl Fn(&str) -> bool,
) -> Result<f64, String> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = output(make(), "a timed run")?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        if !check(&out) {
            return Err(format!("a timed run printed something unexpected: {out}"));
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// `cargo xtask bench dist`: the static binary only, the one that ships into images.
pub fn bench() -> Result<(), String> {
    let built = build(false)?;
    let root = EmptyRoot::with(&built.musl)?;
    let is_version = |out: &str| out.starts_with("paddock ");
    let lists_tools = |out: &str| out.contains("read_file");
    // The first `tool list` in a fresh data directory is what a harness's first call pays.
    let first = Instant::now();
    let listed = output(
        root.command(&["tool", "list"]),
        "tool list in an empty root",
    )?;
    let tool_list_first_ms = first.elapsed().as_secs_f64() * 1e3;
    if !lists_tools(&listed) {
        return Err(format!(
            "tool list in an empty root listed no read_file: {listed}"
        ));
    }
    let start_ms = median_ms(31, || root.command(&["--version"]), is_version)?;
    let tool_list_ms = median_ms(11, || root.command(&["tool", "list"]), lists_tools)?;
    // The machine's cost of starting any process, for scale: `/bin/true` the same way.
    let true_ms = median_ms(31, || Command::new("/bin/true"), |_| true)?;
    println!(
        "BENCH dist_size_mb={:.1} dist_start_ms={start_ms:.2} dist_tool_list_ms={tool_list_ms:.1} \
         dist_tool_list_first_ms={tool_list_first_ms:.1} true_start_ms={true_ms:.2}",
        size(&built.musl)? as f64 / 1e6,
    );
    Ok(())
}
