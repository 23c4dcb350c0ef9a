//! An anchor as `audit.anchor` messages: cut into parts of at most
//! [`HEADS_PER_PART`] ledger heads, each a message of its own
//! (`schema/anchor.v1.json`), and joined again by `verify --against`. A
//! whole anchor of a large ledger would outgrow what a bus takes (SQS:
//! 256 KiB, NATS and Kafka: 1 MiB by default); a part of 500 heads stays
//! near 60 KiB with ids of common length and under 256 KiB with ids of 255
//! characters.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::anchor::{Anchor, AnchoredHead};

/// Ledger heads per part.
pub const HEADS_PER_PART: usize = 500;

/// What a part's `type` says.
pub const PART_TYPE: &str = "audit.anchor";

/// Version of the part's JSON.
pub const PART_VERSION: u32 = 1;

/// One part of an anchor: its time, digest and signature, the audit head
/// (in every part, so any one part pins the audit trail), and a slice of
/// the ledger heads in the anchor's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorPart {
    /// `anc_`, the digest's first 32 hex digits, `_` and the part's
    /// number: the same for every send of the part, whatever instance
    /// sends it, so a consumer deduplicates on it.
    pub id: String,
    #[serde(rename = "type")]
    pub message_type: String,
    pub version: u32,
    pub at: DateTime<Utc>,
    pub digest: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signature: Option<String>,
    /// Counted from 0.
    pub part: usize,
    pub parts: usize,
    pub audit: AnchoredHead,
    pub ledger: Vec<AnchoredHead>,
}

impl Anchor {
    /// The anchor in parts of at most `per_part` ledger heads (at least
    /// one part, for an empty ledger).
    pub fn parts(&self, per_part: usize) -> Vec<AnchorPart> {
        let per_part = per_part.max(1);
        let slices: Vec<&[AnchoredHead]> = match self.ledger.is_empty() {
            true => vec![&[]],
            false => self.ledger.chunks(per_part).collect(),
        };
        let parts = slices.len();
        slices
            .into_iter()
            .enumerate()
            .map(|(part, ledger)| AnchorPart {
                id: format!("anc_{}_{part}", &self.digest[..32.min(self.digest.len())]),
                message_type: PART_TYPE.to_owned(),
                version: PART_VERSION,
                at: self.at,
                digest: self.digest.clone(),
                signature: self.signature.clone(),
                part,
                parts,
                audit: self.audit.clone(),
                ledger: ledger.to_vec(),
            })
            .collect()
    }

    /// The anchor whose parts these are: every part once, all of one
    /// anchor. Its digest and signature are checked by [`Anchor::check`]
    /// as a whole file's are.
    pub fn join(mut parts: Vec<AnchorPart>) -> Result<Anchor, String> {
        parts.sort_by_key(|p| p.part);
        let Some(first) = parts.first() else {
            return Err("no parts to join".into());
        };
        let digest = first.digest.clone();
        for (i, part) in parts.iter().enumerate() {
            if part.message_type != PART_TYPE || part.version != PART_VERSION {
                return Err(format!(
                    "part {} is a {} message of version {}, not {PART_TYPE} version {PART_VERSION}",
                    part.part, part.message_type, part.version
                ));
            }
            let same = part.digest == digest
                && part.at == first.at
                && part.signature == first.signature
                && part.audit == first.audit
                && part.parts == first.parts;
            if !same {
                return Err(format!(
                    "part {} of anchor {} is not of the same anchor as part {}",
                    part.part, part.digest, first.part
                ));
            }
            if part.part != i {
                return Err(format!(
                    "anchor {digest}: part {i} is missing or given twice (have {} of {})",
                    parts.len(),
                    first.parts
                ));
            }
        }
        if parts.len() != first.parts {
            return Err(format!(
                "anchor {digest}: {} of its {} parts given",
                parts.len(),
                first.parts
            ));
        }
        Ok(Anchor {
            at: first.at,
            audit: first.audit.clone(),
            digest,
            signature: first.signature.clone(),
            ledger: parts.into_iter().flat_map(|p| p.ledger).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::chain::{digest_of, sign};

    fn anchor(chains: usize) -> Anchor {
        let at: DateTime<Utc> = "2026-12-07T10:00:00Z".parse().unwrap();
        let audit = AnchoredHead {
            account_id: None,
            currency: None,
            seq: 4,
            link: "ab".repeat(32),
        };
        let ledger: Vec<AnchoredHead> = (0..chains)
            .map(|i| AnchoredHead {
                account_id: Some(format!("acct_{i:04}")),
                currency: Some("USD".into()),
                seq: i as i64 + 1,
                link: format!("{i:064x}"),
            })
            .collect();
        let digest = digest_of(at, &audit, &ledger);
        let signature = Some(sign(&digest, b"0123456789abcdef0123456789abcdef"));
        Anchor {
            at,
            audit,
            ledger,
            digest,
            signature,
        }
    }

    #[test]
    fn parts_join_to_the_anchor_in_any_order() {
        let whole = anchor(1_201);
        let mut parts = whole.parts(500);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].ledger.len(), 201);
        assert!(parts.iter().all(|p| p.parts == 3 && p.audit == whole.audit));
        assert_eq!(parts[1].id, format!("anc_{}_1", &whole.digest[..32]));
        parts.reverse();
        let joined = Anchor::join(parts).unwrap();
        assert_eq!(joined.ledger, whole.ledger);
        assert_eq!(joined.digest, whole.digest);
        joined
            .check(Some(b"0123456789abcdef0123456789abcdef"))
            .unwrap();
    }

    #[test]
    fn an_empty_ledger_is_one_part_and_a_part_round_trips_as_json() {
        let parts = anchor(0).parts(500);
        assert_eq!(parts.len(), 1);
        let text = serde_json::to_string(&parts[0]).unwrap();
        assert!(text.contains("\"type\":\"audit.anchor\""), "{text}");
        let back: AnchorPart = serde_json::from_str(&text).unwrap();
        assert_eq!(back, parts[0]);
    }

    /// The shipped schema names exactly what a part renders, all of it
    /// required but the signature (absent when no key is configured).
    #[test]
    fn the_schema_names_what_a_part_renders() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schema/anchor.v1.json")).unwrap();
        let part = serde_json::to_value(&anchor(3).parts(500)[0]).unwrap();
        let mut rendered: Vec<&String> = part.as_object().unwrap().keys().collect();
        let mut named: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        rendered.sort_unstable();
        named.sort_unstable();
        assert_eq!(rendered, named);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let optional: Vec<&&String> = named
            .iter()
            .filter(|k| !required.contains(&k.as_str()))
            .collect();
        assert_eq!(optional, [&&"signature".to_owned()]);
        assert_eq!(schema["properties"]["type"]["const"], PART_TYPE);
        assert_eq!(schema["properties"]["version"]["const"], PART_VERSION);
        let head = &part["ledger"][0];
        let head_keys: Vec<&String> = head.as_object().unwrap().keys().collect();
        let head_named = schema["$defs"]["head"]["properties"].as_object().unwrap();
        assert!(
            head_keys.iter().all(|k| head_named.contains_key(*k)),
            "{head}"
        );
    }

    #[test]
    fn missing_doubled_or_foreign_parts_are_refused() {
        let parts = anchor(1_100).parts(500);
        let missing = Anchor::join(vec![parts[0].clone(), parts[2].clone()]).unwrap_err();
        assert!(missing.contains("part 1 is missing"), "{missing}");
        let short = Anchor::join(parts[..2].to_vec()).unwrap_err();
        assert!(short.contains("2 of its 3 parts"), "{short}");
        let doubled = Anchor::join(vec![
            parts[0].clone(),
            parts[1].clone(),
            parts[1].clone(),
            parts[2].clone(),
        ])
        .unwrap_err();
        assert!(doubled.contains("given twice"), "{doubled}");
        let mut other = anchor(1_100);
        other.at += chrono::Duration::seconds(1);
        other.digest = digest_of(other.at, &other.audit, &other.ledger);
        let foreign = other.parts(500).remove(1);
        let mixed = Anchor::join(vec![parts[0].clone(), foreign, parts[2].clone()]).unwrap_err();
        assert!(mixed.contains("not of the same anchor"), "{mixed}");
        // A head moved between parts keeps the join whole, but not the
        // digest: the check refuses it as a changed file.
        let mut moved = parts.clone();
        let head = moved[1].ledger.pop().unwrap();
        moved[2].ledger.insert(0, head.clone());
        moved[2].ledger[0].seq += 1;
        let joined = Anchor::join(moved).unwrap();
        assert!(joined.check(None).unwrap_err().contains("was changed"));
    }
}
