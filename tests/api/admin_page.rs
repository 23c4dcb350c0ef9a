//! The admin page: login, escaping, and actions protected against cross-site
//! requests. The held queue and gap pages are in `admin_queues.rs`.

use reqwest::StatusCode;

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::{ADMIN_TOKEN, Backend, TestApp, credit_seq, debit_seq, json_with_status};

async fn login_is_required_and_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let anonymous = app
        .client
        .get(app.url("/admin"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(anonymous.contains("Sign in") && !anonymous.contains("Recent events"));
    let wrong = app
        .client
        .post(app.url("/admin/login"))
        .form(&[("token", "nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get("set-cookie").is_none());
    let forged = app
        .client
        .get(app.url("/admin"))
        .header("cookie", "hookledger_session=99999999999.aa.bb")
        .send()
        .await
        .unwrap();
    assert!(forged.text().await.unwrap().contains("Sign in"));
    let cross_site_login = app
        .client
        .post(app.url("/admin/login"))
        .header("origin", "https://evil.example")
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site_login.status(), StatusCode::FORBIDDEN);
    // Behind a TLS-terminating proxy the cookie is marked Secure; over plain
    // HTTP (see `login`) it is not.
    let over_https = app
        .client
        .post(app.url("/admin/login"))
        .header("x-forwarded-proto", "https")
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .unwrap();
    assert!(
        over_https.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("; Secure")
    );
    let cookie = login(&app).await;
    assert!(
        page(&app, "/admin", &cookie)
            .await
            .contains("Recent events")
    );
    // Scripts may use the bearer token on pages too.
    let scripted = app
        .client
        .get(app.url("/admin"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert!(scripted.text().await.unwrap().contains("Recent events"));
    // A browser session does not open the JSON API: only the bearer token does.
    let api = app
        .client
        .get(app.url("/admin/api/events"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);

    let csrf = csrf_in(&page(&app, "/admin", &cookie).await);
    let logout = "/admin/logout";
    let forged = post_form(&app, logout, &cookie, Some(&app.address), &[("csrf", "00")]).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let cross_site = post_form(
        &app,
        logout,
        &cookie,
        Some("https://evil.example"),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let logout = post_form(
        &app,
        logout,
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(logout.status(), StatusCode::SEE_OTHER);
    assert!(
        logout.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
}

/// The script tag is on the page as text (escaped by name or by number).
fn shows_escaped_script(html: &str) -> bool {
    html.contains("&lt;script&gt;alert(1)") || html.contains("&#60;script&#62;alert(1)")
}

async fn payloads_render_as_text(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let script = "<script>alert(1)</script>";
    let body = serde_json::json!({
        "type": script,
        "data": {"account_id": script, "note": script},
    });
    let id = "msg_<b>1</b>/x";
    json_with_status(
        app.deliver_body("demo", id, body.to_string().as_bytes())
            .await,
        StatusCode::OK,
    )
    .await;
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        !dashboard.contains("<script>") && !dashboard.contains("<b>1</b>"),
        "unescaped: {dashboard}"
    );
    assert!(shows_escaped_script(&dashboard), "{dashboard}");
    let detail = page(
        &app,
        "/admin/events/demo/msg_%3Cb%3E1%3C%2Fb%3E%2Fx",
        &cookie,
    )
    .await;
    assert!(!detail.contains("<script>"), "unescaped: {detail}");
    assert!(shows_escaped_script(&detail), "{detail}");
    app.assert_invariants().await;
}

async fn actions_need_csrf_token_and_same_origin(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 2)).await;
    // A late debit is held as stale.
    app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await;
    let cookie = login(&app).await;
    let detail = page(&app, "/admin/events/demo/msg_2", &cookie).await;
    assert!(
        detail.contains(r#"Apply -$2.50 to <span class="id">acct_1</span>"#),
        "{detail}"
    );
    let csrf = csrf_in(&detail);
    let apply = "/admin/events/demo/msg_2/apply";

    let no_token = post_form(&app, apply, &cookie, Some(&app.address), &[("note", "x")]).await;
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    let wrong_token = post_form(
        &app,
        apply,
        &cookie,
        Some(&app.address),
        &[("csrf", "00"), ("note", "x")],
    )
    .await;
    assert_eq!(wrong_token.status(), StatusCode::FORBIDDEN);
    let cross_site = post_form(
        &app,
        apply,
        &cookie,
        Some("https://evil.example"),
        &[("csrf", &csrf), ("note", "x")],
    )
    .await;
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let no_session = post_form(
        &app,
        apply,
        "",
        Some(&app.address),
        &[("csrf", &csrf), ("note", "x")],
    )
    .await;
    assert_eq!(no_session.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.balance("acct_1", "USD").await,
        1000,
        "no refused request moved money"
    );

    let ok = post_form(
        &app,
        apply,
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf), ("note", "late delivery")],
    )
    .await;
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        ok.headers()["location"],
        "/admin/event?source=demo&id=msg_2&done=apply"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    let after = page(
        &app,
        "/admin/event?source=demo&id=msg_2&done=apply",
        &cookie,
    )
    .await;
    assert!(
        after.contains("Applied")
            && after.contains("late delivery")
            && after.contains("admin (browser)")
    );
    let twice = post_form(
        &app,
        apply,
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf), ("note", "again")],
    )
    .await;
    assert_eq!(twice.status(), StatusCode::CONFLICT);
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    app.assert_invariants().await;
}

async fn sessions_expire(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let cookie = login(&app).await;
    assert!(
        page(&app, "/admin", &cookie)
            .await
            .contains("Recent events")
    );
    app.clock
        .advance(chrono::TimeDelta::hours(12) + chrono::TimeDelta::seconds(1));
    let expired = page(&app, "/admin", &cookie).await;
    assert!(expired.contains("Sign in") && !expired.contains("Recent events"));
}

both_backends!(
    sessions_expire,
    login_is_required_and_checked,
    payloads_render_as_text,
    actions_need_csrf_token_and_same_origin,
);
