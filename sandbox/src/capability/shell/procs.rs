//! The processes a shell still runs, as the kernel lists them: every process under `/proc`
//! in the same PID namespace as the shell's bash. Read from paddock's side, so nothing the
//! shell runs can hide a process from the list or add one to it.

/// One process of the shell.
pub(super) struct Process {
    /// Its pid as the shell sees it (`$!`, `ps`, `kill`).
    pub pid: i32,
    pub command: String,
}

/// Longest command line shown for one process.
const SHOWN: usize = 200;

/// The processes in the PID namespace whose first process is `init` (paddock's pid for it),
/// less `init` itself; empty when it is gone.
pub(super) fn processes(init: i32) -> Vec<Process> {
    let Ok(namespace) = std::fs::read_link(format!("/proc/{init}/ns/pid")) else {
        return Vec::new();
    };
    // An unconfined shell (`confine = "off"`) shares paddock's namespace: its processes are
    // those of its process group.
    let own = std::fs::read_link("/proc/self/ns/pid").is_ok_and(|ns| ns == namespace);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Process> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != init)
        .filter(|pid| match own {
            true => group_of(*pid) == Some(init),
            false => {
                std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|ns| ns == namespace)
            }
        })
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            // `NSpid:` lists the pid in each namespace from the outermost in: the last is
            // the shell's.
            let inner = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))?
                .split_whitespace()
                .last()?
                .parse()
                .ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let mut command = String::from_utf8_lossy(&cmdline)
                .trim_end_matches('\0')
                .replace('\0', " ");
            if command.is_empty() {
                // A zombie, or a kernel-side name only.
                command = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Name:"))
                    .map(|n| format!("[{}]", n.trim()))
                    .unwrap_or_default();
            }
            if command.len() > SHOWN {
                let cut = (0..=SHOWN)
                    .rev()
                    .find(|i| command.is_char_boundary(*i))
                    .unwrap_or(0);
                command.truncate(cut);
                command.push_str(" ...");
            }
            Some(Process {
                pid: if own { pid } else { inner },
                command,
            })
        })
        .collect();
    found.sort_by_key(|p| p.pid);
    found
}

/// The process group of `pid` (`/proc/PID/stat`'s fifth field, after the name in brackets).
fn group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}
