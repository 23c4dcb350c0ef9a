//! A signature that is one HMAC tag in one header, hex or base64, over the
//! raw body (after other signed bytes where the kind has them, such as
//! Square's notification URL), with no signed time. Most kinds sign this
//! way and differ only in the header, the encoding, the hash, an optional
//! `sha256=`-style prefix and the problem they name for a bad header.

use std::marker::PhantomData;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};

use super::delivery::Delivery;
use super::hmac_sha256::{self, HmacSha256};
use super::verification::{Verified, VerifyError};
use crate::secret::KeyBytes;

/// How a tag is written as text. Also `generic-hmac`'s `encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Base64,
}

impl Encoding {
    pub(crate) fn encode(self, tag: &[u8]) -> String {
        match self {
            Encoding::Hex => hex::encode(tag),
            Encoding::Base64 => STANDARD.encode(tag),
        }
    }

    /// The tag's bytes, if `text` is written this way.
    pub(crate) fn decode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Encoding::Hex => hex::decode(text).ok(),
            Encoding::Base64 => STANDARD.decode(text).ok(),
        }
    }
}

/// One kind's signature header, tagged with MAC `M`. The MAC is part of the
/// description so that a kind cannot verify with one hash and sign with
/// another.
pub(super) struct HeaderTag<M = HmacSha256> {
    header: &'static str,
    encoding: Encoding,
    /// The problem named when the header holds no readable tag; each kind
    /// keeps its own wording.
    malformed: &'static str,
    /// Written before the tag when signing; optional when verifying.
    prefix: &'static str,
    /// Whether the header may hold several comma-separated tags (a repeated
    /// header folded by a proxy while a secret rotates).
    folded: bool,
    mac: PhantomData<fn() -> M>,
}

impl<M> HeaderTag<M> {
    pub(super) const fn new(
        header: &'static str,
        encoding: Encoding,
        malformed: &'static str,
    ) -> Self {
        Self {
            header,
            encoding,
            malformed,
            prefix: "",
            folded: false,
            mac: PhantomData,
        }
    }

    /// A prefix such as `sha256=`: signed with it, accepted without it.
    pub(super) const fn with_prefix(mut self, prefix: &'static str) -> Self {
        self.prefix = prefix;
        self
    }

    /// Several comma-separated tags are accepted, and any may match; items
    /// that do not decode cannot match and are skipped.
    pub(super) const fn folded(mut self) -> Self {
        self.folded = true;
        self
    }
}

impl<M: Mac + KeyInit + Clone> HeaderTag<M> {
    /// Checks the header's tag(s) over the concatenation of `signed`
    /// against every key (rotation), in constant time.
    pub(super) fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        signed: &[&[u8]],
    ) -> Result<Verified, VerifyError> {
        let presented = self.presented(delivery)?;
        self.matching(keys, signed, &presented)
    }

    /// The tags in the header, decoded: missing and malformed headers are
    /// refused here, before anything is hashed.
    pub(super) fn presented(&self, delivery: &Delivery<'_>) -> Result<Vec<Vec<u8>>, VerifyError> {
        let value = delivery.required(self.header)?;
        let items: Vec<&str> = if self.folded {
            value.split(',').map(str::trim).collect()
        } else {
            vec![value]
        };
        let tags: Vec<Vec<u8>> = items
            .into_iter()
            .filter_map(|item| {
                self.encoding
                    .decode(item.strip_prefix(self.prefix).unwrap_or(item))
            })
            .collect();
        if tags.is_empty() {
            return Err(VerifyError::MalformedHeader {
                header: self.header,
                problem: self.malformed,
            });
        }
        Ok(tags)
    }

    /// Which key made any of the `presented` tags over `signed`.
    pub(super) fn matching(
        &self,
        keys: &[KeyBytes],
        signed: &[&[u8]],
        presented: &[Vec<u8>],
    ) -> Result<Verified, VerifyError> {
        let key_index = hmac_sha256::find_matching_key_with::<M>(keys, signed, presented)
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp: None,
            event_id: None,
        })
    }

    /// The header, and its value for `signed` under `key`.
    pub(super) fn sign(&self, key: &KeyBytes, signed: &[&[u8]]) -> (&'static str, String) {
        let tag = hmac_sha256::sign_with::<M>(key, signed);
        (
            self.header,
            format!("{}{}", self.prefix, self.encoding.encode(&tag)),
        )
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;
    use crate::providers::HeaderPairs;
    use crate::providers::hmac_sha256::HmacSha512;

    const PLAIN: HeaderTag = HeaderTag::new("x-sig", Encoding::Hex, "not hex");
    const PREFIXED: HeaderTag = HeaderTag::new("x-sig", Encoding::Hex, "expected sha256=<hex>")
        .with_prefix("sha256=")
        .folded();

    fn verify<M: Mac + KeyInit + Clone>(
        tag: &HeaderTag<M>,
        value: &str,
        keys: &[KeyBytes],
    ) -> Result<Verified, VerifyError> {
        let pairs = [("x-sig", value)];
        let delivery = Delivery {
            headers: &HeaderPairs(&pairs),
            body: b"body",
            received_at: DateTime::UNIX_EPOCH,
        };
        tag.verify(&delivery, keys, &[b"url", delivery.body])
    }

    #[test]
    fn signs_and_verifies_each_encoding_and_hash() {
        let keys = [
            KeyBytes::new(b"old".to_vec()),
            KeyBytes::new(b"new".to_vec()),
        ];
        let base64: HeaderTag<HmacSha512> = HeaderTag::new("x-sig", Encoding::Base64, "not base64");
        let (header, value) = base64.sign(&keys[1], &[b"url", b"body"]);
        assert_eq!(header, "x-sig");
        assert_eq!(verify(&base64, &value, &keys).unwrap().key_index, 1);
        let (_, value) = PLAIN.sign(&keys[0], &[b"urlbody"]);
        assert_eq!(value.len(), 64, "hex SHA-256");
        assert_eq!(verify(&PLAIN, &value, &keys).unwrap().key_index, 0);
        assert_eq!(
            verify(&PLAIN, &value, &keys[1..]),
            Err(VerifyError::NoMatch { keys: 1 })
        );
    }

    #[test]
    fn only_a_folded_header_reads_several_tags_and_a_prefix_is_optional() {
        let keys = [KeyBytes::new(b"k".to_vec())];
        let (_, value) = PREFIXED.sign(&keys[0], &[b"url", b"body"]);
        let bare = value.trim_start_matches("sha256=");
        assert!(value.starts_with("sha256="));
        for header in [value.clone(), bare.to_owned(), format!("zz, sha256={bare}")] {
            assert_eq!(verify(&PREFIXED, &header, &keys).unwrap().key_index, 0);
        }
        assert_eq!(
            verify(&PLAIN, &format!("{bare},{bare}"), &keys),
            Err(VerifyError::MalformedHeader {
                header: "x-sig",
                problem: "not hex"
            })
        );
        assert_eq!(
            verify(&PREFIXED, "sha256=zz, zz", &keys),
            Err(VerifyError::MalformedHeader {
                header: "x-sig",
                problem: "expected sha256=<hex>"
            })
        );
    }
}
