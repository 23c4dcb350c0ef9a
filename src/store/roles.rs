//! The PostgreSQL role `serve` can run as: one that writes what a running
//! instance writes and nothing else. The owner of the schema (the role
//! `hookledger migrate --database OWNER_URL` connects as) runs the
//! migrations and grants; the serving role cannot change the schema, and
//! cannot update or delete a ledger entry or an audit row: it may only
//! fill the links of one written without them (`store::chain`), which
//! changes no recorded fact (a wrong link shows in `verify`).
//! docs/production/postgresql.md, "A role that cannot rewrite history".

use sqlx::AssertSqlSafe;

use super::{Store, StoreError};

/// What the serving role may do to each table. Every table of the schema
/// must be here (`grant_serving_role` refuses otherwise, so a new table is
/// not forgotten): what `serve`, `relay` and the operator's commands write.
const SERVING: &[(&str, &str)] = &[
    ("intents", "select, insert, update"),
    // A run deletes the rows it created to lock and did not post to.
    ("payments", "select, insert, update, delete"),
    ("sequence_guards", "select, insert, update"),
    ("balances", "select, insert, update, delete"),
    (
        "ledger_entries",
        "select, insert, update (prev_hash, entry_hash, chained_at)",
    ),
    (
        "audit_log",
        "select, insert, update (chain_seq, prev_hash, row_hash, chained_at)",
    ),
    ("audit_chain", "select, update"),
    ("guard_resets", "select, insert"),
    ("sequence_skips", "select, insert"),
    // Delivered messages are purged by retention.
    ("outbox", "select, insert, update, delete"),
    ("anchor_messages", "select, insert, update, delete"),
    ("reconcile_runs", "select, insert, update"),
    ("schema_compatibility", "select"),
    ("_sqlx_migrations", "select"),
];

/// The schema's tables.
const TABLES: &str = "
select cast(table_name as text) from information_schema.tables
where table_schema = current_schema() and table_type = 'BASE TABLE'
order by 1";

/// `name` as a quoted SQL identifier.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Store {
    /// Grants `role` (which must exist, and must not own the schema)
    /// exactly what `SERVING` lists, on the tables of the current schema,
    /// after taking back whatever it had on them; in one transaction.
    pub async fn grant_serving_role(&self, role: &str) -> Result<(), StoreError> {
        let Store::Postgres(pool, ..) = self else {
            return Err(StoreError::Schema(
                "a serving role is PostgreSQL's: SQLite has no roles".into(),
            ));
        };
        let mut tx = pool.begin().await?;
        let (owner, schema): (String, String) =
            sqlx::query_as("select cast(current_user as text), cast(current_schema() as text)")
                .fetch_one(&mut *tx)
                .await?;
        if owner == role {
            return Err(StoreError::Schema(format!(
                "{role} is the role migrating: the serving role must be another one"
            )));
        }
        let tables: Vec<(String,)> = sqlx::query_as(TABLES).fetch_all(&mut *tx).await?;
        if let Some((unlisted,)) = tables
            .iter()
            .find(|(table,)| SERVING.iter().all(|(listed, _)| listed != table))
        {
            return Err(StoreError::Schema(format!(
                "table {unlisted} has no privileges for the serving role (store::roles)"
            )));
        }
        let role = identifier(role);
        let mut grants = format!("grant usage on schema {} to {role};\n", identifier(&schema));
        for (table, privileges) in SERVING {
            let table = identifier(table);
            grants.push_str(&format!(
                "revoke all on {table} from {role};\ngrant {privileges} on {table} to {role};\n"
            ));
        }
        sqlx::raw_sql(AssertSqlSafe(grants))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_name_is_quoted_whole() {
        assert_eq!(identifier("hookledger"), "\"hookledger\"");
        assert_eq!(
            identifier("a\"; drop table x; --"),
            "\"a\"\"; drop table x; --\""
        );
    }
}
