//! Admin browser sessions and CSRF tokens, stateless so that several
//! instances behind one load balancer accept each other's cookies.
//!
//! A session cookie is `{expires}.{who}.{nonce}.{tag}` where `who` names the
//! admin token that signed in, and tag = HMAC-SHA256 over
//! `session.{expires}.{who}.{nonce}` and a digest of that token, with a key
//! derived from the main admin token: rotating the main token ends every
//! session, rotating or removing a named one ends that holder's. A form's CSRF token is
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
    /// The name of the admin token that signed in.
    pub who: String,
}

/// What a session is bound to: a digest of the token that signed in.
fn token_digest(token: &Secret) -> [u8; 32] {
    Sha256::new()
        .chain_update(b"hookledger session holder v1\0")
        .chain_update(token.expose().as_bytes())
        .finalize()
        .into()
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

    /// A new session cookie value for the admin token `who` (`token`).
    pub fn issue(&self, now: DateTime<Utc>, who: &str, token: &Secret) -> std::io::Result<String> {
        let expires = now.timestamp().saturating_add(self.ttl_secs as i64);
        let nonce = hex::encode(random_bytes::<16>()?);
        let payload = format!("{expires}.{who}.{nonce}");
        let tag = self.tag(&[b"session.", payload.as_bytes(), &token_digest(token)]);
        Ok(format!("{payload}.{tag}"))
    }

    /// The session a cookie holds, if its tag is right for the admin token
    /// it names (`token_of` looks the name up in the config) and it has not
    /// expired.
    pub fn verify<'t>(
        &self,
        cookie: &str,
        now: DateTime<Utc>,
        token_of: impl Fn(&str) -> Option<&'t Secret>,
    ) -> Option<Session> {
        let (payload, tag) = cookie.rsplit_once('.')?;
        let mut parts = payload.splitn(3, '.');
        let (expires, who, nonce) = (parts.next()?, parts.next()?, parts.next()?);
        let token = token_of(who)?;
        if !self.tag_matches(
            &[b"session.", payload.as_bytes(), &token_digest(token)],
            tag,
        ) {
            return None;
        }
        let expires: i64 = expires.parse().ok()?;
        (now.timestamp() < expires).then(|| Session {
            nonce: nonce.to_owned(),
            expires,
            who: who.to_owned(),
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

    fn admin() -> Secret {
        Secret::new("token-aaaaaaaaaaaaaaaa")
    }

    fn support() -> Secret {
        Secret::new("support-token-cccccccc")
    }

    /// Looks names up as a config with `admin` and `support` would.
    fn verify(keys: &SessionKeys, cookie: &str, now: DateTime<Utc>) -> Option<Session> {
        let (admin, support) = (admin(), support());
        keys.verify(cookie, now, |who| match who {
            "admin" => Some(&admin),
            "support" => Some(&support),
            _ => None,
        })
    }

    #[test]
    fn sessions_verify_until_they_expire() {
        let now = Utc::now();
        let keys = keys("token-aaaaaaaaaaaaaaaa");
        let cookie = keys.issue(now, "support", &support()).unwrap();
        assert_eq!(verify(&keys, &cookie, now).unwrap().who, "support");
        assert!(verify(&keys, &cookie, now + chrono::TimeDelta::seconds(3601)).is_none());
    }

    #[test]
    fn forged_or_foreign_sessions_are_refused() {
        let now = Utc::now();
        let cookie = keys("token-aaaaaaaaaaaaaaaa")
            .issue(now, "support", &support())
            .unwrap();
        // Another main token: every session ends.
        assert!(verify(&keys("token-bbbbbbbbbbbbbbbb"), &cookie, now).is_none());
        let keys = keys("token-aaaaaaaaaaaaaaaa");
        // The holder's token rotated: that holder's sessions end.
        let rotated = Secret::new("support-token-dddddddd");
        assert!(keys.verify(&cookie, now, |_| Some(&rotated)).is_none());
        // Another name on the same tag: refused (the read-only holder
        // cannot become `admin`).
        let promoted = cookie.replacen(".support.", ".admin.", 1);
        assert!(verify(&keys, &promoted, now).is_none());
        let (payload, _) = cookie.rsplit_once('.').unwrap();
        let extended = format!(
            "{}{}.{}",
            now.timestamp() + 999_999,
            &payload[payload.find('.').unwrap()..],
            "00".repeat(32)
        );
        assert!(verify(&keys, &extended, now).is_none());
        assert!(verify(&keys, "garbage", now).is_none());
        assert!(verify(&keys, "1.nobody.x.00", now).is_none());
    }

    #[test]
    fn csrf_tokens_are_bound_to_the_session() {
        let now = Utc::now();
        let keys = keys("token-aaaaaaaaaaaaaaaa");
        let a = verify(&keys, &keys.issue(now, "admin", &admin()).unwrap(), now).unwrap();
        let b = verify(&keys, &keys.issue(now, "admin", &admin()).unwrap(), now).unwrap();
        let token = keys.csrf_token(&a);
        assert!(keys.check_csrf(&a, &token));
        assert!(!keys.check_csrf(&b, &token));
        assert!(!keys.check_csrf(&a, ""));
    }
}
