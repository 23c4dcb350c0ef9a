//! `serve` as a PostgreSQL role that cannot rewrite history: the owner
//! migrates and grants (`hookledger migrate --database OWNER_URL
//! --serving-role ROLE`), the server runs as the role (deliveries, an
//! operator's actions, retention, the linking of an older version's entry,
//! an anchor sent as messages),
//! and PostgreSQL refuses the role's update or delete of a ledger entry or
//! an audit row, and any change to the schema.

use hookledger::store::AnchorAttempt;
use sqlx::Connection;

use crate::backend::Backend;
use crate::chains::{fill, try_exec};
use crate::helpers::{TestApp, credit_seq, now};
use crate::postgres::TestDatabase;
use crate::process::hookledger;

/// PostgreSQL's SQLSTATE for a privilege the role lacks.
const INSUFFICIENT_PRIVILEGE: &str = "42501";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_role_writes_what_serve_writes_and_cannot_rewrite_history() {
    let Some(Backend::Postgres(server)) =
        Backend::postgres_or_skip("serving_role::the_serving_role_cannot_rewrite_history")
    else {
        return;
    };
    // Declared before the database, so dropped after it (with its grants).
    let role = Role::create(&server).await;
    let role = role.name.as_str();
    let database = TestDatabase::create(&server).await;

    // The owner (here the test's superuser) migrates and grants.
    let dir = tempfile::tempdir().unwrap();
    let migrated = hookledger(dir.path())
        .args([
            "migrate",
            "--database",
            &database.url,
            "--serving-role",
            role,
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&migrated.stdout);
    assert!(
        migrated.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    assert!(
        said.contains(&format!("granted {role} what serve needs")),
        "{said}"
    );

    // The server as the role: it migrates nothing (up to date), and
    // writes everything a running instance writes.
    let serving_url = database
        .url
        .replacen("://postgres@", &format!("://{role}@"), 1);
    assert_ne!(serving_url, database.url);
    let app = TestApp::start_on(serving_url).await;
    fill(&app).await;
    let purged = app
        .store()
        .purge_payloads(now() + chrono::TimeDelta::days(1), 100, now())
        .await
        .unwrap();
    assert!(purged > 0, "retention purges payloads as the serving role");
    // An anchor taken and sent as messages (queued, claimed, recorded),
    // and its delivered parts purged, as the role.
    let store = app.store();
    let parts = store.anchor(now(), None).await.unwrap().parts(500);
    let queued = store.queue_anchor(&parts, &["auditor"], 1, 0).await;
    assert_eq!(queued.unwrap(), ["auditor"]);
    let claimed = store.claim_anchor_messages("auditor", "c", 0, 60_000, 16);
    let claimed = claimed.await.unwrap();
    assert_eq!(claimed.len(), parts.len());
    for part in &claimed {
        let sent = AnchorAttempt::Delivered;
        let recorded = store.record_anchor_attempt(part.anchor_message_id, "c", &sent, 0);
        assert!(recorded.await.unwrap());
    }
    let purged = store.purge_delivered(1, 100).await.unwrap();
    assert_eq!(purged, parts.len() as u64);

    // What the role may not do.
    for sql in [
        "update ledger_entries set amount_minor = amount_minor + 1",
        "delete from ledger_entries",
        "update audit_log set note = 'as agreed'",
        "delete from audit_log",
        "truncate ledger_entries",
        "create table mine (a bigint)",
        "alter table ledger_entries drop column prev_hash",
        "drop table audit_chain",
    ] {
        let refused = try_exec(&app, sql).await.expect_err(sql);
        let code = refused
            .as_database_error()
            .and_then(|e| e.code())
            .map(|c| c.into_owned());
        assert_eq!(
            code.as_deref(),
            Some(INSUFFICIENT_PRIVILEGE),
            "{sql}: {refused}"
        );
    }

    // An entry an older version wrote without links (done here as the
    // owner) is linked by the role's next posting on its account.
    let owner = crate::postgres::side_store(&database.url).await;
    let hookledger::store::Store::Postgres(pool, ..) = &owner else {
        unreachable!()
    };
    sqlx::raw_sql(
        "update ledger_entries set prev_hash = null, entry_hash = null
         where account_id = 'acct_1' and account_seq = 6",
    )
    .execute(pool)
    .await
    .unwrap();
    app.send_ok(&credit_seq("c1_6", "acct_1", 600, 16)).await;
    let report = app.store().verify_chains().await.unwrap();
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.linked_late, 1, "{report:#?}");
    app.assert_invariants().await;
}

/// A login role of the cluster's, dropped when the test ends (also when it
/// fails), after the test's database.
struct Role {
    name: String,
    server: String,
}

impl Role {
    async fn create(server: &str) -> Role {
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("hookledger_serve_{}", hex::encode(bytes));
        run_as_admin(server, &format!("create role {name} login")).await;
        Role {
            name,
            server: server.to_owned(),
        }
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        let (server, sql) = (
            self.server.clone(),
            format!("drop role if exists {}", self.name),
        );
        // Drop runs inside the test's runtime; a thread of its own can block.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(run_as_admin(&server, &sql));
        })
        .join();
        if dropped.is_err() {
            eprintln!("could not drop role {}", self.name);
        }
    }
}

async fn run_as_admin(server: &str, sql: &str) {
    let mut admin = sqlx::PgConnection::connect(server).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}
