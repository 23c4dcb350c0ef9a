//! Admin browser sessions and CSRF tokens, stateless so that several
//! instances behind one load balancer accept each other's cookies.
//!
//! A session cookie is `{expires}.{nonce}.{tag}` where tag = HMAC-SHA256 over
//! `session.{expires}.{nonce}` with a key derived from the admin token, so
//! rotating the token ends every session. A form's CSRF token is
//! HMAC-SHA256 over `csrf.{nonce}`: bound to the session, unguessable cross-site.
//! Tags are checked with `verify_slice` (constant time), through the same
//! HMAC helper the providers use.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::config::random_bytes;
use crate::providers::hmac_sha256;
use crate::secret::{KeyBytes, Secret};

pub struct SessionKeys {
    key: KeyBytes,
    ttl_secs: u64,
}

/// A verified session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    nonce: String,
    pub expires: i64,
}

impl SessionKeys {
    pub fn new(admin_token: &Secret, ttl_secs: u64) -> Self {
        let key = Sha256::new()
            .chain_update(b"hookledger admin session key v1\0")
            .chain_update(admin_token.expose().as_bytes())
            .finalize();
        Self {
            key: KeyBytes::new(key.to_vec()),
            ttl_secs,
        }
    }

    pub fn ttl_secs(&self) -> u64 {
        self.ttl_secs
    }

    fn tag(&self, parts: &[&[u8]]) -> String {
        hex::encode(hmac_sha256::sign(&self.key, parts))
    }

    /// Constant-time check of a presented hex tag over `parts`.
    fn tag_matches(&self, parts: &[&[u8]], presented: &str) -> bool {
        hex::decode(presented).is_ok_and(|tag| {
            hmac_sha256::find_matching_key(std::slice::from_ref(&self.key), parts, &[tag]).is_some()
        })
    }

    /// A new session cookie value.
    pub fn issue(&self, now: DateTime<Utc>) -> std::io::Result<String> {
        let expires = now.timestamp().saturating_add(self.ttl_secs as i64);
        let nonce = hex::encode(random_bytes::<16>()?);
        let payload = format!("{expires}.{nonce}");
        let tag = self.tag(&[b"session.", payload.as_bytes()]);
        Ok(format!("{payload}.{tag}"))
    }

    pub fn verify(&self, cookie: &str, now: DateTime<Utc>) -> Option<Session> {
        let (payload, tag) = cookie.rsplit_once('.')?;
        let (expires, nonce) = payload.split_once('.')?;
        if !self.tag_matches(&[b"session.", payload.as_bytes()], tag) {
            return None;
        }
        let expires: i64 = expires.parse().ok()?;
        (now.timestamp() < expires).then(|| Session {
            nonce: nonce.to_owned(),
            expires,
        })
    }

    pub fn csrf_token(&self, session: &Session) -> String {
        self.tag(&[b"csrf.", session.nonce.as_bytes()])
    }

    pub fn check_csrf(&self, session: &Session, presented: &str) -> bool {
        self.tag_matches(&[b"csrf.", session.nonce.as_bytes()], presented)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(token: &str) -> SessionKeys {
        SessionKeys::new(&Secret::new(token), 3600)
    }

    #[test]
    fn sessions_verify_until_they_expire() {
        let now = Utc::now();
        let keys = keys("token-aaaaaaaaaaaaaaaa");
        let cookie = keys.issue(now).unwrap();
        assert!(keys.verify(&cookie, now).is_some());
        assert!(
            keys.verify(&cookie, now + chrono::TimeDelta::seconds(3601))
                .is_none()
        );
    }

    #[test]
    fn forged_or_foreign_sessions_are_refused() {
        let now = Utc::now();
        let cookie = keys("token-aaaaaaaaaaaaaaaa").issue(now).unwrap();
        assert!(
            keys("token-bbbbbbbbbbbbbbbb")
                .verify(&cookie, now)
                .is_none()
        );
        let (payload, _) = cookie.rsplit_once('.').unwrap();
        let (_, nonce) = payload.split_once('.').unwrap();
        let extended = format!("{}.{nonce}.{}", now.timestamp() + 999_999, "00".repeat(32));
        assert!(
            keys("token-aaaaaaaaaaaaaaaa")
                .verify(&extended, now)
                .is_none()
        );
        assert!(
            keys("token-aaaaaaaaaaaaaaaa")
                .verify("garbage", now)
                .is_none()
        );
    }

    #[test]
    fn csrf_tokens_are_bound_to_the_session() {
        let now = Utc::now();
        let keys = keys("token-aaaaaaaaaaaaaaaa");
        let a = keys.verify(&keys.issue(now).unwrap(), now).unwrap();
        let b = keys.verify(&keys.issue(now).unwrap(), now).unwrap();
        let token = keys.csrf_token(&a);
        assert!(keys.check_csrf(&a, &token));
        assert!(!keys.check_csrf(&b, &token));
        assert!(!keys.check_csrf(&a, ""));
    }
}
