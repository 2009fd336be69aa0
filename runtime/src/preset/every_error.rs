//! Every error of a preset file in one pass (P1): every syntax error the TOML parser recovers
//! from, else every unknown key, wrong type and bad value. serde stops at the first error, so
//! the entry it names is blanked out (spaces, newlines kept, so every later line and column
//! still points into the file as written) and the file is read again, until it reads or no
//! entry can be taken out without breaking the syntax. Best effort, never wrong: an error
//! that only the blanking caused (a required key taken out with its bad value) ends the pass.

use serde::de::DeserializeOwned;
use toml::de::{DeTable, DeValue};

/// Most errors reported for one file.
const MAX_ERRORS: usize = 32;

/// The file read, or every error found, in the order found; spans index `text`.
pub fn parse_all<T: DeserializeOwned>(text: &str) -> Result<T, Vec<toml::de::Error>> {
    let (_, mut syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        syntax.sort_by_key(position);
        return Err(syntax);
    }
    let mut errors: Vec<toml::de::Error> = Vec::new();
    let mut blanked = text.to_string();
    let mut taken: Vec<String> = Vec::new();
    while errors.len() < MAX_ERRORS {
        let error = match toml::from_str::<T>(&blanked) {
            Ok(file) if errors.is_empty() => return Ok(file),
            Ok(_) => break,
            Err(error) => error,
        };
        let caused_by_blanking = taken.iter().any(|key| {
            error
                .message()
                .starts_with(&format!("missing field `{key}`"))
        });
        if caused_by_blanking {
            break;
        }
        let Some(span) = error.span() else {
            errors.push(error);
            break;
        };
        let at = span.start;
        errors.push(error);
        match take_out(&blanked, at) {
            Some((next, key)) => {
                blanked = next;
                taken.push(key);
            }
            None => break,
        }
    }
    // serde meets them in its fields' order; the file is read top to bottom.
    errors.sort_by_key(position);
    Err(errors)
}

fn position(error: &toml::de::Error) -> usize {
    error.span().map_or(0, |span| span.start)
}

/// `text` with the smallest entry holding byte `at` blanked, so that it still parses, and
/// the entry's key; `None` when there is none.
fn take_out(text: &str, at: usize) -> Option<(String, String)> {
    let doc = DeTable::parse(text).ok()?;
    let mut spans = Vec::new();
    entries(doc.get_ref(), at, &mut spans);
    spans.sort_by_key(|(start, end, _)| end - start);
    spans.into_iter().find_map(|(start, end, key)| {
        let next = blank(text, start, end);
        (next != text && DeTable::parse(&next).is_ok()).then_some((next, key))
    })
}

/// Every entry (key through the end of its value) and array element containing `at`, with its
/// key.
fn entries(table: &DeTable<'_>, at: usize, out: &mut Vec<(usize, usize, String)>) {
    for (key, value) in table.iter() {
        let start = key.span().start;
        let end = extent(value.get_ref()).max(value.span().end);
        let name: &str = key.get_ref();
        if (start..end).contains(&at) || value.span().contains(&at) {
            out.push((start, end, name.to_string()));
        }
        within(value.get_ref(), at, name, out);
    }
}

fn within(value: &DeValue<'_>, at: usize, key: &str, out: &mut Vec<(usize, usize, String)>) {
    match value {
        DeValue::Table(table) => entries(table, at, out),
        DeValue::Array(items) => {
            for item in items.iter() {
                let span = item.span();
                if span.contains(&at) {
                    out.push((span.start, span.end, key.to_string()));
                }
                within(item.get_ref(), at, key, out);
            }
        }
        _ => {}
    }
}

/// The end of the last thing written inside `value` (a table's keys may lie past its span).
fn extent(value: &DeValue<'_>) -> usize {
    match value {
        DeValue::Table(table) => table
            .iter()
            .map(|(_, v)| v.span().end.max(extent(v.get_ref())))
            .max()
            .unwrap_or(0),
        DeValue::Array(items) => items
            .iter()
            .map(|v| v.span().end.max(extent(v.get_ref())))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// `text` with bytes `start..end` turned into spaces, newlines kept.
fn blank(text: &str, start: usize, end: usize) -> String {
    let end = end.min(text.len());
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if (start..end).contains(&i) && c != '\n' {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::preset::parse;

    #[test]
    fn every_unknown_key_and_wrong_type_is_reported_at_once() {
        let text = "[plugins.fs]\nsource = \"builtin:fs\"\ntimeout_sm = 10\nmemory_mb = \"lots\"\n\
                    mounts = [{ host = \".\", guest = \"/w\", mode = \"rx\" }]\n\n\
                    [limits]\nmax_turn = 3\n\n[tools]\nenabel = [\"a\"]\n";
        let err = parse("p.toml", text).unwrap_err().0;
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 5, "{err}");
        assert!(
            lines[0].starts_with("p.toml:3:1: unknown field `timeout_sm`"),
            "{err}"
        );
        assert!(lines[0].ends_with("did you mean `timeout_ms`?"), "{err}");
        assert!(lines[1].starts_with("p.toml:4:13:"), "{err}");
        assert!(
            lines[2].starts_with("p.toml:5:46: unknown variant `rx`"),
            "{err}"
        );
        assert!(
            lines[3].starts_with("p.toml:8:1: unknown field `max_turn`"),
            "{err}"
        );
        assert!(lines[4].contains("did you mean `enable`?"), "{err}");
    }

    #[test]
    fn syntax_errors_are_all_reported_and_a_good_file_reads() {
        let err = parse("s.toml", "a = \nb = [1\nname = \"x\"\n")
            .unwrap_err()
            .0;
        assert!(err.lines().count() >= 2, "{err}");
        assert!(
            err.starts_with("s.toml:1:5: string values must be quoted"),
            "{err}"
        );
        let ok = parse("g.toml", "name = \"x\"\n").unwrap();
        assert_eq!(ok.name.as_deref(), Some("x"));
    }
}
