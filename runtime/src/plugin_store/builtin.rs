//! The plugins embedded in the binary (see `runtime/build.rs`).

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The bytes of built-in plugin `name`, if this binary carries it.
pub fn builtin(name: &str) -> Option<&'static [u8]> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
}

/// Names of the built-ins this binary carries.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(n, _)| *n).collect()
}
