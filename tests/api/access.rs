//! Who may do what on the admin: every route the app registers under
//! `/admin` asks for a token (a page without one shows the sign-in form or
//! redirects to it), named tokens are audited by name, and a read-only
//! token reads everything and changes nothing, by API or by form.

use reqwest::{Method, StatusCode};

use crate::browser::{csrf_in, login_with, page, post_form};
use crate::helpers::*;

const OPS: &str = "ops-token-0123456789abcd";
const SUPPORT: &str = "support-token-0123456789";

const TOKENS: &str = r#"
[[admin.tokens]]
name = "ops"
token = "ops-token-0123456789abcd"

[[admin.tokens]]
name = "support"
token = "support-token-0123456789"
read_only = true
"#;

/// Paths that answer without a token: the sign-in form (the dashboard's
/// address shows it), its stylesheet, and signing in or out.
const OPEN: [&str; 5] = [
    "/admin",
    "/admin/",
    "/admin/static/admin.css",
    "/admin/login",
    "/admin/logout",
];

/// A concrete request for a registered pattern: path segments filled in,
/// and the query the query-form routes read.
fn concrete(pattern: &str) -> String {
    let path = pattern
        .replace("{source}", "demo")
        .replace("{event_id}", "msg_2")
        .replace("{account_id}", "acct_1")
        .replace("{action}", "apply");
    format!("{path}?source=demo&id=msg_2&account=acct_1")
}

async fn app(backend: Backend) -> TestApp {
    // The admin scope sits under [admin], so the tables go after it: in
    // the sources' slot, which comes last.
    let app = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: TOKENS,
            ..Options::default()
        },
    )
    .await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 2)).await;
    // A late debit: held as stale.
    app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await;
    app
}

async fn request(app: &TestApp, method: &str, path: &str, token: Option<&str>) -> StatusCode {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app
        .client
        .request(method, app.url(path))
        .header("origin", &app.address)
        .header("content-type", "application/json")
        .body(r#"{"note": "x", "through": 3, "to": 0, "guard_seen": 2}"#);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().status()
}

async fn every_admin_route_asks_and_read_only_changes_nothing(backend: Backend) {
    let app = app(backend).await;
    let routes: Vec<(String, Vec<String>)> = hookledger::http::routes::registered()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/admin"))
        .collect();
    assert!(
        routes.len() >= 30,
        "every admin route is registered: {routes:?}"
    );
    for (pattern, methods) in &routes {
        if OPEN.contains(&pattern.as_str()) {
            continue;
        }
        let path = concrete(pattern);
        for method in methods {
            let bare = request(&app, method, &path, None).await;
            assert!(
                [StatusCode::UNAUTHORIZED, StatusCode::SEE_OTHER].contains(&bare),
                "{method} {path} without a token: {bare}"
            );
            if method != "GET" && method != "HEAD" {
                let read_only = request(&app, method, &path, Some(SUPPORT)).await;
                assert_eq!(
                    read_only,
                    StatusCode::FORBIDDEN,
                    "{method} {path} read-only"
                );
            } else {
                let read = request(&app, method, &path, Some(SUPPORT)).await;
                assert_ne!(read, StatusCode::UNAUTHORIZED, "{method} {path} read-only");
                assert_ne!(read, StatusCode::FORBIDDEN, "{method} {path} read-only");
            }
        }
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1000, "nothing moved");
    assert_eq!(app.event("demo", "msg_2").await["status"], "stale");

    // A full named token acts, and the audit log names it.
    let applied = app
        .client
        .post(app.url("/admin/api/events/demo/msg_2/apply"))
        .bearer_auth(OPS)
        .body(r#"{"note": "checked"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(applied.status(), StatusCode::OK);
    let audit = app.event("demo", "msg_2").await["audit"].clone();
    assert_eq!(audit[0]["actor"], "ops (token)");
}

async fn a_read_only_session_sees_no_forms_and_cannot_post(backend: Backend) {
    let app = app(backend).await;
    let cookie = login_with(&app, SUPPORT).await;
    let held = page(&app, "/admin/event?source=demo&id=msg_2", &cookie).await;
    assert!(held.contains("yours is read-only"), "{held}");
    // The sign-out form still carries the session's CSRF token.
    let fields = [("csrf", csrf_in(&held)), ("note", "trying".to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let apply = "/admin/event/apply?source=demo&id=msg_2";
    let posted = post_form(&app, apply, &cookie, Some(&app.address), &fields).await;
    assert_eq!(posted.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    // No page offers a read-only holder the action a full holder sees
    // there (the dashboard's "Send again" for a dead letter: outbox_admin).
    let ops = login_with(&app, OPS).await;
    for (path, action) in [
        (
            "/admin/event?source=demo&id=msg_2",
            r#"type="submit" class="primary""#,
        ),
        ("/admin/held", "Preview applying"),
    ] {
        assert!(page(&app, path, &ops).await.contains(action), "{path}");
        let html = page(&app, path, &cookie).await;
        assert!(!html.contains(action), "{path}: {html}");
    }
    let held = page(&app, "/admin/held", &cookie).await;
    assert!(held.contains("Your admin token is read-only"), "{held}");
    assert!(!held.contains(r#"name="pick""#), "{held}");
    // Every page a read-only holder reads posts nowhere but sign-out.
    for path in [
        "/admin",
        "/admin/held",
        "/admin/events",
        "/admin/event?source=demo&id=msg_2",
        "/admin/account?id=acct_1",
        "/admin/guard?source=demo&account=acct_1",
        "/admin/audit",
        "/admin/failures",
    ] {
        let html = page(&app, path, &cookie).await;
        assert_eq!(posting_forms(&html), ["/admin/logout"], "{path}: {html}");
    }
    // The cookie's holder cannot be changed: its tag binds the name.
    let promoted = cookie.replacen(".support.", ".admin.", 1);
    let as_admin = post_form(&app, apply, &promoted, Some(&app.address), &fields).await;
    assert_eq!(as_admin.status(), StatusCode::UNAUTHORIZED);
}

/// A read-only holder's sign-in never clears the address's failures, so it
/// cannot be used to keep guessing at the other tokens without waiting.
async fn a_read_only_sign_in_does_not_reset_the_wait(backend: Backend) {
    let app = app(backend).await;
    let check = |token: &'static str| {
        let app = &app;
        async move {
            app.client
                .get(app.url("/admin/api/check"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    for _ in 0..4 {
        assert_eq!(
            check("wrong-token-0123456789").await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(check(SUPPORT).await, StatusCode::OK);
    // The fifth failure is counted on the first four: the address waits.
    assert_eq!(
        check("wrong-token-0123456789").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(check(OPS).await, StatusCode::TOO_MANY_REQUESTS);
}

both_backends!(
    a_read_only_sign_in_does_not_reset_the_wait,
    every_admin_route_asks_and_read_only_changes_nothing,
    a_read_only_session_sees_no_forms_and_cannot_post,
);

/// Where each of a page's POST forms posts.
fn posting_forms(html: &str) -> Vec<String> {
    html.split("<form")
        .skip(1)
        .filter_map(|form| {
            let tag = &form[..form.find('>')?];
            if !tag.contains(r#"method="post""#) {
                return None;
            }
            let action = tag.split(r#"action=""#).nth(1)?;
            Some(action[..action.find('"')?].to_owned())
        })
        .collect()
}
