//! Embeds the built-in plugins (`plugins/fs`, `plugins/search`, `plugins/shell`,
//! `plugins/fetch`) and example hooks (`plugins/hooks/*`) into the binary. When any of them is
//! not built yet (a fresh clone, `cargo install --path cli`), this script builds them
//! first (these packages only), with the same cargo, for `wasm32-wasip2` into
//! `plugins/target` (what `cargo xtask build-plugins` does for these packages); when that
//! cannot work (the target is not installed) the build fails with the commands that fix it.
//! A binary without its built-ins is never the quiet result. Each built-in's SHA-256 is
//! computed here, once, rather than on every start (`builtin::builtin_sha256`), and its
//! description
//! (`plugins/described/NAME.json`: imports and tools, `src/wasm/described.rs`) is embedded
//! beside it when there is one, so a first run need not compile it before the first request.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let plugins = manifest.join("../plugins");
    let builtins = builtins(&plugins);
    let dir = plugins.join("target").join(WASM_TARGET).join("release");
    let artifact = |name: &str| dir.join(format!("{}.wasm", name.replace('-', "_")));
    let missing: Vec<&str> = builtins
        .iter()
        .map(String::as_str)
        .filter(|name| !artifact(name).exists())
        .collect();
    if !missing.is_empty() {
        build_builtins(&plugins, &builtins, &missing);
    }
    let mut code = String::from(
        "/// Built-in plugins embedded at build time: (name, component bytes, SHA-256 in hex,\n/// description as JSON).\npub static BUILTINS: &[(&str, &[u8], &str, Option<&str>)] = &[\n",
    );
    for name in &builtins {
        // Cargo names a crate's artifact with underscores.
        let path = artifact(name);
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
            Err(e) => panic!(
                "the built-in plugin `{name}` is missing after building it ({}: {e}); run \
                 `cargo xtask build-plugins` and build again",
                path.display()
            ),
        }
    }
    code.push_str("];\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtins.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}

const WASM_TARGET: &str = "wasm32-wasip2";

/// What the user runs when building the plugins here cannot work.
const FIX: &str = "install the WebAssembly target and build the plugins, then build again: \
`rustup target add wasm32-wasip2 && cargo xtask build-plugins`";

/// The plugins to embed, by package name, from `plugins/builtins.txt` (the list `cargo xtask
/// demo` builds too).
fn builtins(plugins: &Path) -> Vec<String> {
    let list = plugins.join("builtins.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let text = std::fs::read_to_string(&list)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", list.display()));
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Builds the embedded plugins with the cargo that runs this script, sharing its job tokens,
/// as `cargo xtask demo` builds them. The other members of the plugins' workspace enable no
/// feature of a dependency the built-ins share (`cargo tree -e features` is the same for the
/// built-ins alone and for `--workspace`), so these bytes are those `cargo xtask
/// build-plugins` makes. Nothing of this build's own environment leaks in: the inner build is
/// for another target, in its own workspace and target directory, so the variables cargo sets
/// for this script (`CARGO_CFG_*`, `TARGET`, flags, features) would describe the wrong build.
fn build_builtins(plugins: &Path, builtins: &[String], missing: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(plugins)
        .args(["build", "--release", "--target", WASM_TARGET]);
    // Only the plugins embedded here: the test and example ones are `cargo xtask
    // build-plugins`' job, and building them too would make a first build longer.
    for name in builtins {
        build.args(["-p", name]);
    }
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = [
            "CARGO_CFG_",
            "CARGO_FEATURE_",
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "DEP_",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
            || [
                "RUSTFLAGS",
                "CARGO_ENCODED_RUSTFLAGS",
                "CARGO_BUILD_TARGET",
                "CARGO_TARGET_DIR",
                "TARGET",
                "HOST",
                "OUT_DIR",
                "OPT_LEVEL",
                "PROFILE",
                "DEBUG",
                "RUSTC_LINKER",
            ]
            .contains(&key);
        if leaks {
            build.env_remove(key);
        }
    }
    build.env("CARGO_TARGET_DIR", plugins.join("target"));
    println!(
        "cargo:warning=building the built-in plugins ({}) for {WASM_TARGET}: they are embedded \
         in the binary",
        missing.join(", ")
    );
    match build.status() {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "building the built-in plugins for {WASM_TARGET} failed ({status}; its errors are \
             above); {FIX}"
        ),
        Err(e) => panic!("cannot run cargo to build the built-in plugins ({e}); {FIX}"),
    }
}
