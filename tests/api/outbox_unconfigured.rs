//! A destination renamed in the config: its undelivered messages stay
//! under the old name, where no relay sends them. They are shown (the
//! dashboard, `/admin/api/outbox`, a warning at start) and
//! `hookledger outbox move` gives them to the new name, each sent there
//! under its own id and in its account's order; the old name's copy of a
//! message the new name has already is dropped.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{login, page};
use crate::helpers::*;
use crate::outbox::{drained, http_destination, selected, writer_with};
use crate::process::{Server, run_with_config as cli};
use crate::receiver::{Answer, Receiver};

/// A copy of `billing`'s message for `evt_3`, delivered, under `billing-v2`:
/// as if both had been configured once. Delivered in 2100: out of the
/// retention purge's reach while the test runs.
const DELIVERED_UNDER_THE_NEW_NAME: &str = "
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, ordered, delivered_ms)
select 'billing-v2', message_id, message_type, intent_id, source, event_id, event_status,
    account_id, currency, amount_minor, balance_after_minor, account_seq, object_id,
    occurred_at, posted_at, operator_applied, 'delivered', 1, 0, created_at, ordered,
    4102444800000
from outbox where destination = 'billing' and event_id = 'evt_3'";

async fn unconfigured(app: &TestApp) -> Value {
    let answer = app.admin_get("/admin/api/outbox").await;
    answer.json::<Value>().await.unwrap()["unconfigured"].clone()
}

async fn a_renamed_destination_s_messages_are_shown_and_moved(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let old = http_destination("billing", &receiver.url(), "ordered_by_account = true");
    let writer = writer_with(backend, &old).await;
    for (event, account) in [("evt_1", "cus_a"), ("evt_2", "cus_a"), ("evt_3", "cus_b")] {
        writer.send_ok(&credit(event, account, 100)).await;
    }
    writer
        .execute_sql("update outbox set state = 'dead', attempts = 25 where event_id = 'evt_3'")
        .await
        .unwrap();
    writer
        .execute_sql(DELIVERED_UNDER_THE_NEW_NAME)
        .await
        .unwrap();
    let ids: Vec<String> = selected::<(String,)>(
        &writer,
        "select message_id from outbox where destination = 'billing' order by outbox_id",
    )
    .await
    .into_iter()
    .map(|(id,)| id)
    .collect();

    // The config now names it billing-v2.
    let new = http_destination("billing-v2", &receiver.url(), "ordered_by_account = true");
    let options = Options {
        extra_sources: &new,
        ..Options::default()
    };
    let renamed = writer.another_instance_with(&options).await;
    let before = json!([{"destination": "billing", "pending": 2, "dead": 1}]);
    assert_eq!(unconfigured(&renamed).await, before);
    let cookie = login(&renamed).await;
    let dashboard = page(&renamed, "/admin", &cookie).await;
    assert!(
        dashboard.contains("Messages for destinations no longer configured")
            && dashboard.contains(
                "<tr><td>billing</td><td class=\"num\">2</td><td class=\"num\">1</td></tr>"
            ),
        "{dashboard}"
    );
    // The writer's config still names billing: nothing unconfigured there.
    assert_eq!(unconfigured(&writer).await, json!([]));

    let dir = tempfile::tempdir().unwrap();
    crate::helpers::write_config(
        dir.path().join("hookledger.toml"),
        base_config(&writer.database_url, &options),
    )
    .unwrap();
    let config = dir.path().join("hookledger.toml").display().to_string();
    let mut relay = Server::start_with(
        dir.path(),
        &["--config", &config, "relay"],
        &[],
        "hookledger relay: sending to",
    );
    let warned = "outbox: messages for a destination the config does not name";
    let started = std::time::Instant::now();
    while !relay.log().contains(warned) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            relay.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relay.kill();
    assert!(
        receiver.received().is_empty(),
        "an unconfigured destination's message was sent"
    );

    let (ok, out) = cli(
        dir.path(),
        &["outbox", "move", "--from", "billing", "--to", "nowhere"],
    );
    assert!(
        !ok && out.contains(r#"no destination "nowhere" in the config"#),
        "{out}"
    );
    let (ok, out) = cli(
        dir.path(),
        &[
            "outbox",
            "move",
            "--from",
            "billing-v2",
            "--to",
            "billing-v2",
        ],
    );
    assert!(!ok && out.contains("is still configured"), "{out}");
    assert_eq!(
        unconfigured(&renamed).await,
        before,
        "a refused move moved nothing"
    );

    let (ok, out) = cli(
        dir.path(),
        &["outbox", "move", "--from", "billing", "--to", "billing-v2"],
    );
    assert!(ok, "{out}");
    assert_eq!(
        out.trim(),
        "moved 2 message(s) from billing to billing-v2\n\
         dropped 1 message(s) under billing: billing-v2 has them already"
    );
    let messages = drained(&renamed, "billing-v2", Duration::from_secs(20)).await;
    let states: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.event_id.as_str(), m.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("evt_1", "delivered"),
            ("evt_2", "delivered"),
            ("evt_3", "delivered")
        ]
    );
    // The moved two, in their account's order, under the ids they had.
    let sent: Vec<(String, String)> = receiver
        .accepted()
        .into_iter()
        .map(|r| (r.body["event_id"].as_str().unwrap().to_owned(), r.id))
        .collect();
    assert_eq!(
        sent,
        [
            ("evt_1".to_owned(), ids[0].clone()),
            ("evt_2".to_owned(), ids[1].clone())
        ]
    );
    assert_eq!(
        unconfigured(&renamed).await,
        json!([]),
        "nothing left under billing"
    );
}

crate::both_backends!(a_renamed_destination_s_messages_are_shown_and_moved);
