//! The outbox's unique key moved from (destination, message_id) to
//! (intent_id, message_type, destination) (migration 0009): a database
//! from before keeps every message with its row and id, an event's page
//! still lists them, a dead one is still sent again, and the message-id
//! index that every new message paid for is gone.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use hookledger::domain::MessageType;
use hookledger::store::IntentUpsert;

use crate::helpers::*;
use crate::outbox::{drained, http_destination, selected, writer_with};
use crate::receiver::{Answer, Receiver};

/// Migrated up to 0008, with one event and two messages of it: one dead
/// for `billing` (configured below), one delivered for `archive` (a
/// destination since removed from the config).
async fn prepare_before_the_key(url: String) {
    use std::str::FromStr;

    let folder = ["postgres", "sqlite"][usize::from(url.starts_with("sqlite:"))];
    let migrator = crate::schema::migrations_up_to(folder, 8).await;
    assert!(migrator.migrations[7].description.contains("outbox behind"));
    let at = now();
    let message_id = MessageType::LedgerPosted.message_id("demo", "evt_old");
    macro_rules! fill {
        ($pool:expr) => {{
            let pool = $pool;
            migrator.run(&pool).await.unwrap();
            sqlx::query(
                "insert into intents (source, scope, event_id, event_type, status,
                    account_id, currency, amount_minor, event_sequence, deliveries,
                    conflicts, payload_sha256, payload, first_received_at, last_received_at)
                 values ('demo', 'demo', 'evt_old', 'balance.credit', 'applied', 'cus_1',
                    'USD', 700, 1, 1, 0, 'sha', $1, $2, $2)",
            )
            .bind(b"{}".as_slice())
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
            // Ids with a gap, as after a purge (the SQLite rebuild must keep
            // them), and one row flagged behind.
            let overriding = ["overriding system value", ""][usize::from(folder == "sqlite")];
            let insert = format!(
                "insert into outbox (outbox_id, destination, message_id, message_type,
                    intent_id, source, event_id, event_status, account_id, currency,
                    amount_minor, balance_after_minor, account_seq, posted_at,
                    operator_applied, state, attempts, next_attempt_ms, last_error,
                    created_at, delivered_ms, behind)
                 {overriding}
                 select $7, $1, $2, 'ledger.posted', intent_id, 'demo', 'evt_old', 'applied',
                    'cus_1', 'USD', 700, 700, 1, $3, false, $4, 1, 0, $5, $3, $6, $8
                 from intents where event_id = 'evt_old'"
            );
            let delivered_at = Some(Utc::now().timestamp_millis());
            for (id, destination, state, error, delivered, behind) in [
                (
                    7_i64,
                    "billing",
                    "dead",
                    Some("answered HTTP 500"),
                    None,
                    false,
                ),
                (42, "archive", "delivered", None, delivered_at, true),
            ] {
                sqlx::query(sqlx::AssertSqlSafe(insert.clone()))
                    .bind(destination)
                    .bind(&message_id)
                    .bind(at)
                    .bind(state)
                    .bind(error)
                    .bind(delivered)
                    .bind(id)
                    .bind(behind)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            if folder == "postgres" {
                // As if the ids had come from the identity, as they do.
                sqlx::query("select setval(pg_get_serial_sequence('outbox', 'outbox_id'), 42)")
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            pool.close().await;
        }};
    }
    if folder == "sqlite" {
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
            .unwrap()
            .create_if_missing(true);
        fill!(sqlx::SqlitePool::connect_with(options).await.unwrap());
    } else {
        fill!(sqlx::PgPool::connect(&url).await.unwrap());
    }
}

/// (outbox_id, behind) of every row.
async fn behind_flags(app: &TestApp) -> Vec<(i64, bool)> {
    selected(
        app,
        "select outbox_id, behind from outbox order by outbox_id",
    )
    .await
}

/// The outbox's unique indexes, by name.
async fn unique_indexes(app: &TestApp) -> BTreeSet<String> {
    let names: Vec<(String,)> = match app.store() {
        hookledger::store::Store::Sqlite(pool, ..) => {
            sqlx::query_as("select name from pragma_index_list('outbox') where \"unique\"")
                .fetch_all(pool)
                .await
        }
        hookledger::store::Store::Postgres(pool, ..) => {
            sqlx::query_as(
                "select cast(indexname as text) from pg_indexes
                 where schemaname = 'public' and tablename = 'outbox'
                     and indexdef like 'CREATE UNIQUE INDEX%'",
            )
            .fetch_all(pool)
            .await
        }
    }
    .unwrap();
    names.into_iter().map(|(name,)| name).collect()
}

async fn a_database_from_before_the_key_keeps_its_messages(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let destination = http_destination("billing", &receiver.url(), "");
    let app = TestApp::spawn_prepared(
        backend.clone(),
        Options {
            extra_sources: &destination,
            ..Options::default()
        },
        prepare_before_the_key,
    )
    .await;
    let expected: BTreeSet<String> = match backend {
        Backend::Sqlite => ["outbox_key"].into_iter().map(String::from).collect(),
        Backend::Postgres(_) => ["outbox_key", "outbox_pkey"]
            .into_iter()
            .map(String::from)
            .collect(),
    };
    assert_eq!(unique_indexes(&app).await, expected);

    let message_id = MessageType::LedgerPosted.message_id("demo", "evt_old");
    let before = app.store().event_messages("demo", "evt_old").await.unwrap();
    let kept: Vec<_> = before
        .iter()
        .map(|m| {
            let error = m.last_error.as_deref();
            let name = (m.destination.as_str(), m.message_id.as_str());
            (m.outbox_id, name, m.state.as_str(), error)
        })
        .collect();
    assert_eq!(
        kept,
        [
            (
                7,
                ("billing", message_id.as_str()),
                "dead",
                Some("answered HTTP 500")
            ),
            (42, ("archive", message_id.as_str()), "delivered", None),
        ]
    );
    assert_eq!(behind_flags(&app).await, [(7, false), (42, true)]);

    // The dead one, sent again by its row: the same id reaches billing.
    let replayed = app
        .store()
        .replay_message(
            before[0].outbox_id,
            "billing",
            &message_id,
            "test",
            Utc::now(),
        )
        .await
        .unwrap();
    assert!(replayed);
    // A new posting's message goes in after the kept rows.
    app.send_ok(&credit("evt_new", "cus_1", 300)).await;
    let messages = drained(&app, "billing", Duration::from_secs(20)).await;
    assert_eq!(
        messages
            .iter()
            .map(|m| (m.event_id.as_str(), m.state.as_str()))
            .collect::<Vec<_>>(),
        [("evt_old", "delivered"), ("evt_new", "delivered")]
    );
    assert!(messages[1].outbox_id > before[1].outbox_id);
    // Each event's own messages, found by its intent.
    let new = app.store().event_messages("demo", "evt_new").await.unwrap();
    assert_eq!(
        new.iter()
            .map(|m| (m.destination.as_str(), m.event_id.as_str()))
            .collect::<Vec<_>>(),
        [("billing", "evt_new")]
    );
    let old = app.store().event_messages("demo", "evt_old").await.unwrap();
    assert_eq!(old.len(), 2, "{old:?}");
    let mut ids: Vec<_> = receiver.accepted().into_iter().map(|m| m.id).collect();
    ids.sort();
    let mut expected = vec![
        message_id,
        MessageType::LedgerPosted.message_id("demo", "evt_new"),
    ];
    expected.sort();
    assert_eq!(ids, expected);
}

both_backends!(
    a_database_from_before_the_key_keeps_its_messages,
    a_message_written_twice_is_one_row_per_destination
);

/// The same message written twice (a second write of the event's message,
/// as when an event is held as `waiting` and then as `stale`) is one row per
/// destination: the key is the conflict.
async fn a_message_written_twice_is_one_row_per_destination(backend: Backend) {
    let destinations = format!(
        "{}{}",
        http_destination("billing", "http://127.0.0.1:9/", ""),
        http_destination("crm", "http://127.0.0.1:9/", "")
    );
    let app = writer_with(backend, &destinations).await;
    let mut tx = app.store().begin().await.unwrap();
    let intent = crate::posting_statement::applied_intent("evt_twice", "cus_1", 100, 1);
    let IntentUpsert::Inserted { intent_id } = tx.insert_intent(&intent).await.unwrap() else {
        panic!("a new event");
    };
    let entry = crate::outbox_postgres::entry_of(intent_id, "evt_twice", "cus_1", 1);
    tx.enqueue_posting(&entry).await.unwrap();
    tx.enqueue_posting(&entry).await.unwrap();
    tx.commit().await.unwrap();
    let rows = app
        .store()
        .event_messages("demo", "evt_twice")
        .await
        .unwrap();
    let id = MessageType::LedgerPosted.message_id("demo", "evt_twice");
    assert_eq!(
        rows.iter()
            .map(|m| (m.destination.as_str(), m.message_id.as_str()))
            .collect::<Vec<_>>(),
        [("billing", id.as_str()), ("crm", id.as_str())]
    );
}
