//! The two migration folders must stay in step: same files, and after
//! migrating, the same tables with the same columns on both backends.

use std::collections::BTreeSet;
use std::fs;

use crate::helpers::{Backend, TestApp};

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
    let hookledger::store::Store::Sqlite(pool) = app.store() else {
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
    let hookledger::store::Store::Postgres(pool) = app.store() else {
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
