//! Replay after a config fix: events a wrong `account_path` rejected (or a
//! missing type mapping ignored) are run again through the ingest path
//! with the corrected config, by API, page or `hookledger replay`. An
//! applied event stays applied, a held one is applied at most once, two
//! replays at once act once, and each replay is audited.

use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{csrf_in, login, login_with, page, post_form};
use crate::helpers::*;

/// The `shop` source as first configured: the account id looked for where
/// the sender does not put it.
const WRONG: &str = r#"
[[sources]]
name = "shop"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
account_path = "data.customer_ref"
"#;

/// The fix: the kind's default path (`data.account_id`), and a type the
/// first config did not map now credits; a read-only token besides.
pub(crate) const FIXED: &str = r#"
[[sources]]
name = "shop"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
credit_types = ["balance.credit", "invoice.paid"]

[[admin.tokens]]
name = "support"
token = "support-token-0123456789"
read_only = true
"#;

pub(crate) async fn replay_api(app: &TestApp, event_id: &str) -> (StatusCode, Value) {
    let response = app
        .admin_post(
            &format!("/admin/api/events/shop/{event_id}/replay"),
            r#"{"note": "account_path fixed"}"#,
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Two instances on one database: the first with the wrong config, the
/// second (where replays run) with the fixed one.
pub(crate) async fn before_and_after(backend: Backend) -> (TestApp, TestApp) {
    let wrong = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: WRONG,
            ..Options::default()
        },
    )
    .await;
    let fixed = wrong
        .another_instance_with(&Options {
            extra_sources: FIXED,
            ..Options::default()
        })
        .await;
    (wrong, fixed)
}

async fn a_rejected_event_is_applied_once_after_the_fix(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    let answer = wrong
        .send_to("shop", &credit("evt_1", "acct_1", 1200))
        .await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let held = fixed.event("shop", "evt_1").await;
    assert!(
        held["reason"]
            .as_str()
            .unwrap()
            .contains("data.customer_ref"),
        "{held}"
    );

    let (status, replayed) = replay_api(&fixed, "evt_1").await;
    assert_eq!(status, StatusCode::OK, "{replayed}");
    assert_eq!(replayed["previous_status"], "rejected");
    assert_eq!(replayed["status"], "applied");
    assert_eq!(fixed.balance("acct_1", "USD").await, 1200);
    let event = fixed.event("shop", "evt_1").await;
    assert_eq!(event["status"], "applied");
    assert_eq!(event["account_id"], "acct_1");
    assert_eq!(event["amount_minor"], 1200);
    assert_eq!(event["deliveries"], 1, "a replay is not a delivery");

    // Applied stays applied: again by API, and a redelivery is a duplicate.
    let (status, again) = replay_api(&fixed, "evt_1").await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert!(
        again["message"].as_str().unwrap().contains("applied"),
        "{again}"
    );
    fixed
        .send_to("shop", &credit("evt_1", "acct_1", 1200))
        .await;
    assert_eq!(fixed.balance("acct_1", "USD").await, 1200);
    assert_eq!(fixed.entries("acct_1").await.len(), 1);

    let audit = fixed.admin_get("/admin/api/audit").await;
    let audit: Value = audit.json().await.unwrap();
    let rows = audit["audit"].as_array().expect("audit rows");
    let replays: Vec<&Value> = rows.iter().filter(|r| r["action"] == "replay").collect();
    assert_eq!(replays.len(), 1, "{audit}");
    assert_eq!(replays[0]["event_id"], "evt_1");
    assert_eq!(replays[0]["previous_status"], "rejected");
    assert_eq!(replays[0]["actor"], "admin (token)");
    assert_eq!(replays[0]["note"], "account_path fixed");
    fixed.assert_invariants().await;
}

async fn what_cannot_change_is_refused_and_nothing_moves(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    // Still unreadable with the fix: the account is in neither place.
    let body = br#"{"type":"balance.credit","data":{"amount_minor":5,"currency":"USD"}}"#;
    assert_eq!(
        wrong.deliver_body("shop", "evt_none", body).await.status(),
        StatusCode::OK
    );
    // The first replay says why with the current config; the second finds
    // nothing to change and writes nothing.
    let (status, first) = replay_api(&fixed, "evt_none").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["status"], "rejected", "{first}");
    let event = fixed.event("shop", "evt_none").await;
    assert!(
        event["reason"]
            .as_str()
            .unwrap()
            .contains("data.account_id"),
        "{event}"
    );
    let (status, same) = replay_api(&fixed, "evt_none").await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(same["changed"], false, "{same}");

    // A stale debit is for apply or dismiss, not replay.
    fixed.send_ok(&credit_seq("pay_1", "acct_2", 1000, 2)).await;
    fixed.send_ok(&debit_seq("ref_1", "acct_2", 300, 1)).await;
    let response = fixed
        .admin_post("/admin/api/events/demo/ref_1/replay", r#"{"note": "x"}"#)
        .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let missing = fixed
        .admin_post("/admin/api/events/shop/evt_nope/replay", "{}")
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(fixed.balance("acct_2", "USD").await, 1000);
    let audit: Value = fixed
        .admin_get("/admin/api/audit")
        .await
        .json()
        .await
        .unwrap();
    let replays = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["action"] == "replay")
        .count();
    assert_eq!(
        replays, 1,
        "only the replay that changed something: {audit}"
    );
}

async fn two_replays_at_once_apply_once(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    for n in 0..5 {
        wrong
            .send_to("shop", &credit(&format!("evt_{n}"), "acct_1", 100))
            .await;
    }
    let other = fixed
        .another_instance_with(&Options {
            extra_sources: FIXED,
            ..Options::default()
        })
        .await;
    let ids: Vec<String> = (0..5).map(|n| format!("evt_{n}")).collect();
    let mut tasks = Vec::new();
    for id in &ids {
        for app in [&fixed, &other] {
            tasks.push(replay_api(app, id));
        }
    }
    let answers = futures::future::join_all(tasks).await;
    let applied = answers
        .iter()
        .filter(|(status, body)| *status == StatusCode::OK && body["status"] == "applied")
        .count();
    assert_eq!(applied, 5, "{answers:?}");
    for (status, body) in &answers {
        assert!(
            *status == StatusCode::OK || *status == StatusCode::CONFLICT,
            "{status} {body}"
        );
    }
    assert_eq!(fixed.balance("acct_1", "USD").await, 500);
    assert_eq!(fixed.entries("acct_1").await.len(), 5);
    fixed.assert_invariants().await;
}

async fn the_event_page_previews_and_replays_with_a_note(backend: Backend) {
    let (wrong, fixed) = before_and_after(backend).await;
    let invoice = hookledger::providers::Sample {
        event_type: Some("invoice.paid".into()),
        ..credit("inv_1", "acct_9", 2500)
    };
    let answer = wrong.send_to("shop", &invoice).await;
    assert_eq!(answer["status"], "ignored", "{answer}");

    let cookie = login(&fixed).await;
    let path = "/admin/event?source=shop&id=inv_1";
    let before = page(&fixed, path, &cookie).await;
    assert!(
        before.contains("With the current config this event is a credit of $25.00 to acct_9."),
        "{before}"
    );
    // Why it is ignored, with the config it arrived with and with today's.
    assert!(
        before.contains("the current config does (see Replay)"),
        "{before}"
    );
    let wrong_cookie = login(&wrong).await;
    let then = page(&wrong, path, &wrong_cookie).await;
    assert!(then.contains("invoice.paid is not among them"), "{then}");
    assert!(
        before.contains("Replay with the current config</button>"),
        "{before}"
    );
    // The note is required, by the server too.
    let action = "/admin/events/shop/inv_1/replay";
    let csrf = csrf_in(&before);
    let bare = post_form(
        &fixed,
        action,
        &cookie,
        Some(&fixed.address),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(bare.status(), StatusCode::BAD_REQUEST);
    assert_eq!(fixed.balance("acct_9", "USD").await, 0);
    // A read-only holder is shown no form and refused.
    let support = login_with(&fixed, "support-token-0123456789").await;
    let read_only = page(&fixed, path, &support).await;
    assert!(!read_only.contains("Replay with the current config</button>"));
    assert!(
        read_only.contains("can replay it (yours is read-only)"),
        "{read_only}"
    );
    let refused = post_form(
        &fixed,
        action,
        &support,
        Some(&fixed.address),
        &[("csrf", &csrf_in(&read_only)), ("note", "try")],
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(fixed.balance("acct_9", "USD").await, 0);

    // A form for another status than the event's moves nothing.
    let stale_form = post_form(
        &fixed,
        action,
        &cookie,
        Some(&fixed.address),
        &[("csrf", &csrf), ("note", "x"), ("status", "rejected")],
    )
    .await;
    assert_eq!(stale_form.status(), StatusCode::CONFLICT);
    assert_eq!(fixed.balance("acct_9", "USD").await, 0);
    assert!(
        before.contains(r#"name="status" value="ignored""#),
        "{before}"
    );
    let done = post_form(
        &fixed,
        action,
        &cookie,
        Some(&fixed.address),
        &[
            ("csrf", &csrf),
            ("note", "invoice.paid is mapped now"),
            ("status", "ignored"),
        ],
    )
    .await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let after = page(&fixed, &format!("{path}&done=replay"), &cookie).await;
    assert!(
        after.contains(
            "Replayed with the current config: applied, $25.00 to acct_9; its balance is now $25.00."
        ),
        "{after}"
    );
    assert!(
        !after.contains("Replay with the current config</button>"),
        "{after}"
    );
    assert!(after.contains("<td>replay</td><td>ignored</td>"), "{after}");
    assert_eq!(fixed.balance("acct_9", "USD").await, 2500);
    // A held (rejected) event: Replay sits in the resolve form beside
    // Dismiss, under its one note.
    wrong.send_to("shop", &credit("evt_r", "acct_9", 100)).await;
    let rejected = page(&fixed, "/admin/event?source=shop&id=evt_r", &cookie).await;
    assert_eq!(rejected.matches(r#"name="note""#).count(), 1, "{rejected}");
    assert!(
        rejected.contains(r#"formaction="/admin/event/replay?source=shop&#38;id=evt_r" class="primary">Replay with the current config"#),
        "{rejected}"
    );
    assert!(rejected.contains("Dismiss for good"), "{rejected}");
    // The old instance's config maps it as it was: no replay offered there.
    let old = page(&wrong, path, &wrong_cookie).await;
    assert!(!old.contains("<h2>Replay</h2>"), "applied now: {old}");
}

both_backends!(
    a_rejected_event_is_applied_once_after_the_fix,
    what_cannot_change_is_refused_and_nothing_moves,
    two_replays_at_once_apply_once,
    the_event_page_previews_and_replays_with_a_note,
);
