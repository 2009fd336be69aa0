//! A model script (`paddock run --model-script FILE`): the user's own scripted model, so a tool
//! can be driven through the whole loop (repair, validation, hooks, sandbox, log) without a
//! model server. The format is TOML, one `[[turn]]` per model response:
//!
//! ```toml
//! [[turn]]
//! text = "Greeting first."
//! [[turn.call]]
//! tool = "greet"
//! args = { name = "{{task}}" }
//!
//! [[turn]]
//! text = "The tool said: {{result}}"
//! ```
//!
//! A call gives `args` (a table, sent as JSON) or `raw` (the argument text exactly as a sloppy
//! model would send it, to see repair at work). Strings may use `{{task}}` (the session's first
//! user message), `{{message}}` (the latest one), `{{result}}` (the last tool result the
//! request carries) and `{{result.N}}` (the N-th result of the last batch, from 1).

use serde::Deserialize;

use crate::model::Message;

/// A parsed model script: its text (recorded in the session's start, so `resume` replays the
/// same script), where it came from, and its turns.
#[derive(Debug, Clone)]
pub struct ModelScript {
    pub name: String,
    pub text: String,
    turns: Vec<Turn>,
}

/// One scripted response, before its placeholders are filled.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: String,
    #[serde(default, rename = "call")]
    calls: Vec<Call>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    tool: String,
    #[serde(default)]
    args: Option<toml::Table>,
    #[serde(default)]
    raw: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, rename = "turn")]
    turns: Vec<Turn>,
}

/// One response with its placeholders filled: text and calls as (name, argument text).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub text: String,
    pub calls: Vec<(String, String)>,
}

/// The placeholders a script may use, for the error that names an unknown one.
const PLACEHOLDERS: &str = "{{task}}, {{message}}, {{result}} or {{result.N}}";

impl ModelScript {
    /// Reads and parses `path`; the error names the file, the line and the fix.
    pub fn from_file(path: &std::path::Path) -> Result<ModelScript, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read the model script {}: {e} (give the path of a TOML file with \
                 [[turn]] tables, see docs/model-script.md)",
                path.display()
            )
        })?;
        ModelScript::parse(&path.display().to_string(), &text)
    }

    /// Parses a script's text; `name` is where it came from, for errors.
    pub fn parse(name: &str, text: &str) -> Result<ModelScript, String> {
        let at = |offset: Option<usize>| {
            let (line, col) = offset.map_or((1, 1), |o| crate::preset::line_col(text, o));
            format!("{name}:{line}:{col}")
        };
        let file: File = toml::from_str(text).map_err(|e| {
            format!(
                "{}: {} (a model script is [[turn]] tables with `text` and [[turn.call]] \
                 tables with `tool` and `args` or `raw`, see docs/model-script.md)",
                at(e.span().map(|s| s.start)),
                e.message()
            )
        })?;
        if file.turns.is_empty() {
            return Err(format!(
                "{name}: the model script has no [[turn]]: add one per model response, e.g.\n\
                 [[turn]]\ntext = \"Hello\""
            ));
        }
        for (i, turn) in file.turns.iter().enumerate() {
            let turn_no = i + 1;
            check_placeholders(&turn.text)
                .map_err(|e| format!("{name}: turn {turn_no}, text: {e}"))?;
            for (j, call) in turn.calls.iter().enumerate() {
                let where_ = format!("{name}: turn {turn_no}, call {} (`{}`)", j + 1, call.tool);
                match (&call.args, &call.raw) {
                    (Some(_), Some(_)) => {
                        return Err(format!(
                            "{where_}: has both `args` and `raw`; keep one (`args` is a table \
                             sent as JSON, `raw` the exact argument text)"
                        ));
                    }
                    (Some(args), None) => {
                        for s in strings(&toml::Value::Table(args.clone())) {
                            check_placeholders(&s).map_err(|e| format!("{where_}: {e}"))?;
                        }
                    }
                    (None, Some(raw)) => {
                        check_placeholders(raw).map_err(|e| format!("{where_}: {e}"))?
                    }
                    (None, None) => {}
                }
            }
        }
        Ok(ModelScript {
            name: name.to_string(),
            text: text.to_string(),
            turns: file.turns,
        })
    }

    /// How many responses the script has.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Response `n` (from 0) for a request carrying `messages`, or `None` past the end.
    pub(crate) fn render<'a>(
        &self,
        n: usize,
        messages: impl Iterator<Item = &'a Message>,
    ) -> Option<Rendered> {
        let turn = self.turns.get(n)?;
        let seen = Seen::of(messages);
        let calls = turn
            .calls
            .iter()
            .map(|call| {
                let arguments = match (&call.args, &call.raw) {
                    (_, Some(raw)) => seen.fill(raw),
                    (Some(args), None) => {
                        let filled = fill_value(&toml::Value::Table(args.clone()), &seen);
                        serde_json::to_string(&filled).unwrap_or_else(|_| "{}".into())
                    }
                    (None, None) => "{}".to_string(),
                };
                (call.tool.clone(), arguments)
            })
            .collect();
        Some(Rendered {
            text: seen.fill(&turn.text),
            calls,
        })
    }
}

/// What the placeholders read from the request.
struct Seen {
    task: String,
    message: String,
    /// The results after the last assistant message, in order.
    results: Vec<String>,
}

impl Seen {
    fn of<'a>(messages: impl Iterator<Item = &'a Message>) -> Seen {
        let mut seen = Seen {
            task: String::new(),
            message: String::new(),
            results: Vec::new(),
        };
        for message in messages {
            match message {
                Message::User { text, .. } => {
                    if seen.task.is_empty() {
                        seen.task = text.clone();
                    }
                    seen.message = text.clone();
                }
                Message::Assistant { .. } => seen.results.clear(),
                Message::Tool(result) => seen.results.push(result.content.clone()),
                Message::System { .. } => {}
            }
        }
        seen
    }

    fn fill(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                out.push_str(&rest[open..]);
                return out;
            };
            let key = after[..close].trim();
            match self.lookup(key) {
                Some(value) => out.push_str(value),
                None => out.push_str(&rest[open..open + 2 + close + 2]),
            }
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        out
    }

    fn lookup(&self, key: &str) -> Option<&str> {
        match key {
            "task" => Some(&self.task),
            "message" => Some(&self.message),
            "result" => Some(self.results.last().map_or("", String::as_str)),
            _ => {
                let n: usize = key.strip_prefix("result.")?.parse().ok()?;
                Some(
                    n.checked_sub(1)
                        .and_then(|i| self.results.get(i))
                        .map_or("", String::as_str),
                )
            }
        }
    }
}

/// Every placeholder in `text` must be one the script can fill.
fn check_placeholders(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(format!(
                "`{{{{` without `}}}}` in {text:?}: close it, e.g. {{{{task}}}}"
            ));
        };
        let key = after[..close].trim();
        let known = matches!(key, "task" | "message" | "result")
            || key
                .strip_prefix("result.")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n >= 1);
        if !known {
            return Err(format!(
                "unknown placeholder {{{{{key}}}}}: use {PLACEHOLDERS}"
            ));
        }
        rest = &after[close + 2..];
    }
    Ok(())
}

/// The strings in a TOML value, depth first.
fn strings(value: &toml::Value) -> Vec<String> {
    match value {
        toml::Value::String(s) => vec![s.clone()],
        toml::Value::Array(items) => items.iter().flat_map(strings).collect(),
        toml::Value::Table(table) => table.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// `value` as JSON with its strings filled: a result pasted into an argument stays one string,
/// whatever quotes it holds.
fn fill_value(value: &toml::Value, seen: &Seen) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        toml::Value::String(s) => J::String(seen.fill(s)),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => J::from(*f),
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(items.iter().map(|v| fill_value(v, seen)).collect()),
        toml::Value::Table(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), fill_value(v, seen)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCall, ToolResultMessage};

    fn history() -> Vec<Message> {
        vec![
            Message::System { text: "sys".into() },
            Message::user("greet Ada"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "1".into(),
                    name: "a".into(),
                    arguments: "{}".into(),
                }],
                reasoning: Vec::new(),
            },
            Message::Tool(ToolResultMessage {
                call_id: "1".into(),
                content: "first \"quoted\"".into(),
                is_error: false,
                images: Vec::new(),
            }),
            Message::Tool(ToolResultMessage {
                call_id: "2".into(),
                content: "second".into(),
                is_error: false,
                images: Vec::new(),
            }),
        ]
    }

    #[test]
    fn placeholders_fill_from_the_request_and_results_stay_one_json_string() {
        let script = ModelScript::parse(
            "s.toml",
            r#"
[[turn]]
text = "task={{task}} last={{result}} one={{ result.1 }} none={{result.9}}"
[[turn.call]]
tool = "echo"
args = { text = "{{result.1}}", n = 3, list = ["{{task}}"] }
[[turn.call]]
tool = "Read"
raw = '"{\"file_path\": \"x\"}"'
"#,
        )
        .unwrap();
        let out = script.render(0, history().iter()).unwrap();
        assert_eq!(
            out.text,
            "task=greet Ada last=second one=first \"quoted\" none="
        );
        let args: serde_json::Value = serde_json::from_str(&out.calls[0].1).unwrap();
        assert_eq!(
            args,
            serde_json::json!({"text": "first \"quoted\"", "n": 3, "list": ["greet Ada"]})
        );
        assert_eq!(out.calls[1], ("Read".into(), r#""{\"file_path\": \"x\"}""#.into()));
        assert!(script.render(1, history().iter()).is_none());
    }

    #[test]
    fn bad_scripts_are_refused_at_their_line_with_the_fix() {
        let typo = ModelScript::parse("s.toml", "[[turn]]\ntext = \"a\"\n[[turn.call]]\ntool = \"x\"\narg = {}\n")
            .unwrap_err();
        assert!(typo.starts_with("s.toml:5:"), "{typo}");
        assert!(typo.contains("arg"), "{typo}");
        let unknown = ModelScript::parse("s.toml", "[[turn]]\ntext = \"{{nope}}\"\n").unwrap_err();
        assert!(unknown.contains("turn 1") && unknown.contains("{{nope}}"), "{unknown}");
        let both = ModelScript::parse(
            "s.toml",
            "[[turn]]\n[[turn.call]]\ntool = \"x\"\nargs = {}\nraw = \"{}\"\n",
        )
        .unwrap_err();
        assert!(both.contains("both `args` and `raw`"), "{both}");
        let empty = ModelScript::parse("s.toml", "# nothing\n").unwrap_err();
        assert!(empty.contains("no [[turn]]"), "{empty}");
    }
}
