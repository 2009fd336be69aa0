//! The system prompt a session starts with: the preset's `system_prompt` (text) or
//! `system_prompt_file` (a file relative to the preset's folder), else paddock's default, with
//! the project's instruction files (`instructions.rs`) appended when they may be used.

use std::path::Path;

use super::PresetError;
use super::file::{PresetFile, line_col};
use super::instructions::InstructionFile;

/// Largest `system_prompt_file` read.
const MAX_PROMPT_BYTES: u64 = 256 * 1024;

/// The preset's own system prompt, `None` when it sets none. `text` is the preset's text (for
/// file:line:column in errors); a relative `system_prompt_file` is read from the folder of
/// `origin` when that is a file, else from `cwd`.
pub fn system_prompt(
    file: &PresetFile,
    text: &str,
    cwd: &Path,
) -> Result<Option<String>, PresetError> {
    let origin = &file.origin;
    let Some(name) = &file.system_prompt_file else {
        return Ok(file.system_prompt.clone());
    };
    let (line, col) = line_col(text, name.span().start);
    let at = |message: String| PresetError(format!("{origin}:{line}:{col}: {message}"));
    if file.system_prompt.is_some() {
        return Err(at(
            "system_prompt and system_prompt_file are both set; keep one".into(),
        ));
    }
    let base = Path::new(origin)
        .parent()
        .filter(|_| Path::new(origin).is_file())
        .unwrap_or(cwd);
    let path = base.join(name.get_ref());
    let size = std::fs::metadata(&path)
        .map_err(|e| {
            at(format!(
                "system_prompt_file: cannot read {}: {e}; the path is relative to the preset's folder",
                path.display()
            ))
        })?
        .len();
    if size > MAX_PROMPT_BYTES {
        return Err(at(format!(
            "system_prompt_file {} is {size} bytes; at most {MAX_PROMPT_BYTES}",
            path.display()
        )));
    }
    let prompt = std::fs::read_to_string(&path).map_err(|e| {
        at(format!(
            "system_prompt_file: cannot read {} as UTF-8 text: {e}",
            path.display()
        ))
    })?;
    Ok(Some(prompt))
}

/// `base` with each instruction file appended under a heading naming it.
pub fn with_instructions(base: &str, files: &[InstructionFile]) -> String {
    let mut prompt = base.trim_end().to_string();
    for file in files {
        prompt.push_str(&format!(
            "\n\n# Project instructions ({}, from the project's root)\n\n{}",
            file.name,
            file.text.trim_end()
        ));
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_keys_is_an_error_at_the_file_key() {
        let text = "system_prompt = \"a\"\nsystem_prompt_file = \"p.md\"\n";
        let file = super::super::parse("p.toml", text).unwrap();
        let err = system_prompt(&file, text, Path::new("/")).unwrap_err().0;
        assert!(err.starts_with("p.toml:2:22: system_prompt and"), "{err}");
    }

    #[test]
    fn a_missing_file_names_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let text = "\nsystem_prompt_file = \"prompts/sys.md\"\n";
        let file = super::super::parse("<embedded>", text).unwrap();
        let err = system_prompt(&file, text, dir.path()).unwrap_err().0;
        assert!(
            err.starts_with("<embedded>:2:22: system_prompt_file: cannot read"),
            "{err}"
        );
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/sys.md"), "Be brief.").unwrap();
        let prompt = system_prompt(&file, text, dir.path()).unwrap();
        assert_eq!(prompt.as_deref(), Some("Be brief."));
    }

    #[test]
    fn instructions_are_appended_under_their_names() {
        let files = [InstructionFile {
            name: "AGENTS.md".into(),
            sha256: "00".into(),
            text: "Run cargo test.\n".into(),
        }];
        let prompt = with_instructions("You are a coding agent.\n", &files);
        assert!(prompt.starts_with("You are a coding agent.\n\n# Project instructions (AGENTS.md"));
        assert!(prompt.ends_with("Run cargo test."));
    }
}
