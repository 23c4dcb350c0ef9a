//! Holds a lock the ingest transaction needs, from a separate connection, to
//! make the database "busy" for a test.

use sqlx::{Connection, PgConnection, SqliteConnection};

pub enum Locker {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

impl Locker {
    /// SQLite: take the single write lock. PostgreSQL: lock the intents table
    /// against every other access.
    pub async fn lock(database_url: &str) -> Locker {
        Self::lock_table(database_url, "intents").await
    }

    /// The same, with `table` locked on PostgreSQL.
    pub async fn lock_table(database_url: &str, table: &str) -> Locker {
        if database_url.starts_with("sqlite:") {
            let mut connection = SqliteConnection::connect(database_url).await.unwrap();
            sqlx::raw_sql("begin immediate")
                .execute(&mut connection)
                .await
                .unwrap();
            Locker::Sqlite(connection)
        } else {
            let mut connection = PgConnection::connect(database_url).await.unwrap();
            let lock = format!("begin; lock table {table} in access exclusive mode");
            sqlx::raw_sql(sqlx::AssertSqlSafe(lock))
                .execute(&mut connection)
                .await
                .unwrap();
            Locker::Postgres(connection)
        }
    }

    pub async fn release(self) {
        match self {
            Locker::Sqlite(mut c) => sqlx::raw_sql("rollback").execute(&mut c).await.map(drop),
            Locker::Postgres(mut c) => sqlx::raw_sql("rollback").execute(&mut c).await.map(drop),
        }
        .unwrap();
    }
}
