//! The events page and API filters: source, status, type, account, exact
//! event id, first-received day range, and keyset pages that keep them.

use chrono::TimeDelta;
use hookledger::providers::Sample;
use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{login, page};
use crate::helpers::*;

/// The event ids a page lists, in order.
fn listed(html: &str) -> Vec<String> {
    html.split(r#"<a href="/admin/event?"#)
        .skip(1)
        .map(|rest| {
            let title = &rest[rest.find(r#"title=""#).unwrap() + 7..];
            title.split('"').next().unwrap().to_owned()
        })
        .collect()
}

async fn api_ids(app: &TestApp, query: &str) -> Vec<String> {
    let answer: Value = json_with_status(
        app.admin_get(&format!("/admin/api/events?{query}")).await,
        StatusCode::OK,
    )
    .await;
    answer["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn filters_narrow_and_pages_keep_them(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Day 1 (2026-06-01): two credits and an ignored type.
    app.send_ok(&credit("d1_a", "cus_1", 100)).await;
    app.send_ok(&credit("d1_b", "cus_2", 200)).await;
    let other = Sample {
        event_type: Some("customer.updated".into()),
        ..credit("d1_c", "cus_1", 1)
    };
    app.send_ok(&other).await;
    // Day 2: 55 credits for cus_3.
    app.clock.advance(TimeDelta::days(1));
    for n in 0..55 {
        app.send_to("demo", &credit(&format!("d2_{n:02}"), "cus_3", 10))
            .await;
    }

    // An ignored type names no account.
    assert_eq!(api_ids(&app, "account=cus_1").await, ["d1_a"]);
    assert_eq!(api_ids(&app, "type=customer.updated").await, ["d1_c"]);
    assert_eq!(api_ids(&app, "status=ignored").await, ["d1_c"]);
    assert_eq!(api_ids(&app, "id=d1_b").await, ["d1_b"]);
    assert_eq!(
        api_ids(&app, "from=2026-06-01&to=2026-06-01").await,
        ["d1_c", "d1_b", "d1_a"]
    );
    assert_eq!(api_ids(&app, "from=2026-06-02&limit=500").await.len(), 55);
    assert_eq!(
        api_ids(&app, "to=2026-06-01T12:00:00Z&account=cus_2").await,
        Vec::<String>::new(),
        "`to` as an instant excludes that instant"
    );
    assert!(api_ids(&app, "source=stripe").await.is_empty());
    let bad = app.admin_get("/admin/api/events?from=yesterday").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

    let cookie = login(&app).await;
    let first = page(&app, "/admin/events?account=cus_3&from=2026-06-02", &cookie).await;
    let ids = listed(&first);
    assert_eq!(ids.len(), 50);
    assert_eq!(ids[0], "d2_54");
    assert!(
        first.contains(r#"value="cus_3""#),
        "the form keeps the filter"
    );
    let older = first
        .split(r#"<a href=""#)
        .find_map(|rest| {
            let href = rest.split('"').next()?;
            href.starts_with("/admin/events?")
                .then(|| href.replace("&amp;", "&").replace("&#38;", "&"))
        })
        .filter(|href| href.contains("before="))
        .expect("an older page");
    assert!(older.contains("account=cus_3") && older.contains("from=2026-06-02"));
    let second = page(&app, &older, &cookie).await;
    assert_eq!(
        listed(&second),
        ["d2_04", "d2_03", "d2_02", "d2_01", "d2_00"]
    );
    assert!(!second.contains("Older events"));
}

both_backends!(filters_narrow_and_pages_keep_them);
