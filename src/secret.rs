//! Secret material. Both types redact themselves in `Debug` and `Display`, so
//! a secret cannot reach a log line, an error message or a page by accident.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A configured secret string (webhook signing secret, admin token).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The only way to read the value; grep for it to audit every use.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares with a presented value in time independent of where they
    /// differ (`subtle`), so the admin token cannot be guessed byte by byte.
    pub fn matches(&self, presented: &str) -> bool {
        // Lengths may differ; ct_eq handles that and leaks only the length,
        // which is not secret (tokens are generated at a fixed length).
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

impl Secret {
    /// [`Secret::matches`] over SHA-256 digests: both sides the same
    /// length whatever was presented, so even the secret's length stays
    /// unsaid.
    pub fn matches_digest_of(&self, presented: &str) -> bool {
        let mine = Sha256::digest(self.0.as_bytes());
        let theirs = Sha256::digest(presented.as_bytes());
        mine.as_slice().ct_eq(theirs.as_slice()).into()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Key bytes derived from a [`Secret`] by a provider (UTF-8 bytes for Stripe,
/// base64-decoded for Standard Webhooks).
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes(Vec<u8>);

impl KeyBytes {
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyBytes(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let secret = Secret::new("whsec_topsecret");
        assert!(!format!("{secret:?} {secret}").contains("topsecret"));
        let key = KeyBytes::new(b"topsecret".to_vec());
        assert!(!format!("{key:?}").contains("topsecret"));
    }

    #[test]
    fn matches_only_the_exact_value() {
        let secret = Secret::new("token-123");
        assert!(secret.matches("token-123"));
        assert!(!secret.matches("token-124"));
        assert!(!secret.matches("token-12"));
        assert!(!secret.matches(""));
    }
}
