//! HMAC-SHA256 shared by the providers (and admin sessions): sign, and verify any of several
//! presented signatures against any of several keys in constant time.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::secret::KeyBytes;

type HmacSha256 = Hmac<Sha256>;

fn mac_over(key: &KeyBytes, parts: &[&[u8]]) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(key.expose()).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac
}

/// The raw tag over the concatenation of `parts`.
pub(crate) fn sign(key: &KeyBytes, parts: &[&[u8]]) -> Vec<u8> {
    mac_over(key, parts).finalize().into_bytes().to_vec()
}

/// Index of the first key for which any candidate tag verifies. The message
/// is hashed once per key; each candidate is then checked on a clone of the
/// keyed state with `verify_slice`, which compares in constant time.
pub(crate) fn find_matching_key(
    keys: &[KeyBytes],
    parts: &[&[u8]],
    candidates: &[Vec<u8>],
) -> Option<usize> {
    keys.iter().position(|key| {
        let mac = mac_over(key, parts);
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
