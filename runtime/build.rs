//! Embeds the built-in plugins (`plugins/fs`, `plugins/search`, `plugins/shell`,
//! `plugins/fetch`) and example hooks (`plugins/hooks/*`) into the binary when they have been
//! built (`cargo xtask build-plugins`). Without them the binary still builds, and
//! `builtin:NAME` answers with how to build them. Each built-in's SHA-256 is computed here,
//! once, rather than on every start (`plugin_store::builtin_sha256`), and its description
//! (`plugins/described/NAME.json`: imports and tools, `sandbox/wasm/described.rs`) is embedded
//! beside it when there is one, so a first run need not compile it before the first request.

use std::fmt::Write as _;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

const BUILTINS: &[&str] = &[
    "fs",
    "search",
    "shell",
    "fetch",
    "protect-paths",
    "redact-secrets",
    "audit",
];

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = manifest.join("../plugins/target/wasm32-wasip2/release");
    let mut code = String::from(
        "/// Built-in plugins embedded at build time: (name, component bytes, SHA-256 in hex,\n/// description as JSON).\npub static BUILTINS: &[(&str, &[u8], &str, Option<&str>)] = &[\n",
    );
    for name in BUILTINS {
        // Cargo names a crate's artifact with underscores.
        let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
        println!("cargo:rerun-if-changed={}", path.display());
        match path.canonicalize() {
            Ok(path) => {
                let bytes = std::fs::read(&path).expect("a built plugin is readable");
                let described = manifest.join(format!("../plugins/described/{name}.json"));
                println!("cargo:rerun-if-changed={}", described.display());
                let described = match described.canonicalize() {
                    Ok(file) => format!("Some(include_str!({:?}))", file.display().to_string()),
                    Err(_) => "None".to_string(),
                };
                let sha256: String = Sha256::digest(&bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                writeln!(
                    code,
                    "    ({name:?}, include_bytes!({:?}), {sha256:?}, {described}),",
                    path.display().to_string()
                )
                .unwrap()
            }
            Err(_) => println!(
                "cargo:warning=built-in plugin `{name}` is not built; run `cargo xtask build-plugins`"
            ),
        }
    }
    code.push_str("];\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtins.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
