//! The plugins embedded in the binary (see `sandbox/build.rs`).

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The bytes of built-in plugin `name`, if this binary carries it.
pub fn builtin(name: &str) -> Option<&'static [u8]> {
    BUILTINS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, bytes, ..)| *bytes)
}

/// Names of the built-ins this binary carries.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(n, ..)| *n).collect()
}

/// The SHA-256 (hex) of `wasm` when it is byte for byte a built-in's, computed when the binary
/// was built: every start loads the built-ins, and hashing them again was a noticeable part of
/// a warm start (docs/scale.md), more on CPUs without SHA extensions. The bytes are
/// compared in full, so nothing else can borrow a built-in's hash.
pub fn builtin_sha256(wasm: &[u8]) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(_, bytes, ..)| *bytes == wasm)
        .map(|(_, _, sha256, _)| *sha256)
}

/// The code and build-time description (JSON, `sandbox::Description`) of the built-in whose
/// bytes are exactly `wasm`, if it was built with one. Compared in full, as for the hash.
pub fn builtin_described(wasm: &[u8]) -> Option<(&'static [u8], &'static str)> {
    BUILTINS
        .iter()
        .find(|(_, bytes, ..)| *bytes == wasm)
        .and_then(|(_, bytes, _, described)| Some((*bytes, (*described)?)))
}

/// The description built-in `name` was built with, as embedded.
pub fn builtin_description(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, ..)| *n == name)
        .and_then(|(.., described)| *described)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtins_recorded_hash_is_its_bytes_hash_and_altered_bytes_get_none() {
        for (name, bytes, sha256, _) in BUILTINS {
            let computed = paddock_types::stamp::sha256_hex(bytes);
            assert_eq!(computed, *sha256, "{name}");
            assert_eq!(builtin_sha256(bytes), Some(*sha256), "{name}");
            let mut altered = bytes.to_vec();
            altered[bytes.len() / 2] ^= 1;
            assert_eq!(builtin_sha256(&altered), None, "{name}");
        }
    }
}
