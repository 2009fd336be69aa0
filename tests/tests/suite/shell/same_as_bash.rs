//! The shell answers as one real bash session does: each scenario's commands run as `shell`
//! calls of one batch and, on the host, typed one after the other into one interactive bash
//! (`bash --noprofile --norc --noediting -i` on pipes, in a copy of the same project), and
//! every call's output and exit status must be the reference's. Only what must differ is
//! normalised: the project's directory (paddock's and the reference's are two temporary
//! directories) and the PIDs in job notices (`[1] 12345`).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use super::{Answer, Scene};

/// How long the reference may take over one command.
const REFERENCE_LIMIT: Duration = Duration::from_secs(30);

/// What the reference session answered to one command.
#[derive(Debug)]
struct Reference {
    output: String,
    status: i32,
    /// The command ended the shell (`exit`).
    exited: bool,
}

/// One interactive bash on pipes, its output merged and read by a thread.
struct ReferenceShell {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<Vec<u8>>,
    pending: Vec<u8>,
    mark: String,
}

impl ReferenceShell {
    fn start(dir: &Path) -> ReferenceShell {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc", "--noediting", "-i"])
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("LANG", std::env::var_os("LANG").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the reference bash");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, output) = channel();
        let mut stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            let mut buf = [0u8; 64 << 10];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        // What bash says before its standard error joins its output (no job control on a
        // pipe) is not any command's.
        let mut stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut shell = ReferenceShell {
            child,
            stdin,
            output,
            pending: Vec::new(),
            mark: format!("reference-mark-{}-{nanos}", std::process::id()),
        };
        let setup = shell.send("PS1= PS2= PS0= PROMPT_COMMAND=\nexec 2>&1", "setup");
        assert!(!setup.exited, "the reference bash did not start: {setup:?}");
        shell
    }

    /// Types `command`, then a line that prints the mark and `$?`; collects what came before
    /// the mark.
    fn send(&mut self, command: &str, name: &str) -> Reference {
        let mark = format!("{}-{name}:", self.mark);
        // The mark's line leaves `$?` as the command left it, for the next command.
        let typed = format!(
            "{command}\n__reference_status=$?; printf '%s%s\\n' '{mark}' \"$__reference_status\"; \
             (exit $__reference_status)\n"
        );
        // A shell that exited does not read: the write may fail, the end of its output says so.
        let _ = self.stdin.write_all(typed.as_bytes());
        let _ = self.stdin.flush();
        let started = Instant::now();
        loop {
            if let Some(at) = find(&self.pending, mark.as_bytes()) {
                let rest = self.pending.split_off(at);
                let output =
                    String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
                let after = &rest[mark.len()..];
                let end = after
                    .iter()
                    .position(|&b| b == b'\n')
                    .expect("the mark's line");
                let status = String::from_utf8_lossy(&after[..end])
                    .parse()
                    .expect("the mark carries $?");
                self.pending = after[end + 1..].to_vec();
                return Reference {
                    output,
                    status,
                    exited: false,
                };
            }
            let left = REFERENCE_LIMIT.saturating_sub(started.elapsed());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.pending.extend_from_slice(&bytes),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().expect("wait for the reference");
                    return Reference {
                        output: String::from_utf8_lossy(&std::mem::take(&mut self.pending))
                            .into_owned(),
                        status: status.code().unwrap_or(-1),
                        exited: true,
                    };
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "the reference bash did not finish `{command}` in {REFERENCE_LIMIT:?}; so \
                     far: {}",
                    String::from_utf8_lossy(&self.pending)
                ),
            }
        }
    }
}

impl Drop for ReferenceShell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `text` with `root` (in both its spellings) named `<project>` and job notices' PIDs as
/// `<pid>`.
fn normalised(text: &str, root: &Path) -> String {
    let mut text = text.to_string();
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    for spelling in [canonical.as_path(), root] {
        text = text.replace(&spelling.display().to_string(), "<project>");
    }
    text.split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches('\n');
            match job_notice(body) {
                Some(job) => format!("[{job}] <pid>{}", &line[body.len()..]),
                None => line.to_string(),
            }
        })
        .collect()
}

/// The job number of a line `[N] PID`.
fn job_notice(line: &str) -> Option<&str> {
    let (job, pid) = line.strip_prefix('[')?.split_once("] ")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(job) && digits(pid)).then_some(job)
}

/// Runs `commands` as `shell` calls of one batch in a project of `files`, and in one
/// reference bash in a copy of it, and asserts each call answered as the reference did. A
/// command that ends the reference shell is compared by its status only, and ends the
/// comparison. Returns paddock's scene and answers.
fn same_as_bash(files: &[(&str, &str)], commands: &[&str]) -> (Scene, Vec<Answer>) {
    let scene = Scene::new(files);
    let answers = scene.shell(commands);
    let copy = tempfile::tempdir().expect("reference dir");
    for (name, text) in files {
        std::fs::write(copy.path().join(name), text).expect("write reference file");
    }
    let mut reference = ReferenceShell::start(copy.path());
    for (i, (command, answer)) in commands.iter().zip(&answers).enumerate() {
        let expected = reference.send(command, &i.to_string());
        assert!(answer.ok, "call {i} `{command}` failed: {}", answer.error);
        assert_eq!(
            answer.status(),
            Some(expected.status),
            "call {i} `{command}`: paddock answered {:?}, bash's status was {} (output {:?})",
            answer.content,
            expected.status,
            expected.output
        );
        if expected.exited {
            break;
        }
        assert_eq!(
            normalised(answer.output(), &scene.root()),
            normalised(&expected.output, copy.path()),
            "call {i} `{command}`: paddock's output (left) is not bash's (right); paddock \
             answered {:?}",
            answer.content
        );
        assert_eq!(
            answer.notes(),
            "",
            "call {i} `{command}`: paddock added notes"
        );
    }
    (scene, answers)
}

#[test]
fn pipes_and_redirections_answer_as_bash_does() {
    let _ = same_as_bash(
        &[("words.txt", "pear\napple\nfig\n")],
        &[
            "printf 'b\\na\\n' | sort > out && cat out",
            "ls no-such-file 2>&1 | tr a-z A-Z",
            "ls no-such-file",
            "echo to-stderr >&2; echo to-stdout",
            "echo one > log; echo two >> log; cat log; wc -l < log",
            "ls no-such-file 2> err.txt; echo \"status $?\"; wc -l < err.txt",
            "sort < words.txt | head -n 2 | tr '\\n' ,",
            "cat words.txt | grep -c p",
            "{ echo grouped; echo also; } > grouped.txt; cat grouped.txt",
        ],
    );
}

#[test]
fn chains_carry_the_status_of_what_ran_last() {
    let _ = same_as_bash(
        &[],
        &[
            "false && echo not-printed",
            "false || echo recovered",
            "true; false",
            "false; true",
            "ls no-such-file && echo listed || echo failed",
            "(exit 7) || echo \"was $?\"",
            "false | true; echo ${PIPESTATUS[@]}",
            "set -o pipefail; false | true",
            "set +o pipefail; false | true",
            "no-such-command-anywhere",
        ],
    );
}

#[test]
fn heredocs_expand_unless_their_delimiter_is_quoted() {
    let _ = same_as_bash(
        &[],
        &[
            "NAME=world",
            "cat <<EOF\nhello $NAME\nsum $((2 + 3)) and $(echo substituted)\nEOF",
            "cat <<'EOF'\nhello $NAME\n$(echo not run)\nEOF",
            "cat <<\"EOF\"\nstill literal $NAME\nEOF",
            "cat <<-EOF\n\ttabs stripped $NAME\n\tEOF",
            "wc -l <<EOF\na\nb\nc\nEOF",
            "while read -r line; do echo \"<$line>\"; done <<EOF\nfirst\nsecond\nEOF",
            "cat <<< \"here string $NAME\"",
        ],
    );
}

#[test]
fn substitution_and_arithmetic_answer_as_bash_does() {
    let _ = same_as_bash(
        &[("a.txt", "1\n"), ("b.txt", "2\n")],
        &[
            "echo \"files: $(ls *.txt | wc -l)\"",
            "echo $((6 * 7)) $(( (1 << 10) % 1000 )) $((7 / 2))",
            "x=$(printf '%s' abc | tr a-c x-z); echo ${#x} $x ${x/y/Y}",
            "i=3; ((i++)); echo $i; (( i > 10 ))",
            "echo ${undefined:-default} ${i:+set}",
            "echo `echo backticks`",
            "echo $(( $(cat a.txt) + $(cat b.txt) ))",
            "arr=(one two three); echo ${#arr[@]} ${arr[1]}",
        ],
    );
}

#[test]
fn loops_case_and_subshells_answer_as_bash_does() {
    let _ = same_as_bash(
        &[("a.txt", "x\n"), ("b.txt", "y\ny\n")],
        &[
            "for i in 1 2 3; do printf '%s,' $i; done; echo",
            "n=0; while [ $n -lt 5 ]; do n=$((n+1)); done; echo $n",
            "until false; do echo once; break; done",
            "for f in *.txt; do echo \"$f: $(wc -l < \"$f\")\"; done",
            "case notes.rs in *.rs) echo rust;; *.py) echo python;; *) echo other;; esac",
            "( cd /tmp; pwd )",
            "pwd",
            "(X=inner; echo $X); echo \"[$X]\"",
            "for i in 1 2 3; do [ $i = 2 ] && continue; echo $i; done",
        ],
    );
}

#[test]
fn functions_and_aliases_defined_in_one_call_work_in_the_next() {
    let _ = same_as_bash(
        &[("a.txt", "x\n")],
        &[
            "greet() { echo \"hi $1\"; }",
            "greet you",
            "alias listing='ls -1 *.txt'",
            "listing",
            "type greet",
            "fails() { return 4; }",
            "fails",
            "fails; echo \"after $?\"",
            "unalias listing; listing",
        ],
    );
}

#[test]
fn cd_and_export_last_into_later_calls() {
    let _ = same_as_bash(
        &[],
        &[
            "mkdir -p sub/deep && cd sub",
            "pwd",
            "export GREETING=hello; LOCAL=only-here",
            "echo $GREETING $LOCAL; bash -c 'echo \"child: $GREETING [$LOCAL]\"'",
            "cd deep && pwd",
            "cd ../..; pwd",
            "cd no-such-dir",
            "pwd; echo $GREETING",
        ],
    );
}

#[test]
fn the_status_of_the_previous_call_is_the_next_calls_dollar_question() {
    let _ = same_as_bash(
        &[],
        &[
            "false",
            "echo $?",
            "(exit 42)",
            "echo \"last: $?\"",
            "true",
            "echo $?",
            "ls no-such-file",
            "echo $?",
        ],
    );
}

#[test]
fn a_background_job_started_in_one_call_is_waited_for_in_a_later_one() {
    let _ = same_as_bash(
        &[],
        &[
            "(sleep 1; echo done > bg.txt) &",
            "wait; cat bg.txt",
            "jobs",
        ],
    );
}

#[test]
fn exit_ends_the_shell_and_the_next_call_starts_a_fresh_one() {
    let (scene, answers) = same_as_bash(
        &[],
        &[
            "mkdir -p sub && cd sub; KEPT=1; f() { :; }",
            "exit 3",
            "echo \"kept=[$KEPT]\"; pwd; type f",
        ],
    );
    assert!(
        answers[1].notes().contains("the shell exited"),
        "the answer says the shell exited: {:?}",
        answers[1].content
    );
    let fresh = &answers[2];
    assert_eq!(fresh.status(), Some(1), "{:?}", fresh.content);
    assert!(
        fresh.output().starts_with("kept=[]\n"),
        "a fresh shell has no variables: {:?}",
        fresh.content
    );
    assert!(
        fresh.output().contains("f: not found"),
        "a fresh shell has no functions: {:?}",
        fresh.content
    );
    assert_eq!(
        fresh.output().lines().nth(1),
        Some(scene.root().display().to_string().as_str()),
        "a fresh shell starts in the first mount: {:?}",
        fresh.content
    );
}
