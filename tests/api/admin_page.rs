//! The minimal admin page: login, escaping, and actions protected against
//! cross-site requests.

use reqwest::{Response, StatusCode};

use crate::helpers::{ADMIN_TOKEN, Backend, TestApp, credit_seq, debit_seq, json_with_status};

/// Logs in through the form; returns the `Cookie` header value.
async fn login(app: &TestApp) -> String {
    let response = app
        .client
        .post(app.url("/admin/login"))
        .header("origin", &app.address)
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let set_cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/admin", "Max-Age="] {
        assert!(
            set_cookie.contains(attribute),
            "{attribute} missing: {set_cookie}"
        );
    }
    assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
    set_cookie.split(';').next().unwrap().to_owned()
}

async fn page(app: &TestApp, path: &str, cookie: &str) -> String {
    let response = app
        .client
        .get(app.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'")
    );
    response.text().await.unwrap()
}

/// The CSRF token embedded in a page's forms.
fn csrf_in(html: &str) -> String {
    let marker = r#"name="csrf" value=""#;
    let start = html.find(marker).expect("page has a form") + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

async fn post_form(
    app: &TestApp,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    fields: &[(&str, &str)],
) -> Response {
    let mut request = app
        .client
        .post(app.url(path))
        .header("cookie", cookie)
        .form(fields);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap()
}

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
    assert!(detail.contains("Apply USD -2.50 to acct_1"), "{detail}");
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
        "/admin/events/demo/msg_2?done=apply"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    let after = page(&app, "/admin/events/demo/msg_2?done=apply", &cookie).await;
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

async fn held_events_are_listed_and_can_be_dismissed_or_applied_by_script(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 3)).await;
    // Late debits are held.
    app.send_ok(&debit_seq("msg_2", "acct_1", 250, 2)).await;
    app.send_ok(&debit_seq("msg_3", "acct_1", 40, 1)).await;
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    let held = dashboard.split("<h1>Recent events</h1>").next().unwrap();
    let (two, three) = (
        held.find(">msg_2<").expect("msg_2 held"),
        held.find(">msg_3<").expect("msg_3 held"),
    );
    assert!(two < three, "oldest first");
    assert!(!held.contains(">msg_1<"));

    let csrf = csrf_in(&page(&app, "/admin/events/demo/msg_2", &cookie).await);
    let fields = [
        ("csrf", csrf.as_str()),
        ("note", "duplicate of a manual credit"),
    ];
    let dismissed = post_form(
        &app,
        "/admin/events/demo/msg_2/dismiss",
        &cookie,
        Some(&app.address),
        &fields,
    )
    .await;
    assert_eq!(dismissed.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.event("demo", "msg_2").await["status"], "dismissed");

    // A script with the bearer token needs no CSRF token: browsers never send
    // that header on their own.
    let scripted = app
        .client
        .post(app.url("/admin/events/demo/msg_3/apply"))
        .bearer_auth(ADMIN_TOKEN)
        .form(&[("note", "by script")])
        .send()
        .await
        .unwrap();
    assert_eq!(scripted.status(), StatusCode::SEE_OTHER);
    let event = app.event("demo", "msg_3").await;
    assert_eq!(event["audit"][0]["actor"], "admin (token)");
    assert_eq!(app.balance("acct_1", "USD").await, 960);
    app.assert_invariants().await;
}

async fn gaps_are_shown_held_and_skipped_from_the_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for sequence in [1, 3, 4] {
        app.send_to(
            "ledger",
            &credit_seq(&format!("m{sequence}"), "acct_9", 100, sequence),
        )
        .await;
    }
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains("Held for an operator (0)"),
        "not yet past the timeout"
    );
    assert!(dashboard.contains(r#"<a href="/admin/gaps/ledger/acct_9">acct_9</a>"#));
    let event = page(&app, "/admin/events/ledger/m3", &cookie).await;
    assert!(event.contains("waits behind a gap"), "{event}");
    app.clock.advance(chrono::TimeDelta::seconds(601));
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains("Held for an operator (1)"),
        "{dashboard}"
    );

    let gap = page(&app, "/admin/gaps/ledger/acct_9", &cookie).await;
    assert!(
        gap.contains("Skip 2 and apply 2 event(s) in order"),
        "{gap}"
    );
    let csrf = csrf_in(&gap);
    assert!(gap.contains(r#"name="through" value="2""#), "{gap}");
    // While the operator reads the page, 7 parks behind a new gap 5-6: the
    // form skips what the page showed, and no more.
    app.send_to("ledger", &credit_seq("m7", "acct_9", 100, 7))
        .await;
    let skip = "/admin/gaps/ledger/acct_9/skip";
    let no_note = post_form(
        &app,
        skip,
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf), ("through", "2")],
    )
    .await;
    assert_eq!(no_note.status(), StatusCode::BAD_REQUEST);
    let cross_site = post_form(
        &app,
        skip,
        &cookie,
        Some("https://evil.example"),
        &[("csrf", &csrf), ("note", "x"), ("through", "2")],
    )
    .await;
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.balance("acct_9", "USD").await,
        100,
        "refused: nothing moved"
    );
    let confirmed = [
        ("csrf", csrf.as_str()),
        ("note", "number 2 was voided upstream"),
        ("through", "2"),
    ];
    let done = post_form(&app, skip, &cookie, Some(&app.address), &confirmed).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        done.headers()["location"],
        "/admin/gaps/ledger/acct_9?done=skip"
    );
    assert_eq!(app.balance("acct_9", "USD").await, 300);
    assert_eq!(app.event("ledger", "m7").await["status"], "waiting");
    // The same form sent twice skips nothing more.
    let twice = post_form(&app, skip, &cookie, Some(&app.address), &confirmed).await;
    assert_eq!(twice.status(), StatusCode::CONFLICT);
    assert_eq!(app.balance("acct_9", "USD").await, 300);
    let after = page(&app, "/admin/gaps/ledger/acct_9?done=skip", &cookie).await;
    assert!(
        after.contains("sequence 5")
            && after.contains("number 2 was voided upstream")
            && after.contains("admin (browser)")
            && after.contains("skipped 2; applied 2 parked event(s)"),
        "{after}"
    );
    app.assert_invariants().await;
}

both_backends!(
    gaps_are_shown_held_and_skipped_from_the_page,
    sessions_expire,
    held_events_are_listed_and_can_be_dismissed_or_applied_by_script,
    login_is_required_and_checked,
    payloads_render_as_text,
    actions_need_csrf_token_and_same_origin,
);
