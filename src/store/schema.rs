//! The schema's version against this binary's: behind (migrations to
//! apply), equal, or ahead (a newer release migrated it). Ahead, this
//! binary serves only if every newer migration says it leaves older
//! binaries' statements working (its `schema_compatibility` row, from
//! migration 0017 on, names a migration this binary knows): the rule of
//! rolling upgrades, where the new release migrates while the old one
//! still serves. docs/production/upgrades.md.

use sqlx::migrate::Migrator;

use super::{Store, StoreError, on_pool, start_lock};

/// Whether sqlx's table of applied migrations exists yet (a new database
/// has none): the one statement that differs by backend.
const HAS_MIGRATIONS_SQLITE: &str =
    "select count(*) from sqlite_master where type = 'table' and name = '_sqlx_migrations'";
const HAS_MIGRATIONS_POSTGRES: &str = "select count(*) from pg_tables where tablename = '_sqlx_migrations' and schemaname = current_schema()";

const APPLIED: &str = "select version from _sqlx_migrations where success order by version";

/// Newer migrations' own words on who may read the schema they leave.
const NEWER: &str = "
select version, readable_from, description from schema_compatibility
where version > $1 order by version";

/// The schema's version against this binary's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaState {
    /// The newest migration applied; `None` for a new database.
    pub database: Option<i64>,
    /// The newest migration this binary has.
    pub binary: i64,
    /// This binary's migrations the database lacks.
    pub pending: Vec<i64>,
    /// Migrations applied that this binary does not know.
    pub newer: Vec<Newer>,
}

/// A migration newer than this binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Newer {
    pub version: i64,
    /// The oldest migration a binary must know to run against it; `None`
    /// when it wrote no row (it cannot be read as compatible).
    pub readable_from: Option<i64>,
    pub description: String,
}

impl SchemaState {
    /// Why this binary must not serve the database as it is: a newer
    /// migration that older binaries cannot run against.
    pub fn refusal(&self) -> Option<String> {
        let breaking: Vec<String> = self
            .newer
            .iter()
            .filter(|n| n.readable_from.is_none_or(|from| from > self.binary))
            .map(|n| match n.readable_from {
                Some(from) => format!(
                    "{} ({}) needs a binary that knows migration {from}",
                    n.version, n.description
                ),
                None => format!("{} says nothing of older binaries", n.version),
            })
            .collect();
        (!breaking.is_empty()).then(|| {
            format!(
                "the database's schema is newer than this binary (which knows migrations up \
                 to {}) and not compatible with it: migration {}; run the newer release",
                self.binary,
                breaking.join(", migration ")
            )
        })
    }

    /// One line for a person: where the database stands.
    pub fn describe(&self) -> String {
        let database = self
            .database
            .map_or("none applied (a new database)".to_owned(), |v| {
                v.to_string()
            });
        let state = if let Some(refusal) = self.refusal() {
            format!("ahead, not compatible: {refusal}")
        } else if !self.newer.is_empty() {
            format!(
                "ahead, compatible: this binary serves beside migration{} {}",
                if self.newer.len() == 1 { "" } else { "s" },
                self.newer
                    .iter()
                    .map(|n| format!("{} ({})", n.version, n.description))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else if !self.pending.is_empty() {
            format!(
                "behind: {} to apply ({}); `hookledger migrate` applies them, as `serve` does \
                 at start",
                self.pending.len(),
                self.pending
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            "equal".to_owned()
        };
        format!(
            "database schema {database}, this binary {}: {state}",
            self.binary
        )
    }
}

impl Store {
    /// Applies the embedded migrations for this backend, so that several
    /// instances may start at once: on PostgreSQL sqlx takes an advisory
    /// lock; on SQLite it takes none (two instances would both create the
    /// tables, and one fail), so an exclusive lock on a file next to the
    /// database is held meanwhile ([`start_lock`]). A schema newer than
    /// this binary (a newer release migrated it) is left as it is if every
    /// newer migration allows older binaries (`schema`), and refused
    /// otherwise. What it found, for the caller to say.
    pub async fn migrate(&self) -> Result<SchemaState, StoreError> {
        let _lock = match self {
            Store::Sqlite(pool, ..) => start_lock(pool.connect_options().get_filename()).await?,
            Store::Postgres(..) => None,
        };
        let state = self.schema_state().await?;
        if let Some(refusal) = state.refusal() {
            return Err(StoreError::Schema(refusal));
        }
        if state.pending.is_empty() {
            // Nothing to apply: no statement at all, not even sqlx's
            // `create table if not exists` of its own table, which a
            // serving role without DDL rights is refused (`store::roles`).
            return Ok(state);
        }
        let mut migrator = self.migrator();
        // Migrations applied that this binary does not know are the newer
        // release's (checked just above).
        migrator.set_ignore_missing(!state.newer.is_empty());
        match self {
            Store::Sqlite(pool, ..) => migrator.run(pool).await?,
            Store::Postgres(pool, ..) => {
                // statement_timeout bounds request traffic; a migration, or
                // waiting for another instance's migration lock, may take
                // longer. The connection is closed afterwards rather than
                // returned to the pool with the setting changed.
                let mut connection = pool.acquire().await?;
                connection.close_on_drop();
                sqlx::query("set statement_timeout = 0")
                    .execute(&mut *connection)
                    .await?;
                migrator.run(&mut *connection).await?;
            }
        }
        Ok(state)
    }

    /// The embedded migrations of this backend.
    pub(super) fn migrator(&self) -> Migrator {
        match self {
            Store::Sqlite(..) => sqlx::migrate!("migrations/sqlite"),
            Store::Postgres(..) => sqlx::migrate!("migrations/postgres"),
        }
    }

    /// Where the schema stands against this binary (reads only).
    pub async fn schema_state(&self) -> Result<SchemaState, StoreError> {
        let migrator = self.migrator();
        let known: Vec<i64> = migrator.iter().map(|m| m.version).collect();
        let binary = known.iter().copied().max().unwrap_or(0);
        let has_table = match self {
            Store::Sqlite(..) => HAS_MIGRATIONS_SQLITE,
            Store::Postgres(..) => HAS_MIGRATIONS_POSTGRES,
        };
        let exists: i64 =
            on_pool!(self, pool => sqlx::query_scalar(has_table).fetch_one(pool).await)?;
        let applied: Vec<i64> = if exists > 0 {
            on_pool!(self, pool => sqlx::query_scalar(APPLIED).fetch_all(pool).await)?
        } else {
            Vec::new()
        };
        let unknown: Vec<i64> = applied
            .iter()
            .copied()
            .filter(|v| !known.contains(v))
            .collect();
        let newer = if unknown.is_empty() {
            Vec::new()
        } else {
            let rows: Vec<(i64, i64, String)> = on_pool!(self, pool => sqlx::query_as(NEWER)
                .bind(binary)
                .fetch_all(pool)
                .await)?;
            unknown
                .iter()
                .map(|&version| {
                    let row = rows.iter().find(|r| r.0 == version);
                    Newer {
                        version,
                        readable_from: row.map(|r| r.1),
                        description: row.map_or_else(String::new, |r| r.2.clone()),
                    }
                })
                .collect()
        };
        Ok(SchemaState {
            database: applied.iter().copied().max(),
            binary,
            pending: known
                .iter()
                .copied()
                .filter(|v| !applied.contains(v))
                .collect(),
            newer,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ahead(newer: Vec<Newer>) -> SchemaState {
        SchemaState {
            database: newer.last().map(|n| n.version),
            binary: 17,
            pending: Vec::new(),
            newer,
        }
    }

    fn newer(version: i64, readable_from: Option<i64>) -> Newer {
        Newer {
            version,
            readable_from,
            description: format!("m{version}"),
        }
    }

    #[test]
    fn a_newer_schema_is_served_only_when_every_newer_migration_allows_it() {
        let compatible = ahead(vec![newer(18, Some(17)), newer(19, Some(16))]);
        assert_eq!(compatible.refusal(), None);
        assert!(
            compatible.describe().contains("ahead, compatible"),
            "{}",
            compatible.describe()
        );
        let contracting = ahead(vec![newer(18, Some(17)), newer(19, Some(19))]);
        let refusal = contracting.refusal().unwrap();
        assert!(
            refusal.contains("migration 19 (m19) needs a binary that knows migration 19"),
            "{refusal}"
        );
        let silent = ahead(vec![newer(18, None)]);
        assert!(silent.refusal().unwrap().contains("18 says nothing"));
    }

    #[test]
    fn behind_and_equal_say_so() {
        let behind = SchemaState {
            database: Some(16),
            binary: 17,
            pending: vec![17],
            newer: Vec::new(),
        };
        assert_eq!(behind.refusal(), None);
        assert!(behind.describe().contains("behind: 1 to apply (17)"));
        let equal = SchemaState {
            database: Some(17),
            binary: 17,
            pending: Vec::new(),
            newer: Vec::new(),
        };
        assert!(equal.describe().ends_with("equal"));
        let fresh = SchemaState {
            database: None,
            binary: 17,
            pending: (1..=17).collect(),
            newer: Vec::new(),
        };
        assert!(fresh.describe().starts_with("database schema none applied"));
    }
}
