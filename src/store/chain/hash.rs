//! What a link of a chain is: SHA-256 over a record's content, in one fixed
//! encoding, then the hash of the record before it in its chain. Each
//! ledger entry is linked to the entry before it in its account's sequence
//! (per currency: `account_seq`); each audit row to the audit row before it.
//!
//! The encoding is a label naming the kind of record and the version of
//! the encoding, then each field in a fixed order: a text as its length
//! (8 bytes, big-endian) and its UTF-8 bytes; an integer as 8 bytes
//! big-endian; a time as its microseconds since the epoch (what both
//! backends keep of it); an absent value as one byte 0, a present one as
//! byte 1 then the value. No two different records encode the same.
//! `docs/operating/chains.md` states it for anyone who checks the chains
//! with tools of their own.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// A link: the SHA-256 of a record and the link before it.
pub type Link = [u8; 32];

/// The link before the first record of a chain.
pub const GENESIS: Link = [0; 32];

/// An entry's links as it is written: the one before it, and its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLinks {
    pub prev: Link,
    pub own: Link,
}

/// What a write transaction knows of a ledger chain: the number of its
/// last entry and that entry's link (none: written without one).
pub type Head = (i64, Option<Link>);

/// A ledger entry as its link covers it.
pub struct EntryContent<'a> {
    pub account_id: &'a str,
    pub currency: &'a str,
    pub account_seq: i64,
    pub amount_minor: i64,
    pub balance_after_minor: i64,
    pub source: &'a str,
    pub event_id: &'a str,
    pub intent_id: i64,
    pub created_at: DateTime<Utc>,
    pub object_id: Option<&'a str>,
    pub operator_applied: bool,
    pub credits_payment: Option<i64>,
}

/// An audit row as its link covers it.
pub struct AuditContent<'a> {
    pub chain_seq: i64,
    pub action: &'a str,
    pub source: &'a str,
    pub event_id: Option<&'a str>,
    pub account_id: Option<&'a str>,
    pub previous_status: &'a str,
    pub actor: &'a str,
    pub note: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub created_at: DateTime<Utc>,
}

/// The encoder: a running SHA-256 fed field by field.
struct Fields(Sha256);

impl Fields {
    fn new(label: &str) -> Self {
        let mut fields = Fields(Sha256::new());
        fields.text(label);
        fields
    }

    fn text(&mut self, value: &str) {
        self.0.update((value.len() as u64).to_be_bytes());
        self.0.update(value.as_bytes());
    }

    fn int(&mut self, value: i64) {
        self.0.update(value.to_be_bytes());
    }

    fn time(&mut self, value: DateTime<Utc>) {
        self.int(value.timestamp_micros());
    }

    fn flag(&mut self, value: bool) {
        self.0.update([u8::from(value)]);
    }

    fn maybe_text(&mut self, value: Option<&str>) {
        self.flag(value.is_some());
        if let Some(value) = value {
            self.text(value);
        }
    }

    fn maybe_int(&mut self, value: Option<i64>) {
        self.flag(value.is_some());
        if let Some(value) = value {
            self.int(value);
        }
    }

    fn link(mut self, previous: &Link) -> Link {
        self.0.update(previous);
        self.0.finalize().into()
    }
}

/// The link of a ledger entry whose predecessor's link is `previous`.
pub fn entry_link(entry: &EntryContent<'_>, previous: &Link) -> Link {
    let mut fields = Fields::new("hookledger ledger entry v1");
    fields.text(entry.account_id);
    fields.text(entry.currency);
    fields.int(entry.account_seq);
    fields.int(entry.amount_minor);
    fields.int(entry.balance_after_minor);
    fields.text(entry.source);
    fields.text(entry.event_id);
    fields.int(entry.intent_id);
    fields.time(entry.created_at);
    fields.maybe_text(entry.object_id);
    fields.flag(entry.operator_applied);
    fields.maybe_int(entry.credits_payment);
    fields.link(previous)
}

/// The link of an audit row whose predecessor's link is `previous`.
pub fn audit_link(row: &AuditContent<'_>, previous: &Link) -> Link {
    let mut fields = Fields::new("hookledger audit row v1");
    fields.int(row.chain_seq);
    fields.text(row.action);
    fields.text(row.source);
    fields.maybe_text(row.event_id);
    fields.maybe_text(row.account_id);
    fields.text(row.previous_status);
    fields.text(row.actor);
    fields.maybe_text(row.note);
    fields.maybe_text(row.detail);
    fields.time(row.created_at);
    fields.link(previous)
}

/// A stored link: 32 bytes, or not one (a column edited by hand).
pub fn stored(bytes: Option<&[u8]>) -> Option<Link> {
    bytes.and_then(|bytes| bytes.try_into().ok())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn entry() -> EntryContent<'static> {
        EntryContent {
            account_id: "acct_1",
            currency: "EUR",
            account_seq: 1,
            amount_minor: 1250,
            balance_after_minor: 1250,
            source: "stripe",
            event_id: "evt_1",
            intent_id: 7,
            created_at: Utc.timestamp_micros(1_765_000_000_123_456).unwrap(),
            object_id: None,
            operator_applied: false,
            credits_payment: None,
        }
    }

    #[test]
    fn an_entry_link_is_the_documented_encoding() {
        // Written out by hand from the encoding in the module's comment
        // (and docs/operating/chains.md), so a change of the encoding,
        // which would break every stored chain, fails here.
        let mut bytes = Vec::new();
        let text = |bytes: &mut Vec<u8>, value: &str| {
            bytes.extend((value.len() as u64).to_be_bytes());
            bytes.extend(value.as_bytes());
        };
        text(&mut bytes, "hookledger ledger entry v1");
        text(&mut bytes, "acct_1");
        text(&mut bytes, "EUR");
        bytes.extend(1i64.to_be_bytes());
        bytes.extend(1250i64.to_be_bytes());
        bytes.extend(1250i64.to_be_bytes());
        text(&mut bytes, "stripe");
        text(&mut bytes, "evt_1");
        bytes.extend(7i64.to_be_bytes());
        bytes.extend(1_765_000_000_123_456i64.to_be_bytes());
        bytes.push(0);
        bytes.push(0);
        bytes.push(0);
        bytes.extend([0u8; 32]);
        let expected: Link = Sha256::digest(&bytes).into();
        assert_eq!(entry_link(&entry(), &GENESIS), expected);
    }

    #[test]
    fn every_field_and_the_previous_link_change_the_link() {
        let base = entry_link(&entry(), &GENESIS);
        let changed = [
            EntryContent {
                amount_minor: 1251,
                ..entry()
            },
            EntryContent {
                account_seq: 2,
                ..entry()
            },
            EntryContent {
                object_id: Some(""),
                ..entry()
            },
            EntryContent {
                credits_payment: Some(0),
                ..entry()
            },
            // A field's bytes moved into the next field.
            EntryContent {
                account_id: "acct_1E",
                currency: "UR",
                ..entry()
            },
        ];
        for other in changed {
            assert_ne!(entry_link(&other, &GENESIS), base);
        }
        assert_ne!(entry_link(&entry(), &[1; 32]), base);
    }

    #[test]
    fn a_stored_link_is_32_bytes_or_none() {
        assert_eq!(stored(Some(&[3; 32])), Some([3; 32]));
        assert_eq!(stored(Some(&[3; 31])), None);
        assert_eq!(stored(None), None);
    }
}
