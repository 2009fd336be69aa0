//! Where a key of the effective preset is written: a key path (`tools.enable[1]`,
//! `plugins.fs.mounts[0].guest`) looked up in each file of the `extends` chain as written,
//! the preset's own first (lists and values replace a base's, so the first file that writes
//! a key is the one that decides it), as `file:line:column`; and the key path at a place of
//! the merged text (`path_at`), so an error the parser finds there is shown where the user
//! wrote it.

use toml::de::{DeTable, DeValue};

use super::PresetSource;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A key path from the top of a preset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Seg>);

impl KeyPath {
    /// `"plugins.fs.mounts"` (no indices).
    pub fn of(dotted: &str) -> KeyPath {
        KeyPath(dotted.split('.').map(|k| Seg::Key(k.to_string())).collect())
    }

    pub fn key(mut self, key: &str) -> KeyPath {
        self.0.push(Seg::Key(key.to_string()));
        self
    }

    pub fn index(mut self, index: usize) -> KeyPath {
        self.0.push(Seg::Index(index));
        self
    }
}

impl std::fmt::Display for KeyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => write!(f, "{key}")?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// `file:line:column` of `path`: in the first file of `chain` that writes it, else where the
/// longest part of it that some file writes is, else the top of the preset's own file.
pub fn locate(chain: &[PresetSource], path: &KeyPath) -> String {
    let mut best: Option<(usize, String)> = None;
    for source in chain {
        let Ok(doc) = DeTable::parse(&source.text) else {
            continue;
        };
        let (depth, offset) = deepest(doc.get_ref(), &path.0);
        if depth == path.0.len() {
            return at(source, offset);
        }
        if depth > 0 && best.as_ref().is_none_or(|(d, _)| depth > *d) {
            best = Some((depth, at(source, offset)));
        }
    }
    match (best, chain.first()) {
        (Some((_, found)), _) => found,
        (None, Some(source)) => format!("{}:1:1", source.location),
        (None, None) => "<preset>:1:1".to_string(),
    }
}

/// The key path of the deepest entry of `text` whose key or value holds byte `offset`; `None`
/// when `offset` is outside every entry (or `text` does not parse).
pub fn path_at(text: &str, offset: usize) -> Option<KeyPath> {
    let doc = DeTable::parse(text).ok()?;
    let mut best = None;
    holding_in_table(doc.get_ref(), &KeyPath::default(), offset, &mut best);
    best
}

/// The deepest entry under `table` (at `path`) that holds `offset`, kept in `best`.
fn holding_in_table(table: &DeTable<'_>, path: &KeyPath, offset: usize, best: &mut Option<KeyPath>) {
    for (key, value) in table.iter() {
        let name: &str = key.get_ref();
        let here = path.clone().key(name);
        let end = value.span().end.max(key.span().end);
        keep_if_deeper(&here, (key.span().start..end).contains(&offset), best);
        holding_in_value(value.get_ref(), &here, offset, best);
    }
}

fn holding_in_value(value: &DeValue<'_>, path: &KeyPath, offset: usize, best: &mut Option<KeyPath>) {
    match value {
        DeValue::Table(table) => holding_in_table(table, path, offset, best),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let here = path.clone().index(i);
                keep_if_deeper(&here, item.span().contains(&offset), best);
                holding_in_value(item.get_ref(), &here, offset, best);
            }
        }
        _ => {}
    }
}

fn keep_if_deeper(path: &KeyPath, holds: bool, best: &mut Option<KeyPath>) {
    if holds && best.as_ref().is_none_or(|b| path.0.len() > b.0.len()) {
        *best = Some(path.clone());
    }
}

fn at(source: &PresetSource, offset: usize) -> String {
    let (line, col) = super::line_col(&source.text, offset);
    format!("{}:{line}:{col}", source.location)
}

/// How many steps of `path` the table has, and the offset of the last one found: a key where
/// the key is written, a list element where its value is.
fn deepest(table: &DeTable<'_>, path: &[Seg]) -> (usize, usize) {
    let mut found = (0, 0);
    let mut here: Option<&DeValue<'_>> = None;
    for (depth, seg) in path.iter().enumerate() {
        let next = match (seg, here) {
            (Seg::Key(key), None) => entry(table, key),
            (Seg::Key(key), Some(DeValue::Table(t))) => entry(t, key),
            (Seg::Index(i), Some(DeValue::Array(items))) => items
                .get(*i)
                .map(|item| (item.span().start, item.get_ref())),
            _ => None,
        };
        let Some((offset, value)) = next else {
            break;
        };
        found = (depth + 1, offset);
        here = Some(value);
    }
    found
}

/// The entry `key` of `table`: where its key is written, and its value.
pub(crate) fn entry<'t, 'i>(table: &'t DeTable<'i>, key: &str) -> Option<(usize, &'t DeValue<'i>)> {
    table
        .iter()
        .find(|(k, _)| {
            let name: &str = k.get_ref();
            name == key
        })
        .map(|(k, v)| (k.span().start, v.get_ref()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::preset::Origin;

    /// A preset file of the chain, for the tests of this folder.
    pub(crate) fn source(location: &str, text: &str) -> PresetSource {
        PresetSource {
            origin: Origin::File,
            location: location.into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_key_is_found_in_the_first_file_that_writes_it() {
        let top = source(
            "top.toml",
            "extends = \"base.toml\"\n\n[tools]\nenable = [\"a\", \"b\"]\n",
        );
        let base = source(
            "base.toml",
            "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [\n  { host = \".\", guest = \"/w\" },\n  { host = \"x\", guest = \"/w\" },\n]\n",
        );
        let chain = [top, base];
        let enable = KeyPath::of("tools.enable").index(1);
        assert_eq!(enable.to_string(), "tools.enable[1]");
        assert_eq!(locate(&chain, &enable), "top.toml:4:16");
        let guest = KeyPath::of("plugins.fs.mounts").index(1).key("guest");
        assert_eq!(locate(&chain, &guest), "base.toml:5:17");
        // Not written anywhere: the nearest part that is.
        let missing = KeyPath::of("plugins.fs.grants.exec");
        assert_eq!(locate(&chain, &missing), "base.toml:1:10");
        assert_eq!(locate(&chain, &KeyPath::of("approval")), "top.toml:1:1");
    }

    #[test]
    fn array_of_tables_elements_are_found() {
        let text =
            "[[hooks]]\nsource = \"a\"\non = \"pre\"\n\n[[hooks]]\nsource = \"b\"\non = \"post\"\n";
        let chain = [source("h.toml", text)];
        let path = KeyPath::of("hooks").index(1).key("on");
        assert_eq!(locate(&chain, &path), "h.toml:7:1");
    }

    #[test]
    fn the_key_path_at_a_place_of_the_text_is_the_deepest_entry_holding_it() {
        let text = "name = \"x\"\n[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/w\" }]\n\n[[hooks]]\nsource = \"a\"\n";
        let at = |needle: &str| path_at(text, text.find(needle).unwrap()).map(|p| p.to_string());
        assert_eq!(at("\"x\"").as_deref(), Some("name"));
        assert_eq!(at("builtin:fs").as_deref(), Some("plugins.fs.source"));
        assert_eq!(at("\"/w\"").as_deref(), Some("plugins.fs.mounts[0].guest"));
        assert_eq!(at("\"a\"").as_deref(), Some("hooks[0].source"));
    }
}
