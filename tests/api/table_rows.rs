//! A table's rows as JSON objects, read the same way on both backends
//! (PostgreSQL's `row_to_json`; on SQLite, `json_object` over the table's
//! own column list, a blob as hex), for tests that compare whole rows.

use serde_json::Value;

use crate::helpers::TestApp;

/// Every row of `table`, or only those of `account` (`account_id`).
pub async fn table_json(app: &TestApp, table: &'static str, account: Option<&str>) -> Vec<Value> {
    let filter = if account.is_some() {
        " where account_id = $1"
    } else {
        ""
    };
    let texts: Vec<(String,)> = if app.database_url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
        let columns: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "select name, type from pragma_table_info('{table}')"
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
        assert!(columns.len() >= 3, "{table}: {columns:?}");
        let pairs: Vec<String> = columns
            .iter()
            .map(|(name, kind)| match kind.to_ascii_lowercase().as_str() {
                "blob" => format!("'{name}', hex(\"{name}\")"),
                _ => format!("'{name}', \"{name}\""),
            })
            .collect();
        let sql = format!(
            "select json_object({}) from {table}{filter}",
            pairs.join(", ")
        );
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(account)
            .fetch_all(&pool)
            .await
            .unwrap()
    } else {
        let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
        let sql = format!("select row_to_json(t)::text from {table} t{filter}");
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(account)
            .fetch_all(&pool)
            .await
            .unwrap()
    };
    texts
        .into_iter()
        .map(|(text,)| serde_json::from_str(&text).unwrap())
        .collect()
}
