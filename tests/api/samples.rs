//! The Standard Webhooks events the scenarios send: credits and debits,
//! with or without the sender's own sequence number, at the test clock's
//! fixed time unless told otherwise.

use hookledger::providers::Sample;

use crate::helpers::now;

/// A Standard Webhooks credit sample signed at the test clock's time.
pub fn credit(event_id: &str, account: &str, amount_minor: i64) -> Sample {
    Sample {
        event_id: event_id.to_owned(),
        event_type: None,
        account_id: account.to_owned(),
        amount_minor,
        currency: "USD".to_owned(),
        sequence: None,
        timestamp: now().timestamp(),
        payment: None,
    }
}

/// A credit whose event happened (and was first signed) at `timestamp`.
pub fn credit_at(event_id: &str, account: &str, amount_minor: i64, timestamp: i64) -> Sample {
    Sample {
        timestamp,
        ..credit(event_id, account, amount_minor)
    }
}

/// The body a Standard Webhooks sender would send for `sample`.
pub fn body_of(sample: &Sample) -> Vec<u8> {
    hookledger::providers::provider_for("standard-webhooks")
        .unwrap()
        .sample_body(sample)
}

/// Like [`credit`] with an explicit sequence.
pub fn credit_seq(event_id: &str, account: &str, amount_minor: i64, sequence: i64) -> Sample {
    Sample {
        sequence: Some(sequence),
        ..credit(event_id, account, amount_minor)
    }
}

/// A Standard Webhooks debit with an explicit sequence.
pub fn debit_seq(event_id: &str, account: &str, amount_minor: i64, sequence: i64) -> Sample {
    Sample {
        event_type: Some("balance.debit".to_owned()),
        ..credit_seq(event_id, account, amount_minor, sequence)
    }
}
