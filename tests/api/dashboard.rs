//! The dashboard's chart: deliveries per 10 minutes over 24 hours by
//! outcome, as inline SVG, with the hour and day counts beside it.

use chrono::TimeDelta;
use reqwest::StatusCode;

use crate::browser::{login, page};
use crate::helpers::*;

/// A delivery signed with a secret no longer configured: refused.
async fn forged(app: &TestApp) {
    let forged = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &credit("x", "c", 1),
        )
        .await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
}

/// The legend row of `outcome`: (last hour, last 24 h).
fn legend(html: &str, label: &str) -> (u64, u64) {
    let row = html
        .split("<tr>")
        .find(|row| row.contains(&format!("</span>{label}</td>")))
        .unwrap_or_else(|| panic!("no legend row {label}: {html}"));
    let numbers: Vec<u64> = row
        .split(r#"<td class="num">"#)
        .skip(1)
        .map(|cell| cell.split('<').next().unwrap().parse().unwrap())
        .collect();
    (numbers[0], numbers[1])
}

async fn the_chart_counts_each_outcome_by_the_minute(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    // Two hours later: outside the last hour, inside the day.
    app.clock.advance(TimeDelta::hours(2));
    app.send_to("demo", &credit("evt_2", "cus_1", 100)).await;
    forged(&app).await;

    let cookie = login(&app).await;
    let html = page(&app, "/admin", &cookie).await;
    assert_eq!(legend(&html, "applied"), (1, 2));
    assert_eq!(legend(&html, "duplicate"), (0, 1));
    assert_eq!(legend(&html, "verification failed"), (1, 1));
    assert_eq!(legend(&html, "held"), (0, 0));
    let svg = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
    // Two bars (two hours apart), each with its outcomes stacked.
    assert_eq!(svg.matches("<g>").count(), 2, "{svg}");
    assert_eq!(svg.matches(r#"class="applied""#).count(), 2, "{svg}");
    assert_eq!(svg.matches(r#"class="verification_failed""#).count(), 1);
    assert!(svg.contains("1 applied, 1 duplicate"), "{svg}");
    assert!(html.contains("the tallest bar is 2 deliveries"), "{html}");
}

async fn each_source_shows_its_day_its_secret_and_its_skew(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let signed_ago = |id: &str, secs: i64| credit_at(id, "cus_1", 100, now().timestamp() - secs);
    app.send_ok(&signed_ago("evt_0", 0)).await;
    app.send_ok(&signed_ago("evt_10", 10)).await;
    app.send_ok(&signed_ago("evt_30", 30)).await;
    // The latest, verified by the second configured secret (mid-rotation).
    let old = app
        .deliver(
            "demo",
            "standard-webhooks",
            DEMO_OLD_SECRET,
            &credit("evt_old", "cus_1", 1),
        )
        .await;
    assert_eq!(old.status(), StatusCode::OK);
    forged(&app).await;

    let cookie = login(&app).await;
    let html = page(&app, "/admin", &cookie).await;
    let row = html
        .split("<tr>")
        .find(|row| row.starts_with("<td>demo</td>"))
        .unwrap_or_else(|| panic!("no demo row: {html}"));
    let cells: Vec<&str> = row
        .split("<td")
        .skip(1)
        .map(|cell| {
            let text = &cell[cell.find('>').unwrap() + 1..];
            text.split("</td>").next().unwrap()
        })
        .collect();
    assert_eq!(cells[1], "standard-webhooks");
    assert_eq!(cells[2], "2026-06-01 12:00:00 UTC");
    assert_eq!(cells[3], "4");
    assert_eq!(cells[4], r#"1 <span class="hint">(20.0%)</span>"#);
    assert_eq!(cells[5], "2 of 2");
    // Skews 0, 10, 30 and 0: the median of four is the upper middle.
    assert_eq!(cells[6], "10 s");
    let quiet = html
        .split("<tr>")
        .find(|row| row.starts_with("<td>stripe</td>"))
        .unwrap();
    assert!(quiet.contains("<td>-</td>"), "{quiet}");
}

async fn the_dashboard_says_whether_the_ledger_holds(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("pay_1", "cus_1", 1000, 2)).await;
    app.send_ok(&debit_seq("late_1", "cus_1", 100, 1)).await;
    app.clock.advance(TimeDelta::hours(2));
    let cookie = login(&app).await;
    // The start-up check runs at once, in the background.
    let started = std::time::Instant::now();
    let mut html = page(&app, "/admin", &cookie).await;
    while html.contains("not checked yet") && started.elapsed().as_secs() < 10 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        html = page(&app, "/admin", &cookie).await;
    }
    assert!(html.contains("Ledger: every invariant holds"), "{html}");
    assert!(html.contains("The oldest has waited 2 h"), "{html}");

    // A balance changed behind the ledger's back: the next check says so,
    // on the dashboard and in the metrics.
    app.execute_sql("update balances set balance_minor = balance_minor + 1")
        .await
        .unwrap();
    let check: serde_json::Value =
        json_with_status(app.admin_get("/admin/api/check").await, StatusCode::OK).await;
    assert_eq!(check["ok"], false);
    let html = page(&app, "/admin", &cookie).await;
    assert!(
        html.contains(r#"<p class="error invariants">Ledger: "#),
        "{html}"
    );
    assert!(html.contains("violation(s) found 0 s ago"), "{html}");
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("hookledger_invariant_violations "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_ne!(line, "hookledger_invariant_violations 0", "{line}");
}

both_backends!(
    the_dashboard_says_whether_the_ledger_holds,
    the_chart_counts_each_outcome_by_the_minute,
    each_source_shows_its_day_its_secret_and_its_skew,
);
