//! A replay of an event whose stored bytes now read as another event is
//! applied under that event's id, once (`replay_rekey` for the refund
//! case); and what a replay refuses whatever the config now says: one
//! rejected because its signed body could be read more than one way.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::kinds::Kind;
use crate::replay::{before_and_after, replay_api};

/// A generic-hmac source whose `type_path` points at a number: every
/// delivery is unreadable, stored as `unreadable:<sha256>`. The event id
/// is the body's `id` (no `event_id_path`, no id header): a replay that
/// took the stored key for a signed id would post under it.
const WRONG: &str = r#"
[[sources]]
name = "gen"
kind = "generic-hmac"
secrets = ["a secret for the generic sender"]
signature_header = "X-Gen-Signature"
type_path = "event.kind"
credit_types = ["sale.settled"]
account_path = "event.customer"
amount_path = "event.total"
amount_format = "decimal"
currency_path = "event.currency"
sequence_path = "event.number"
"#;

/// The fix: the type is at `event.label`.
const FIXED: &str = r#"
[[sources]]
name = "gen"
kind = "generic-hmac"
secrets = ["a secret for the generic sender"]
signature_header = "X-Gen-Signature"
type_path = "event.label"
credit_types = ["sale.settled"]
account_path = "event.customer"
amount_path = "event.total"
amount_format = "decimal"
currency_path = "event.currency"
sequence_path = "event.number"
"#;

fn kind(config: &'static str) -> Kind {
    Kind {
        source: "gen",
        kind: "generic-hmac",
        secret: "a secret for the generic sender",
        old_secret: "a secret for the generic sender",
        config,
        payment: |_, _, _| Value::Null,
        refund: |_, _, _, _| Value::Null,
        key_of: |_| String::new(),
    }
}

async fn an_unreadable_event_that_now_reads_as_another_is_replayed_under_that_id(backend: Backend) {
    let wrong = kind(WRONG).spawn(backend).await;
    let fixed = wrong
        .another_instance_with(&Options {
            extra_sources: FIXED,
            ..Options::default()
        })
        .await;
    let body = json!({"id": "g_1", "event": {"kind": 5, "label": "sale.settled",
        "customer": "acct_g", "total": "12.00", "currency": "USD", "number": 1}});
    let answer = kind(WRONG).send(&wrong, &body).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let stored = answer["event_id"].as_str().unwrap().to_owned();
    assert!(stored.starts_with("unreadable:"), "{answer}");

    let path = format!("/admin/api/event/replay?source=gen&id={stored}");
    let replay = || fixed.admin_post(&path, r#"{"note": "type_path fixed"}"#);
    // Applied under the id it reads as now, never under the stored key.
    let response = replay().await;
    assert_eq!(response.status(), StatusCode::OK);
    let replayed: Value = response.json().await.unwrap();
    assert_eq!(replayed["replayed_as"]["event_id"], "g_1", "{replayed}");
    assert_eq!(replayed["replayed_as"]["status"], "applied", "{replayed}");
    assert_eq!(fixed.balance("acct_g", "USD").await, 1200);
    let original = fixed.event("gen", &stored).await;
    assert_eq!(original["status"], "ignored", "{original}");
    assert_eq!(original["replayed_into"], "g_1");
    // The sender's redelivery is a duplicate of it, as is a second replay.
    let again = kind(FIXED).send(&fixed, &body).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["event_id"], "g_1");
    let second: Value = replay().await.json().await.unwrap();
    assert_eq!(second["replayed_as"]["duplicate"], true, "{second}");
    assert_eq!(fixed.balance("acct_g", "USD").await, 1200);
    fixed.assert_invariants().await;
}

async fn an_ambiguous_body_is_never_replayed(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    let body = br#"{"type":"balance.credit","data":{"account_id":"acct_1","customer_ref":"acct_1","amount_minor":5,"amount_minor":700,"currency":"USD"}}"#;
    assert_eq!(
        wrong.deliver_body("shop", "evt_twice", body).await.status(),
        StatusCode::OK
    );
    let held = fixed.event("shop", "evt_twice").await;
    assert!(
        held["reason"].as_str().unwrap().contains("more than once"),
        "{held}"
    );
    let (status, refused) = replay_api(&fixed, "evt_twice").await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("read more than one way"),
        "{refused}"
    );
    assert_eq!(fixed.balance("acct_1", "USD").await, 0);
}

both_backends!(
    an_unreadable_event_that_now_reads_as_another_is_replayed_under_that_id,
    an_ambiguous_body_is_never_replayed,
);
