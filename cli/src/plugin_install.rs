//! `paddock plugin install|upgrade`: the options a command line gives the store, the
//! capability diff shown (and the yes asked) before a plugin is replaced, the progress line,
//! and what an install prints. And the store's refusals as the command line prints them: the
//! library says what is wrong in its own terms, the command line adds the option that answers
//! it (`message`), for every plugin command.

use super::report::{CommandResult, Failure};
use super::style::{BOLD, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use paddock::plugin_store::{
    AuthChoice, CapabilityDiff, Change, FixedSource, InstallReport, InstallRequest, InstallSource,
    LockedError, Origin, RemoteError, SignatureFix, StoreError, Upgrade, Widening,
};
use paddock_sandbox::World;

pub(super) struct InstallOptions<'a> {
    pub(super) sha256: Option<&'a str>,
    pub(super) auth: &'a AuthChoice,
    pub(super) force_progress: bool,
    pub(super) allow_unsigned: bool,
    pub(super) accept_widening: bool,
}

impl InstallOptions<'_> {
    /// The store's request for these options, telling `progress` how it goes.
    fn request<'a>(
        &'a self,
        progress: &'a (dyn Fn(paddock::plugin_store::Progress) + Sync),
    ) -> InstallRequest<'a> {
        InstallRequest {
            auth: self.auth,
            allow_unsigned: self.allow_unsigned,
            widening: self.widening(),
            progress,
        }
    }

    /// `--accept-widening`, else a yes asked on a terminal, else refused (before an `oci://`
    /// layer is fetched).
    pub(super) fn widening(&self) -> Widening<'static> {
        use std::io::IsTerminal;
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        match (self.accept_widening, terminal) {
            (true, _) => Widening::Accept,
            (false, true) => Widening::Ask(&ask_widening),
            (false, false) => Widening::Refuse,
        }
    }
}

/// Shows the diff on the terminal and asks y/N on stdin.
fn ask_widening(diff: &CapabilityDiff) -> bool {
    use std::io::{BufRead, Write};
    eprintln!("{}", render_diff(diff));
    eprint!("accept these changes? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
}

/// The diff for the terminal: one line a change, `+` widening, `-` narrowing; the plugin's
/// words sanitized (T3).
pub(super) fn render_diff(diff: &CapabilityDiff) -> String {
    let mut out = String::new();
    if diff.is_empty() {
        out.push_str("no change in imports or tools");
        return out;
    }
    out.push_str(if diff.complete {
        "what changes (+ widens, needs a yes; - narrows):"
    } else {
        "what changes in its imports, as the registry's config says (+ widens, needs a yes; - narrows):"
    });
    for change in &diff.changes {
        let mark = if change.widens() { '+' } else { '-' };
        out.push_str(&format!("\n  {mark} {}", sanitize(&change.summary())));
        match change {
            Change::Description { old, new, .. } => {
                out.push_str(&format!(
                    "\n      was: {}\n      now: {}",
                    sanitize(&one_line(old)),
                    sanitize(&one_line(new))
                ));
            }
            Change::Parameters { old, new, .. } => {
                out.push_str(&format!(
                    "\n      was: {}\n      now: {}",
                    json_for_terminal(&old.to_string()),
                    json_for_terminal(&new.to_string())
                ));
            }
            _ => {}
        }
    }
    out
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > 300 {
        joined.chars().take(300).collect::<String>() + "…"
    } else {
        joined
    }
}

/// A store refusal as the command line prints it: the library's message, and the option that
/// answers it, if one does.
pub(super) fn message(e: &StoreError) -> String {
    format!("{e}{}", flag_hint(e))
}

/// What the command line adds to a store refusal's message: the option (or the command) that
/// does what the message says to do.
fn flag_hint(e: &StoreError) -> String {
    match e {
        StoreError::Remote(remote) => remote_hint(remote),
        StoreError::BadName(_) => " (choose the name with --name NAME)".into(),
        StoreError::Widens { .. } => {
            ". If you accept these changes, rerun with --accept-widening".into()
        }
        StoreError::BlobAltered { name, .. } => {
            format!(" (`paddock plugin install SOURCE --name {name}`)")
        }
        StoreError::NoLongerTrusted { .. } => {
            ", or reinstall it with --allow-unsigned if you accept it unverified".into()
        }
        StoreError::NoUpgradeSource { fixed, .. } => match fixed {
            FixedSource::Digest => {
                ": give the new version with --to oci://REGISTRY/REPOSITORY:TAG (or \
                 @sha256:DIGEST)"
            }
            FixedSource::Url => ": give it with --to URL --sha256 HEX",
            FixedSource::File => ": give it with --to FILE",
        }
        .into(),
        StoreError::BadScope(_) => " (give each with --for PATTERN)".into(),
        StoreError::DamagedKey { name, .. } => format!(
            " (`paddock plugin trust-key --remove {name}`, then `paddock plugin trust-key \
             {name} KEY.pub`)"
        ),
        StoreError::KeyExists { name, .. } => {
            format!(": `paddock plugin trust-key --remove {name}`")
        }
        StoreError::NoSuchKey(_) => {
            "; `paddock plugin trust-key --list` shows the trusted keys".into()
        }
        _ => String::new(),
    }
}

/// `flag_hint` for a registry's or a download's refusal.
fn remote_hint(e: &RemoteError) -> String {
    match e {
        RemoteError::BadReference { .. } => " (--sha256 HEX)".into(),
        RemoteError::Sha256Required => "; give it with --sha256 HEX".into(),
        RemoteError::Unsigned { .. } => {
            "; or, if you accept an unsigned plugin, install it with --allow-unsigned".into()
        }
        RemoteError::SignatureRefused(refusal) => match &refusal.fix {
            SignatureFix::NotTrusted => {
                " (or use --allow-unsigned if you accept it unverified)".into()
            }
            SignatureFix::NoKeyTrusted => ", or install with --allow-unsigned".into(),
            SignatureFix::OtherArtifact => String::new(),
            SignatureFix::OutOfScope { key } => format!(
                ". If it may, trust the key for this repository too: `paddock plugin trust-key \
                 --remove {key}`, then `paddock plugin trust-key {key} KEY.pub --for PATTERN` \
                 once per pattern"
            ),
        },
        RemoteError::Unauthorized { .. }
        | RemoteError::IdentityToken { .. }
        | RemoteError::DockerCredentials { .. } => " (--registry-token-env NAME)".into(),
        RemoteError::TokenUnset { .. } => {
            ", or leave out --registry-token-env to use ~/.docker/config.json".into()
        }
        _ => String::new(),
    }
}

/// The failure of an install or upgrade: a refused widening shows its whole diff first.
pub(super) fn refusal(e: StoreError) -> Failure {
    match &e {
        StoreError::Widens { diff, .. } => {
            Failure::plugin(format!("{}\n{}", render_diff(diff), message(&e)))
        }
        _ => Failure::plugin(format!("{}\nnothing was installed", message(&e))),
    }
}

/// The failure of an upgrade: as an install's, and the installed version stays.
fn upgrade_refusal(e: StoreError) -> Failure {
    match &e {
        StoreError::Widens { .. } => refusal(e),
        _ => Failure::plugin(format!(
            "{}\nnothing was changed: the installed version stays in use",
            message(&e)
        )),
    }
}

/// The failure of `install --locked` from the lock at `lock`: a refused widening shows its
/// whole diff first, as an upgrade's does.
pub(super) fn locked_refusal(e: LockedError, lock: &str) -> Failure {
    match e {
        LockedError::Store { name, source } if matches!(*source, StoreError::Widens { .. }) => {
            let failure = refusal(*source);
            Failure::plugin(format!(
                "{name} (lock {lock}): {}\nnothing was installed",
                failure.message
            ))
        }
        e => Failure::plugin(format!(
            "{e}{}\nnothing was installed (lock {lock})",
            locked_hint(&e)
        )),
    }
}

/// `flag_hint` for `install --locked`; a name there is the lock's, not one given.
fn locked_hint(e: &LockedError) -> String {
    match e {
        LockedError::Store { source, .. } if !matches!(**source, StoreError::BadName(_)) => {
            flag_hint(source)
        }
        LockedError::Unsigned { .. } => " with --allow-unsigned".into(),
        LockedError::UnsignedUrl { name, url, sha256 } => format!(
            ". Pass --allow-unsigned if you trust this lock to name it, or install it yourself \
             (`paddock plugin install {url} --sha256 {sha256} --name {name}`)"
        ),
        LockedError::NotInBlobs { name, .. } => format!(
            " (`paddock plugin install FILE --name {name}`, then `paddock plugin install \
             --locked`)"
        ),
        _ => String::new(),
    }
}

pub(super) async fn upgrade(
    env: &Env,
    name: &str,
    to: Option<&str>,
    options: &InstallOptions<'_>,
    color: bool,
) -> CommandResult {
    let to = to
        .map(|given| InstallSource::parse(given, options.sha256))
        .transpose()
        .map_err(upgrade_refusal)?;
    if options.sha256.is_some() && to.is_none() {
        return Err(Failure::usage(
            "--sha256 goes with --to https://…: the SHA-256 of the new version",
        ));
    }
    let line = ProgressLine::new(options.force_progress);
    let show = |p| line.show(p);
    let request = options.request(&show);
    let result = env
        .store
        .upgrade(&env.sandbox, name, to.as_ref(), &request)
        .await;
    line.finish();
    match result.map_err(upgrade_refusal)? {
        Upgrade::UpToDate { record, source } => {
            println!(
                "{} is up to date: {} is what is installed (sha256 {})",
                record.name,
                sanitize(&source),
                record.sha256
            );
        }
        Upgrade::Upgraded(report) => {
            print_installed(&report, color);
            super::lock_pin::follow_upgrade(env, name).await?;
        }
    }
    Ok(Exit::Ok)
}

pub(super) async fn install(
    env: &Env,
    given: &str,
    name: Option<&str>,
    options: &InstallOptions<'_>,
    color: bool,
) -> CommandResult {
    let refused = refusal;
    let source = InstallSource::parse(given, options.sha256).map_err(refused)?;
    if options.allow_unsigned && !matches!(source, InstallSource::Oci(_)) {
        return Err(refused(StoreError::Remote(
            paddock::plugin_store::RemoteError::BadReference {
                given: given.to_string(),
                why: "--allow-unsigned is for oci:// installs (an https:// install is pinned by \
                      its --sha256, a local file is installed as it is)"
                    .into(),
            },
        )));
    }
    let line = ProgressLine::new(options.force_progress);
    let show = |p| line.show(p);
    let request = options.request(&show);
    let result = env
        .store
        .install_from(&env.sandbox, &source, name, &request)
        .await;
    line.finish();
    let report = result.map_err(refused)?;
    print_installed(&report, color);
    Ok(Exit::Ok)
}

fn print_installed(report: &InstallReport, color: bool) {
    let record = &report.record;
    if let Some(old) = &report.replaced {
        let same = if old.sha256 == record.sha256 {
            ", same bytes"
        } else {
            ""
        };
        println!(
            "replaces the {} `{}` installed from {} (sha256 {}{same})",
            old.kind.noun(),
            old.name,
            sanitize(&old.installed_from),
            &old.sha256[..12.min(old.sha256.len())]
        );
    }
    if let Some(diff) = &report.diff {
        println!("{}", render_diff(diff));
    }
    println!(
        "installed {} ({}, {} bytes, sha256 {})",
        paint(color, BOLD, &record.name),
        record.kind.noun(),
        record.size,
        record.sha256
    );
    match &record.origin {
        Some(Origin::Oci {
            reference,
            manifest_digest,
            signature,
            ..
        }) => {
            println!("from {} (manifest {manifest_digest})", sanitize(reference));
            print_signature(signature.as_deref());
        }
        Some(Origin::Https { url, .. }) => println!("from {}", sanitize(url)),
        None => {}
    }
    if record.kind == World::Hook {
        println!(
            "name it in a preset: [[hooks]] source = \"{}\", on = \"pre\" or \"post\"",
            record.name
        );
    } else {
        println!("tools: {}", sanitize(&record.tools.join(", ")));
    }
}

fn print_signature(signature: Option<&paddock::plugin_store::SignatureRecord>) {
    match signature {
        Some(s) if s.unsigned_allowed => eprintln!(
            "warning: installed without checking a signature (--allow-unsigned); the installed \
             record says so"
        ),
        Some(s) => println!(
            "signed by trusted key {} ({})",
            sanitize(s.key.as_deref().unwrap_or_default()),
            s.fingerprint.as_deref().unwrap_or_default()
        ),
        None => {}
    }
}

/// The progress line on stderr while a plugin downloads and compiles: redrawn in place on a
/// terminal; with `--progress` elsewhere, a line at most every few seconds. Off otherwise, so
/// what a script reads stays as it was, except for one line before a long first compile (a
/// JavaScript or Python component), which would otherwise be a silent minute.
struct ProgressLine {
    mode: Option<bool>,
    state: std::sync::Mutex<(Option<std::time::Instant>, bool)>,
}

impl ProgressLine {
    fn new(forced: bool) -> ProgressLine {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        ProgressLine {
            mode: (tty || forced).then_some(tty),
            state: std::sync::Mutex::new((None, false)),
        }
    }

    fn show(&self, progress: paddock::plugin_store::Progress) {
        use paddock::plugin_store::Progress;
        let Some(tty) = self.mode else {
            if let Progress::Compiling { bytes } = progress
                && bytes >= LONG_COMPILE_BYTES
            {
                eprintln!("{}", compiling(bytes));
            }
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let (last, drawn) = &mut *state;
        let text = match progress {
            Progress::Downloading { done, total } => {
                let every = std::time::Duration::from_millis(if tty { 100 } else { 2000 });
                let complete = total == Some(done);
                if !complete && last.is_some_and(|t| t.elapsed() < every) {
                    return;
                }
                match total {
                    Some(total) => format!("downloading {} / {}", mib(done), mib(total)),
                    None => format!("downloading {}", mib(done)),
                }
            }
            Progress::Compiling { bytes } => compiling(bytes),
        };
        *last = Some(std::time::Instant::now());
        if tty {
            eprint!("\r\x1b[2K{text}");
            *drawn = true;
        } else {
            eprintln!("{text}");
        }
    }

    fn finish(&self) {
        if let (Some(true), Ok(state)) = (self.mode, self.state.lock())
            && state.1
        {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Components this big (a JavaScript or Python runtime inside) take tens of seconds to compile
/// on a small machine; a Rust tool, well under a MiB, takes a fraction of a second.
const LONG_COMPILE_BYTES: u64 = 4 << 20;

fn compiling(bytes: u64) -> String {
    if bytes >= LONG_COMPILE_BYTES {
        format!(
            "compiling and checking the component ({}: one with a JavaScript or Python runtime \
             inside takes up to a minute the first time; sessions then load it compiled)",
            mib(bytes)
        )
    } else {
        format!("compiling and checking the component ({})", mib(bytes))
    }
}

fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    }
}
