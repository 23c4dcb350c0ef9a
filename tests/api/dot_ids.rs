//! Ids are the provider's and may be `.` or `..`, which browsers and HTTP
//! libraries resolve away as dot segments of a URL path (percent-encoded
//! too). Every stored event and gap must still be reachable from the links
//! and forms the pages carry, resolved exactly as a browser resolves them
//! (the WHATWG URL parser, as in reqwest's `Url::join`).

use hookledger::providers::Sample;
use reqwest::{StatusCode, Url};

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::{Backend, STRIPE_SECRET, TestApp, credit_seq, json_with_status, now};

/// Every `attribute="..."` value in `html` that starts with `prefix`,
/// unescaped as a browser would.
fn links(html: &str, attribute: &str, prefix: &str) -> Vec<String> {
    let marker = format!(r#"{attribute}="{prefix}"#);
    html.match_indices(&marker)
        .map(|(at, _)| {
            let value = &html[at + attribute.len() + 2..];
            value[..value.find('"').unwrap()]
                .replace("&#38;", "&")
                .replace("&amp;", "&")
        })
        .collect()
}

/// Resolves `href` against the app's address as a browser does; returns
/// the path and query to request.
fn resolve(app: &TestApp, href: &str) -> String {
    let url = Url::parse(&format!("{}/admin", app.address))
        .unwrap()
        .join(href)
        .unwrap();
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// A Stripe credit in a currency that does not exist: stored and held.
async fn deliver_held_stripe_event(app: &TestApp, event_id: &str) {
    let sample = Sample {
        event_id: event_id.to_owned(),
        event_type: None,
        account_id: "acct_1".to_owned(),
        amount_minor: 100,
        currency: "ZZZ".to_owned(),
        sequence: None,
        timestamp: now().timestamp(),
        payment: None,
    };
    let response = app
        .deliver("stripe", "stripe", STRIPE_SECRET, &sample)
        .await;
    let answer = json_with_status(response, StatusCode::OK).await;
    assert_eq!(answer["status"], "rejected", "{event_id}");
}

async fn events_named_dot_and_dot_dot_open_and_resolve_from_their_links(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for id in [".", ".."] {
        deliver_held_stripe_event(&app, id).await;
    }
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    let hrefs = links(&dashboard, "href", "/admin/event?");
    for id in [".", ".."] {
        let href = hrefs
            .iter()
            .find(|h| h.ends_with(&format!("&id={id}")))
            .unwrap_or_else(|| panic!("no link to {id:?} in {hrefs:?}"));
        let event_page = page(&app, &resolve(&app, href), &cookie).await;
        assert!(
            event_page.contains(&format!(
                r#"<h1>stripe / <span class="id">{id}</span></h1>"#
            )),
            "{id:?} did not open its own page"
        );
        let action = links(&event_page, "action", "/admin/event/dismiss?")
            .pop()
            .expect("a dismiss form");
        let csrf = csrf_in(&event_page);
        let fields = [("csrf", csrf.as_str()), ("note", "test event")];
        let path = resolve(&app, &action);
        let dismissed = post_form(&app, &path, &cookie, Some(&app.address), &fields).await;
        assert_eq!(dismissed.status(), StatusCode::SEE_OTHER, "{id:?}");
        let location = dismissed.headers()["location"].to_str().unwrap().to_owned();
        let after = page(&app, &resolve(&app, &location), &cookie).await;
        assert!(after.contains("Dismissed"), "{id:?}");
        let stored = json_with_status(
            app.admin_get(&format!("/admin/api/event?source=stripe&id={id}"))
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(stored["status"], "dismissed", "{id:?}");
    }
    app.assert_invariants().await;
}

async fn a_gap_on_an_account_named_dot_dot_opens_and_is_skipped(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let answer = app.send_to("ledger", &credit_seq("m3", "..", 300, 3)).await;
    assert_eq!(answer["status"], "waiting");
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    let href = links(&dashboard, "href", "/admin/gap?")
        .pop()
        .expect("a gap link");
    let gap_page = page(&app, &resolve(&app, &href), &cookie).await;
    assert!(
        gap_page.contains(r#"<h1>ledger / <span class="id">..</span>: waiting behind a gap</h1>"#)
    );
    let action = links(&gap_page, "action", "/admin/gap/skip?")
        .pop()
        .expect("a skip form");
    let csrf = csrf_in(&gap_page);
    let fields = [
        ("csrf", csrf.as_str()),
        ("through", "2"),
        ("note", "numbers 1 and 2 were never sent"),
    ];
    let skipped = post_form(
        &app,
        &resolve(&app, &action),
        &cookie,
        Some(&app.address),
        &fields,
    )
    .await;
    assert_eq!(skipped.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.balance("..", "USD").await,
        0,
        "'..' is not an account path"
    );
    let event = json_with_status(
        app.admin_get("/admin/api/event?source=ledger&id=m3").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(event["status"], "applied");
    app.assert_invariants().await;
}

both_backends!(
    events_named_dot_and_dot_dot_open_and_resolve_from_their_links,
    a_gap_on_an_account_named_dot_dot_opens_and_is_skipped,
);
