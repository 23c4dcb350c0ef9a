//! The held queue and the gap pages, driven as a browser does: held events
//! listed and resolved, gaps shown, held past their timeout and skipped.

use reqwest::StatusCode;

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::{ADMIN_TOKEN, Backend, TestApp, credit_seq, debit_seq};

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
    assert!(
        dashboard.contains(r#"<a href="/admin/gap?source=ledger&#38;account=acct_9">acct_9</a>"#)
    );
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
        "/admin/gap?source=ledger&account=acct_9&done=skip"
    );
    assert_eq!(app.balance("acct_9", "USD").await, 300);
    assert_eq!(app.event("ledger", "m7").await["status"], "waiting");
    // The same form sent twice skips nothing more.
    let twice = post_form(&app, skip, &cookie, Some(&app.address), &confirmed).await;
    assert_eq!(twice.status(), StatusCode::CONFLICT);
    assert_eq!(app.balance("acct_9", "USD").await, 300);
    let after = page(
        &app,
        "/admin/gap?source=ledger&account=acct_9&done=skip",
        &cookie,
    )
    .await;
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
    held_events_are_listed_and_can_be_dismissed_or_applied_by_script,
    gaps_are_shown_held_and_skipped_from_the_page,
);
