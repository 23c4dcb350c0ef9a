//! A refund that races a run crediting its payment, forced on PostgreSQL
//! (`pause`): a run checks whether a reversal waits for one of its
//! payments, then inserts its intents, then creates or locks the payment
//! rows and credits them in memory (`ingest::run_of_postings`). A refund
//! that recorded itself `unmatched` between the check and the rows would
//! find no credit, and the run, finding the row fresh, would credit it and
//! release nothing: the refund stranded for good. The payment's write key
//! (`store::WriteKeys`), which the run takes before the check and the
//! refund before anything, makes the refund wait for the run instead.
//!
//! The test stops the run at its intents' insert and delivers the refund
//! meanwhile; the pause is released once the refund waits for the run, or
//! has answered (the bug). The refund must end applied.
//!
//! PostgreSQL only: SQLite runs one write transaction at a time.

use std::sync::Arc;

use chrono::Utc;
use hookledger::domain::{
    AccountId, Currency, Direction, EventId, Link, Movement, NormalisedEvent, PositiveAmount,
    Posting,
};
use hookledger::ingest::commit_together;
use hookledger::receive::sha256_hex;
use hookledger::source::Source;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, Options, TestApp, json_with_status};
use crate::pause::{PAUSE, Pause};

/// Stops the run at the insert of the payment's credit.
const PAUSE_RUN: &str = "
create trigger pause_run before insert on intents
for each row when (new.event_id = 'c_race') execute function pause();";

fn credit(event_id: &str, link: Link, sequence: i64) -> NormalisedEvent {
    let posting = Posting {
        direction: Direction::Credit,
        account: AccountId::parse("acct_race").unwrap(),
        currency: Currency::parse("USD").unwrap(),
        amount: PositiveAmount::new(1_000).unwrap(),
        sequence,
        explicit_sequence: false,
        link,
    };
    NormalisedEvent {
        event_id: EventId::parse(event_id).unwrap(),
        event_type: "balance.credit".to_owned(),
        object_id: None,
        occurred_at: None,
        movement: Movement::Post(posting),
        payload: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refund_racing_a_run_that_credits_its_payment_is_released() {
    let Some(backend) = Backend::postgres_or_skip(
        "run_interleavings::a_refund_racing_a_run_that_credits_its_payment_is_released",
    ) else {
        return;
    };
    let sources = crate::direct::sales_source("");
    let options = || Options {
        extra_sources: &sources,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options()).await;
    let text = crate::app_config::base_config(&app.database_url, &options());
    let config = hookledger::config::from_toml(&text, &|_| None).unwrap();
    let sales: Arc<Source> = config
        .sources
        .into_iter()
        .find(|source| source.name.as_str() == "sales")
        .map(Arc::new)
        .unwrap();
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_RUN).await.unwrap();

    // A run of two: a plain credit, then the payment's.
    let bodies = [b"{\"other\":1}".to_vec(), b"{\"race\":1}".to_vec()];
    let digests: Vec<String> = bodies.iter().map(|body| sha256_hex(body)).collect();
    let events = [
        credit("c_other", Link::None, 1),
        credit("c_race", Link::Pays("pay_race".to_owned()), 2),
    ];
    let deliveries: Vec<_> = events
        .iter()
        .zip(bodies.iter().zip(&digests))
        .map(|(event, (body, digest))| {
            let raw = crate::direct::webhook(body, digest, Utc::now());
            (sales.clone(), vec![event.clone()], raw)
        })
        .collect();
    let refund = json!({"type": "balance.debit", "data": {
        "amount_minor": 300, "currency": "USD", "payment_id": "pay_race", "sequence": 3}})
    .to_string();

    let mut pause = Pause::hold(&app).await;
    let run = commit_together(app.store(), &deliveries);
    let refund_meanwhile = async {
        pause.until_waiting_on("advisory").await;
        let refunded = app.deliver_body("sales", "r_race", refund.as_bytes());
        let answer = pause.release_once_blocked(refunded).await;
        json_with_status(answer, StatusCode::OK).await
    };
    let (answers, refunded) = tokio::join!(run, refund_meanwhile);
    for answer in answers {
        assert_eq!(answer.unwrap()[0].status.as_str(), "applied");
    }
    // It waited for the run, so it found the payment credited.
    assert_eq!(refunded["status"], "applied", "{refunded}");
    assert_eq!(app.event("sales", "r_race").await["status"], "applied");
    assert_eq!(app.balance("acct_race", "USD").await, 1_700);
    app.assert_invariants().await;
}
