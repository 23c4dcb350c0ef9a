//! The audit log: every operator action newest first, by actor, paged.

use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::*;

async fn every_action_is_listed_newest_first_and_by_actor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_0", "acct_1", 1000, 3)).await;
    app.send_ok(&debit_seq("msg_1", "acct_1", 100, 1)).await;
    app.send_ok(&debit_seq("msg_2", "acct_1", 200, 2)).await;
    let cookie = login(&app).await;
    let held = page(&app, "/admin/events/demo/msg_1", &cookie).await;
    let applied = post_form(
        &app,
        "/admin/events/demo/msg_1/apply",
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf_in(&held)), ("note", "checked with billing")],
    )
    .await;
    assert_eq!(applied.status(), StatusCode::SEE_OTHER);
    let dismissed = app
        .admin_post(
            "/admin/api/events/demo/msg_2/dismiss",
            r#"{"note": "sent twice by mistake"}"#,
        )
        .await;
    assert_eq!(dismissed.status(), StatusCode::OK);

    let log = page(&app, "/admin/audit", &cookie).await;
    let dismiss_at = log.find("sent twice by mistake").expect("dismiss listed");
    let apply_at = log.find("checked with billing").expect("apply listed");
    assert!(dismiss_at < apply_at, "newest first: {log}");
    let by_token = page(&app, "/admin/audit?actor=admin+%28token%29", &cookie).await;
    assert!(by_token.contains("sent twice by mistake"), "{by_token}");
    assert!(!by_token.contains("checked with billing"), "{by_token}");

    let first: Value = json_with_status(
        app.admin_get("/admin/api/audit?limit=1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["audit"][0]["action"], "dismiss");
    let before = first["next_before"].as_i64().expect("a next page");
    let second: Value = json_with_status(
        app.admin_get(&format!("/admin/api/audit?limit=1&before={before}"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["audit"][0]["action"], "apply");
    assert_eq!(second["audit"][0]["actor"], "admin (browser)");
    let bad = app.admin_get("/admin/api/audit?actor=a%01b").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

both_backends!(every_action_is_listed_newest_first_and_by_actor);
