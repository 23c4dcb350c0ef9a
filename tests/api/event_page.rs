//! The event page as support reads it: what an apply would do to the
//! balance before it is done, one required note, a Dismiss that asks first,
//! the entry and the new balance after, the old reason kept as history, the
//! payload exactly as received, and why an ignored event moved no money.

use hookledger::providers::Sample;
use reqwest::StatusCode;

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::*;

/// The text of a page's markup with askama's escapes undone.
fn unescaped(html: &str) -> String {
    html.replace("&#34;", "\"")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The `<dd>` after `<dt>{label}</dt>`.
fn field<'h>(html: &'h str, label: &str) -> &'h str {
    let marker = format!("<dt>{label}</dt><dd");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {label}: {html}"));
    let rest = &html[start + marker.len()..];
    &rest[..rest.find("</dd>").unwrap()]
}

async fn an_apply_is_previewed_then_shown_with_the_new_balance(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 2)).await;
    app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await;
    let cookie = login(&app).await;
    let held = page(&app, "/admin/events/demo/msg_2", &cookie).await;
    let reason = app.event("demo", "msg_2").await["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!reason.is_empty());
    assert!(
        unescaped(field(&held, "Status")).contains(&reason),
        "{held}"
    );
    assert!(held.contains("Balance of acct_1: $10.00 → $7.50"), "{held}");
    assert_eq!(
        held.matches(r#"name="note""#).count(),
        1,
        "one note: {held}"
    );
    assert!(held.contains(r#"name="note" maxlength="2000" rows="2" required"#));
    assert!(
        held.contains(
            r#"formaction="/admin/event/dismiss?source=demo&#38;id=msg_2" class="secondary">Dismiss for good"#
        ),
        "{held}"
    );
    assert!(!held.contains("Ledger entry"), "{held}");

    let applied = post_form(
        &app,
        "/admin/events/demo/msg_2/apply",
        &cookie,
        Some(&app.address),
        &[("csrf", &csrf_in(&held)), ("note", "late refund, checked")],
    )
    .await;
    assert_eq!(applied.status(), StatusCode::SEE_OTHER);
    let after = page(
        &app,
        "/admin/event?source=demo&id=msg_2&done=apply",
        &cookie,
    )
    .await;
    assert!(
        after.contains("Applied: -$2.50 to acct_1; its balance is now $7.50."),
        "{after}"
    );
    assert!(
        !unescaped(field(&after, "Status")).contains(&reason),
        "{after}"
    );
    assert!(
        unescaped(field(&after, "Held before")).contains(&reason),
        "{after}"
    );
    assert!(after.contains("balance after $7.50"), "{after}");
    assert!(after.contains("operator-applied"), "{after}");
    assert!(!after.contains("Dismiss for good"), "{after}");
}

async fn the_payload_is_shown_as_received_and_pretty_beside_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = r#"{"type":"balance.credit",   "data":{"account_id":"acct_1","amount_minor":1500,"currency":"USD"}}"#;
    json_with_status(
        app.deliver_body("demo", "msg_raw", body.as_bytes()).await,
        StatusCode::OK,
    )
    .await;
    let cookie = login(&app).await;
    let detail = page(&app, "/admin/events/demo/msg_raw", &cookie).await;
    let text = unescaped(&detail);
    let raw = format!(r#"<pre class="payload">{body}</pre>"#);
    assert!(text.contains(&raw), "{detail}");
    assert!(text.contains("Pretty-printed"), "{detail}");
    assert!(text.contains("\n  \"data\": {"), "{detail}");
}

async fn an_ignored_event_says_what_its_source_maps(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sample = Sample {
        event_type: Some("customer.updated".into()),
        ..credit("msg_1", "acct_1", 1500)
    };
    app.send_ok(&sample).await;
    let cookie = login(&app).await;
    let detail = page(&app, "/admin/events/demo/msg_1", &cookie).await;
    assert!(
        field(&detail, "Status").contains(
            "source demo maps balance.credit, balance.debit; customer.updated is not among them"
        ),
        "{detail}"
    );
}

both_backends!(
    an_apply_is_previewed_then_shown_with_the_new_balance,
    the_payload_is_shown_as_received_and_pretty_beside_it,
    an_ignored_event_says_what_its_source_maps,
);
