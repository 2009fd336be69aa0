//! `paddock plugin new|install|upgrade|list|inspect|remove` (S8); publishing, signing and
//! trusted keys are `plugin_registry.rs`.

use std::path::PathBuf;

use clap::Subcommand;

use super::plugin_registry;
use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use crate::plugin_store::{
    AuthChoice, CapabilityDiff, Change, InstallReport, InstallRequest, InstallSource, Origin,
    StoreError, Upgrade, Widening,
};
use crate::preset::PluginSource;
use crate::sandbox::{Capability, World};
use crate::scaffold::{self, Kind, Lang};

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Write a new plugin project (or with --hook, a hook) in ./NAME that builds with its
    /// language's own tools and no paddock checkout; its README gives the commands.
    New {
        /// The project's name; the built component installs as NAME with `-` as `_`.
        name: String,
        /// A hook (world `hook`) instead of a tool plugin.
        #[arg(long)]
        hook: bool,
        #[arg(long, value_enum, default_value = "rust")]
        lang: Lang,
        /// Where to create it (default ./NAME); must not exist or be empty.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Validate a .wasm tool plugin or hook (the world is detected) and store it by SHA-256
    /// under the data directory. Installing under a name in use replaces that plugin, as an
    /// upgrade does: what it would newly be able to do needs a yes (or --accept-widening).
    /// SOURCE is a .wasm file, oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST (pulled by
    /// digest, its layer verified while it downloads), or https://HOST/PATH.wasm with --sha256.
    Install {
        #[arg(value_name = "SOURCE", required_unless_present = "locked")]
        source: Option<String>,
        /// Install every plugin paddock.lock names, exactly (no SOURCE): from the data
        /// directory's blobs/ when they hold its bytes, else from its recorded origin by digest.
        #[arg(long, conflicts_with_all = ["source", "name", "sha256"])]
        locked: bool,
        /// The lock --locked reads (default: the project's .paddock/paddock.lock, else the
        /// data directory's).
        #[arg(long, value_name = "FILE", requires = "locked")]
        lock: Option<PathBuf>,
        /// Name to install it under; defaults to the file name (or the repository's last
        /// part) without `.wasm`, unchanged.
        #[arg(long)]
        name: Option<String>,
        /// The SHA-256 (64 hex digits) an https:// download must have; required for https://.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Authenticate to the registry with the bearer token in this environment variable
        /// (default: ~/.docker/config.json and its credential helpers, else anonymous).
        #[arg(long, value_name = "NAME")]
        registry_token_env: Option<String>,
        /// Show download and compile progress on stderr even when it is not a terminal (on a
        /// terminal it is shown anyway).
        #[arg(long)]
        progress: bool,
        /// Install an oci:// artifact without a signature by a trusted key (recorded, with a
        /// warning). Without it, an oci:// install needs a cosign signature of the manifest
        /// digest by a key added with `paddock plugin trust-key`.
        #[arg(long)]
        allow_unsigned: bool,
        /// Under a name in use: replace it even if the new version widens what it may do
        /// (new imports or tools, changed descriptions or schemas, lower risk...).
        #[arg(long)]
        accept_widening: bool,
    },
    /// Replace an installed plugin with its newer version, showing first what it would newly
    /// be able to do: an oci:// install by tag resolves its tag again (or --to REFERENCE);
    /// https:// needs --to URL --sha256 HEX, a local file --to FILE. Any widening needs a yes
    /// on a terminal, or --accept-widening; a refused upgrade leaves the old version in use.
    Upgrade {
        name: String,
        /// Where the new version is (oci://…, https://… with --sha256, or a .wasm file).
        #[arg(long, value_name = "REFERENCE")]
        to: Option<String>,
        /// Accept changes that widen what the plugin may do, without asking.
        #[arg(long)]
        accept_widening: bool,
        /// As for install: an oci:// version without a signature by a trusted key.
        #[arg(long)]
        allow_unsigned: bool,
        /// Authenticate to the registry with the bearer token in this environment variable.
        #[arg(long, value_name = "NAME")]
        registry_token_env: Option<String>,
        /// The SHA-256 an https:// --to must have.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Show download and compile progress on stderr even when it is not a terminal.
        #[arg(long)]
        progress: bool,
    },
    /// Trust a public key (ECDSA P-256 PEM, as `cosign generate-key-pair` or `skopeo
    /// generate-sigstore-key` write it) for signatures of oci:// installs; or --list, or
    /// --remove NAME.
    TrustKey {
        /// The name to keep the key under.
        #[arg(required_unless_present_any = ["list", "remove"], requires = "keyfile")]
        name: Option<String>,
        /// The public key file (`-----BEGIN PUBLIC KEY-----`).
        keyfile: Option<PathBuf>,
        /// List the trusted keys with their fingerprints.
        #[arg(long, conflicts_with_all = ["name", "remove"])]
        list: bool,
        /// Stop trusting the key of this name.
        #[arg(long, value_name = "NAME", conflicts_with = "name")]
        remove: Option<String>,
    },
    /// Sign an artifact in an OCI registry in cosign's key-based format: a signature of its
    /// manifest digest pushed at tag sha256-HEX.sig (verifiable with `cosign verify --key`).
    Sign {
        /// oci://REGISTRY/REPOSITORY:TAG (resolved to its digest) or …@sha256:DIGEST.
        #[arg(value_name = "REFERENCE")]
        target: String,
        /// An unencrypted PKCS#8 ECDSA P-256 private key (`openssl genpkey -algorithm EC
        /// -pkeyopt ec_paramgen_curve:P-256 -out key.pem`).
        #[arg(long, value_name = "PRIVATE.pem")]
        key: PathBuf,
        /// Authenticate with the bearer token in this environment variable.
        #[arg(long, value_name = "NAME")]
        registry_token_env: Option<String>,
    },
    /// Check a .wasm tool plugin or hook as install does, then push it to an OCI registry in
    /// the wasm OCI layout (config application/vnd.wasm.config.v0+json with its imports and
    /// exports, one application/wasm layer); prints the manifest digest.
    Publish {
        file: PathBuf,
        /// oci://REGISTRY/REPOSITORY:TAG (plain http only to 127.0.0.1, ::1 or localhost).
        #[arg(value_name = "REFERENCE")]
        target: String,
        /// Recorded as the manifest's org.opencontainers.image.version annotation.
        #[arg(long)]
        version: Option<String>,
        /// Then sign the pushed manifest digest with this unencrypted PKCS#8 P-256 private
        /// key, as `plugin sign` does (the key is checked before anything is pushed).
        #[arg(long, value_name = "PRIVATE.pem")]
        sign_key: Option<PathBuf>,
        /// Authenticate with the bearer token in this environment variable (default:
        /// ~/.docker/config.json and its credential helpers, else anonymous).
        #[arg(long, value_name = "NAME")]
        registry_token_env: Option<String>,
    },
    /// List installed plugins.
    List,
    /// Show a plugin's tools (or a hook's events), metadata, imports and hash. NAME may be
    /// `builtin:fs` or a path to a .wasm file.
    Inspect { name: String },
    /// Remove an installed plugin.
    Remove { name: String },
}

pub async fn run(cmd: PluginCommand) -> CommandResult {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return Err(Failure::plugin(format!("{e:#}"))),
    };
    let color = style::color_enabled_stdout();
    match cmd {
        PluginCommand::New {
            name,
            hook,
            lang,
            dir,
        } => new_project(&env, name, hook, lang, dir),
        PluginCommand::Install {
            source,
            locked,
            lock,
            name,
            sha256,
            registry_token_env,
            progress,
            allow_unsigned,
            accept_widening,
        } => {
            let auth = AuthChoice {
                token_env: registry_token_env,
            };
            let options = InstallOptions {
                sha256: sha256.as_deref(),
                auth: &auth,
                force_progress: progress,
                allow_unsigned,
                accept_widening,
            };
            match source {
                Some(source) if !locked => {
                    install(&env, &source, name.as_deref(), &options, color).await
                }
                _ => {
                    super::lock::install_locked(
                        &env,
                        lock.as_deref(),
                        &auth,
                        allow_unsigned,
                        progress,
                    )
                    .await
                }
            }
        }
        PluginCommand::Upgrade {
            name,
            to,
            accept_widening,
            allow_unsigned,
            registry_token_env,
            sha256,
            progress,
        } => {
            let auth = AuthChoice {
                token_env: registry_token_env,
            };
            let options = InstallOptions {
                sha256: sha256.as_deref(),
                auth: &auth,
                force_progress: progress,
                allow_unsigned,
                accept_widening,
            };
            upgrade(&env, &name, to.as_deref(), &options, color).await
        }
        PluginCommand::TrustKey {
            name,
            keyfile,
            list,
            remove,
        } => plugin_registry::trust_key(&env, name, keyfile, list, remove),
        PluginCommand::Sign {
            target,
            key,
            registry_token_env,
        } => {
            let auth = AuthChoice {
                token_env: registry_token_env,
            };
            plugin_registry::sign(&target, &key, &auth).await
        }
        PluginCommand::Publish {
            file,
            target,
            version,
            sign_key,
            registry_token_env,
        } => {
            let auth = AuthChoice {
                token_env: registry_token_env,
            };
            plugin_registry::publish(
                &env,
                &file,
                &target,
                version.as_deref(),
                sign_key.as_deref(),
                &auth,
            )
            .await
        }
        PluginCommand::List => match env.store.list() {
            Ok(records) if records.is_empty() => {
                println!("no plugins installed; built-ins: builtin:fs, builtin:search");
                Ok(Exit::Ok)
            }
            Ok(records) => {
                for r in records {
                    let what = if r.kind == World::Hook.as_str() {
                        "(hook)".to_string()
                    } else {
                        r.tools.join(", ")
                    };
                    println!(
                        "{}  {}  {}",
                        paint(color, BOLD, &format!("{:<16}", r.name)),
                        &r.sha256[..12],
                        sanitize(&what)
                    );
                }
                Ok(Exit::Ok)
            }
            Err(e) => Err(Failure::plugin(e)),
        },
        PluginCommand::Inspect { name } => inspect(&env, &name, color).await,
        PluginCommand::Remove { name } => match env.store.remove(&name) {
            Ok(record) => {
                println!("removed {} (sha256 {})", record.name, record.sha256);
                Ok(Exit::Ok)
            }
            Err(e) => Err(Failure::plugin(e)),
        },
    }
}

struct InstallOptions<'a> {
    sha256: Option<&'a str>,
    auth: &'a AuthChoice,
    force_progress: bool,
    allow_unsigned: bool,
    accept_widening: bool,
}

impl InstallOptions<'_> {
    /// The store's request for these options, telling `progress` how it goes.
    fn request<'a>(
        &'a self,
        progress: &'a (dyn Fn(crate::plugin_store::Progress) + Sync),
    ) -> InstallRequest<'a> {
        InstallRequest {
            auth: self.auth,
            allow_unsigned: self.allow_unsigned,
            widening: if self.accept_widening {
                Widening::Accept
            } else {
                Widening::Ask(&ask_widening)
            },
            progress,
        }
    }
}

/// On a terminal, shows the diff and asks y/N on stdin; elsewhere a widening is refused
/// unless accepted on the command line.
fn ask_widening(diff: &CapabilityDiff) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
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

/// The failure of an install or upgrade: a refused widening shows its whole diff first.
fn refusal(e: StoreError) -> Failure {
    match &e {
        StoreError::Widens { diff, .. } => Failure::plugin(format!("{}\n{e}", render_diff(diff))),
        _ => Failure::plugin(format!("{e}\nnothing was installed")),
    }
}

/// The failure of an upgrade: as an install's, and the installed version stays.
fn upgrade_refusal(e: StoreError) -> Failure {
    match &e {
        StoreError::Widens { .. } => refusal(e),
        _ => Failure::plugin(format!(
            "{e}\nnothing was changed: the installed version stays in use"
        )),
    }
}

async fn upgrade(
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
        Upgrade::Upgraded(report) => print_installed(&report, color),
    }
    Ok(Exit::Ok)
}

async fn install(
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
            crate::plugin_store::RemoteError::BadReference {
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
            kind_label(&old.kind),
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
        kind_label(&record.kind),
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
    if record.kind == World::Hook.as_str() {
        println!(
            "name it in a preset: [[hooks]] source = \"{}\", on = \"pre\" or \"post\"",
            record.name
        );
    } else {
        println!("tools: {}", sanitize(&record.tools.join(", ")));
    }
}

fn print_signature(signature: Option<&crate::plugin_store::SignatureRecord>) {
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
/// what a script reads stays as it was.
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

    fn show(&self, progress: crate::plugin_store::Progress) {
        use crate::plugin_store::Progress;
        let Some(tty) = self.mode else { return };
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
            Progress::Compiling => "compiling and checking the component".to_string(),
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

fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    }
}

async fn inspect(env: &Env, name: &str, color: bool) -> CommandResult {
    let source = PluginSource::parse(name, &env.cwd);
    let bytes = match env.store.bytes(&source) {
        Ok(bytes) => bytes,
        Err(e) => return Err(Failure::plugin(e)),
    };
    let label = name.strip_prefix("builtin:").unwrap_or(name);
    let world = match env.sandbox.world_of(label, &bytes) {
        Ok(world) => world,
        Err(e) => return Err(Failure::plugin(e)),
    };
    if world == World::Hook {
        return inspect_hook(env, name, label, &bytes, color).await;
    }
    let plugin = match env.sandbox.load(label, &bytes, &Capability::ALL).await {
        Ok(plugin) => plugin,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!(
        "{}  tool plugin  sha256 {}  ({} bytes)",
        paint(color, BOLD, &sanitize(name)),
        plugin.sha256,
        bytes.len()
    );
    print_origin(env, &source);
    print_imports(&plugin.imports);
    for tool in plugin.tools.iter() {
        println!();
        println!("{}", paint(color, BOLD, &sanitize(&tool.name)));
        let m = &tool.meta;
        let show = |v: Option<bool>| v.map_or("undeclared".to_string(), |b| b.to_string());
        println!(
            "  read-only: {}  concurrency-safe: {}  idempotent: {}  cancellable: {}  risk: {}",
            show(m.read_only),
            show(m.concurrency_safe),
            show(m.idempotent),
            show(m.cancellable),
            m.risk
                .map_or("undeclared (treated as high)".to_string(), |r| format!(
                    "{r:?}"
                )
                .to_lowercase()),
        );
        if let Some(b) = m.output_budget {
            println!(
                "  output budget: {} bytes, then {:?}",
                b.max_bytes, b.on_overflow
            );
        }
        if !m.path_params.is_empty() {
            println!("  path params: {}", sanitize(&m.path_params.join(", ")));
        }
        // Names, descriptions and schemas are the plugin's words (T3).
        for line in tool.description.lines() {
            println!("  {}", sanitize(line));
        }
        println!(
            "  parameters: {}",
            json_for_terminal(&tool.parameters.to_string())
        );
    }
    Ok(Exit::Ok)
}

/// Where an installed plugin came from: the reference and the digests a remote install
/// verified.
fn print_origin(env: &Env, source: &PluginSource) {
    let PluginSource::Installed(name) = source else {
        return;
    };
    let Ok(record) = env.store.get(name) else {
        return;
    };
    match &record.origin {
        Some(Origin::Oci {
            reference,
            manifest_digest,
            layer_digest,
            signature,
            ..
        }) => {
            println!(
                "from {} (manifest {manifest_digest}, layer {layer_digest})",
                sanitize(reference)
            );
            match signature.as_deref() {
                Some(s) if s.unsigned_allowed => {
                    println!("signature: none checked (installed with --allow-unsigned)")
                }
                Some(s) => println!(
                    "signed by trusted key {} ({})",
                    sanitize(s.key.as_deref().unwrap_or_default()),
                    s.fingerprint.as_deref().unwrap_or_default()
                ),
                None => {}
            }
        }
        Some(Origin::Https { url, .. }) => println!("from {}", sanitize(url)),
        None => println!("from {}", sanitize(&record.installed_from)),
    }
}

fn kind_label(kind: &str) -> &'static str {
    if kind == World::Hook.as_str() {
        "hook"
    } else {
        "tool plugin"
    }
}

fn print_imports(imports: &[String]) {
    println!("imports:");
    for import in imports {
        let note = match Capability::ALL.iter().find(|c| c.interface() == import) {
            Some(cap) => format!(
                "  (capability: needs plugins.NAME.grants.{} in the preset)",
                cap.name()
            ),
            None => String::new(),
        };
        println!("  {}{note}", sanitize(import));
    }
}

/// A hook exports both events; the preset's `on` chooses the one that runs.
async fn inspect_hook(
    env: &Env,
    name: &str,
    label: &str,
    bytes: &[u8],
    color: bool,
) -> CommandResult {
    let hook = match env.sandbox.load_hook(label, bytes, &Capability::ALL).await {
        Ok(hook) => hook,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!(
        "{}  hook  sha256 {}  ({} bytes)",
        paint(color, BOLD, &sanitize(name)),
        hook.sha256,
        bytes.len()
    );
    print_origin(env, &PluginSource::parse(name, &env.cwd));
    println!(
        "events: pre-tool-use, post-tool-use (a preset's [[hooks]] `on = \"pre\"|\"post\"` picks one)"
    );
    print_imports(&hook.imports);
    Ok(Exit::Ok)
}

fn new_project(
    env: &Env,
    name: String,
    hook: bool,
    lang: Lang,
    dir: Option<PathBuf>,
) -> CommandResult {
    let dir = env.cwd.join(dir.unwrap_or_else(|| PathBuf::from(&name)));
    let request = scaffold::Request {
        name,
        kind: if hook { Kind::Hook } else { Kind::Tool },
        lang,
        dir,
        data_dir: env.store.root().to_path_buf(),
    };
    let created = match scaffold::create(&request) {
        Ok(created) => created,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!("created {}", sanitize(&created.dir.display().to_string()));
    if let Some(sdk) = &created.sdk {
        println!(
            "paddock-sdk {} is not on crates.io yet: its source is in {} (Cargo.toml's [patch.crates-io] points there)",
            scaffold::SDK_VERSION,
            sanitize(&sdk.display().to_string())
        );
    }
    println!("next, in {}:", sanitize(&created.dir.display().to_string()));
    for command in &created.commands {
        println!("  {}", sanitize(command));
    }
    Ok(Exit::Ok)
}
