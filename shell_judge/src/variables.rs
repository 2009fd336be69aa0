//! Environment and shell variables whose value makes a program run other code: setting one is
//! as good as running a command the rules never see, so an assignment to one is unresolved.
//!
//! The list is of names known to name a program, a file of code, or options that load code;
//! it is not every variable a program reads. Each entry says where it comes from.

/// Why assigning `name` can run other code, or `None` when it cannot (as far as known).
pub(crate) fn runs_code(name: &str) -> Option<&'static str> {
    if let Some((_, why)) = EXACT.iter().find(|(n, _)| *n == name) {
        return Some(why);
    }
    if let Some((_, why)) = PREFIXES.iter().find(|(p, _)| name.starts_with(p)) {
        return Some(why);
    }
    if let Some((_, why)) = SUFFIXES.iter().find(|(s, _)| name.ends_with(s)) {
        return Some(why);
    }
    None
}

const EXACT: &[(&str, &str)] = &[
    // bash(1), "Shell Variables" and "INVOCATION".
    ("PATH", "PATH chooses which program a name runs"),
    (
        "BASH_ENV",
        "bash runs the file BASH_ENV names when a script starts",
    ),
    ("ENV", "sh and bash in POSIX mode run the file ENV names"),
    (
        "PROMPT_COMMAND",
        "bash runs PROMPT_COMMAND before each prompt",
    ),
    (
        "PS0",
        "bash expands PS0 (command substitutions run) before each command",
    ),
    (
        "PS4",
        "bash expands PS4 (command substitutions run) under set -x",
    ),
    (
        "SHELLOPTS",
        "SHELLOPTS sets shell options (e.g. xtrace with PS4) in every child bash",
    ),
    (
        "BASHOPTS",
        "BASHOPTS sets shopt options (e.g. expand_aliases) in every child bash",
    ),
    (
        "IFS",
        "IFS changes how every later unquoted expansion splits into words",
    ),
    (
        "CDPATH",
        "CDPATH changes where cd goes, and so which ./program runs",
    ),
    ("GLOBIGNORE", "GLOBIGNORE changes what globs expand to"),
    (
        "BASH_LOADABLES_PATH",
        "bash loads builtins from BASH_LOADABLES_PATH",
    ),
    (
        "HOME",
        "HOME chooses the configuration (.gitconfig, .cargo, ...) programs load",
    ),
    (
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_HOME chooses the configuration programs load",
    ),
    // Programs that other programs start: git(1) "core.editor", less(1), man(1), xdg-open.
    ("EDITOR", "programs (git commit, crontab -e) run EDITOR"),
    ("VISUAL", "programs (git commit, crontab -e) run VISUAL"),
    (
        "BROWSER",
        "programs (xdg-open, git web--browse, python webbrowser) run BROWSER",
    ),
    ("SHELL", "programs (make, script, vim, su) run SHELL"),
    ("LESSOPEN", "less runs the LESSOPEN input preprocessor"),
    ("LESSCLOSE", "less runs the LESSCLOSE input postprocessor"),
    ("LESSEDIT", "less runs LESSEDIT on v"),
    ("SSH_ASKPASS", "ssh and git run SSH_ASKPASS for passwords"),
    ("SUDO_ASKPASS", "sudo -A runs SUDO_ASKPASS"),
    (
        "MAKEFLAGS",
        "make takes options (e.g. SHELL=, --eval) from MAKEFLAGS",
    ),
    ("MFLAGS", "make takes options from MFLAGS"),
    ("GNUMAKEFLAGS", "make takes options from GNUMAKEFLAGS"),
    // Language runtimes: node(1) NODE_OPTIONS (--require), python(1) "ENVIRONMENT",
    // perlrun(1) "ENVIRONMENT", ruby(1) "ENVIRONMENT".
    (
        "NODE_OPTIONS",
        "node loads modules named in NODE_OPTIONS (--require)",
    ),
    ("NODE_PATH", "node resolves modules from NODE_PATH"),
    ("PYTHONSTARTUP", "python runs the PYTHONSTARTUP file"),
    ("PYTHONPATH", "python imports modules from PYTHONPATH first"),
    (
        "PYTHONHOME",
        "python loads its standard library from PYTHONHOME",
    ),
    (
        "PYTHONBREAKPOINT",
        "python calls PYTHONBREAKPOINT on breakpoint()",
    ),
    ("PERL5OPT", "perl takes options (-M module) from PERL5OPT"),
    ("PERL5LIB", "perl loads modules from PERL5LIB first"),
    ("PERLLIB", "perl loads modules from PERLLIB first"),
    ("RUBYOPT", "ruby takes options (-r library) from RUBYOPT"),
    ("RUBYLIB", "ruby loads libraries from RUBYLIB first"),
    (
        "JAVA_TOOL_OPTIONS",
        "the JVM takes options (-javaagent) from JAVA_TOOL_OPTIONS",
    ),
    (
        "_JAVA_OPTIONS",
        "the JVM takes options (-javaagent) from _JAVA_OPTIONS",
    ),
    // Toolchains: rustc/cargo environment, cc(1) wrappers, ld.so(8).
    ("RUSTC_WRAPPER", "cargo runs RUSTC_WRAPPER around rustc"),
    ("CC", "build scripts and make run the compiler CC names"),
    ("CXX", "build scripts and make run the compiler CXX names"),
    (
        "GCONV_PATH",
        "glibc loads conversion modules from GCONV_PATH",
    ),
];

const PREFIXES: &[(&str, &str)] = &[
    // ld.so(8): LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT load code into every program.
    (
        "LD_",
        "the dynamic loader loads code named in LD_* variables",
    ),
    // git(1) "ENVIRONMENT VARIABLES": GIT_SSH, GIT_PAGER, GIT_EDITOR, GIT_EXEC_PATH,
    // GIT_CONFIG_* (any configuration, so core.fsmonitor, aliases, hooks).
    (
        "GIT_",
        "git runs programs named in GIT_* variables (GIT_PAGER, GIT_SSH, GIT_CONFIG_*)",
    ),
    // cargo "Environment variables": CARGO_TARGET_<triple>_RUNNER, CARGO_BUILD_RUSTC_WRAPPER,
    // CARGO_HOME (its config.toml), any config key as CARGO_*.
    (
        "CARGO_",
        "cargo takes any configuration, runners and wrappers from CARGO_* variables",
    ),
    // cargo and rustc: RUSTC, RUSTC_WRAPPER, RUSTC_WORKSPACE_WRAPPER, RUSTDOC, RUSTFLAGS.
    ("RUSTC", "cargo runs the compiler RUSTC* names"),
    ("RUSTDOC", "cargo runs the program RUSTDOC* names"),
    (
        "RUSTUP_",
        "rustup chooses the toolchain that runs from RUSTUP_* variables",
    ),
    // npm "config": any npm configuration, e.g. script-shell, node-options.
    (
        "npm_config_",
        "npm takes any configuration (script-shell, node-options) from npm_config_*",
    ),
    (
        "NPM_CONFIG_",
        "npm takes any configuration (script-shell, node-options) from NPM_CONFIG_*",
    ),
    (
        "DYLD_",
        "the macOS loader loads code named in DYLD_* variables",
    ),
];

const SUFFIXES: &[(&str, &str)] = &[
    // PAGER, GIT_PAGER, MANPAGER, SYSTEMD_PAGER, BAT_PAGER, ...: the pager is run.
    ("PAGER", "programs run the pager *PAGER names"),
    // FZF_DEFAULT_COMMAND, PROMPT_COMMAND, ...: a command a program runs.
    (
        "_COMMAND",
        "programs run the command a *_COMMAND variable holds",
    ),
    // EDITOR spellings: GIT_EDITOR, SVN_EDITOR, SUDO_EDITOR.
    ("_EDITOR", "programs run the editor *_EDITOR names"),
];

#[cfg(test)]
mod tests {
    use super::runs_code;

    #[test]
    fn listed_names_run_code_and_plain_ones_do_not() {
        for name in [
            "PATH",
            "LD_PRELOAD",
            "GIT_PAGER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "RUSTC_WRAPPER",
            "MANPAGER",
            "FZF_DEFAULT_COMMAND",
            "npm_config_script_shell",
            "BASH_ENV",
        ] {
            assert!(runs_code(name).is_some(), "{name}");
        }
        for name in ["FOO", "RUST_LOG", "LANG", "TERM", "CI"] {
            assert!(runs_code(name).is_none(), "{name}");
        }
    }
}
