//! `hookledger backup PATH`: a consistent copy of a live SQLite database,
//! taken while deliveries commit, restores to a database whose invariants
//! hold and whose events are a prefix of what was sent.

use futures::future::join_all;
use hookledger::store::{PoolSettings, Store};

use crate::helpers::{Backend, TestApp, credit};
use crate::process::hookledger;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_consistent() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    // Deliveries commit from before the backup starts until after it ends.
    let backed_up = std::sync::atomic::AtomicBool::new(false);
    let (app, backed_up) = (&app, &backed_up);
    let load = async move {
        let mut round = 0;
        while !backed_up.load(std::sync::atomic::Ordering::SeqCst) || round < 3 {
            let sends = (0..20).map(|i| {
                let sample = credit(&format!("msg_{round}_{i}"), &format!("acct_{i}"), 100);
                async move { app.send_ok(&sample).await }
            });
            join_all(sends).await;
            round += 1;
        }
    };
    let workdir = dir.path().to_path_buf();
    let target = copy.clone();
    let backup = async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let database_url = app.database_url.clone();
        let copy = target;
        let output = tokio::task::spawn_blocking(move || {
            hookledger(&workdir)
                .args(["backup", copy.to_str().unwrap()])
                .env("HOOKLEDGER_DATABASE_URL", database_url)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        backed_up.store(true, std::sync::atomic::Ordering::SeqCst);
        output
    };
    let ((), output) = tokio::join!(load, backup);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("backed up SQLite at "));
    app.assert_invariants().await;

    let settings = PoolSettings {
        max_connections: 2,
        acquire_timeout: std::time::Duration::from_secs(5),
        busy_timeout: std::time::Duration::from_secs(5),
        statement_timeout: std::time::Duration::from_secs(5),
    };
    let restored = Store::connect(&format!("sqlite://{}", copy.display()), &settings)
        .await
        .unwrap();
    assert_eq!(restored.check_invariants().await.unwrap(), []);
    let events = restored
        .list_events(&hookledger::store::EventFilter {
            limit: 500,
            ..Default::default()
        })
        .await
        .unwrap();
    let total: i64 = restored
        .list_balances(500)
        .await
        .unwrap()
        .iter()
        .map(|b| b.balance_minor)
        .sum();
    assert_eq!(
        total,
        100 * events.len() as i64,
        "every stored credit, applied"
    );

    // Never over an existing file; PostgreSQL has its own tools.
    let again = hookledger(dir.path())
        .args(["backup", copy.to_str().unwrap()])
        .env("HOOKLEDGER_DATABASE_URL", &app.database_url)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("exists; a backup never writes over a file"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

/// A `file:` URI could write nowhere (`mode=memory`), and a database that
/// does not exist is not created to be "backed up".
#[test]
fn backups_go_to_plain_files_of_existing_databases() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqlite://{}/none.db", dir.path().display());
    let output = hookledger(dir.path())
        .args(["backup", "copy.db"])
        .env("HOOKLEDGER_DATABASE_URL", &missing)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("nothing to back up"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!dir.path().join("none.db").exists());
    let (ok, _) = (
        hookledger(dir.path())
            .arg("migrate")
            .status()
            .unwrap()
            .success(),
        (),
    );
    assert!(ok);
    let uri = hookledger(dir.path())
        .args(["backup", "file:bk.db?mode=memory"])
        .output()
        .unwrap();
    assert!(!uri.status.success());
    assert!(
        String::from_utf8_lossy(&uri.stderr).contains("not a file: URI"),
        "{}",
        String::from_utf8_lossy(&uri.stderr)
    );
}

#[tokio::test]
async fn backup_points_postgresql_to_its_own_tools() {
    let Some(Backend::Postgres(url)) = Backend::postgres_or_skip("backup_points_postgresql") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = hookledger(dir.path())
        .args(["backup", "x.db"])
        .env("HOOKLEDGER_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("for PostgreSQL use pg_dump"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
