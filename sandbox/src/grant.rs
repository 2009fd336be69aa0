//! What one plugin is granted for a call: mounts, capabilities and limits (S2-S6). Built by the
//! preset, enforced by `call`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fs::mount::MountHandle;
use crate::fs::protect::Protect;

/// Read-only or read-write access to a mounted host directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MountMode {
    Ro,
    Rw,
}

/// A host directory the plugin sees at `guest` (S2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Absolute host path.
    pub host: PathBuf,
    /// Absolute guest path, e.g. `/workspace`.
    pub guest: String,
    pub mode: MountMode,
    /// The directory, opened once when the preset was resolved (K3). Calls and exec'd
    /// programs use it, never `host` by name; `None` (a mount built by hand) is opened at the
    /// call, with the same refusal of symlinks.
    #[serde(skip)]
    pub handle: Option<Arc<MountHandle>>,
}

impl Mount {
    /// A mount whose directory is opened now (no symlink anywhere in `host`, which must be
    /// absolute) and held from then on; `host` becomes the real path that was opened.
    pub fn open(
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        mode: MountMode,
    ) -> std::io::Result<Mount> {
        let handle = MountHandle::open(&host.into())?;
        Ok(Mount {
            host: handle.path().to_path_buf(),
            guest: guest.into(),
            mode,
            handle: Some(Arc::new(handle)),
        })
    }

    /// The held directory, opening it now if the mount was built by hand.
    pub fn held(&self) -> std::io::Result<Arc<MountHandle>> {
        match &self.handle {
            Some(handle) => Ok(handle.clone()),
            None => MountHandle::open(&self.host).map(Arc::new),
        }
    }
}

/// Host capabilities beyond WASI that a plugin may import (S6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Exec,
    Http,
}

impl Capability {
    pub const ALL: [Capability; 2] = [Capability::Exec, Capability::Http];

    pub fn name(self) -> &'static str {
        match self {
            Capability::Exec => "exec",
            Capability::Http => "http",
        }
    }

    /// The component import name that asks for this capability.
    pub fn interface(self) -> &'static str {
        match self {
            Capability::Exec => "paddock:plugin/exec@0.1.0",
            Capability::Http => "paddock:plugin/http@0.1.0",
        }
    }
}

/// Per-call limits (S3-S5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Instruction budget; `None` turns fuel off and leaves the deadline as the only CPU limit.
    pub fuel: Option<u64>,
    /// Wall-clock deadline for one call.
    pub timeout: Duration,
    /// Sum over all linear memories of one call's instances.
    pub memory_bytes: u64,
    /// Largest result, in bytes, before the output budget cuts or spills it. `None` takes the
    /// tool's own budget, or the default.
    pub output_bytes: Option<u64>,
    /// Bytes of stdout and of stderr kept; the rest is counted and dropped.
    pub stdio_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            fuel: Some(2_000_000_000),
            timeout: Duration::from_secs(30),
            memory_bytes: 256 << 20,
            output_bytes: None,
            stdio_bytes: 64 << 10,
        }
    }
}

/// What the `exec` capability may run (S6) and how the program is confined (K1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecGrant {
    /// Patterns: a program name (any arguments) or a program with arguments, `*` for the rest
    /// (`"cargo test *"`); see `exec_policy`.
    pub allow: Vec<String>,
    /// Host environment variables passed through; every other variable is cleared.
    pub env: Vec<String>,
    /// Longest run of one program.
    pub timeout: Duration,
    /// Bytes of stdout and of stderr kept per run.
    pub output_bytes: usize,
    /// Confine the program by the kernel (the default). `false` runs it as the user, with
    /// the user's rights: only by the preset's explicit `confine = "off"`.
    #[serde(default = "yes")]
    pub confine: bool,
    /// Whether the program may use the network (TCP/UDP and UNIX sockets).
    #[serde(default)]
    pub network: bool,
    /// More host paths the program may read (and run), e.g. a toolchain outside `/usr`.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// More host paths the program may write, e.g. a build cache.
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// Largest address space of the program, in bytes (`RLIMIT_AS`).
    #[serde(default = "default_memory")]
    pub memory_bytes: u64,
    /// Most processes the program may run at once.
    #[serde(default = "default_processes")]
    pub processes: u64,
    /// Largest file the program may write, in bytes.
    #[serde(default = "default_file_bytes")]
    pub file_bytes: u64,
    /// Patterns (as `allow`) of commands the shell asks about before running, even when
    /// `allow` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// Patterns of commands never run, by the shell or by `run`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// How long a shell call waits for its command before answering with what it printed so
    /// far, leaving it running.
    #[serde(default = "default_yield", skip_serializing_if = "is_default_yield")]
    pub yield_time: Duration,
    /// Where the jail cannot be set up, the plugin's tools are left out rather than the
    /// session refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

fn default_yield() -> Duration {
    ExecGrant::default().yield_time
}
fn is_default_yield(time: &Duration) -> bool {
    *time == default_yield()
}

fn yes() -> bool {
    true
}
fn default_memory() -> u64 {
    ExecGrant::default().memory_bytes
}
fn default_processes() -> u64 {
    ExecGrant::default().processes
}
fn default_file_bytes() -> u64 {
    ExecGrant::default().file_bytes
}

impl Default for ExecGrant {
    fn default() -> ExecGrant {
        ExecGrant {
            allow: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(30),
            output_bytes: 1 << 20,
            confine: true,
            network: false,
            read: Vec::new(),
            write: Vec::new(),
            memory_bytes: 8 << 30,
            processes: 512,
            file_bytes: 4 << 30,
            ask: Vec::new(),
            deny: Vec::new(),
            yield_time: Duration::from_secs(10),
            optional: false,
        }
    }
}

/// Which hosts the `http` capability may reach (S6): `plugins.<name>.grants.http`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpGrant {
    /// `host`, `*.host`, optionally with `scheme://` and `:port` (default: https, port 443).
    pub allow: Vec<String>,
    /// Longest request, end to end.
    pub timeout: Duration,
    /// Bytes of a response body kept; the rest is cut and `truncated` set.
    pub max_response_bytes: usize,
}

/// Everything one plugin is allowed, as the preset resolved it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub mounts: Vec<Mount>,
    /// Capabilities the plugin may import. A capability listed here without its allow-list
    /// below allows nothing.
    pub capabilities: Vec<Capability>,
    pub limits: Limits,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpGrant>,
    /// Protected paths inside the mounts (K2): the defaults plus the preset's `protect`, less
    /// its `writable_protected`.
    #[serde(default)]
    pub protect: Protect,
    /// The tag of the call this grant is for (`leftovers::call_tag`), given to the tool as
    /// `PADDOCK_CALL_TAG` so a temporary file it leaves can be tied to the call; set per call
    /// by the executor, never by a preset.
    #[serde(skip)]
    pub call_tag: Option<String>,
    /// Where the call may write the whole of an output too long for its result, and where
    /// the model reads it back; set per call by the executor.
    #[serde(skip)]
    pub spill: Option<SpillDir>,
    /// The shell command the call's gate admitted (shown to the user when it asked), set per
    /// call by the executor: the `exec` capability runs a command its rules would ask about
    /// only when it is exactly this one.
    #[serde(skip)]
    pub admitted_command: Option<String>,
    /// The gate admitted the call as a follow-up of a command already judged (it names a
    /// `session_id` and no command): the `exec` capability starts no program in it.
    #[serde(skip)]
    pub follow_up: bool,
    /// What the plugin's capabilities keep across the calls of one session (its shell).
    #[serde(skip)]
    pub session: SessionState,
    /// Where the call's program output goes as it comes (the shell's live tail); set per call
    /// by the executor.
    #[serde(skip)]
    pub live_output: Option<LiveOutput>,
}

/// A call's output as it is printed, for whoever watches the session.
#[derive(Clone)]
pub struct LiveOutput(Arc<dyn Fn(&str) + Send + Sync>);

impl LiveOutput {
    pub fn new(tap: impl Fn(&str) + Send + Sync + 'static) -> LiveOutput {
        LiveOutput(Arc::new(tap))
    }

    pub fn send(&self, text: &str) {
        (self.0)(text);
    }
}

impl std::fmt::Debug for LiveOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveOutput")
    }
}

/// Who watches is not part of what a grant allows.
impl PartialEq for LiveOutput {
    fn eq(&self, _: &LiveOutput) -> bool {
        true
    }
}
impl Eq for LiveOutput {}

impl Grant {
    /// Whether nothing run under this grant can change the user's files: every mount is
    /// read-only, and no exec grant names a directory to write or runs unconfined.
    pub fn writes_nothing(&self) -> bool {
        self.mounts.iter().all(|m| m.mode == MountMode::Ro)
            && self
                .exec
                .as_ref()
                .is_none_or(|e| e.confine && e.write.is_empty())
    }
}

/// A session's spill directory, where a result too large for its budget is written whole: where
/// it is on the host, and where plugins granted it see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillDir {
    pub host: PathBuf,
    pub guest: String,
}

impl SpillDir {
    pub const GUEST: &'static str = "/spill";
    /// Its name in the session's directory.
    pub const NAME: &'static str = "spill";
}

/// State a capability keeps for one plugin across the calls of a session (the shell's
/// processes), opaque to the layers below the capability that owns it. Clones share it; the
/// last clone, dropped with the session's tools, drops what it holds. Calls that use it hold
/// its lock for their whole run, so they take turns.
#[derive(Clone, Default)]
pub struct SessionState(pub(crate) Arc<SessionSlot>);

pub(crate) type SessionSlot = tokio::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>;

impl SessionState {
    /// A state of its own, shared with no other session.
    pub fn fresh() -> SessionState {
        SessionState::default()
    }
}

impl std::fmt::Debug for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionState")
    }
}

/// Session state is not part of what a grant allows.
impl PartialEq for SessionState {
    fn eq(&self, _: &SessionState) -> bool {
        true
    }
}
impl Eq for SessionState {}
