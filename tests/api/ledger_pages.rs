//! An account's ledger, page by page through the admin API: newest first
//! across its currencies, every entry once, the cursor an entry id.

use hookledger::providers::Sample;
use serde_json::Value;

use crate::helpers::{Backend, TestApp, credit, json_with_status};
use reqwest::StatusCode;

fn credit_in(event_id: &str, account: &str, currency: &str) -> Sample {
    Sample {
        currency: currency.to_owned(),
        ..credit(event_id, account, 100)
    }
}

/// (currency, account_seq, event id) of each entry of a page.
fn lines(page: &Value) -> Vec<(String, i64, String)> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["currency"].as_str().unwrap().to_owned(),
                e["account_seq"].as_i64().unwrap(),
                e["event_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn the_ledger_pages_newest_first_across_currencies(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Interleaved currencies, so that a page holds more than one and the
    // numbers (USD 1..5, EUR 1..3, JPY 1..2) do not sort like the entries.
    let sent = [
        "USD", "EUR", "USD", "JPY", "USD", "EUR", "USD", "JPY", "EUR", "USD",
    ];
    let mut numbered = std::collections::HashMap::new();
    let mut expected = Vec::new();
    for (i, currency) in sent.iter().enumerate() {
        let seq = numbered.entry(*currency).or_insert(0);
        *seq += 1;
        let event_id = format!("msg_{i}");
        app.send_ok(&credit_in(&event_id, "acct_1", currency)).await;
        expected.push((currency.to_string(), *seq, event_id));
    }
    app.send_ok(&credit_in("msg_other", "acct_2", "USD")).await;
    expected.reverse();

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut path = "/admin/api/accounts/acct_1?limit=3".to_owned();
    loop {
        let page = json_with_status(app.admin_get(&path).await, StatusCode::OK).await;
        let page_lines = lines(&page);
        sizes.push(page_lines.len());
        seen.extend(page_lines);
        match page["next_before"].as_i64() {
            Some(before) => path = format!("/admin/api/accounts/acct_1?limit=3&before={before}"),
            None => break,
        }
    }
    assert_eq!(seen, expected);
    assert_eq!(sizes, [3, 3, 3, 1]);

    // The cursor is an entry id, not a place in this account: another
    // account's newer entry pages this one from its newest.
    let other = json_with_status(
        app.admin_get("/admin/api/accounts/acct_2").await,
        StatusCode::OK,
    )
    .await;
    let foreign = other["entries"][0]["entry_id"].as_i64().unwrap();
    let page = json_with_status(
        app.admin_get(&format!("/admin/api/accounts/acct_1?before={foreign}"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(lines(&page), expected);
    assert!(page["next_before"].is_null());
    app.assert_invariants().await;
}

both_backends!(the_ledger_pages_newest_first_across_currencies);
