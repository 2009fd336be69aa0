//! The name of a stored object: the SHA-256 of its bytes, written as lowercase hex.

use std::fmt;

use sha2::{Digest, Sha256};

/// SHA-256 of an object's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Hash {
        Hash(Sha256::digest(bytes).into())
    }

    /// Parses 64 lowercase hex digits; `None` for anything else.
    pub fn parse(hex: &str) -> Option<Hash> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
        }
        Some(Hash(out))
    }
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_what_is_not_a_hash() {
        let h = Hash::of(b"abc");
        assert_eq!(Hash::parse(&h.to_string()), Some(h));
        assert_eq!(Hash::parse("AB"), None);
        assert_eq!(Hash::parse(&"G".repeat(64)), None);
        assert_eq!(Hash::parse(&h.to_string().to_uppercase()), None);
    }
}
