//! The `nats` destination against a real nats-server with JetStream, named
//! by `HOOKLEDGER_TEST_NATS_URL` (`.ci/run` starts one on 127.0.0.1:4222
//! and sets it; unset, the test says it skipped, or fails under CI). Each
//! test uses its own stream and subject prefix, deleted afterwards.

use std::time::Duration;

use async_nats::jetstream;
use hookledger::store::Replay;

use crate::helpers::*;
use crate::outbox::{app_with, drained};

/// The NATS server to test against, if one is named.
fn nats_url(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_NATS_URL", test)
}

async fn postings_are_published_once_per_id(backend: Backend) {
    let Some(nats) = nats_url("postings_are_published_once_per_id") else {
        return;
    };
    let tag = format!("{:08x}", rand_u32());
    let stream = format!("HLTEST_{tag}");
    let prefix = format!("hltest{tag}");
    let destination = format!(
        r#"
[[destinations]]
name = "bus"
kind = "nats"
url = "{nats}"
subject = "{prefix}.{{type}}.{{currency}}"
stream = "{stream}"
"#
    );
    let app = app_with(backend, &destination).await;
    for i in 0..5 {
        app.send_ok(&credit(&format!("evt_{i}"), "cus_1", 100 + i))
            .await;
    }
    // A held event is told too (every type by default).
    app.send_ok(&credit_seq("evt_late", "cus_seq", 100, 5))
        .await;
    app.send_ok(&debit_seq("evt_old_debit", "cus_seq", 50, 2))
        .await;
    let messages = drained(&app, "bus", Duration::from_secs(30)).await;
    assert_eq!(messages.len(), 7, "{messages:?}");
    assert!(messages.iter().all(|m| m.state == "delivered"));

    let client = async_nats::connect(nats.as_str())
        .await
        .expect("nats-server runs");
    let context = jetstream::new(client);
    let mut found = context.get_stream(&stream).await.expect("stream created");
    let info = found.info().await.unwrap();
    assert_eq!(info.state.messages, 7);
    assert!(info.config.duplicate_window >= Duration::from_secs(120));
    let mut ids = Vec::new();
    let mut subjects = Vec::new();
    for sequence in 1..=7 {
        let message = found.get_raw_message(sequence).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
        let id = message
            .headers
            .get("Nats-Msg-Id")
            .unwrap()
            .as_str()
            .to_owned();
        assert_eq!(body["id"], id.as_str());
        ids.push(id);
        subjects.push(message.subject.to_string());
    }
    assert!(subjects.contains(&format!("{prefix}.ledger.posted.USD")));
    assert!(
        subjects.contains(&format!("{prefix}.event.held.USD")),
        "{subjects:?}"
    );
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 7);

    // A replay inside the duplicate window is dropped by the server.
    let replay = Replay {
        destination: "bus".into(),
        state: "delivered".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(app.store().replay_outbox(&replay).await.unwrap(), 7);
    drained(&app, "bus", Duration::from_secs(30)).await;
    assert_eq!(found.info().await.unwrap().state.messages, 7);
    context.delete_stream(&stream).await.unwrap();
}

fn rand_u32() -> u32 {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).unwrap();
    u32::from_le_bytes(bytes)
}

both_backends!(postings_are_published_once_per_id);
