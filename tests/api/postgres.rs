//! A freshly created PostgreSQL database per test, dropped when the test ends
//! (also when it panics).

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

pub struct TestDatabase {
    pub url: String,
    server_url: String,
    pub name: String,
}

/// `url` with its database name replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("URL has a scheme");
    let (authority, query) = match rest.split_once('/') {
        Some((authority, path)) => (authority, path.split_once('?').map(|(_, q)| q)),
        None => (
            rest.split_once('?').map_or(rest, |(a, _)| a),
            rest.split_once('?').map(|(_, q)| q),
        ),
    };
    match query {
        Some(query) => format!("{scheme}://{authority}/{database}?{query}"),
        None => format!("{scheme}://{authority}/{database}"),
    }
}

async fn admin_connection(server_url: &str) -> PgConnection {
    let options =
        PgConnectOptions::from_str(server_url).expect("valid HOOKLEDGER_TEST_POSTGRES_URL");
    PgConnection::connect_with(&options)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to HOOKLEDGER_TEST_POSTGRES_URL: {e}"))
}

/// Databases are named `hookledger_test_<unix seconds>_<random>`.
const PREFIX: &str = "hookledger_test_";
/// Older than this, a test database was left behind by a killed run.
const ABANDONED_AFTER_SECS: u64 = 2 * 3600;
static SWEPT: AtomicBool = AtomicBool::new(false);

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Drops test databases that a killed run (no `Drop`) left behind, once per
/// test process; recent ones may belong to a run in progress and are kept.
async fn sweep_abandoned(connection: &mut PgConnection) {
    if SWEPT.swap(true, Ordering::SeqCst) {
        return;
    }
    let names: Vec<(String,)> = sqlx::query_as(
        "select datname from pg_database where datname like 'hookledger\\_test\\_%'",
    )
    .fetch_all(&mut *connection)
    .await
    .unwrap_or_default();
    for (name,) in names {
        let created = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('_').next()?.parse::<u64>().ok());
        if created.is_some_and(|secs| unix_now().saturating_sub(secs) > ABANDONED_AFTER_SECS) {
            let sql = format!("drop database if exists {name} with (force)");
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut *connection)
                .await;
        }
    }
}

impl TestDatabase {
    pub async fn create(server_url: &str) -> TestDatabase {
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("{PREFIX}{}_{}", unix_now(), hex::encode(bytes));
        let mut connection = admin_connection(server_url).await;
        sweep_abandoned(&mut connection).await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("create database {name}")))
            .execute(&mut connection)
            .await
            .expect("create test database");
        TestDatabase {
            url: with_database(server_url, &name),
            server_url: server_url.to_owned(),
            name,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let server_url = self.server_url.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime, which cannot block on async
        // work; a separate thread with its own runtime can.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut connection = admin_connection(&server_url).await;
                let sql = format!("drop database if exists {name} with (force)");
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut connection)
                    .await
                    .map(drop)
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop test database {}", self.name);
        }
    }
}

#[test]
fn database_names_are_replaced_in_urls() {
    assert_eq!(
        with_database("postgres://u@h:5432/postgres", "x"),
        "postgres://u@h:5432/x"
    );
    assert_eq!(
        with_database("postgres://u@h:5432", "x"),
        "postgres://u@h:5432/x"
    );
    assert_eq!(
        with_database("postgres://u@h/db?sslmode=disable", "x"),
        "postgres://u@h/x?sslmode=disable"
    );
}

/// The database of a test that runs the binary: a new PostgreSQL database
/// (kept alive by the returned guard), or the SQLite file `sqlite_file`.
pub async fn database_for(
    backend: &crate::backend::Backend,
    sqlite_file: &std::path::Path,
) -> (String, Option<TestDatabase>) {
    match backend {
        crate::backend::Backend::Postgres(url) => {
            let database = TestDatabase::create(url).await;
            (database.url.clone(), Some(database))
        }
        crate::backend::Backend::Sqlite => (format!("sqlite://{}", sqlite_file.display()), None),
    }
}

/// A small store of the test's own on the database a binary under test
/// uses, to read what it wrote.
pub async fn side_store(database_url: &str) -> hookledger::store::Store {
    let settings = hookledger::store::PoolSettings {
        max_connections: 2,
        acquire_timeout: std::time::Duration::from_secs(10),
        busy_timeout: std::time::Duration::from_secs(10),
        statement_timeout: std::time::Duration::from_secs(30),
    };
    hookledger::store::Store::connect(database_url, &settings)
        .await
        .expect("the test reaches the binary's database")
}

/// Deadlocks PostgreSQL has ended in `app`'s database, once everything
/// else is done with it. A backend reports its statistics when it goes
/// idle, but at most once a second (a report due sooner waits up to ten
/// seconds), and always when it exits: so every other backend of the
/// database is ended first, and the count read once they are gone. The
/// app's pools open new connections if used again.
pub async fn deadlocks(app: &crate::helpers::TestApp) -> i64 {
    let mut conn = PgConnection::connect(&app.database_url).await.unwrap();
    sqlx::query(
        "select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    for _ in 0..100 {
        let left: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity
             where datname = current_database() and pid <> pg_backend_pid()",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    sqlx::query("select pg_stat_clear_snapshot()")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query_scalar("select deadlocks from pg_stat_database where datname = current_database()")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}
