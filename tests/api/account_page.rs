//! The account page: "I paid and my balance did not change" answered from
//! the dashboard in two clicks. Balances, every event for the account with
//! why it is where it is, and the ledger behind the balance.

use reqwest::StatusCode;

use crate::browser::{login, page};
use crate::helpers::*;

async fn an_account_shows_its_balance_its_events_and_its_ledger(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("pay_1", "cus_42", 1500, 2)).await;
    // Arrives below the guard: held as stale.
    app.send_ok(&debit_seq("ref_1", "cus_42", 400, 1)).await;
    // A negative amount cannot be applied: rejected, with the account.
    let rejected = serde_json::json!({
        "type": "balance.credit",
        "data": {"account_id": "cus_42", "amount_minor": -5, "currency": "USD"},
    });
    json_with_status(
        app.deliver_body("demo", "pay_bad", rejected.to_string().as_bytes())
            .await,
        StatusCode::OK,
    )
    .await;
    app.send_ok(&credit("pay_other", "cus_7", 900)).await;

    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains(r#"action="/admin/account""#),
        "{dashboard}"
    );
    assert!(
        dashboard.contains(r#"<a href="/admin/account?id=cus_42">cus_42</a>"#),
        "{dashboard}"
    );
    let account = page(&app, "/admin/account?id=cus_42", &cookie).await;
    assert!(account.contains("$15.00"), "{account}");
    for (event_id, status) in [
        ("pay_1", "applied"),
        ("ref_1", "stale"),
        ("pay_bad", "rejected"),
    ] {
        let row = account
            .split("<tr>")
            .find(|row| row.contains(&format!(">{event_id}</a>")))
            .unwrap_or_else(|| panic!("{event_id} missing: {account}"));
        assert!(
            row.contains(&format!(r#"class="status {status}""#)),
            "{row}"
        );
    }
    assert!(
        account.contains("amount must be positive, got -5"),
        "{account}"
    );
    assert!(account.contains("out of order"), "{account}");
    assert!(
        !account.contains("pay_other"),
        "another account's event: {account}"
    );
    let ledger = &account[account.find("<h2>Ledger</h2>").unwrap()..];
    assert_eq!(
        ledger.matches("/admin/event?source=demo&amp;id=").count()
            + ledger.matches("/admin/event?source=demo&#38;id=").count(),
        1,
        "{ledger}"
    );
    assert!(ledger.contains("pay_1"), "{ledger}");

    let unknown = page(&app, "/admin/account?id=cus_nobody", &cookie).await;
    assert!(unknown.contains("nothing was ever posted"), "{unknown}");
    let bad = app
        .client
        .get(app.url("/admin/account?id=a%00b"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let signed_out = app
        .client
        .get(app.url("/admin/account?id=cus_42"))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_out.status(), StatusCode::SEE_OTHER);
}

both_backends!(an_account_shows_its_balance_its_events_and_its_ledger);
