//! Store errors, classified once: transient failures (the database is down,
//! busy or shedding load) are retryable by the provider, so they become 503;
//! everything else is a bug or corruption and becomes 500.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    #[error("cannot open the database: {0}")]
    Connect(String),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The schema is newer than this binary and not compatible with it.
    #[error("{0}")]
    Schema(String),
    #[error("balance of {account_id} {currency} would leave the supported range")]
    BalanceLimit {
        account_id: String,
        currency: String,
    },
    #[error("stored row is inconsistent: {0}")]
    Corrupt(String),
    /// A transaction's COMMIT may or may not have taken effect: its answer
    /// was lost, or never came within the bound. Transient: what it wrote
    /// is answered 503, and a redelivery finds it committed (a duplicate)
    /// or not (applied then).
    #[error("the outcome of a commit is unknown: {0}")]
    OutcomeUnknown(String),
}

impl StoreError {
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_) | StoreError::OutcomeUnknown(_)
        )
    }

    /// The same failure for another requester (a group commit answers
    /// every delivery of a group that could not commit): as transient as
    /// this one, with its text.
    pub fn shared(&self) -> StoreError {
        let copy = sqlx::Error::Protocol(self.to_string());
        if self.is_transient() {
            StoreError::Unavailable(copy)
        } else {
            StoreError::Database(copy)
        }
    }

    /// PostgreSQL chose this transaction to end a deadlock (40P01) or a
    /// serialization conflict (40001): the other transaction goes on, and
    /// this one, run again, waits for it instead.
    pub fn lost_to_another_transaction(&self) -> bool {
        let StoreError::Unavailable(sqlx::Error::Database(db)) = self else {
            return false;
        };
        matches!(db.code().as_deref(), Some("40P01" | "40001"))
    }

    /// PostgreSQL: this delivery lost a race with a concurrent first
    /// delivery of the same event. The intent insert's `on conflict`
    /// handles conflicts on its arbiter, the (scope, event_id) key, only;
    /// PostgreSQL checks the older (source, event_id) key first, and when
    /// both inserts passed the arbiter's pre-check at once, the second one
    /// waits there for the first and then fails with a unique violation
    /// (had the first rolled back, it would have gone on). So the other
    /// delivery has committed; this transaction wrote nothing and, run
    /// again, finds the row and counts a duplicate. (The same violation is
    /// permanent if two instances give one source different scopes, as in
    /// a rolling deploy that changes `scope`: the one retry then fails the
    /// same way and is answered 500, with nothing written.)
    pub fn lost_first_delivery_race(&self) -> bool {
        let StoreError::Database(sqlx::Error::Database(db)) = self else {
            return false;
        };
        db.code().as_deref() == Some("23505")
            && db.constraint() == Some("intents_source_event_id_key")
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &error
            && db.code().as_deref() == Some(READ_ONLY_TRANSACTION)
        {
            super::read_only::refused_a_write();
        }
        if is_transient(&error) {
            StoreError::Unavailable(error)
        } else {
            StoreError::Database(error)
        }
    }
}

/// SQLSTATE 25006: a write refused by a read-only server (a standby, a
/// fenced primary); the pool then leaves the connections it had.
const READ_ONLY_TRANSACTION: &str = "25006";

fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let Some(code) = db.code() else { return false };
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                code.parse().is_ok_and(is_transient_sqlite)
            } else {
                is_transient_sqlstate(&code)
            }
        }
        _ => false,
    }
}

/// SQLite reports its extended result code; the low byte is the primary
/// code: NOMEM, BUSY, LOCKED, IOERR, FULL, CANTOPEN, PROTOCOL (a WAL lock
/// race SQLite says to retry), plus the READONLY cases caused by recovery or
/// locking rather than by the file.
fn is_transient_sqlite(extended: i32) -> bool {
    matches!(extended & 0xff, 5 | 6 | 7 | 10 | 13 | 14 | 15) || matches!(extended, 264 | 520)
}

/// PostgreSQL SQLSTATEs: connection exceptions (08), read-only transaction
/// (25006, a replica after failover), serialization failure and deadlock
/// (40001, 40P01), insufficient resources (53), lock not available (55P03),
/// operator intervention such as shutdown or statement timeout (57), and
/// I/O error (58030).
fn is_transient_sqlstate(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57")
        || matches!(code, "25006" | "40001" | "40P01" | "55P03" | "58030")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_backend_codes() {
        for transient in [5, 517, 6, 262, 13, 10, 3338, 15, 264] {
            assert!(is_transient_sqlite(transient), "{transient}");
        }
        for permanent in [19, 2067, 1, 1555, 8, 1032] {
            assert!(!is_transient_sqlite(permanent), "{permanent}");
        }
        for transient in [
            "40001", "40P01", "08006", "53300", "57P01", "57014", "55P03",
        ] {
            assert!(is_transient_sqlstate(transient), "{transient}");
        }
        for permanent in ["23505", "42P01", "22003", "23514"] {
            assert!(!is_transient_sqlstate(permanent), "{permanent}");
        }
        assert!(StoreError::from(sqlx::Error::PoolTimedOut).is_transient());
        assert!(!StoreError::from(sqlx::Error::RowNotFound).is_transient());
    }
}
