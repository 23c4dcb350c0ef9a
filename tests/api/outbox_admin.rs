//! The outbox on the admin: a dead letter is shown with its last error, its
//! account counted and named as blocked, the event page says where its
//! messages went, and "Send again" re-queues it (audited, same id), after
//! which it is delivered; an account held back by a message still retried
//! is named too, with how many wait behind it.

use std::time::Duration;

use reqwest::StatusCode;

use crate::browser::{csrf_in, login, login_with, page, post_form};
use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination};
use crate::receiver::{Answer, Receiver};

async fn a_dead_letter_is_shown_and_sent_again_from_the_page(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(500)).await;
    let destination = http_destination(
        "billing",
        &receiver.url(),
        "max_attempts = 1\nordered_by_account = true",
    );
    let read_only = "\n[[admin.tokens]]\nname = \"support\"\ntoken = \"support-token-0123456789\"\nread_only = true\n";
    let app = app_with(backend, &format!("{destination}{read_only}")).await;
    app.send_ok(&credit("evt_1", "cus_1", 1500)).await;
    drained(&app, "billing", Duration::from_secs(20)).await;

    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(dashboard.contains("Dead letters: billing"), "{dashboard}");
    assert!(dashboard.contains("answered HTTP 500"), "{dashboard}");
    assert!(dashboard.contains("Send again"), "{dashboard}");
    // A read-only holder sees the dead letter and no button.
    let support = login_with(&app, "support-token-0123456789").await;
    let seen = page(&app, "/admin", &support).await;
    assert!(seen.contains("Dead letters: billing"), "{seen}");
    assert!(!seen.contains("Send again"), "{seen}");
    let api = app.admin_get("/admin/api/outbox").await;
    let api: serde_json::Value = json_with_status(api, StatusCode::OK).await;
    let billing = &api["destinations"][0];
    assert_eq!(
        (&billing["dead"], &billing["blocked_accounts"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );
    let blocked = &billing["blocked"][0];
    assert_eq!(
        (
            &blocked["account_id"],
            &blocked["state"],
            &blocked["waiting"]
        ),
        (
            &serde_json::json!("cus_1"),
            &serde_json::json!("dead"),
            &serde_json::json!(0)
        ),
        "{billing}"
    );
    assert!(
        dashboard.contains("Blocked accounts: billing"),
        "{dashboard}"
    );
    let message_id = billing["dead_letters"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let outbox_id = billing["dead_letters"][0]["outbox_id"].to_string();
    let event = page(&app, "/admin/event?source=demo&id=evt_1", &cookie).await;
    assert!(event.contains("Told to other systems") && event.contains(&message_id));

    receiver.answer_all(Answer::Status(200));
    let csrf = csrf_in(&dashboard);
    let form = [
        ("csrf", csrf.as_str()),
        ("outbox_id", outbox_id.as_str()),
        ("destination", "billing"),
        ("message_id", message_id.as_str()),
    ];
    let forged = [("csrf", "00"), form[1], form[2], form[3]];
    let refused = post_form(
        &app,
        "/admin/outbox/replay",
        &cookie,
        Some(&app.address),
        &forged,
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let sent = post_form(
        &app,
        "/admin/outbox/replay",
        &cookie,
        Some(&app.address),
        &form,
    )
    .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let messages = drained(&app, "billing", Duration::from_secs(20)).await;
    assert_eq!(messages[0].state, "delivered");
    let accepted = receiver.accepted();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0].id, message_id, "the same id");
    // Audited on the event. The message is delivered now, which a replay
    // takes, but only with its row, destination and id all matching: a
    // form naming another of them is refused and re-queues nothing.
    let event = page(&app, "/admin/event?source=demo&id=evt_1", &cookie).await;
    assert!(event.contains("outbox_replay"), "{event}");
    assert!(event.contains("delivered"), "{event}");
    let other_row = (outbox_id.parse::<i64>().unwrap() + 1).to_string();
    for (row, destination, id) in [
        (outbox_id.as_str(), "billing", "msg_unknown"),
        (other_row.as_str(), "billing", message_id.as_str()),
        (outbox_id.as_str(), "crm", message_id.as_str()),
    ] {
        let again = post_form(
            &app,
            "/admin/outbox/replay",
            &cookie,
            Some(&app.address),
            &[
                ("csrf", csrf.as_str()),
                ("outbox_id", row),
                ("destination", destination),
                ("message_id", id),
            ],
        )
        .await;
        assert_eq!(
            again.status(),
            StatusCode::CONFLICT,
            "{row} {destination} {id}"
        );
    }
    let rows = app.store().outbox_messages("billing", 0, 10).await.unwrap();
    assert_eq!(
        rows.iter().map(|m| m.state.as_str()).collect::<Vec<_>>(),
        ["delivered"],
        "nothing re-queued"
    );
}

/// A message that keeps failing, not dead yet (retried on its backoff),
/// holds its account back: the dashboard and the API name the account,
/// the message and the postings waiting behind it.
async fn a_retried_message_holding_its_account_is_named(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(500)).await;
    let destination = http_destination("billing", &receiver.url(), "ordered_by_account = true");
    let app = app_with(backend, &destination).await;
    for (event_id, amount) in [("evt_1", 100), ("evt_2", 200), ("evt_3", 300)] {
        app.send_ok(&credit(event_id, "cus_1", amount)).await;
    }
    receiver.wait_for_requests(1).await;
    // Its first failure recorded.
    let started = std::time::Instant::now();
    let api = loop {
        let api = app.admin_get("/admin/api/outbox").await;
        let api: serde_json::Value = json_with_status(api, StatusCode::OK).await;
        if api["destinations"][0]["blocked_accounts"] == 1 {
            break api;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{api}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let billing = &api["destinations"][0];
    assert_eq!(
        (
            &billing["pending"],
            &billing["delivered_last_hour"],
            &billing["dead"]
        ),
        (
            &serde_json::json!(3),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{billing}"
    );
    // (An age from the test's clock, which the postings were written by.)
    assert_ne!(billing["oldest_pending"], "", "{billing}");
    let blocked = &billing["blocked"];
    assert_eq!(blocked.as_array().map(Vec::len), Some(1), "{blocked}");
    let held = &blocked[0];
    assert_eq!(
        (&held["account_id"], &held["event_id"], &held["state"]),
        (
            &serde_json::json!("cus_1"),
            &serde_json::json!("evt_1"),
            &serde_json::json!("retrying")
        ),
        "{held}"
    );
    assert_eq!(held["account_seq"], 1, "{held}");
    assert_eq!(held["waiting"], 2, "evt_2 and evt_3 wait: {held}");
    assert!(
        held["last_error"].as_str().unwrap().contains("500"),
        "{held}"
    );
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains("Blocked accounts: billing"),
        "{dashboard}"
    );
    assert!(dashboard.contains(">#1 evt_1</a>"), "{dashboard}");
    assert!(!dashboard.contains("Dead letters: billing"), "{dashboard}");
}

both_backends!(
    a_dead_letter_is_shown_and_sent_again_from_the_page,
    a_retried_message_holding_its_account_is_named,
);
