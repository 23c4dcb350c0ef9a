//! The stored-data fill of `hookledger bench --stored` (`store::fill`): a
//! database filled set-based in batches holds what deliveries would have
//! left (the ledger check passes), in the documented shape, and a new
//! delivery to a filled account continues its ledger.

use chrono::Duration;
use hookledger::domain::Status;
use hookledger::store::{EventFilter, FillShape, Store};

use crate::helpers::{Backend, TestApp, credit, now};

crate::both_backends!(
    a_filled_database_holds_what_deliveries_would_have_left,
    the_check_is_not_cut_by_the_deliveries_statement_bound,
);

const POSTINGS: u64 = 2_500;
const ACCOUNTS: u64 = 7;

/// The shape, modelled here apart from the SQL that writes it: posting k's
/// account and its number there.
fn account_of(k: u64) -> (u64, u64) {
    match k % 100 {
        0 => (0, k / 100 + 1),
        _ => {
            let other = k - k / 100 - 1;
            (1 + other % (ACCOUNTS - 1), other / (ACCOUNTS - 1) + 1)
        }
    }
}

/// Each account's balance, posting by posting.
fn expected_balances() -> Vec<i64> {
    let mut balances = vec![0_i64; ACCOUNTS as usize];
    for k in 0..POSTINGS {
        let (a, j) = account_of(k);
        balances[a as usize] += (100 * (1 + a % 50) + j % 2) as i64;
    }
    balances
}

fn currency(a: u64) -> &'static str {
    ["EUR", "USD", "GBP"][(a % 3) as usize]
}

async fn count(store: &Store, status: Status) -> usize {
    let filter = EventFilter {
        status: Some(status),
        limit: 10_000,
        ..EventFilter::default()
    };
    store.list_events(&filter).await.unwrap().len()
}

async fn a_filled_database_holds_what_deliveries_would_have_left(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let store = app.store();
    let shape = FillShape {
        postings: POSTINGS,
        accounts: ACCOUNTS,
        now: now(),
        span_secs: 30 * 86_400,
        payload_days: 10,
        outbox_days: 3,
    };
    // Two batches, the second where the first stopped, as a fill resumes.
    store.fill_batch(&shape, 0, 1_200).await.unwrap();
    assert_eq!(store.filled_postings().await.unwrap(), 1_200);
    store.fill_batch(&shape, 1_200, POSTINGS).await.unwrap();
    store.finish_fill().await.unwrap();
    assert_eq!(store.filled_postings().await.unwrap(), POSTINGS);
    app.assert_invariants().await;
    // Linked as served entries are, across the two batches.
    let chains = store.verify_chains().await.unwrap();
    assert!(chains.is_clean(), "{chains:#?}");
    assert_eq!(chains.entries, POSTINGS, "{chains:#?}");
    assert_eq!(chains.linked_late, 0);

    for (a, expected) in expected_balances().into_iter().enumerate() {
        let account = format!("acct_{a}");
        let balance = app.balance(&account, currency(a as u64)).await;
        assert_eq!(balance, expected, "{account}");
    }
    // acct_0 takes every hundredth posting; its page is newest first.
    let entries = app.entries("acct_0").await;
    assert_eq!(entries.len(), 25);
    assert_eq!(entries[0]["account_seq"], 25);
    assert_eq!(entries[0]["balance_after_minor"], expected_balances()[0]);
    // An ignored event every tenth posting, a held refund every 1000th.
    assert_eq!(count(store, Status::Ignored).await, 250);
    assert_eq!(count(store, Status::Stale).await, 2);
    assert_eq!(store.held_queue(50).await.unwrap().len(), 2);

    // An event id searched without its source is found in whichever
    // source holds it (evt_7: the fourth source), and only there.
    let by_id = |id: &str| EventFilter {
        event_id: Some(id.to_owned()),
        limit: 50,
        ..EventFilter::default()
    };
    let found = store.list_events(&by_id("evt_7")).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].source, "shopify");
    assert!(
        store
            .list_events(&by_id("evt_missing"))
            .await
            .unwrap()
            .is_empty()
    );
    let elsewhere = EventFilter {
        source: Some("stripe".to_owned()),
        ..by_id("evt_7")
    };
    assert!(store.list_events(&elsewhere).await.unwrap().is_empty());

    // Payloads older than the retention period are emptied, as retention
    // would have; the newest is whole.
    let newest = POSTINGS - 1;
    let sources = ["stripe", "paddle", "adyen", "shopify"];
    let old = store.event("stripe", "evt_0").await.unwrap().unwrap();
    assert!(old.payload.is_empty() && old.payload_purged_at.is_some());
    let source = sources[(newest % 4) as usize];
    let recent = store
        .event(source, &format!("evt_{newest}"))
        .await
        .unwrap()
        .unwrap();
    assert!(recent.payload.len() > 400 && recent.payload_purged_at.is_none());
    // Delivered messages for the last three days only: a purge of those
    // older than two days finds some, never all.
    let cutoff = (now() - Duration::days(2)).timestamp_millis();
    let purged = store.purge_delivered(cutoff, 10_000).await.unwrap();
    assert!((1..250).contains(&purged), "{purged}");

    // A delivery to a filled account goes on from its last entry.
    app.send_ok(&credit("after_fill", "acct_1", 500)).await;
    assert_eq!(
        app.balance("acct_1", "USD").await,
        expected_balances()[1] + 500
    );
    let filled = (0..POSTINGS).filter(|&k| account_of(k).0 == 1).count();
    let entries = app.entries("acct_1").await;
    assert_eq!(entries.len(), filled + 1);
    assert_eq!(entries[0]["account_seq"], filled + 1);
    app.assert_invariants().await;
}

/// The ledger check reads the whole ledger, so it outgrows the bound each
/// delivery's statement gets (`database.statement_timeout_ms`): it runs
/// under a bound of its own. Here the deliveries' bound is 25 ms and the
/// ledger 50,000 entries, over which the check's guard statement takes
/// some 100 ms on PostgreSQL (4.4 s at 1.6 million, BENCHMARKS.md); SQLite
/// bounds no statement, and its check must pass all the same. The bound is
/// not 1 ms: on a loaded machine (CI runs tests six at a time on two
/// cores) even the connection's own read-only probe overran 1 ms once.
async fn the_check_is_not_cut_by_the_deliveries_statement_bound(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let shape = FillShape {
        postings: 50_000,
        accounts: 1_000,
        now: now(),
        span_secs: 30 * 86_400,
        payload_days: 10,
        outbox_days: 3,
    };
    app.store()
        .fill_batch(&shape, 0, shape.postings)
        .await
        .unwrap();
    app.store().finish_fill().await.unwrap();
    let settings = hookledger::store::PoolSettings {
        max_connections: 2,
        acquire_timeout: std::time::Duration::from_secs(10),
        busy_timeout: std::time::Duration::from_secs(10),
        statement_timeout: std::time::Duration::from_millis(25),
    };
    let tight = Store::connect(&app.database_url, &settings).await.unwrap();
    let violations = tight
        .check_invariants()
        .await
        .expect("the check runs to its end");
    assert_eq!(violations, Vec::new());
    // A rigged balance is still found through the same store: the check
    // read the ledger, it did not stop early.
    app.execute_sql(
        "update balances set balance_minor = balance_minor + 1 where account_id = 'acct_3'",
    )
    .await
    .unwrap();
    let violations = tight
        .check_invariants()
        .await
        .expect("the check runs to its end");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        matches!(&violations[0], hookledger::store::Violation::BalanceMismatch { account_id, .. } if account_id == "acct_3"),
        "{violations:?}"
    );
}
