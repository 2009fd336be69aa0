//! The jail's canaries (`paddock doctor`): a program started in the jail the way the `exec`
//! capability starts one (a scratch directory granted read-write, no network grant) tries
//! what the jail must stop (writing outside its grants, reading a file outside them, opening
//! a socket) and one thing it must allow (writing in its grant), and reports each outcome.
//! The program is paddock itself (`probe_in_child`), so the canaries need nothing from the
//! image they run in. Probing layers (`layers`) says what the kernel offers; the canaries show
//! that the jail built from it really stops each route.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use paddock_jail::{FsAccess, Jail, JailSpec, ProcessLimits, Program};
use tokio::io::AsyncReadExt;

/// One canary: what it tried and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    pub name: &'static str,
    /// What it tries, in words.
    pub tries: &'static str,
    /// `Ok(how it was stopped)` when the jail held (or, for the control, when the allowed
    /// thing worked); `Err(what happened)` when it did not.
    pub outcome: Result<String, String>,
}

/// The canaries' names and what each tries, in the order the child reports them.
const TRIED: [(&str, &str); 4] = [
    (
        "write-granted",
        "write a file in its granted directory (must work)",
    ),
    ("write-outside", "write a file outside its grants"),
    ("read-outside", "read a file outside its grants"),
    (
        "socket",
        "connect to a TCP socket on loopback without the network grant",
    ),
];

/// Runs the canaries: `program` with `args` is a paddock binary whose `args` make it call
/// `probe_in_child` with the three paths and the port appended. `Err` when the jail cannot be
/// built here at all (a missing layer: `layers` says which).
pub async fn run_canaries(program: &Path, args: &[String]) -> Result<Vec<Canary>, String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
    let outside = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
    let granted = scratch.path().canonicalize().map_err(|e| e.to_string())?;
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "the canary must not read this\n").map_err(|e| e.to_string())?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let program = program.canonicalize().map_err(|e| e.to_string())?;
    let spec = JailSpec {
        fs: FsAccess {
            read: vec![program.clone()],
            write: vec![granted.clone()],
        },
        binds: Vec::new(),
        network: false,
        limits: ProcessLimits {
            cpu_secs: 10,
            address_space_bytes: 4 << 30,
            processes: 16,
            file_bytes: 1 << 20,
            open_files: 64,
        },
    };
    let mut args = args.to_vec();
    args.extend([
        granted.display().to_string(),
        outside.path().display().to_string(),
        secret.display().to_string(),
        port.to_string(),
    ]);
    let mut child = Jail::prepare(spec, "doctor")?.spawn(Program {
        path: &program,
        args: &args,
        env: Vec::new(),
        cwd: &granted,
        stdin: false,
        terminal: None,
    })?;
    let mut stdout = child.stdout.take().ok_or("the canary has no stdout")?;
    let mut report = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stdout.read_to_string(&mut report));
    let read = read.await;
    if read.is_err() {
        child.kill();
    }
    let code = child.wait().await.map_err(|e| e.to_string())?;
    read.map_err(|_| "the canary did not finish in 10 s".to_string())?
        .map_err(|e| format!("reading the canary's report: {e}"))?;
    // Whatever reached the listener proves the socket canary broken, even if the report lies.
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let reached = listener.accept().is_ok();
    let mut canaries = judge(&report);
    if code != Some(0) {
        return Err(format!(
            "the canary program failed (exit {code:?}) and reported: {}",
            report.trim()
        ));
    }
    if reached && let Some(socket) = canaries.iter_mut().find(|c| c.name == "socket") {
        socket.outcome =
            Err("a connection from inside the jail reached the host's listener".into());
    }
    Ok(canaries)
}

/// Reads the child's report (`NAME ok|denied|error DETAIL` per line) into canaries: every one
/// must be there, or it counts as not held.
fn judge(report: &str) -> Vec<Canary> {
    TRIED
        .iter()
        .map(|(name, tries)| {
            let line = report
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '));
            let outcome = match (line, *name) {
                (None, _) => Err("the canary did not report it".to_string()),
                (Some(l), "write-granted") => match l.strip_prefix("ok") {
                    Some(_) => Ok("written".to_string()),
                    None => Err(format!("the granted write failed: {l}")),
                },
                (Some(l), _) => match l.strip_prefix("denied ") {
                    Some(how) => Ok(format!("stopped: {how}")),
                    None => Err(format!("NOT stopped: {l}")),
                },
            };
            Canary {
                name,
                tries,
                outcome,
            }
        })
        .collect()
}

/// The child's side, run by the paddock binary inside the jail: tries each thing and returns
/// the report `run_canaries` reads. `args`: the granted directory, the outside directory, the
/// outside file and the listener's port.
pub fn probe_in_child(args: &[String]) -> String {
    let [granted, outside, secret, port] = args else {
        return format!("usage: 4 arguments, got {}", args.len());
    };
    let refused = |e: &std::io::Error| e.kind() == ErrorKind::PermissionDenied;
    let line = |name: &str, result: std::io::Result<()>| match result {
        Ok(()) => format!("{name} ok"),
        Err(e) if refused(&e) => format!("{name} denied {e}"),
        Err(e) => format!("{name} error {e}"),
    };
    let connect = || {
        let address = format!("127.0.0.1:{port}");
        std::net::TcpStream::connect(address).map(drop)
    };
    [
        line(
            "write-granted",
            std::fs::write(PathBuf::from(granted).join("canary"), "x"),
        ),
        line(
            "write-outside",
            std::fs::write(PathBuf::from(outside).join("canary"), "x"),
        ),
        line("read-outside", std::fs::read(secret).map(drop)),
        line("socket", connect()),
    ]
    .join("\n")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_unstopped_canary_is_not_held() {
        let report = "write-granted ok\nwrite-outside denied Permission denied (os error 13)\n\
                      read-outside ok\n";
        let judged = judge(report);
        assert_eq!(judged[0].outcome, Ok("written".into()));
        assert!(
            judged[1]
                .outcome
                .as_ref()
                .unwrap()
                .contains("Permission denied")
        );
        assert_eq!(judged[2].outcome, Err("NOT stopped: ok".into()));
        assert_eq!(
            judged[3].outcome,
            Err("the canary did not report it".into())
        );
    }
}
