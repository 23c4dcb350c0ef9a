//! The two migration folders must stay in step: same files, and after
//! migrating, the same tables with the same columns on both backends.

use std::collections::BTreeSet;
use std::fs;

use crate::helpers::{Backend, TestApp, credit};

fn file_names(folder: &str) -> BTreeSet<String> {
    fs::read_dir(format!(
        "{}/migrations/{folder}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .map(|entry| entry.unwrap().file_name().into_string().unwrap())
    .collect()
}

#[test]
fn migration_folders_pair_up() {
    let sqlite = file_names("sqlite");
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, file_names("postgres"));
}

type Columns = BTreeSet<(String, String)>;

async fn sqlite_columns(app: &TestApp) -> Columns {
    let hookledger::store::Store::Sqlite(pool, ..) = app.store() else {
        unreachable!()
    };
    sqlx::query_as(
        "select m.name, p.name from sqlite_master m join pragma_table_info(m.name) p
         where m.type = 'table' and m.name not like '\\_%' escape '\\' and m.name not like 'sqlite%'",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

async fn postgres_columns(app: &TestApp) -> Columns {
    let hookledger::store::Store::Postgres(pool, ..) = app.store() else {
        unreachable!()
    };
    sqlx::query_as(
        "select cast(table_name as text), cast(column_name as text) from information_schema.columns
         where table_schema = 'public' and table_name not like '\\_%'",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_define_the_same_tables_and_columns() {
    let Some(postgres) =
        Backend::postgres_or_skip("schema::both_backends_define_the_same_tables_and_columns")
    else {
        return;
    };
    let sqlite = sqlite_columns(&TestApp::spawn(Backend::Sqlite).await).await;
    let postgres = postgres_columns(&TestApp::spawn(postgres).await).await;
    assert!(
        sqlite
            .iter()
            .any(|(table, column)| table == "intents" && column == "payload")
    );
    assert_eq!(sqlite, postgres);
}

/// The migrations of `folder` (`sqlite` or `postgres`) up to the `n`th: a
/// database as an older build left it.
pub(crate) async fn migrations_up_to(folder: &str, n: usize) -> sqlx::migrate::Migrator {
    let mut migrator = sqlx::migrate::Migrator::new(std::path::Path::new(&format!(
        "{}/migrations/{folder}",
        env!("CARGO_MANIFEST_DIR")
    )))
    .await
    .unwrap();
    migrator.migrations = std::borrow::Cow::Owned(migrator.migrations[..n].to_vec());
    migrator
}

/// The schema before scopes (migrations 0001 and 0002), with what a
/// deployment of that time holds: a Stripe credit (ledger entry, balance),
/// the same Stripe event recorded a second time by another Stripe endpoint
/// (the double credit scopes exist to prevent: kept, never merged), and an
/// event only that endpoint received.
async fn prepare_before_scopes(url: String) {
    use std::str::FromStr;

    let folder = if url.starts_with("sqlite:") {
        "sqlite"
    } else {
        "postgres"
    };
    let migrator = migrations_up_to(folder, 2).await;
    let at = crate::helpers::now();
    macro_rules! fill {
        ($pool:expr) => {{
            let pool = $pool;
            migrator.run(&pool).await.unwrap();
            for (source, event_id, applied) in [
                ("stripe", "evt_a", true),
                ("stripe-new", "evt_a", false),
                ("stripe-new", "evt_b", false),
            ] {
                sqlx::query(
                    "insert into intents (source, event_id, event_type, status,
                        account_id, currency, amount_minor, event_sequence, deliveries,
                        conflicts, payload_sha256, payload, first_received_at, last_received_at)
                     values ($1, $2, 'payment_intent.succeeded', $3, 'acct_1', 'EUR', 500,
                        1, 1, 0, 'sha', $4, $5, $5)",
                )
                .bind(source)
                .bind(event_id)
                .bind(if applied { "applied" } else { "ignored" })
                .bind(format!("{{\"id\":\"{event_id}\",\"note\":\"café\"}}"))
                .bind(at)
                .execute(&pool)
                .await
                .unwrap();
            }
            sqlx::query(
                "insert into ledger_entries (intent_id, source, event_id, account_id, currency,
                    amount_minor, balance_after_minor, operator_applied, created_at)
                 select intent_id, source, event_id, 'acct_1', 'EUR', 500, 500, false, $1
                 from intents where source = 'stripe' and event_id = 'evt_a'",
            )
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
            sqlx::query(
                "insert into sequence_guards (source, account_id, last_sequence, updated_at)
                 values ('stripe', 'acct_1', 1, $1)",
            )
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
            sqlx::query(
                "insert into balances (account_id, currency, balance_minor, updated_at)
                 values ('acct_1', 'EUR', 500, $1)",
            )
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
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

async fn a_database_from_before_scopes_keeps_every_row(backend: Backend) {
    let app = TestApp::spawn_prepared(
        backend,
        crate::helpers::Options {
            extra_sources: r#"
[[sources]]
name = "stripe-new"
kind = "stripe"
secrets = ["whsec_stripe_new_endpoint_secret"]
"#,
            ..Default::default()
        },
        prepare_before_scopes,
    )
    .await;
    let scope_of = |event: serde_json::Value| {
        (
            event["scope"].as_str().map(str::to_owned),
            event["payload"].as_str().map(str::to_owned),
        )
    };
    // Both endpoints' rows are in the kind's scope now, except the event the
    // new endpoint recorded a second time: it stays where it was.
    assert_eq!(
        scope_of(app.event("stripe", "evt_a").await),
        (
            Some("stripe".into()),
            Some(r#"{"id":"evt_a","note":"café"}"#.into())
        )
    );
    assert_eq!(
        scope_of(app.event("stripe-new", "evt_b").await)
            .0
            .as_deref(),
        Some("stripe")
    );
    assert_eq!(
        scope_of(app.event("stripe-new", "evt_a").await)
            .0
            .as_deref(),
        Some("stripe-new")
    );
    assert_eq!(app.events().await.len(), 3, "every row kept");
    // The event only the new endpoint had, now sent to the old one: a
    // duplicate, as it would be for any endpoint of the kind.
    let body = crate::fixtures::edited(
        "stripe",
        "payment_intent.succeeded",
        &[("id", serde_json::json!("evt_b"))],
    );
    let again = crate::fixtures::deliver_ok(
        &app,
        "stripe",
        &crate::fixtures::signed("stripe", crate::helpers::STRIPE_SECRET, &body, "evt_b"),
    )
    .await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(app.balance("acct_1", "EUR").await, 500);
    app.assert_invariants().await;
}

/// Three instances started at the same moment on one new database all come
/// up and share it. SQLite took no lock for migrations: in 3 of 4 tries one
/// or two exited with `table intents already exists`.
async fn three_instances_started_at_once_all_come_up(backend: Backend) {
    for _ in 0..3 {
        let apps = TestApp::spawn_at_once(backend.clone(), 3).await;
        for (n, app) in apps.iter().enumerate() {
            let answer = app
                .send_ok(&credit(&format!("msg_{n}"), "acct_1", 100))
                .await;
            assert_eq!(answer["status"], "applied", "instance {n}: {answer}");
        }
        assert_eq!(apps[2].balance("acct_1", "USD").await, 300);
        apps[0].assert_invariants().await;
    }
}

both_backends!(
    a_database_from_before_scopes_keeps_every_row,
    three_instances_started_at_once_all_come_up,
);
