//! edit_file: replace one exact occurrence of a string (or all, when asked), writing the file
//! atomically (L7: see `atomic`).

use paddock_sdk::{Output, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of edit_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFile {
    /// File to edit. Relative paths are relative to /workspace.
    pub path: String,
    /// Exact text to replace, including whitespace and indentation. It must occur exactly once
    /// unless replace_all is true.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
}

impl Tool for EditFile {
    const NAME: &'static str = "edit_file";

    fn spec() -> Spec {
        Spec::new(
            "Replace an exact piece of text in a file. old_string must match exactly once \
             (whitespace included); if it matches nowhere or several times, nothing changes and the \
             error says how many matches there were and on which lines, so you can add context. Set \
             replace_all to change every occurrence. Use write_file to create files.\nPaths are \
             relative to /workspace unless absolute. Returns one line saying what was replaced.",
        )
        .writes(false)
        .path_params(&["path"])
        .example(
            r#"{"path": "src/lib.rs", "old_string": "fn old_name(", "new_string": "fn new_name("}"#,
            "one exact occurrence",
        )
        .counter_example(
            r#"{"path": "src/lib.rs", "old_string": "}", "new_string": "};"}"#,
            "matches many times: include the surrounding lines",
        )
    }

    fn run(self) -> Result<Output, ToolError> {
        if self.old_string.is_empty() {
            return Err(ToolError::invalid_args(
                "old_string is empty; to create a file use write_file",
            ));
        }
        if self.old_string == self.new_string {
            return Err(ToolError::invalid_args(
                "old_string and new_string are the same; nothing would change",
            ));
        }
        let path = resolve(&self.path);
        let text = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&self.path, &e))?;
        let (updated, count) = apply(&text, &self.old_string, &self.new_string, self.replace_all)
            .map_err(|e| {
            ToolError::new(
                e.code(),
                format!("{}: {}", self.path, e.message(&self.old_string)),
            )
        })?;
        // Temp file + rename: a crash leaves the old content or the new (L7).
        crate::atomic::replace(&path, updated.as_bytes())
            .map_err(|e| ToolError::io(&self.path, &e))?;
        let what = if count == 1 {
            "1 occurrence".to_string()
        } else {
            format!("{count} occurrences")
        };
        Ok(Output::text(format!("replaced {what} in {}", self.path)))
    }
}

#[derive(Debug, PartialEq, Eq)]
enum EditError {
    NoMatch,
    Ambiguous { lines: Vec<usize> },
}

impl EditError {
    fn code(&self) -> &'static str {
        match self {
            EditError::NoMatch => "NO_MATCH",
            EditError::Ambiguous { .. } => "AMBIGUOUS_MATCH",
        }
    }

    fn message(&self, old: &str) -> String {
        match self {
            EditError::NoMatch => {
                let first = old.lines().next().unwrap_or("").trim();
                format!(
                    "old_string matches 0 times; nothing changed. Read the file again and copy the \
                     text exactly, whitespace included (its first line, trimmed, is {first:?})"
                )
            }
            EditError::Ambiguous { lines } => {
                let shown: Vec<String> = lines.iter().take(20).map(|l| l.to_string()).collect();
                format!(
                    "old_string matches {} times (starting on lines {}); nothing changed. Include \
                     more surrounding text so it matches once, or set replace_all to true",
                    lines.len(),
                    shown.join(", ")
                )
            }
        }
    }
}

fn apply(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), EditError> {
    let starts: Vec<usize> = text.match_indices(old).map(|(at, _)| at).collect();
    match starts.len() {
        0 => Err(EditError::NoMatch),
        1 => Ok((text.replacen(old, new, 1), 1)),
        n if replace_all => Ok((text.replace(old, new), n)),
        _ => Err(EditError::Ambiguous {
            lines: starts
                .iter()
                .map(|&at| text[..at].matches('\n').count() + 1)
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_match_is_replaced() {
        assert_eq!(
            apply("a b c", "b", "B", false),
            Ok(("a B c".to_string(), 1))
        );
    }

    #[test]
    fn zero_and_many_matches_say_how_many_and_where() {
        assert_eq!(apply("a", "z", "y", false), Err(EditError::NoMatch));
        let err = apply("x\ny\nx\n", "x", "z", false).unwrap_err();
        assert_eq!(err, EditError::Ambiguous { lines: vec![1, 3] });
        assert!(
            err.message("x")
                .contains("matches 2 times (starting on lines 1, 3)")
        );
        assert_eq!(
            apply("x\ny\nx\n", "x", "z", true),
            Ok(("z\ny\nz\n".to_string(), 2))
        );
    }
}
