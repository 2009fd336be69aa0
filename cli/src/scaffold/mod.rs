//! `paddock plugin new`: a standalone plugin or hook project in a new directory, built with its
//! language's ordinary command and no path into this repository. The WIT is written into the
//! project; a Rust project depends on `paddock-sdk` by version, and while that crate is not on
//! crates.io its `[patch.crates-io]` points at the SDK source this binary carries, written
//! once into the data directory (`sdk/paddock-sdk-VERSION`).
//!
//! What it does not do: build, install or run anything.

mod embedded;

use std::path::{Path, PathBuf};

pub use embedded::SDK_VERSION;

/// The language of the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Js,
    Python,
}

/// A tool plugin (world `tool-plugin`) or a hook (world `configured-hook`: `hook` plus its
/// `config` schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Hook,
}

/// What to create.
#[derive(Debug, Clone)]
pub struct Request {
    pub name: String,
    pub kind: Kind,
    pub lang: Lang,
    /// The new project's directory; it must not exist yet (or be empty).
    pub dir: PathBuf,
    /// paddock's data directory, where the Rust SDK's source is written.
    pub data_dir: PathBuf,
}

/// What was created, and the commands that build, install and try it.
#[derive(Debug, Clone)]
pub struct Created {
    pub dir: PathBuf,
    /// Where the Rust SDK's source was written (Rust projects).
    pub sdk: Option<PathBuf>,
    pub commands: Vec<String>,
}

/// Why nothing (or not everything) was written; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(
        "`{0}` is not a usable plugin name; start with a letter, then letters, digits, `-` or `_` (at most 64), e.g. `word-count`"
    )]
    BadName(String),
    #[error("{0} already exists and is not empty; choose another name or --dir")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn valid_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Writes the project. Nothing is written when the name or directory is unusable.
pub fn create(request: &Request) -> Result<Created, ScaffoldError> {
    let Request {
        name,
        kind,
        lang,
        dir,
        data_dir,
    } = request;
    if !valid_name(name) {
        return Err(ScaffoldError::BadName(name.clone()));
    }
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(ScaffoldError::Exists(dir.clone()));
    }
    // Cargo names the component after the crate with `-` as `_`; the others follow suit, so
    // the installed name (the file name) is the same in every language.
    let file = name.replace('-', "_");
    let sdk = (*lang == Lang::Rust)
        .then(|| write_sdk(data_dir))
        .transpose()?;
    let sdk_path = sdk.as_deref().map(toml_path).unwrap_or_default();
    let (what, world) = kind.describe();
    let js_entry = match kind {
        Kind::Tool => "tool.js",
        Kind::Hook => "hook.js",
    };
    let fill = |template: &str| {
        template
            .replace("{{what}}", what)
            .replace("{{world}}", world)
            .replace("{{js_entry}}", js_entry)
            .replace("{{name}}", name)
            .replace("{{file}}", &file)
            .replace("{{tool}}", &file)
            .replace("{{sdk_path}}", &sdk_path)
    };
    for (path, text) in embedded::WIT {
        write(&dir.join("wit").join(path), text)?;
    }
    let readme = readme(*kind, *lang, &file);
    write(&dir.join("README.md"), &fill(&readme.text))?;
    for (path, template) in files(*kind, *lang) {
        write(&dir.join(path), &fill(&template))?;
    }
    let commands = readme.commands.iter().map(|c| fill(c)).collect();
    Ok(Created {
        dir: dir.clone(),
        sdk,
        commands,
    })
}

impl Kind {
    /// What it is called in prose, and the WIT world it implements.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Kind::Tool => ("tool plugin", "tool-plugin"),
            Kind::Hook => ("hook", "configured-hook"),
        }
    }
}

/// The example tools in `plugins/examples` are the JavaScript and Python tool templates: one
/// source, their tool name replaced by the project's (a test checks that `plugin new` with the
/// example's name writes the example byte for byte).
pub const JS_EXAMPLE: (&str, &str) = (
    "text_stats",
    include_str!("../../../plugins/examples/js-text-stats/tool.js"),
);
pub const PY_EXAMPLE: (&str, &str) = (
    "word_freq",
    include_str!("../../../plugins/examples/py-word-freq/app.py"),
);

/// The model script a tool project is driven through the loop with (docs/model-script.md).
const MODEL_SCRIPT: &str = include_str!("templates/model-script.toml");

fn from_example((tool, text): (&str, &str)) -> String {
    text.replace(tool, "{{tool}}")
}

/// The project's files (besides `wit/` and the README), as templates.
fn files(kind: Kind, lang: Lang) -> Vec<(&'static str, String)> {
    const GITIGNORE: &str = "target/\nnode_modules/\n.venv/\n*.wasm\n__pycache__/\n";
    let mut files = vec![(".gitignore", GITIGNORE)];
    let example = match (kind, lang) {
        (Kind::Tool, Lang::Js) => Some(("src/tool.js", from_example(JS_EXAMPLE))),
        (Kind::Tool, Lang::Python) => Some(("app.py", from_example(PY_EXAMPLE))),
        _ => None,
    };
    files.extend(match (kind, lang) {
        (Kind::Tool, Lang::Rust) => vec![
            ("Cargo.toml", include_str!("templates/rust-Cargo.toml")),
            (
                ".cargo/config.toml",
                include_str!("templates/cargo-config.toml"),
            ),
            ("src/lib.rs", include_str!("templates/rust-tool.rs")),
            ("preset.toml", include_str!("templates/preset-tool.toml")),
            ("model-script.toml", MODEL_SCRIPT),
        ],
        (Kind::Hook, Lang::Rust) => vec![
            ("Cargo.toml", include_str!("templates/rust-Cargo.toml")),
            (
                ".cargo/config.toml",
                include_str!("templates/cargo-config.toml"),
            ),
            ("src/lib.rs", include_str!("templates/rust-hook.rs")),
            ("preset.toml", include_str!("templates/preset-hook.toml")),
        ],
        (Kind::Tool, Lang::Js) => vec![
            ("package.json", include_str!("templates/js-package.json")),
            ("preset.toml", include_str!("templates/preset-text.toml")),
            ("model-script.toml", MODEL_SCRIPT),
        ],
        (Kind::Hook, Lang::Js) => vec![
            ("package.json", include_str!("templates/js-package.json")),
            ("src/hook.js", include_str!("templates/js-hook.js")),
            ("preset.toml", include_str!("templates/preset-hook.toml")),
        ],
        (Kind::Tool, Lang::Python) => vec![
            (
                "requirements.txt",
                include_str!("templates/py-requirements.txt"),
            ),
            ("preset.toml", include_str!("templates/preset-text.toml")),
            ("model-script.toml", MODEL_SCRIPT),
        ],
        (Kind::Hook, Lang::Python) => vec![
            (
                "requirements.txt",
                include_str!("templates/py-requirements.txt"),
            ),
            ("app.py", include_str!("templates/py-hook.py")),
            ("preset.toml", include_str!("templates/preset-hook.toml")),
        ],
    });
    // The Rust template's tool takes a `path`, the JavaScript and Python ones a `text`.
    let args = match lang {
        Lang::Rust => r#"{ path = "README.md" }"#,
        Lang::Js | Lang::Python => r#"{ text = "{{task}}" }"#,
    };
    let mut files: Vec<(&'static str, String)> = files
        .into_iter()
        .map(|(path, text)| (path, text.replace("{{args}}", args)))
        .collect();
    files.extend(example);
    files
}

/// A tool project's README section that drives the tool through the loop with its model
/// script: the model's side scripted, everything else real.
const LOOP: &str = r#"## Drive it through the loop

`model-script.toml` is a scripted model: it calls `{{tool}}` once, then repeats what the tool
answered. `paddock run` plays it instead of a model server (no key, no network), so the call
goes through repair, validation, hooks and the sandbox like a model's would, and is logged:

```sh
paddock run --model-script model-script.toml "two words two" --preset ./preset.toml
paddock log SESSION      # the session id `paddock run` printed last; --list shows them all
```

Edit its turns to try other arguments, a sloppy call (`raw = '...'` sends argument text as is)
or several calls in one response; the format is docs/model-script.md in paddock's repository.

"#;

struct Readme {
    text: String,
    /// Setup (if any), build, install, try: in the order the README gives them.
    commands: Vec<String>,
}

fn readme(kind: Kind, lang: Lang, file: &str) -> Readme {
    let (what, world) = kind.describe();
    let (lang_name, toolchain, setup, build, wasm) = match lang {
        Lang::Rust => (
            "Rust",
            "cargo (`rustup target add wasm32-wasip2` once)",
            None,
            "cargo build --release",
            format!("target/wasm32-wasip2/release/{file}.wasm"),
        ),
        Lang::Js => (
            "JavaScript",
            "npm and componentize-js (from npm)",
            Some("npm install"),
            "npm run build",
            format!("{file}.wasm"),
        ),
        Lang::Python => (
            "Python",
            "componentize-py (from PyPI)",
            Some("python3 -m venv .venv && .venv/bin/pip install -r requirements.txt"),
            ".venv/bin/componentize-py -d wit -w {{world}} componentize app -o {{file}}.wasm",
            format!("{file}.wasm"),
        ),
    };
    let try_it = match (kind, lang) {
        (Kind::Hook, _) => {
            r#"echo hi > secret.txt && paddock tool call read_file '{"path": "secret.txt"}' --preset ./preset.toml"#
        }
        (Kind::Tool, Lang::Rust) => {
            r#"paddock tool call {{tool}} '{"path": "README.md"}' --preset ./preset.toml"#
        }
        (Kind::Tool, _) => {
            r#"paddock tool call {{tool}} '{"text": "one two two"}' --preset ./preset.toml"#
        }
    };
    let notes = match (kind, lang) {
        (Kind::Hook, Lang::Rust) => {
            "A hook's `allow` never overrides the preset's approval, and its rewritten \
             arguments are validated again."
        }
        (Kind::Hook, _) => {
            "A hook's `allow` never overrides the preset's approval, and its rewritten \
             arguments are validated again. A hook that throws fails its call as the \
             preset's `on_error` says (deny, by default)."
        }
        (_, Lang::Rust) => "",
        (_, Lang::Js) => {
            "The build disables the JavaScript runtime's WASI features (stdio, clocks, \
             random, http), so the component imports only paddock's interfaces."
        }
        (_, Lang::Python) => {
            "componentize-py bundles only the standard-library modules it sees imported: \
             import what you use at the top of `app.py`."
        }
    };
    let install = format!("paddock plugin install {wasm}");
    let mut commands: Vec<String> = setup.map(str::to_string).into_iter().collect();
    commands.extend([build.to_string(), install, try_it.to_string()]);
    let text = include_str!("templates/README.md")
        .replace("{{what}}", what)
        .replace("{{lang}}", lang_name)
        .replace("{{toolchain}}", toolchain)
        .replace("{{world}}", world)
        .replace(
            "{{setup}}",
            &setup.map(|s| format!("{s}\n")).unwrap_or_default(),
        )
        .replace("{{build}}", &build.replace("{{world}}", world))
        .replace("{{wasm}}", &wasm)
        .replace("{{try}}", try_it)
        .replace("{{loop}}", if kind == Kind::Tool { LOOP } else { "" })
        .replace("{{notes}}", notes);
    Readme { text, commands }
}

/// Writes the Rust SDK's source into the data directory (when it differs) and returns its
/// directory: the local stand-in for the crates.io package.
pub fn write_sdk(data_dir: &Path) -> Result<PathBuf, ScaffoldError> {
    let dir = data_dir
        .join("sdk")
        .join(format!("paddock-sdk-{SDK_VERSION}"));
    for (path, text) in embedded::SDK {
        write_if_changed(&dir.join(path), text)?;
    }
    for (path, text) in embedded::WIT {
        write_if_changed(&dir.join("wit").join(path), text)?;
    }
    Ok(dir)
}

/// A path as a TOML basic string's content.
fn toml_path(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), ScaffoldError> {
    match std::fs::read_to_string(path) {
        Ok(old) if old == text => Ok(()),
        _ => write(path, text),
    }
}

fn write(path: &Path, text: &str) -> Result<(), ScaffoldError> {
    let fail = |source| ScaffoldError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}

#[cfg(test)]
mod tests;
