//! PostgreSQL only: a tidy flagging a row while another relay delivers the
//! message ahead of it. The tidy's flagging statement reads the message
//! ahead as dead; meanwhile it is replayed, claimed and delivered, and that
//! delivery's clear finds no flag yet. The row must not then wait for the
//! next tidy: the tidy clears what has nothing ahead after its flags are
//! committed. A trigger pauses the flagging statement at the row it flags
//! (`pause`), so the interleaving is forced, not hoped for. SQLite runs one
//! write transaction at a time: it cannot happen there.

use chrono::Utc;
use hookledger::store::Replay;

use crate::helpers::{Backend, TestApp};
use crate::outbox::http_destination;
use crate::outbox_behind::{DESTINATION, claim, names, post, record, tidy};
use crate::pause::{PAUSE, Pause};

/// Pauses the statement that flags a row, at that row.
const PAUSE_FLAGS: &str = "
create trigger pause_flag before update on outbox
for each row when (new.behind and not old.behind) execute function pause()";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flag_racing_the_delivery_ahead_does_not_hold_the_row() {
    let Some(backend) = Backend::postgres_or_skip(
        "outbox_behind_race::a_flag_racing_the_delivery_ahead_does_not_hold_the_row",
    ) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let text = http_destination(
        DESTINATION,
        "http://127.0.0.1:9",
        "ordered_by_account = true",
    );
    let config = hookledger::config::from_toml(&text, &|_| None).unwrap();
    let store = crate::postgres::side_store(&app.database_url)
        .await
        .with_routes(hookledger::config::routes(&config.destinations));
    post(&store, "a", 1).await;
    post(&store, "a", 2).await;
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"]);
    record(&store, &rows, &["a_1"], true).await;

    let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
    for sql in [PAUSE, PAUSE_FLAGS] {
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    }
    let mut pause = Pause::hold(&app).await;
    let tidying = tokio::spawn({
        let store = store.clone();
        async move { tidy(&store, true).await }
    });
    // The tidy has read a_1 as dead and is flagging a_2.
    pause.until_waiting_on("advisory").await;

    let replay = Replay {
        destination: DESTINATION.into(),
        state: "dead".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(store.replay_outbox(&replay, Utc::now()).await.unwrap(), 1);
    let rows = claim(&store).await;
    assert_eq!(names(&rows), ["a_1"], "a_2 is locked by the tidy");
    record(&store, &rows, &[], true).await;

    pause.release().await;
    let tidied = tidying.await.unwrap();
    assert_eq!(tidied.flagged, 1, "the flag raced the delivery: {tidied:?}");
    assert_eq!(
        names(&claim(&store).await),
        ["a_2"],
        "a_2 goes out now, not at the next tidy"
    );
}
