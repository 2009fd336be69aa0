# paddock's persistent shell: the definitions it reads before the first command. The shell is
# an interactive bash reading from paddock's pipe (no terminal): aliases expand, Ctrl-C
# (SIGINT) abandons the running command line and keeps the shell, as in a terminal.
# fd 8: the output pipe (a command's end is marked there, after all it printed);
# fd 9: paddock's status pipe. Commands run with both closed and with /dev/null as input.
PS1= PS2= PS0= PS4='+ ' PROMPT_COMMAND=
unset MAIL MAILPATH HISTFILE
set +H +o history
exec 8>&1 9>&2 2>&1
__paddock_last=0
__paddock_dir=
__paddock_state=${TMPDIR:-/tmp}/.paddock-shell-state
# Enters the call's own directory, if it has one (kept for __paddock_post).
__paddock_pre() {
    __paddock_dir=
    if [[ -n $1 ]]; then
        __paddock_dir=$PWD
        builtin cd -- "$1" || { __paddock_dir=; return 1; }
    fi
    return 0
}
# Gives the command the status the previous one left in `$?`.
__paddock_ret() { return "$__paddock_last"; }
# After the command: back to the shell's directory, a copy of the state for the shell's
# copies (tty and background commands), the end mark on the output, and the status with the
# names that now run a function or an alias.
__paddock_post() {
    local s=$3
    if [[ -n ${__paddock_dir-} ]]; then builtin cd -- "$__paddock_dir" 2>/dev/null; fi
    __paddock_dir=
    __paddock_last=$s
    {
        builtin export -p
        builtin declare -f
        builtin alias -p
        builtin shopt -p
        builtin printf 'builtin cd -- %q\n' "$PWD"
    } >"$__paddock_state" 2>/dev/null
    builtin printf '%s' "$2" >&8
    {
        builtin compgen -A function -P 'f '
        builtin compgen -a -P 'a '
        builtin printf 'done %s %s\n' "$1" "$s"
    } >&9
}
builtin printf 'ready\n' >&9
