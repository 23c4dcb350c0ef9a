//! For the tests of SQLite's query plans (`outbox::plans`, `retention`): a
//! migrated in-memory database, a statement's plan, and whether that plan
//! walks a whole table.

use sqlx::sqlite::SqlitePoolOptions;

/// The plan's lines, one string.
pub(super) async fn plan(pool: &sqlx::SqlitePool, sql: &str) -> String {
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
pub(super) fn scans_a_table(plan: &str) -> bool {
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
pub(super) async fn migrated() -> sqlx::SqlitePool {
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
