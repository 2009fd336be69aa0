//! The walk over brush-parser's syntax tree: every construct that holds commands, every word
//! that holds code, every redirection that writes. Code found inside words or handed to
//! wrappers (`bash -c STRING`) is parsed and walked the same way, to a fixed depth.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::{
    self, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, ExtendedTestExpr,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
};
use brush_parser::{Parser, ParserOptions};

use crate::variables::runs_code;
use crate::words::{self, Found};
use crate::wrappers::{self, Arg, Inner, is_name};
use crate::{Analysis, Command, Session, Unresolved, Write};

/// How deep code may nest in code (`bash -c "bash -c '...'"`, `$( $( ) )`) before the rest is
/// unresolved rather than walked; bash itself has no limit, but a model's input must not make
/// the walk recurse without end.
const MAX_DEPTH: usize = 24;

pub(crate) struct Walker<'s> {
    session: &'s Session,
    /// Functions and aliases the string itself defines.
    functions: BTreeSet<String>,
    aliases: BTreeSet<String>,
    out: Analysis,
    depth: usize,
}

/// Where a command was reached from: the wrappers, and the text to show for it.
#[derive(Clone, Default)]
struct Context {
    via: Vec<String>,
}

impl<'s> Walker<'s> {
    pub(crate) fn run(source: &str, session: &'s Session) -> Analysis {
        let mut walker = Walker {
            session,
            functions: BTreeSet::new(),
            aliases: BTreeSet::new(),
            out: Analysis::default(),
            depth: 0,
        };
        walker.code(source, &Context::default());
        walker.calls();
        walker.out
    }

    /// Names that run a function or an alias are unresolved wherever they are called, also
    /// before the definition (a loop may define on one pass and call on the next).
    fn calls(&mut self) {
        let mut found = Vec::new();
        for command in &self.out.commands {
            let name = &command.argv[0];
            let what = if self.functions.contains(name) || self.session.functions.contains(name) {
                "a function"
            } else if self.aliases.contains(name) || self.session.aliases.contains(name) {
                "an alias"
            } else {
                continue;
            };
            found.push(Unresolved {
                why: format!("{name} is {what} of the shell, which runs other commands"),
                text: command.text.clone(),
            });
        }
        self.out.unresolved.extend(found);
    }

    fn unresolved(&mut self, why: impl Into<String>, text: impl Into<String>) {
        self.out.unresolved.push(Unresolved {
            why: why.into(),
            text: text.into(),
        });
    }

    /// Parses and walks shell source.
    fn code(&mut self, source: &str, cx: &Context) {
        if self.depth >= MAX_DEPTH {
            self.unresolved("code nests deeper than this analysis follows", source);
            return;
        }
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            Parser::new(source.as_bytes(), &ParserOptions::default()).parse_program()
        }));
        match parsed {
            Ok(Ok(program)) => {
                self.depth += 1;
                for list in &program.complete_commands {
                    self.list(list, cx);
                }
                self.depth -= 1;
            }
            Ok(Err(e)) => self.unresolved(format!("bash cannot parse this: {e}"), source),
            Err(_) => self.unresolved("bash cannot parse this (the parser failed)", source),
        }
    }

    fn list(&mut self, list: &CompoundList, cx: &Context) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, cx);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, cx),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, cx: &Context) {
        for command in &pipeline.seq {
            self.command(command, cx);
        }
    }

    fn command(&mut self, command: &ast::Command, cx: &Context) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, cx),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, cx);
                self.redirects(redirects.as_ref(), cx);
            }
            ast::Command::Function(def) => {
                self.functions.insert(def.fname.value.clone());
                self.compound(&def.body.0, cx);
                self.redirects(def.body.1.as_ref(), cx);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.extended_test(&test.expr, cx);
                self.redirects(redirects.as_ref(), cx);
            }
        }
    }

    fn redirects(&mut self, redirects: Option<&ast::RedirectList>, cx: &Context) {
        for redirect in redirects.iter().flat_map(|r| r.0.iter()) {
            self.redirect(redirect, cx);
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, cx: &Context) {
        match compound {
            CompoundCommand::Arithmetic(a) => {
                self.arithmetic(&a.expr.value, cx);
                // bash runs `((rm x) )` as nested subshells when the text is no arithmetic;
                // brush-parser takes it as arithmetic, so such text is walked as code too.
                let text = a.expr.value.as_str();
                let is_arithmetic = catch_unwind(|| brush_parser::arithmetic::parse(text))
                    .is_ok_and(|parsed| parsed.is_ok());
                if !is_arithmetic {
                    self.code(text, cx);
                }
            }
            CompoundCommand::ArithmeticForClause(f) => {
                for expr in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value, cx);
                }
                self.list(&f.body.list, cx);
            }
            CompoundCommand::BraceGroup(g) => self.list(&g.list, cx),
            CompoundCommand::Subshell(s) => self.list(&s.list, cx),
            CompoundCommand::ForClause(f) => {
                for word in f.values.iter().flatten() {
                    self.word(&word.value, cx);
                }
                self.list(&f.body.list, cx);
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value, cx);
                for item in &c.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value, cx);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list, cx);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition, cx);
                self.list(&i.then, cx);
                for clause in i.elses.iter().flatten() {
                    if let Some(condition) = &clause.condition {
                        self.list(condition, cx);
                    }
                    self.list(&clause.body, cx);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0, cx);
                self.list(&w.1.list, cx);
            }
            CompoundCommand::Coprocess(c) => self.command(&c.body, cx),
        }
    }

    fn extended_test(&mut self, expr: &ExtendedTestExpr, cx: &Context) {
        match expr {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, cx);
                self.extended_test(b, cx);
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, cx);
            }
            ExtendedTestExpr::UnaryTest(_, word) => {
                self.word(&word.value, cx);
            }
            ExtendedTestExpr::BinaryTest(_, left, right) => {
                for word in [left, right] {
                    self.word(&word.value, cx);
                    // `-eq` and friends evaluate their operands as arithmetic.
                    self.subscript_injection(&word.value);
                }
            }
        }
    }

    /// Expands a word: walks the code inside it, returns what is known of its value.
    fn word(&mut self, raw: &str, cx: &Context) -> Arg {
        let expanded = words::expand(raw);
        self.found(expanded.found, raw, cx);
        Arg {
            text: expanded.value,
            dynamic: expanded.dynamic,
            glob: expanded.glob,
        }
    }

    fn found(&mut self, found: Vec<Found>, text: &str, cx: &Context) {
        for item in found {
            match item {
                Found::Code(code) => self.code(&code, cx),
                Found::Arithmetic(expr) => self.arithmetic(&expr, cx),
                Found::Unresolved(why) => self.unresolved(why, text),
            }
        }
    }

    /// Arithmetic text expands `$(...)` like a heredoc body; a subscript holding an expansion
    /// (`a[$i]`) is expanded a second time when evaluated, so its value can run code.
    fn arithmetic(&mut self, expr: &str, cx: &Context) {
        if self.depth >= MAX_DEPTH {
            self.unresolved("code nests deeper than this analysis follows", expr);
            return;
        }
        self.depth += 1;
        let expanded = words::expand_heredoc(expr);
        self.found(expanded.found, expr, cx);
        self.depth -= 1;
        self.subscript_injection(expr);
    }

    fn subscript_injection(&mut self, text: &str) {
        if has_expanded_subscript(text) {
            self.unresolved(
                "an array subscript holding an expansion is expanded again in arithmetic, so a value like a[$(cmd)] runs cmd",
                text,
            );
        }
    }

    fn redirect(&mut self, redirect: &IoRedirect, cx: &Context) {
        let text = redirect.to_string();
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite
                );
                let append = matches!(kind, IoFileRedirectKind::Append);
                match target {
                    IoFileRedirectTarget::Filename(word) => {
                        let arg = self.word(&word.value, cx);
                        if writes {
                            self.write(&arg, append, text);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(word) => {
                        // `>&word` is a file when the word is neither a descriptor nor `-`.
                        let arg = self.word(&word.value, cx);
                        let descriptor = arg.text == "-"
                            || arg.text.trim_end_matches('-').parse::<u32>().is_ok();
                        if matches!(kind, IoFileRedirectKind::DuplicateOutput)
                            && (arg.dynamic || !descriptor)
                        {
                            self.write(&arg, false, text);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.list(&subshell.list, cx);
                    }
                }
            }
            IoRedirect::OutputAndError(word, append) => {
                let arg = self.word(&word.value, cx);
                self.write(&arg, *append, text);
            }
            IoRedirect::HereString(_, word) => {
                self.word(&word.value, cx);
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let expanded = words::expand_heredoc(&doc.doc.value);
                    self.found(expanded.found, &doc.doc.value, cx);
                }
            }
        }
    }

    fn write(&mut self, target: &Arg, append: bool, text: String) {
        self.out.writes.push(Write {
            target: (!target.dynamic && !target.glob).then(|| target.text.clone()),
            append,
            text,
        });
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, cx: &Context) {
        let text = simple.to_string();
        let mut args: Vec<Arg> = Vec::new();
        let mut assigned: Vec<String> = Vec::new();
        let items = simple
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(Some)
            .chain(std::iter::once(None))
            .chain(simple.suffix.iter().flat_map(|s| s.0.iter()).map(Some));
        for item in items {
            match item {
                // The command name sits between prefix and suffix.
                None => {
                    if let Some(name) = &simple.word_or_name {
                        let arg = self.word(&name.value, cx);
                        args.push(arg);
                    }
                }
                Some(CommandPrefixOrSuffixItem::IoRedirect(r)) => self.redirect(r, cx),
                Some(CommandPrefixOrSuffixItem::Word(word)) => {
                    let arg = self.word(&word.value, cx);
                    args.push(arg);
                }
                Some(CommandPrefixOrSuffixItem::AssignmentWord(assignment, word)) => {
                    if args.is_empty() {
                        self.assignment(assignment, cx);
                        assigned.push(assignment_name(assignment).to_owned());
                    } else {
                        // `export X=$(...)`, `declare -x X=...`: an argument of the builtin.
                        let arg = self.word(&word.value, cx);
                        args.push(arg);
                    }
                }
                Some(CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell)) => {
                    self.list(&subshell.list, cx);
                    args.push(Arg {
                        text: "/dev/fd/N".to_owned(),
                        dynamic: true,
                        glob: false,
                    });
                }
            }
        }
        for name in &assigned {
            if let Some(why) = runs_code(name) {
                self.unresolved(format!("assigns {name}: {why}"), &text);
            }
        }
        if !args.is_empty() {
            self.command_line(args, cx, &text, false);
        }
    }

    /// The code in an assignment's value and subscript.
    fn assignment(&mut self, assignment: &ast::Assignment, cx: &Context) {
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name {
            self.arithmetic(index, cx);
        }
        match &assignment.value {
            ast::AssignmentValue::Scalar(word) => {
                self.word(&word.value, cx);
            }
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        self.word(&key.value, cx);
                    }
                    self.word(&value.value, cx);
                }
            }
        }
    }

    /// A command line with its words expanded: the program it runs, through any wrappers.
    fn command_line(&mut self, args: Vec<Arg>, cx: &Context, text: &str, more_args: bool) {
        let Some(name) = args.first() else {
            return;
        };
        if name.dynamic {
            self.unresolved(
                format!("the command name comes from an expansion ({})", name.text),
                text,
            );
            return;
        }
        if name.glob {
            self.unresolved(
                format!(
                    "the command name is a glob or brace expansion ({})",
                    name.text
                ),
                text,
            );
            return;
        }
        let program = basename(&name.text).to_owned();
        self.builtin_effects(&program, &args, cx, text);
        if let Some(wrapped) = wrappers::unwrap(&program, &args[1..]) {
            for name in &wrapped.assigns {
                if let Some(why) = runs_code(name) {
                    self.unresolved(format!("{program} sets {name}: {why}"), text);
                }
            }
            for why in &wrapped.unresolved {
                self.unresolved(why.clone(), text);
            }
            if wrapped.is_command_too || wrapped.runs.is_empty() {
                self.push(&program, &args, cx, text, more_args);
            }
            let mut inner_cx = cx.clone();
            inner_cx.via.push(wrapped.via.clone());
            for inner in wrapped.runs {
                match inner {
                    Inner::Argv { args, more_args } => {
                        self.nested_run(args, &inner_cx, text, more_args)
                    }
                    Inner::Code(code) => self.nested_code(&code, &inner_cx),
                }
            }
            return;
        }
        self.push(&program, &args, cx, text, more_args);
    }

    fn nested_run(&mut self, args: Vec<Arg>, cx: &Context, text: &str, more_args: bool) {
        if self.depth >= MAX_DEPTH {
            self.unresolved("wrappers nest deeper than this analysis follows", text);
            return;
        }
        self.depth += 1;
        self.command_line(args, cx, text, more_args);
        self.depth -= 1;
    }

    fn nested_code(&mut self, code: &str, cx: &Context) {
        self.code(code, cx);
    }

    fn push(&mut self, program: &str, args: &[Arg], cx: &Context, text: &str, more_args: bool) {
        self.out.commands.push(Command {
            argv: args.iter().map(|a| a.text.clone()).collect(),
            program: program.to_owned(),
            via: cx.via.clone(),
            text: text.to_owned(),
            dynamic: args
                .iter()
                .enumerate()
                .filter(|(_, a)| a.dynamic || a.glob)
                .map(|(i, _)| i)
                .collect(),
            more_args,
        });
    }

    /// Builtins that run code or change what later names run.
    fn builtin_effects(&mut self, program: &str, args: &[Arg], cx: &Context, text: &str) {
        let rest = &args[1..];
        let has = |flag: &str| {
            rest.iter()
                .any(|a| a.text.starts_with('-') && a.text.contains(flag))
        };
        match program {
            "eval" => {
                self.unresolved("eval runs its arguments as code", text);
                if rest.iter().all(|a| !a.dynamic && !a.glob) {
                    let code: Vec<&str> = rest.iter().map(|a| a.text.as_str()).collect();
                    let mut inner = cx.clone();
                    inner.via.push("eval".to_owned());
                    self.code(&code.join(" "), &inner);
                }
            }
            "source" | "." => self.unresolved(format!("{program} runs the code of a file"), text),
            "fc" => self.unresolved("fc runs commands from the history", text),
            "hash" if has("p") => self.unresolved("hash -p makes a name run another program", text),
            "enable" if has("f") => {
                self.unresolved("enable -f loads a builtin from a shared object", text)
            }
            "mapfile" | "readarray" if has("C") => {
                self.unresolved(format!("{program} -C runs a callback"), text);
            }
            "let" => {
                for arg in rest {
                    self.subscript_injection(&arg.text);
                }
            }
            "alias" => {
                for arg in rest {
                    if let Some((name, value)) = arg.text.split_once('=') {
                        self.aliases.insert(name.to_owned());
                        let mut inner = cx.clone();
                        inner.via.push("alias".to_owned());
                        if arg.dynamic {
                            self.unresolved("an alias's value comes from an expansion", text);
                        } else {
                            self.code(value, &inner);
                        }
                    }
                }
            }
            "export" | "declare" | "typeset" | "readonly" | "local" => {
                for arg in rest {
                    let name = arg.text.split_once('=').map_or("", |(n, _)| n);
                    let name = name.trim_end_matches('+');
                    let name = name.split_once('[').map_or(name, |(n, _)| n);
                    if let Some(why) = runs_code(name) {
                        self.unresolved(format!("{program} {name}: {why}"), text);
                    }
                    // `declare -n ref=PATH` makes every later `ref=...` assign PATH.
                    let target = arg.text.split_once('=').map_or("", |(_, v)| v);
                    if has("n")
                        && let Some(why) = runs_code(target)
                    {
                        self.unresolved(
                            format!("{program} -n makes {name} another name for {target}: {why}"),
                            text,
                        );
                    }
                }
            }
            "read" | "printf" | "getopts" => {
                // They assign the variables they name (`read PATH`, `printf -v PATH`).
                for arg in rest.iter().filter(|a| is_name(&a.text)) {
                    if let Some(why) = runs_code(&arg.text) {
                        self.unresolved(format!("{program} may assign {}: {why}", arg.text), text);
                    }
                }
            }
            _ => {}
        }
    }
}

fn assignment_name(assignment: &ast::Assignment) -> &str {
    match &assignment.name {
        ast::AssignmentName::VariableName(name)
        | ast::AssignmentName::ArrayElementName(name, _) => name,
    }
}

/// `/usr/bin/rm`, `./rm` and `~/bin/rm` are `rm`.
fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `text` holds `name[...]` with an expansion (`$` or a backquote) inside the brackets.
fn has_expanded_subscript(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'['
            && i > 0
            && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
        {
            let mut depth = 1;
            let mut j = i + 1;
            while j < bytes.len() && depth > 0 {
                match bytes[j] {
                    b'[' => depth += 1,
                    b']' => depth -= 1,
                    b'$' | b'`' => return true,
                    _ => {}
                }
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    false
}
