//! SQLite's query plans for the outbox's statements that must not walk the
//! whole table (it keeps delivered rows for `retention.outbox_days`): each
//! names the index it is written for. A partial index is used only when the
//! statement's own conditions imply the index's, so a condition dropped from
//! a statement (the `ordered` of the order checks, a state written as a
//! parameter) turns its search into a scan without changing its result.

use sqlx::sqlite::SqlitePoolOptions;

use super::admin::{BLOCKED, BLOCKING};
use super::behind::{FLAG, NEXT_SQLITE, UNFLAG};
use super::ordered::{SYNC_ORDERED, SYNC_UNORDERED};
use super::relay::CLAIM_SQLITE;
use super::requeue::{PURGE_DELIVERED, REPLAY_DEAD, REPLAY_DELIVERED};
use super::stats::{OLDEST_PENDING, OLDEST_REQUEUED};
use super::unconfigured::{DROP_COPIES, HOLDING_DEAD, HOLDING_PENDING, MOVE};

/// The plan's lines, one string.
pub(in crate::store) async fn plan(pool: &sqlx::SqlitePool, sql: &str) -> String {
    let explain = sqlx::AssertSqlSafe(format!("explain query plan {sql}"));
    let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(explain).fetch_all(pool).await.unwrap();
    rows.into_iter()
        .map(|(.., detail)| detail)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line `SCAN <table>` with nothing after: every row of the table, in
/// no index (`SCAN o USING INDEX ...` walks a partial index only; a
/// subquery's own rows, `CO-ROUTINE x` then `SCAN x`, are no table).
pub(in crate::store) fn scans_a_table(plan: &str) -> bool {
    let subqueries: Vec<&str> = plan
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            line.strip_prefix("CO-ROUTINE ")
                .or_else(|| line.strip_prefix("MATERIALIZE "))
        })
        .collect();
    plan.lines().any(|line| {
        line.trim()
            .strip_prefix("SCAN ")
            .is_some_and(|rest| !rest.contains(' ') && !subqueries.contains(&rest))
    })
}

#[test]
fn a_table_scan_is_told_from_an_index_walk() {
    assert!(scans_a_table(
        "SEARCH d USING INTEGER PRIMARY KEY\nSCAN outbox"
    ));
    assert!(!scans_a_table(
        "SCAN o USING INDEX outbox_due\nSCAN json_each VIRTUAL TABLE INDEX 1:"
    ));
    assert!(!scans_a_table(
        "CO-ROUTINE blocked\nSEARCH outbox USING INDEX outbox_dead (destination=?)\nSCAN blocked"
    ));
    assert!(scans_a_table(
        "CO-ROUTINE blocked\nSCAN outbox\nSCAN blocked"
    ));
}

/// An in-memory database with every migration: one connection, as it
/// lives as long as its connection does.
pub(in crate::store) async fn migrated() -> sqlx::SqlitePool {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect("sqlite::memory:")
        .await
        .unwrap();
    sqlx::migrate!("migrations/sqlite")
        .run(&pool)
        .await
        .unwrap();
    pool
}

#[tokio::test]
async fn each_statement_searches_the_index_it_is_written_for() {
    let pool = migrated().await;
    let cases: [(&str, &str, &[&str]); 18] = [
        (
            "the ordered claim",
            CLAIM_SQLITE,
            &["outbox_due", "outbox_ordered_open"],
        ),
        (
            "the clear after a delivery",
            NEXT_SQLITE,
            &["outbox_ordered_open"],
        ),
        (
            "the tidy's flag",
            FLAG,
            &["outbox_due", "outbox_ordered_open"],
        ),
        (
            "the tidy's clear",
            UNFLAG,
            &["outbox_pending", "outbox_ordered_open"],
        ),
        (
            "the sync of pending rows",
            SYNC_ORDERED[0],
            &["outbox_pending"],
        ),
        ("the sync of dead rows", SYNC_ORDERED[1], &["outbox_dead"]),
        (
            "the sync to unordered",
            SYNC_UNORDERED,
            &["outbox_ordered_open"],
        ),
        (
            "the blocked accounts",
            BLOCKED,
            &["outbox_pending", "outbox_dead"],
        ),
        (
            "the messages blocking them",
            BLOCKING,
            &["outbox_pending", "outbox_dead"],
        ),
        (
            "the pending by destination",
            HOLDING_PENDING,
            &["outbox_pending"],
        ),
        ("the dead by destination", HOLDING_DEAD, &["outbox_dead"]),
        ("the oldest pending", OLDEST_PENDING, &["outbox_pending"]),
        (
            "the oldest re-queued",
            OLDEST_REQUEUED,
            &["outbox_requeued"],
        ),
        (
            "the move of pending rows",
            MOVE[1],
            &["outbox_pending", "outbox_key"],
        ),
        (
            "the move of dead rows",
            MOVE[0],
            &["outbox_dead", "outbox_key"],
        ),
        (
            "the drop of dead copies",
            DROP_COPIES[0],
            &["outbox_dead", "outbox_key"],
        ),
        (
            "the drop of pending copies",
            DROP_COPIES[1],
            &["outbox_pending", "outbox_key"],
        ),
        (
            "the purge of delivered rows",
            PURGE_DELIVERED,
            &["outbox_delivered"],
        ),
    ];
    for (name, sql, indexes) in cases {
        let plan = plan(&pool, sql).await;
        for index in indexes {
            assert!(plan.contains(index), "{name} does not use {index}:\n{plan}");
        }
        assert!(!scans_a_table(&plan), "{name} walks a whole table:\n{plan}");
    }
    let replay = plan(&pool, REPLAY_DEAD).await;
    assert!(replay.contains("outbox_dead"), "{replay}");
    // Delivered rows have no index by destination: the walk is of the
    // delivered ones only.
    let replay = plan(&pool, REPLAY_DELIVERED).await;
    assert!(replay.contains("outbox_delivered"), "{replay}");
    assert!(!scans_a_table(&replay), "{replay}");
}
