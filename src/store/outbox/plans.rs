//! SQLite's query plans for the outbox's statements that must not walk the
//! whole table (it keeps delivered rows for `retention.outbox_days`): each
//! names the index it is written for. A partial index is used only when the
//! statement's own conditions imply the index's, so a condition dropped from
//! a statement (the `ordered` of the order checks, a state written as a
//! parameter) turns its search into a scan without changing its result.

use crate::store::plans::{migrated, plan, scans_a_table};

use super::admin::{BLOCKED, BLOCKING};
use super::behind::{FLAG, NEXT_SQLITE, UNFLAG};
use super::ordered::{SYNC_ORDERED, SYNC_UNORDERED};
use super::relay::CLAIM_SQLITE;
use super::requeue::{PURGE_DELIVERED, REPLAY_DEAD, REPLAY_DELIVERED};
use super::stats::{OLDEST_PENDING, OLDEST_REQUEUED};
use super::unconfigured::{DROP_COPIES, HOLDING_DEAD, HOLDING_PENDING, MOVE};

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
