//! What an approval question shows and what its answers mean (T2, T3).
//!
//! The call is shown whole, in one canonical form whatever order the model wrote its keys in:
//! for exec-shaped calls (`program` and `args`) the program and its argv first, as one shell
//! line; then every other field in name order. A long value is elided in the middle with its
//! size, never dropped; a call too large to show at all is not asked about (it is denied).
//! Everything from the model or a hook is sanitized and labelled with where it came from.
//!
//! Answers: `y` once, `a` always (this session, for the shown pattern), `n` no, optionally
//! with a reason for the model (`n: use git diff instead`).

use serde_json::Value;

use paddock_types::text::elide_middle;

/// Values longer than this many characters are elided in the middle.
const VALUE_CHARS: usize = 160;
/// A call that takes more lines than this to show (one per scalar, nested values flattened),
/// more argv words than `MAX_WORDS`, or arguments larger than `MAX_ARGS_BYTES`, is too large to
/// show; it is denied instead of approved blind.
const MAX_LINES: usize = 64;
const MAX_WORDS: usize = 64;
const MAX_ARGS_BYTES: usize = 1 << 20;

/// What `a` (always) approves for the rest of the session: calls of `tool` whose argv starts
/// with `prefix` (exec-shaped calls), or every call of `tool` (`prefix` empty, other tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub tool: String,
    pub prefix: Vec<String>,
}

impl Pattern {
    /// The pattern a question offers for `args`: the program and its first argument.
    pub fn offered(tool: &str, args: &Value) -> Pattern {
        let prefix = match argv(args) {
            Some(argv) => argv.into_iter().take(2).collect(),
            None => Vec::new(),
        };
        Pattern {
            tool: tool.to_string(),
            prefix,
        }
    }

    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        if tool != self.tool {
            return false;
        }
        if self.prefix.is_empty() {
            return true;
        }
        argv(args).is_some_and(|argv| argv.starts_with(&self.prefix))
    }

    /// `run_command git status*`, `write_file *`.
    pub fn shown(&self) -> String {
        if self.prefix.is_empty() {
            return format!("{} *", self.tool);
        }
        let words: Vec<String> = self.prefix.iter().map(|w| shell_word(w)).collect();
        format!("{} {}*", self.tool, words.join(" "))
    }
}

/// The program and its arguments, when the call is exec-shaped.
fn argv(args: &Value) -> Option<Vec<String>> {
    let program = args.get("program")?.as_str()?;
    let mut argv = vec![program.to_string()];
    if let Some(rest) = args.get("args") {
        for a in rest.as_array()? {
            argv.push(a.as_str()?.to_string());
        }
    }
    Some(argv)
}

/// The call as the question shows it: the command line first for exec-shaped calls (each
/// word elided on its own, so a long one cannot hide the words after it), then one line per
/// scalar in name order, nested objects and arrays flattened (`edits[0].old_string: ...`), so
/// no field is hidden inside another's elision. `Err` when it is too large to show.
pub fn render_call(args: &Value) -> Result<Vec<String>, String> {
    let size = args.to_string().len();
    let too_large = |what: String| {
        Err(format!(
            "the call is too large to show for approval ({what}; at most {MAX_LINES} lines, \
             {MAX_WORDS} command words and {MAX_ARGS_BYTES} bytes of arguments), so it was not run"
        ))
    };
    if size > MAX_ARGS_BYTES {
        return too_large(format!("{size} bytes of arguments"));
    }
    let Some(fields) = args.as_object() else {
        return Ok(vec![format!("arguments: {}", value_text(args))]);
    };
    let mut lines = Vec::new();
    let mut shown_first: Vec<&str> = Vec::new();
    if let Some(argv) = argv(args) {
        if argv.len() > MAX_WORDS {
            return too_large(format!("{} command words", argv.len()));
        }
        let words: Vec<String> = argv.iter().map(|w| elide(&shell_word(w))).collect();
        lines.push(format!("command: {}", words.join(" ")));
        shown_first = vec!["program", "args"];
    }
    let mut names: Vec<&String> = fields.keys().collect();
    names.sort();
    for name in names {
        if !shown_first.contains(&name.as_str()) {
            flatten(field_name(name), &fields[name], &mut lines);
        }
    }
    if lines.len() > MAX_LINES {
        return too_large(format!("more than {MAX_LINES} lines"));
    }
    Ok(lines)
}

/// `value` under `path`, one line per scalar (empty objects and arrays are scalars here);
/// stops once the call is too large to show anyway.
fn flatten(path: String, value: &Value, lines: &mut Vec<String>) {
    if lines.len() > MAX_LINES {
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let name = field_name(key);
                let joined = if name.starts_with('"') {
                    format!("{path}[{name}]")
                } else {
                    format!("{path}.{name}")
                };
                flatten(joined, &map[key], lines);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                flatten(format!("{path}[{i}]"), item, lines);
            }
        }
        scalar => lines.push(format!("{}: {}", elide(&path), value_text(scalar))),
    }
}

/// A key as shown: bare when it is a plain name, else JSON-quoted (so `a.b` as one key cannot
/// pass for a nested `b`, and controls are visible).
fn field_name(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        sanitize(&Value::String(key.to_string()).to_string())
    }
}

/// A value as one visible line: strings quoted with JSON escapes (so newlines and controls
/// show as `\n`, `\u001b`), anything else as compact JSON; elided when long.
fn value_text(value: &Value) -> String {
    elide(&sanitize(&value.to_string()))
}

/// `text` with its middle replaced by a marker naming how much was left out.
pub fn elide(text: &str) -> String {
    elide_middle(text, VALUE_CHARS, |cut| {
        format!("…[{cut} bytes elided of {} bytes]…", text.len())
    })
}

/// A word as the shell would need it: bare when safe, else single-quoted.
fn shell_word(word: &str) -> String {
    let word = sanitize(word);
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        word
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// T3: the one rule for text paddock did not write itself.
fn sanitize(text: &str) -> String {
    paddock_types::text::sanitize(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ask::{Answer, parse_answer};
    use serde_json::json;

    #[test]
    fn a_long_stdin_first_cannot_hide_the_argv() {
        let args =
            json!({"stdin": "x".repeat(5000), "program": "git", "args": ["push", "--force"]});
        let lines = render_call(&args).unwrap();
        assert_eq!(lines[0], "command: git push --force");
        assert!(lines[1].starts_with("stdin: \"xxx"), "{}", lines[1]);
        assert!(
            lines[1].contains("bytes elided of 5002 bytes"),
            "{}",
            lines[1]
        );
        assert!(lines[1].chars().count() < 260);
    }

    #[test]
    fn a_long_word_cannot_hide_the_words_after_it() {
        let long = "a".repeat(400);
        let args = json!({"program": "git", "args": ["log", long, "--output=/etc/x", "HEAD"]});
        let lines = render_call(&args).unwrap();
        assert!(
            lines[0].starts_with("command: git log aaa")
                && lines[0].ends_with(" --output=/etc/x HEAD")
                && lines[0].contains("bytes elided of 400 bytes"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn nested_values_are_flattened_so_each_is_shown() {
        let edits: Vec<Value> = (0..3)
            .map(|i| json!({"old": "x".repeat(300), "new": format!("edit {i}")}))
            .collect();
        let args = json!({"path": "a.rs", "edits": edits, "a.b": {}, "opts": {"deep": [1, []]}});
        let lines = render_call(&args).unwrap();
        assert!(lines.contains(&"\"a.b\": {}".to_string()), "{lines:?}");
        for i in 0..3 {
            assert!(
                lines.contains(&format!("edits[{i}].new: \"edit {i}\"")),
                "{lines:?}"
            );
        }
        assert!(lines.contains(&"opts.deep[0]: 1".to_string()), "{lines:?}");
        assert!(lines.contains(&"opts.deep[1]: []".to_string()), "{lines:?}");
        assert_eq!(lines.last().unwrap(), "path: \"a.rs\"");
    }

    #[test]
    fn every_field_is_shown_in_name_order_and_controls_are_visible() {
        let args = json!({"z": 1, "path": "a\u{1b}[2Jb\nc", "content": ""});
        let lines = render_call(&args).unwrap();
        assert_eq!(
            lines,
            ["content: \"\"", "path: \"a\\u001b[2Jb\\nc\"", "z: 1"]
        );
    }

    #[test]
    fn a_call_too_large_to_show_is_refused() {
        let fields: serde_json::Map<String, Value> =
            (0..100).map(|i| (format!("f{i}"), json!(i))).collect();
        assert!(render_call(&Value::Object(fields)).is_err());
        let nested = json!({"items": (0..100).collect::<Vec<u32>>()});
        assert!(render_call(&nested).is_err());
        let words: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        assert!(render_call(&json!({"program": "echo", "args": words})).is_err());
    }

    #[test]
    fn always_patterns_match_argv_prefixes_only() {
        let shown = json!({"program": "git", "args": ["status", "--short"]});
        let pattern = Pattern::offered("run_command", &shown);
        assert_eq!(pattern.shown(), "run_command git status*");
        assert!(pattern.matches(
            "run_command",
            &json!({"program": "git", "args": ["status"]})
        ));
        assert!(!pattern.matches("run_command", &json!({"program": "git", "args": ["push"]})));
        assert!(!pattern.matches(
            "run_command",
            &json!({"program": "git", "args": ["statusx"]})
        ));
        assert!(!pattern.matches("other", &shown));
        let write = Pattern::offered("write_file", &json!({"path": "a"}));
        assert_eq!(write.shown(), "write_file *");
        assert!(write.matches("write_file", &json!({"path": "b"})));
    }

    #[test]
    fn answers_parse_with_reasons() {
        assert_eq!(parse_answer("y\n"), Answer::Once);
        assert_eq!(parse_answer("A"), Answer::Always);
        assert_eq!(parse_answer(""), Answer::No(None));
        assert_eq!(parse_answer("n"), Answer::No(None));
        assert_eq!(
            parse_answer("n: use git diff instead"),
            Answer::No(Some("use git diff instead".into()))
        );
        assert_eq!(parse_answer("yes please"), Answer::No(None));
    }
}
