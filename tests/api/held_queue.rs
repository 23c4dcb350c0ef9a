//! The held queue's bulk actions: choose events, preview the total change
//! per account and currency, confirm with a note; each event is applied or
//! dismissed once, audited, and a resent form moves nothing twice.

use futures::StreamExt;
use reqwest::StatusCode;

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::*;

async fn a_selection_is_previewed_then_applied_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for (account, paid) in [("cus_1", 1000), ("cus_2", 2000)] {
        app.send_ok(&credit_seq(&format!("pay_{account}"), account, paid, 5))
            .await;
    }
    // Late debits: held as stale.
    app.send_ok(&debit_seq("late_1a", "cus_1", 100, 1)).await;
    app.send_ok(&debit_seq("late_1b", "cus_1", 200, 2)).await;
    app.send_ok(&debit_seq("late_2", "cus_2", 50, 1)).await;
    // A rejected event: it cannot be applied as it stands.
    let rejected = serde_json::json!({
        "type": "balance.credit",
        "data": {"account_id": "cus_2", "amount_minor": -5, "currency": "USD"},
    });
    json_with_status(
        app.deliver_body("demo", "bad_1", rejected.to_string().as_bytes())
            .await,
        StatusCode::OK,
    )
    .await;

    let cookie = login(&app).await;
    // The dashboard leads to the queue while anything is held.
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains(r#"<a href="/admin/held" class="held-queue">"#),
        "{dashboard}"
    );
    let queue = page(&app, "/admin/held", &cookie).await;
    for (status, id) in [
        ("stale", "late_1a"),
        ("stale", "late_1b"),
        ("stale", "late_2"),
        ("rejected", "bad_1"),
    ] {
        assert!(
            queue.contains(&format!(r#"value="{status}@demo:{id}""#)),
            "{id}: {queue}"
        );
    }
    let csrf = csrf_in(&queue);
    let mut fields = vec![("csrf", csrf.as_str()), ("action", "apply")];
    for pick in [
        "stale@demo:late_1a",
        "stale@demo:late_1b",
        "stale@demo:late_2",
        "rejected@demo:bad_1",
    ] {
        fields.push(("pick", pick));
    }
    let preview = post_form(
        &app,
        "/admin/held/preview",
        &cookie,
        Some(&app.address),
        &fields,
    )
    .await;
    assert_eq!(preview.status(), StatusCode::OK);
    let preview = preview.text().await.unwrap();
    assert!(
        preview.contains(
            "<td>cus_1</td><td>USD</td><td class=\"num\">-$3.00</td><td class=\"num\">2</td>"
        ),
        "{preview}"
    );
    assert!(
        preview.contains("<td>cus_2</td><td>USD</td><td class=\"num\">-$0.50</td>"),
        "{preview}"
    );
    assert!(
        preview.contains("only a stale event can be applied"),
        "{preview}"
    );
    assert_eq!(
        app.balance("cus_1", "USD").await,
        1000,
        "a preview changes nothing"
    );
    // The confirm form carries only what will be applied.
    assert!(
        !preview.contains(r#"name="pick" value="rejected@demo:bad_1""#),
        "{preview}"
    );

    let mut confirm = vec![("csrf", csrf.as_str()), ("action", "apply")];
    for pick in ["late_1a", "late_1b", "late_2"] {
        let line = format!(r#"name="pick" value="stale@demo:{pick}""#);
        assert!(preview.contains(&line), "{pick}: {preview}");
    }
    for pick in [
        "stale@demo:late_1a",
        "stale@demo:late_1b",
        "stale@demo:late_2",
    ] {
        confirm.push(("pick", pick));
    }
    let without_note = post_form(
        &app,
        "/admin/held/act",
        &cookie,
        Some(&app.address),
        &confirm,
    )
    .await;
    assert_eq!(without_note.status(), StatusCode::BAD_REQUEST);
    confirm.push(("note", "late refunds, checked with billing"));
    let done = post_form(
        &app,
        "/admin/held/act",
        &cookie,
        Some(&app.address),
        &confirm,
    )
    .await;
    assert_eq!(done.status(), StatusCode::OK);
    let done = done.text().await.unwrap();
    assert!(done.contains("3 of 3 done"), "{done}");
    assert_eq!(app.balance("cus_1", "USD").await, 700);
    assert_eq!(app.balance("cus_2", "USD").await, 1950);
    let audit = app.event("demo", "late_1b").await["audit"].clone();
    assert_eq!(audit[0]["actor"], "admin (browser)");
    assert_eq!(audit[0]["note"], "late refunds, checked with billing");

    // The same form again: each event is applied already; nothing moves.
    let again = post_form(
        &app,
        "/admin/held/act",
        &cookie,
        Some(&app.address),
        &confirm,
    )
    .await;
    let again = again.text().await.unwrap();
    assert!(
        again.contains("0 of 3 done") && again.contains("left as it was"),
        "{again}"
    );
    assert_eq!(app.balance("cus_1", "USD").await, 700);
    // Without the session's CSRF token, nothing at all.
    let forged = [
        ("csrf", "00"),
        ("action", "dismiss"),
        ("pick", "demo:bad_1"),
        ("note", "x"),
    ];
    let refused = post_form(
        &app,
        "/admin/held/act",
        &cookie,
        Some(&app.address),
        &forged,
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.event("demo", "bad_1").await["status"], "rejected");
    // A pick for the status a page showed takes the event only from it.
    let other = [
        ("csrf", csrf.as_str()),
        ("action", "dismiss"),
        ("pick", "waiting@demo:bad_1"),
        ("note", "meant for a waiting one"),
    ];
    let other = post_form(&app, "/admin/held/act", &cookie, Some(&app.address), &other).await;
    let other = other.text().await.unwrap();
    assert!(other.contains("0 of 1 done"), "{other}");
    assert_eq!(app.event("demo", "bad_1").await["status"], "rejected");
    app.assert_invariants().await;
}

/// 500 picks (the documented most) of 255-byte ids whose every byte a
/// browser percent-encodes: previewed and dismissed in one go, each once.
async fn the_largest_bulk_form_goes_through(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ids: Vec<String> = (0..500)
        .map(|n| {
            format!("evt/{n:03}/")
                .chars()
                .chain(std::iter::repeat('/'))
                .take(255)
                .collect()
        })
        .collect();
    // Rejected on arrival: a negative amount.
    let rejected = serde_json::json!({
        "type": "balance.credit",
        "data": {"account_id": "cus_bulk", "amount_minor": -5, "currency": "USD"},
    })
    .to_string();
    futures::stream::iter(&ids)
        .for_each_concurrent(8, |id| {
            let (app, body) = (&app, rejected.as_bytes());
            async move {
                let answer = app.deliver_body("demo", id, body).await;
                let answer = json_with_status(answer, StatusCode::OK).await;
                assert_eq!(answer["status"], "rejected", "{id}");
            }
        })
        .await;
    let cookie = login(&app).await;
    let csrf = csrf_in(&page(&app, "/admin/held", &cookie).await);
    let picks: Vec<String> = ids.iter().map(|id| format!("rejected@demo:{id}")).collect();
    let mut fields = vec![("csrf", csrf.as_str()), ("action", "dismiss")];
    fields.extend(picks.iter().map(|pick| ("pick", pick.as_str())));
    let preview = post_form(
        &app,
        "/admin/held/preview",
        &cookie,
        Some(&app.address),
        &fields,
    )
    .await;
    assert_eq!(preview.status(), StatusCode::OK);
    let preview = preview.text().await.unwrap();
    assert_eq!(preview.matches(r#"name="pick""#).count(), 500);
    fields.push(("note", "test data from the load run"));
    let done = post_form(
        &app,
        "/admin/held/act",
        &cookie,
        Some(&app.address),
        &fields,
    )
    .await;
    assert_eq!(done.status(), StatusCode::OK);
    let listed = json_with_status(
        app.admin_get("/admin/api/events?status=dismissed&limit=500")
            .await,
        StatusCode::OK,
    )
    .await;
    let mut dismissed: Vec<&str> = listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["event_id"].as_str().unwrap())
        .collect();
    dismissed.sort_unstable();
    assert_eq!(
        dismissed,
        ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
}

both_backends!(
    a_selection_is_previewed_then_applied_once,
    the_largest_bulk_form_goes_through,
);
