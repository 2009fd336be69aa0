//! The `paddock` binary in a scratch data directory and working directory, for the CLI tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let sandbox = Sandbox {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        };
        std::fs::write(sandbox.work.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        sandbox
    }

    pub fn paddock(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_paddock"))
            .args(args)
            .current_dir(self.work.path())
            .env("PADDOCK_HOME", self.home.path())
            .env("NO_COLOR", "1")
            // Presets in the user's own config directory must not leak into the tests.
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .output()
            .expect("paddock runs")
    }

    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.paddock(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "not one JSON object ({e}): {stdout:?} {:?}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), value)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }
}

pub fn attacks_wasm() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/hostile_attacks.wasm")
}
