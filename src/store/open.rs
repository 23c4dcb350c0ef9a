//! Opening the database with errors a person can act on: what was tried
//! (the file, or host, port, database and user: never the password) and
//! what failed, in words ("connection refused", "authentication failed",
//! "database hl does not exist", "the server is read-only"), naming
//! `database_url`. PostgreSQL is tried
//! once directly before the pool is made, so a wrong address fails at once
//! with its cause instead of the pool's "timed out" after the acquire
//! timeout.

use std::path::Path;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;

use super::StoreError;

/// `PostgreSQL at db:5432/hl as app`.
pub fn postgres_target(options: &PgConnectOptions) -> String {
    format!(
        "PostgreSQL at {}:{}/{} as {}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or(options.get_username()),
        options.get_username()
    )
}

/// The cause of a failed connection, in words.
fn cause(error: &sqlx::Error, options: &PgConnectOptions) -> String {
    if let sqlx::Error::Io(io) = error {
        return match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::TimedOut => "the connection timed out".to_owned(),
            _ => io.to_string(),
        };
    }
    if let sqlx::Error::Database(db) = error {
        let user = options.get_username();
        let database = options.get_database().unwrap_or(user);
        return match db.code().as_deref() {
            Some("28P01") | Some("28000") => format!("authentication failed for user {user}"),
            Some("3D000") => format!("database {database} does not exist"),
            _ => db.message().to_owned(),
        };
    }
    error.to_string()
}

/// One direct connection, bounded by `timeout`, closed again.
pub async fn try_postgres(options: &PgConnectOptions, timeout: Duration) -> Result<(), StoreError> {
    let target = postgres_target(options);
    let failed = |cause: String| StoreError::Connect(format!("{target} (database_url): {cause}"));
    match tokio::time::timeout(timeout, options.connect()).await {
        Ok(Ok(mut connection)) => {
            let read_only = super::read_only::is_read_only(&mut connection).await;
            let _ = sqlx::Connection::close(connection).await;
            match read_only {
                Ok(false) => Ok(()),
                Ok(true) => Err(failed(super::read_only::READ_ONLY.to_owned())),
                Err(error) => Err(failed(cause(&error, options))),
            }
        }
        Ok(Err(error)) => Err(failed(cause(&error, options))),
        Err(_) => Err(failed(format!("no answer within {} s", timeout.as_secs()))),
    }
}

/// Why an SQLite file cannot be opened, when its folder explains it.
pub fn sqlite_problem(path: &Path) -> Option<String> {
    let folder = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    if !folder.exists() {
        return Some(format!("folder {} does not exist", folder.display()));
    }
    if !folder.is_dir() {
        return Some(format!("{} is not a folder", folder.display()));
    }
    if path.is_dir() {
        return Some(format!(
            "{} is a folder, not a database file",
            path.display()
        ));
    }
    None
}

/// An SQLite open failure, naming the file.
pub fn sqlite_error(path: &Path, error: &sqlx::Error) -> StoreError {
    let reason = sqlite_problem(path).unwrap_or_else(|| match error {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("14") => {
            "unable to open the file (check that the folder is writable)".to_owned()
        }
        other => other.to_string(),
    });
    StoreError::Connect(format!(
        "SQLite at {} (database_url): {reason}",
        path.display()
    ))
}
