//! One shell word, as brush-parser's word parser splits it: its value after quote removal, and
//! the code inside it that runs when bash expands it (command and arithmetic substitutions,
//! also nested inside `${x:-...}` and array subscripts).
//!
//! brush-parser gives words as raw text and leaves `$'...'` undecoded; decoding ANSI-C quoting
//! here is the one lexing step this crate does itself.

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};

/// What expanding a word involves.
#[derive(Debug, Default)]
pub(crate) struct Expanded {
    /// The value after quote removal; expansions keep their source text.
    pub value: String,
    /// Some part is known only at run time (a parameter, a substitution, arithmetic).
    pub dynamic: bool,
    /// An unquoted glob character or brace expansion: the word may become other words.
    pub glob: bool,
    /// Code that runs while the word expands, in order.
    pub found: Vec<Found>,
}

#[derive(Debug)]
pub(crate) enum Found {
    /// Source code bash runs (a command substitution's text).
    Code(String),
    /// Arithmetic text bash evaluates.
    Arithmetic(String),
    /// Something that runs but cannot be named.
    Unresolved(String),
}

/// Expands a word of the command line.
pub(crate) fn expand(raw: &str) -> Expanded {
    let mut out = Expanded::default();
    match word::parse(raw, &ParserOptions::default()) {
        Ok(pieces) => add_pieces(raw, &pieces, false, &mut out),
        Err(e) => {
            out.value = raw.to_owned();
            out.dynamic = true;
            out.found
                .push(Found::Unresolved(format!("the word cannot be parsed: {e}")));
        }
    }
    if !out.dynamic && !out.glob && is_brace_expansion(raw) {
        out.glob = true;
    }
    out
}

/// Expands an unquoted heredoc body or arithmetic text: quotes are literal there, `$` and
/// backquotes still expand.
pub(crate) fn expand_heredoc(raw: &str) -> Expanded {
    let mut out = Expanded::default();
    match word::parse_heredoc(raw, &ParserOptions::default()) {
        Ok(pieces) => add_pieces(raw, &pieces, true, &mut out),
        Err(e) => {
            out.value = raw.to_owned();
            out.dynamic = true;
            out.found
                .push(Found::Unresolved(format!("the text cannot be parsed: {e}")));
        }
    }
    out
}

fn add_pieces(raw: &str, pieces: &[WordPieceWithSource], quoted: bool, out: &mut Expanded) {
    for piece in pieces {
        let source = raw
            .get(piece.start_index..piece.end_index)
            .unwrap_or_default();
        match &piece.piece {
            WordPiece::Text(text) => {
                if !quoted && is_glob(text) {
                    out.glob = true;
                }
                out.value.push_str(text);
            }
            WordPiece::SingleQuotedText(text) => out.value.push_str(text),
            WordPiece::AnsiCQuotedText(text) => match decode_ansi_c(text) {
                Some(text) => out.value.push_str(&text),
                None => {
                    out.value.push_str(source);
                    out.dynamic = true;
                }
            },
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                add_pieces(raw, inner, true, out);
            }
            WordPiece::TildeExpansion(_) => out.value.push_str(source),
            WordPiece::ParameterExpansion(expr) => {
                out.value.push_str(source);
                out.dynamic = true;
                parameter(expr, out);
            }
            WordPiece::CommandSubstitution(code)
            | WordPiece::BackquotedCommandSubstitution(code) => {
                out.value.push_str(source);
                out.dynamic = true;
                out.found.push(Found::Code(code.clone()));
            }
            WordPiece::EscapeSequence(escape) => {
                // `\x` is `x`; a backslash-newline joins lines and is nothing.
                let rest = escape.strip_prefix('\\').unwrap_or(escape);
                if rest != "\n" {
                    out.value.push_str(rest);
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                out.value.push_str(source);
                out.dynamic = true;
                out.found.push(Found::Arithmetic(expr.value.clone()));
            }
        }
    }
}

/// The words nested in a parameter expansion expand too (`${x:-$(rm y)}`), and its subscript
/// and offsets are arithmetic.
fn parameter(expr: &ParameterExpr, out: &mut Expanded) {
    if let ParameterExpr::Transform {
        op: ParameterTransformOp::PromptExpand,
        ..
    } = expr
    {
        out.found.push(Found::Unresolved(
            "${var@P} expands the variable as a prompt, running the command substitutions in its value"
                .to_owned(),
        ));
    }
    let inside = Inside::of(expr);
    for text in inside.words {
        let inner = expand(text);
        out.found.extend(inner.found);
    }
    for text in inside.arithmetic {
        out.found.push(Found::Arithmetic(text.to_owned()));
    }
}

/// What a parameter expansion holds that bash expands in turn: the words nested in it
/// (defaults, patterns, replacements) and its arithmetic (offset, length, subscript), in order.
#[derive(Default)]
struct Inside<'a> {
    words: Vec<&'a str>,
    arithmetic: Vec<&'a str>,
}

impl<'a> Inside<'a> {
    /// Long because it is a table: one arm per kind of `${...}` brush-parser tells apart.
    fn of(expr: &'a ParameterExpr) -> Inside<'a> {
        let mut inside = Inside::default();
        let param = match expr {
            ParameterExpr::Parameter { parameter, .. }
            | ParameterExpr::ParameterLength { parameter, .. } => Some(parameter),
            ParameterExpr::UseDefaultValues {
                parameter,
                default_value: v,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                default_value: v,
                ..
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                error_message: v,
                ..
            }
            | ParameterExpr::UseAlternativeValue {
                parameter,
                alternative_value: v,
                ..
            }
            | ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::UppercaseFirstChar {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                pattern: v,
                ..
            } => {
                inside.words.extend(v.as_deref());
                Some(parameter)
            }
            ParameterExpr::ReplaceSubstring {
                parameter,
                pattern,
                replacement,
                ..
            } => {
                inside.words.push(pattern);
                inside.words.extend(replacement.as_deref());
                Some(parameter)
            }
            ParameterExpr::Substring {
                parameter,
                offset,
                length,
                ..
            } => {
                inside.arithmetic.push(&offset.value);
                inside
                    .arithmetic
                    .extend(length.as_ref().map(|l| l.value.as_str()));
                Some(parameter)
            }
            ParameterExpr::Transform { parameter, .. } => Some(parameter),
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => None,
        };
        if let Some(word::Parameter::NamedWithIndex { index, .. }) = param {
            inside.arithmetic.push(index);
        }
        inside
    }
}

/// Unquoted text with `*`, `?`, a `[...]` bracket expression (a lone `[` is the test
/// command, not a pattern) or an extglob (`@(a|b)`, `!(x)`, `+(x)`).
fn is_glob(text: &str) -> bool {
    text.contains(['*', '?'])
        || text.find('[').is_some_and(|at| text[at..].contains(']'))
        || ["@(", "!(", "+("].iter().any(|p| text.contains(p))
}

/// An unquoted `{a,b}` or `{1..3}` makes the word several words. Only the word's unquoted text
/// matters, but a rough look at the raw word errs toward "yes", the safe side.
fn is_brace_expansion(raw: &str) -> bool {
    matches!(
        word::parse_brace_expansions(raw, &ParserOptions::default()),
        Ok(Some(parts)) if parts.iter().any(|p| matches!(p, word::BraceExpressionOrText::Expr(_)))
    )
}

/// Decodes the inside of `$'...'` as bash does; `None` for an escape this does not know
/// (the word then counts as dynamic).
pub(crate) fn decode_ansi_c(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut bytes: Vec<u8> = Vec::new();
    let mut chars = text.chars().peekable();
    let flush = |bytes: &mut Vec<u8>, out: &mut String| {
        if !bytes.is_empty() {
            out.push_str(&String::from_utf8_lossy(bytes));
            bytes.clear();
        }
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            flush(&mut bytes, &mut out);
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(s) = simple {
            flush(&mut bytes, &mut out);
            out.push(s);
            continue;
        }
        match e {
            'x' => {
                let digits = take_digits(&mut chars, 16, 2);
                if digits.is_empty() {
                    return None;
                }
                bytes.push(u8::from_str_radix(&digits, 16).ok()?);
            }
            '0'..='7' => {
                let mut digits = e.to_string();
                digits.push_str(&take_digits(&mut chars, 8, 2));
                let n = u32::from_str_radix(&digits, 8).ok()?;
                bytes.push((n & 0xff) as u8);
            }
            'u' | 'U' => {
                let digits = take_digits(&mut chars, 16, if e == 'u' { 4 } else { 8 });
                flush(&mut bytes, &mut out);
                out.push(char::from_u32(u32::from_str_radix(&digits, 16).ok()?)?);
            }
            _ => return None,
        }
    }
    flush(&mut bytes, &mut out);
    Some(out)
}

fn take_digits(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
) -> String {
    let mut digits = String::new();
    while digits.len() < max {
        match chars.peek() {
            Some(d) if d.is_digit(radix) => {
                digits.push(*d);
                chars.next();
            }
            _ => break,
        }
    }
    digits
}
