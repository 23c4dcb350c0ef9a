//! Two releases on one database (docs/production/upgrades.md).
//!
//! CI's short mode, both backends: this binary against a schema a newer
//! release has migrated, made by hand (a table, and its rows in sqlx's
//! `_sqlx_migrations` and in `schema_compatibility`). `migrate --check`
//! says behind, equal, or ahead; a compatible newer schema is served, by a
//! running instance and by one started beside it; an incompatible one is
//! refused at start, with the migration named.
//!
//! The long mode, PostgreSQL: a real rolling upgrade from the release
//! before this one's first migration (0017), a pinned commit built once
//! into `target/upgrade-from/` (a full build: minutes), run with
//! `HOOKLEDGER_UPGRADE_FROM=2c94bf2 cargo test upgrades::`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::at_least_once::{Load, Target, assert_exact, senders_config};
use crate::haproxy::Haproxy;
use crate::helpers::{Backend, DEMO_SECRET};
use crate::localstripe::free_port;
use crate::postgres::TestDatabase;
use crate::process::Server;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

/// `hookledger migrate --check` (of `binary`) on `database_url`: its exit
/// code and what it said.
fn migrate_check(binary: &str, dir: &Path, database_url: &str) -> (i32, String) {
    let output = Command::new(binary)
        .current_dir(dir)
        .env_clear()
        .env("HOOKLEDGER_CONFIG", dir.join("hookledger.toml"))
        .env("HOOKLEDGER_DATABASE_URL", database_url)
        .args(["migrate", "--check"])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), said)
}

/// What a newer release's migration `version` would leave: a table of its
/// own, its row in sqlx's table, and (from 0017 on) its word on older
/// binaries.
async fn newer_migration(database_url: &str, version: i64, readable_from: i64) {
    let store = crate::postgres::side_store(database_url).await;
    // A byte, as each backend writes one.
    let checksum = match &store {
        hookledger::store::Store::Sqlite(..) => "x'00'",
        hookledger::store::Store::Postgres(..) => "'\\x00'",
    };
    let statements = [
        format!("create table future_{version} (x bigint)"),
        format!(
            "insert into _sqlx_migrations (version, description, success, checksum, \
             execution_time) values ({version}, 'future {version}', true, {checksum}, 0)"
        ),
        format!(
            "insert into schema_compatibility (version, readable_from, description) \
             values ({version}, {readable_from}, 'future {version}')"
        ),
    ];
    for sql in statements {
        let done = match &store {
            hookledger::store::Store::Sqlite(pool, ..) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                    .execute(pool)
                    .await
                    .map(drop)
            }
            hookledger::store::Store::Postgres(pool, ..) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                    .execute(pool)
                    .await
                    .map(drop)
            }
        };
        done.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    store.close().await;
}

async fn a_newer_compatible_schema_is_served_and_an_incompatible_one_refused(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hookledger.toml"), senders_config("")).unwrap();
    let (url, _database) =
        crate::postgres::database_for(&backend, &dir.path().join("hookledger.db")).await;
    let (code, said) = migrate_check(BIN, dir.path(), &url);
    assert_eq!(code, 2, "a new database is behind: {said}");
    assert!(said.contains("database schema none applied"), "{said}");

    let config = dir.path().join("hookledger.toml").display().to_string();
    let env = [
        ("HOOKLEDGER_CONFIG", config.as_str()),
        ("HOOKLEDGER_DATABASE_URL", url.as_str()),
    ];
    let home = |name: &str| {
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        home
    };
    let running = Server::start(&home("a"), &env, "source demo");
    let (code, said) = migrate_check(BIN, dir.path(), &url);
    assert_eq!(code, 0, "{said}");
    assert!(said.trim_end().ends_with(": equal"), "{said}");
    let target = Target::new(&running.base(), DEMO_SECRET);
    let load = Load::start(&target, "beside", 4, 5);
    load.until_acknowledged(50, Duration::from_secs(30)).await;

    // A newer release migrates, expanding only.
    newer_migration(&url, 9001, 17).await;
    let (code, said) = migrate_check(BIN, dir.path(), &url);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("ahead, compatible: this binary serves beside migration 9001"),
        "{said}"
    );
    load.until_acknowledged(50, Duration::from_secs(30)).await;
    // An instance of this release starts beside it (on SQLite, which one
    // process serves at a time, after it).
    let sqlite = matches!(backend, Backend::Sqlite);
    let running = if sqlite {
        drop(running);
        None
    } else {
        Some(running)
    };
    let beside = Server::start(&home("b"), &env, "source demo");
    drop(running);
    assert!(
        beside.log().contains("ahead, compatible"),
        "{}",
        beside.log()
    );
    target.move_to(&beside.base());
    load.until_acknowledged(50, Duration::from_secs(30)).await;
    let tally = load.finish().await;
    assert_eq!(tally.answers.server_errors, 0, "{}", tally.answers);

    // A later one contracts: this release may not start against it.
    newer_migration(&url, 9002, 9002).await;
    let (code, said) = migrate_check(BIN, dir.path(), &url);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("migration 9002 (future 9002) needs a binary that knows migration 9002"),
        "{said}"
    );
    let refused = Command::new(BIN)
        .current_dir(home("c"))
        .env_clear()
        .env("HOOKLEDGER_CONFIG", &config)
        .env("HOOKLEDGER_DATABASE_URL", &url)
        .env("HOOKLEDGER_LISTEN", "127.0.0.1:0")
        .arg("serve")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the database's schema is newer than this binary"),
        "{stderr}"
    );
    drop(beside);
    let store = crate::postgres::side_store(&url).await;
    assert_exact(&store, &tally).await;
}

crate::both_backends!(a_newer_compatible_schema_is_served_and_an_incompatible_one_refused);

/// The old release's binary, built once from `commit` into
/// `target/upgrade-from/<commit>/` (a full build of its own).
fn old_release(commit: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = root.join("target/upgrade-from").join(commit);
    let binary = base.join("target/debug/hookledger");
    if binary.exists() {
        return binary;
    }
    let source = base.join("source");
    std::fs::create_dir_all(&source).unwrap();
    let archive = Command::new("git")
        .current_dir(root)
        .args(["archive", "--format=tar", commit])
        .output()
        .expect("git runs");
    assert!(
        archive.status.success(),
        "git archive {commit}: {}",
        String::from_utf8_lossy(&archive.stderr)
    );
    let tar = source.join("source.tar");
    std::fs::write(&tar, archive.stdout).unwrap();
    let unpacked = Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(&source)
        .status()
        .unwrap();
    assert!(unpacked.success());
    let started = std::time::Instant::now();
    let built = Command::new(env!("CARGO"))
        .current_dir(&source)
        .env("CARGO_TARGET_DIR", base.join("target"))
        .args(["build", "--locked", "--bin", "hookledger"])
        .status()
        .unwrap();
    assert!(built.success(), "the build of {commit}");
    eprintln!(
        "upgrades: built {commit} in {} s",
        started.elapsed().as_secs()
    );
    binary
}

/// An instance of `binary` on a fixed port, started again where haproxy
/// looks for it.
fn start(binary: &Path, home: &Path, port: u16, env: &[(&str, &str)]) -> Server {
    let listen = format!("127.0.0.1:{port}");
    let mut env = env.to_vec();
    env.push(("HOOKLEDGER_LISTEN", &listen));
    Server::start_binary(binary, home, &env, "source demo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_upgrade_from_the_release_before_loses_nothing() {
    let Ok(commit) = std::env::var("HOOKLEDGER_UPGRADE_FROM") else {
        eprintln!(
            "SKIPPED upgrades::a_rolling_upgrade_from_the_release_before_loses_nothing: the \
             long mode, HOOKLEDGER_UPGRADE_FROM=2c94bf2 (builds that release)"
        );
        return;
    };
    let test = "upgrades::a_rolling_upgrade_from_the_release_before_loses_nothing";
    let Some(Backend::Postgres(url)) = Backend::postgres_or_skip(test) else {
        return;
    };
    let old = old_release(&commit);
    let database = TestDatabase::create(&url).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hookledger.toml"), senders_config("")).unwrap();
    let config = dir.path().join("hookledger.toml").display().to_string();
    let env = [
        ("HOOKLEDGER_CONFIG", config.as_str()),
        ("HOOKLEDGER_DATABASE_URL", database.url.as_str()),
        ("HOOKLEDGER_WORKERS", "2"),
    ];
    let homes: Vec<PathBuf> = ["old", "new"]
        .iter()
        .map(|name| {
            let home = dir.path().join(name);
            std::fs::create_dir_all(&home).unwrap();
            home
        })
        .collect();
    let ports = [free_port(), free_port()];
    let mut old_instance = start(&old, &homes[0], ports[0], &env);
    let port = free_port();
    let servers = [("old", ports[0]), ("new", ports[1])];
    let haproxy = Haproxy::start("haproxy.cfg", dir.path(), port, &servers);
    haproxy.until(&[("old", "UP"), ("new", "DOWN")]).await;
    let (code, said) = migrate_check(BIN, dir.path(), &database.url);
    assert_eq!(code, 2, "the old release's schema is behind: {said}");

    let target = Target::new(&format!("http://127.0.0.1:{port}"), DEMO_SECRET);
    let load = Load::start(&target, "upgrade", 32, 20);
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    // The new release migrates and starts beside the old one.
    let new_instance = start(Path::new(BIN), &homes[1], ports[1], &env);
    haproxy.until(&[("old", "UP"), ("new", "UP")]).await;
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    // The old one (which has no drain of its own) is drained at haproxy,
    // then stopped.
    let drained = haproxy.command("set server hookledger/old state drain");
    assert!(drained.trim().is_empty(), "{drained}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    old_instance.signal("TERM");
    let status = old_instance
        .exit_status(Duration::from_secs(30))
        .expect("exits");
    assert!(status.success(), "{status:?}");
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    let mut tally = load.finish().await;
    tally.proxy_retries = true;
    let answers = tally.answers;
    eprintln!("upgrades: from {commit}: {answers}");
    assert_eq!(
        (
            answers.server_errors,
            answers.client_errors,
            answers.refused
        ),
        (0, 0, 0),
        "{answers}"
    );
    assert_eq!(answers.unavailable_without_retry_after, 0, "{answers}");
    drop(new_instance);
    let (code, said) = migrate_check(BIN, dir.path(), &database.url);
    assert_eq!(code, 0, "{said}");
    let checked = Command::new(BIN)
        .current_dir(dir.path())
        .env_clear()
        .env("HOOKLEDGER_CONFIG", &config)
        .env("HOOKLEDGER_DATABASE_URL", &database.url)
        .arg("check")
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    let store = crate::postgres::side_store(&database.url).await;
    assert_exact(&store, &tally).await;
}
