//! A long-lived confined host process with its standard streams (K1): the MCP servers a preset
//! starts. The same jail as an `exec` run (`confined`, the `paddock-jail` crate): the mounts by their held
//! handles, protected paths read-only, `read` paths, a private TMPDIR, a cleared environment
//! but for the variables named, no network unless granted, rlimits, and PID 1 of its own
//! namespace, so killing it (or dropping it) kills everything it started.
//!
//! What it does not do: speak any protocol over the streams, or restart anything.

use tokio::net::unix::pipe;

use crate::capability::confined::{Confined, ConfinedRun, Program};
use crate::capability::locate::{find_program, host_dir};
use crate::fs::protect::Protect;
use crate::grant::{ExecGrant, Mount};

/// What to start and how to confine it.
pub struct ServerSpec<'a> {
    /// The preset key of the server, for messages (`mcp.NAME`).
    pub key: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub mounts: &'a [Mount],
    pub protect: &'a Protect,
    pub jail: &'a ExecGrant,
}

/// A running confined server. Dropping it kills it and all it started, and removes the
/// protected paths it created (`ConfinedRun`).
pub struct ServerProcess {
    run: ConfinedRun,
}

/// The server's standard input, output and error.
pub type ServerStdio = (pipe::Sender, pipe::Receiver, pipe::Receiver);

impl ServerProcess {
    /// Starts the server confined. It sees host paths: each mount's `host` directory at its
    /// own path (the `guest` name is what paddock's tools call it, not where the server finds
    /// it), and its working directory is the first mount's. Without mounts it sees no files
    /// but its `read` paths and runs in its private temporary directory.
    pub fn start(spec: &ServerSpec<'_>) -> Result<(ServerProcess, ServerStdio), String> {
        let program = find_program(spec.command)?;
        let confined = Confined::prepare(spec.mounts, spec.protect, spec.jail, &program, spec.key)?;
        let cwd = if spec.mounts.is_empty() {
            confined.tmp.path().to_path_buf()
        } else {
            host_dir(spec.mounts, None)?
        };
        let env = confined.environment(&spec.jail.env);
        let mut run = confined
            .start(Program {
                path: &program,
                args: spec.args,
                env,
                cwd: &cwd,
                stdin: true,
                terminal: None,
            })
            .map_err(|e| format!("cannot start `{}` confined: {e}", program.display()))?;
        let child = run.child();
        let stdio = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
            _ => return Err("the confined server has no standard streams".into()),
        };
        Ok((ServerProcess { run }, stdio))
    }

    /// Kills the server and everything it started.
    pub fn kill(&self) {
        self.run.kill();
    }
}
