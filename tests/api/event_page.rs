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
    assert!(
        held.contains(r#"Balance of <span class="id">acct_1</span>: $10.00 → $7.50"#),
        "{held}"
    );
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
    assert!(held.contains(r#"name="status" value="stale""#), "{held}");
    // A form for the status it showed: sent for another, it moves nothing.
    let other = post_form(
        &app,
        "/admin/events/demo/msg_2/dismiss",
        &cookie,
        Some(&app.address),
        &[
            ("csrf", &csrf_in(&held)),
            ("note", "meant for a rejected one"),
            ("status", "rejected"),
        ],
    )
    .await;
    assert_eq!(other.status(), StatusCode::CONFLICT);
    assert_eq!(app.event("demo", "msg_2").await["status"], "stale");

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

async fn the_signature_headers_and_a_conflicting_body_are_shown(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let first = br#"{"type":"balance.credit","data":{"account_id":"acct_1","amount_minor":100,"currency":"USD"}}"#;
    let signed_at = now().timestamp() - 7;
    let signed = hookledger::cli::sign_body(
        "standard-webhooks",
        &hookledger::secret::Secret::new(DEMO_SECRET),
        first.to_vec(),
        "msg_h",
        signed_at,
    )
    .unwrap();
    let response = app.post_signed("demo", &signed).await;
    assert_eq!(response.status(), StatusCode::OK);
    let signature = signed
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("webhook-signature"))
        .map(|(_, value)| value.clone())
        .unwrap();
    let cookie = login(&app).await;
    let detail = page(&app, "/admin/events/demo/msg_h", &cookie).await;
    for (name, value) in [
        ("webhook-id", "msg_h".to_owned()),
        ("webhook-timestamp", signed_at.to_string()),
        ("webhook-signature", signature.clone()),
    ] {
        assert_eq!(
            unescaped(field(&detail, name)),
            format!(r#" class="id">{value}"#)
        );
    }
    assert!(
        !detail.contains("<dt>content-type</dt>"),
        "only what the scheme read: {detail}"
    );
    assert!(
        field(&detail, "Signed at").contains("(7 s before it was received)"),
        "{detail}"
    );
    assert!(!detail.contains("Conflicting body"), "{detail}");
    let api = app.event("demo", "msg_h").await;
    assert_eq!(
        api["signature_headers"]["webhook-signature"],
        signature.as_str()
    );
    assert_eq!(api["signed_at"], signed_at);

    // The same event id with another body: counted, the new hash shown.
    let second = br#"{"type":"balance.credit","data":{"account_id":"acct_1","amount_minor":999,"currency":"USD"}}"#;
    assert_eq!(
        app.deliver_body("demo", "msg_h", second).await.status(),
        StatusCode::OK
    );
    let detail = page(&app, "/admin/events/demo/msg_h", &cookie).await;
    let second_sha = hookledger::receive::sha256_hex(second);
    assert!(
        field(&detail, "Conflicting body SHA-256").contains(&second_sha),
        "{detail}"
    );
    assert!(
        field(&detail, "Payload SHA-256").contains(&hookledger::receive::sha256_hex(first)),
        "the original is kept: {detail}"
    );
    assert_eq!(
        app.event("demo", "msg_h").await["conflict_sha256"],
        second_sha.as_str()
    );
    assert_eq!(app.balance("acct_1", "USD").await, 100);
    // The headers are the first delivery's.
    assert_eq!(
        unescaped(field(&detail, "webhook-signature")),
        format!(r#" class="id">{signature}"#)
    );
}

both_backends!(
    the_signature_headers_and_a_conflicting_body_are_shown,
    an_apply_is_previewed_then_shown_with_the_new_balance,
    the_payload_is_shown_as_received_and_pretty_beside_it,
    an_ignored_event_says_what_its_source_maps,
);
