//! Anchors: the chains' heads (each ledger chain's last entry, by its
//! number and link, and the audit trail's) at one moment, with a digest
//! over all of them, signed with a key that is never stored in the
//! database (HMAC-SHA256). Kept outside the database (the log, a file, a
//! bucket), an anchor catches what the chains alone cannot: a history
//! rewritten together with its links. Later entries must still link back
//! to each anchored head: `verify --against` checks that every anchored
//! entry is still there with the link it had (`check_anchor`).

use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::hash::{Link, stored};
use super::verify::{Break, BreakKind, Trail};
use crate::store::{Store, StoreError, on_pool};

/// One chain's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchoredHead {
    /// The ledger chain's account and currency; none for the audit trail.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub currency: Option<String>,
    /// The number of its last row.
    pub seq: i64,
    /// That row's link, as hex.
    pub link: String,
}

/// The heads at one moment, their digest, and its signature.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Anchor {
    pub at: DateTime<Utc>,
    pub audit: AnchoredHead,
    pub ledger: Vec<AnchoredHead>,
    /// SHA-256 over the time and every head (`digest_of`), as hex.
    pub digest: String,
    /// HMAC-SHA256 of the digest with the anchor key, as hex; none when no
    /// key is configured.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signature: Option<String>,
}

/// Each ledger chain's last entry: its number and link.
const LEDGER_HEADS: &str = "
select b.account_id, b.currency, b.postings, e.entry_hash
from balances b
join ledger_entries e on e.account_id = b.account_id and e.currency = b.currency
    and e.account_seq = b.postings
where b.postings > 0
order by b.account_id, b.currency";

const AUDIT_HEAD: &str = "select chain_seq, head from audit_chain where chain_id = 1";

/// An anchored entry: its id and link now.
const ANCHORED_ENTRY: &str = "
select entry_id, entry_hash from ledger_entries
where account_id = $1 and currency = $2 and account_seq = $3";

const ANCHORED_AUDIT: &str = "select audit_id, row_hash from audit_log where chain_seq = $1";

/// The digest over the time and the heads, in a fixed encoding: a label,
/// the time (microseconds since the epoch, 8 bytes), the audit head, then
/// each ledger head in the anchor's order, each as its account and
/// currency (texts, as in the links: length then bytes; empty for the
/// audit trail), its number (8 bytes) and its link's hex.
pub fn digest_of(at: DateTime<Utc>, audit: &AnchoredHead, ledger: &[AnchoredHead]) -> String {
    let mut hash = Sha256::new();
    let text = |hash: &mut Sha256, value: &str| {
        hash.update((value.len() as u64).to_be_bytes());
        hash.update(value.as_bytes());
    };
    text(&mut hash, "hookledger anchor v1");
    hash.update(at.timestamp_micros().to_be_bytes());
    for head in std::iter::once(audit).chain(ledger) {
        text(&mut hash, head.account_id.as_deref().unwrap_or_default());
        text(&mut hash, head.currency.as_deref().unwrap_or_default());
        hash.update(head.seq.to_be_bytes());
        text(&mut hash, &head.link);
    }
    let digest: Link = hash.finalize().into();
    hex::encode(digest)
}

/// The signature of `digest` with `key`.
pub fn sign(digest: &str, key: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(digest.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

impl Anchor {
    /// Whether the digest is the heads' and, with `key`, the signature the
    /// key's (compared in constant time).
    pub fn check(&self, key: Option<&[u8]>) -> Result<(), String> {
        if digest_of(self.at, &self.audit, &self.ledger) != self.digest {
            return Err(
                "the anchor's digest is not its time's and heads': the file was changed".into(),
            );
        }
        let Some(key) = key else {
            return Ok(());
        };
        let Some(signature) = &self.signature else {
            return Err("the anchor is not signed, and a key is configured".into());
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(self.digest.as_bytes());
        let given = hex::decode(signature).map_err(|_| "the anchor's signature is not hex")?;
        mac.verify_slice(&given)
            .map_err(|_| "the anchor's signature is not the configured key's".to_owned())
    }
}

fn link_hex(bytes: Option<&[u8]>) -> String {
    stored(bytes).map_or_else(String::new, hex::encode)
}

impl Store {
    /// The chains' heads now, with their digest, signed with `key` if one
    /// is given.
    pub async fn anchor(
        &self,
        now: DateTime<Utc>,
        key: Option<&[u8]>,
    ) -> Result<Anchor, StoreError> {
        let (audit_seq, audit_link): (i64, Option<Vec<u8>>) =
            on_pool!(self, pool => sqlx::query_as(AUDIT_HEAD).fetch_one(pool).await)?;
        let rows: Vec<(String, String, i64, Option<Vec<u8>>)> =
            on_pool!(self, pool => sqlx::query_as(LEDGER_HEADS).fetch_all(pool).await)?;
        let audit = AnchoredHead {
            account_id: None,
            currency: None,
            seq: audit_seq,
            link: link_hex(audit_link.as_deref()),
        };
        let mut ledger: Vec<AnchoredHead> = rows
            .into_iter()
            .map(|(account, currency, seq, link)| AnchoredHead {
                account_id: Some(account),
                currency: Some(currency),
                seq,
                link: link_hex(link.as_deref()),
            })
            .collect();
        // One order whatever the database's collation.
        ledger.sort_by(|a, b| (&a.account_id, &a.currency).cmp(&(&b.account_id, &b.currency)));
        let digest = digest_of(now, &audit, &ledger);
        let signature = key.map(|key| sign(&digest, key));
        Ok(Anchor {
            at: now,
            audit,
            ledger,
            digest,
            signature,
        })
    }

    /// Each anchored head that is not in the database as anchored: its row
    /// gone, or its link another (a history rewritten with its links).
    pub async fn check_anchor(&self, anchor: &Anchor) -> Result<Vec<Break>, StoreError> {
        let mut found = Vec::new();
        if anchor.audit.seq > 0 {
            let row: Option<(i64, Option<Vec<u8>>)> = on_pool!(self, pool => sqlx::query_as(ANCHORED_AUDIT)
                .bind(anchor.audit.seq)
                .fetch_optional(pool)
                .await)?;
            found.extend(rewritten(
                Trail::Audit,
                &anchor.audit,
                row,
                anchor.at,
                "audit row",
            ));
        }
        for head in &anchor.ledger {
            let (Some(account), Some(currency)) = (&head.account_id, &head.currency) else {
                continue;
            };
            let row: Option<(i64, Option<Vec<u8>>)> = on_pool!(self, pool => sqlx::query_as(ANCHORED_ENTRY)
                .bind(account)
                .bind(currency)
                .bind(head.seq)
                .fetch_optional(pool)
                .await)?;
            found.extend(rewritten(Trail::Ledger, head, row, anchor.at, "entry"));
        }
        Ok(found)
    }
}

/// The break of an anchored head whose row is `row` (id, link) now.
fn rewritten(
    trail: Trail,
    head: &AnchoredHead,
    row: Option<(i64, Option<Vec<u8>>)>,
    at: DateTime<Utc>,
    noun: &str,
) -> Option<Break> {
    let (kind, row_id, detail) = match row {
        None => (
            BreakKind::Deleted,
            None,
            format!(
                "number {} was anchored at {at} and is not there now",
                head.seq
            ),
        ),
        Some((id, link)) if link_hex(link.as_deref()) != head.link => (
            BreakKind::Rewritten,
            Some(id),
            format!(
                "{noun} {id} (number {}) is not the one anchored at {at}: the history up to it was rewritten with its links",
                head.seq
            ),
        ),
        Some(_) => return None,
    };
    Some(Break {
        trail,
        account_id: head.account_id.clone(),
        currency: head.currency.clone(),
        kind,
        row_id,
        position: head.seq,
        detail,
    })
}
