//! The admin JSON API: bearer auth on every route, filters, pagination.

use reqwest::{Method, StatusCode};

use crate::helpers::{
    ADMIN_TOKEN, Backend, TestApp, assert_error, credit, credit_seq, debit_seq, json_with_status,
};

/// Every admin API route, with a method and a concrete path.
const API_ROUTES: [(&str, &str); 10] = [
    ("GET", "/admin/api/events"),
    ("GET", "/admin/api/events/demo/msg_1"),
    ("POST", "/admin/api/events/demo/msg_1/apply"),
    ("POST", "/admin/api/events/demo/msg_1/dismiss"),
    ("GET", "/admin/api/accounts/acct_1"),
    ("GET", "/admin/api/metrics"),
    ("GET", "/admin/api/check"),
    ("GET", "/admin/api/outbox"),
    ("GET", "/admin/api/failures"),
    ("GET", "/admin/api/audit"),
];

async fn every_api_route_needs_the_token(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_0", "acct_1", 1, 2)).await;
    // A late debit: held as stale.
    app.send_ok(&debit_seq("msg_1", "acct_1", 1, 1)).await;
    for (method, path) in API_ROUTES {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let bare = app
            .client
            .request(method.clone(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(bare.headers()["www-authenticate"], "Bearer");
        assert_error(bare, StatusCode::UNAUTHORIZED, "unauthorized").await;
        for bad in ["wrong-token", &ADMIN_TOKEN[..ADMIN_TOKEN.len() - 1], ""] {
            let response = app
                .client
                .request(method.clone(), app.url(path))
                .bearer_auth(bad)
                .send()
                .await
                .unwrap();
            assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
        }
        // A right token clears the failures before sign-in throttling
        // (tests/api/sign_in.rs) would answer 429.
        app.admin_get("/admin/api/metrics").await;
        // A browser session cookie is not enough for the API either.
        let response = app
            .client
            .request(method.clone(), app.url(path))
            .header("cookie", "hookledger_session=1.2.3")
            .send()
            .await
            .unwrap();
        assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    assert_eq!(
        app.event("demo", "msg_1").await["status"],
        "stale",
        "no unauthenticated action happened"
    );
    app.assert_invariants().await;
}

async fn events_filter_and_paginate_newest_first(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for i in 0..7 {
        app.send_ok(&credit(&format!("msg_{i}"), &format!("acct_{}", i % 2), 10))
            .await;
    }
    let page = json_with_status(
        app.admin_get("/admin/api/events?limit=3").await,
        StatusCode::OK,
    )
    .await;
    let ids: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["msg_6", "msg_5", "msg_4"]);
    let before = page["next_before"].as_i64().unwrap();
    let next = json_with_status(
        app.admin_get(&format!("/admin/api/events?limit=3&before={before}"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(next["events"][0]["event_id"], "msg_3");
    let last = json_with_status(
        app.admin_get(&format!(
            "/admin/api/events?limit=3&before={}",
            next["next_before"]
        ))
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(last["events"].as_array().unwrap().len(), 1);
    assert!(last["next_before"].is_null());

    let by_account = json_with_status(
        app.admin_get("/admin/api/events?account=acct_1&source=demo&status=applied")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(by_account["events"].as_array().unwrap().len(), 3);
    let other_source = json_with_status(
        app.admin_get("/admin/api/events?source=stripe").await,
        StatusCode::OK,
    )
    .await;
    assert!(other_source["events"].as_array().unwrap().is_empty());
    let empty_filters = json_with_status(
        app.admin_get("/admin/api/events?source=&status=&account=")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(empty_filters["events"].as_array().unwrap().len(), 7);
    app.assert_invariants().await;
}

async fn bad_admin_requests_are_400_or_404(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_0", "acct_1", 1, 2)).await;
    // A late debit: held as stale.
    app.send_ok(&debit_seq("msg_1", "acct_1", 1, 1)).await;
    assert_error(
        app.admin_get("/admin/api/events?status=pending").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_error(
        app.admin_get("/admin/api/events?limit=0").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_error(
        app.admin_get("/admin/api/events?limit=many").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_error(
        app.admin_get("/admin/api/events/demo/nope").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert_error(
        app.admin_get("/admin/api/accounts/nobody").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let unknown_action = app
        .admin_post("/admin/api/events/demo/msg_1/refund", "")
        .await;
    let body = assert_error(unknown_action, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(body["message"], "action not found");
    let apply = "/admin/api/events/demo/msg_1/apply";
    assert_error(
        app.admin_post(apply, "{not json").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_error(
        app.admin_post(apply, r#"{"notes": "typo"}"#).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    let long = format!(r#"{{"note": "{}"}}"#, "x".repeat(2001));
    assert_error(
        app.admin_post(apply, &long).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_eq!(
        app.event("demo", "msg_1").await["status"],
        "stale",
        "a refused request changes nothing"
    );
    app.assert_invariants().await;
}

async fn accounts_list_balances_and_entries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    app.send_ok(&hookledger::providers::Sample {
        currency: "EUR".into(),
        ..credit("msg_2", "acct_1", 300)
    })
    .await;
    let body = json_with_status(
        app.admin_get("/admin/api/accounts/acct_1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(body["account_id"], "acct_1");
    assert_eq!(body["balances"][0]["currency"], "EUR");
    assert_eq!(body["balances"][0]["balance_minor"], 300);
    assert_eq!(body["balances"][1]["currency"], "USD");
    let entries = body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    for key in [
        "source",
        "event_id",
        "currency",
        "amount_minor",
        "balance_after_minor",
        "created_at",
        "operator_applied",
    ] {
        assert!(
            entries[0].get(key).is_some(),
            "entry lacks {key}: {}",
            entries[0]
        );
    }
    let check = json_with_status(app.admin_get("/admin/api/check").await, StatusCode::OK).await;
    assert_eq!(check, serde_json::json!({"ok": true, "violations": []}));
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    assert_eq!(metrics["deliveries"]["demo"]["applied"], 2);
    app.assert_invariants().await;
}

/// Text nothing stored can hold (a NUL, other control characters) is a 400
/// on both backends, before it reaches the database: PostgreSQL refuses NUL
/// where SQLite would store it.
async fn control_characters_in_admin_input_are_400(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_0", "acct_1", 100, 2)).await;
    app.send_ok(&debit_seq("msg_1", "acct_1", 50, 1)).await;
    for path in [
        "/admin/api/event?source=demo&id=msg%00",
        "/admin/api/events?account=a%00b",
        "/admin/api/events?source=de%01mo",
        "/admin/api/account?id=a%00b",
        "/admin/api/guard?source=demo&account=a%00b",
        "/admin/api/gap?source=demo&account=a%1Fb",
    ] {
        let answer = assert_error(
            app.admin_get(path).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("without control characters"),
            "{path}: {answer}"
        );
    }
    let apply = "/admin/api/events/demo/msg_1/apply";
    assert_error(
        app.admin_post(apply, r#"{"note": "bug\u0000"}"#).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    let ok = app.admin_post(apply, r#"{"note": "two\nlines"}"#).await;
    assert_eq!(ok.status(), StatusCode::OK, "line breaks are text");
    app.assert_invariants().await;
}

both_backends!(
    control_characters_in_admin_input_are_400,
    every_api_route_needs_the_token,
    events_filter_and_paginate_newest_first,
    bad_admin_requests_are_400_or_404,
    accounts_list_balances_and_entries,
);
