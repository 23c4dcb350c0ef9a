//! HMAC shared by the providers (and admin sessions): sign, and verify any
//! of several presented signatures against any of several keys in constant
//! time. One generic implementation serves every hash; SHA-256 (most
//! providers, admin sessions) has the short names, SHA-512 (Paystack) the
//! `_with::<HmacSha512>` forms.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Sha256, Sha512};

use crate::secret::KeyBytes;

pub(crate) type HmacSha256 = Hmac<Sha256>;
pub(crate) type HmacSha512 = Hmac<Sha512>;

fn mac_over<M: Mac + KeyInit>(key: &KeyBytes, parts: &[&[u8]]) -> M {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac =
        <M as KeyInit>::new_from_slice(key.expose()).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac
}

/// The raw HMAC-SHA256 tag over the concatenation of `parts`.
pub(crate) fn sign(key: &KeyBytes, parts: &[&[u8]]) -> Vec<u8> {
    sign_with::<HmacSha256>(key, parts)
}

/// The raw tag of MAC `M` over the concatenation of `parts`.
pub(crate) fn sign_with<M: Mac + KeyInit>(key: &KeyBytes, parts: &[&[u8]]) -> Vec<u8> {
    mac_over::<M>(key, parts).finalize().into_bytes().to_vec()
}

/// [`find_matching_key_with`] for HMAC-SHA256.
pub(crate) fn find_matching_key(
    keys: &[KeyBytes],
    parts: &[&[u8]],
    candidates: &[Vec<u8>],
) -> Option<usize> {
    find_matching_key_with::<HmacSha256>(keys, parts, candidates)
}

/// Index of the first key for which any candidate tag verifies. The message
/// is hashed once per key; each candidate is then checked on a clone of the
/// keyed state with `verify_slice`, which compares in constant time.
pub(crate) fn find_matching_key_with<M: Mac + KeyInit + Clone>(
    keys: &[KeyBytes],
    parts: &[&[u8]],
    candidates: &[Vec<u8>],
) -> Option<usize> {
    keys.iter().position(|key| {
        let mac = mac_over::<M>(key, parts);
        candidates
            .iter()
            .any(|tag| mac.clone().verify_slice(tag).is_ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        // RFC 4231 section 4.3: key "Jefe", data "what do ya want for nothing?".
        let tag = sign(
            &KeyBytes::new(b"Jefe".to_vec()),
            &[b"what do ya want ", b"for nothing?"],
        );
        assert_eq!(
            hex::encode(tag),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn rfc4231_case_2_sha512() {
        // The same RFC 4231 case, HMAC-SHA-512 (Paystack's hash).
        let tag = sign_with::<HmacSha512>(
            &KeyBytes::new(b"Jefe".to_vec()),
            &[b"what do ya want for nothing?"],
        );
        assert_eq!(
            hex::encode(&tag),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
        let keys = [KeyBytes::new(b"Jefe".to_vec())];
        let message: &[&[u8]] = &[b"what do ya want for nothing?"];
        assert_eq!(
            find_matching_key_with::<HmacSha512>(&keys, message, std::slice::from_ref(&tag)),
            Some(0)
        );
        assert_eq!(
            find_matching_key(&keys, message, &[tag]),
            None,
            "not SHA-256"
        );
    }

    #[test]
    fn finds_the_key_that_matches_any_candidate() {
        let keys = [
            KeyBytes::new(b"old".to_vec()),
            KeyBytes::new(b"new".to_vec()),
        ];
        let tag = sign(&keys[1], &[b"msg"]);
        let mut truncated = tag.clone();
        truncated.pop();
        assert_eq!(
            find_matching_key(&keys, &[b"msg"], &[vec![0; 32], tag.clone()]),
            Some(1)
        );
        assert_eq!(find_matching_key(&keys, &[b"msg!"], &[tag]), None);
        assert_eq!(find_matching_key(&keys, &[b"msg"], &[truncated]), None);
        assert_eq!(find_matching_key(&keys, &[b"msg"], &[]), None);
    }
}
