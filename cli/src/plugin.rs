//! `paddock plugin new|install|upgrade|list|inspect|remove` (S8): the subcommands and the
//! read-only ones; installing and upgrading (the diff, the progress line) are
//! `plugin_install.rs`, publishing, signing and trusted keys `plugin_registry.rs`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::plugin_install::{InstallOptions, install, message, upgrade};
use super::plugin_registry;
use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use crate::scaffold::{self, Kind, Lang};
use paddock::plugin_store::{AuthChoice, Origin};
use paddock::preset::PluginSource;
use paddock_sandbox::{Capability, World};

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
    Install(InstallArgs),
    /// Replace an installed plugin with its newer version, showing first what it would newly
    /// be able to do: an oci:// install by tag resolves its tag again (or --to REFERENCE);
    /// https:// needs --to URL --sha256 HEX, a local file --to FILE. Any widening needs a yes
    /// on a terminal, or --accept-widening; a refused upgrade leaves the old version in use.
    Upgrade(UpgradeArgs),
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
        /// Trust the key only for references matching PATTERN (REGISTRY/REPOSITORY; `*`
        /// matches within one path segment, `**` across segments), e.g. 'ghcr.io/acme/*';
        /// repeatable. Without it the key vouches for any reference.
        #[arg(long = "for", value_name = "PATTERN", requires = "keyfile")]
        scopes: Vec<String>,
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
        /// Sign only if the reference still resolves to this manifest digest (the one you
        /// checked); refused otherwise.
        #[arg(long, value_name = "sha256:HEX")]
        digest: Option<String>,
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

/// `plugin install`'s arguments.
#[derive(Args)]
pub struct InstallArgs {
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
    #[command(flatten)]
    fetch: FetchArgs,
}

/// What `plugin install` and `plugin upgrade` both take: how the bytes are fetched and what
/// is accepted of them.
#[derive(Args)]
pub struct FetchArgs {
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
}

impl FetchArgs {
    fn auth(&self) -> AuthChoice {
        AuthChoice {
            token_env: self.registry_token_env.clone(),
        }
    }

    fn options<'a>(&'a self, auth: &'a AuthChoice) -> InstallOptions<'a> {
        InstallOptions {
            sha256: self.sha256.as_deref(),
            auth,
            force_progress: self.progress,
            allow_unsigned: self.allow_unsigned,
            accept_widening: self.accept_widening,
        }
    }
}

impl InstallArgs {
    async fn run(self, env: &Env, color: bool) -> CommandResult {
        let auth = self.fetch.auth();
        let options = self.fetch.options(&auth);
        match &self.source {
            Some(source) if !self.locked => {
                install(env, source, self.name.as_deref(), &options, color).await
            }
            _ => super::lock::install_locked(env, self.lock.as_deref(), &options).await,
        }
    }
}

/// `plugin upgrade`'s arguments.
#[derive(Args)]
pub struct UpgradeArgs {
    name: String,
    /// Where the new version is (oci://…, https://… with --sha256, or a .wasm file).
    #[arg(long, value_name = "REFERENCE")]
    to: Option<String>,
    #[command(flatten)]
    fetch: FetchArgs,
}

impl UpgradeArgs {
    async fn run(self, env: &Env, color: bool) -> CommandResult {
        let auth = self.fetch.auth();
        let options = self.fetch.options(&auth);
        upgrade(env, &self.name, self.to.as_deref(), &options, color).await
    }
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
        PluginCommand::Install(args) => args.run(&env, color).await,
        PluginCommand::Upgrade(args) => args.run(&env, color).await,
        PluginCommand::TrustKey {
            name,
            keyfile,
            list,
            remove,
            scopes,
        } => plugin_registry::trust_key(&env, name, keyfile, list, remove, scopes),
        PluginCommand::Sign {
            target,
            key,
            digest,
            registry_token_env,
        } => {
            let auth = AuthChoice {
                token_env: registry_token_env,
            };
            plugin_registry::sign(&target, &key, digest.as_deref(), &auth).await
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
        PluginCommand::List => list(&env, color),
        PluginCommand::Inspect { name } => inspect(&env, &name, color).await,
        PluginCommand::Remove { name } => remove(&env, &name),
    }
}

fn list(env: &Env, color: bool) -> CommandResult {
    let records = env.store.list().map_err(|e| Failure::plugin(message(&e)))?;
    if records.is_empty() {
        println!("no plugins installed; built-ins: builtin:fs, builtin:search");
        return Ok(Exit::Ok);
    }
    for r in records {
        let what = if r.kind == World::Hook {
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

fn remove(env: &Env, name: &str) -> CommandResult {
    let record = env
        .store
        .remove(name)
        .map_err(|e| Failure::plugin(message(&e)))?;
    println!("removed {} (sha256 {})", record.name, record.sha256);
    Ok(Exit::Ok)
}

async fn inspect(env: &Env, name: &str, color: bool) -> CommandResult {
    let source = PluginSource::parse(name, &env.cwd);
    let bytes = match env.store.bytes(&source) {
        Ok(bytes) => bytes,
        Err(e) => return Err(Failure::plugin(message(&e))),
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
