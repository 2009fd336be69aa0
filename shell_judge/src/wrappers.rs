//! Programs whose arguments are another command (`sudo rm x`, `xargs rm`, `find -exec rm {} ;`)
//! or code (`bash -c 'rm x'`, `trap 'rm x' EXIT`): what they run, found by skipping their own
//! options as their option parser does. Option tables come from each program's manual
//! (sudo(8), env(1), timeout(1), xargs(1), find(1), flock(1), watch(1), bash(1), su(1),
//! script(1), parallel(1)); an option read wrong errs toward finding a command where there is
//! none, which only asks more.

/// One word of a command line, expanded as far as is known statically.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub text: String,
    /// Known only at run time (an expansion or a substitution).
    pub dynamic: bool,
    /// An unquoted glob or brace expansion: may become other words.
    pub glob: bool,
}

impl Arg {
    pub(crate) fn fixed(text: &str) -> Arg {
        Arg {
            text: text.to_owned(),
            dynamic: false,
            glob: false,
        }
    }

    fn is_static(&self) -> bool {
        !self.dynamic && !self.glob
    }
}

/// What a wrapper runs.
#[derive(Debug, Default)]
pub(crate) struct Wrapped {
    /// How the inner commands were reached, e.g. "sudo", "bash -c", "find -exec".
    pub via: String,
    pub runs: Vec<Inner>,
    /// What it runs that cannot be named.
    pub unresolved: Vec<String>,
    /// The wrapper does work of its own (find deletes and prints), so it is a command too.
    pub is_command_too: bool,
    /// Environment variables it sets for the inner command (`env NAME=value`, `sudo NAME=value`).
    pub assigns: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum Inner {
    /// A command line; `more_args` when the wrapper appends arguments at run time.
    Argv { args: Vec<Arg>, more_args: bool },
    /// Shell source the wrapper hands to a shell.
    Code(String),
}

/// What `program` (a basename) with `args` (after the program) runs, or `None` when it is no
/// wrapper.
pub(crate) fn unwrap(program: &str, args: &[Arg]) -> Option<Wrapped> {
    if !WRAPPERS.contains(&program) {
        return None;
    }
    let mut w = Wrapped {
        via: program.to_owned(),
        ..Wrapped::default()
    };
    // `None` from a step means the rest cannot be told (its reason is in `w.unresolved`).
    let _ = fill(program, args, &mut w);
    Some(w)
}

const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "timeout", "nice", "nohup", "builtin", "setsid", "stdbuf", "ionice",
    "taskset", "chrt", "command", "exec", "time", "xargs", "find", "flock", "watch", "sh", "bash",
    "dash", "zsh", "ksh", "mksh", "ash", "rbash", "fish", "yash", "busybox", "su", "runuser",
    "script", "parallel", "trap",
];

/// Reads `args` as `program` does. A table, one arm a wrapper: those whose reading takes more
/// than skipping options have a function of their own below.
fn fill(program: &str, args: &[Arg], w: &mut Wrapped) -> Option<()> {
    match program {
        "sudo" => sudo(args, w)?,
        "doas" => options_then_command(args, "uCa", &[], w)?,
        "env" => env(args, w)?,
        "timeout" => {
            // The duration comes before the command.
            let at = skip_options(args, "sk", &["signal", "kill-after"], w)?;
            argv_from(args, at + 1, w);
        }
        "nice" => options_then_command(args, "n", &["adjustment"], w)?,
        "nohup" | "builtin" | "setsid" => options_then_command(args, "", &[], w)?,
        "stdbuf" => options_then_command(args, "ioe", &["input", "output", "error"], w)?,
        "ionice" => ionice(args, w)?,
        "taskset" => taskset(args, w)?,
        "chrt" => chrt(args, w)?,
        "command" => command(args, w)?,
        "exec" => options_then_command(args, "a", &[], w)?,
        "time" => options_then_command(args, "fo", &["format", "output"], w)?,
        "xargs" => xargs(args, w)?,
        "find" => find(args, w),
        "flock" => flock(args, w)?,
        "watch" => watch(args, w)?,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "rbash" | "fish" | "yash" => {
            w.via = format!("{program} -c");
            shell(program, args, w)?;
        }
        // `busybox sh -c ...`, `busybox rm x`: the applet is the command.
        "busybox" => argv_from(args, 0, w),
        "su" | "runuser" => {
            w.via = format!("{program} -c");
            su(program, args, w);
        }
        "script" => script(args, w),
        "parallel" => parallel(args, w),
        "trap" => trap(args, w),
        _ => {}
    }
    Some(())
}

/// A wrapper whose options (`short` and `long` ones taking a value) come first, then the
/// command.
fn options_then_command(args: &[Arg], short: &str, long: &[&str], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(args, short, long, w)?;
    argv_from(args, at, w);
    Some(())
}

fn sudo(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(args, "ugpCDrtUTRh", SUDO_LONG, w)?;
    let at = skip_assignments(args, at, w);
    let shell = flag_given(&args[..at], 's') || flag_given(&args[..at], 'i');
    if at == args.len() && shell {
        w.unresolved
            .push("sudo -s/-i without a command starts a shell reading stdin".to_owned());
    }
    argv_from(args, at, w);
    Some(())
}

/// `ionice -p/-P/-u` changes running processes and runs nothing.
fn ionice(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(
        args,
        "cnpPu",
        &["class", "classdata", "pid", "pgid", "uid"],
        w,
    )?;
    if !['p', 'P', 'u'].iter().any(|f| flag_given(&args[..at], *f)) {
        argv_from(args, at, w);
    }
    Some(())
}

/// `taskset MASK CMD`; `taskset -p` changes a running process and runs nothing.
fn taskset(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(args, "", &[], w)?;
    if !flag_given(&args[..at], 'p') {
        argv_from(args, at + 1, w);
    }
    Some(())
}

/// `chrt [PRIORITY] CMD`; `chrt -p` changes a running process and runs nothing.
fn chrt(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(
        args,
        "TPD",
        &["sched-runtime", "sched-period", "sched-deadline"],
        w,
    )?;
    if !flag_given(&args[..at], 'p') {
        let numeric = args
            .get(at)
            .is_some_and(|a| !a.text.is_empty() && a.text.chars().all(|c| c.is_ascii_digit()));
        argv_from(args, at + usize::from(numeric), w);
    }
    Some(())
}

/// `command CMD`; `command -v/-V` only describes it.
fn command(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(args, "", &[], w)?;
    let describes = flag_given(&args[..at], 'v') || flag_given(&args[..at], 'V');
    if !describes {
        argv_from(args, at, w);
    }
    Some(())
}

/// `watch CMD...` hands its words to `sh -c`; `watch -x` runs them as a command line.
fn watch(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let at = skip_options(args, "nq", &["interval", "equexit"], w)?;
    let exec = flag_given(&args[..at], 'x') || args[..at].iter().any(|a| a.text == "--exec");
    if exec {
        argv_from(args, at, w);
    } else {
        code_from_words(&args[at..], w);
    }
    Some(())
}

/// `script -c CMD` (also `-qc CMD`, `-cCMD`, `--command CMD`); without it, an interactive
/// shell.
fn script(args: &[Arg], w: &mut Wrapped) {
    w.via = "script -c".to_owned();
    let mut code = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i].text;
        if a == "--command" {
            code = Some(args.get(i + 1));
            i += 1;
        } else if let Some(c) = a.strip_prefix("--command=") {
            code = Some(None);
            w.runs.push(Inner::Code(c.to_owned()));
        } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            // `-qc CMD`, `-cCMD`; -T, -I, -O, -B, -m, -E take a value.
            for (at, letter) in cluster.char_indices() {
                let rest = &cluster[at + 1..];
                if letter == 'c' {
                    if rest.is_empty() {
                        code = Some(args.get(i + 1));
                        i += 1;
                    } else {
                        code = Some(None);
                        w.runs.push(Inner::Code(rest.to_owned()));
                    }
                    break;
                }
                if "TIOBmE".contains(letter) {
                    i += usize::from(rest.is_empty());
                    break;
                }
            }
        }
        i += 1;
    }
    match code {
        Some(Some(arg)) => code_from(arg, w),
        Some(None) => {}
        None => w
            .unresolved
            .push("script without -c runs an interactive shell reading stdin".to_owned()),
    }
}

/// `trap CODE SIGNAL...` runs CODE later; `trap -p/-l/-P` and `trap - SIGNAL` run nothing.
fn trap(args: &[Arg], w: &mut Wrapped) {
    w.via = "trap".to_owned();
    let at = usize::from(args.first().is_some_and(|a| a.text == "--"));
    let rest = &args[at.min(args.len())..];
    if rest
        .first()
        .is_some_and(|a| a.text == "-p" || a.text == "-l" || a.text == "-P")
    {
        return;
    }
    if rest.len() >= 2 && rest[0].text != "-" {
        code_from(&rest[0], w);
    }
}

const SUDO_LONG: &[&str] = &[
    "user",
    "group",
    "host",
    "prompt",
    "close-from",
    "chdir",
    "role",
    "type",
    "other-user",
    "command-timeout",
    "chroot",
];

/// The index of the first word after the options. `short` lists the short options that take a
/// value, `long` the long ones. A dynamic word among the options might be anything, so what
/// follows is unresolved (`None`).
fn skip_options(args: &[Arg], short: &str, long: &[&str], w: &mut Wrapped) -> Option<usize> {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg.dynamic {
            w.unresolved.push(format!(
                "the options of {} come from an expansion ({})",
                w.via, arg.text
            ));
            return None;
        }
        let a = arg.text.as_str();
        if a == "--" {
            return Some(i + 1);
        }
        if let Some(name) = a.strip_prefix("--") {
            if !name.contains('=') && long.contains(&name) {
                i += 1;
            }
        } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (at, c) in cluster.char_indices() {
                if short.contains(c) {
                    if at + c.len_utf8() == cluster.len() {
                        i += 1;
                    }
                    break;
                }
            }
        } else {
            return Some(i);
        }
        i += 1;
    }
    Some(args.len())
}

/// Whether a short option letter was given among `options` (also inside a cluster).
fn flag_given(options: &[Arg], letter: char) -> bool {
    options.iter().any(|a| {
        let t = a.text.as_str();
        !t.starts_with("--") && t.starts_with('-') && t[1..].contains(letter)
    })
}

/// Skips `NAME=value` words (env, sudo), remembering the names.
fn skip_assignments(args: &[Arg], mut at: usize, w: &mut Wrapped) -> usize {
    while let Some(arg) = args.get(at) {
        match arg.text.split_once('=') {
            Some((name, _)) if is_name(name) => {
                w.assigns.push(name.to_owned());
                at += 1;
            }
            _ => break,
        }
    }
    at
}

pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn argv_from(args: &[Arg], at: usize, w: &mut Wrapped) {
    if let Some(rest) = args.get(at..).filter(|r| !r.is_empty()) {
        w.runs.push(Inner::Argv {
            args: rest.to_vec(),
            more_args: false,
        });
    }
}

fn code_from(arg: &Arg, w: &mut Wrapped) {
    if arg.is_static() {
        w.runs.push(Inner::Code(arg.text.clone()));
    } else {
        w.unresolved.push(format!(
            "the code {} runs comes from an expansion ({})",
            w.via, arg.text
        ));
    }
}

/// `watch` and `parallel` join their words with spaces and hand them to `sh -c`.
fn code_from_words(words: &[Arg], w: &mut Wrapped) {
    if words.is_empty() {
        return;
    }
    if let Some(dynamic) = words.iter().find(|a| !a.is_static()) {
        w.unresolved.push(format!(
            "the code {} runs comes from an expansion ({})",
            w.via, dynamic.text
        ));
        return;
    }
    let code: Vec<&str> = words.iter().map(|a| a.text.as_str()).collect();
    w.runs.push(Inner::Code(code.join(" ")));
}

fn env(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg.dynamic {
            w.unresolved.push(format!(
                "the options of env come from an expansion ({})",
                arg.text
            ));
            return None;
        }
        let a = arg.text.as_str();
        // `-S STRING`: env splits STRING into words, put before the rest.
        let split = if a == "-S" || a == "--split-string" {
            i += 1;
            Some(args.get(i).cloned())
        } else {
            a.strip_prefix("--split-string=")
                .or_else(|| a.strip_prefix("-S").filter(|s| !s.is_empty()))
                .map(|s| Some(Arg::fixed(s)))
        };
        if let Some(value) = split {
            match value {
                Some(v) if v.is_static() => {
                    let rest = args.get(i + 1..).unwrap_or_default();
                    w.runs
                        .push(Inner::Code(format!("{} {}", v.text, quoted(rest))));
                }
                Some(v) => w.unresolved.push(format!(
                    "env -S splits a string from an expansion ({})",
                    v.text
                )),
                None => {}
            }
            return Some(());
        }
        if a == "--" {
            i += 1;
            break;
        }
        if matches!(a, "-u" | "--unset" | "-C" | "--chdir") {
            i += 2;
            continue;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += 1;
            continue;
        }
        break;
    }
    let at = skip_assignments(args, i, w);
    argv_from(args, at, w);
    Some(())
}

/// Words quoted back into shell source, for `env -S STRING rest...`.
fn quoted(args: &[Arg]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.text.replace('\'', r"'\''")))
        .collect();
    words.join(" ")
}

fn xargs(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let mut replace: Option<String> = None;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg.dynamic {
            w.unresolved.push(format!(
                "the options of xargs come from an expansion ({})",
                arg.text
            ));
            return None;
        }
        let a = arg.text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            if name == "replace" {
                replace = Some(value.unwrap_or("{}").to_owned());
            } else if value.is_none()
                && [
                    "arg-file",
                    "delimiter",
                    "max-args",
                    "max-procs",
                    "max-lines",
                    "max-chars",
                    "process-slot-var",
                ]
                .contains(&name)
            {
                i += 1;
            }
        } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                match c {
                    'I' => {
                        if rest.is_empty() {
                            i += 1;
                            replace =
                                Some(args.get(i).map_or("{}", |a| a.text.as_str()).to_owned());
                        } else {
                            replace = Some(rest.to_owned());
                        }
                        break;
                    }
                    'i' => {
                        replace = Some(if rest.is_empty() { "{}" } else { rest }.to_owned());
                        break;
                    }
                    'n' | 'P' | 'L' | 's' | 'd' | 'E' | 'a' => {
                        if rest.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    'l' | 'e' => break,
                    _ => {}
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    let mut inner: Vec<Arg> = args.get(i..).map(<[Arg]>::to_vec).unwrap_or_default();
    if inner.is_empty() {
        inner.push(Arg::fixed("echo"));
    }
    let more_args = match &replace {
        Some(r) => {
            for arg in &mut inner {
                if arg.text.contains(r.as_str()) {
                    arg.dynamic = true;
                }
            }
            false
        }
        None => true,
    };
    w.runs.push(Inner::Argv {
        args: inner,
        more_args,
    });
    Some(())
}

/// `find ... -exec CMD ... ;` (or `+`), possibly several, each a command; `{}` is a file name.
fn find(args: &[Arg], w: &mut Wrapped) {
    w.is_command_too = true;
    w.via = "find -exec".to_owned();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if matches!(a, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                end += 1;
            }
            let more_args = args.get(end).is_some_and(|a| a.text == "+");
            let mut inner = args[start.min(args.len())..end].to_vec();
            for arg in &mut inner {
                if arg.text.contains("{}") {
                    arg.dynamic = true;
                }
            }
            if !inner.is_empty() {
                w.runs.push(Inner::Argv {
                    args: inner,
                    more_args,
                });
            }
            i = end;
        }
        i += 1;
    }
}

fn flock(args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let mut i = 0;
    let mut seen_file = false;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "-c" || a == "--command" {
            if let Some(code) = args.get(i + 1) {
                code_from(code, w);
            }
            return Some(());
        }
        if let Some(code) = a.strip_prefix("--command=") {
            w.runs.push(Inner::Code(code.to_owned()));
            return Some(());
        }
        if arg.dynamic && !seen_file {
            // The lock file may well be a variable; an option from one cannot be told apart.
            seen_file = true;
            i += 1;
            continue;
        }
        if a == "--" {
            i += 1;
            continue;
        }
        if a.starts_with('-') && a.len() > 1 {
            if matches!(
                a,
                "-w" | "-E" | "--timeout" | "--wait" | "--conflict-exit-code"
            ) {
                i += 1;
            }
            i += 1;
            continue;
        }
        if !seen_file {
            seen_file = true;
            i += 1;
            continue;
        }
        argv_from(args, i, w);
        return Some(());
    }
    Some(())
}

fn shell(program: &str, args: &[Arg], w: &mut Wrapped) -> Option<()> {
    let mut i = 0;
    let mut has_c = false;
    let mut informational = false;
    while let Some(arg) = args.get(i) {
        if arg.dynamic {
            w.unresolved.push(format!(
                "the options of {program} come from an expansion ({})",
                arg.text
            ));
            return None;
        }
        let a = arg.text.as_str();
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                i += 1;
            }
            if matches!(long, "version" | "help") {
                informational = true;
            }
            if long == "command" {
                has_c = true;
            }
        } else if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
            i += 1;
        } else if let Some(cluster) = a.strip_prefix('-').or_else(|| a.strip_prefix('+')) {
            if a.starts_with('-') && cluster.contains('c') {
                has_c = true;
            }
        } else {
            break;
        }
        i += 1;
    }
    if has_c {
        match args.get(i) {
            Some(code) => code_from(code, w),
            None => w
                .unresolved
                .push(format!("{program} -c is missing its command string")),
        }
    } else if informational {
    } else if let Some(script) = args.get(i) {
        w.unresolved
            .push(format!("{program} runs the script file {}", script.text));
    } else {
        w.unresolved
            .push(format!("{program} reads the commands it runs from stdin"));
    }
    Some(())
}

fn su(program: &str, args: &[Arg], w: &mut Wrapped) {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if matches!(a, "-c" | "--command" | "--session-command") {
            match args.get(i + 1) {
                Some(code) => code_from(code, w),
                None => w
                    .unresolved
                    .push(format!("{program} -c is missing its command")),
            }
            return;
        }
        if let Some(code) = a
            .strip_prefix("--command=")
            .or_else(|| a.strip_prefix("--session-command="))
        {
            w.runs.push(Inner::Code(code.to_owned()));
            return;
        }
        if matches!(
            a,
            "-s" | "--shell" | "-g" | "--group" | "-G" | "--supp-group" | "-w" | "-u" | "--user"
        ) {
            i += 1;
        }
        i += 1;
    }
    w.unresolved.push(format!(
        "{program} without -c starts a shell reading its commands from stdin"
    ));
}

/// GNU parallel: `parallel [options] command ::: arguments`; the command is joined and run
/// by a shell with the arguments appended.
fn parallel(args: &[Arg], w: &mut Wrapped) {
    const WITH_VALUE: &[&str] = &[
        "-j",
        "--jobs",
        "-S",
        "--sshlogin",
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-I",
        "-n",
        "-N",
        "-L",
        "--joblog",
        "--results",
        "--tmpdir",
        "--timeout",
        "--delay",
        "--colsep",
        "-C",
        "--workdir",
        "--wd",
        "--env",
        "--retries",
        "--memfree",
        "--load",
        "--halt",
    ];
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a.starts_with(":::") {
            break;
        }
        if WITH_VALUE.contains(&a) {
            i += 1;
        }
        i += 1;
    }
    let end = args[i.min(args.len())..]
        .iter()
        .position(|a| a.text.starts_with(":::"))
        .map_or(args.len(), |p| i + p);
    let words = &args[i.min(end)..end];
    if words.is_empty() {
        w.unresolved
            .push("parallel runs the commands it reads from its input".to_owned());
    } else {
        code_from_words(words, w);
    }
}
