//! The hash chains (`store::chain`): a database filled by real deliveries
//! and operator actions verifies clean; each kind of tampering, done with
//! plain SQL as someone with write access would, is named by `verify` at
//! the exact row, while the ledger check, which the tampering keeps
//! consistent, sees nothing; what a version before chains wrote is linked
//! afterwards.

use chrono::{DateTime, Utc};
use futures::future::join_all;
use hookledger::store::Store;
use hookledger::store::chain::hash::{EntryContent, GENESIS, entry_link};
use hookledger::store::chain::{Anchor, BreakKind, ChainCursor, ChainReport, Trail};
use reqwest::StatusCode;

use crate::app_config::Options;
use crate::browser::{login, page};
use crate::helpers::{Backend, TestApp, credit_seq, debit_seq, json_with_status, now};
use crate::process::run_with_config;

/// Runs SQL built at run time.
pub async fn exec(app: &TestApp, sql: &str) {
    try_exec(app, sql)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"));
}

/// Runs SQL built at run time: what the database said.
pub async fn try_exec(app: &TestApp, sql: &str) -> Result<(), sqlx::Error> {
    match app.store() {
        Store::Sqlite(pool, ..) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(pool)
            .await
            .map(drop),
        Store::Postgres(pool, ..) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(pool)
            .await
            .map(drop),
    }
}

/// The one-column integer rows `sql` returns.
async fn ids(app: &TestApp, sql: &str) -> Vec<i64> {
    let rows: Vec<(i64,)> = match app.store() {
        Store::Sqlite(pool, ..) => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
                .fetch_all(pool)
                .await
        }
        Store::Postgres(pool, ..) => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
                .fetch_all(pool)
                .await
        }
    }
    .unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.into_iter().map(|(id,)| id).collect()
}

/// acct_1's USD entries, by number.
async fn entries_of_acct_1(app: &TestApp) -> Vec<i64> {
    ids(
        app,
        "select entry_id from ledger_entries where account_id = 'acct_1' and currency = 'USD' \
         order by account_seq",
    )
    .await
}

async fn verify(app: &TestApp) -> ChainReport {
    app.store().verify_chains().await.expect("verify runs")
}

/// A database as a running instance leaves it: credits and debits on two
/// accounts, some of them delivered at once (committed together, as a set
/// by the group writer), a late debit held then applied by an operator, and
/// another dismissed; every chain verifies clean.
async fn filled(backend: Backend) -> TestApp {
    let app = TestApp::spawn(backend).await;
    fill(&app).await;
    app
}

/// What [`filled`] writes, through `app`.
pub async fn fill(app: &TestApp) {
    for n in 1..=4 {
        app.send_ok(&credit_seq(&format!("c1_{n}"), "acct_1", 100 * n, n + 10))
            .await;
    }
    let at_once: Vec<_> = (1..=8)
        .map(|n| {
            let account = if n % 2 == 0 { "acct_2" } else { "acct_3" };
            credit_seq(&format!("c2_{n}"), account, 10 * n, n)
        })
        .collect();
    for answer in join_all(at_once.iter().map(|sample| app.send(sample))).await {
        assert_eq!(answer.status(), StatusCode::OK);
    }
    // Two late debits of acct_1, held: one applied, one dismissed.
    app.send_ok(&debit_seq("late_1", "acct_1", 50, 1)).await;
    app.send_ok(&debit_seq("late_2", "acct_1", 70, 2)).await;
    for (event, action) in [("late_1", "apply"), ("late_2", "dismiss")] {
        let answer = app
            .admin_post(
                &format!("/admin/api/events/demo/{event}/{action}"),
                r#"{"note": "checked with the customer"}"#,
            )
            .await;
        assert_eq!(answer.status(), StatusCode::OK, "{event} {action}");
    }
    app.send_ok(&credit_seq("c1_5", "acct_1", 500, 15)).await;
    let report = verify(app).await;
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.entries, 14, "{report:#?}");
    assert_eq!(report.chains, 3, "{report:#?}");
    assert_eq!(report.audit_rows, 2, "{report:#?}");
    assert_eq!(report.linked_late, 0);
    app.assert_invariants().await;
}

/// The one break `verify` reports, after the ledger check saw nothing.
async fn the_break(app: &TestApp) -> hookledger::store::chain::Break {
    let report = verify(app).await;
    assert_eq!(report.breaks.len(), 1, "{report:#?}");
    report.breaks[0].clone()
}

/// 1,000 more on acct_1's second entry (`entry`), every balance after it,
/// the balance and the intent: the books still add up.
async fn add_1000_to_the_second_entry(app: &TestApp, entry: i64) {
    exec(
        app,
        &format!(
            "update ledger_entries set amount_minor = amount_minor + 1000 where entry_id = {entry};
             update ledger_entries set balance_after_minor = balance_after_minor + 1000
                 where account_id = 'acct_1' and account_seq >= 2;
             update balances set balance_minor = balance_minor + 1000 where account_id = 'acct_1';
             update intents set amount_minor = amount_minor + 1000
                 where intent_id = (select intent_id from ledger_entries where entry_id = {entry})"
        ),
    )
    .await;
}

async fn an_edited_amount_with_its_balance_is_named(backend: Backend) {
    let app = filled(backend).await;
    let entries = entries_of_acct_1(&app).await;
    let edited = entries[1];
    add_1000_to_the_second_entry(&app, edited).await;
    app.assert_invariants().await;
    let found = the_break(&app).await;
    assert_eq!(found.trail, Trail::Ledger);
    assert_eq!(found.account_id.as_deref(), Some("acct_1"));
    assert_eq!(found.kind, BreakKind::Edited, "{found:?}");
    assert_eq!(found.row_id, Some(edited));
    assert_eq!(found.position, 2);
}

async fn a_deleted_entry_is_named_by_its_number_and_neighbours(backend: Backend) {
    let app = filled(backend).await;
    let entries = entries_of_acct_1(&app).await;
    exec(
        &app,
        &format!("delete from ledger_entries where entry_id = {}", entries[2]),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.kind, BreakKind::Deleted, "{found:?}");
    assert_eq!(found.row_id, None);
    assert_eq!(found.position, 3);
    assert!(
        found.detail.contains(&format!(
            "between entry {} and entry {}",
            entries[1], entries[3]
        )),
        "{found:?}"
    );
}

async fn an_inserted_entry_is_named(backend: Backend) {
    let app = filled(backend).await;
    // A credit of 10,000 written by hand, next in acct_1's numbers, with
    // the balance moved to match, on the intent of the dismissed event.
    exec(
        &app,
        "insert into ledger_entries (intent_id, source, event_id, account_id, currency,
             amount_minor, balance_after_minor, object_id, operator_applied, created_at,
             account_seq)
         select i.intent_id, i.source, i.event_id, 'acct_1', 'USD', 10000,
             b.balance_minor + 10000, null, false, i.first_received_at, b.postings + 1
         from intents i, balances b
         where i.event_id = 'late_2' and b.account_id = 'acct_1' and b.currency = 'USD';
         update balances set balance_minor = balance_minor + 10000, postings = postings + 1
         where account_id = 'acct_1'",
    )
    .await;
    let inserted = *entries_of_acct_1(&app).await.last().unwrap();
    let found = the_break(&app).await;
    assert_eq!(found.kind, BreakKind::Unlinked, "{found:?}");
    assert_eq!(found.row_id, Some(inserted));
    // With links copied from the entry before it, it is named all the same.
    exec(
        &app,
        &format!(
            "update ledger_entries set (prev_hash, entry_hash) =
                 (select prev_hash, entry_hash from ledger_entries
                  where account_id = 'acct_1' and account_seq = 5)
             where entry_id = {inserted}"
        ),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.row_id, Some(inserted), "{found:?}");
    assert_eq!(found.position, 7);
}

async fn two_swapped_entries_are_named(backend: Backend) {
    let app = filled(backend).await;
    let entries = entries_of_acct_1(&app).await;
    let (second, third) = (entries[1], entries[2]);
    exec(
        &app,
        &format!(
            "update ledger_entries set account_seq = -1 where entry_id = {second};
             update ledger_entries set account_seq = 2 where entry_id = {third};
             update ledger_entries set account_seq = 3 where entry_id = {second}"
        ),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.kind, BreakKind::Reordered, "{found:?}");
    assert_eq!(found.row_id, Some(third));
    assert!(
        found.detail.contains(&format!("entry {second}")),
        "{found:?}"
    );
}

async fn a_deleted_audit_row_is_named(backend: Backend) {
    let app = filled(backend).await;
    let audit = ids(&app, "select audit_id from audit_log order by audit_id").await;
    exec(
        &app,
        &format!("delete from audit_log where audit_id = {}", audit[0]),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.trail, Trail::Audit);
    assert_eq!(found.kind, BreakKind::Deleted, "{found:?}");
    assert_eq!(found.position, 1);
    assert!(
        found
            .detail
            .contains(&format!("before audit row {}", audit[1])),
        "{found:?}"
    );
    // The last one deleted too: numbers 1 to 2 are missing.
    exec(
        &app,
        &format!("delete from audit_log where audit_id = {}", audit[1]),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.kind, BreakKind::Deleted, "{found:?}");
    assert!(found.detail.contains("numbers 1 to 2"), "{found:?}");
}

async fn an_edited_audit_note_is_named(backend: Backend) {
    let app = filled(backend).await;
    let audit = ids(&app, "select audit_id from audit_log order by audit_id").await;
    exec(
        &app,
        &format!(
            "update audit_log set note = 'as agreed' where audit_id = {}",
            audit[1]
        ),
    )
    .await;
    let found = the_break(&app).await;
    assert_eq!(found.trail, Trail::Audit);
    assert_eq!(found.kind, BreakKind::Edited, "{found:?}");
    assert_eq!(found.row_id, Some(audit[1]));
}

/// A database from before chains (every link cleared) is linked by the
/// backfill, each row marked linked late; an entry and an audit row an
/// older version writes meanwhile are linked by the next writer of their
/// chain.
async fn what_was_written_without_links_is_linked_after(backend: Backend) {
    let app = filled(backend).await;
    exec(
        &app,
        "update ledger_entries set prev_hash = null, entry_hash = null;
         update audit_log set chain_seq = null, prev_hash = null, row_hash = null;
         update audit_chain set chain_seq = 0, head = null",
    )
    .await;
    let unlinked = verify(&app).await;
    assert_eq!(unlinked.breaks.len(), 4, "{unlinked:#?}");
    assert!(
        unlinked
            .breaks
            .iter()
            .all(|found| found.kind == BreakKind::Unlinked),
        "{unlinked:#?}"
    );
    let linked = app.store().link_unlinked(now()).await.unwrap();
    assert_eq!(linked.chains, 3);
    let report = verify(&app).await;
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.linked_late, 16);
    // An older version's entry (no link) and audit row, then this one's.
    exec(
        &app,
        "update ledger_entries set prev_hash = null, entry_hash = null, chained_at = null
         where account_id = 'acct_1' and account_seq = 6;
         insert into audit_log (action, source, event_id, previous_status, actor, created_at)
         select 'dismiss', 'demo', 'late_2', 'stale', 'admin', created_at from audit_log
         where audit_id = (select max(audit_id) from audit_log)",
    )
    .await;
    assert_eq!(verify(&app).await.breaks.len(), 2);
    app.send_ok(&credit_seq("c1_6", "acct_1", 600, 16)).await;
    app.send_ok(&debit_seq("late_3", "acct_1", 1, 3)).await;
    let answer = app
        .admin_post(
            "/admin/api/events/demo/late_3/dismiss",
            r#"{"note": "a test"}"#,
        )
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let report = verify(&app).await;
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.linked_late, 17);
    assert_eq!(report.audit_rows, 4);
    app.assert_invariants().await;
}

/// The periodic walk: whole at first, then only what was written since.
/// An entry changed after it was found whole shows on the next whole walk;
/// a new entry changed shows at once, and on every walk until it is
/// mended.
async fn the_periodic_walk_takes_what_is_new(backend: Backend) {
    let app = filled(backend).await;
    let store = app.store();
    let mut cursor = ChainCursor::default();
    let first = store.verify_chains_since(&mut cursor).await.unwrap();
    assert!(first.is_clean(), "{first:#?}");
    assert_eq!(first.entries, 14);
    let nothing_new = store.verify_chains_since(&mut cursor).await.unwrap();
    assert_eq!(nothing_new.entries, 0, "{nothing_new:#?}");
    assert_eq!(nothing_new.audit_rows, 2, "the audit trail every time");

    exec(
        &app,
        "update ledger_entries set amount_minor = amount_minor + 1
         where account_id = 'acct_1' and account_seq = 1",
    )
    .await;
    app.send_ok(&credit_seq("c1_6", "acct_1", 600, 16)).await;
    let since = store.verify_chains_since(&mut cursor).await.unwrap();
    assert!(since.is_clean(), "{since:#?}");
    // The entry found whole before (6), for its link, and the new one.
    assert_eq!(since.entries, 2, "{since:#?}");
    let whole = store.verify_chains().await.unwrap();
    assert_eq!(whole.breaks.len(), 1, "{whole:#?}");
    assert_eq!(whole.breaks[0].position, 1);

    app.send_ok(&credit_seq("c1_7", "acct_1", 700, 17)).await;
    let changed = entries_of_acct_1(&app).await[7];
    exec(
        &app,
        &format!("update ledger_entries set object_id = 'obj_x' where entry_id = {changed}"),
    )
    .await;
    for _ in 0..2 {
        let since = store.verify_chains_since(&mut cursor).await.unwrap();
        assert_eq!(since.breaks.len(), 1, "{since:#?}");
        assert_eq!(since.breaks[0].kind, BreakKind::Edited);
        assert_eq!(since.breaks[0].row_id, Some(changed));
    }
}

/// `GET /admin/api/verify` names the break, and records it: the dashboard
/// and `/metrics` say it too.
async fn the_admin_route_the_dashboard_and_the_metrics_say_it(backend: Backend) {
    let app = filled(backend).await;
    let cookie = login(&app).await;
    let whole = json_with_status(app.admin_get("/admin/api/verify").await, StatusCode::OK).await;
    assert_eq!(whole["ok"], true, "{whole}");
    assert_eq!(whole["report"]["entries"], 14, "{whole}");
    let html = page(&app, "/admin", &cookie).await;
    assert!(
        html.contains(r#"<p class="notice chains">Hash chains: every chain whole ("#),
        "{html}"
    );
    let audit = ids(&app, "select audit_id from audit_log order by audit_id").await;
    exec(
        &app,
        &format!(
            "update audit_log set actor = 'someone else' where audit_id = {}",
            audit[0]
        ),
    )
    .await;
    let found = json_with_status(app.admin_get("/admin/api/verify").await, StatusCode::OK).await;
    assert_eq!(found["ok"], false, "{found}");
    let broken = &found["report"]["breaks"][0];
    assert_eq!(broken["trail"], "audit", "{found}");
    assert_eq!(broken["kind"], "edited", "{found}");
    assert_eq!(broken["row_id"], audit[0], "{found}");
    let html = page(&app, "/admin", &cookie).await;
    assert!(
        html.contains(r#"<p class="error chains">Hash chains: 1 chain(s) broken"#),
        "{html}"
    );
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.lines().any(|line| line == "hookledger_chain_breaks 1"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line == "hookledger_chain_unlinked 0"),
        "{text}"
    );
    // The route needs the admin's token.
    let anonymous = app
        .client
        .get(app.url("/admin/api/verify"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

pub const ANCHOR_KEY: &str = "an anchor key of 32 characters!!";

/// Computes every link of acct_1's USD chain again over the entries as
/// they are now, as someone who rewrites a history and knows how links
/// are made would.
async fn relink_acct_1(app: &TestApp) {
    let rows: Vec<RelinkedRow> = match app.store() {
        Store::Sqlite(pool, ..) => sqlx::query_as(RELINKED).fetch_all(pool).await,
        Store::Postgres(pool, ..) => sqlx::query_as(RELINKED).fetch_all(pool).await,
    }
    .unwrap();
    let mut prev = GENESIS;
    for (
        id,
        account,
        currency,
        seq,
        amount,
        after,
        source,
        event,
        intent,
        at,
        object,
        by_hand,
        paid,
    ) in &rows
    {
        let own = entry_link(
            &EntryContent {
                account_id: account,
                currency,
                account_seq: *seq,
                amount_minor: *amount,
                balance_after_minor: *after,
                source,
                event_id: event,
                intent_id: *intent,
                created_at: *at,
                object_id: object.as_deref(),
                operator_applied: *by_hand,
                credits_payment: *paid,
            },
            &prev,
        );
        let update =
            "update ledger_entries set prev_hash = $1, entry_hash = $2 where entry_id = $3";
        match app.store() {
            Store::Sqlite(pool, ..) => sqlx::query(update)
                .bind(&prev[..])
                .bind(&own[..])
                .bind(id)
                .execute(pool)
                .await
                .map(drop),
            Store::Postgres(pool, ..) => sqlx::query(update)
                .bind(&prev[..])
                .bind(&own[..])
                .bind(id)
                .execute(pool)
                .await
                .map(drop),
        }
        .unwrap();
        prev = own;
    }
}

/// A row of `RELINKED`: an entry's id and what its link covers.
type RelinkedRow = (
    i64,
    String,
    String,
    i64,
    i64,
    i64,
    String,
    String,
    i64,
    DateTime<Utc>,
    Option<String>,
    bool,
    Option<i64>,
);

const RELINKED: &str = "select entry_id, account_id, currency, account_seq, amount_minor,
    balance_after_minor, source, event_id, intent_id, created_at, object_id, operator_applied,
    credits_payment
from ledger_entries where account_id = 'acct_1' and currency = 'USD' order by account_seq";

/// A folder with a `hookledger.toml` on `app`'s database with
/// `anchors.key` [`ANCHOR_KEY`], for the commands (`verify --against`,
/// `anchor`).
pub fn anchoring_config(app: &TestApp) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::app_config::base_config(
        &app.database_url,
        &Options {
            top_level: &format!("[anchors]\nkey = \"{ANCHOR_KEY}\""),
            ..Options::default()
        },
    );
    std::fs::write(dir.path().join("hookledger.toml"), config).unwrap();
    dir
}

/// A history rewritten together with its links verifies clean on its
/// own; an anchor taken before names the rewritten head, through the
/// store and through `hookledger verify --against FILE`; an anchor changed
/// by hand, or checked with another key, is refused.
async fn a_history_rewritten_with_its_links_is_caught_by_an_earlier_anchor(backend: Backend) {
    let app = filled(backend).await;
    let key = ANCHOR_KEY.as_bytes();
    let anchor = app.store().anchor(now(), Some(key)).await.unwrap();
    assert_eq!(anchor.ledger.len(), 3);
    assert_eq!(anchor.audit.seq, 2);
    assert_eq!(anchor.check(Some(key)), Ok(()));
    let dir = anchoring_config(&app);
    let file = dir.path().join("anchor.json");
    std::fs::write(&file, serde_json::to_vec(&anchor).unwrap()).unwrap();
    let against = ["verify", "--against", file.to_str().unwrap()];
    // `hookledger anchor` prints the same heads, signed with the config's key.
    let (ok, printed) = run_with_config(dir.path(), &["anchor"]);
    assert!(ok, "{printed}");
    let printed: Anchor = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed.check(Some(key)), Ok(()));
    assert_eq!(
        (&printed.audit, &printed.ledger),
        (&anchor.audit, &anchor.ledger)
    );

    // Later entries do not disturb it.
    app.send_ok(&credit_seq("c1_6", "acct_1", 600, 16)).await;
    assert_eq!(app.store().check_anchor(&anchor).await.unwrap(), []);
    let (ok, said) = run_with_config(dir.path(), &against);
    assert!(ok, "{said}");

    let entries = entries_of_acct_1(&app).await;
    add_1000_to_the_second_entry(&app, entries[1]).await;
    relink_acct_1(&app).await;
    app.assert_invariants().await;
    let report = verify(&app).await;
    assert!(report.is_clean(), "rewritten with its links: {report:#?}");
    let found = app.store().check_anchor(&anchor).await.unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].kind, BreakKind::Rewritten);
    assert_eq!(found[0].account_id.as_deref(), Some("acct_1"));
    assert_eq!(found[0].row_id, Some(entries[5]), "the anchored head");
    assert_eq!(found[0].position, 6);
    let (ok, said) = run_with_config(dir.path(), &against);
    assert!(!ok, "{said}");
    assert!(said.contains("\"rewritten\""), "{said}");

    // The anchor itself: changed by hand, or checked with another key.
    let mut changed = anchor.clone();
    changed.ledger[0].seq += 1;
    assert!(changed.check(Some(key)).is_err());
    let earlier = Anchor {
        at: anchor.at - chrono::TimeDelta::days(1),
        ..anchor.clone()
    };
    assert!(earlier.check(Some(key)).is_err(), "the time is signed too");
    assert!(
        anchor
            .check(Some(b"another key of 32 characters!!!!"))
            .is_err()
    );
    let unsigned = Anchor {
        signature: None,
        ..anchor.clone()
    };
    assert!(unsigned.check(Some(key)).is_err());
    assert_eq!(unsigned.check(None), Ok(()));
}

/// The anchor task: an instance started with `[anchors]` writes a signed
/// anchor of the chains as they stand to its folder at start-up, which
/// its key accepts and the database matches.
async fn an_instance_anchors_at_start_up_to_its_folder(backend: Backend) {
    let app = filled(backend).await;
    let folder = tempfile::tempdir().unwrap();
    let top_level = format!(
        "[anchors]\nkey = \"{ANCHOR_KEY}\"\ndir = \"{}\"",
        folder.path().display()
    );
    let _anchoring = app
        .another_instance_with(&Options {
            top_level: &top_level,
            ..Options::default()
        })
        .await;
    let started = std::time::Instant::now();
    let written = loop {
        let files: Vec<_> = std::fs::read_dir(folder.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        if let [file] = &files[..] {
            break std::fs::read(file).unwrap();
        }
        assert!(files.len() < 2, "{files:?}");
        assert!(started.elapsed().as_secs() < 20, "no anchor in the folder");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // Renamed into place whole: never half a file.
    let anchor: Anchor = serde_json::from_slice(&written).unwrap();
    assert_eq!(anchor.check(Some(ANCHOR_KEY.as_bytes())), Ok(()));
    assert!(anchor.signature.is_some());
    assert_eq!(anchor.ledger.len(), 3, "{anchor:?}");
    assert_eq!(anchor.audit.seq, 2, "{anchor:?}");
    assert_eq!(app.store().check_anchor(&anchor).await.unwrap(), []);
}

crate::both_backends!(
    an_instance_anchors_at_start_up_to_its_folder,
    a_history_rewritten_with_its_links_is_caught_by_an_earlier_anchor,
    the_periodic_walk_takes_what_is_new,
    the_admin_route_the_dashboard_and_the_metrics_say_it,
    an_edited_amount_with_its_balance_is_named,
    a_deleted_entry_is_named_by_its_number_and_neighbours,
    an_inserted_entry_is_named,
    two_swapped_entries_are_named,
    a_deleted_audit_row_is_named,
    an_edited_audit_note_is_named,
    what_was_written_without_links_is_linked_after,
);
