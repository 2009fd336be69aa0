//! Workspace trust on the command line (T1): `paddock trust [DIR]` records that a directory's
//! project configuration (`.paddock/presets`) may be used; every command that looks presets up
//! by name calls `project_trusted` first, which asks on a terminal and otherwise says in one
//! line what it ignored and how to trust it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::report::{CommandResult, Failure};
use super::style::{self, DIM, YELLOW, paint, sanitize};
use super::{Env, Exit};
use paddock::preset::{ProjectConfig, TrustState, TrustStore};
use paddock_types::text::shell_word;

#[derive(Args)]
pub struct TrustArgs {
    /// The project directory (default: the current one).
    dir: Option<PathBuf>,
    /// Forget the directory instead: its project configuration is ignored again.
    #[arg(long)]
    revoke: bool,
}

/// `paddock trust [DIR] [--revoke]`.
pub async fn trust(args: TrustArgs) -> CommandResult {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let dir = args.dir.unwrap_or_else(|| env.cwd.clone());
    if !dir.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a directory; give the project directory to trust",
            dir.display()
        )));
    }
    let store = TrustStore::open(env.store.root());
    if args.revoke {
        let revoked = store.revoke(&dir).map_err(|e| {
            Failure::usage(format!("cannot update {}: {e}", store.path().display()))
        })?;
        match revoked {
            true => println!("paddock: {} is no longer trusted", shown(&dir)),
            false => println!("paddock: {} was not trusted", shown(&dir)),
        }
        return Ok(Exit::Ok);
    }
    let Some(config) = ProjectConfig::find(&dir) else {
        println!(
            "paddock: {} has no project configuration ({}); nothing to trust",
            shown(&dir),
            paddock::preset::PROJECT_DIR
        );
        return Ok(Exit::Ok);
    };
    describe(&config);
    if let Some(why) = &config.unhashable {
        return Err(Failure::usage(format!(
            "cannot trust {}: {why}. Trust is a hash of every file there; keep the presets and \
             the files they name within that",
            config.dir.display()
        )));
    }
    store
        .trust(&config)
        .map_err(|e| Failure::usage(format!("cannot write {}: {e}", store.path().display())))?;
    println!(
        "paddock: trusted {} (sha256 {}); a change to these files asks again",
        shown(&config.dir),
        config.short_hash()
    );
    Ok(Exit::Ok)
}

fn describe(config: &ProjectConfig) {
    println!(
        "{} has project configuration that can grant tools and programs, change what needs \
         approval, and choose the model server and the key sent to it:",
        shown(&config.dir)
    );
    for file in &config.files {
        println!("  {}", sanitize(file));
    }
    if config.lock {
        println!("  {}", lock_line());
    }
}

/// The project's lock as a line of what trust covers.
fn lock_line() -> String {
    format!(
        "{} (its lock: it refuses sessions whose installed plugins differ from it, and names \
         what `paddock plugin install --locked` installs, each signature checked against your \
         keys)",
        paddock::preset::PROJECT_LOCK
    )
}

/// Project trust decided at the terminal, for the sessions `run` and `chat` start: asks when
/// standard input and standard error are a terminal, else says in one line what it ignores.
pub(crate) struct TerminalTrust {
    /// False for a command whose standard input is not the user's (`mcp serve` speaks a
    /// protocol on it): nothing is asked; the one-line notice still says what was ignored.
    pub may_ask: bool,
}

impl paddock::session::Trust for TerminalTrust {
    fn project_trusted(&self, env: &Env) -> bool {
        if self.may_ask {
            project_trusted(env)
        } else {
            decide(env, false)
        }
    }

    fn notice(&self, text: &str) {
        notice(text);
    }
}

/// `project_trusted` when `preset` is a name to look up; a path never needs the project's
/// directory, so nothing is asked.
pub(crate) fn project_trusted_for(env: &Env, preset: &str) -> bool {
    if paddock::preset::is_path(preset, ".toml") {
        return false;
    }
    project_trusted(env)
}

/// Whether this command may use the working directory's project presets. Trusted: yes. Not
/// (or no longer) trusted: asks when standard input and standard error are a terminal, and
/// otherwise (or on a no) reports in one line on standard error what it ignores and how to
/// trust it.
pub(crate) fn project_trusted(env: &Env) -> bool {
    let on_a_terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    decide(env, on_a_terminal)
}

fn decide(env: &Env, may_ask: bool) -> bool {
    let store = TrustStore::open(env.store.root());
    let (config, changed) = match store.state(&env.cwd) {
        TrustState::NoProjectConfig => return false,
        TrustState::Trusted(_) => return true,
        // A lock alone: no presets or instructions to use; the session's lock check says
        // in one line that it ignored the lock.
        TrustState::Untrusted(config) | TrustState::Changed(config) if config.files.is_empty() => {
            return false;
        }
        TrustState::Untrusted(config) => (config, false),
        TrustState::Changed(config) => (config, true),
        TrustState::Unhashable(config) => {
            notice(&format!(
                "ignoring project configuration in {}: {}; it cannot be trusted",
                config.dir.display(),
                config.unhashable.as_deref().unwrap_or("too large")
            ));
            return false;
        }
    };
    if may_ask && ask(&config, changed) {
        if let Err(e) = store.trust(&config) {
            eprintln!(
                "paddock: cannot record the trust in {} ({e}); using it for this run only",
                store.path().display()
            );
        }
        return true;
    }
    let why = if changed {
        "changed since you trusted it"
    } else {
        "not trusted"
    };
    eprintln!(
        "{}",
        paint(
            style::color_enabled_stderr(),
            YELLOW,
            &format!(
                "paddock: ignoring project configuration {} ({why}, sha256 {}); to use it: \
                 paddock trust {}",
                sanitize(&config.files.join(", ")),
                config.short_hash(),
                shell_word(&config.dir)
            )
        )
    );
    false
}

/// A one-line notice about project configuration on standard error.
pub(crate) fn notice(text: &str) {
    eprintln!(
        "{}",
        paint(
            style::color_enabled_stderr(),
            YELLOW,
            &format!("paddock: {}", sanitize(text))
        )
    );
}

/// Asks on the terminal; true on yes.
fn ask(config: &ProjectConfig, changed: bool) -> bool {
    let mut err = std::io::stderr();
    let color = style::color_enabled_stderr();
    let head = if changed {
        "the project configuration here changed since you trusted it"
    } else {
        "this directory has project configuration you have not trusted"
    };
    let mut text = format!(
        "paddock: {head} ({}):\n",
        sanitize(&config.dir.display().to_string())
    );
    for file in &config.files {
        text.push_str(&format!("  {}\n", sanitize(file)));
    }
    if config.lock {
        text.push_str(&format!("  {}\n", lock_line()));
    }
    text.push_str(&paint(
        color,
        DIM,
        "  It can grant tools and programs, change what needs approval, and choose the model \
         server and the key sent to it.\n",
    ));
    text.push_str(&format!(
        "  trust it (sha256 {})? [y/N] ",
        config.short_hash()
    ));
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(_) => matches!(line.trim(), "y" | "Y" | "yes" | "Yes"),
        Err(_) => false,
    }
}

/// A path for the terminal: a repository's directory name is the cloner's choice, or the
/// repository's (T3).
fn shown(path: &Path) -> String {
    sanitize(&path.display().to_string()).into_owned()
}
